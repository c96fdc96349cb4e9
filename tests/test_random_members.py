"""SRANDMEMBER, ZRANDMEMBER and HRANDFIELD (spec/rules/sets.md SETS-11, zsets.md ZSET-18, hashes.md HASH-13,
environment.md ENV-RANDOM).

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
         ["SET", "str", "v"], ["HSET", "h", "f1", "v1", "f2", "v2", "f3", "v3"], ["HSET", "big", "f", "x" * 70, "g", "y"]]
DRAWS = [
    ["SRANDMEMBER", "s"], ["SRANDMEMBER", "s", "2"], ["SRANDMEMBER", "s", "10"], ["SRANDMEMBER", "s", "-5"],
    ["SRANDMEMBER", "i", "3"], ["SRANDMEMBER", "s", "0"], ["SRANDMEMBER", "nokey"], ["SRANDMEMBER", "nokey", "3"],
    ["SRANDMEMBER", "s", "x"], ["SRANDMEMBER", "s", "-9223372036854775808"], ["SRANDMEMBER", "s", "1", "2"],
    ["SRANDMEMBER", "str"], ["ZRANDMEMBER", "z"], ["ZRANDMEMBER", "z", "2"], ["ZRANDMEMBER", "z", "-4", "WITHSCORES"],
    ["ZRANDMEMBER", "z", "5", "withscores"], ["ZRANDMEMBER", "z", "0"], ["ZRANDMEMBER", "nokey"],
    ["ZRANDMEMBER", "nokey", "2"], ["ZRANDMEMBER", "z", "1", "junk"], ["ZRANDMEMBER", "z", "x"],
    ["ZRANDMEMBER", "z", "4611686018427387904", "WITHSCORES"], ["ZRANDMEMBER", "str", "1"],
    ["HRANDFIELD", "h"], ["HRANDFIELD", "h", "2"], ["HRANDFIELD", "h", "1"], ["HRANDFIELD", "h", "10"],
    ["HRANDFIELD", "h", "-5"], ["HRANDFIELD", "h", "2", "WITHVALUES"], ["HRANDFIELD", "h", "-4", "withvalues"],
    ["HRANDFIELD", "h", "9", "WITHVALUES"], ["HRANDFIELD", "h", "0"], ["HRANDFIELD", "h", "0", "WITHVALUES"],
    ["HRANDFIELD", "big", "-3", "WITHVALUES"], ["HRANDFIELD", "big", "5"], ["HRANDFIELD", "nokey"],
    ["HRANDFIELD", "nokey", "2"], ["HRANDFIELD", "nokey", "2", "WITHVALUES"], ["HRANDFIELD", "h", "x"],
    ["HRANDFIELD", "h", "1", "junk"], ["HRANDFIELD", "h", "1", "WITHVALUES", "x"],
    ["HRANDFIELD", "h", "-9223372036854775808"], ["HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"],
    ["HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES"], ["HRANDFIELD", "str"], ["HRANDFIELD", "str", "1"],
    ["HRANDFIELD", "x", "1", "junk"],
]


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("dialect", ALL_DIALECTS)
def test_random_draws(lists_real_servers, lists_reference_servers, dialect, proto):
    """SETS-11, ZSET-18, HASH-13, ENV-RANDOM: real draws conform; the reference's draws are ones the model accepts."""
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


def test_invalid_field_draws_are_refused():
    """HASH-13, ENV-RANDOM: HRANDFIELD's pairs must be the hash's, RESP3 nests them."""
    model = Server()
    model.execute(1, [b"HSET", b"h", b"a", b"1", b"b", b"2"])
    pairs = model.execute(1, [b"HRANDFIELD", b"h", b"-2", b"WITHVALUES"]).reply
    assert pairs == Array((Bulk(b"b"), Bulk(b"2"), Bulk(b"b"), Bulk(b"2")))
    assert pairs != Array((Bulk(b"b"), Bulk(b"1"), Bulk(b"a"), Bulk(b"1")))
    model.execute(1, [b"HELLO", b"3"])
    nested = model.execute(1, [b"HRANDFIELD", b"h", b"1", b"WITHVALUES"]).reply
    assert nested == Array((Array((Bulk(b"a"), Bulk(b"1"))),))
    assert nested != Array((Bulk(b"a"), Bulk(b"1")))
