"""LZF (spec/lzf.py) against Redis 7.0.15: DUMP of a string is byte for byte Redis's, compression included.

A string longer than 20 bytes is stored LZF-compressed when that saves at least
4 bytes (DUMP-2), so a DUMP payload holds exactly what ``lzf_compress`` made of
it, with liblzf's hash and match lengths. Strings of a few repeated words reach
every kind of back-reference (short, long, overlapping its own output, cut at
the 264-byte limit and at the end of the input).
"""

from __future__ import annotations

import redis as redis_py
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.real_servers import RealRedis
from xspec.spec import lzf, rdb

_WORDS = st.lists(st.binary(min_size=1, max_size=40).filter(lambda w: not w[:1].isdigit()), min_size=1, max_size=6)


@st.composite
def compressible(draw: st.DrawFn) -> bytes:
    """Bytes made of a few words repeated, with a random byte now and then (never all digits)."""
    words = draw(_WORDS)
    picks = draw(st.lists(st.integers(0, len(words)), min_size=1, max_size=400))
    noise = draw(st.binary(min_size=1, max_size=1))
    return b"x" + b"".join(words[i] if i < len(words) else noise for i in picks)


@st.composite
def runs(draw: st.DrawFn) -> bytes:
    """Runs of one short word, long enough for matches past the 264-byte limit, between other bytes."""
    parts = draw(st.lists(st.tuples(st.binary(min_size=1, max_size=5), st.integers(1, 300)), min_size=1,
                          max_size=4))
    return b"x" + b"".join(word * times + b"|" for word, times in parts)


STRINGS = st.one_of(compressible(), runs(), st.binary(min_size=21, max_size=300).map(lambda b: b"x" + b))


@settings(max_examples=150, deadline=None)
@given(value=STRINGS)
def test_a_strings_dump_is_redis_s(redis_server: RealRedis, value: bytes) -> None:
    client = redis_py.Redis(redis_server.host, redis_server.port)
    try:
        client.set("k", value)
        assert client.dump("k") == rdb.dump_payload(value, 10)
    finally:
        client.close()


@settings(max_examples=300, deadline=None)
@given(value=STRINGS, room=st.integers(-8, 64))
def test_what_is_compressed_decompresses_to_itself(value: bytes, room: int) -> None:
    packed = lzf.compress(value, len(value) + room)
    if packed is not None:
        assert len(packed) <= len(value) + room
        assert lzf.decompress(packed, len(value)) == value
