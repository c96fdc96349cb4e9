"""XINFO and entries-read/lag: differential tests against a real Redis 7.0.15.

Rules XINFO-* and LAG-* of spec/rules/info.md; edge cases 62, 63 and 64 of
the reference's §10 and the lag values of its §5. Seen-times, delivery times
and idle times are checked exactly, through the checker's time windows.
"""

from __future__ import annotations

import time

import pytest

from tests.test_reads import add


def test_xinfo_help_and_errors(redis):
    """XINFO-1, XINFO-2, XINFO-4, XINFO-7; edge case 62 (FULL COUNT without a value)."""
    s = redis.scenario()
    add(s, "s", 1)
    s.call(1, "SET", "str", "x")
    s.call(1, "XINFO", "HELP")
    s.call(1, "xinfo", "help")
    s.call(1, "XINFO", "HELP", "x")
    s.call(1, "XINFO", "FOO", "s")
    s.call(1, "XINFO")
    s.call(1, "XINFO", "STREAM")
    s.call(1, "XINFO", "GROUPS", "s", "x")
    s.call(1, "XINFO", "STREAM", "nokey")
    s.call(1, "XINFO", "STREAM", "nokey", "FULL", "BAD")
    s.call(1, "XINFO", "GROUPS", "nokey")
    s.call(1, "XINFO", "CONSUMERS", "nokey", "g")
    s.call(1, "XINFO", "STREAM", "str")
    s.call(1, "XINFO", "CONSUMERS", "str", "g")
    s.call(1, "XINFO", "CONSUMERS", "s", "nog")
    s.call(1, "XINFO", "CONSUMERS", b"k\r\ney", b"g\nx\x00y")
    s.call(1, "XADD", b"k\r\ney", "1-0", "f", "v")
    s.call(1, "XINFO", "CONSUMERS", b"k\r\ney", b"g\nx\x00y")
    s.call(1, "XINFO", "STREAM", "s", "BAD")
    s.call(1, "xinfo", "stream", "s", "full", "count")
    s.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT", "x")
    s.call(1, "XINFO", "STREAM", "s", "FULL", "LIMIT", "1")
    s.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT", "1", "x")
    s.call(1, "XINFO", "STREAM", "s", b"FULL\x00x", b"count\x00y", "1")
    s.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT", "1.5")
    s.check()


def test_xinfo_stream_summary(redis):
    """XINFO-3; edge case 62: empty streams, deletions, node counts, RESP3."""
    s = redis.scenario(config={"stream-node-max-entries": "4"})
    s.call(1, "XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    s.call(1, "XINFO", "STREAM", "e")
    add(s, "s", *range(1, 11))
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XDEL", "s", "1-0", "10-0", "5-0")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XDEL", "s", "6-0", "7-0", "8-0")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XADD", "z", "MAXLEN", "0", "3-0", "f", "v")
    s.call(1, "XINFO", "STREAM", "z")
    s.call(2, "HELLO", "3")
    s.call(2, "XINFO", "STREAM", "s")
    s.call(2, "XINFO", "STREAM", "z")
    s.call(2, "XINFO", "STREAM", "e", "FULL")
    s.check()


def test_xinfo_stream_full(redis):
    """XINFO-5; edge cases 62 and 63: COUNT, pending lists, consumer records, RESP2 and RESP3."""
    s = redis.scenario()
    add(s, "s", *range(1, 16))
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XGROUP", "CREATE", "s", "a", "$")
    s.call(1, "XGROUP", "CREATECONSUMER", "s", "a", "idle")
    s.call(1, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "12", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    s.call(1, "XDEL", "s", "3-0")
    s.call(1, "XINFO", "STREAM", "s", "FULL")
    s.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT", "0")
    s.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT", "-1")
    s.call(1, "XINFO", "STREAM", "s", "full", "count", "2")
    s.call(2, "HELLO", "3")
    s.call(2, "XINFO", "STREAM", "s", "FULL", "COUNT", "3")
    s.call(2, "XINFO", "CONSUMERS", "s", "g")
    s.call(2, "XINFO", "GROUPS", "s")
    s.call(1, "XINFO", "CONSUMERS", "s", "g")
    s.call(1, "XINFO", "CONSUMERS", "s", "a")
    s.check()


def test_lag_sequence_of_the_70_bug(redis):
    """LAG-3, LAG-4; edge case 64: entries-read 1, 2, 4 and lag 4, nil, 3, 1, 2."""
    s = redis.scenario()
    add(s, "s", 1, 2, 3, 4, 5)
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XDEL", "s", "2-0")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XADD", "s", "6-0", "f", "v")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(2, "HELLO", "3")
    s.call(2, "XINFO", "GROUPS", "s")
    s.check()


