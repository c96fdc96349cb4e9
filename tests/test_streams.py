"""XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XSETID: differential tests against a real Redis 7.0.15.

Every test runs commands on the real server, records the conversation and
checks it on the model (spec/rules/streams.md: XADD-*, XTRIM-*, XLEN-*,
XRANGE-*, XDEL-*, XSETID-*, and the ID grammar ID-*), in RESP2 and RESP3.
Propagation is compared with the server's own replication stream
(``assert_propagation_matches`` of tests/test_propagation.py). Edge cases
1-19, 41-43, 59-61 and 71 of the reference's §10 are named where they are
covered.

Auto-generated IDs (``*``) appear only after a last ID far in the future, so
the reply does not depend on the millisecond the server ran in.
"""

from __future__ import annotations

import pytest

from tests.test_propagation import assert_propagation_matches
from xspec.models import ManualClock, Server
from xspec.spec.dialect import REDIS_70, Dialect
from xspec.spec.resp import Array, Bulk, Error, Int, NullArray, NullBulk

pytestmark = pytest.mark.redis

U64 = "18446744073709551615"
MAX = f"{U64}-{U64}"
FUTURE = "99999999999999"  # a millisecond no test machine reaches


def _hello3(s, c: int) -> None:  # type: ignore[no-untyped-def]
    s.call(c, "HELLO", "3")


# -- IDs: the lenient parser ----------------------------------------------------------------
def test_xadd_lenient_id_parser(redis):
    """Edge cases 1-3; ID-1 .. ID-7."""
    s = redis.scenario()
    for arg in [" 1-1", "+2-1", "03-04", "4--18446744073709551615", "\t5", "6-+7", " +8- 9"]:
        s.call(1, "XADD", "s", arg, "f", "v")
    for arg in ["1--5", "6-1 ", "1.5", "6-", "-6", "*-1", "6-**", "", "9" * 21, "1" * 128, "1" * 127,
                "18446744073709551616", "9-18446744073709551616", "-", "+", "9-0x", "9 -1", "10-1\x00junk",
                "11\x00-5", "--", "- ", "12-*"]:
        s.call(1, "XADD", "s", arg, "f", "v")
    s.call(1, "XADD", "s", "0" * 126 + "13", "f", "v")  # 128 bytes: too long even with leading zeros
    s.call(1, "XADD", "s", "0" * 125 + "13", "f", "v")
    s.call(1, "XRANGE", "s", "-", "+")
    s.check()


def test_xadd_zero_id_is_refused_before_the_key_is_looked_up(redis):
    """Edge case 4; XADD-6."""
    s = redis.scenario()
    s.call(1, "SET", "str", "x")
    for key, extra in [("s", []), ("str", []), ("nokey", ["NOMKSTREAM"]), ("s", ["MAXLEN", "5"])]:
        s.call(1, "XADD", key, *extra, "0", "f", "v")
        s.call(1, "XADD", key, *extra, "0-0", "f", "v")
        s.call(1, "XADD", key, *extra, "00-00", "f", "v")
    s.call(1, "XADD", "str", "1-1", "f", "v")  # then WRONGTYPE
    s.call(1, "XADD", "str", "0-*", "f", "v")  # 0-* is not 0-0
    s.call(1, "EXISTS", "s", "nokey")
    s.check()


def test_xadd_auto_sequence(redis):
    """Edge cases 5, 6; XADD-13, XADD-15."""
    s = redis.scenario()
    s.call(1, "XADD", "new", "0-*", "f", "v")
    s.call(1, "XADD", "new", "0-*", "f", "v")
    s.call(1, "XADD", "s", "5-3", "f", "v")
    s.call(1, "XADD", "s", "3-*", "f", "v")
    s.call(1, "XADD", "s", "5-*", "f", "v")
    s.call(1, "XADD", "s", "7-*", "f", "v")
    s.call(1, "XADD", "s", "7-*", "f", "v")
    s.call(1, "XADD", "s", "5-9", "f", "v")
    s.call(1, "XADD", "s", "7-2", "f", "v")
    s.call(1, "XADD", "s", "7", "f", "v")
    s.call(1, "XADD", "s", "8", "f", "v")
    s.call(1, "XDEL", "s", "8-0")
    s.call(1, "XADD", "s", "8-0", "f", "v")  # XADD-15: against last-generated-id, not the top entry
    s.call(1, "XADD", "s", "8-*", "f", "v")
    s.call(1, "XRANGE", "s", "-", "+")
    s.check()


def test_xadd_auto_id_behind_the_clock_takes_the_successor(redis):
    """XADD-11: a last ID ahead of the clock gives last + 1, carrying into ms."""
    s = redis.scenario()
    s.call(1, "XADD", "s", f"{FUTURE}-5", "f", "v")
    s.call(1, "XADD", "s", "*", "f", "v")
    s.call(1, "XADD", "s", f"{FUTURE}-{U64}", "f", "v")
    s.call(1, "XADD", "s", "*", "f", "v")
    s.call(1, "XADD", "s", "NOMKSTREAM", "*", "f", "v")
    s.call(1, "XRANGE", "s", "-", "+")
    s.check()


