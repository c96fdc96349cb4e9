"""LazySortedDict (the PELs' map) behaves as a SortedDict: holes never show, and stay bounded."""

from __future__ import annotations

import copy
import pickle
from bisect import bisect_left

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xspec.models.ordered import _MIN_HOLES_TO_COMPACT, LazySortedDict

ops = st.lists(st.tuples(st.sampled_from(["set", "pop", "del", "seek"]), st.integers(0, 300)), max_size=400)


def small_sublists(d: LazySortedDict) -> LazySortedDict:
    d._order._reset(4)  # many sublists, so seeks and end trims cross sublist boundaries
    return d


def check_same(d: LazySortedDict, ref: dict[int, int]) -> None:
    keys = sorted(ref)
    assert len(d) == len(ref) and dict(d) == ref
    assert list(d) == keys and list(d.keys()) == keys
    assert list(d.items()) == [(k, ref[k]) for k in keys] and list(d.values()) == [ref[k] for k in keys]
    if keys:
        assert d.first() == keys[0] and d.last() == keys[-1]
    d._order._check()
    order = list(d._order)
    assert d._holes == len(order) - len(ref) and set(ref) <= set(order)
    assert not order or (order[0] in ref and order[-1] in ref)  # no hole at either end
    assert d._holes <= max(len(ref), _MIN_HOLES_TO_COMPACT)


@settings(max_examples=300)
@given(initial=st.lists(st.integers(0, 300), unique=True, max_size=120), steps=ops)
def test_lazy_sorted_dict_agrees_with_a_sorted_dict(initial, steps):
    d = small_sublists(LazySortedDict.from_sorted_items([(k, k) for k in sorted(initial)]))
    ref = {k: k for k in initial}
    for op, k in steps:
        if op == "set":
            d[k] = -k
            ref[k] = -k
        elif op == "pop":
            assert d.pop(k, None) == ref.pop(k, None)
        elif op == "del":
            if k in ref:
                del d[k]
                del ref[k]
            else:
                with pytest.raises(KeyError):
                    del d[k]
        else:
            keys = sorted(ref)
            after = keys[bisect_left(keys, k):]
            assert list(d.keys_from(k)) == after
            assert d.first_from(k) == (after[0] if after else None)
        check_same(d, ref)


def test_removals_in_any_order_leave_holes_that_walks_skip_and_a_rebuild_drops():
    n = 1000
    d = LazySortedDict.from_sorted_items([(k, str(k)) for k in range(n)])
    for k in range(1, n - 1, 2):  # every odd key but the last: none at an end, so all become holes
        d.pop(k)
    assert d._holes == (n - 2) // 2 and list(d) == [k for k in range(n) if k % 2 == 0] + [n - 1]
    assert list(d.keys_from(1)) == list(range(2, n, 2)) + [n - 1]
    for k in range(2, n - 1, 4):  # now holes outnumber the keys present: rebuilt without them
        d.pop(k)
    assert d._holes < len(d)
    check_same(d, {k: str(k) for k in range(n) if k % 4 == 0 or k == n - 1})


def test_a_removed_key_added_again_fills_its_hole():
    d = LazySortedDict.from_sorted_items([(k, k) for k in range(10)])
    d.pop(5)
    d[5] = "back"
    assert d._holes == 0 and list(d.items())[5] == (5, "back")


def test_removing_the_ends_drops_the_holes_next_to_them():
    d = LazySortedDict.from_sorted_items([(k, k) for k in range(10)])
    for k in (1, 2, 3, 7, 8):
        d.pop(k)
    d.pop(0)
    d.pop(9)
    assert d._holes == 0 and list(d._order) == [4, 5, 6]
    for k in (5, 4, 6):
        d.pop(k)
    assert not d and not d._order and d._holes == 0


def test_pickled_and_copied_as_its_items_without_holes():
    d = LazySortedDict.from_sorted_items([(k, [k]) for k in range(6)])
    d.pop(3)
    for clone in (pickle.loads(pickle.dumps(d)), copy.deepcopy(d), copy.copy(d)):
        assert type(clone) is LazySortedDict and clone._holes == 0
        assert list(clone.items()) == list(d.items())
    shared = [d, d]
    twins = copy.deepcopy(shared)
    assert twins[0] is twins[1]


def test_mutators_that_would_bypass_the_order_are_refused():
    d = LazySortedDict()
    for call in (lambda: d.setdefault(1, 1), lambda: d.update({1: 1}), d.popitem, d.clear, lambda: reversed(d)):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(KeyError):
        d.pop(1)
    assert d.pop(1, "default") == "default"