def test_lag_values(redis):
    """LAG-1 .. LAG-5 and the values of the reference's §5."""
    s = redis.scenario()
    add(s, "s", 1, 2, 3)
    s.call(1, "XGROUP", "CREATE", "s", "dollar", "$")
    s.call(1, "XGROUP", "CREATE", "s", "zero", "0")
    s.call(1, "XGROUP", "CREATE", "s", "future", "99-0")
    s.call(1, "XGROUP", "CREATE", "s", "plus", "0")
    s.call(1, "XGROUP", "SETID", "s", "plus", "+")
    s.call(1, "XGROUP", "CREATE", "s", "over", "99-99", "ENTRIESREAD", "1000")
    s.call(1, "XGROUP", "CREATE", "s", "mid", "2-0")
    s.call(1, "XGROUP", "CREATE", "s", "first", "1-0")
    s.call(1, "XGROUP", "CREATE", "s", "known", "2-0", "ENTRIESREAD", "2")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XGROUP", "CREATE", "m", "g", "$", "MKSTREAM")
    s.call(1, "XINFO", "GROUPS", "m")
    s.call(1, "XDEL", "s", "1-0")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XDEL", "s", "3-0")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XDEL", "s", "2-0")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XINFO", "STREAM", "s", "FULL")
    add(s, "f", 1, 2, 3)
    s.call(1, "XGROUP", "CREATE", "f", "g", "0", "ENTRIESREAD", "0")
    s.call(1, "XDEL", "f", "1-0")
    s.call(1, "XINFO", "GROUPS", "f")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "f", ">")
    s.call(1, "XINFO", "GROUPS", "f")
    add(s, "d", 1, 2, 3)
    s.call(1, "XGROUP", "CREATE", "d", "g", "3-0", "ENTRIESREAD", "1")
    s.call(1, "XGROUP", "CREATE", "d", "h", "2-0", "ENTRIESREAD", "1")
    s.call(1, "XDEL", "d", "3-0")
    s.call(1, "XINFO", "GROUPS", "d")
    add(s, "t", 1, 2, 3, 4)
    s.call(1, "XDEL", "t", "2-0")
    s.call(1, "XGROUP", "CREATE", "t", "g", "0")
    s.call(1, "XINFO", "GROUPS", "t")
    s.call(1, "XADD", "t", "MAXLEN", "2", "5-0", "f", "v")
    s.call(1, "XINFO", "GROUPS", "t")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "NOACK", "COUNT", "1", "STREAMS", "t", ">")
    s.call(1, "XINFO", "GROUPS", "t")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "t", ">")
    s.call(1, "XINFO", "GROUPS", "t")
    s.check()


def test_idle_follows_seen_time(redis):
    """XINFO-7, XREADGROUP-9, BLOCK-7: which reads refresh seen-time, seen through idle."""
    s = redis.scenario()
    add(s, "s", 1)
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    for name in ("history", "nothing", "blocked", "untouched"):
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", name)
    time.sleep(0.1)
    s.call(1, "XREADGROUP", "GROUP", "g", "history", "STREAMS", "s", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "nothing", "STREAMS", "s", ">")
    s.send(2, "XREADGROUP", "GROUP", "g", "blocked", "BLOCK", "0", "STREAMS", "s", ">")
    assert s.is_waiting(2)
    time.sleep(0.1)
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.recv(2)
    time.sleep(0.1)
    s.call(1, "XINFO", "CONSUMERS", "s", "g")
    s.check()


def test_delivery_counts_shown_as_signed(redis):
    """XINFO-5, XREADGROUP-6: a history read past 2^63 - 1 deliveries shows a negative count."""
    s = redis.scenario()
    add(s, "s", 1, 2)
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "RETRYCOUNT", "9223372036854775807", "JUSTID")
    s.call(1, "XCLAIM", "s", "g", "c", "0", "2-0", "RETRYCOUNT", "9223372036854775806", "JUSTID")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    s.call(1, "XINFO", "STREAM", "s", "FULL")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    s.call(1, "XINFO", "STREAM", "s", "FULL")
    s.check()


@pytest.mark.parametrize("proto", [2, 3])
def test_counters_wrap_as_c_integers(redis, proto):
    """LAG-6: entries-added (uint64) and entries-read (int64) wrap; XINFO prints them signed."""
    s = redis.scenario()
    if proto == 3:
        s.call(1, "HELLO", "3")
    s.call(1, "XADD", "s", "1-0", "f", "v")
    s.call(1, "XSETID", "s", "1-0", "ENTRIESADDED", "9223372036854775807")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XINFO", "STREAM", "s", "FULL")
    s.call(1, "XADD", "t", "1-0", "f", "v")
    s.call(1, "XADD", "t", "2-0", "f", "v")
    s.call(1, "XGROUP", "CREATE", "t", "g", "0", "ENTRIESREAD", "9223372036854775807")
    s.call(1, "XREADGROUP", "GROUP", "g", "a", "COUNT", "1", "STREAMS", "t", ">")
    s.call(1, "XINFO", "GROUPS", "t")
    s.call(1, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "t", ">")
    s.call(1, "XINFO", "GROUPS", "t")
    s.call(1, "XINFO", "STREAM", "t", "FULL")
    s.check()
