"""Differential tests of strings, hashes and key expiry (spec/rules/strings.md, hashes.md, expiry.md).

Each script runs on every real server whose binary is here (its trace must conform to the model in
the server's dialect) and on the reference server in the same dialect (equal replies), in RESP2 and
RESP3 (tests/test_lists.py's ``differential``). Propagation is compared with 7.0.15's replication
stream. Expiry scripts sleep past short PX times, so the clocks involved are the real ones.
"""

from __future__ import annotations

import pytest

import tests.test_lists as lists_tests
from tests.test_lists import ALL_DIALECTS
from tests.test_propagation import assert_propagation_matches
from xspec.spec.resp import Array, Map, Reply

pytestmark = pytest.mark.redis

STRINGS = [
    ("call", 1, "SET", "k", "v"), ("call", 1, "GET", "k"), ("call", 1, "SET", "k", "w", "GET"),
    ("call", 1, "SET", "k", "x", "NX"), ("call", 1, "SET", "k", "x", "XX", "GET"),
    ("call", 1, "SET", "n", "x", "XX"), ("call", 1, "SET", "k", "y", "NX", "GET"),
    ("call", 1, "SET", "k", "v", "EX", "0"), ("call", 1, "SET", "k", "v", "PX", "-5"),
    ("call", 1, "SET", "k", "v", "EX", "x"), ("call", 1, "SET", "k", "v", "KEEPTTL", "EX", "5"),
    ("call", 1, "SET", "k", "v", "EX", "5", "PX", "5"), ("call", 1, "SET", "k", "v", "BOGUS"),
    ("call", 1, "SETNX", "k", "1"), ("call", 1, "SETNX", "k2", "1"), ("call", 1, "GETSET", "k2", "2"),
    ("call", 1, "GETSET", "k3", "2"), ("call", 1, "GETDEL", "k3"), ("call", 1, "GETDEL", "k3"),
    ("call", 1, "MSET", "a", "1", "b", "2"), ("call", 1, "MSET", "a", "1", "b"),
    ("call", 1, "MSETNX", "a", "1", "c", "3"), ("call", 1, "MSETNX", "c", "3", "d", "4"),
    ("call", 1, "MGET", "a", "b", "nokey", "c"),
    ("call", 1, "INCR", "a"), ("call", 1, "DECR", "nokey2"), ("call", 1, "INCRBY", "a", "10"),
    ("call", 1, "DECRBY", "a", "3"), ("call", 1, "INCRBY", "a", "x"), ("call", 1, "INCR", "k"),
    ("call", 1, "SET", "big", "9223372036854775807"), ("call", 1, "INCR", "big"),
    ("call", 1, "DECRBY", "a", "-9223372036854775808"), ("call", 1, "INCRBY", "a", "-9223372036854775808"),
    ("call", 1, "INCRBYFLOAT", "f", "0.1"), ("call", 1, "INCRBYFLOAT", "f", "1e3"),
    ("call", 1, "INCRBYFLOAT", "f", "-1000.1"), ("call", 1, "INCRBYFLOAT", "f", "inf"),
    ("call", 1, "INCRBYFLOAT", "f", "x"), ("call", 1, "INCRBYFLOAT", "k", "1"),
    ("call", 1, "SET", "g", "10.50"), ("call", 1, "INCRBYFLOAT", "g", "0.1"),
    ("call", 1, "INCRBYFLOAT", "g", "5.0e3"), ("call", 1, "INCRBYFLOAT", "g", "-5010.6"),
    ("call", 1, "APPEND", "s", "Hello"), ("call", 1, "APPEND", "s", " World"), ("call", 1, "STRLEN", "s"),
    ("call", 1, "STRLEN", "nokey"), ("call", 1, "GETRANGE", "s", "0", "4"), ("call", 1, "GETRANGE", "s", "-3", "-1"),
    ("call", 1, "GETRANGE", "s", "-1", "-3"), ("call", 1, "GETRANGE", "s", "5", "2"),
    ("call", 1, "GETRANGE", "s", "0", "100"), ("call", 1, "GETRANGE", "s", "-100", "3"),
    ("call", 1, "GETRANGE", "nokey", "0", "1"), ("call", 1, "GETRANGE", "s", "x", "1"),
    ("call", 1, "SUBSTR", "s", "1", "2"),
    ("call", 1, "SETRANGE", "s", "6", "Redis"), ("call", 1, "GET", "s"), ("call", 1, "SETRANGE", "r", "3", "ab"),
    ("call", 1, "GET", "r"), ("call", 1, "SETRANGE", "r2", "3", ""), ("call", 1, "EXISTS", "r2"),
    ("call", 1, "SETRANGE", "r", "-1", "x"), ("call", 1, "SETRANGE", "r", "1", ""),
    ("call", 1, "RPUSH", "l", "x"), ("call", 1, "GET", "l"), ("call", 1, "APPEND", "l", "x"),
    ("call", 1, "STRLEN", "l"), ("call", 1, "GETRANGE", "l", "0", "1"), ("call", 1, "SETRANGE", "l", "0", "x"),
    ("call", 1, "INCRBYFLOAT", "l", "1"), ("call", 1, "GETSET", "l", "v"), ("call", 1, "GETDEL", "l"),
    ("call", 1, "SET", "l", "v", "GET"), ("call", 1, "SET", "l", "v"), ("call", 1, "TYPE", "l"),
    ("call", 1, "SETEX", "e", "100", "v"), ("call", 1, "SETEX", "e", "0", "v"), ("call", 1, "PSETEX", "e", "x", "v"),
    ("call", 1, "TTL", "e"), ("call", 1, "GETEX", "e", "PERSIST"), ("call", 1, "TTL", "e"),
    ("call", 1, "GETEX", "e", "EX", "100"), ("call", 1, "TTL", "e"), ("call", 1, "GETEX", "e", "PERSIST", "EX", "1"),
    ("call", 1, "GETEX", "e", "BOGUS"), ("call", 1, "GETEX", "nokey", "EX", "0"), ("call", 1, "GETEX", "e", "EX", "0"),
    ("call", 1, "GETEX", "e", "PXAT", "1"), ("call", 1, "EXISTS", "e"), ("call", 1, "DBSIZE"),
]

