"""Differential tests of the set commands (spec/rules/sets.md).

The scripts run on 7.0.15, 6.2.14 and Valkey 9.1.2 (checked on the model in
each dialect) and on the reference server in the same dialect, in RESP2 and
RESP3 (helpers of ``tests/test_lists.py``). SMEMBERS of a hash table is
compared as a multiset; an intset's and a listpack's order is compared exactly.
"""

from __future__ import annotations

import pytest

from tests.test_lists import ALL_DIALECTS, differential, lists_real_servers, lists_reference_servers
from tests.test_propagation import assert_propagation_matches
from xspec.models import Server
from xspec.models.sets import AnyOrderArray, AnyOrderSet
from xspec.spec.resp import Array, Bulk, Set

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers", "lists_reference_servers"]

BASICS = [
    ("call", 1, "SADD", "s", "b", "a", "c", "a"), ("call", 1, "SADD", "s", "a"), ("call", 1, "SCARD", "s"),
    ("call", 1, "SISMEMBER", "s", "a"), ("call", 1, "SISMEMBER", "s", "z"), ("call", 1, "SISMEMBER", "nokey", "a"),
    ("call", 1, "SCARD", "nokey"), ("call", 1, "SMEMBERS", "nokey"), ("call", 1, "SMEMBERS", "s"),
    ("call", 1, "SREM", "s", "z", "a"), ("call", 1, "SREM", "nokey", "a"), ("call", 1, "SREM", "s", "b", "c", "b"),
    ("call", 1, "EXISTS", "s"), ("call", 1, "SET", "str", "v"), ("call", 1, "SADD", "str", "a"),
    ("call", 1, "SMEMBERS", "str"), ("call", 1, "SCARD", "str"), ("call", 1, "SISMEMBER", "str", "a"),
    ("call", 1, "SREM", "str", "a"), ("call", 1, "SADD", "t", "x"), ("call", 1, "TYPE", "t"),
    ("call", 1, "GET", "t"), ("call", 1, "LPUSH", "t", "x"), ("call", 1, "XADD", "t", "1-1", "f", "v"),
    ("call", 1, "SADD", "t"), ("call", 1, "SISMEMBER", "t"),
]

ENCODINGS = [
    # SETS-ENC-1, SETS-ENC-2: an intset lists its members in numeric order ...
    ("call", 1, "SADD", "i", "10", "-5", "3", "9223372036854775807", "-9223372036854775808"),
    ("call", 1, "SMEMBERS", "i"), ("call", 1, "SREM", "i", "3"), ("call", 1, "SMEMBERS", "i"),
    # ... until a non-integer arrives (7.0: a hash table; 7.2+: a listpack, SETS-DIALECT-1)
    ("call", 1, "SADD", "i", "x", "01"), ("call", 1, "SMEMBERS", "i"), ("call", 1, "SREM", "i", "10"),
    ("call", 1, "SADD", "i", "5"), ("call", 1, "SMEMBERS", "i"),
    ("call", 1, "SADD", "n", "abc", "1", "2"), ("call", 1, "SMEMBERS", "n"),
    ("call", 1, "SADD", "n", "x" * 65), ("call", 1, "SMEMBERS", "n"), ("call", 1, "SCARD", "n"),
    ("call", 1, "SADD", "o", "9223372036854775808"), ("call", 1, "SADD", "o", "-1"), ("call", 1, "SMEMBERS", "o"),
]


@pytest.mark.parametrize("name, script", [("basics", BASICS), ("encodings", ENCODINGS)])
def test_sets_differential(lists_real_servers, lists_reference_servers, name, script):
    differential(lists_real_servers, lists_reference_servers, script, ALL_DIALECTS)


def test_set_writes_propagate_only_changes(redis):
    """SETS-2, SETS-3."""
    assert_propagation_matches(redis, [
        (1, ["SADD", "s", "a", "b"]), (1, ["SADD", "s", "a"]), (1, ["SREM", "s", "z"]), (1, ["SREM", "s", "a", "z"]),
        (1, ["SREM", "nokey", "a"]), (1, ["SREM", "s", "b", "c"]), (1, ["SMEMBERS", "s"]), (1, ["SCARD", "s"]),
    ])


def test_hashtable_members_compare_in_any_order():
    """SETS-4: the model's reply for a hash table equals the members in any order, and only them."""
    server = Server()
    server.execute(1, [b"SADD", b"s", b"a", b"b", b"c"])
    reply = server.execute(1, [b"SMEMBERS", b"s"]).reply
    assert isinstance(reply, AnyOrderArray)
    assert reply == Array((Bulk(b"c"), Bulk(b"a"), Bulk(b"b")))
    assert reply != Array((Bulk(b"c"), Bulk(b"a")))
    assert reply != Set((Bulk(b"c"), Bulk(b"a"), Bulk(b"b")))
    server.execute(1, [b"HELLO", b"3"])
    reply3 = server.execute(1, [b"SMEMBERS", b"s"]).reply
    assert isinstance(reply3, AnyOrderSet) and reply3 == Set((Bulk(b"b"), Bulk(b"c"), Bulk(b"a")))
    server.execute(1, [b"SADD", b"i", b"3", b"1"])
    assert server.execute(1, [b"SMEMBERS", b"i"]).reply == Set((Bulk(b"1"), Bulk(b"3")))  # an intset's order
