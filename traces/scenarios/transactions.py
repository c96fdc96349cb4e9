"""MULTI/EXEC/DISCARD/WATCH around stream commands."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add
from xspec.traces.scenarios.registry import topic

scenario = topic("transactions")


@scenario("XREAD and XREADGROUP with BLOCK inside MULTI reply a null array at once", edge=(24,), tags=["blocking"])
def block_in_multi(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    r.call(1, "MULTI")
    r.call(1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "XREAD", "BLOCK", "0", "STREAMS", "s", "0")
    r.call(1, "EXEC")
    r.call(2, "HELLO", "3")
    r.call(2, "MULTI")
    r.call(2, "XREAD", "BLOCK", "100", "STREAMS", "s", "$")
    r.call(2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "100", "STREAMS", "s", ">")
    r.call(2, "EXEC")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("A queuing error (unknown command, arity) makes EXEC fail with EXECABORT", tags=["errors"])
def execabort(r: Recorder) -> None:
    r.call(1, "MULTI")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.call(1, "XADD", "s")
    r.call(1, "XLEN", "s")
    r.call(1, "EXEC")
    r.call(1, "EXISTS", "s")
    r.call(1, "MULTI")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.call(1, "NOSUCHCOMMAND", "x")
    r.call(1, "EXEC")
    r.call(1, "MULTI")
    r.call(1, "XGROUP", "NOSUCH", "s", "g")
    r.call(1, "XINFO", "STREAM")
    r.call(1, "EXEC")
    r.call(1, "EXISTS", "s")


@scenario("Runtime errors inside EXEC do not stop the other commands", tags=["errors"])
def runtime_errors(r: Recorder) -> None:
    r.call(1, "SET", "str", "x")
    r.call(1, "MULTI")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.call(1, "XADD", "str", "1-0", "f", "v")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">")
    r.call(1, "XACK", "s", "g", "1-0")
    r.call(1, "XRANGE", "s", "-", "+")
    r.call(1, "EXEC")


def _watch_round(r: Recorder, key: str, *other: str) -> None:
    """Client 1 watches ``key``, client 2 runs ``other``, client 1 runs a transaction on ``key``."""
    r.call(1, "WATCH", key)
    r.call(2, *other)
    r.call(1, "MULTI")
    r.call(1, "XLEN", key)
    r.call(1, "EXEC")


@scenario("WATCH against XADD, XDEL, XTRIM, XGROUP CREATE and XSETID by another client", tags=["watch"])
def watch_stream_writes(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    _watch_round(r, "s", "XADD", "s", "9-0", "f", "v")
    _watch_round(r, "s", "XDEL", "s", "1-0")
    _watch_round(r, "s", "XTRIM", "s", "MAXLEN", "1")
    _watch_round(r, "s", "XGROUP", "CREATE", "s", "g", "0")
    _watch_round(r, "s", "XSETID", "s", "99-0")
    _watch_round(r, "new", "XGROUP", "CREATE", "new", "g", "$", "MKSTREAM")
    _watch_round(r, "s", "XADD", "s", "MAXLEN", "0", "100-0", "f", "v")


@scenario("WATCH against consumer-group reads, acknowledgements, claims and group changes", tags=["watch"])
def watch_group_ops(r: Recorder) -> None:
    add(r, "s", [1, 2, 3, 4])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    _watch_round(r, "s", "XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">")
    _watch_round(r, "s", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    _watch_round(r, "s", "XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">")
    _watch_round(r, "s", "XACK", "s", "g", "1-0")
    _watch_round(r, "s", "XCLAIM", "s", "g", "d", "0", "2-0")
    _watch_round(r, "s", "XAUTOCLAIM", "s", "g", "e", "0", "0-0")
    _watch_round(r, "s", "XGROUP", "SETID", "s", "g", "0")
    _watch_round(r, "s", "XGROUP", "CREATECONSUMER", "s", "g", "f")
    _watch_round(r, "s", "XGROUP", "DELCONSUMER", "s", "g", "e")
    _watch_round(r, "s", "XDEL", "s", "99-0")
    _watch_round(r, "s", "XREAD", "STREAMS", "s", "0")
    _watch_round(r, "s", "XTRIM", "s", "MAXLEN", "100")
    _watch_round(r, "s", "XGROUP", "DESTROY", "s", "g")


@scenario("WATCH of an untouched key lets EXEC run; UNWATCH; DISCARD; nesting errors")
def watch_discard(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "WATCH", "s", "other")
    r.call(2, "XADD", "unrelated", "1-0", "f", "v")
    r.call(1, "MULTI")
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.call(1, "EXEC")
    r.call(1, "WATCH", "s")
    r.call(2, "XADD", "s", "3-0", "f", "v")
    r.call(1, "UNWATCH")
    r.call(1, "MULTI")
    r.call(1, "XLEN", "s")
    r.call(1, "EXEC")
    r.call(1, "MULTI")
    r.call(1, "MULTI")
    r.call(1, "XADD", "s", "4-0", "f", "v")
    r.call(1, "DISCARD")
    r.call(1, "XLEN", "s")
    r.call(1, "EXEC")
    r.call(1, "DISCARD")
    r.call(1, "MULTI")
    r.call(1, "WATCH", "s")
    r.call(1, "EXEC")


@scenario("Consumer-group round trip inside one MULTI, RESP2 and RESP3", tags=["resp3"])
def group_round_trip(r: Recorder) -> None:
    r.call(2, "HELLO", "3")
    for c in (1, 2):
        key = f"s{c}"
        r.call(c, "MULTI")
        r.call(c, "XGROUP", "CREATE", key, "g", "$", "MKSTREAM")
        r.call(c, "XADD", key, "1-0", "f", "v")
        r.call(c, "XADD", key, "2-0", "f", "v")
        r.call(c, "XREADGROUP", "GROUP", "g", "c", "STREAMS", key, ">")
        r.call(c, "XACK", key, "g", "1-0")
        r.call(c, "XPENDING", key, "g")
        r.call(c, "XINFO", "GROUPS", key)
        r.call(c, "EXEC")


@scenario("WATCH: FLUSHALL aborts EXEC; an XADD NOMKSTREAM that creates nothing does not", tags=["watch"])
def watch_flush(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "WATCH", "s")
    r.call(2, "FLUSHALL")
    r.call(1, "MULTI")
    r.call(1, "XADD", "s", "5-0", "f", "v")
    r.call(1, "EXEC")
    r.call(1, "WATCH", "nokey")
    r.call(2, "XADD", "nokey", "NOMKSTREAM", "1-0", "f", "v")
    r.call(1, "MULTI")
    r.call(1, "XLEN", "nokey")
    r.call(1, "EXEC")
