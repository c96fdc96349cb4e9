"""XACK and XPENDING."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add, resp3, sleep_ms
from xspec.traces.scenarios.registry import topic

scenario = topic("pending")


def _group_with_pending(r: Recorder, n: int = 5) -> None:
    add(r, "s", range(1, n + 1))
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")


@scenario("XACK: no validation on a missing key or group, all-or-nothing IDs, duplicates count once", edge=(40,), tags=["xack"])
def xack(r: Recorder) -> None:
    r.call(1, "XACK", "nokey", "g", "bad")
    _group_with_pending(r, 3)
    r.call(1, "XACK", "s", "nog", "bad")
    r.call(1, "XACK", "s", "g", "1-0", "bad")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XACK", "s", "g", "1-0", "1-0")
    r.call(1, "XACK", "s", "g", "1-0")
    r.call(1, "XACK", "s", "g", "2", "3-0", "9-0")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "SET", "str", "x")
    r.call(1, "XACK", "str", "g", "1-0")
    r.call(1, "XACK", "s", "g")
    r.call(1, "XACK", "s", "g", "-")


@scenario("XPENDING argument count and IDLE parsing; extra arguments after the consumer are ignored", edge=(45,), tags=["errors"])
def syntax(r: Recorder) -> None:
    _group_with_pending(r)
    r.call(1, "XPENDING", "s", "g", "-", "+")
    r.call(1, "XPENDING", "s", "g", "-")
    r.call(1, "XPENDING", "s", "g", "IDLE", "10", "-", "+")
    r.call(1, "XPENDING", "s", "g", "IDLE", "abc", "-", "+", "10")
    r.call(1, "XPENDING", "s", "g", "-", "+", "abc")
    r.call(1, "XPENDING", "s", "g", "bad", "+", "10")
    r.call(1, "XPENDING", "s", "g", "(-", "+", "10")
    r.call(1, "XPENDING", "s", "g", "-", "(0-0", "10")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10", "alice", "junk", "junk2")
    r.call(1, "XPENDING", "s", "g", "IDLE", "0", "-", "+", "10", "bob", "junk")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10", "alice", "a", "b", "c")
    r.call(1, "XPENDING", "s")
    r.call(1, "XPENDING", "nokey", "g")
    r.call(1, "XPENDING", "s", "nog")
    r.call(1, "XPENDING", "nokey", "g", "bad", "+", "10")
    r.call(1, "SET", "str", "x")
    r.call(1, "XPENDING", "str", "g")


@scenario("XPENDING summary: empty PEL nulls, bulk-string counts, consumers without entries left out", edge=(46,), tags=["resp3"])
def summary(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XPENDING", "s", "g")
    resp3(r, 2)
    r.call(2, "XPENDING", "s", "g")
    r.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "idle")
    r.call(1, "XREADGROUP", "GROUP", "g", "zed", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "amy", "STREAMS", "s", ">")
    r.call(1, "XPENDING", "s", "g")
    r.call(2, "XPENDING", "s", "g")
    r.call(1, "XACK", "s", "g", "1-0", "2-0", "3-0")
    r.call(1, "XPENDING", "s", "g")
    r.call(2, "XPENDING", "s", "g")


@scenario("XPENDING IDLE filtering with real idle times; negative IDLE and counts; unknown consumer", edge=(47,), tags=["time"])
def idle_filter(r: Recorder) -> None:
    add(r, "s", [1, 2, 3, 4])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "old", "COUNT", "2", "STREAMS", "s", ">")
    sleep_ms(60)
    r.call(1, "XREADGROUP", "GROUP", "g", "new", "STREAMS", "s", ">")
    r.call(1, "XPENDING", "s", "g", "IDLE", "40", "-", "+", "10")
    r.call(1, "XPENDING", "s", "g", "IDLE", "40", "-", "+", "1")
    r.call(1, "XPENDING", "s", "g", "IDLE", "40", "3", "+", "10")
    r.call(1, "XPENDING", "s", "g", "IDLE", "-5", "-", "+", "10")
    r.call(1, "XPENDING", "s", "g", "IDLE", "0", "-", "+", "10", "new")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10", "nobody")
    r.call(1, "XPENDING", "s", "g", "-", "+", "-1")
    r.call(1, "XPENDING", "s", "g", "-", "+", "0")


@scenario("XPENDING extended form over ranges, per consumer, exclusive bounds")
def extended(r: Recorder) -> None:
    _group_with_pending(r, 6)
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XPENDING", "s", "g", "-", "+", "2")
    r.call(1, "XPENDING", "s", "g", "(2-0", "5", "10")
    r.call(1, "XPENDING", "s", "g", "3", "(5", "10", "bob")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10", "alice")
    r.call(1, "XPENDING", "s", "g", "5", "2", "10")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
