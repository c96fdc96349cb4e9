"""XREADGROUP without blocking: new entries, history, NOACK, errors."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import MAX_ID, add
from xspec.traces.scenarios.registry import topic

scenario = topic("xreadgroup")


@scenario("Two consumers share new entries; each sees only its own history")
def share_and_history(r: Recorder) -> None:
    add(r, "s", [1, 2, 3, 4, 5])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    r.call(2, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    r.call(2, "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0")
    r.call(2, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", "0")
    r.call(1, "XACK", "s", "g", "1-0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")


@scenario("Missing key or group is NOGROUP; keys are checked in order", edge=(25,), tags=["errors"])
def nogroup(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">")
    r.call(1, "XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "nokey", "bad", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "nokey", ">", ">")
    r.call(1, "SET", "str", "x")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "str", ">", ">")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("$ is meaningless in XREADGROUP; > is XREADGROUP only", edge=(26,), tags=["errors"])
def dollar_and_gt(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "-")
    r.call(1, "XREAD", "STREAMS", "s", ">")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("> with nothing new replies nil and does not create the consumer (7.0)", edge=(27,))
def nothing_new(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    r.call(1, "XREADGROUP", "GROUP", "g", "newc", "STREAMS", "s", ">")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XREADGROUP", "GROUP", "g", "newc", "BLOCK", "10", "STREAMS", "s", ">")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("A history read with BLOCK returns at once, even empty, and creates the consumer", edge=(28,), tags=["blocking"])
def history_never_blocks(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "s", "0")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "NOACK", "STREAMS", "s", "0")


@scenario("History read of a deleted pending entry gives [id, nil]; its count stays", edge=(29,), tags=["resp3"])
def history_deleted_entry(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    r.call(1, "XDEL", "s", "2-0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(2, "HELLO", "3")
    r.call(2, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")


@scenario("A history read starts after the given ID; incomplete IDs mean N-0", edge=(30,))
def history_exclusive(r: Recorder) -> None:
    add(r, "s", ["1-0", "2-0", "3-0", "3-1", "4-0"])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "3")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "3-0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "1-5")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "4-0")
    r.call(1, "XREADGROUP", "GROUP", "g", "other", "STREAMS", "s", "0")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")


@scenario("After SETID back to 0, > by another consumer moves the NACK and resets its count to 1", edge=(31,))
def setid_back_moves_nack(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XGROUP", "SETID", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")


@scenario("After SETID back to 0, > with NOACK leaves an existing NACK alone", edge=(32,), tags=["noack"])
def setid_back_noack(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    r.call(1, "XGROUP", "SETID", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "bob", "NOACK", "STREAMS", "s", ">")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("The explicit maximum ID behaves like >", edge=(75,))
def max_id_is_gt(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", MAX_ID)
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", MAX_ID)
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", MAX_ID)
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("XREADGROUP parsing: missing GROUP, GROUP override, NOACK repeats, unbalanced lists", tags=["errors"])
def parsing(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XGROUP", "CREATE", "s", "h", "0")
    r.call(1, "XREADGROUP", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "x", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "-1", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "FOO", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "nog", "c", "GROUP", "h", "c2", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "NOACK", "NOACK", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "-1", "STREAMS", "s", ">")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XREADGROUP", "GROUP", "g")


@scenario("One XREADGROUP over several streams with the same group name")
def several_streams(r: Recorder) -> None:
    add(r, "a", [1, 2])
    add(r, "b", [5])
    add(r, "c", [7])
    r.call(1, "XGROUP", "CREATE", "a", "g", "0")
    r.call(1, "XGROUP", "CREATE", "b", "g", "0")
    r.call(1, "XGROUP", "CREATE", "c", "g", "$")
    r.call(1, "XREADGROUP", "GROUP", "g", "x", "COUNT", "1", "STREAMS", "a", "b", "c", ">", ">", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "x", "STREAMS", "a", "b", "c", ">", ">", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "x", "STREAMS", "a", "b", "c", "0", ">", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "x", "STREAMS", "a", "a", "0", ">")
    r.call(1, "XINFO", "CONSUMERS", "b", "g")


@scenario("NOACK readers: entries are delivered but never pending; lag and entries-read still move", tags=["noack", "seed"])
def noack_readers(r: Recorder) -> None:
    add(r, "s", [1, 2, 3, 4])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "fast", "NOACK", "COUNT", "2", "STREAMS", "s", ">")
    r.call(2, "XREADGROUP", "GROUP", "g", "careful", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "fast", "NOACK", "STREAMS", "s", ">")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XREADGROUP", "GROUP", "g", "fast", "NOACK", "STREAMS", "s", "0")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(2, "XACK", "s", "g", "3-0")
    r.call(1, "XPENDING", "s", "g")
