"""Differential tests of the set commands over several sets (spec/rules/sets.md, SETS-6 to SETS-10).

The script runs on every dialect's real server (its trace checked on the model, which accepts any order
for a hash table's walk) and on the reference in the same dialect, in RESP2 and RESP3 (the helpers of
``tests/test_lists.py``, which compare set replies sorted); propagation is compared with a 7.0.15 replica's.
"""

from __future__ import annotations

import pytest

from tests.test_lists import ALL_DIALECTS, differential, lists_real_servers, lists_reference_servers
from tests.test_propagation import assert_propagation_matches

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers", "lists_reference_servers"]


def c(*args: object) -> tuple[object, ...]:
    return ("call", 1, *args)


LONG = "x" * 70
SET_OPERATIONS = [
    c("SADD", "i1", "1", "2", "3", "4"), c("SADD", "i2", "3", "4", "5"), c("SADD", "s1", "a", "b", "c", "1"),
    c("SADD", "s2", "b", "c", "d"), c("SADD", "h", "a", "b", LONG),
    # SETS-6
    c("SINTER", "i1", "i2"), c("SINTER", "s1", "s2"), c("SINTER", "i1", "s1"), c("SINTER", "i1", "nokey"),
    c("SINTER", "s1", "h"), c("SINTER", "i1", "i1"), c("SINTERSTORE", "d", "i1", "i2"), c("SMEMBERS", "d"),
    c("SINTERSTORE", "d", "i1", "nokey"), c("EXISTS", "d"), c("SINTERSTORE", "d", "s1", "s2"), c("SMEMBERS", "d"),
    # SETS-7 (7.0+)
    c("SINTERCARD", "2", "i1", "i2"), c("SINTERCARD", "2", "i1", "i2", "LIMIT", "1"), c("SINTERCARD", "0", "i1"),
    c("SINTERCARD", "x", "i1"), c("SINTERCARD", "3", "i1", "i2"), c("SINTERCARD", "1", "i1", "LIMIT", "-1"),
    c("SINTERCARD", "1", "i1", "LIMIT"), c("SINTERCARD", "1", "i1", "junk", "1"), c("SINTERCARD", "2", "i1", "nokey"),
    # SETS-8
    c("SUNION", "i1", "i2"), c("SUNION", "i1", "s2"), c("SUNION", "s1", "s2", "nokey"), c("SUNION", "nokey"),
    c("SDIFF", "i1", "i2"), c("SDIFF", "s1", "s2", "i1"), c("SDIFF", "i1", "i1"), c("SDIFF", "nokey", "i1"),
    c("SUNIONSTORE", "u", "i1", "s2"), c("SMEMBERS", "u"), c("SDIFFSTORE", "u", "i2", "i1"), c("SMEMBERS", "u"),
    c("SDIFFSTORE", "u", "i1", "i1"), c("EXISTS", "u"), c("SUNIONSTORE", "u", "h", "s1"), c("SCARD", "u"),
    # SETS-9
    c("SMOVE", "s1", "s2", "a"), c("SMOVE", "s1", "s2", "a"), c("SMOVE", "s1", "s1", "b"), c("SMOVE", "s1", "new", "1"),
    c("SMEMBERS", "new"), c("SMOVE", "nokey", "s1", "a"), c("SMOVE", "s1", "new", "b"), c("SMOVE", "s1", "new", "c"),
    c("EXISTS", "s1"), c("SMISMEMBER", "s2", "a", "zz", "b"), c("SMISMEMBER", "nokey", "a"),
    # SETS-10
    c("SSCAN", "i1", "0"), c("SSCAN", "s2", "0", "MATCH", "[ab]", "COUNT", "5"), c("SSCAN", "s2", "0", "COUNT", "0"),
    c("SSCAN", "s2", "x"), c("SSCAN", "s2", "0", "TYPE", "set"), c("SSCAN", "nokey", "0"), c("SSCAN", "h", "0"),
    # SETS-1
    c("SET", "str", "v"), c("SINTER", "i1", "str"), c("SINTER", "nokey", "str"), c("SUNION", "str"),
    c("SMOVE", "str", "i1", "1"), c("SMOVE", "i1", "str", "1"), c("SMOVE", "nokey", "str", "1"),
    c("SUNIONSTORE", "str", "i1"), c("TYPE", "str"),
]


def test_set_operations_differential(lists_real_servers, lists_reference_servers):
    """SETS-6 to SETS-10, SETS-1 on every dialect's real server, the model and the reference."""
    differential(lists_real_servers, lists_reference_servers, SET_OPERATIONS, ALL_DIALECTS)


def test_set_operation_writes_propagate(redis):
    """SETS-6, SETS-8, SETS-9: what a 7.0.15 replica receives."""
    assert_propagation_matches(redis, [
        (1, ["SADD", "a", "1", "2"]), (1, ["SADD", "b", "2", "3"]), (1, ["SINTERSTORE", "d", "a", "b"]),
        (1, ["SINTERSTORE", "d", "a", "nokey"]), (1, ["SINTERSTORE", "d", "a", "nokey"]),
        (1, ["SUNIONSTORE", "d", "a", "b"]), (1, ["SDIFFSTORE", "d", "a", "a"]), (1, ["SMOVE", "a", "b", "1"]),
        (1, ["SMOVE", "a", "b", "9"]), (1, ["SMOVE", "a", "c", "2"]),
    ])


def test_sscan_pages_of_a_hash_table(redis):
    """SETS-10, ENV-SCAN: a real SSCAN of a hash-table set, page by page until cursor 0, conforms."""
    from xspec.spec.resp import Array, Bulk

    s = redis.scenario()
    s.call(1, "SADD", "big", *[f"member-{i}" for i in range(300)])
    cursor, seen = b"0", set()
    while True:
        reply = s.call(1, "SSCAN", "big", cursor, "COUNT", "20")
        assert isinstance(reply, Array) and isinstance(reply.items[0], Bulk) and isinstance(reply.items[1], Array)
        seen |= {i.value for i in reply.items[1].items if isinstance(i, Bulk)}
        cursor = reply.items[0].value
        if cursor == b"0":
            break
    assert len(seen) == 300
    s.check()
