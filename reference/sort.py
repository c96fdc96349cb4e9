"""The reference server's SORT and SORT_RO (spec/rules/sort.md), written apart from the model.

Elements are sorted with Python's stable sort on Redis's comparison (numeric with ties by the
element's bytes, or ALPHA), then windowed by LIMIT and mapped through GET, or stored as a list.
"""

from __future__ import annotations

import math
from typing import Any

from xspec.reference.api import ReplyError
from xspec.reference.core import Context, value_kind
from xspec.reference.lists import RefList
from xspec.reference.notify import notify_keyspace_event, notify_new
from xspec.reference.values import handler_table
from xspec.spec import commands as table
from xspec.spec.doubles import strtod
from xspec.spec.ids import c_string, string2ll
from xspec.spec.resp import NULL_BULK, Array, Bulk, Int, Reply

__all__ = ["HANDLERS"]

HANDLERS, _handler = handler_table()


def _deref(ctx: Context, pattern: bytes, element: bytes) -> bytes | None:
    """SORT-3: ``#``, ``prefix*suffix`` (a string) or ``prefix*suffix->field`` (a hash field)."""
    head = c_string(pattern)
    if head == b"#":
        return element
    star = head.find(b"*")
    if star == -1:
        return None
    arrow = pattern.find(b"->", star + 1)
    has_field = arrow != -1 and arrow + 2 < len(pattern)
    key = pattern[:star] + element + (pattern[star + 1:arrow] if has_field else pattern[star + 1:])
    found: Any = ctx.db.get(key)
    if has_field:
        return found.get(pattern[arrow + 2:]) if value_kind(found) == "hash" else None
    return found if type(found) is bytes else None


def _sort(ctx: Context, readonly: bool) -> Reply:
    argv = ctx.argv
    desc = alpha = nosort = False
    offset, count = 0, -1
    store = by = None
    gets: list[bytes] = []
    j = 2
    while j < len(argv):  # SORT-1
        w = c_string(argv[j]).lower()
        more = len(argv) - 1 - j
        if w in (b"asc", b"desc"):
            desc = w == b"desc"
        elif w == b"alpha":
            alpha = True
        elif w == b"limit" and more >= 2:
            a, b = string2ll(argv[j + 1]), string2ll(argv[j + 2])
            if a is None or b is None:
                raise ReplyError(table.NOT_INTEGER)
            offset, count = a, b
            j += 2
        elif w == b"store" and more >= 1 and not readonly:
            store = argv[j + 1]
            j += 1
        elif w == b"by" and more >= 1:
            by = argv[j + 1]
            nosort = b"*" not in c_string(by)
            j += 1
        elif w == b"get" and more >= 1:
            gets.append(argv[j + 1])
            j += 1
        else:
            raise ReplyError(table.SYNTAX)
        j += 1
    src: Any = ctx.db.get(argv[1])
    kind = value_kind(src)
    if kind not in (None, "list", "set", "zset"):  # SORT-2
        raise ReplyError(table.WRONGTYPE)
    if nosort and kind == "set" and store is not None:
        nosort, alpha, by = False, True, None
    if kind == "zset":
        src.encoding = "skiplist"
        items = [m for m, _ in src.walk()]
    elif kind == "set":
        items = src.listed()
    else:
        items = list(src or ())
    size = len(items)
    lo = min(max(offset, 0), size)  # SORT-4
    n = min(max(count, -1), size)
    hi = size - 1 if n < 0 else lo + n - 1
    if lo >= size:
        lo, hi = size - 1, size - 2
    hi = min(hi, size - 1)
    if nosort:
        if kind in ("list", "zset") and desc:
            items.reverse()
    elif alpha:
        def alpha_key(e: bytes) -> tuple[int, bytes]:
            if by is None:
                return 1, (e if store is not None else c_string(e))
            v = _deref(ctx, by, e)
            return (0, b"") if v is None else (1, v if store is not None else c_string(v))

        items.sort(key=alpha_key, reverse=desc)
    else:
        scored = []
        for e in items:
            v = e if by is None else _deref(ctx, by, e)
            score = 0.0
            if v is not None:
                score, used, erange = strtod(v)
                if used != len(c_string(v)) or erange or math.isnan(score):
                    raise ReplyError("ERR One or more scores can't be converted into double")  # SORT-3
            scored.append((score, e))
        scored.sort(reverse=desc)
        items = [e for _, e in scored]
    window = items[lo:hi + 1] if hi >= lo else []
    out: list[bytes | None] = []
    for e in window:
        if gets:
            out += [_deref(ctx, p, e) for p in gets]
        else:
            out.append(e)
    if store is None:
        return Array(tuple(NULL_BULK if v is None else Bulk(v) for v in out))
    old = ctx.db.get(store)  # SORT-6
    if out:
        ctx.db[store] = RefList(v or b"" for v in out)
        if old is None:
            ctx.ready(store, "list")
            notify_new(ctx, store)
            ctx.modified(store)
        elif value_kind(old) == "stream":
            ctx.deleted(store)
        else:
            ctx.modified(store)
        notify_keyspace_event(ctx, "l", "sortstore", store)
        ctx.changed(len(out))
    elif old is not None:
        del ctx.db[store]
        ctx.deleted(store)
        notify_keyspace_event(ctx, "g", "del", store)
        ctx.changed()
    return Int(len(out))


@_handler("sort")
def sort(ctx: Context) -> Reply:
    return _sort(ctx, False)


@_handler("sort_ro")
def sort_ro(ctx: Context) -> Reply:
    return _sort(ctx, True)
