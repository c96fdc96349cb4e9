"""XREAD without blocking: parsing, per-stream serving, errors."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import MAX_ID, add
from xspec.traces.scenarios.registry import topic

scenario = topic("xread")


@scenario("XREAD from IDs, $, incomplete IDs, several streams, COUNT")
def basic(r: Recorder) -> None:
    add(r, "a", [1, 2, 3])
    add(r, "b", [2, 4])
    r.call(1, "XREAD", "STREAMS", "a", "0")
    r.call(1, "XREAD", "STREAMS", "a", "b", "1", "1")
    r.call(1, "XREAD", "COUNT", "1", "STREAMS", "a", "b", "1", "1")
    r.call(1, "XREAD", "STREAMS", "a", "$")
    r.call(1, "XREAD", "STREAMS", "a", "b", "3-0", "2-0")
    r.call(1, "XREAD", "STREAMS", "a", "b", "3", "4")
    r.call(1, "XREAD", "STREAMS", "nokey", "0")
    r.call(1, "XREAD", "COUNT", "2", "COUNT", "1", "STREAMS", "a", "0")
    r.call(1, "XREAD", "STREAMS", "a", MAX_ID)


@scenario("STREAMS swallows the rest of the arguments; an odd key/ID list is unbalanced", edge=(20,), tags=["errors"])
def streams_swallows(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XREAD", "STREAMS", "s", "0", "COUNT", "1")
    r.call(1, "XREAD", "COUNT", "1", "STREAMS", "s")
    r.call(1, "XREAD", "STREAMS", "s", "t", "0")
    r.call(1, "XREAD", "COUNT", "1", "s", "0")
    r.call(1, "XREAD", "COUNT", "1", "STREAMS")
    r.call(1, "XREAD", "COUNT", "x", "STREAMS", "s", "0")
    r.call(1, "XREAD", "FOO", "STREAMS", "s", "0")
    r.call(1, "XREAD", "GROUP", "g", "c", "STREAMS", "s", "0")
    r.call(1, "XREAD", "NOACK", "STREAMS", "s", "0")


@scenario("XREAD with + is an invalid ID in 7.0", edge=(21,), tags=["errors"])
def plus_id(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XREAD", "STREAMS", "s", "+")
    r.call(1, "XREAD", "STREAMS", "s", "-")
    r.call(1, "XREAD", "STREAMS", "nokey", "+")


@scenario("Negative COUNT is unlimited; a key named twice is answered twice; missing keys are left out", edge=(22,))
def count_and_duplicates(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XREAD", "COUNT", "-5", "STREAMS", "s", "0")
    r.call(1, "XREAD", "COUNT", "0", "STREAMS", "s", "0")
    r.call(1, "XREAD", "STREAMS", "s", "s", "0", "2")
    r.call(1, "XREAD", "STREAMS", "nokey", "s", "0", "2")
    r.call(1, "XREAD", "STREAMS", "nokey", "s", "0", "3")


@scenario("BLOCK timeout errors; a huge timeout is accepted and blocks in 7.0", edge=(23,), tags=["blocking", "errors"])
def block_timeouts(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XREAD", "BLOCK", "-1", "STREAMS", "s", "$")
    r.call(1, "XREAD", "BLOCK", "1.5", "STREAMS", "s", "$")
    r.call(1, "XREAD", "BLOCK", "abc", "STREAMS", "s", "$")
    r.call(1, "XREAD", "BLOCK", "0", "STREAMS", "s", "0")
    r.send(2, "XREAD", "BLOCK", "9223372036854775807", "STREAMS", "s", "$")
    if not r.is_waiting(2):
        r.note("the huge timeout did not block")
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.recv(2)


@scenario("XREAD with > is refused", edge=(26,), tags=["errors"])
def gt_id(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XREAD", "STREAMS", "s", ">")
    r.call(1, "XREAD", "STREAMS", "nokey", ">")


@scenario("XREAD type errors stop the command at the first bad key", tags=["errors"])
def wrong_type(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "SET", "str", "x")
    r.call(1, "XREAD", "STREAMS", "str", "0")
    r.call(1, "XREAD", "STREAMS", "s", "str", "0", "0")
    r.call(1, "XREAD", "STREAMS", "s", "str", "0", "bad")
    r.call(1, "XREAD", "STREAMS", "s", "nokey", "bad", "0")
    r.call(1, "XREAD", "STREAMS", "s", "$")


@scenario("XREAD serves a stream only if its last live entry is after the ID")
def last_live_entry(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XDEL", "s", "3-0")
    r.call(1, "XREAD", "STREAMS", "s", "2-0")
    r.call(1, "XREAD", "STREAMS", "s", "1-5")
    r.call(1, "XDEL", "s", "1-0", "2-0")
    r.call(1, "XREAD", "STREAMS", "s", "0")
    r.call(1, "XREAD", "STREAMS", "s", "$")