HASHES = [
    ("call", 1, "HSET", "h", "f1", "v1", "f2", "v2"), ("call", 1, "HSET", "h", "f1", "x", "f3", "v3"),
    ("call", 1, "HSET", "h", "f1"), ("call", 1, "HMSET", "h", "f4", "v4"), ("call", 1, "HSETNX", "h", "f4", "z"),
    ("call", 1, "HSETNX", "h", "f5", "z"), ("call", 1, "HGET", "h", "f1"), ("call", 1, "HGET", "h", "nof"),
    ("call", 1, "HGET", "nokey", "f"), ("call", 1, "HMGET", "h", "f1", "nof", "f2"), ("call", 1, "HMGET", "nokey", "a"),
    ("call", 1, "HGETALL", "h"), ("call", 1, "HKEYS", "h"), ("call", 1, "HVALS", "h"), ("call", 1, "HLEN", "h"),
    ("call", 1, "HEXISTS", "h", "f2"), ("call", 1, "HEXISTS", "h", "nof"), ("call", 1, "HSTRLEN", "h", "f2"),
    ("call", 1, "HSTRLEN", "h", "nof"), ("call", 1, "HDEL", "h", "f2", "nof", "f2"), ("call", 1, "HGETALL", "h"),
    ("call", 1, "HSET", "h", "f2", "back"), ("call", 1, "HKEYS", "h"),
    ("call", 1, "HINCRBY", "h", "n", "5"), ("call", 1, "HINCRBY", "h", "n", "-7"), ("call", 1, "HINCRBY", "h", "f1", "1"),
    ("call", 1, "HINCRBY", "h", "n", "x"), ("call", 1, "HINCRBY", "h", "n", "9223372036854775807"),
    ("call", 1, "HINCRBYFLOAT", "h", "fl", "1.5"), ("call", 1, "HINCRBYFLOAT", "h", "fl", "0.1"),
    ("call", 1, "HINCRBYFLOAT", "h", "f1", "1"), ("call", 1, "HINCRBYFLOAT", "h", "fl", "inf"),
    ("call", 1, "HINCRBYFLOAT", "h", "fl", "x"), ("call", 1, "HINCRBYFLOAT", "h", "n", "1"),
    ("call", 1, "HSCAN", "h", "0"), ("call", 1, "HSCAN", "h", "0", "MATCH", "f*", "COUNT", "100"),
    ("call", 1, "HSCAN", "h", "0", "COUNT", "0"), ("call", 1, "HSCAN", "h", "x"), ("call", 1, "HSCAN", "h", "0", "BOGUS"),
    ("call", 1, "HSCAN", "nokey", "0", "BOGUS"), ("call", 1, "HGETALL", "nokey"), ("call", 1, "HKEYS", "nokey"),
    ("call", 1, "HLEN", "nokey"), ("call", 1, "HDEL", "nokey", "f"),
    ("call", 1, "SET", "s", "v"), ("call", 1, "HSET", "s", "f", "v"), ("call", 1, "HGET", "s", "f"),
    ("call", 1, "HMGET", "s", "f"), ("call", 1, "HGETALL", "s"), ("call", 1, "HLEN", "s"), ("call", 1, "GET", "h"),
    ("call", 1, "TYPE", "h"), ("call", 1, "HSET", "one", "f", "v"), ("call", 1, "HDEL", "one", "f", "g"),
    ("call", 1, "EXISTS", "one"), ("call", 1, "HSET", "big", "f", "x" * 65), ("call", 1, "HSET", "big", "g", "y"),
    ("call", 1, "HGETALL", "big"), ("call", 1, "HKEYS", "big"), ("call", 1, "HSCAN", "big", "0"),
    ("call", 1, "DUMP", "h"), ("call", 1, "DUMP", "s"),
]

