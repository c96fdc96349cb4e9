"""SORT … STORE of elements whose order Redis leaves open (spec/rules/sort.md SORT-5, SORT-7): every dialect's
real server stores them in its own order, which the model's search of the orders must find."""

from __future__ import annotations

import pytest

from tests.test_lists import ALL_DIALECTS, lists_real_servers
from xspec.models import Server
from xspec.spec.resp import Int

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers"]

TIES = [
    ["RPUSH", "l", "d", "a", "c", "b", "e"], ["SET", "w_a", "1"], ["SET", "w_b", "1"], ["SET", "w_c", "2"],
    ["SORT", "l", "BY", "w_*", "ALPHA", "STORE", "dst"], ["LRANGE", "dst", "0", "-1"],
    ["SORT", "l", "BY", "w_*", "ALPHA", "DESC", "LIMIT", "0", "2", "STORE", "dst"], ["LRANGE", "dst", "0", "-1"],
    ["SORT", "l", "BY", "nokey_*", "ALPHA", "STORE", "dst", "GET", "#", "GET", "w_*"], ["LRANGE", "dst", "0", "-1"],
    ["SADD", "s", *(f"m{i}" for i in range(20)), "x" * 70], ["SORT", "s", "BY", "nosort", "STORE", "dst"],
    ["LLEN", "dst"], ["SORT", "s", "BY", "nosort", "ALPHA", "LIMIT", "0", "3", "STORE", "dst"],
    ["LRANGE", "dst", "0", "-1"],
]


@pytest.mark.parametrize("dialect", ALL_DIALECTS)
def test_store_of_ties_conforms(lists_real_servers, dialect):
    """SORT-7: the real server's stored order of ties is one the model's search finds."""
    server = lists_real_servers.get(dialect)
    if server is None:
        pytest.skip(f"no {dialect} server")
    server.reset()
    s = server.scenario()
    for argv in TIES:
        s.call(1, *argv)
    s.check()
    server.reset()


def test_store_of_ties_without_a_chooser_keeps_the_model_order():
    """SORT-7: the plain model stores its own order (it no longer refuses)."""
    m = Server()
    for argv in TIES[:4]:
        m.execute(1, [w.encode() for w in argv])
    assert m.execute(1, [b"SORT", b"l", b"BY", b"w_*", b"ALPHA", b"STORE", b"dst"]).reply == Int(5)
