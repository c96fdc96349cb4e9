"""Range queries and updates on the model's sorted maps that cost O(log n) however big the map is.

``SortedDict.irange`` slices its underlying lists when it is created: the
sublist the range starts in (up to a few thousand keys) and the list of every
sublist up to where it ends, so even ``next(irange(...))`` costs time that
grows with the dict. Redis walks its radix trees from a seek, and the model's
XRANGE ... COUNT, XPENDING ... COUNT, XREADGROUP and XAUTOCLAIM must cost what
they cost in Redis: a seek, then one step per key used. These helpers do that.

:func:`put` is ``sd[key] = value`` without the layers of Python calls and the
second hash lookup ``SortedDict`` makes; it appends in O(1) a key above every
other, which is how XADD adds its. :func:`discard_all` removes the head a trim
cuts off in one step rather than key by key. They keep the invariants
``SortedDict``'s own methods keep (balanced sublists, and the positional index
when one was built).

:class:`LazySortedDict` is the sorted map of the pending entries lists: a dict
walked in key order whose removals are lazy, so that XACK and the claims cost
what a hash table removal costs in Redis's radix tree, whatever the PEL's size.

They read and update the sorted key list of ``sortedcontainers`` 2.4 (``SortedDict._list``,
and its ``_lists`` of sorted sublists with their ``_maxes``); the version is
pinned in constraints.txt, and the checks below fail loudly on import if that
layout ever changes. An iterator must not outlive a change to its dict's keys.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from typing import Any

from sortedcontainers import SortedDict, SortedList

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


def _append_greatest(keys: SortedList, key: Any) -> bool:
    """Add ``key`` in O(1) if it is above every key of a non-empty ``keys``; False (nothing done) if not."""
    lists = keys._lists
    if not lists:
        return False
    last = lists[-1]
    if not key > last[-1]:
        return False
    last.append(key)
    keys._maxes[-1] = key
    keys._len += 1
    if keys._index or len(last) > keys._load << 1:
        keys._expand(len(lists) - 1)  # split the sublist, or count the key in the index
    return True


def put(sd: SortedDict, key: Any, value: Any) -> None:
    """``sd[key] = value``."""
    if key not in sd and not _append_greatest(sd._list, key):  # a new greatest key is appended
        sd._list.add(key)
    dict.__setitem__(sd, key, value)


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
    _drop_smallest(sorted_keys, len(keys))


def _drop_smallest(keys: SortedList, n: int) -> None:
    """Remove the ``n`` smallest keys of ``keys`` in O(n), keeping its invariants."""
    lists = keys._lists
    left = n
    while left and len(lists[0]) <= left:  # whole sublists
        left -= len(lists[0])
        del lists[0]
        del keys._maxes[0]
    if left:
        del lists[0][:left]
    keys._len -= n
    del keys._index[:]  # positions changed everywhere; rebuilt when next needed
    if len(lists) > 1 and len(lists[0]) <= keys._load >> 1:  # rebalance as SortedList._delete does
        lists[0].extend(lists[1])
        del lists[1]
        del keys._maxes[0]
        keys._expand(0)


def _fill(empty: SortedList, keys: list[Any]) -> None:
    """Put ``keys``, ascending and distinct, into an ``empty`` list, as ``SortedList.update`` would."""
    load = empty._load
    if len(keys) <= load:  # most PELs: one sublist, or none
        if keys:
            empty._lists.append(keys)
            empty._maxes.append(keys[-1])
    else:
        empty._lists.extend(keys[i:i + load] for i in range(0, len(keys), load))
        empty._maxes.extend(sub[-1] for sub in empty._lists)
    empty._len = len(keys)


_MIN_HOLES_TO_COMPACT = 64  # fewer holes than this are never worth a rebuild


class LazySortedDict(dict[Any, Any]):
    """A dict whose keys are also kept in ascending order, for walks and seeks; removals are lazy.

    Lookups, ``in``, ``len`` and equality are the dict's own and see only the
    keys present; iteration (``iter``, :meth:`keys`, :meth:`values`,
    :meth:`items`) is in key order, as a ``SortedDict``'s. Beside the dict, a
    ``SortedList`` orders the keys. Removing a key (:meth:`pop`, ``del``) takes
    it out of the dict only and leaves a *hole* in the ordered list, which walks
    and seeks step over: a removal from the middle of a large sorted list
    compares the key with others scattered all over memory, while a removal
    from the dict is one lookup, and a PEL's removals (XACK, claims, XGROUP
    DELCONSUMER) come in any order. Holes are kept in check two ways:

    - the holes at either end of the list are dropped as soon as they appear,
      so its first and last keys are present (:meth:`first`, :meth:`last`
      cost O(1)), and in-order removals, the common case, leave none;
    - once the holes outnumber the keys present (and ``_MIN_HOLES_TO_COMPACT``),
      the list is rebuilt without them: O(1) amortized per removal, and a walk
      steps over at most as many holes as the map holds keys.

    Re-adding a removed key fills its hole. Mutators other than
    ``d[key] = value``, :meth:`pop` and ``del d[key]`` are refused, since the
    dict's own would bypass the ordered list. No walk may be running while
    keys are added or removed.
    """

    __slots__ = ("_order", "_holes")

    def __init__(self) -> None:
        super().__init__()
        self._order = SortedList()  # the keys present and the holes, ascending
        self._holes = 0  # len(self._order) - len(self)

    @classmethod
    def from_sorted_items(cls, items: Iterable[tuple[Any, Any]]) -> LazySortedDict:
        """A map of ``items``, which must come in ascending key order, without repeats."""
        d = cls()
        dict.update(d, items)
        _fill(d._order, list(dict.keys(d)))
        return d

    def __setitem__(self, key: Any, value: Any) -> None:
        if key not in self and not _append_greatest(self._order, key):  # most deliveries append
            self._insert_key(key)
        dict.__setitem__(self, key, value)

    def _insert_key(self, key: Any) -> None:
        """Put a key that is not the greatest, or the first, into the ordered list, or fill its hole."""
        order = self._order
        if not order._lists:
            order.add(key)
            return
        pos = bisect_left(order._maxes, key)
        sub = order._lists[pos]
        i = bisect_left(sub, key)
        if sub[i] == key:  # the key's hole: it is present again
            self._holes -= 1
        else:
            sub.insert(i, key)
            order._len += 1
            order._expand(pos)

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """Remove ``key`` and return its value; ``default`` if absent (KeyError when not given)."""
        value = dict.pop(self, key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise KeyError(key)
            return default
        self._holes += 1
        order = self._order
        lists = order._lists
        if key == lists[0][0]:  # drop the holes at the start: the key's own, then any after it
            order._delete(0, 0)
            self._holes -= 1
            if lists and lists[0][0] not in self:
                self._drop_leading_holes()
        elif key == lists[-1][-1]:  # and at the end (the first key is present: the loop stops there)
            present = self.__contains__
            while not present(lists[-1][-1]):
                order._delete(len(lists) - 1, len(lists[-1]) - 1)
                self._holes -= 1
        if self._holes > _MIN_HOLES_TO_COMPACT and self._holes > len(self):
            self._compact()
        return value

    def __delitem__(self, key: Any) -> None:
        self.pop(key)

    def _drop_leading_holes(self) -> None:
        """Drop the run of holes the ordered list starts with, in one step however long it is."""
        present = self.__contains__
        leading = 0
        for key in chain.from_iterable(self._order._lists):
            if present(key):
                break
            leading += 1
        _drop_smallest(self._order, leading)
        self._holes -= leading

    def _compact(self) -> None:
        """Rebuild the ordered list with the keys present only."""
        keys = list(filter(self.__contains__, chain.from_iterable(self._order._lists)))
        self._order = SortedList()
        _fill(self._order, keys)
        self._holes = 0

    def first(self) -> Any:
        """The smallest key of a non-empty map."""
        return self._order._lists[0][0]

    def last(self) -> Any:
        """The largest key of a non-empty map."""
        return self._order._lists[-1][-1]

    def keys_from(self, low: Any) -> Iterator[Any]:
        """The keys ``>= low``, ascending: a seek, then one step per key or hole passed."""
        order = self._order
        lists = order._lists
        pos = bisect_left(order._maxes, low)
        if pos == len(lists):
            return iter(())
        sub = lists[pos]
        keys = chain(map(sub.__getitem__, range(bisect_left(sub, low), len(sub))),
                     chain.from_iterable(map(lists.__getitem__, range(pos + 1, len(lists)))))
        return filter(self.__contains__, keys) if self._holes else keys

    def first_from(self, low: Any) -> Any | None:
        """The smallest key ``>= low``, None if there is none."""
        order = self._order
        pos = bisect_left(order._maxes, low)
        if pos == len(order._maxes):
            return None
        sub = order._lists[pos]
        key = sub[bisect_left(sub, low)]
        if key in self:
            return key
        return next(self.keys_from(key))  # a hole: the last key is present, so a key follows it

    def __iter__(self) -> Iterator[Any]:
        keys = chain.from_iterable(self._order._lists)
        return filter(self.__contains__, keys) if self._holes else keys

    def keys(self) -> Iterator[Any]:  # type: ignore[override]  # an iterator in key order, not a view
        return iter(self)

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        return map(self.__getitem__, self)

    def items(self) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]
        get = self.__getitem__
        return ((key, get(key)) for key in self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.items())!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled and copied as its items in key order, without holes."""
        return (type(self), (), None, None, self.items())


def _refused(name: str) -> Any:
    def method(self: LazySortedDict, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"LazySortedDict.{name} would bypass its ordered keys")
    return method


for _name in ("setdefault", "update", "popitem", "clear", "__ior__", "__reversed__"):
    setattr(LazySortedDict, _name, _refused(_name))
