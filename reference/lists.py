"""The reference server's list commands: LPUSH RPUSH LPOP RPOP LLEN LRANGE LMOVE BLPOP BRPOP BLMOVE.

Written apart from the model (spec/rules/lists.md). A list is a :class:`RefList`,
a deque of bytes from head to tail, never stored empty. Clients blocked on a
list wait with kind ``list``; 7.0 and 6.2 serve each one element at a time when
a list appears at the key (BLIST-3), 7.2+ run their command again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TypeVar

from xspec.reference.api import Blocked, ReplyError
from xspec.reference.core import Context
from xspec.reference.notify import notify_keyspace_event, notify_new
from xspec.reference.values import bulk_reply, handler_table, int_reply, value_at
from xspec.spec import commands as table
from xspec.spec.errors import (
    COUNT_NOT_POSITIVE,
    TIMEOUT_NEGATIVE,
    TIMEOUT_NOT_FLOAT,
    TIMEOUT_OUT_OF_RANGE,
)
from xspec.spec.floats import string2ld, timeout_ms
from xspec.spec.ids import I64_MAX, c_string, string2ll
from xspec.spec.resp import EMPTY_ARRAY, NULL_ARRAY, NULL_BULK, Array, Bulk, Error, Int, Reply
from xspec.spec.zsets import COUNT_NOT_ABOVE_ZERO, NUMKEYS_NOT_POSITIVE

__all__ = ["HANDLERS", "RefList"]

_T = TypeVar("_T")


def _python_class(cls: type[_T]) -> type[_T]:
    """Keep ``cls`` a Python class in the mypyc build (a class with a decorator of its own is not made
    native): a native class cannot extend a C type such as ``deque`` (its objects would be laid out wrongly)."""
    return cls


@_python_class
class RefList(deque[bytes]):
    """A list value: bytes from head (index 0) to tail."""

    kind = "list"
    encoding = "quicklist"


HANDLERS, _handler = handler_table()


def _get(ctx: Context, key: bytes) -> RefList | None:
    return value_at(ctx.db, key, RefList)  # LIST-1: WRONGTYPE for another type


def _new(ctx: Context, key: bytes) -> RefList:
    fresh = RefList()
    ctx.db[key] = fresh
    ctx.ready(key, "list")  # BLIST-1: dbAdd signals list readers
    notify_new(ctx, key)  # NOTIFY-3
    return fresh


def _popped(ctx: Context, key: bytes, left: bool, gone: bool) -> None:
    """NOTIFY-4: the pop's event, then ``del`` for an emptied list."""
    notify_keyspace_event(ctx, "l", "lpop" if left else "rpop", key)
    if gone:
        notify_keyspace_event(ctx, "g", "del", key)


def _take(lst: RefList, left: bool) -> bytes:
    return lst.popleft() if left else lst.pop()


def _put(lst: RefList, value: bytes, left: bool) -> None:
    if left:
        lst.appendleft(value)
    else:
        lst.append(value)


# -- LPUSH, RPUSH -------------------------------------------------------------------------------
def _push(ctx: Context, left: bool) -> Reply:
    key = ctx.argv[1]
    lst = _get(ctx, key)
    if lst is None:
        lst = _new(ctx, key)
    (lst.extendleft if left else lst.extend)(ctx.argv[2:])  # LIST-2
    ctx.modified(key)
    notify_keyspace_event(ctx, "l", "lpush" if left else "rpush", key)  # NOTIFY-4
    ctx.changed(len(ctx.argv) - 2)  # STATS-4: one change per element
    return int_reply(len(lst))


@_handler("lpush")
def lpush(ctx: Context) -> Reply:
    return _push(ctx, True)


@_handler("rpush")
def rpush(ctx: Context) -> Reply:
    return _push(ctx, False)


# -- LPOP, RPOP ---------------------------------------------------------------------------------
def _pop(ctx: Context, left: bool, name: str) -> Reply:
    argv = ctx.argv
    if len(argv) > 3:
        raise ReplyError(f"ERR wrong number of arguments for '{name}' command")  # LIST-3
    count = None
    if len(argv) == 3:
        count = string2ll(argv[2])
        if count is None or count < 0:
            raise ReplyError(COUNT_NOT_POSITIVE)
    key = argv[1]
    lst = _get(ctx, key)
    if lst is None:
        return NULL_ARRAY if count is not None else NULL_BULK
    if count == 0:
        return EMPTY_ARRAY
    n = 1 if count is None else min(count, len(lst))
    out = [_take(lst, left) for _ in range(n)]
    if not lst:
        del ctx.db[key]
    _popped(ctx, key, left, not lst)
    ctx.modified(key)  # LIST-4
    ctx.changed(n)
    return bulk_reply(out[0]) if count is None else Array(tuple(map(Bulk, out)))


@_handler("lpop")
def lpop(ctx: Context) -> Reply:
    return _pop(ctx, True, "lpop")


@_handler("rpop")
def rpop(ctx: Context) -> Reply:
    return _pop(ctx, False, "rpop")