EXPIRY = [
    ("call", 1, "SET", "k", "v"), ("call", 1, "TTL", "k"), ("call", 1, "PTTL", "nokey"),
    ("call", 1, "EXPIRE", "k", "100"), ("call", 1, "TTL", "k"), ("call", 1, "EXPIRE", "k", "50", "GT"),
    ("call", 1, "EXPIRE", "k", "200", "GT"), ("call", 1, "EXPIRE", "k", "300", "LT"),
    ("call", 1, "EXPIRE", "k", "100", "NX"), ("call", 1, "EXPIRE", "k", "100", "XX"), ("call", 1, "TTL", "k"),
    ("call", 1, "EXPIRE", "k", "100", "NX", "XX"), ("call", 1, "EXPIRE", "k", "100", "GT", "LT"),
    ("call", 1, "EXPIRE", "k", "100", "BOGUS"), ("call", 1, "EXPIRE", "k", "x"),
    ("call", 1, "EXPIRE", "k", "9223372036854775807"), ("call", 1, "PEXPIRE", "k", "9223372036854775807"),
    ("call", 1, "EXPIRE", "nokey", "100"), ("call", 1, "PERSIST", "k"), ("call", 1, "PERSIST", "k"),
    ("call", 1, "PERSIST", "nokey"), ("call", 1, "TTL", "k"), ("call", 1, "EXPIRE", "k", "10", "XX"),
    ("call", 1, "EXPIRE", "k", "10", "LT"), ("call", 1, "TTL", "k"), ("call", 1, "EXPIREAT", "k", "99999999999"),
    ("call", 1, "EXPIRETIME", "k"), ("call", 1, "PEXPIRETIME", "k"), ("call", 1, "EXPIRETIME", "nokey"),
    ("call", 1, "PEXPIREAT", "k", "1"), ("call", 1, "EXISTS", "k"),
    ("call", 1, "SET", "k", "v", "PX", "60"), ("call", 1, "RPUSH", "l", "a"), ("call", 1, "PEXPIRE", "l", "60"),
    ("call", 1, "HSET", "h", "f", "v"), ("call", 1, "PEXPIRE", "h", "60"),
    ("call", 1, "XADD", "s", "1-1", "f", "v"), ("call", 1, "PEXPIRE", "s", "60"),
    ("call", 1, "SET", "keep", "v", "PX", "60"), ("call", 1, "SET", "keep", "w", "KEEPTTL"),
    ("call", 1, "SET", "drop", "v", "PX", "60"), ("call", 1, "SET", "drop", "w"), ("call", 1, "TTL", "drop"),
    ("call", 1, "SET", "inc", "1", "PX", "60"), ("call", 1, "INCR", "inc"),
    ("call", 2, "SET", "w", "v", "PX", "60"), ("call", 2, "WATCH", "w"),
    ("sleep", 150),
    ("call", 2, "MULTI"), ("call", 2, "GET", "w"), ("call", 2, "EXEC"),
    ("call", 1, "GET", "k"), ("call", 1, "LLEN", "l"), ("call", 1, "HGETALL", "h"), ("call", 1, "XLEN", "s"),
    ("call", 1, "EXISTS", "keep", "inc"), ("call", 1, "GET", "drop"), ("call", 1, "TTL", "k"),
    ("call", 1, "SET", "k2", "v", "PX", "50"), ("sleep", 120), ("call", 1, "SET", "k2", "w", "NX"),
    ("call", 1, "TTL", "k2"),
]

