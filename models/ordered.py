"""Range queries on the model's ``SortedDict``s that cost O(log n) however big the dict is.

``SortedDict.irange`` slices its underlying lists when it is created: the
sublist the range starts in (up to a few thousand keys) and the list of every
sublist up to where it ends, so even ``next(irange(...))`` costs time that
grows with the dict. Redis walks its radix trees from a seek, and the model's
XRANGE ... COUNT, XPENDING ... COUNT, XREADGROUP and XAUTOCLAIM must cost what
they cost in Redis: a seek, then one step per key used. These helpers do that.

They read the sorted key list of ``sortedcontainers`` 2.4 (``SortedDict._list``,
and its ``_lists`` of sorted sublists with their ``_maxes``); the version is
pinned in constraints.txt, and the checks below fail loudly on import if that
layout ever changes. An iterator must not outlive a change to its dict's keys.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
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
