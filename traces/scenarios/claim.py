"""XCLAIM and XAUTOCLAIM."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add, sleep_ms
from xspec.traces.scenarios.registry import topic

scenario = topic("claim")


def _pending(r: Recorder, n: int, consumer: str = "alice") -> None:
    add(r, "s", range(1, n + 1))
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", consumer, "STREAMS", "s", ">")


@scenario("XCLAIM looks up key and group before parsing min-idle-time", edge=(48,), tags=["xclaim", "errors"])
def xclaim_check_order(r: Recorder) -> None:
    r.call(1, "XCLAIM", "nokey", "g", "c", "abc", "1-0")
    _pending(r, 2)
    r.call(1, "XCLAIM", "s", "nog", "c", "abc", "1-0")
    r.call(1, "XCLAIM", "s", "g", "c", "abc", "1-0")
    r.call(1, "XCLAIM", "s", "g", "c", "1.5", "1-0")
    r.call(1, "SET", "str", "x")
    r.call(1, "XCLAIM", "str", "g", "c", "abc", "1-0")
    r.call(1, "XCLAIM", "s", "g", "c", "0")


@scenario("XCLAIM options after the IDs; unknown tokens and bad values", edge=(49,), tags=["xclaim", "errors"])
def xclaim_option_errors(r: Recorder) -> None:
    _pending(r, 2)
    r.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "bad", "2-0")
    r.call(1, "XCLAIM", "s", "g", "c", "0", "-")
    r.call(1, "XCLAIM", "s", "g", "c", "0", "+")
    r.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "IDLE")
    r.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "IDLE", "x")
    r.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "TIME", "x")
    r.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "RETRYCOUNT", "x")
    r.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "LASTID", "bad")
    r.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "JUSTID", "2-0")
    r.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "FOO")
    r.call(1, "XCLAIM", "s", "g", "c", "0", "bad")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("XCLAIM processes duplicate IDs twice", edge=(50,), tags=["xclaim"])
def xclaim_duplicates(r: Recorder) -> None:
    _pending(r, 3)
    r.call(1, "XCLAIM", "s", "g", "c", "0", "2-0", "2-0", "JUSTID")
    r.call(1, "XCLAIM", "s", "g", "d", "0", "3-0", "3-0")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")


@scenario("Delivery counts: JUSTID keeps, plain adds 1, RETRYCOUNT sets, FORCE creates", edge=(51,), tags=["xclaim"])
def xclaim_counts(r: Recorder) -> None:
    _pending(r, 3)
    r.call(1, "XADD", "s", "4-0", "f", "v")
    r.call(1, "XADD", "s", "5-0", "f", "v")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "1-0", "JUSTID")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "2-0")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "3-0", "RETRYCOUNT", "7")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "3-0", "RETRYCOUNT", "-3")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "3-0", "RETRYCOUNT", "0", "JUSTID")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "4-0")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "4-0", "FORCE")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "5-0", "FORCE", "JUSTID")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "9-0", "FORCE")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("XCLAIM TIME in the future or a negative IDLE means now; IDLE and TIME in the past set idle", edge=(52,), tags=["xclaim", "time"])
def xclaim_time_options(r: Recorder) -> None:
    _pending(r, 4)
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "1-0", "TIME", "99999999999999")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "2-0", "IDLE", "-500")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "3-0", "IDLE", "500000", "JUSTID")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "4-0", "TIME", "1000", "JUSTID")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XPENDING", "s", "g", "IDLE", "100000", "-", "+", "10")
    r.call(1, "XCLAIM", "s", "g", "carol", "400000", "1-0", "2-0", "3-0", "4-0", "JUSTID")


@scenario("XCLAIM whose min-idle is not met claims nothing and does not create the consumer (7.0)", edge=(53,), tags=["xclaim", "time"])
def xclaim_min_idle(r: Recorder) -> None:
    _pending(r, 2)
    r.call(1, "XCLAIM", "s", "g", "bob", "60000", "1-0", "2-0")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    sleep_ms(40)
    r.call(1, "XCLAIM", "s", "g", "bob", "20", "1-0")
    r.call(1, "XCLAIM", "s", "g", "carol", "20", "1-0", "2-0", "JUSTID")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")


@scenario("XCLAIM LASTID moves the group's last ID even when nothing is claimed; entries-read unchanged", edge=(54,), tags=["xclaim", "lag"])
def xclaim_lastid(r: Recorder) -> None:
    _pending(r, 3)
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "9-0", "LASTID", "1000")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "1-0", "LASTID", "5-0")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("XCLAIM of a pending ID whose entry was deleted drops it from the PEL", edge=(55,), tags=["xclaim"])
def xclaim_deleted_entry(r: Recorder) -> None:
    _pending(r, 3)
    r.call(1, "XDEL", "s", "2-0")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "1-0", "2-0", "3-0")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "2-0", "FORCE")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("XCLAIM min-idle negative is 0; claiming moves ownership between consumers", tags=["xclaim"])
def xclaim_ownership(r: Recorder) -> None:
    _pending(r, 3)
    r.call(1, "XCLAIM", "s", "g", "bob", "-10", "1-0", "2-0")
    r.call(1, "XCLAIM", "s", "g", "alice", "0", "2-0")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    r.call(1, "XACK", "s", "g", "1-0")
    r.call(1, "XCLAIM", "s", "g", "alice", "0", "1-0")


@scenario("XAUTOCLAIM option errors, COUNT bounds, parse before NOGROUP", edge=(56,), tags=["xautoclaim", "errors"])
def xautoclaim_errors(r: Recorder) -> None:
    r.call(1, "XAUTOCLAIM", "nokey", "g", "c", "0", "bad")
    r.call(1, "XAUTOCLAIM", "nokey", "g", "c", "abc", "0")
    r.call(1, "XAUTOCLAIM", "nokey", "g", "c", "0", "0", "COUNT", "0")
    r.call(1, "XAUTOCLAIM", "nokey", "g", "c", "0", "0")
    _pending(r, 2)
    r.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "0")
    r.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "abc")
    r.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "1000000000000000000")
    r.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "-1")
    r.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT")
    r.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "0", "FOO")
    r.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "(-")
    r.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "(18446744073709551615-18446744073709551615")
    r.call(1, "XAUTOCLAIM", "s", "nog", "c", "0", "0")
    r.call(1, "SET", "str", "x")
    r.call(1, "XAUTOCLAIM", "str", "g", "c", "0", "0")
    r.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "1", "COUNT", "2", "JUSTID")


@scenario("XAUTOCLAIM scans COUNT*10 entries; + start; exclusive start", edge=(57,), tags=["xautoclaim", "time"])
def xautoclaim_budget(r: Recorder) -> None:
    _pending(r, 25)
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "3600000", "0-0", "COUNT", "1")
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "3600000", "11-0", "COUNT", "2")
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "0", "+")
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "0", "(1", "COUNT", "2")
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "0", "(24-0", "JUSTID")
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "0", "-", "COUNT", "1", "JUSTID")
    r.call(1, "XPENDING", "s", "g")


@scenario("Deleted entries at the PEL head use up COUNT and are reported", edge=(58,), tags=["xautoclaim"])
def xautoclaim_deleted_head(r: Recorder) -> None:
    _pending(r, 5)
    r.call(1, "XDEL", "s", "1-0", "2-0", "3-0")
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "0", "0-0", "COUNT", "2")
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "0", "3-0", "COUNT", "2")
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "0", "0-0")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("XAUTOCLAIM cursor iteration with real idle times; JUSTID keeps counts", tags=["xautoclaim", "time"])
def xautoclaim_cursor(r: Recorder) -> None:
    _pending(r, 6)
    sleep_ms(30)
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", "4")
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "20", "0-0", "COUNT", "2")
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "20", "3-0", "COUNT", "2", "JUSTID")
    r.call(1, "XAUTOCLAIM", "s", "g", "bob", "20", "0-0", "COUNT", "10")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