def test_xadd_exhausted_stream(redis):
    """Edge case 8; XADD-9."""
    s = redis.scenario()
    s.call(1, "XADD", "s", MAX, "f", "v")
    s.call(1, "XADD", "s", "*", "f", "v")
    s.call(1, "XADD", "s", f"{U64}-*", "f", "v")
    s.call(1, "XADD", "s", "5-*", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "0", "*", "f", "v")
    s.call(1, "XADD", "s", "NOMKSTREAM", "*", "f", "v")
    s.call(1, "XADD", "s", "1-0", "f", "v")
    s.call(1, "XADD", "s", "0", "f", "v")  # XADD-6 comes first
    s.call(1, "XADD", "s", "bad", "f", "v")  # and parsing before that
    s.call(1, "XLEN", "s")
    s.call(1, "XRANGE", "s", "-", "+")
    s.check()


def test_xadd_exhausted_sequence_words_the_error_after_errno(redis):
    """Edge case 7; XADD-14: the reply depends on what last wrote errno."""
    s = redis.scenario()
    s.call(1, "XADD", "s", f"5-{U64}", "f", "v")  # a new stream: the tail seek leaves errno 0
    s.call(1, "XADD", "s", "5-*", "f", "v")  # too large
    s.call(1, "XADD", "s", "5-1", "f", "v")  # EDOM
    s.call(1, "XADD", "s", "5-*", "f", "v")  # equal or smaller
    s.call(1, "XLEN", "s")
    s.call(1, "XRANGE", "s", "6", "7")  # stops at nothing: runs off the tree
    s.call(1, "XADD", "s", "5-*", "f", "v")  # too large
    s.call(1, "XADD", "s", "5-1", "f", "v")
    s.call(1, "XRANGE", "s", "0", "1")  # stops at 5-max, beyond the range: errno stays
    s.call(1, "XRANGE", "s", "-", "+", "COUNT", "1")  # COUNT reached: errno stays
    s.call(1, "XADD", "s", "5-*", "f", "v")  # equal or smaller
    s.call(1, "XREVRANGE", "s", "+", "6")  # stops at 5-max, below the range: errno stays
    s.call(1, "XADD", "s", "5-*", "f", "v")  # equal or smaller
    s.call(1, "XREVRANGE", "s", "4", "0")  # runs off the tree
    s.call(1, "XADD", "s", "5-*", "f", "v")  # too large
    s.call(1, "XADD", "s", "5-1", "f", "v")
    s.call(1, "XADD", "s", " 5-*", "f", "v")  # strtoull reset errno: too large
    s.call(1, "XADD", "s", "5-1", "f", "v")
    s.call(1, "XADD", "s", "MINID", "+1", "5-*", "f", "v")  # MINID parsed through strtoull
    s.call(1, "XADD", "s", "5-1", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "5", "5-*", "f", "v")
    s.call(1, "XADD", "s", "5-1", "f", "v")
    s.call(2, "PING")  # a new connection: accept() leaves EAGAIN
    s.call(1, "XADD", "s", "5-*", "f", "v")
    s.call(1, "XADD", "s", "5-1", "f", "v")
    s.call(1, "XDEL", "s", "9-9")  # the lookup runs off the tree
    s.call(1, "XADD", "s", "5-*", "f", "v")
    s.call(1, "XADD", "s", "5-1", "f", "v")
    s.call(1, "XDEL", "s", "1-1")  # stops at 5-max
    s.call(1, "XADD", "s", "5-*", "f", "v")
    s.check()


