"""Differential tests of the list commands by position and value (spec/rules/lists.md, LIST-9 to LIST-16).

The script runs on every dialect's real server (its trace checked on the model) and on the reference
in the same dialect, in RESP2 and RESP3 (``tests/test_lists.py``'s helpers); propagation is compared
with a real 7.0.15 replica's.
"""

from __future__ import annotations

import pytest

from tests.test_lists import ALL_DIALECTS, differential, lists_real_servers, lists_reference_servers
from tests.test_propagation import assert_propagation_matches

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers", "lists_reference_servers"]


def c(*args: object) -> tuple[object, ...]:
    return ("call", 1, *args)


POSITIONS = [
    c("RPUSH", "l", "a", "b", "c", "b", "a", "b"),
    # LIST-9
    c("LPUSHX", "l", "x", "y"), c("RPUSHX", "l", "z"), c("LPUSHX", "nokey", "a"), c("EXISTS", "nokey"),
    # LIST-10
    c("LINSERT", "l", "BEFORE", "b", "new"), c("LINSERT", "l", "after", "a", "after-a"),
    c("LINSERT", "l", "after", "nope", "x"), c("LINSERT", "l", "middle", "a", "x"), c("LINSERT", "nokey", "before", "a", "x"),
    c("LRANGE", "l", "0", "-1"),
    # LIST-11
    c("LINDEX", "l", "0"), c("LINDEX", "l", "-1"), c("LINDEX", "l", "100"), c("LINDEX", "l", "x"),
    c("LINDEX", "nokey", "x"), c("LSET", "l", "1", "set"), c("LSET", "l", "-100", "v"), c("LSET", "l", "x", "v"),
    c("LSET", "nokey", "0", "v"), c("LSET", "nokey", "x", "v"),
    # LIST-13
    c("LPOS", "l", "b"), c("LPOS", "l", "b", "RANK", "2"), c("LPOS", "l", "b", "RANK", "-1"),
    c("LPOS", "l", "b", "COUNT", "0"), c("LPOS", "l", "b", "RANK", "-2", "COUNT", "2"),
    c("LPOS", "l", "b", "MAXLEN", "3", "COUNT", "0"), c("LPOS", "l", "nope"), c("LPOS", "l", "nope", "COUNT", "1"),
    c("LPOS", "l", "b", "RANK", "0"), c("LPOS", "l", "b", "COUNT", "-1"), c("LPOS", "l", "b", "MAXLEN", "x"),
    c("LPOS", "l", "b", "RANK"), c("LPOS", "l", "b", "junk", "1"), c("LPOS", "nokey", "a"),
    c("LPOS", "nokey", "a", "COUNT", "2"),
    # LIST-14
    c("LREM", "l", "1", "b"), c("LREM", "l", "-1", "a"), c("LREM", "l", "0", "b"), c("LREM", "l", "x", "b"),
    c("LREM", "nokey", "0", "a"), c("LRANGE", "l", "0", "-1"),
    # LIST-12
    c("LTRIM", "l", "1", "-2"), c("LRANGE", "l", "0", "-1"), c("LTRIM", "l", "0", "-1"), c("LTRIM", "l", "x", "1"),
    c("LTRIM", "nokey", "0", "1"), c("LTRIM", "l", "5", "1"), c("EXISTS", "l"),
    # LIST-15
    c("RPUSH", "src", "1", "2", "3"), c("RPOPLPUSH", "src", "dst"), c("RPOPLPUSH", "src", "src"),
    c("LRANGE", "src", "0", "-1"), c("LRANGE", "dst", "0", "-1"), c("RPOPLPUSH", "nokey", "dst"),
    # LIST-16 (7.0+)
    c("LMPOP", "2", "nokey", "src", "LEFT"), c("LMPOP", "2", "src", "dst", "right", "COUNT", "10"),
    c("LMPOP", "1", "nokey", "left"), c("LMPOP", "0", "src", "left"), c("LMPOP", "x", "src", "left"),
    c("LMPOP", "3", "src", "left"), c("LMPOP", "1", "dst", "up"), c("LMPOP", "1", "dst", "left", "COUNT", "0"),
    c("LMPOP", "1", "dst", "left", "COUNT"),
    # LIST-1
    c("SET", "str", "v"), c("LINDEX", "str", "0"), c("LPUSHX", "str", "a"), c("LPOS", "str", "a"),
    c("LMPOP", "2", "str", "dst", "left"), c("RPOPLPUSH", "dst", "str"), c("LTRIM", "str", "0", "1"),
]


def test_list_positions_differential(lists_real_servers, lists_reference_servers):
    """LIST-9 to LIST-16, LIST-1, LIST-DIALECT-2 on every dialect's real server, the model and the reference."""
    differential(lists_real_servers, lists_reference_servers, POSITIONS, ALL_DIALECTS)


def test_list_position_writes_propagate(redis):
    """LIST-9 to LIST-16: what a 7.0.15 replica receives (LMPOP as LPOP/RPOP with the number popped)."""
    assert_propagation_matches(redis, [
        (1, ["RPUSH", "l", "a", "b", "c", "b"]), (1, ["LPUSHX", "l", "x"]), (1, ["LPUSHX", "nokey", "x"]),
        (1, ["LINSERT", "l", "BEFORE", "b", "n"]), (1, ["LINSERT", "l", "AFTER", "nope", "n"]),
        (1, ["LSET", "l", "0", "s"]), (1, ["LREM", "l", "0", "b"]), (1, ["LREM", "l", "0", "nope"]),
        (1, ["LTRIM", "l", "0", "-1"]), (1, ["LTRIM", "l", "1", "-1"]), (1, ["RPOPLPUSH", "l", "m"]),
        (1, ["LMPOP", "2", "nokey", "l", "RIGHT", "COUNT", "5"]), (1, ["LMPOP", "1", "m", "LEFT"]),
    ])
