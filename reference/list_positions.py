"""The reference server's list commands by position and value (spec/rules/lists.md, LIST-9 to LIST-16).

LPUSHX RPUSHX LINSERT LINDEX LSET LTRIM LPOS LREM RPOPLPUSH LMPOP, written apart
from the model on the list values of :mod:`xspec.reference.lists`.
"""

from __future__ import annotations

from xspec.reference.api import ReplyError
from xspec.reference.core import Context
from xspec.reference.lists import RefList, lmove, lpush, mpop_words, rpush
from xspec.reference.notify import notify_keyspace_event
from xspec.reference.values import handler_table, value_at
from xspec.spec import commands as table
from xspec.spec.ids import c_string, string2ll
from xspec.spec.resp import EMPTY_ARRAY, NULL_ARRAY, NULL_BULK, OK, Array, Bulk, Int, Reply

__all__ = ["HANDLERS"]

HANDLERS, _handler = handler_table()


def _list(ctx: Context, key: bytes) -> RefList | None:
    return value_at(ctx.db, key, RefList)  # LIST-1


def _int(arg: bytes) -> int:
    v = string2ll(arg)
    if v is None:
        raise ReplyError(table.NOT_INTEGER)
    return v


def _gone_if_empty(ctx: Context, key: bytes, lst: RefList) -> None:
    if not lst:
        del ctx.db[key]
        notify_keyspace_event(ctx, "g", "del", key)  # NOTIFY-4


@_handler("lpushx")
def lpushx(ctx: Context) -> Reply:
    return lpush(ctx) if _list(ctx, ctx.argv[1]) is not None else Int(0)  # LIST-9


@_handler("rpushx")
def rpushx(ctx: Context) -> Reply:
    return rpush(ctx) if _list(ctx, ctx.argv[1]) is not None else Int(0)  # LIST-9


@_handler("linsert")
def linsert(ctx: Context) -> Reply:
    where = c_string(ctx.argv[2]).lower()
    if where != b"before" and where != b"after":  # LIST-10
        raise ReplyError(table.SYNTAX)
    key = ctx.argv[1]
    lst = _list(ctx, key)
    if lst is None:
        return Int(0)
    for i, element in enumerate(lst):
        if element == ctx.argv[3]:
            lst.insert(i + (where == b"after"), ctx.argv[4])
            ctx.modified(key)
            notify_keyspace_event(ctx, "l", "linsert", key)
            ctx.changed()
            return Int(len(lst))
    return Int(-1)


def _position(lst: RefList, arg: bytes) -> int:
    i = _int(arg)
    return i + len(lst) if i < 0 else i


@_handler("lindex")
def lindex(ctx: Context) -> Reply:
    lst = _list(ctx, ctx.argv[1])  # LIST-11
    if lst is None:
        return NULL_BULK
    i = _position(lst, ctx.argv[2])
    return Bulk(lst[i]) if 0 <= i < len(lst) else NULL_BULK


@_handler("lset")
def lset(ctx: Context) -> Reply:
    key = ctx.argv[1]
    lst = _list(ctx, key)
    if lst is None:  # LIST-11
        raise ReplyError(table.NO_SUCH_KEY)
    i = _position(lst, ctx.argv[2])
    if not 0 <= i < len(lst):
        raise ReplyError("ERR index out of range")
    lst[i] = ctx.argv[3]
    ctx.modified(key)
    notify_keyspace_event(ctx, "l", "lset", key)
    ctx.changed()
    return OK


@_handler("ltrim")
def ltrim(ctx: Context) -> Reply:
    lo, hi = _int(ctx.argv[2]), _int(ctx.argv[3])  # LIST-12
    key = ctx.argv[1]
    lst = _list(ctx, key)
    if lst is None:
        return OK
    size = len(lst)
    lo = max(lo + size if lo < 0 else lo, 0)
    hi = min(hi + size if hi < 0 else hi, size - 1)
    keep = list(lst)[lo:hi + 1] if lo <= hi else []
    dropped = size - len(keep)
    lst.clear()
    lst.extend(keep)
    notify_keyspace_event(ctx, "l", "ltrim", key)
    _gone_if_empty(ctx, key, lst)
    ctx.modified(key)
    ctx.changed(dropped)
    return OK


@_handler("lpos")
def lpos(ctx: Context) -> Reply:
    argv = ctx.argv
    rank, count, maxlen = 1, None, 0
    for j in range(3, len(argv), 2):  # LIST-13
        opt = c_string(argv[j]).lower()
        if j + 1 >= len(argv):
            raise ReplyError(table.SYNTAX)
        if opt == b"rank":
            rank = _int(argv[j + 1])
            if not rank:
                raise ReplyError(ctx.dialect.lpos_rank_zero_error)  # LIST-DIALECT-2
        elif opt in (b"count", b"maxlen"):
            n = string2ll(argv[j + 1])
            if n is None or n < 0:
                raise ReplyError(f"ERR {opt.decode().upper()} can't be negative")
            if opt == b"count":
                count = n
            else:
                maxlen = n
        else:
            raise ReplyError(table.SYNTAX)
    lst = _list(ctx, argv[1])
    if lst is None:
        return NULL_BULK if count is None else EMPTY_ARRAY
    size = len(lst)
    walk = range(size) if rank > 0 else range(size - 1, -1, -1)
    matches: list[int] = []
    seen = 0
    for scanned, i in enumerate(walk):
        if maxlen and scanned >= maxlen:
            break
        if lst[i] == argv[2]:
            seen += 1
            if seen >= abs(rank):
                matches.append(i)
                if count is None or (count and len(matches) == count):
                    break
    if count is None:
        return Int(matches[0]) if matches else NULL_BULK
    return Array(tuple(map(Int, matches)))


@_handler("lrem")
def lrem(ctx: Context) -> Reply:
    n = _int(ctx.argv[2])  # LIST-14
    key = ctx.argv[1]
    lst = _list(ctx, key)
    if lst is None:
        return Int(0)
    target = ctx.argv[3]
    order = list(range(len(lst)))
    if n < 0:
        order.reverse()
    hits = []
    for i in order:
        if lst[i] == target:
            hits.append(i)
            if n and len(hits) == abs(n):
                break
    for i in sorted(hits, reverse=True):
        del lst[i]
    if hits:
        ctx.modified(key)
        notify_keyspace_event(ctx, "l", "lrem", key)
        ctx.changed(len(hits))
    _gone_if_empty(ctx, key, lst)
    return Int(len(hits))


@_handler("rpoplpush")
def rpoplpush(ctx: Context) -> Reply:
    argv = ctx.argv
    ctx.argv = [argv[0], argv[1], argv[2], b"RIGHT", b"LEFT"]  # LIST-15
    try:
        return lmove(ctx)
    finally:
        ctx.argv = argv


@_handler("lmpop")
def lmpop(ctx: Context) -> Reply:
    keys, left, count = mpop_words(ctx, 1)  # LIST-16
    for key in keys:
        lst = _list(ctx, key)
        if not lst:
            continue
        got = [lst.popleft() if left else lst.pop() for _ in range(min(count, len(lst)))]
        notify_keyspace_event(ctx, "l", "lpop" if left else "rpop", key)
        _gone_if_empty(ctx, key, lst)
        ctx.modified(key)
        ctx.changed(len(got))
        return Array((Bulk(key), Array(tuple(map(Bulk, got)))))
    return NULL_ARRAY