def test_xadd_option_parsing(redis):
    """Edge cases 11-13; XADD-1 .. XADD-5, XTRIM-2 .. XTRIM-7."""
    s = redis.scenario()
    s.call(1, "XADD", "s", "LIMIT", "0", "*", "f", "v")
    s.call(1, "XADD", "s", "LIMIT", "10", "*", "f", "v")
    s.call(1, "XADD", "s", "LIMIT", "-1", "*", "f", "v")
    s.call(1, "XADD", "s", "LIMIT", "x", "*", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "1", "MAXLEN", "2", "*", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "1", "MINID", "2", "*", "f", "v")
    s.call(1, "XADD", "s", "MINID", "1", "MAXLEN", "x", "*", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "-1", "*", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "1.5", "*", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "=", "x", "*", "f", "v")
    s.call(1, "XADD", "s", "MINID", "-", "*", "f", "v")
    s.call(1, "XADD", "s", "MINID", "~", "bad", "*", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "5", "LIMIT", "5", "*", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "=", "5", "LIMIT", "5", "*", "f", "v")
    s.call(1, "XADD", "s", "LIMIT", "5", "MAXLEN", "~", "5", "1-1", "f", "v")
    s.call(1, "XADD", "s", "maxlen", "~", "5", "limit", "0", "nomkstream", "NoMkStream", "2-1", "f", "v")
    s.call(1, "XADD", "a", f"{FUTURE}-0", "f", "v")  # so that * below does not show the clock
    s.call(1, "XADD", "a", "*", "MAXLEN", "1")  # edge case 13: * ends the options
    s.call(1, "XADD", "a", "*\x00x", "f", "v")  # the fast path compares a C string
    s.call(1, "XRANGE", "a", "-", "+")
    s.call(1, "XADD", "s", "MAXLEN", "5")  # MAXLEN with one argument after it: taken as the ID
    s.call(1, "XADD", "s", "MAXLEN", "5", "f")
    s.call(1, "XADD", "s", "MAXLEN", "~", "f", "v")
    s.call(1, "XADD", "s", "NOMKSTREAM", "NOMKSTREAM", "NOMKSTREAM")
    s.call(1, "XADD", "s", "9-1", "f")
    s.call(1, "XADD", "s", "9-1", "f", "v", "g")
    s.call(1, "XADD", "s", "MAXLEN", "9", "MAXLEN")
    s.call(1, "XADD", "s", "=", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN\x00junk", "100", "9-2", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "~\x00", "100", "9-3", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "100\x00", "9-4", "f", "v")
    s.call(1, "XADD", "s", "MINID", "1-1", "MINID", "9-9", "9-5", "f", "v")
    s.call(1, "XADD", "s", "NOMKSTREAM", "9-6", "f", "v")
    s.call(1, "XRANGE", "s", "-", "+")
    s.check()


def test_xadd_keeps_duplicate_fields_and_nomkstream(redis):
    """Edge cases 14, 15; XADD-7, XADD-17, RESP2 and RESP3."""
    s = redis.scenario()
    s.call(1, "XADD", "s", "2-0", "b", "2", "b", "3")
    s.call(1, "XADD", "s", "3-0", "", "", "b", "3")
    s.call(1, "XRANGE", "s", "-", "+")
    s.call(1, "XADD", "nokey", "NOMKSTREAM", "*", "f", "v")
    s.call(1, "XADD", "nokey", "NOMKSTREAM", "0-1", "f", "v")
    s.call(1, "EXISTS", "nokey")
    s.call(1, "SET", "str", "x")
    s.call(1, "XADD", "str", "NOMKSTREAM", "*", "f", "v")
    _hello3(s, 2)
    s.call(2, "XADD", "nokey", "NOMKSTREAM", "*", "f", "v")
    s.call(2, "XADD", "s", "NOMKSTREAM", "4-0", "f", "v")
    s.call(2, "XRANGE", "s", "-", "+")
    s.call(2, "XREVRANGE", "s", "+", "-", "COUNT", "2")
    s.call(2, "XLEN", "s")
    s.check()


def test_xadd_trims_the_new_entry_immediately(redis):
    """Edge cases 9, 10; XADD-8, XADD-18."""
    s = redis.scenario()
    s.call(1, "XADD", "s", "MAXLEN", "=", "0", "1-0", "f", "v")
    s.call(1, "EXISTS", "s")
    s.call(1, "XLEN", "s")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XADD", "t", "MINID", "~", "1000", "12-0", "f", "v")
    s.call(1, "XLEN", "t")
    s.call(1, "XINFO", "STREAM", "t")
    s.call(1, "XADD", "t", "MINID", "13", "13-0", "f", "v")
    s.call(1, "XADD", "t", "MINID", "14", "14-0", "f", "v")
    s.call(1, "XINFO", "STREAM", "t")
    s.call(1, "XADD", "u", "MAXLEN", "1", "1-1", "a", "1")
    s.call(1, "XADD", "u", "MAXLEN", "1", "1-2", "a", "2")
    s.call(1, "XRANGE", "u", "-", "+")
    s.call(1, "XINFO", "STREAM", "u")
    s.check()


def test_approximate_trimming_removes_whole_nodes(redis):
    """Edge case 43; XTRIM-7, XTRIM-9."""
    s = redis.scenario(config={"stream-node-max-entries": "4"})
    for i in range(1, 21):
        s.call(1, "XADD", "s", f"{i}-0", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "~", "5", "LIMIT", "4", "21-0", "f", "v")
    s.call(1, "XLEN", "s")
    s.call(1, "XADD", "s", "MAXLEN", "~", "5", "22-0", "f", "v")
    s.call(1, "XLEN", "s")
    s.call(1, "XRANGE", "s", "-", "+", "COUNT", "1")
    s.call(1, "XTRIM", "s", "MAXLEN", "~", "1")
    s.call(1, "XTRIM", "s", "MINID", "~", "21")
    s.call(1, "XTRIM", "s", "MINID", "~", "23")
    s.call(1, "XINFO", "STREAM", "s")
    for i in range(1, 13):
        s.call(1, "XADD", "t", f"{i}-0", "f", "v")
    s.call(1, "XTRIM", "t", "MAXLEN", "~", "0", "LIMIT", "3")
    s.call(1, "XTRIM", "t", "MAXLEN", "~", "0", "LIMIT", "0")
    s.call(1, "XINFO", "STREAM", "t")
    s.check()


def bulk_trim(redis, config: dict[str, str], entries: int, dialect: Dialect = REDIS_70) -> Int:  # type: ignore[no-untyped-def]
    """Load ``entries`` entries (pipelined), trim with ``MAXLEN ~ 0``, compare real and model replies.

    The load is too long for a trace; it runs on both sides outside the
    checker. Returns the length the trim left.
    """
    conn = redis.connection()
    model = Server(dialect, clock=ManualClock(0), config=config)
    trim = [[b"XTRIM", b"s", b"MAXLEN", b"~", b"0"], [b"XLEN", b"s"]]
    try:
        for k, v in config.items():
            conn.call([b"CONFIG", b"SET", k.encode(), v.encode()])
        for first in range(1, entries + 1, 10_000):
            batch = [[b"XADD", b"s", b"%d-0" % i, b"f", b"v"] for i in range(first, min(first + 10_000, entries + 1))]
            for argv in batch:
                conn.send(argv)
                model.execute(1, argv)
            for _ in batch:
                conn.recv()
        real = [conn.call(argv) for argv in trim]
    finally:
        conn.close()
    assert [model.execute(1, argv).reply for argv in trim] == real
    left = real[1]
    assert isinstance(left, Int)
    return left


@pytest.mark.parametrize("node_entries", ["0", "4611686018427387904", "9223372036854775807"])
def test_approximate_trimming_default_limit_when_not_positive(redis, node_entries: str):
    """XTRIM-7: when 100 x stream-node-max-entries is 0 or wraps to 0 or below, ``~`` removes at most 10000 entries."""
    config = {"stream-node-max-entries": node_entries, "stream-node-max-bytes": "100"}
    assert bulk_trim(redis, config, 12_000) == Int(2_000)  # the limit bites


@pytest.mark.slow
def test_approximate_trimming_default_limit_is_capped(redis):
    """XTRIM-7: 100 x stream-node-max-entries is capped at 1000000 entries (about 70 s)."""
    assert bulk_trim(redis, {"stream-node-max-entries": "20000"}, 1_100_000) != Int(0)


# stream-node-max-entries values whose 100-fold product wraps (XTRIM-7) to 4, -4, -100 and 0
NODE_ENTRIES_LIMIT_4 = "1106804644422573097"
NODE_ENTRIES_LIMIT_MINUS_4 = "3504881374004814807"
NODE_ENTRIES_LIMIT_MINUS_100 = "9223372036854775807"
NODE_ENTRIES_LIMIT_0 = "4611686018427387904"


def approx_trims_with_wrapped_limits(server) -> list[object]:  # type: ignore[no-untyped-def]
    """XTRIM and XADD with ``~`` and no LIMIT under stream-node-max-entries whose 100-fold overflows.

    Each key holds six one-entry nodes; the trims' replies and the lengths
    they leave are returned in order (``check()`` has passed).
    """
    s = server.scenario(config={"stream-node-max-entries": "1"})
    for key in "abcdefg":
        for i in range(1, 7):
            s.call(1, "XADD", key, f"{i}-0", "f", "v")
    seen: list[object] = []

    def trim(node_entries: str, key: str, *argv: str) -> None:
        s.call(1, "CONFIG", "SET", "stream-node-max-entries", node_entries)
        seen.append(s.call(1, *argv))
        seen.append(s.call(1, "XLEN", key))

    trim(NODE_ENTRIES_LIMIT_4, "a", "XTRIM", "a", "MAXLEN", "~", "0")
    trim(NODE_ENTRIES_LIMIT_4, "b", "XADD", "b", "MINID", "~", "100", "100-0", "f", "v")
    trim(NODE_ENTRIES_LIMIT_MINUS_4, "c", "XTRIM", "c", "MINID", "~", "100")
    trim(NODE_ENTRIES_LIMIT_MINUS_4, "d", "XADD", "d", "MAXLEN", "~", "0", "7-0", "f", "v")
    trim(NODE_ENTRIES_LIMIT_MINUS_100, "e", "XTRIM", "e", "MINID", "~", "6-1")
    trim(NODE_ENTRIES_LIMIT_0, "f", "XTRIM", "f", "MAXLEN", "~", "0")
    trim("0", "g", "XTRIM", "g", "MAXLEN", "~", "2")
    s.call(1, "XINFO", "STREAM", "d")
    s.check()
    return seen


BOUNDED_WRAPPED_TRIMS = [
    Int(4), Int(2),                 # limit 4
    Bulk(b"100-0"), Int(3),         # limit 4: 1-0 .. 4-0 go, 100-0 joined the node of 6-0
    Int(6), Int(0),                 # -4 becomes 10000
    Bulk(b"7-0"), Int(0),
    Int(6), Int(0),                 # -100 becomes 10000
    Int(6), Int(0),                 # 0 becomes 10000
    Int(4), Int(2),
]
"""What ``approx_trims_with_wrapped_limits`` sees on 7.0.15 (and Valkey 9.1.2)."""


def test_approximate_trimming_limit_wraps_then_is_bounded(redis):
    """XTRIM-7: the 100-fold product wraps to 64 bits; 0 and below become 10000."""
    assert approx_trims_with_wrapped_limits(redis) == BOUNDED_WRAPPED_TRIMS


def test_exact_trimming(redis):
    """XTRIM-9, XTRIM-10: exact trims leave tombstones; first-entry follows."""
    s = redis.scenario(config={"stream-node-max-entries": "3"})
    for i in range(1, 11):
        s.call(1, "XADD", "s", f"{i}-0", "f", "v")
    s.call(1, "XTRIM", "s", "MAXLEN", "8")
    s.call(1, "XTRIM", "s", "MAXLEN", "=", "8")
    s.call(1, "XTRIM", "s", "MINID", "5")
    s.call(1, "XTRIM", "s", "MINID", "=", "5-1")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XDEL", "s", "10-0")
    s.call(1, "XTRIM", "s", "MINID", "10-0")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XTRIM", "s", "MINID", "~", "11")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XTRIM", "s", "MAXLEN", "0")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XADD", "s", "20-0", "f", "v")
    s.call(1, "XINFO", "STREAM", "s")
    s.check()


