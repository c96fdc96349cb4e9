"""XINFO STREAM [FULL], GROUPS, CONSUMERS, HELP."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add, resp3, sleep_ms
from xspec.traces.scenarios.registry import topic

scenario = topic("xinfo")


@scenario("XINFO STREAM of an empty stream; FULL COUNT 0, -1 and without value", edge=(62,))
def stream_empty_and_full_count(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    r.call(1, "XINFO", "STREAM", "e")
    r.call(1, "XINFO", "STREAM", "e", "FULL")
    add(r, "s", range(1, 13))
    r.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT", "0")
    r.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT", "-1")
    r.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT", "2")
    r.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT")
    r.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT", "x")
    r.call(1, "XINFO", "STREAM", "s", "FULL", "LIMIT", "2")
    r.call(1, "XINFO", "STREAM", "s", "BRIEF")
    r.call(1, "XINFO", "STREAM", "s", "FULL")


@scenario("XINFO CONSUMERS has 3 fields and XINFO STREAM FULL consumers 4 in 7.0, RESP2 and RESP3", edge=(63,), tags=["resp3", "time"])
def consumer_fields(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    r.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "bob")
    sleep_ms(15)
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    resp3(r, 2)
    r.call(2, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XINFO", "STREAM", "s", "FULL")
    r.call(2, "XINFO", "STREAM", "s", "FULL")
    r.call(2, "XINFO", "STREAM", "s")
    r.call(2, "XINFO", "GROUPS", "s")


@scenario("XINFO errors: missing key, wrong type, unknown subcommand, arity, missing group", tags=["errors"])
def errors(r: Recorder) -> None:
    r.call(1, "XINFO", "STREAM", "nokey")
    r.call(1, "XINFO", "GROUPS", "nokey")
    r.call(1, "XINFO", "CONSUMERS", "nokey", "g")
    add(r, "s", [1])
    r.call(1, "XINFO", "CONSUMERS", "s", "nog")
    r.call(1, "SET", "str", "x")
    r.call(1, "XINFO", "STREAM", "str")
    r.call(1, "XINFO", "GROUPS", "str")
    r.call(1, "XINFO", "CONSUMERS", "str", "g")
    r.call(1, "XINFO", "FOO", "s")
    r.call(1, "XINFO", "foo")
    r.call(1, "XINFO", "GROUPS", "s", "x")
    r.call(1, "XINFO", "CONSUMERS", "s")
    r.call(1, "XINFO", "STREAM")
    r.call(1, "XINFO")
    r.call(1, "XINFO", "STREAM", "nokey", "FULL", "COUNT")


@scenario("XINFO HELP and its arity")
def help(r: Recorder) -> None:
    r.call(1, "XINFO", "HELP")
    r.call(1, "XINFO", "help")
    r.call(1, "XINFO", "HELP", "x")


@scenario("XINFO STREAM node counts with small nodes", config={"stream-node-max-entries": "3"}, tags=["nodes"])
def radix_tree_counts(r: Recorder) -> None:
    for n in (1, 3, 4, 7):
        add(r, f"s{n}", range(1, n + 1))
        r.call(1, "XINFO", "STREAM", f"s{n}")
    r.call(1, "XDEL", "s7", "4-0", "5-0", "6-0")
    r.call(1, "XINFO", "STREAM", "s7")


@scenario("XINFO STREAM FULL with pending entries, several groups and consumers", tags=["time"])
def full_with_groups(r: Recorder) -> None:
    add(r, "s", range(1, 8))
    r.call(1, "XGROUP", "CREATE", "s", "g1", "0")
    r.call(1, "XGROUP", "CREATE", "s", "g2", "3")
    r.call(1, "XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g1", "bob", "COUNT", "2", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g2", "carol", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "s", "0")
    r.call(1, "XINFO", "STREAM", "s", "FULL")
    r.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT", "1")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XINFO", "STREAM", "s")


@scenario("XINFO CONSUMERS idle grows with time and resets on reads and claims", tags=["time"])
def consumer_idle(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">")
    sleep_ms(25)
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    sleep_ms(10)
    r.call(1, "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XCLAIM", "s", "g", "carol", "0", "1-0", "JUSTID")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