EXPIRY_62 = [step for step in EXPIRY if "EXPIRETIME" not in step and "PEXPIRETIME" not in step]


@pytest.mark.parametrize("name, script, dialects", [
    ("strings", STRINGS, ALL_DIALECTS),
    ("hashes", HASHES, ALL_DIALECTS),
    ("expiry", EXPIRY, ALL_DIALECTS[:1] + ALL_DIALECTS[2:]),
    ("expiry-6.2", EXPIRY_62, ("redis-6.2",)),
])
def test_strings_hashes_expiry_differential(real_servers_by_dialect, reference_servers_by_dialect, name, script,
                                            dialects, monkeypatch):
    monkeypatch.setattr(lists_tests, "_normal", _normal)
    lists_tests.differential(real_servers_by_dialect, reference_servers_by_dialect, script, dialects)


_WALKS = {"HGETALL", "HKEYS", "HVALS", "HSCAN"}


def _normal(step, r: Reply) -> object:
    """A hash table's walk (the key ``big``) comes in the seed's order: compare its items as a multiset."""
    if len(step) > 3 and str(step[2]).upper() in _WALKS and step[3] == "big":
        if isinstance(r, Array) and len(r.items) == 2 and isinstance(r.items[1], Array):
            r = r.items[1]
        items = r.pairs if isinstance(r, Map) else r.items if isinstance(r, Array) else (r,)
        return sorted(map(repr, items if not isinstance(r, Map) else (x for p in items for x in p)))
    return r


def test_writes_propagate(redis):
    assert_propagation_matches(redis, [
        (1, ["SET", "k", "v", "EX", "100"]), (1, ["SET", "k", "v", "GET"]), (1, ["SETEX", "e", "100", "v"]),
        (1, ["INCRBYFLOAT", "f", "1.5"]), (1, ["GETSET", "f", "2"]), (1, ["GETDEL", "f"]),
        (1, ["EXPIRE", "k", "100"]), (1, ["PEXPIREAT", "k", "99999999999999"]), (1, ["PERSIST", "k"]),
        (1, ["GETEX", "k", "PX", "100000"]), (1, ["GETEX", "k", "PERSIST"]), (1, ["EXPIRE", "k", "-1"]),
        (1, ["HSET", "h", "f", "1"]), (1, ["HINCRBYFLOAT", "h", "f", "0.5"]), (1, ["HINCRBY", "h", "f", "1"]),
        (1, ["MSET", "a", "1", "b", "2"]), (1, ["APPEND", "a", "x"]), (1, ["SETRANGE", "a", "0", "y"]),
    ])