def test_xtrim_argument_errors(redis):
    """Edge case 42; XTRIM-1 .. XTRIM-8."""
    s = redis.scenario()
    s.call(1, "SET", "str", "x")
    s.call(1, "XTRIM", "s", "LIMIT", "0")
    s.call(1, "XTRIM", "s", "LIMIT", "5")
    s.call(1, "XTRIM", "nokey", "MAXLEN", "bad")
    s.call(1, "XTRIM", "nokey", "MAXLEN", "1")
    s.call(1, "XTRIM", "str", "MAXLEN", "1")
    s.call(1, "XTRIM", "str", "MAXLEN", "bad")
    s.call(1, "XTRIM", "s", "MAXLEN", "1", "junk")
    s.call(1, "XTRIM", "s", "MAXLEN", "~")
    s.call(1, "XTRIM", "s", "MAXLEN", "~", "1", "LIMIT")
    s.call(1, "XTRIM", "s", "NOMKSTREAM", "MAXLEN", "1")
    s.call(1, "XTRIM", "s", "*", "MAXLEN", "1")
    s.call(1, "XTRIM", "s", "MAXLEN", "1", "LIMIT", "5")
    s.call(1, "XTRIM", "s", "MINID", "1", "MAXLEN", "1")
    s.call(1, "XTRIM", "s", "MINID", "-")
    s.call(1, "XTRIM", "s", "MINID", "=", "1-x")
    s.call(1, "XTRIM", "s", "MAXLEN", "-3")
    s.call(1, "XTRIM", "s", "MAXLEN", "~", "1", "LIMIT", "-1")
    s.call(1, "XTRIM", "s")
    s.call(1, "XTRIM", "s", "MAXLEN")
    s.call(1, "XADD", "s", "1-1", "f", "v")
    s.call(1, "XTRIM", "s", "maxlen", "~", "0", "limit", "1")
    s.call(1, "XTRIM", "s", "MINID", "2")
    s.call(1, "XTRIM", "s", "MINID", "2")
    _hello3(s, 2)
    s.call(2, "XTRIM", "s", "MAXLEN", "0")
    s.call(2, "XTRIM", "nokey", "MAXLEN", "0")
    s.check()