# -- LLEN, LRANGE -------------------------------------------------------------------------------
@_handler("llen")
def llen(ctx: Context) -> Reply:
    lst = _get(ctx, ctx.argv[1])
    return Int(len(lst) if lst else 0)  # LIST-5


@_handler("lrange")
def lrange(ctx: Context) -> Reply:
    first, last = string2ll(ctx.argv[2]), string2ll(ctx.argv[3])
    if first is None or last is None:
        raise ReplyError(table.NOT_INTEGER)  # LIST-6
    lst = _get(ctx, ctx.argv[1])
    if not lst:
        return EMPTY_ARRAY
    size = len(lst)
    lo = first + size if first < 0 else first
    hi = last + size if last < 0 else last
    lo = max(lo, 0)
    hi = min(hi, size - 1)
    if lo > hi:
        return EMPTY_ARRAY
    return Array(tuple(Bulk(lst[i]) for i in range(lo, hi + 1)))


# -- LMOVE, BLMOVE ------------------------------------------------------------------------------
def _side(arg: bytes) -> bool:
    """True for LEFT, False for RIGHT (LIST-7)."""
    word = c_string(arg).lower()
    if word in (b"left", b"right"):
        return word == b"left"
    raise ReplyError(table.SYNTAX)


def _transfer(ctx: Context, src: bytes, source: RefList, dst: bytes, target: RefList | None, from_left: bool,
              to_left: bool) -> bytes:
    """One element from ``source`` to ``target`` (made when missing); an emptied source goes."""
    value = _take(source, from_left)
    if target is None:
        target = _new(ctx, dst)
    ctx.modified(dst)
    _put(target, value, to_left)
    notify_keyspace_event(ctx, "l", "lpush" if to_left else "rpush", dst)  # NOTIFY-4
    if not source:
        del ctx.db[src]
    _popped(ctx, src, from_left, not source)
    return value


def _move(ctx: Context, src: bytes, source: RefList, dst: bytes, from_left: bool, to_left: bool) -> bytes:
    value = _transfer(ctx, src, source, dst, _get(ctx, dst), from_left, to_left)  # LIST-8
    ctx.modified(src)
    ctx.changed()
    return value


@_handler("lmove")
def lmove(ctx: Context) -> Reply:
    from_left, to_left = _side(ctx.argv[3]), _side(ctx.argv[4])
    source = _get(ctx, ctx.argv[1])
    if source is None:
        return NULL_BULK  # LIST-8
    return Bulk(_move(ctx, ctx.argv[1], source, ctx.argv[2], from_left, to_left))


# -- blocking -----------------------------------------------------------------------------------
def block_timeout(ctx: Context, arg: bytes) -> tuple[int, int | None]:
    """BLIST-2: the timeout in ms, and the clock reading a positive one was taken at."""
    seconds = string2ld(arg)
    if seconds is None:
        raise ReplyError(TIMEOUT_NOT_FLOAT)
    checked = ctx.dialect.block_timeout_range_check
    if checked and seconds * 1000 > I64_MAX:
        raise ReplyError(TIMEOUT_OUT_OF_RANGE)
    ms = timeout_ms(seconds, ctx.dialect.block_timeout_round_up)
    if ms is None or ms < 0:
        raise ReplyError(TIMEOUT_NEGATIVE)
    if not ms:
        return 0, None
    now = ctx.now_ms()
    if checked and ms > I64_MAX - now:
        raise ReplyError(TIMEOUT_OUT_OF_RANGE)
    return ms, now


def _wait(ctx: Context, keys: list[bytes], timeout: int, read_at: int | None,
          serve: Callable[[Context, bytes], Reply | None],
          again: Callable[[Context, int | None], Reply | Blocked]) -> Blocked:
    """Block on ``keys``: 7.0/6.2 ``serve`` the client from the signalled key (BLIST-3); 7.2+ run ``again`` (BLIST-DIALECT-2)
    (with the first deadline, which a command blocking again keeps)."""
    if ctx.dialect.blocked_reexecution:
        deadline = None if read_at is None else read_at + timeout

        def rerun(ctx: Context, key: bytes) -> Reply | None:
            if type(ctx.db.get(key)) is not RefList:
                return None
            result = again(ctx, deadline)
            return None if isinstance(result, Blocked) else result

        return ctx.block(keys, timeout, rerun, NULL_ARRAY, read_at, kind="list")
    return ctx.block(keys, timeout, serve, NULL_ARRAY, read_at, kind="list")


