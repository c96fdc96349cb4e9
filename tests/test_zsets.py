"""Differential tests of the sorted-set commands (spec/rules/zsets.md).

Each script runs on every dialect's real server (its trace checked on the model in
that dialect) and on the reference server in the same dialect, in RESP2 and RESP3
(the helpers of ``tests/test_lists.py``); the propagation tests compare what the
model propagates with what a real 7.0.15 replica receives.
"""

from __future__ import annotations

import math

import pytest

from tests.test_keyspace_notifications import record
from tests.test_lists import ALL_DIALECTS, differential, lists_real_servers, lists_reference_servers
from tests.test_propagation import assert_propagation_matches
from tests.test_pubsub import shape
from xspec.models import Server
from xspec.models.zsets import AnyOrderPairs
from xspec.spec.doubles import packed_score_text, range_bound, reply_text, shortest, string2d, strtod
from xspec.spec.resp import Array, Bulk, Simple
from xspec.traces.check.checker import check_trace
from xspec.traces.record.client import RespConnection
from xspec.traces.scenarios.registry import all_scenarios

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers", "lists_reference_servers"]


def c(*args: object) -> tuple[object, ...]:
    return ("call", 1, *args)


ADD_AND_READ = [
    # ZSET-2, ZSET-3, ZSET-4, ZSET-6: options, their conflicts, the replies
    c("ZADD", "z", "1", "a", "2", "b", "3", "c"), c("ZADD", "z", "NX", "10", "a", "4", "d"),
    c("ZADD", "z", "XX", "CH", "10", "a", "5", "e"), c("ZADD", "z", "GT", "CH", "1", "a", "20", "b"),
    c("ZADD", "z", "lt", "ch", "1", "a", "30", "b"), c("ZADD", "z", "INCR", "2.5", "a"),
    c("ZADD", "z", "NX", "INCR", "1", "a"), c("ZADD", "z", "XX", "INCR", "1", "nomember"),
    c("ZADD", "z", "GT", "INCR", "-1", "a"), c("ZADD", "z", "NX", "XX", "1", "a"),
    c("ZADD", "z", "NX", "GT", "1", "a"), c("ZADD", "z", "GT", "LT", "1", "a"),
    c("ZADD", "z", "INCR", "1", "a", "2", "b"), c("ZADD", "z", "1"), c("ZADD", "z", "1", "a", "2"),
    c("ZADD", "z", "CH"), c("ZADD", "z", "x", "a"), c("ZADD", "z", "1", "a", "nan", "b"),
    c("ZADD", "nokey", "XX", "1", "a"), c("EXISTS", "nokey"), c("ZADD", "nokey", "XX", "INCR", "1", "a"),
    c("ZINCRBY", "z", "1.5", "b"), c("ZINCRBY", "z", "x", "b"), c("ZINCRBY", "z", "1", "new"),
    c("ZCARD", "z"), c("ZCARD", "nokey"), c("ZSCORE", "z", "a"), c("ZSCORE", "z", "zz"), c("ZSCORE", "nokey", "a"),
    c("ZMSCORE", "z", "a", "zz", "b"), c("ZMSCORE", "nokey", "a", "b"),
    c("ZRANK", "z", "a"), c("ZREVRANK", "z", "a"), c("ZRANK", "z", "zz"), c("ZRANK", "nokey", "a"),
    c("ZRANK", "z", "a", "WITHSCORE"), c("ZREVRANK", "z", "zz", "withscore"), c("ZRANK", "z", "a", "x"),
    c("ZRANK", "z", "a", "withscore", "x"),
    c("ZREM", "z", "a", "zz", "a"), c("ZREM", "nokey", "a"), c("ZRANGE", "z", "0", "-1", "WITHSCORES"),
    c("ZADD", "z", "INCR", "inf", "c"), c("ZADD", "z", "INCR", "-inf", "c"), c("ZSCORE", "z", "c"),
    c("ZREM", "z", "b", "c", "d", "e", "new", "zz"), c("EXISTS", "z"),
    # ZSET-1: WRONGTYPE everywhere
    c("SET", "str", "v"), c("ZADD", "str", "1", "a"), c("ZADD", "str", "x", "a"), c("ZSCORE", "str", "a"),
    c("ZCARD", "str"), c("ZRANGE", "str", "0", "1"), c("ZREM", "str", "a"), c("ZPOPMIN", "str"),
    c("ZADD", "t", "1", "x"), c("TYPE", "t"), c("GET", "t"), c("LPUSH", "t", "x"), c("SADD", "t", "x"),
]