# -- XLEN ----------------------------------------------------------------------------------
def test_xlen(redis):
    """XLEN-1."""
    s = redis.scenario()
    s.call(1, "XLEN", "nokey")
    s.call(1, "SET", "str", "x")
    s.call(1, "XLEN", "str")
    s.call(1, "XADD", "s", "1-1", "f", "v")
    s.call(1, "XADD", "s", "1-2", "f", "v")
    s.call(1, "XLEN", "s")
    s.call(1, "XDEL", "s", "1-1")
    s.call(1, "XLEN", "s")
    _hello3(s, 2)
    s.call(2, "XLEN", "s")
    s.check()


# -- XRANGE / XREVRANGE ----------------------------------------------------------------------
def _ten(s) -> None:  # type: ignore[no-untyped-def]
    for ms in (1, 2, 3):
        for seq in (0, 1, 2):
            s.call(1, "XADD", "s", f"{ms}-{seq}", "f", f"{ms}.{seq}")
    s.call(1, "XADD", "s", f"{U64}-{U64}", "last", "x")


def test_xrange_count_and_null_array(redis):
    """Edge cases 16, 19; XRANGE-3 .. XRANGE-5."""
    s = redis.scenario()
    _ten(s)
    for c in (1, 2):
        if c == 2:
            _hello3(s, 2)
        s.call(c, "XRANGE", "s", "-", "+", "COUNT", "0")
        s.call(c, "XRANGE", "s", "-", "+", "COUNT", "-5")
        s.call(c, "XRANGE", "nokey", "-", "+", "COUNT", "0")
        s.call(c, "XREVRANGE", "s", "+", "-", "COUNT", "0")
        s.call(c, "XREVRANGE", "nokey", "+", "-")
        s.call(c, "XRANGE", "s", "-", "+", "COUNT", "1", "COUNT", "2")
        s.call(c, "XRANGE", "s", "-", "+", "count", "3")
        s.call(c, "XRANGE", "s", "-", "+", "COUNT")
        s.call(c, "XRANGE", "s", "-", "+", "COUNT", "x")
        s.call(c, "XRANGE", "s", "-", "+", "COUNT", "2", "LIMIT", "1")
        s.call(c, "XRANGE", "s", "-", "+", "COUNT", "1", "COUNT")
        s.call(c, "XREVRANGE", "s", "+", "-", "COUNT", "4")
        s.call(c, "XRANGE", "s", "3-1", "2-0")
        s.call(c, "XREVRANGE", "s", "2-0", "3-1")
    s.check()


