"""The reference server's sorted set keeps its order up to date only when the order is read
(reference/zsets.py ``RefZSet``), and ZADD reads a score of digits alone without the full
``strtod``: both checked here against the plain definitions, whatever the interleaving of
writes and reads."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from xspec.reference.zsets import RefZSet, _by_rank
from xspec.spec.doubles import read_double

MEMBERS = st.sampled_from([b"m%d" % i for i in range(16)])
SCORES = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, math.inf, -math.inf, 1e300])
OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), MEMBERS, SCORES, st.booleans()),
    st.tuples(st.just("drop"), MEMBERS),
    st.tuples(st.just("pop"), st.booleans()),
    st.tuples(st.just("walk"), st.booleans()),
    st.tuples(st.just("rank"), MEMBERS),
    st.tuples(st.just("range"), st.integers(-10, 10), st.integers(-10, 10), st.booleans()),
), max_size=50)


def in_order(scores: dict[bytes, float]) -> list[tuple[bytes, float]]:
    return sorted(scores.items(), key=lambda p: (p[1], p[0]))


def same(got: list[tuple[bytes, float]], want: list[tuple[bytes, float]]) -> bool:
    """Equal pairs, the sign of a zero score included."""
    return [(m, s, math.copysign(1, s)) for m, s in got] == [(m, s, math.copysign(1, s)) for m, s in want]


def by_rank(pairs: list[tuple[bytes, float]], start: int, stop: int, reverse: bool) -> list[tuple[bytes, float]]:
    """ZRANGE by rank (ZSET-9) on a plain list."""
    n = len(pairs)
    start, stop = (start + n if start < 0 else start), (stop + n if stop < 0 else stop)
    start = max(0, start)
    if start > stop or start >= n:
        return []
    return (pairs[::-1] if reverse else pairs)[start:min(stop, n - 1) + 1]


@settings(max_examples=200, deadline=None)
@given(st.lists(SCORES, max_size=16), OPS, st.sampled_from(["listpack", "skiplist"]))
def test_the_order_read_is_the_order_of_the_scores(first: list[float], ops: list[tuple], encoding: str) -> None:
    s = RefZSet(encoding)
    want: dict[bytes, float] = {}
    for i, score in enumerate(first):  # then read: a few writes after it are moved one by one
        s.put(b"m%d" % i, score, False)
        want[b"m%d" % i] = score
    assert same(list(s.walk()), in_order(want))
    for op in ops:
        if op[0] == "put":
            _, m, score, new_way = op
            if new_way and m not in s.score:
                s.add_new(m, score, False)
            else:
                s.put(m, score, False)
            want[m] = score
        elif op[0] == "drop" and op[1] in want:
            s.drop(op[1])
            del want[op[1]]
        elif op[0] == "pop" and want:
            m, score = in_order(want)[-1 if op[1] else 0]
            assert same([s.pop_end(op[1])], [(m, want.pop(m))])
        elif op[0] == "walk":
            assert same(list(s.walk(op[1])), in_order(want)[::-1] if op[1] else in_order(want))
        elif op[0] == "rank" and op[1] in want:
            assert s.ranked().index((want[op[1]], op[1])) == [m for m, _ in in_order(want)].index(op[1])
        elif op[0] == "range" and want:
            _, start, stop, reverse = op
            assert same(_by_rank(s, start, stop, reverse), by_rank(in_order(want), start, stop, reverse))
        assert s.score == want and len(s) == len(want) and bool(s) == bool(want)
    assert same(list(s.walk()), in_order(want))


def test_many_writes_then_a_read_sort_again() -> None:
    s = RefZSet("skiplist")
    for i in range(1000):
        s.put(b"m%d" % (i % 300), float((i * 7919) % 1000), False)
    for i in range(0, 300, 3):
        s.drop(b"m%d" % i)
    assert [m for m, _ in s.walk()] == [m for m, _ in in_order(s.score)]
    s.put(b"m1", -5.0, False)  # one write after the read: moved alone
    assert s.ranked()[0] == (-5.0, b"m1") and len(s.ranked()) == len(s)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="0123456789", min_size=1, max_size=15))
def test_a_score_of_digits_alone_reads_as_strtod_reads_it(text: str) -> None:
    # reference/zsets.py _float reads such a score with float() and errno 0
    for fast in (False, True):
        assert read_double(text.encode(), fast) == (float(text.encode()), False)
