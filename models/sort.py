"""SORT and SORT_RO (spec/rules/sort.md): a list, set or sorted set sorted by itself or by other keys.

As Redis 7.0.15's ``sortCommandGeneric`` runs it: options first, then the key; the elements
compared numerically (``strtod``; ties by the elements' bytes) or with ALPHA as strings, by
themselves or by the keys a BY pattern names; LIMIT's window, GET's patterns, STORE's list. What
Redis leaves to its sort's order of equal ALPHA keys, and to a set's or a hash table's walk, the
model leaves open: the reply then equals every order Redis could give (:class:`TiedOrder`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.server import Call, CommandError, HandlerResult, PreRendered, command
from xspec.models.state import HashValue, ListValue, SetValue, ZSetValue
from xspec.spec import commands as table
from xspec.spec.doubles import strtod
from xspec.spec.ids import c_string, parse_ll
from xspec.spec.resp import NULL_BULK, Array, Bulk, Int, Reply

NOT_A_DOUBLE = "ERR One or more scores can't be converted into double"


class TiedOrder(Array):
    """The window ``[start, end]`` of a sequence of tie groups, each group's units in any order (SORT-5).

    A unit is the items one element contributes (the element, or its GET values). Equal to an array
    whose units, position by position, come from the group the sorted order puts there: whole groups
    inside the window in any order, a group cut by the window's edge any of its units."""

    __slots__ = ("groups", "start", "end", "width")
    groups: tuple[tuple[tuple[Reply, ...], ...], ...]
    start: int
    end: int
    width: int

    @classmethod
    def of(cls, groups: Sequence[Sequence[tuple[Reply, ...]]], start: int, end: int, width: int) -> TiedOrder:
        flat = [u for g in groups for u in g][start:end + 1]
        order = cls(tuple(item for unit in flat for item in unit))
        object.__setattr__(order, "groups", tuple(tuple(g) for g in groups))
        object.__setattr__(order, "start", start)
        object.__setattr__(order, "end", end)
        object.__setattr__(order, "width", width)
        return order

    def __eq__(self, other: object) -> bool:
        if type(other) is not Array or len(other.items) != len(self.items):
            return False
        got = [tuple(other.items[i:i + self.width]) for i in range(0, len(other.items), self.width)]
        position = 0
        for group in self.groups:
            lo, hi = max(position, self.start), min(position + len(group) - 1, self.end)
            if lo <= hi:
                taken = got[lo - self.start:hi - self.start + 1]
                pool = [repr(u) for u in group]
                for unit in taken:
                    if repr(unit) not in pool:
                        return False
                    pool.remove(repr(unit))
            position += len(group)
        return True

    def __hash__(self) -> int:
        return hash((self.groups, self.start, self.end))


def lookup_by_pattern(call: Call, pattern: bytes, element: bytes) -> bytes | None:
    """``lookupKeyByPattern`` (SORT-3): ``#`` is the element; the first ``*`` of a pattern is replaced by it,
    and ``->field`` after it names a hash field; a pattern without ``*`` names nothing."""
    if c_string(pattern) == b"#":
        return element
    star = c_string(pattern).find(b"*")
    if star < 0:
        return None
    arrow = pattern.find(b"->", star + 1)
    field: bytes | None = None
    if arrow >= 0 and arrow + 2 < len(pattern):
        field = pattern[arrow + 2:]
        key = pattern[:star] + element + pattern[star + 1:arrow]
    else:
        key = pattern[:star] + element + pattern[star + 1:]
    value = call.db.get(key)
    if field is not None:
        return value.fields.get(field) if isinstance(value, HashValue) else None
    return value if isinstance(value, bytes) else None


def elements_of(value: ListValue | SetValue | ZSetValue | None) -> tuple[list[bytes], bool]:
    """The elements SORT starts from, and whether their order is Redis's (a hash table's walk is not)."""
    if value is None:
        return [], True
    if isinstance(value, ListValue):
        return list(value.items), True
    if isinstance(value, SetValue):
        return value.ordered(), value.encoding != "hashtable"
    return [m for _, m in value.order], False  # SORT-2: a sorted set is walked through its hash table


