"""Handlers of the list commands (spec/rules/lists.md).

LPUSH, RPUSH, LPOP, RPOP, LLEN, LRANGE, LMOVE and the blocking BLPOP, BRPOP,
BLMOVE, BRPOPLPUSH and BLMPOP, as Redis 7.0.15 runs them. A list is a :class:`ListValue`, never
empty while stored: the command that takes its last element deletes the key.

A list made at a key (dbAdd) signals the key as ready for clients blocked on
lists (BLIST-1); 7.0 and 6.2 then serve those clients FIFO from the list, each
popping one element, until it is empty (BLIST-3); 7.2+ runs each one's
command again (BLIST-DIALECT-2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from xspec.models.clock import Duration, Instant
from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.server import BLOCKED, Call, CommandError, HandlerResult, command
from xspec.models.state import ListValue
from xspec.spec import commands as table
from xspec.spec.errors import (
    COUNT_NOT_POSITIVE,
    TIMEOUT_NEGATIVE,
    TIMEOUT_NOT_FLOAT,
    TIMEOUT_OUT_OF_RANGE,
)
from xspec.spec.floats import string2ld, timeout_ms
from xspec.spec.ids import I64_MAX, c_string, parse_ll
from xspec.spec.resp import NULL_BULK, Array, Bulk, Error, Int, NullArray, Reply
from xspec.spec.zsets import COUNT_NOT_ABOVE_ZERO, NUMKEYS_NOT_POSITIVE

HEAD, TAIL = "left", "right"


def list_at(call: Call, key: bytes) -> ListValue | None:
    """The list at ``key``, None if missing; WRONGTYPE for another type (LIST-1)."""
    return call.typed(key, ListValue)


def pop_one(value: ListValue, where: str) -> bytes:
    return value.items.popleft() if where == HEAD else value.items.pop()


def push_one(value: ListValue, element: bytes, where: str) -> None:
    if where == HEAD:
        value.items.appendleft(element)
    else:
        value.items.append(element)


def create_list(call: Call, key: bytes) -> ListValue:
    """``dbAdd`` of a new, empty list: clients blocked on lists at ``key`` are signalled (BLIST-1)."""
    value = ListValue()
    call.db[key] = value
    call.ready(key, "list")
    notify_new(call, key)  # NOTIFY-3
    return value


def _pushed_event(call: Call, key: bytes, where: str) -> None:
    notify_keyspace_event(call, "l", "lpush" if where == HEAD else "rpush", key)  # NOTIFY-4


def _popped_event(call: Call, key: bytes, value: ListValue, where: str) -> None:
    """The pop's event, then ``del`` when the list is gone (NOTIFY-4)."""
    notify_keyspace_event(call, "l", "lpop" if where == HEAD else "rpop", key)
    if not value.items:
        notify_keyspace_event(call, "g", "del", key)


def removed_elements(call: Call, key: bytes, value: ListValue, where: str) -> None:
    """``listElementsRemoved``: an emptied list is deleted; the key is touched for WATCH (LIST-4)."""
    if not value.items:
        del call.db[key]
    _popped_event(call, key, value, where)
    call.modified(key)


# -- pushes ------------------------------------------------------------------------------
def push_command(call: Call, where: str) -> Reply:
    key = call.argv[1]
    value = list_at(call, key)  # LIST-1
    if value is None:
        value = create_list(call, key)  # LIST-2
    for element in call.argv[2:]:  # LIST-2: one at a time, so LPUSH reverses its arguments
        push_one(value, element, where)
    call.modified(key)
    _pushed_event(call, key, where)
    call.changed(len(call.argv) - 2)  # STATS-4: one change per element
    call.propagate_verbatim()  # LIST-2
    return Int(len(value.items))


@command("lpush")
def lpush(call: Call) -> Reply:
    return push_command(call, HEAD)


@command("rpush")
def rpush(call: Call) -> Reply:
    return push_command(call, TAIL)


# -- pops ----------------------------------------------------------------------------------
def pop_command(call: Call, where: str) -> Reply:
    argv = call.argv
    if len(argv) > 3:  # LIST-3: the table's arity is -2, the command takes one count at most
        raise CommandError(table.arity_error(call.spec))
    count: int | None = None
    if len(argv) == 3:
        count = parse_ll(argv[2])
        if count is None or count < 0:  # LIST-3
            raise CommandError(COUNT_NOT_POSITIVE)
    key = argv[1]
    value = list_at(call, key)
    if value is None:  # LIST-3
        return NULL_BULK if count is None else NullArray()
    if count == 0:  # LIST-3: nothing is removed, nothing propagated
        return Array(())
    if count is None:
        element = pop_one(value, where)
        removed_elements(call, key, value, where)
        call.changed()  # STATS-4
        call.propagate_verbatim()
        return Bulk(element)
    taken = [pop_one(value, where) for _ in range(min(count, len(value.items)))]
    removed_elements(call, key, value, where)
    call.changed(len(taken))  # STATS-4: one change per element
    call.propagate_verbatim()  # LIST-3
    return Array(tuple(Bulk(e) for e in taken))


