"""Range queries and updates on the model's ``SortedDict``s that cost O(log n) however big the dict is.

``SortedDict.irange`` slices its underlying lists when it is created: the
sublist the range starts in (up to a few thousand keys) and the list of every
sublist up to where it ends, so even ``next(irange(...))`` costs time that
grows with the dict. Redis walks its radix trees from a seek, and the model's
XRANGE ... COUNT, XPENDING ... COUNT, XREADGROUP and XAUTOCLAIM must cost what
they cost in Redis: a seek, then one step per key used. These helpers do that.

:func:`put` and :func:`discard` are ``sd[key] = value`` and ``sd.pop(key, None)``
without the layers of Python calls and the second hash lookup ``SortedDict``
makes; :func:`put` appends in O(1) a key above every other, which is how
XADD and most deliveries add theirs, and :func:`discard_all` removes the head
a trim cuts off in one step rather than key by key. They keep the invariants
``SortedDict``'s own methods keep (balanced sublists, and the positional index
when one was built).

They read and update the sorted key list of ``sortedcontainers`` 2.4 (``SortedDict._list``,
and its ``_lists`` of sorted sublists with their ``_maxes``); the version is
pinned in constraints.txt, and the checks below fail loudly on import if that
layout ever changes. An iterator must not outlive a change to its dict's keys.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import chain, islice
from typing import Any

from sortedcontainers import SortedDict

_probe = SortedDict({1: None})
if not (hasattr(_probe, "_list") and getattr(_probe._list, "_lists", None) == [[1]]
        and getattr(_probe._list, "_maxes", None) == [1]):
    raise ImportError("xspec.models.ordered needs the sortedcontainers 2.4 layout (see constraints.txt)")
del _probe


def first_key(sd: SortedDict) -> Any:
    """The smallest key of a non-empty dict (``sd.peekitem(0)[0]`` without the positional machinery)."""
    return sd._list._lists[0][0]


def last_key(sd: SortedDict) -> Any:
    """The largest key of a non-empty dict."""
    return sd._list._lists[-1][-1]


def first_key_from(sd: SortedDict, key: Any, *, inclusive: bool = True) -> Any | None:
    """The smallest key ``>= key`` (``> key`` when not ``inclusive``), None if there is none."""
    keys = sd._list
    bisect = bisect_left if inclusive else bisect_right
    pos = bisect(keys._maxes, key)
    if pos == len(keys._maxes):
        return None
    sub = keys._lists[pos]
    return sub[bisect(sub, key)]


def last_key_to(sd: SortedDict, key: Any, *, inclusive: bool = True) -> Any | None:
    """The largest key ``<= key`` (``< key`` when not ``inclusive``), None if there is none."""
    keys = sd._list
    lists = keys._lists
    pos = bisect_left(keys._maxes, key)  # every sublist before it holds only smaller keys
    if pos < len(lists):
        sub = lists[pos]
        i = (bisect_right if inclusive else bisect_left)(sub, key) - 1
        if i >= 0:
            return sub[i]
    return lists[pos - 1][-1] if pos else None


def keys_from(sd: SortedDict, low: Any, high: Any | None = None) -> Iterator[Any]:
    """The keys ``>= low`` and, unless ``high`` is None, ``<= high``, ascending."""
    keys = sd._list
    lists = keys._lists
    pos = bisect_left(keys._maxes, low)
    if pos == len(lists):
        return
    sub = lists[pos]
    i = bisect_left(sub, low)
    while True:
        n = len(sub)
        while i < n:
            key = sub[i]
            if high is not None and key > high:
                return
            yield key
            i += 1
        pos += 1
        if pos == len(lists):
            return
        sub = lists[pos]
        i = 0


def keys_down_from(sd: SortedDict, high: Any, low: Any) -> Iterator[Any]:
    """The keys ``<= high`` and ``>= low``, descending."""
    keys = sd._list
    lists = keys._lists
    if not lists:
        return
    pos = bisect_left(keys._maxes, high)  # every sublist after it holds only greater keys
    if pos == len(lists):
        pos -= 1
        sub = lists[pos]
        i = len(sub) - 1
    else:
        sub = lists[pos]
        i = bisect_right(sub, high) - 1
    while True:
        while i >= 0:
            key = sub[i]
            if key < low:
                return
            yield key
            i -= 1
        pos -= 1
        if pos < 0:
            return
        sub = lists[pos]
        i = len(sub) - 1


_MISSING = object()


def put(sd: SortedDict, key: Any, value: Any) -> None:
    """``sd[key] = value``."""
    if key not in sd:
        keys = sd._list
        lists = keys._lists
        last = lists[-1] if lists else None
        if last is not None and key > last[-1]:  # a new greatest key: append to the last sublist
            last.append(key)
            keys._maxes[-1] = key
            keys._len += 1
            if keys._index or len(last) > keys._load << 1:
                keys._expand(len(lists) - 1)  # split the sublist, or count the key in the index
        else:
            keys.add(key)
    dict.__setitem__(sd, key, value)


def discard(sd: SortedDict, key: Any) -> Any:
    """``sd.pop(key, None)``: remove ``key`` if present and return its value, else None."""
    value = dict.pop(sd, key, _MISSING)
    if value is _MISSING:
        return None
    keys = sd._list
    pos = bisect_left(keys._maxes, key)
    keys._delete(pos, bisect_left(keys._lists[pos], key))
    return value


def discard_all(sd: SortedDict, keys: list[Any]) -> None:
    """``del sd[key]`` for every key of ``keys`` (all present).

    O(len(keys)) when ``keys`` are the smallest keys of ``sd`` in ascending order,
    as a trim removes them; one O(log n) removal per key otherwise.
    """
    if not keys:
        return
    sorted_keys = sd._list
    lists = sorted_keys._lists
    if list(islice(chain.from_iterable(lists), len(keys))) != keys:
        for key in keys:
            del sd[key]
        return
    for key in keys:
        dict.__delitem__(sd, key)
    left = len(keys)
    while left and len(lists[0]) <= left:  # whole sublists
        left -= len(lists[0])
        del lists[0]
        del sorted_keys._maxes[0]
    if left:
        del lists[0][:left]
    sorted_keys._len -= len(keys)
    del sorted_keys._index[:]  # positions changed everywhere; rebuilt when next needed
    if len(lists) > 1 and len(lists[0]) <= sorted_keys._load >> 1:  # rebalance as SortedList._delete does
        lists[0].extend(lists[1])
        del lists[1]
        del sorted_keys._maxes[0]
        sorted_keys._expand(0)
