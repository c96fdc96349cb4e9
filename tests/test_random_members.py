"""SRANDMEMBER and ZRANDMEMBER (spec/rules/sets.md SETS-11, zsets.md ZSET-18, environment.md ENV-RANDOM).

A real server draws at random, so a reply is checked for what makes a draw valid: the model's reply
compares equal to exactly the valid draws. Each script runs on every dialect's real server (its trace
checked on the model) and on the reference, whose draws the model must accept too; and the model must
refuse draws that are not valid.
"""

from __future__ import annotations

import pytest

from tests.test_lists import ALL_DIALECTS, lists_real_servers, lists_reference_servers
from xspec.models import Server
from xspec.spec.dialect import get_dialect
from xspec.spec.resp import Array, Bulk
from xspec.traces.record.client import RespConnection

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers", "lists_reference_servers"]

SETUP = [["SADD", "s", "a", "b", "c"], ["SADD", "i", "1", "2", "3", "4"], ["ZADD", "z", "1", "a", "2.5", "b", "3", "c"],
         ["SET", "str", "v"]]
DRAWS = [
    ["SRANDMEMBER", "s"], ["SRANDMEMBER", "s", "2"], ["SRANDMEMBER", "s", "10"], ["SRANDMEMBER", "s", "-5"],
    ["SRANDMEMBER", "i", "3"], ["SRANDMEMBER", "s", "0"], ["SRANDMEMBER", "nokey"], ["SRANDMEMBER", "nokey", "3"],
    ["SRANDMEMBER", "s", "x"], ["SRANDMEMBER", "s", "-9223372036854775808"], ["SRANDMEMBER", "s", "1", "2"],
    ["SRANDMEMBER", "str"], ["ZRANDMEMBER", "z"], ["ZRANDMEMBER", "z", "2"], ["ZRANDMEMBER", "z", "-4", "WITHSCORES"],
    ["ZRANDMEMBER", "z", "5", "withscores"], ["ZRANDMEMBER", "z", "0"], ["ZRANDMEMBER", "nokey"],
    ["ZRANDMEMBER", "nokey", "2"], ["ZRANDMEMBER", "z", "1", "junk"], ["ZRANDMEMBER", "z", "x"],
    ["ZRANDMEMBER", "z", "4611686018427387904", "WITHSCORES"], ["ZRANDMEMBER", "str", "1"],
]


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("dialect", ALL_DIALECTS)
def test_random_draws(lists_real_servers, lists_reference_servers, dialect, proto):
    """SETS-11, ZSET-18, ENV-RANDOM: real draws conform; the reference's draws are ones the model accepts."""
    real = lists_real_servers.get(dialect)
    if real is None:
        pytest.skip(f"no {dialect} server")
    real.reset()
    s = real.scenario()
    if proto == 3:
        s.call(1, "HELLO", "3")
    for argv in SETUP + DRAWS:
        s.call(1, *argv)
    s.check()
    real.reset()
    model = Server(dialect=get_dialect(dialect))
    ref = RespConnection("127.0.0.1", lists_reference_servers[dialect].port)
    try:
        ref.call([b"FLUSHALL"])
        if proto == 3:
            ref.call([b"HELLO", b"3"])
            model.execute(1, [b"HELLO", b"3"])
        for argv in SETUP + DRAWS:
            words = [w.encode() for w in argv]
            got, allowed = ref.call(words), model.execute(1, words).reply
            assert got == allowed, (dialect, argv, got, allowed)
    finally:
        ref.call([b"FLUSHALL"])
        ref.close()


def test_invalid_draws_are_refused():
    """ENV-RANDOM: a repeated member where they must differ, a member of no set, a wrong count."""
    model = Server()
    model.execute(1, [b"SADD", b"s", b"a", b"b", b"c"])
    distinct = model.execute(1, [b"SRANDMEMBER", b"s", b"2"]).reply
    assert distinct == Array((Bulk(b"c"), Bulk(b"a")))
    assert distinct != Array((Bulk(b"a"), Bulk(b"a")))
    assert distinct != Array((Bulk(b"a"), Bulk(b"zz")))
    assert distinct != Array((Bulk(b"a"),))
    repeated = model.execute(1, [b"SRANDMEMBER", b"s", b"-3"]).reply
    assert repeated == Array((Bulk(b"a"), Bulk(b"a"), Bulk(b"a")))
    one = model.execute(1, [b"SRANDMEMBER", b"s"]).reply
    assert one == Bulk(b"b") and one != Bulk(b"zz")