@command("lpop")
def lpop(call: Call) -> Reply:
    return pop_command(call, HEAD)


@command("rpop")
def rpop(call: Call) -> Reply:
    return pop_command(call, TAIL)


# -- reads -----------------------------------------------------------------------------------
@command("llen")
def llen(call: Call) -> Reply:
    return Int(call.size(call.argv[1], ListValue))  # LIST-5


@command("lrange")
def lrange(call: Call) -> Reply:
    start, end = parse_ll(call.argv[2]), parse_ll(call.argv[3])
    if start is None or end is None:  # LIST-6: both indexes before the key
        raise CommandError(table.NOT_INTEGER)
    value = list_at(call, call.argv[1])
    if value is None:
        return Array(())
    n = len(value.items)
    if start < 0:  # LIST-6
        start = max(n + start, 0)
    if end < 0:
        end = n + end
    if start > end or start >= n:
        return Array(())
    end = min(end, n - 1)
    items = value.items
    return Array(tuple(Bulk(items[i]) for i in range(start, end + 1)))


# -- LMOVE -----------------------------------------------------------------------------------
def parse_where(arg: bytes) -> str:
    """LEFT or RIGHT, case-insensitive (as C compares them: up to a NUL); else a syntax error (LIST-7)."""
    word = c_string(arg).lower()
    if word == b"right":
        return TAIL
    if word == b"left":
        return HEAD
    raise CommandError(table.SYNTAX)


def move(call: Call, src: bytes, source: ListValue, dst: bytes, wherefrom: str, whereto: str) -> bytes:
    """``lmoveGenericCommand`` on a non-empty source: pop, push, delete an emptied source (LIST-8)."""
    target = list_at(call, dst)  # LIST-8: WRONGTYPE for the destination before anything moves
    element = pop_one(source, wherefrom)
    if target is None:
        target = create_list(call, dst)
    call.modified(dst)
    push_one(target, element, whereto)
    _pushed_event(call, dst, whereto)
    if not source.items:
        del call.db[src]
    _popped_event(call, src, source, wherefrom)
    call.modified(src)
    call.changed()  # STATS-4
    return element


@command("lmove")
def lmove(call: Call) -> Reply:
    wherefrom, whereto = parse_where(call.argv[3]), parse_where(call.argv[4])  # LIST-7
    src, dst = call.argv[1], call.argv[2]
    source = list_at(call, src)
    if source is None:  # LIST-8
        return NULL_BULK
    element = move(call, src, source, dst, wherefrom, whereto)
    call.propagate_verbatim()  # LIST-8
    return Bulk(element)


# -- blocking ----------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockedPop:
    """What a client blocked in BLPOP, BRPOP, BLMOVE, BRPOPLPUSH or BLMPOP waits to do."""

    wherefrom: str
    whereto: str | None = None  # BLMOVE and BRPOPLPUSH only
    dst: bytes | None = None  # BLMOVE and BRPOPLPUSH only
    count: int | None = None  # BLMPOP only: how many elements at most, a nested reply
    rpoplpush: bool = False  # BRPOPLPUSH: propagated as RPOPLPUSH


def parse_timeout(call: Call, arg: bytes) -> tuple[Duration, Instant | None]:
    """``getTimeoutFromObjectOrReply`` in seconds: the timeout in ms and the clock reading of a
    positive one (BLIST-2)."""
    seconds = string2ld(arg)
    if seconds is None:
        raise CommandError(TIMEOUT_NOT_FLOAT)
    dialect = call.server.dialect
    if dialect.block_timeout_range_check and seconds * 1000 > I64_MAX:  # BLIST-DIALECT-1
        raise CommandError(TIMEOUT_OUT_OF_RANGE)
    ms = timeout_ms(seconds, dialect.block_timeout_round_up)  # LIST-DIALECT-1: 6.2 truncates
    if ms is None or ms < 0:  # BLIST-2: a product beyond a long long converts to LLONG_MIN
        raise CommandError(TIMEOUT_NEGATIVE)
    if ms == 0:
        return Duration(0), None
    now = call.now()
    if dialect.block_timeout_range_check and Duration(ms) > Instant(I64_MAX) - now:  # BLIST-DIALECT-1
        raise CommandError(TIMEOUT_OUT_OF_RANGE)
    return Duration(ms), now