def test_xrange_bounds_and_exclusive_ranges(redis):
    """Edge cases 17, 18; XRANGE-1, XRANGE-2, XRANGE-6, ID-8."""
    s = redis.scenario()
    s.call(1, "SET", "str", "x")
    _ten(s)
    for start, end in [("(", "+"), ("(-", "+"), ("-", "(+"), (f"({MAX}", "+"), ("-", "(0-0"), ("-", "(0"),
                       ("(0-0", "(3"), ("(1", "(2-1"), ("2", "2"), ("(2-0", "3"), ("(2", "+"), ("1-1", "(1-2"),
                       ("-", f"({MAX}"), (f"({U64}", "+"), ("(1-1", "(1-2"), ("((1", "+"), ("(\x00", "+"),
                       (" 2", "+3"), ("-", "-"), ("+", "+"), ("+", "-"), (f"(2-{U64}", "3-0")]:
        s.call(1, "XRANGE", "s", start, end)
        s.call(1, "XREVRANGE", "s", end, start)
    s.call(1, "XRANGE", "str", "bad", "+")
    s.call(1, "XRANGE", "str", "-", "bad")
    s.call(1, "XRANGE", "str", "-", "+", "COUNT", "bad")
    s.call(1, "XRANGE", "str", "-", "+")
    s.call(1, "XRANGE", "s", "bad", "(0")
    s.call(1, "XRANGE", "s", f"({MAX}", "bad")
    s.call(1, "XREVRANGE", "s", "bad", f"({MAX}")
    s.call(1, "XREVRANGE", "s", "(0", "bad")
    s.check()


def test_xrange_skips_deleted_entries(redis):
    """XRANGE-4: tombstones never show, in either direction."""
    s = redis.scenario(config={"stream-node-max-entries": "3"})
    _ten(s)
    s.call(1, "XDEL", "s", "1-1", "2-0", "2-1", "2-2", "3-2")
    s.call(1, "XRANGE", "s", "-", "+")
    s.call(1, "XREVRANGE", "s", "+", "-")
    s.call(1, "XRANGE", "s", "(1-0", "+", "COUNT", "2")
    s.call(1, "XREVRANGE", "s", "(3-1", "-", "COUNT", "2")
    s.check()


# -- XDEL ---------------------------------------------------------------------------------------
def test_xdel(redis):
    """Edge case 41; XDEL-1 .. XDEL-4."""
    s = redis.scenario(config={"stream-node-max-entries": "2"})
    s.call(1, "XDEL", "nokey", "bad")
    s.call(1, "SET", "str", "x")
    s.call(1, "XDEL", "str", "bad")
    for i in range(1, 6):
        s.call(1, "XADD", "s", f"{i}-0", "f", "v")
    s.call(1, "XDEL", "s", "1-0", "bad")
    s.call(1, "XDEL", "s", "1-0", "-")
    s.call(1, "XDEL", "s", "1-0", "1-0")
    s.call(1, "XDEL", "s", "1", "9-9")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XDEL", "s", "3-0", "2-0")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XDEL", "s", "5-0")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XDEL", "s", "4-0")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "EXISTS", "s")
    s.call(1, "XADD", "s", "5-0", "f", "v")
    s.call(1, "XADD", "s", "6-0", "f", "v")
    _hello3(s, 2)
    s.call(2, "XDEL", "s", "6-0", "7-0")
    s.call(2, "XINFO", "STREAM", "s")
    s.check()


# -- XSETID -------------------------------------------------------------------------------------
def test_xsetid_errors_in_order(redis):
    """Edge case 59; XSETID-1 .. XSETID-4."""
    s = redis.scenario()
    s.call(1, "SET", "str", "x")
    s.call(1, "XSETID", "nokey", "1-0")
    s.call(1, "XSETID", "s", "-")
    s.call(1, "XSETID", "nokey", "bad")
    s.call(1, "XSETID", "str", "1-0")
    s.call(1, "XSETID", "str", "1-0", "ENTRIESADDED")
    s.call(1, "XSETID", "nokey", "1-0", "ENTRIESADDED", "x")
    s.call(1, "XSETID", "nokey", "1-0", "ENTRIESADDED", "-1")
    s.call(1, "XSETID", "nokey", "1-0", "MAXDELETEDID", "bad")
    s.call(1, "XSETID", "nokey", "1-0", "MAXDELETEDID", "2-0")
    s.call(1, "XSETID", "nokey", "1-0", "MAXDELETEDID", "+")
    s.call(1, "XSETID", "nokey", "1-0", "FOO", "1")
    s.call(1, "XSETID", "nokey", "1-0", "MAXDELETEDID", "0-1", "ENTRIESADDED", "5")
    s.call(1, "XADD", "s", "5-0", "f", "v")
    s.call(1, "XSETID", "s", "1-0")
    s.call(1, "XSETID", "s", "4")
    s.call(1, "XSETID", "s", "5-0", "ENTRIESADDED", "0")
    s.call(1, "XSETID", "s", "5-0", "ENTRIESADDED", "1")
    s.call(1, "XSETID", "s", "5-0", "entriesadded", "3", "maxdeletedid", "5-0")
    s.call(1, "XINFO", "STREAM", "s")
    s.check()