DOUBLES = [
    # ZSET-DOUBLE-1..3, ZSET-ENC-3, ZSET-DIALECT-2: how scores read and print
    c("ZADD", "d", "1.1", "a", "1e20", "b", "-0.0", "c", "3", "d", "0.0001", "e", "1e-7", "f"),
    c("ZADD", "d", "123456789012345678", "g", "0x10", "h", "-inf", "i", "+inf", "j", "1e-310", "k"),
    c("ZADD", "d", "2.5e300", "l", ".5", "m", "5.", "n", "-1.5e-10", "o"),
    c("ZRANGE", "d", "0", "-1", "WITHSCORES"), c("ZSCORE", "d", "c"), c("ZINCRBY", "d", "0.1", "a"),
    c("ZSCAN", "d", "0"), c("ZADD", "d", " 1", "p"), c("ZADD", "d", "1e400", "p"), c("ZADD", "d", "1e-400", "p"),
    c("ZADD", "d", "", "p"), c("ZADD", "d", "1 ", "p"), c("ZADD", "d", "1_0", "p"), c("ZADD", "d", "NaN", "p"),
    c("ZADD", "d", "infinity", "p"), c("ZADD", "d", "0x1p-3", "q"), c("ZSCORE", "d", "p"), c("ZSCORE", "d", "q"),
    # a hash table keeps -0's sign
    c("ZADD", "big", "-0.0", "m" * 65, "1.1", "short"), c("ZRANGE", "big", "0", "-1", "WITHSCORES"),
    c("ZSCORE", "big", "m" * 65), c("ZSCAN", "big", "0", "MATCH", "m*"),
]

