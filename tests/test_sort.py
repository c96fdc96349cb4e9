"""Differential tests of SORT and SORT_RO (spec/rules/sort.md).

The deterministic script runs on every dialect's real server (its trace checked on the model) and on the
reference in the same dialect, in RESP2 and RESP3; the script whose order Redis leaves open (ties of ALPHA
BY keys, a hash table's walk) runs on the real servers, checked on the model only; propagation is compared
with a 7.0.15 replica's.
"""

from __future__ import annotations

import pytest

from tests.test_lists import ALL_DIALECTS, differential, lists_real_servers, lists_reference_servers
from tests.test_propagation import assert_propagation_matches
from xspec.models import Server
from xspec.models.sort import TiedOrder
from xspec.spec.resp import Array, Bulk

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers", "lists_reference_servers"]


def c(*args: object) -> tuple[object, ...]:
    return ("call", 1, *args)


SETUP = [
    c("RPUSH", "l", "3", "1", "10", "2", "1.5", "-1"), c("RPUSH", "names", "bob", "alice", "carol", "dave"),
    c("SADD", "ints", "5", "3", "9"), c("ZADD", "z", "3", "c", "1", "a", "2", "b"),
    c("SET", "w_bob", "2"), c("SET", "w_alice", "1"), c("SET", "w_carol", "3"),
    c("HSET", "h_bob", "age", "30", "name", "Bob"), c("HSET", "h_alice", "age", "25"),
    c("SET", "o_3", "three"), c("SET", "o_1", "one"),
]
DETERMINISTIC = [
    *SETUP,
    # SORT-1 .. SORT-4
    c("SORT", "l"), c("SORT", "l", "DESC"), c("SORT", "l", "LIMIT", "1", "3"), c("SORT", "l", "LIMIT", "-5", "2"),
    c("SORT", "l", "LIMIT", "4", "100"), c("SORT", "l", "LIMIT", "10", "1"), c("SORT", "l", "LIMIT", "0", "0"),
    c("SORT", "names"), c("SORT", "names", "ALPHA"), c("SORT", "names", "ALPHA", "DESC", "LIMIT", "1", "2"),
    c("SORT", "ints"), c("SORT", "z"), c("SORT", "z", "ALPHA", "DESC"), c("SORT", "nokey"),
    c("SORT", "names", "BY", "w_*"), c("SORT", "names", "BY", "w_*", "DESC", "GET", "#", "GET", "w_*"),
    c("SORT", "names", "BY", "h_*->age", "GET", "h_*->name"), c("SORT", "l", "GET", "o_*", "GET", "#"),
    c("SORT", "l", "BY", "nosort"), c("SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "2"),
    c("SORT", "z", "BY", "nosort", "DESC"), c("SORT", "z", "BY", "nosort", "LIMIT", "1", "1", "GET", "#"),
    c("SORT", "l", "GET", "fixed"), c("SORT", "l", "LIMIT", "x", "1"), c("SORT", "l", "LIMIT", "1"),
    c("SORT", "l", "JUNK"), c("SORT", "l", "STORE"), c("SET", "str", "v"), c("SORT", "str"),
    c("SORT_RO", "l", "DESC"), c("SORT_RO", "l", "STORE", "x"),
    # SORT-6
    c("SORT", "l", "STORE", "dst"), c("LRANGE", "dst", "0", "-1"), c("SORT", "names", "ALPHA", "GET", "w_*", "STORE",
                                                                          "dst"),
    c("LRANGE", "dst", "0", "-1"), c("SORT", "nokey", "STORE", "dst"), c("EXISTS", "dst"),
    c("SORT", "ints", "BY", "nosort", "STORE", "dst"), c("LRANGE", "dst", "0", "-1"),
    # SORT-3
    c("SORT", "names"), c("SORT", "names", "BY", "h_*->name"), c("RPUSH", "bad", "1", "x"), c("SORT", "bad"),
    c("SORT", "bad", "ALPHA"),
]
OPEN = [
    *SETUP,
    c("SORT", "names", "ALPHA", "BY", "nokey_*"), c("SORT", "names", "ALPHA", "BY", "w_*", "LIMIT", "0", "2"),
    c("SADD", "strs", *[f"m{i}" for i in range(140)]), c("SORT", "strs", "BY", "nosort", "LIMIT", "0", "3"),
    c("SORT", "strs", "ALPHA", "LIMIT", "0", "3"), c("SORT", "z"), c("ZSCAN", "z", "0"),
]


def test_sort_differential(lists_real_servers, lists_reference_servers):
    """SORT-1 to SORT-4, SORT-6 on every dialect's real server, the model and the reference."""
    differential(lists_real_servers, lists_reference_servers, DETERMINISTIC, ALL_DIALECTS)


@pytest.mark.parametrize("dialect", ALL_DIALECTS)
def test_sort_open_orders_conform(lists_real_servers, dialect):
    """SORT-2, SORT-5: the orders Redis leaves open are accepted in any of their forms (real traces checked on
    the model), and SORT turns a listpack sorted set into a skiplist (ZSCAN after it)."""
    real = lists_real_servers.get(dialect)
    if real is None:
        pytest.skip(f"no {dialect} server")
    real.reset()
    s = real.scenario()
    for step in OPEN:
        s.call(*step[1:])
    s.check()
    real.reset()


def test_tied_order_equality():
    """SORT-5: a group cut by the window may give any of its units, a whole group any order, nothing else."""
    server = Server()
    for argv in (["RPUSH", "l", "a", "b", "c", "d"], ["SET", "w_a", "1"], ["SET", "w_b", "1"], ["SET", "w_c", "2"]):
        server.execute(1, [w.encode() for w in argv])
    reply = server.execute(1, [b"SORT", b"l", b"ALPHA", b"BY", b"w_*", b"LIMIT", b"0", b"2"]).reply
    assert isinstance(reply, TiedOrder)  # d has no weight (first), then a and b tie
    assert reply == Array((Bulk(b"d"), Bulk(b"a"))) and reply == Array((Bulk(b"d"), Bulk(b"b")))
    assert reply != Array((Bulk(b"a"), Bulk(b"d"))) and reply != Array((Bulk(b"d"), Bulk(b"c")))


def test_sort_store_propagates(redis):
    """SORT-6: STORE is propagated verbatim when it stored or deleted; a plain SORT is not."""
    assert_propagation_matches(redis, [
        (1, ["RPUSH", "l", "2", "1"]), (1, ["SORT", "l"]), (1, ["SORT", "l", "STORE", "d"]),
        (1, ["SORT", "nokey", "STORE", "d"]), (1, ["SORT", "nokey", "STORE", "d"]),
    ])