def test_xsetid_lowers_last_id_and_allows_reuse(redis):
    """Edge cases 60, 61; XSETID-5."""
    s = redis.scenario()
    s.call(1, "XADD", "s", "1-0", "f", "v")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.call(1, "XDEL", "s", "2-0")
    s.call(1, "XSETID", "s", "1-0")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XADD", "s", "2-0", "f", "again")
    s.call(1, "XSETID", "s", "2-0", "ENTRIESADDED", "1")
    s.call(1, "XSETID", "s", "2-0", "ENTRIESADDED", "2", "MAXDELETEDID", "0-0")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XSETID", "s", "3-0", "MAXDELETEDID", "0-5")
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XDEL", "s", "1-0", "2-0")
    s.call(1, "XSETID", "s", "0-1")
    s.call(1, "XADD", "s", "0-*", "f", "v")
    s.call(1, "XINFO", "STREAM", "s")
    _hello3(s, 2)
    s.call(2, "XSETID", "s", "7-7", "MAXDELETEDID", "7-7", "MAXDELETEDID", "0-1")
    s.call(2, "XINFO", "STREAM", "s")
    s.check()


def test_watch_sees_xadd_xdel_xtrim_but_not_xsetid(redis):
    """XADD-17, XDEL-4, XTRIM-12, XSETID-5: which writes touch a watched key."""
    s = redis.scenario()
    s.call(2, "XADD", "s", "1-1", "f", "v")
    for write in [("XSETID", "s", "5-0"), ("XADD", "s", "6-0", "f", "v"), ("XDEL", "s", "9-9"),
                  ("XDEL", "s", "1-1"), ("XTRIM", "s", "MAXLEN", "5"), ("XTRIM", "s", "MAXLEN", "0"),
                  ("XADD", "s", "MAXLEN", "0", "7-0", "f", "v"), ("XADD", "s", "7-0", "f", "v"),
                  ("XADD", "n", "NOMKSTREAM", "*", "f", "v"), ("XSETID", "s", "0-1")]:
        s.call(1, "WATCH", write[1])
        s.call(2, *write)
        s.call(1, "MULTI")
        s.call(1, "PING")
        s.call(1, "EXEC")
    s.check()