def blocking_pop(call: Call, where: str) -> HandlerResult:
    keys = call.argv[1:-1]
    timeout, read_at = parse_timeout(call, call.argv[-1])  # BLIST-2: before any key
    for key in keys:  # BLIST-4: the first key holding a list is served at once
        value = list_at(call, key)
        if value is None:
            continue
        element = pop_one(value, where)
        removed_elements(call, key, value, where)
        call.changed()  # STATS-4
        call.propagate([b"LPOP" if where == HEAD else b"RPOP", key])  # BLIST-4
        return Array((Bulk(key), Bulk(element)))
    if not call.can_block:  # BLIST-5
        return NullArray()
    return call.block(list(keys), timeout, BlockedPop(where), _serve_function(call), NullArray(),
                      read_at=read_at, kind="list")  # BLIST-6


@command("blpop")
def blpop(call: Call) -> HandlerResult:
    return blocking_pop(call, HEAD)


@command("brpop")
def brpop(call: Call) -> HandlerResult:
    return blocking_pop(call, TAIL)


@command("blmove")
def blmove(call: Call) -> HandlerResult:
    wherefrom, whereto = parse_where(call.argv[3]), parse_where(call.argv[4])  # LIST-7
    timeout, read_at = parse_timeout(call, call.argv[5])  # BLIST-2
    src, dst = call.argv[1], call.argv[2]
    source = list_at(call, src)
    if source is None:
        if not call.can_block:  # BLIST-5
            return NULL_BULK
        # BLIST-6; BLIST-8: a timed-out BLMOVE gets a null array, like every blocked list client
        return call.block([src], timeout, BlockedPop(wherefrom, whereto, dst), _serve_function(call),
                          NullArray(), read_at=read_at, kind="list")
    element = move(call, src, source, dst, wherefrom, whereto)
    call.propagate([b"LMOVE", src, dst, call.argv[3], call.argv[4]])  # BLIST-4: as typed
    return Bulk(element)


@command("brpoplpush")
def brpoplpush(call: Call) -> HandlerResult:
    timeout, read_at = parse_timeout(call, call.argv[3])  # BLIST-11: BLIST-2's timeout
    src, dst = call.argv[1], call.argv[2]
    source = list_at(call, src)
    if source is None:
        if not call.can_block:  # BLIST-5
            return NULL_BULK
        return call.block([src], timeout, BlockedPop(TAIL, HEAD, dst, rpoplpush=True), _serve_function(call),
                          NullArray(), read_at=read_at, kind="list")  # BLIST-6, BLIST-8
    element = move(call, src, source, dst, TAIL, HEAD)
    call.propagate([b"RPOPLPUSH", src, dst])  # BLIST-11
    return Bulk(element)


def parse_lmpop(call: Call, numkeys_at: int) -> tuple[list[bytes], str, int]:
    """``lmpopGenericCommand``'s parsing: numkeys, LEFT|RIGHT, COUNT (LIST-16)."""
    argv = call.argv
    numkeys = parse_ll(argv[numkeys_at])
    if numkeys is None or numkeys < 1:  # LIST-16
        raise CommandError(NUMKEYS_NOT_POSITIVE)
    where_at = numkeys_at + numkeys + 1
    if where_at >= len(argv):
        raise CommandError(table.SYNTAX)
    side = c_string(argv[where_at]).lower()
    if side not in (b"left", b"right"):
        raise CommandError(table.SYNTAX)
    count = -1
    j = where_at + 1
    while j < len(argv):
        if count == -1 and c_string(argv[j]).lower() == b"count" and len(argv) - 1 - j > 0:
            count = parse_ll(argv[j + 1]) or 0
            if count < 1:
                raise CommandError(COUNT_NOT_ABOVE_ZERO)
            j += 2
        else:
            raise CommandError(table.SYNTAX)
    keys = argv[numkeys_at + 1:numkeys_at + 1 + numkeys]
    return keys, HEAD if side == b"left" else TAIL, 1 if count == -1 else count


def pop_range(call: Call, key: bytes, value: ListValue, where: str, count: int) -> Reply:
    """``listPopRangeAndReplyWithKey``: up to ``count`` elements from one end, replied as ``[key, [e, …]]``,
    the emptied list deleted and the key touched (LIST-16, BLIST-12)."""
    taken = [pop_one(value, where) for _ in range(min(count, len(value.items)))]
    removed_elements(call, key, value, where)
    call.changed(len(taken))  # STATS-4
    return Array((Bulk(key), Array(tuple(Bulk(e) for e in taken))))