RANGES = [
    c("ZADD", "r", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"),
    c("ZADD", "lex", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e"),
    # ZSET-9, ZSET-10: ranks
    c("ZRANGE", "r", "0", "-1"), c("ZRANGE", "r", "1", "2", "WITHSCORES"), c("ZRANGE", "r", "-2", "100"),
    c("ZRANGE", "r", "3", "1"), c("ZRANGE", "r", "-100", "0"), c("ZRANGE", "r", "0", "-1", "REV", "WITHSCORES"),
    c("ZREVRANGE", "r", "0", "1", "WITHSCORES"), c("ZREVRANGE", "r", "0", "1", "REV"),
    c("ZRANGE", "r", "x", "1"), c("ZRANGE", "r", "0", "1", "LIMIT", "0", "1"), c("ZRANGE", "nokey", "0", "-1"),
    c("ZRANGE", "r", "0", "1", "BYSCORE", "BYLEX"), c("ZRANGE", "r", "0", "1", "junk"),
    # scores
    c("ZRANGE", "r", "(1", "4", "BYSCORE"), c("ZRANGE", "r", "4", "(1", "BYSCORE", "REV", "WITHSCORES"),
    c("ZRANGE", "r", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"), c("ZRANGE", "r", "-inf", "+inf", "BYSCORE",
                                                                     "LIMIT", "-1", "2"),
    c("ZRANGE", "r", "-inf", "+inf", "BYSCORE", "LIMIT", "2", "-5"), c("ZRANGE", "r", "x", "1", "BYSCORE"),
    c("ZRANGEBYSCORE", "r", "2", "4", "WITHSCORES", "LIMIT", "1", "1"), c("ZRANGEBYSCORE", "r", "", "("),
    c("ZRANGEBYSCORE", "r", " 2", "1e400"), c("ZRANGEBYSCORE", "r", "(2", "(2"), c("ZRANGEBYSCORE", "r", "3", "1"),
    c("ZREVRANGEBYSCORE", "r", "+inf", "-inf", "LIMIT", "0", "2"), c("ZRANGEBYSCORE", "r", "nan", "1"),
    c("ZRANGEBYSCORE", "r", "1", "2", "LIMIT", "0"), c("ZRANGEBYSCORE", "r", "1", "2", "LIMIT", "x", "1"),
    # lex
    c("ZRANGE", "lex", "[b", "(d", "BYLEX"), c("ZRANGE", "lex", "+", "-", "BYLEX", "REV", "LIMIT", "1", "2"),
    c("ZRANGEBYLEX", "lex", "-", "+"), c("ZRANGEBYLEX", "lex", "(a", "[c"), c("ZREVRANGEBYLEX", "lex", "[c", "-"),
    c("ZRANGEBYLEX", "lex", "a", "[c"), c("ZRANGEBYLEX", "lex", "[a", "++"), c("ZRANGE", "lex", "-", "+", "BYLEX",
                                                                               "WITHSCORES"),
    c("ZRANGEBYLEX", "lex", "[", "+"),
    # ZSET-12: counts
    c("ZCOUNT", "r", "(1", "3"), c("ZCOUNT", "r", "x", "3"), c("ZCOUNT", "nokey", "0", "1"),
    c("ZLEXCOUNT", "lex", "[b", "+"), c("ZLEXCOUNT", "lex", "b", "+"), c("ZLEXCOUNT", "nokey", "-", "+"),
    # ZSET-11: ZRANGESTORE
    c("ZRANGESTORE", "dst", "r", "0", "2"), c("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
    c("ZRANGESTORE", "dst", "r", "(2", "+inf", "BYSCORE", "LIMIT", "0", "1"), c("ZRANGE", "dst", "0", "-1"),
    c("ZRANGESTORE", "dst", "lex", "[b", "[c", "BYLEX", "REV"), c("ZRANGE", "dst", "0", "-1"),
    c("ZRANGESTORE", "dst", "r", "0", "1", "WITHSCORES"), c("ZRANGESTORE", "dst", "nokey", "0", "-1"),
    c("EXISTS", "dst"), c("SET", "str", "v"), c("ZRANGESTORE", "str", "r", "0", "0"), c("TYPE", "str"),
    c("ZRANGESTORE", "dst", "str", "0", "-1"),
    # ZSET-13: removals by range
    c("ZREMRANGEBYRANK", "r", "0", "0"), c("ZREMRANGEBYSCORE", "r", "(4", "+inf"), c("ZRANGE", "r", "0", "-1"),
    c("ZREMRANGEBYLEX", "lex", "[b", "(d"), c("ZRANGE", "lex", "0", "-1"), c("ZREMRANGEBYRANK", "r", "x", "1"),
    c("ZREMRANGEBYSCORE", "r", "x", "1"), c("ZREMRANGEBYLEX", "lex", "x", "+"), c("ZREMRANGEBYRANK", "r", "5", "1"),
    c("ZREMRANGEBYRANK", "r", "0", "-1"), c("EXISTS", "r"), c("ZREMRANGEBYSCORE", "nokey", "0", "1"),
]

SET_OPERATIONS = [
    c("ZADD", "a", "1", "x", "2", "y", "3", "z"), c("ZADD", "b", "10", "y", "20", "z", "30", "w"),
    c("SADD", "s", "x", "w", "v"), c("ZADD", "c", "inf", "x", "-inf", "y"),
    # ZSET-14
    c("ZUNIONSTORE", "u", "2", "a", "b"), c("ZRANGE", "u", "0", "-1", "WITHSCORES"),
    c("ZUNIONSTORE", "u", "3", "a", "b", "s", "WEIGHTS", "2", "0.5", "3", "AGGREGATE", "MAX"),
    c("ZRANGE", "u", "0", "-1", "WITHSCORES"), c("ZINTERSTORE", "i", "2", "a", "b", "AGGREGATE", "min"),
    c("ZRANGE", "i", "0", "-1", "WITHSCORES"), c("ZDIFFSTORE", "d", "2", "a", "b"), c("ZRANGE", "d", "0", "-1"),
    c("ZUNION", "2", "a", "c", "WITHSCORES"), c("ZINTER", "2", "a", "c", "WITHSCORES"),
    c("ZINTER", "2", "a", "c", "WEIGHTS", "0", "0", "WITHSCORES"), c("ZDIFF", "2", "a", "s", "WITHSCORES"),
    c("ZUNION", "2", "a", "nokey"), c("ZINTER", "2", "a", "nokey"), c("ZINTERSTORE", "i", "2", "a", "nokey"),
    c("EXISTS", "i"), c("ZUNION", "0", "a"), c("ZUNION", "x", "a"), c("ZUNION", "3", "a", "b"),
    c("ZUNION", "1", "a", "WEIGHTS", "x"), c("ZUNION", "1", "a", "WEIGHTS"), c("ZUNION", "1", "a", "AGGREGATE", "avg"),
    c("ZDIFF", "1", "a", "WEIGHTS", "1"), c("ZUNIONSTORE", "u", "1", "a", "WITHSCORES"),
    c("ZINTERCARD", "2", "a", "b"), c("ZINTERCARD", "2", "a", "b", "LIMIT", "1"),
    c("ZINTERCARD", "2", "a", "b", "LIMIT", "-1"), c("ZINTERCARD", "2", "a", "b", "WITHSCORES"),
    c("SET", "str", "v"), c("ZUNION", "2", "a", "str"), c("ZUNIONSTORE", "str", "1", "a"), c("TYPE", "str"),
    c("ZUNIONSTORE", "a", "2", "a", "a"), c("ZRANGE", "a", "0", "-1", "WITHSCORES"),
]

POPS = [
    c("ZADD", "p", "1", "a", "2", "b", "3", "c", "4", "d"),
    # ZSET-15, ZSET-DIALECT-1
    c("ZPOPMIN", "p"), c("ZPOPMAX", "p", "2"), c("ZPOPMIN", "p", "0"), c("ZPOPMIN", "p", "-1"),
    c("ZPOPMIN", "p", "x"), c("ZPOPMIN", "p", "1", "2"), c("ZPOPMIN", "nokey"), c("ZPOPMIN", "nokey", "0"),
    c("ZPOPMAX", "p", "10"), c("EXISTS", "p"),
    # ZSET-16 (7.0+)
    c("ZADD", "m1", "1", "a", "2", "b"), c("ZADD", "m2", "5", "x"),
    c("ZMPOP", "2", "nokey", "m1", "MIN"), c("ZMPOP", "2", "m1", "m2", "MAX", "COUNT", "10"),
    c("ZMPOP", "1", "nokey", "MIN"), c("ZMPOP", "0", "m2", "MIN"), c("ZMPOP", "x", "m2", "MIN"),
    c("ZMPOP", "5", "m2", "MIN"), c("ZMPOP", "1", "m2", "LEFT"), c("ZMPOP", "1", "m2", "MIN", "COUNT", "0"),
    c("ZMPOP", "1", "m2", "MIN", "COUNT"), c("ZMPOP", "1", "m2", "MIN", "COUNT", "1", "COUNT", "1"),
    c("SET", "str", "v"), c("ZMPOP", "2", "str", "m2", "min"), c("ZMPOP", "2", "m2", "str", "max"),
]

BLOCKING = [
    # BZSET-1: served at once, timeouts, WRONGTYPE, inside MULTI
    c("BZPOPMIN", "z", "x"), c("BZPOPMIN", "z", "-1"), c("ZADD", "z", "1", "a", "2", "b", "3", "c"),
    c("BZPOPMIN", "nokey", "z", "0"), c("BZPOPMAX", "z", "0"), c("SET", "str", "v"),
    c("BZPOPMIN", "nokey", "str", "z", "0"), c("BZPOPMIN", "nokey", "0.01"), c("MULTI"),
    c("BZPOPMIN", "nokey", "0"), c("BZPOPMAX", "z", "0"), c("EXEC"), c("EXISTS", "z"),
    # BZSET-2: clients served in the order they blocked, one member each
    ("send", 2, "BZPOPMIN", "k1", "k2", "0"), ("waiting", 2), ("send", 3, "BZPOPMAX", "k2", "0"), ("waiting", 3),
    c("ZADD", "k2", "1", "x", "2", "y", "3", "z"), ("recv", 2), ("recv", 3), c("ZRANGE", "k2", "0", "-1"),
    ("send", 2, "BZPOPMIN", "e", "0"), ("send", 3, "BZPOPMIN", "e", "0"), ("waiting", 3),
    c("MULTI"), c("ZADD", "e", "1", "only"), c("ZADD", "e", "2", "two"), c("EXEC"), ("recv", 2), ("recv", 3),
    c("EXISTS", "e"),
    # a list reader and a sorted-set reader on one key
    ("send", 2, "BLPOP", "mix", "0"), ("waiting", 2), ("send", 3, "BZPOPMIN", "mix", "0"), ("waiting", 3),
    c("ZADD", "mix", "1", "m"), ("recv", 3), ("waiting", 2), c("DEL", "mix"), c("RPUSH", "mix", "l"), ("recv", 2),
    # a stored result wakes a sorted-set reader
    c("ZADD", "src", "7", "s"), ("send", 2, "BZPOPMAX", "dst", "0"), ("waiting", 2),
    c("ZUNIONSTORE", "dst", "1", "src"), ("recv", 2), ("send", 2, "BZPOPMIN", "t", "0.05"), ("recv", 2),
]

BLOCKING_MPOP = [
    # BZSET-1, BZSET-2 with BZMPOP (7.0+; 6.2 has no BZMPOP, which ADD_AND_READ's neighbours show)
    c("ZADD", "z", "1", "a", "2", "b", "3", "c"), c("BZMPOP", "0", "2", "nokey", "z", "MIN", "COUNT", "2"),
    c("BZMPOP", "x", "1", "z", "MIN"), c("BZMPOP", "0", "0", "z", "MIN"), c("BZMPOP", "0", "1", "z", "UP"),
    c("MULTI"), c("BZMPOP", "0", "1", "nokey", "MAX"), c("EXEC"),
    ("send", 2, "BZMPOP", "0", "1", "k", "MAX", "COUNT", "2"), ("waiting", 2),
    ("send", 3, "BZMPOP", "0", "1", "k", "MIN"), ("waiting", 3),
    c("ZADD", "k", "1", "x", "2", "y", "3", "z"), ("recv", 2), ("recv", 3), c("EXISTS", "k"),
    ("send", 2, "BZMPOP", "0.05", "1", "t", "MIN"), ("recv", 2),
]

ENCODINGS = [
    # ZSET-ENC-1, ZSET-ENC-2, ZSET-ENC-4, ZSET-17: conversions and ZSCAN of both encodings
    c("ZADD", "small", "1", "a", "2.5", "b", "-0.0", "c", "1e20", "d"), c("ZSCAN", "small", "0"),
    c("ZSCAN", "small", "0", "MATCH", "[ab]", "COUNT", "1"), c("ZSCAN", "small", "0", "COUNT", "0"),
    c("ZSCAN", "small", "x"), c("ZSCAN", "small", "0", "TYPE", "zset"), c("ZSCAN", "nokey", "0"),
    c("ZADD", "grow", *[x for i in range(129) for x in (str(i), f"m{i:03d}")]), c("ZSCORE", "grow", "m128"),
    c("ZADD", "grow", "-0.0", "neg"), c("ZSCORE", "grow", "neg"),
    c("ZREMRANGEBYRANK", "grow", "0", "-3"), c("ZSCAN", "grow", "0", "MATCH", "*8"),
    c("ZUNIONSTORE", "back", "1", "grow"), c("ZSCAN", "back", "0"), c("ZRANGESTORE", "st", "grow", "0", "-1"),
    c("ZSCAN", "st", "0"),
]

SCRIPTS = {"add_and_read": ADD_AND_READ, "doubles": DOUBLES, "ranges": RANGES, "set_operations": SET_OPERATIONS,
           "pops": POPS, "blocking": BLOCKING, "blocking_mpop": BLOCKING_MPOP, "encodings": ENCODINGS}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_zsets_differential(lists_real_servers, lists_reference_servers, name):
    """ZSET-1 to ZSET-17, BZSET-1 to BZSET-3, ZSET-ENC-1 to ZSET-ENC-4, ZSET-DIALECT-1, ZSET-DIALECT-2 on every
    dialect's real server, the model and the reference."""
    dialects = [d for d in ALL_DIALECTS if d != "redis-6.2"] if name == "blocking_mpop" else ALL_DIALECTS
    differential(lists_real_servers, lists_reference_servers, SCRIPTS[name], dialects)


def test_zset_writes_propagate(redis):
    """ZSET-3, ZSET-5, ZSET-11, ZSET-13, ZSET-15, ZSET-16, BZSET-1: what a 7.0.15 replica receives."""
    assert_propagation_matches(redis, [
        (1, ["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"]), (1, ["ZADD", "z", "NX", "5", "a"]),
        (1, ["ZINCRBY", "z", "0", "a"]), (1, ["ZADD", "z", "INCR", "1", "a"]), (1, ["ZREM", "z", "zz"]),
        (1, ["ZREM", "z", "b"]), (1, ["ZPOPMIN", "z", "0"]), (1, ["ZPOPMAX", "z"]),
        (1, ["ZMPOP", "1", "z", "MIN", "COUNT", "9"]), (1, ["ZADD", "q", "1", "x", "2", "y"]),
        (1, ["BZPOPMAX", "nokey", "q", "0"]), (1, ["BZMPOP", "0", "1", "q", "MIN", "COUNT", "5"]),
        (1, ["ZUNIONSTORE", "dst", "1", "nokey"]), (1, ["ZADD", "r", "1", "a"]), (1, ["ZRANGESTORE", "dst", "r", "0", "-1"]),
        (1, ["ZRANGESTORE", "dst", "r", "5", "6"]), (1, ["ZREMRANGEBYSCORE", "r", "2", "3"]),
        (1, ["ZREMRANGEBYSCORE", "r", "1", "1"]),
    ])


def test_blocked_pops_propagate_as_pops(redis):
    """BZSET-2: a served BZPOPMIN propagates as ZPOPMIN key; a served BZMPOP as ZPOPMAX key count."""
    assert_propagation_matches(redis, [
        (2, ["BZPOPMIN", "k", "0"], "send"), (3, ["BZMPOP", "0", "1", "k", "MAX", "COUNT", "5"], "send"),
        (1, ["ZADD", "k", "1", "a", "2", "b", "3", "c"]),
    ])


def test_zscan_pages_of_a_hash_table(redis):
    """ZSET-17, ENV-SCAN: a real ZSCAN of a hash-table sorted set, page by page until cursor 0, conforms."""
    s = redis.scenario()
    s.call(1, "ZADD", "big", *[x for i in range(300) for x in (str(i / 3), f"member-{i}")])
    cursor, seen = b"0", set()
    while True:
        reply = s.call(1, "ZSCAN", "big", cursor, "COUNT", "20")
        assert isinstance(reply, Array) and isinstance(reply.items[0], Bulk)
        page = reply.items[1]
        assert isinstance(page, Array)
        seen |= {i.value for i in page.items[0::2] if isinstance(i, Bulk)}
        cursor = reply.items[0].value
        if cursor == b"0":
            break
    assert len(seen) == 300
    s.check()


def test_hash_table_scan_pages_compare_in_any_order():
    """ZSET-17: a skiplist's ZSCAN page equals the same member-score pairs in any order, and only them."""
    server = Server()
    server.execute(1, [b"ZADD", b"z", b"1", b"a", b"2", b"m" * 65])
    reply = server.execute(1, [b"ZSCAN", b"z", b"0"]).reply
    assert isinstance(reply, Array) and isinstance(reply.items[1], AnyOrderPairs)
    page = reply.items[1]
    assert page == Array((Bulk(b"m" * 65), Bulk(b"2"), Bulk(b"a"), Bulk(b"1")))
    assert page != Array((Bulk(b"m" * 65), Bulk(b"1"), Bulk(b"a"), Bulk(b"2")))
    assert page != Array((Bulk(b"a"), Bulk(b"1")))


@pytest.mark.parametrize("text, value", [
    (b"1.5", 1.5), (b"0x10", 16.0), (b"-inf", -math.inf), (b"Infinity", math.inf), (b"1e-310", 1e-310),
    (b".5", 0.5), (b"5.", 5.0), (b"0x1p-3", 0.125),
])
def test_string2d_accepts(text, value):
    """ZSET-2: the scores ``string2d`` reads."""
    assert string2d(text) == value


@pytest.mark.parametrize("text", [b"", b" 1", b"1 ", b"nan", b"1e400", b"1e-400", b"1_0", b"1\x00", b"0x", b"abc"])
def test_string2d_refuses(text):
    """ZSET-2: what ``string2d`` refuses."""
    assert string2d(text) is None


def test_range_bounds_read_like_strtod():
    """ZSET-8: a range end accepts what ``strtod`` reads whole, even an empty text or an overflow."""
    assert range_bound(b"") == (0.0, False)
    assert range_bound(b"(") == (0.0, True)
    assert range_bound(b" 2") == (2.0, False)
    assert range_bound(b"1e400") == (math.inf, False)
    assert range_bound(b"1\x00junk") == (1.0, False)
    assert range_bound(b"nan") is None and range_bound(b"1x") is None
    assert strtod(b"1e400")[2] and not strtod(b"1.5")[2]


@pytest.mark.parametrize("value, legacy, modern", [
    (1.1, "1.1000000000000001", "1.1"), (1e-7, "9.9999999999999995e-08", "1e-7"), (1e20, "1e+20", "1e+20"),
    (123456789012345678.0, "1.2345678901234568e+17", "123456789012345680"), (-0.0, "-0", "-0"),
    (2.5e300, "2.5000000000000001e+300", "2.5e+300"), (0.0001, "0.0001", "0.0001"), (math.inf, "inf", "inf"),
    (-1.5e-10, "-1.5e-10", "-1.5e-10"), (9.223372036854776e18, "9.2233720368547758e+18", "9223372036854776000"),
])
def test_reply_texts(value, legacy, modern):
    """ZSET-DOUBLE-1, ZSET-DIALECT-2: ``%.17g`` up to 7.0, ``d2string`` from 7.2 (measured on the real servers
    by the DOUBLES script)."""
    assert reply_text(value, False) == legacy
    assert reply_text(value, True) == modern


def test_packed_score_texts():
    """ZSET-ENC-3: a listpack loses -0's sign (7.0+), a ziplist keeps it (6.2)."""
    assert packed_score_text(-0.0, "ziplist") == "-0"
    assert packed_score_text(-0.0, "listpack") == "0"
    assert packed_score_text(1.1, "listpack") == "1.1000000000000001"
    assert packed_score_text(1.1, "listpack-shortest") == "1.1"
    assert shortest(1e21) == "1e+21" and shortest(0.3) == "0.3"


DUMPED = [
    ["ZADD", "small", "1.5", "a", "-0.0", "b", "3", "c", "1.1", "d", "1e20", "e", "-inf", "f", "12345", "678"],
    ["ZADD", "big", *[x for i in range(130) for x in (str(i / 7), f"member-{i}")]],
    ["ZADD", "long", "2.5", "m" * 70, "-0.0", "z"],
]


@pytest.mark.parametrize("dialect", ALL_DIALECTS)
def test_dump_payloads_match_the_real_server(lists_real_servers, lists_reference_servers, dialect):
    """DUMP-2, DUMP-3, RESTORE-11, ZSET-ENC-2, ZSET-ENC-3: the model's DUMP of a listpack, a skiplist and a
    skiplist of a long member is byte for byte the real server's, and the reference restores the real payloads
    to the same members and scores."""
    real = lists_real_servers.get(dialect)
    if real is None:
        pytest.skip(f"no {dialect} server")
    from xspec.spec.dialect import get_dialect
    model = Server(dialect=get_dialect(dialect))
    real.reset()
    conn = real.connection()
    ref = RespConnection("127.0.0.1", lists_reference_servers[dialect].port)
    try:
        ref.call([b"FLUSHALL"])
        for argv in DUMPED:
            words = [w.encode() for w in argv]
            conn.call(words)
            model.execute(1, words)
        for key in (b"small", b"big", b"long"):
            payload = conn.call([b"DUMP", key])
            assert isinstance(payload, Bulk)
            assert model.execute(1, [b"DUMP", key]).reply == payload, f"{dialect} DUMP {key!r}"
            assert ref.call([b"RESTORE", key, b"0", payload.value]) == Simple("OK")
            assert ref.call([b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"]) == \
                conn.call([b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"]), f"{dialect} RESTORE {key!r}"
    finally:
        conn.close()
        ref.call([b"FLUSHALL"])
        ref.close()
        real.reset()


@pytest.mark.parametrize("dialect", ["redis-7.0", "redis-6.2", "valkey-9.1"])
def test_restore_reencodes_a_small_skiplist(lists_real_servers, lists_reference_servers, dialect):
    """RESTORE-11, ZSET-ENC-3: a restored skiplist that fits a listpack becomes one, and -0 loses its sign
    (7.0+; 6.2's ziplist keeps it), on the real server, the reference and the model alike."""
    real = lists_real_servers.get(dialect)
    if real is None:
        pytest.skip(f"no {dialect} server")
    from xspec.spec.dialect import get_dialect
    real.reset()
    conn = real.connection()
    ref = RespConnection("127.0.0.1", lists_reference_servers[dialect].port)
    model = Server(dialect=get_dialect(dialect))
    try:
        ref.call([b"FLUSHALL"])
        setup = [[b"ZADD", b"z", b"1", b"x" * 70, b"-0.0", b"m"], [b"ZREM", b"z", b"x" * 70]]
        for argv in setup:
            conn.call(argv)
            ref.call(argv)
            model.execute(1, argv)
        payload = conn.call([b"DUMP", b"z"])
        assert isinstance(payload, Bulk)
        script = [[b"ZSCORE", b"z", b"m"], [b"RESTORE", b"copy", b"0", payload.value], [b"ZSCORE", b"copy", b"m"],
                  [b"ZSCAN", b"copy", b"0"]]
        expected = [conn.call(argv) for argv in script]
        assert expected[0] == Bulk(b"-0")
        assert expected[2] == Bulk(b"-0" if dialect == "redis-6.2" else b"0")
        assert [ref.call(argv) for argv in script] == expected
        assert [model.execute(1, argv).reply for argv in script] == expected
    finally:
        conn.close()
        ref.call([b"FLUSHALL"])
        ref.close()
        real.reset()




ZSET_SCENARIOS = [s for s in all_scenarios() if s.topic == "zsets"]


@pytest.mark.parametrize("dialect", ALL_DIALECTS)
def test_scenarios_on_the_real_server_and_the_reference(lists_real_servers, lists_reference_servers, dialect):
    """The zsets corpus scenarios (traces/scenarios/zsets.py, keyspace notifications included: NOTIFY-4) recorded
    on the real server conform to the model, and the reference answers each exactly as the real server does."""
    real = lists_real_servers.get(dialect)
    if real is None:
        pytest.skip(f"no {dialect} server")
    name = "valkey" if dialect.startswith("valkey") else "redis"
    ref_port = lists_reference_servers[dialect].port
    real.reset()
    flush = RespConnection("127.0.0.1", ref_port)
    flush.call([b"FLUSHALL"])  # the reference servers are shared: start from an empty one
    flush.close()
    for sc in ZSET_SCENARIOS:
        recorded = record(real.host, real.port, sc, name, real.version)
        verdict = check_trace(recorded)
        assert verdict.status == "conform", (sc.name, verdict.event, verdict.message, verdict.got, verdict.allowed)
        assert shape(record("127.0.0.1", ref_port, sc, name, real.version)) == shape(recorded), sc.name