# -- blocked readers ------------------------------------------------------------------------------
def test_xadd_serves_blocked_readers(redis):
    """XADD-20: XADD signals the key; a trimmed-away entry still wakes the reader."""
    s = redis.scenario()
    s.call(1, "XADD", "s", "1-0", "f", "v")
    s.send(2, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    assert s.is_waiting(2)
    s.send(3, "XREAD", "BLOCK", "0", "STREAMS", "nokey", "$")
    assert s.is_waiting(3)
    s.call(1, "XADD", "nokey", "NOMKSTREAM", "*", "f", "v")
    assert s.is_waiting(3)
    s.call(1, "XADD", "s", "MAXLEN", "0", "2-0", "f", "v")
    s.recv(2)
    s.call(1, "XADD", "nokey", "5-0", "f", "v")
    s.recv(3)
    s.check()


# -- propagation ---------------------------------------------------------------------------------
def test_xadd_propagation(redis):
    """Edge cases 15, 71; XADD-19, XTRIM-11."""
    assert_propagation_matches(redis, [
        (1, ["XADD", "s2", "5-*", "f", "v"]),
        (1, ["XADD", "s2", "7", "f", "v"]),
        (1, ["xadd", "s2", "7-*", "f", "v"]),
        (1, ["XADD", "s2", " 8-1", "f", "v"]),
        (1, ["XADD", "nokey", "NOMKSTREAM", "*", "f", "v"]),
        (1, ["XADD", "s2", "1-1", "f", "v"]),
        (1, ["XADD", "s2", f"{FUTURE}-1", "f", "v"]),
        (1, ["XADD", "s2", "*", "f", "v"]),
        (1, ["XADD", "s2", "MAXLEN", "~", "1000", "NOMKSTREAM", "*", "f", "v"]),
        (1, ["XADD", "s2", "MINID", "~", "0", "LIMIT", "7", f"{FUTURE}-*", "f", "v"]),
        (1, ["XADD", "s2", "MINID", "=", "0", f"{FUTURE}-9", "f", "v"]),
        (1, ["XADD", "s2", "MAXLEN", "3", f"{FUTURE}-10", "f", "v"]),
    ])


def test_trim_propagation_with_approximate_thresholds(redis):
    """Edge cases 10, 43, 71; XTRIM-11, XTRIM-12."""
    script = [(1, ["XADD", "s3", f"{i}", "f", f"v{i}"]) for i in range(1, 21)]
    script += [
        (1, ["XADD", "s3", "MAXLEN", "~", "5", "LIMIT", "4", "21", "f", "v21"]),
        (1, ["XADD", "s3", "MAXLEN", "~", "5", "22", "f", "v22"]),
        (1, ["XTRIM", "s3", "MAXLEN", "~", "2"]),
        (1, ["XTRIM", "s3", "MAXLEN", "=", "100"]),
        (1, ["XTRIM", "s3", "MAXLEN", "~", "100"]),
        (1, ["XADD", "s3", "MINID", "=", "3", "23", "f", "v23"]),
        (1, ["XDEL", "s3", "22-0"]),
        (1, ["XTRIM", "s3", "MINID", "~", "23"]),
        (1, ["XTRIM", "s3", "MINID", "22"]),
        (1, ["XTRIM", "s3", "MINID", "~", "100"]),
        (1, ["XADD", "t1", "MINID", "~", "1000", "12-0", "f", "v"]),
        (1, ["XADD", "t2", "MAXLEN", "~", "0", "12-0", "f", "v"]),
        (1, ["XTRIM", "t2", "MAXLEN", "~", "0"]),
        (1, ["XTRIM", "nokey", "MAXLEN", "0"]),
    ]
    script += [(1, ["XADD", "s4", f"{i}", "f", "v"]) for i in range(1, 9)]
    script += [
        (1, ["XDEL", "s4", "5"]),
        (1, ["XTRIM", "s4", "MINID", "~", "6"]),  # the first node left starts with the tombstone 5-0
    ]
    assert_propagation_matches(redis, script, config={"stream-node-max-entries": "4"})


def test_xdel_xsetid_propagation(redis):
    """XDEL-4, XSETID-6: verbatim when something changed; nothing otherwise."""
    assert_propagation_matches(redis, [
        (1, ["XADD", "s", "1-1", "f", "v"]),
        (1, ["XADD", "s", "2-1", "f", "v"]),
        (1, ["XDEL", "s", "9-9"]),
        (1, ["XDEL", "s", "1", "1-1", "1-1"]),
        (1, ["XDEL", "nokey", "1-1"]),
        (1, ["XDEL", "s", "bad"]),
        (1, ["xsetid", "s", "3", "ENTRIESADDED", "7"]),
        (1, ["XSETID", "s", "1"]),
        (1, ["XSETID", "nokey", "1"]),
        (1, ["XLEN", "s"]),
        (1, ["XRANGE", "s", "-", "+"]),
        (1, ["MULTI"]),
        (1, ["XADD", "s", "4-*", "f", "v"]),
        (1, ["XADD", "s", "MAXLEN", "~", "1", "5-*", "f", "v"]),
        (1, ["XTRIM", "s", "MAXLEN", "1"]),
        (1, ["EXEC"]),
    ])


# -- model-only checks ----------------------------------------------------------------------------
def test_model_auto_id_reads_the_clock_once_per_xadd():
    """XADD-11: ``*`` takes the clock's millisecond when it is past the top, sequence 0."""
    clock = ManualClock(5000)
    server = Server(clock=clock)
    assert server.execute(1, [b"XADD", b"s", b"*", b"f", b"v"]).reply == Bulk(b"5000-0")
    assert server.execute(1, [b"XADD", b"s", b"*", b"f", b"v"]).reply == Bulk(b"5000-1")
    clock.set(4000)  # a clock that went back keeps the top's millisecond
    assert server.execute(1, [b"XADD", b"s", b"*", b"f", b"v"]).reply == Bulk(b"5000-2")
    clock.set(6000)
    out = server.execute(1, [b"XADD", b"s", b"MAXLEN", b"~", b"9", b"*", b"f", b"v"])
    assert out.reply == Bulk(b"6000-0")
    assert out.propagated[-1] == [b"XADD", b"s", b"MAXLEN", b"=", b"4", b"6000-0", b"f", b"v"]


def test_model_replies_are_typed_per_protocol():
    """XADD-7, XRANGE-5: null bulk versus null array, RESP2 versus RESP3."""
    server = Server(clock=ManualClock(1))
    server.execute(1, [b"XADD", b"s", b"1-1", b"f", b"v"])
    assert server.execute(1, [b"XADD", b"n", b"NOMKSTREAM", b"*", b"f", b"v"]).reply == NullBulk()
    assert server.execute(1, [b"XRANGE", b"s", b"-", b"+", b"COUNT", b"0"]).reply == NullArray()
    assert server.execute(1, [b"XRANGE", b"n", b"-", b"+", b"COUNT", b"0"]).reply == Array(())
    assert server.execute(1, [b"XSETID", b"n", b"1"]).reply == Error("ERR no such key")