def _bpop(ctx: Context, left: bool, deadline: int | None = None) -> Reply | Blocked:
    keys = ctx.argv[1:-1]
    timeout, read_at = block_timeout(ctx, ctx.argv[-1])
    if deadline is not None:
        read_at = deadline - timeout
    for key in keys:  # BLIST-4
        lst = _get(ctx, key)
        if lst:
            value = _take(lst, left)
            if not lst:
                del ctx.db[key]
            _popped(ctx, key, left, not lst)
            ctx.modified(key)
            ctx.changed()
            return Array((Bulk(key), Bulk(value)))
    if not ctx.can_block:
        return NULL_ARRAY  # BLIST-5

    def serve(ctx: Context, key: bytes) -> Reply | None:  # BLIST-3
        lst = ctx.db.get(key)
        if type(lst) is not RefList or not lst:
            return None
        value = _take(lst, left)
        if not lst:
            del ctx.db[key]
        _popped(ctx, key, left, not lst)
        return Array((Bulk(key), Bulk(value)))

    return _wait(ctx, list(keys), timeout, read_at, serve, lambda ctx, deadline: _bpop(ctx, left, deadline))


@_handler("blpop")
def blpop(ctx: Context) -> Reply | Blocked:
    return _bpop(ctx, True)


@_handler("brpop")
def brpop(ctx: Context) -> Reply | Blocked:
    return _bpop(ctx, False)


@_handler("blmove")
def blmove(ctx: Context, deadline: int | None = None) -> Reply | Blocked:
    return _blocking_move(ctx, _side(ctx.argv[3]), _side(ctx.argv[4]), ctx.argv[5], deadline, blmove)


@_handler("brpoplpush")
def brpoplpush(ctx: Context, deadline: int | None = None) -> Reply | Blocked:
    return _blocking_move(ctx, False, True, ctx.argv[3], deadline, brpoplpush)  # BLIST-11: BLMOVE RIGHT LEFT


def _blocking_move(ctx: Context, from_left: bool, to_left: bool, timeout_arg: bytes, deadline: int | None,
                   again: Callable[..., Reply | Blocked]) -> Reply | Blocked:
    """BLMOVE and BRPOPLPUSH: move one element now, or block on the source until one can be moved."""
    timeout, read_at = block_timeout(ctx, timeout_arg)
    if deadline is not None:
        read_at = deadline - timeout
    src, dst = ctx.argv[1], ctx.argv[2]
    source = _get(ctx, src)
    if source is not None:
        return Bulk(_move(ctx, src, source, dst, from_left, to_left))
    if not ctx.can_block:
        return NULL_BULK  # BLIST-5

    def serve(ctx: Context, key: bytes) -> Reply | None:  # BLIST-3, BLIST-7
        lst = ctx.db.get(key)
        if type(lst) is not RefList or not lst:
            return None
        target = ctx.db.get(dst)
        if target is not None and type(target) is not RefList:
            return Error(table.WRONGTYPE)
        return Bulk(_transfer(ctx, key, lst, dst, target, from_left, to_left))

    return _wait(ctx, [src], timeout, read_at, serve, again)


def mpop_words(ctx: Context, numkeys_at: int) -> tuple[list[bytes], bool, int]:
    """LMPOP's and BLMPOP's numkeys, side and COUNT (LIST-16): the keys, whether from the left, the count."""
    argv = ctx.argv
    n = string2ll(argv[numkeys_at])
    if n is None or n < 1:
        raise ReplyError(NUMKEYS_NOT_POSITIVE)
    at = n + numkeys_at + 1
    if at >= len(argv) or c_string(argv[at]).lower() not in (b"left", b"right"):
        raise ReplyError(table.SYNTAX)
    count = 0
    j = at + 1
    while j < len(argv):
        if not count and c_string(argv[j]).lower() == b"count" and j + 1 < len(argv):
            count = string2ll(argv[j + 1]) or 0
            if count < 1:
                raise ReplyError(COUNT_NOT_ABOVE_ZERO)
            j += 2
        else:
            raise ReplyError(table.SYNTAX)
    return argv[numkeys_at + 1:at], c_string(argv[at]).lower() == b"left", count or 1


def _take_range(ctx: Context, key: bytes, lst: RefList, left: bool, count: int) -> Reply:
    """BLIST-12: up to ``count`` elements as ``[key, [e, …]]``; the key touched, an emptied list gone."""
    got = [_take(lst, left) for _ in range(min(count, len(lst)))]
    if not lst:
        del ctx.db[key]
    _popped(ctx, key, left, not lst)
    ctx.modified(key)
    ctx.changed(len(got))
    return Array((Bulk(key), Array(tuple(map(Bulk, got)))))


@_handler("blmpop")
def blmpop(ctx: Context, deadline: int | None = None) -> Reply | Blocked:
    keys, left, count = mpop_words(ctx, 2)  # BLIST-12: the timeout after the other words
    timeout, read_at = block_timeout(ctx, ctx.argv[1])
    if deadline is not None:
        read_at = deadline - timeout
    for key in keys:
        lst = _get(ctx, key)
        if lst:
            return _take_range(ctx, key, lst, left, count)
    if not ctx.can_block:
        return NULL_ARRAY  # BLIST-5

    def serve(ctx: Context, key: bytes) -> Reply | None:  # BLIST-12
        lst = ctx.db.get(key)
        if type(lst) is not RefList or not lst:
            return None
        return _take_range(ctx, key, lst, left, count)

    return _wait(ctx, list(keys), timeout, read_at, serve, blmpop)