def sort_command(call: Call, readonly: bool) -> HandlerResult:
    argv = call.argv
    desc = alpha = dontsort = False
    start_arg, count_arg = 0, -1
    store: bytes | None = None
    by: bytes | None = None
    gets: list[bytes] = []
    j = 2
    while j < len(argv):  # SORT-1
        word = c_string(argv[j]).lower()
        left = len(argv) - j - 1
        if word == b"asc":
            desc = False
        elif word == b"desc":
            desc = True
        elif word == b"alpha":
            alpha = True
        elif word == b"limit" and left >= 2:
            first, second = parse_ll(argv[j + 1]), parse_ll(argv[j + 2])
            if first is None or second is None:
                raise CommandError(table.NOT_INTEGER)
            start_arg, count_arg = first, second
            j += 2
        elif word == b"store" and left >= 1 and not readonly:  # SORT-DIALECT-1: SORT_RO is 7.0's
            store = argv[j + 1]
            j += 1
        elif word == b"by" and left >= 1:
            by = argv[j + 1]
            dontsort = b"*" not in c_string(by)
            j += 1
        elif word == b"get" and left >= 1:
            gets.append(argv[j + 1])
            j += 1
        else:
            raise CommandError(table.SYNTAX)
        j += 1
    value = call.db.get(argv[1])
    if value is not None and not isinstance(value, ListValue | SetValue | ZSetValue):  # SORT-2
        raise CommandError(table.WRONGTYPE)
    if dontsort and isinstance(value, SetValue) and store is not None:  # SORT-2: a stored set is sorted
        dontsort, alpha, by = False, True, None
    if isinstance(value, ZSetValue):  # SORT-2: SORT turns a listpack into a skiplist, for good
        value.encoding = "skiplist"
    elements, known = elements_of(value)
    n = len(elements)
    start = min(max(start_arg, 0), n)  # SORT-4
    count = min(max(count_arg, -1), n)
    end = n - 1 if count < 0 else start + count - 1
    if start >= n:
        start, end = n - 1, n - 2
    end = min(end, n - 1)
    groups: list[list[bytes]]
    if dontsort:
        if isinstance(value, ZSetValue) or isinstance(value, ListValue):  # SORT-2: their own order
            ordered = elements[::-1] if desc else elements
            groups = [[e] for e in ordered]
        else:
            groups = [[e] for e in elements] if known else [elements]
    else:
        groups = ranked(call, elements, by, alpha, desc, store is not None)
    width = max(len(gets), 1)

    def unit(element: bytes, stored: bool) -> tuple[Reply, ...]:
        if not gets:
            return (Bulk(element),)
        found = [lookup_by_pattern(call, p, element) for p in gets]
        return tuple(Bulk(v) if v is not None else (Bulk(b"") if stored else NULL_BULK) for v in found)

    units = [[unit(e, store is not None) for e in g] for g in groups]
    if store is None:
        flat = [u for g in units for u in g][start:end + 1] if end >= start else []
        if all(len(g) == 1 for g in units) or end < start:
            return Array(tuple(item for u in flat for item in u))
        return PreRendered(TiedOrder.of(units, start, end, width))
    return store_sorted(call, store, units, start, end)


def ranked(call: Call, elements: list[bytes], by: bytes | None, alpha: bool, desc: bool,
           binary: bool) -> list[list[bytes]]:
    """The elements sorted (SORT-3), as groups of elements whose order Redis leaves open (SORT-5)."""
    keys: list[object] = []
    failed = False
    for e in elements:
        source = e if by is None else lookup_by_pattern(call, by, e)
        if alpha:
            keys.append(None if by is not None and source is None else (source if binary else c_string(source or b"")))
            continue
        if source is None:
            keys.append(0.0)
            continue
        score, consumed, erange = strtod(source)
        if consumed != len(c_string(source)) or erange or math.isnan(score):
            failed = True
        keys.append(score)
    if failed:  # SORT-3
        raise CommandError(NOT_A_DOUBLE)
    if alpha and by is None:
        order = sorted(range(len(elements)), key=lambda i: elements[i] if binary else c_string(elements[i]),
                       reverse=desc)
        return [[elements[i]] for i in order]
    if not alpha:
        order = sorted(range(len(elements)), key=lambda i: (keys[i], elements[i]), reverse=desc)
        return [[elements[i]] for i in order]
    missing = [i for i in range(len(elements)) if keys[i] is None]
    present = sorted((i for i in range(len(elements)) if keys[i] is not None), key=lambda i: keys[i])  # type: ignore[arg-type, return-value]
    runs: list[list[int]] = [missing] if missing else []
    for i in present:
        if runs and runs[-1] and keys[runs[-1][0]] == keys[i]:
            runs[-1].append(i)
        else:
            runs.append([i])
    if desc:
        runs.reverse()
    return [[elements[i] for i in run] for run in runs]


def store_sorted(call: Call, dst: bytes, units: list[list[tuple[Reply, ...]]], start: int, end: int) -> HandlerResult:
    """STORE: the window as a list at ``dst`` (SORT-6)."""
    choose = call.server.chooser
    if choose is not None:  # SORT-7: an open order is one the server picks; the checker searches them
        units = [_permuted(g, choose) for g in units]
    flat = [u for g in units for u in g][start:end + 1] if end >= start else []
    items = [i.value for u in flat for i in u if isinstance(i, Bulk)]
    old = call.db.get(dst)
    if items:
        call.db[dst] = ListValue(items)
        if old is None:
            call.ready(dst, "list")  # BLIST-1: setKey's dbAdd
            notify_new(call, dst)
        else:
            call.deleted(dst, old)
        call.modified(dst)
        notify_keyspace_event(call, "l", "sortstore", dst)  # NOTIFY-4
        call.changed(len(items))
        call.propagate_verbatim()
    elif old is not None:
        del call.db[dst]
        call.deleted(dst, old)
        call.modified(dst)
        notify_keyspace_event(call, "g", "del", dst)
        call.changed()
        call.propagate_verbatim()
    return Int(len(items))


def _permuted(group: list[tuple[Reply, ...]], choose: Callable[[int], int]) -> list[tuple[Reply, ...]]:
    """One order of a tie group, unit by unit from the chooser (SORT-7)."""
    rest = list(group)
    out: list[tuple[Reply, ...]] = []
    while rest:
        out.append(rest.pop(choose(len(rest)) if len(rest) > 1 else 0))
    return out


@command("sort")
def sort(call: Call) -> HandlerResult:
    return sort_command(call, readonly=False)


@command("sort_ro")
def sort_ro(call: Call) -> HandlerResult:
    return sort_command(call, readonly=True)
