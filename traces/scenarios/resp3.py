"""RESP3 clients (HELLO 3): maps, nulls, and the same conversation in both protocols."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add, resp3
from xspec.traces.scenarios.registry import topic

scenario = topic("resp3")


@scenario("XREAD and XREADGROUP replies are maps in RESP3, arrays in RESP2", tags=["xread", "xreadgroup"])
def read_maps(r: Recorder) -> None:
    add(r, "a", [1, 2])
    add(r, "b", [3])
    r.call(1, "XGROUP", "CREATE", "a", "g", "0")
    r.call(1, "XGROUP", "CREATE", "b", "g", "0")
    resp3(r, 2)
    r.call(1, "XREAD", "STREAMS", "a", "b", "0", "0")
    r.call(2, "XREAD", "STREAMS", "a", "b", "0", "0")
    r.call(2, "XREAD", "STREAMS", "a", "a", "0", "1")
    r.call(2, "XREAD", "STREAMS", "a", "$")
    r.call(2, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "a", "b", ">", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "d", "STREAMS", "a", "b", ">", ">")
    r.call(2, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", "0", "0")
    r.call(2, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">")


@scenario("Null replies in RESP3: XRANGE COUNT 0, NOMKSTREAM, XPENDING summary, XINFO first/last entry", tags=["nulls"])
def nulls(r: Recorder) -> None:
    resp3(r, 1)
    add(r, "s", [1])
    r.call(1, "XRANGE", "s", "-", "+", "COUNT", "0")
    r.call(1, "XRANGE", "nokey", "-", "+")
    r.call(1, "XADD", "nokey", "NOMKSTREAM", "*", "f", "v")
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XREAD", "STREAMS", "s", "$")
    r.call(1, "XDEL", "s", "1-0")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XGROUP", "SETID", "s", "g", "+")
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("XINFO STREAM, STREAM FULL, GROUPS, CONSUMERS as RESP3 maps", tags=["xinfo"])
def xinfo_maps(r: Recorder) -> None:
    resp3(r, 1)
    add(r, "s", [1, 2, 3])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XINFO", "STREAM", "s", "FULL")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XINFO", "HELP")


@scenario("XPENDING, XCLAIM and XAUTOCLAIM in RESP3", tags=["claim"])
def claims(r: Recorder) -> None:
    resp3(r, 1)
    add(r, "s", [1, 2, 3])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    r.call(1, "XDEL", "s", "3-0")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "1-0")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "1-0", "JUSTID")
    r.call(1, "XAUTOCLAIM", "s", "g", "carol", "0", "0-0")
    r.call(1, "XAUTOCLAIM", "s", "g", "carol", "0", "0-0", "JUSTID")
    r.call(1, "XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", "0")


@scenario("Errors, integers, status replies and CONFIG GET in RESP3", tags=["errors"])
def scalars(r: Recorder) -> None:
    resp3(r, 1)
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.call(1, "XLEN", "s")
    r.call(1, "XADD", "s", "bad", "f", "v")
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XGROUP", "HELP")
    r.call(1, "XSETID", "s", "5-0")
    r.call(1, "CONFIG", "GET", "stream-node-max-entries")
    r.call(1, "XACK", "s", "g", "1-0")
    r.call(1, "XTRIM", "s", "MAXLEN", "0")
    r.call(1, "XGROUP", "DESTROY", "s", "g")


@scenario("A client switching RESP3 on and back to RESP2 with HELLO mid-conversation", tags=["hello"])
def switch_protocols(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XREAD", "STREAMS", "s", "0")
    resp3(r, 1)
    r.call(1, "XREAD", "STREAMS", "s", "0")
    r.call(1, "XREAD", "STREAMS", "s", "$")
    r.call(1, "HELLO", "2")
    r.call(1, "XREAD", "STREAMS", "s", "$")
    r.call(1, "XREAD", "STREAMS", "s", "0")


@scenario("Blocked RESP3 readers: served replies are maps, timeouts are _", tags=["blocking"])
def blocked(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    resp3(r, 2)
    resp3(r, 3)
    r.send(2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.send(3, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    r.is_waiting(2)
    r.is_waiting(3)
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.recv(2)
    r.recv(3)
    r.call(2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "30", "STREAMS", "s", ">")
    r.call(3, "XREAD", "BLOCK", "30", "STREAMS", "s", "$")
    r.send(2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.is_waiting(2)
    r.call(1, "XGROUP", "DESTROY", "s", "g")
    r.recv(2)