@command("blmpop")
def blmpop(call: Call) -> HandlerResult:
    keys, where, count = parse_lmpop(call, 2)  # BLIST-12: the timeout is read after the other arguments
    timeout, read_at = parse_timeout(call, call.argv[1])
    for key in keys:  # BLIST-12: the first key holding a list, WRONGTYPE for another type before it
        value = list_at(call, key)
        if value is None:
            continue
        call.propagate([b"LPOP" if where == HEAD else b"RPOP", key, min(count, len(value.items))])
        return pop_range(call, key, value, where, count)
    if not call.can_block:  # BLIST-5
        return NullArray()
    return call.block(list(keys), timeout, BlockedPop(where, count=count), _serve_function(call), NullArray(),
                      read_at=read_at, kind="list")  # BLIST-6, BLIST-8


def _serve_function(call: Call) -> Callable[[Call, bytes], Reply | None]:
    return serve_by_reexecution if call.server.dialect.blocked_reexecution else serve_blocked


def serve_blocked(call: Call, key: bytes) -> Reply | None:
    """7.0, 6.2: ``serveClientBlockedOnList``: a list client is served one element (BLIST-3).

    None leaves it blocked (the key holds no list any more: an earlier client
    emptied it). A BLMOVE whose destination holds another type gets WRONGTYPE
    and takes nothing (BLIST-7).
    """
    value = call.lookup(key)
    if not isinstance(value, ListValue) or not value.items:
        return None
    blocked = call.client.blocked
    assert blocked is not None
    b: BlockedPop = blocked.payload
    if b.count is not None:  # BLIST-12: propagated before the pop, with the number it takes
        call.propagate([b"LPOP" if b.wherefrom == HEAD else b"RPOP", key, min(b.count, len(value.items))])
        return pop_range(call, key, value, b.wherefrom, b.count)
    if b.dst is None:
        call.propagate([b"LPOP" if b.wherefrom == HEAD else b"RPOP", key])  # BLIST-3
        element = pop_one(value, b.wherefrom)
        reply: Reply = Array((Bulk(key), Bulk(element)))
        notify_keyspace_event(call, "l", "lpop" if b.wherefrom == HEAD else "rpop", key)  # NOTIFY-4
    else:
        target = call.lookup(b.dst)
        if target is not None and not isinstance(target, ListValue):  # BLIST-7
            return Error(table.WRONGTYPE)
        assert b.whereto is not None
        element = pop_one(value, b.wherefrom)
        if target is None:
            target = create_list(call, b.dst)
        call.modified(b.dst)
        push_one(target, element, b.whereto)
        _pushed_event(call, b.dst, b.whereto)
        notify_keyspace_event(call, "l", "lpop" if b.wherefrom == HEAD else "rpop", key)  # NOTIFY-4
        if b.rpoplpush:  # BLIST-11
            call.propagate([b"RPOPLPUSH", key, b.dst])
        else:
            call.propagate([b"LMOVE", key, b.dst, b.wherefrom.encode(), b.whereto.encode()])  # BLIST-3
        reply = Bulk(element)
    if not value.items:  # BLIST-3: deleted without touching WATCH (the push already did)
        del call.db[key]
        notify_keyspace_event(call, "g", "del", key)  # NOTIFY-4
    return reply


def serve_by_reexecution(call: Call, key: bytes) -> Reply | None:
    """7.2+: the key holds a list: run the blocked command again (BLIST-DIALECT-2)."""
    if not isinstance(call.lookup(key), ListValue):
        return None
    blocked = call.client.blocked
    assert blocked is not None
    b: BlockedPop = blocked.payload
    if b.rpoplpush:
        handler = brpoplpush
    elif b.count is not None:
        handler = blmpop
    elif b.dst is not None:
        handler = blmove
    else:
        handler = blpop if b.wherefrom == HEAD else brpop
    return run_again(call, handler)


def run_again(call: Call, handler: Callable[[Call], HandlerResult]) -> Reply | None:
    """7.2+'s re-execution of a blocked client's command (BLOCK-DIALECT-2): unblocked, it runs again; one
    that finds nothing blocks again, at the back of the queues, with its first deadline (None: still blocked)."""
    blocked = call.client.blocked
    assert blocked is not None
    call.server._unblock(call.client)
    try:
        result = handler(call)
    except CommandError as e:
        return Error(e.text)
    if result is BLOCKED:
        assert call.client.blocked is not None
        call.client.blocked.deadline = blocked.deadline
        return None
    return cast(Reply, result)
