"""Handlers of the list commands that work by position or value (spec/rules/lists.md, LIST-9 to LIST-16).

LPUSHX, RPUSHX, LINSERT, LINDEX, LSET, LTRIM, LPOS, LREM, RPOPLPUSH and LMPOP,
as Redis 7.0.15 runs them. The pushes, pops, LRANGE, LMOVE and the blocking pops
are in :mod:`xspec.models.lists`, whose helpers these share.
"""

from __future__ import annotations

from xspec.models.lists import (
    HEAD,
    TAIL,
    list_at,
    move,
    parse_lmpop,
    pop_range,
    push_command,
)
from xspec.models.notify import notify_keyspace_event
from xspec.models.server import Call, CommandError, command
from xspec.models.state import ListValue
from xspec.spec import commands as table
from xspec.spec.ids import c_string, parse_ll
from xspec.spec.resp import NULL_BULK, OK, Array, Bulk, Int, NullArray, Reply

OUT_OF_RANGE = "ERR index out of range"
COUNT_NEGATIVE = "ERR COUNT can't be negative"
MAXLEN_NEGATIVE = "ERR MAXLEN can't be negative"


def parse_long(arg: bytes) -> int:
    value = parse_ll(arg)
    if value is None:
        raise CommandError(table.NOT_INTEGER)
    return value


def parse_not_negative(arg: bytes, error: str) -> int:
    """``getPositiveLongFromObjectOrReply`` with a message: 0 or more, ``error`` otherwise."""
    value = parse_ll(arg)
    if value is None or value < 0:
        raise CommandError(error)
    return value


def index_of(value: ListValue, index: int) -> int | None:
    """A LINDEX/LSET index (negative from the tail) as a position, None when outside the list."""
    n = len(value.items)
    position = index + n if index < 0 else index
    return position if 0 <= position < n else None


@command("lpushx")
def lpushx(call: Call) -> Reply:
    if list_at(call, call.argv[1]) is None:  # LIST-9: no list, nothing is created
        return Int(0)
    return push_command(call, HEAD)


@command("rpushx")
def rpushx(call: Call) -> Reply:
    if list_at(call, call.argv[1]) is None:  # LIST-9
        return Int(0)
    return push_command(call, TAIL)


@command("linsert")
def linsert(call: Call) -> Reply:
    argv = call.argv
    side = c_string(argv[2]).lower()
    if side not in (b"before", b"after"):  # LIST-10: the side before the key
        raise CommandError(table.SYNTAX)
    key = argv[1]
    value = list_at(call, key)
    if value is None:
        return Int(0)
    try:
        at = value.items.index(argv[3])  # LIST-10: the first pivot from the head
    except ValueError:
        return Int(-1)
    value.items.insert(at if side == b"before" else at + 1, argv[4])
    call.modified(key)
    notify_keyspace_event(call, "l", "linsert", key)  # NOTIFY-4
    call.changed()  # STATS-4
    call.propagate_verbatim()
    return Int(len(value.items))


@command("lindex")
def lindex(call: Call) -> Reply:
    value = list_at(call, call.argv[1])  # LIST-11: the key before the index
    if value is None:
        return NULL_BULK
    position = index_of(value, parse_long(call.argv[2]))
    return NULL_BULK if position is None else Bulk(value.items[position])


@command("lset")
def lset(call: Call) -> Reply:
    key = call.argv[1]
    value = list_at(call, key)
    if value is None:  # LIST-11
        raise CommandError(table.NO_SUCH_KEY)
    position = index_of(value, parse_long(call.argv[2]))
    if position is None:
        raise CommandError(OUT_OF_RANGE)
    value.items[position] = call.argv[3]
    call.modified(key)
    notify_keyspace_event(call, "l", "lset", key)  # NOTIFY-4
    call.changed()
    call.propagate_verbatim()
    return OK


@command("ltrim")
def ltrim(call: Call) -> Reply:
    start, end = parse_long(call.argv[2]), parse_long(call.argv[3])  # LIST-12: the indexes first
    key = call.argv[1]
    value = list_at(call, key)
    if value is None:
        return OK
    n = len(value.items)
    if start < 0:
        start += n
    if end < 0:
        end += n
    start = max(start, 0)
    if start > end or start >= n:  # LIST-12: an empty range empties the list
        left, right = n, 0
    else:
        end = min(end, n - 1)
        left, right = start, n - end - 1
    kept = list(value.items)[left:n - right]
    value.items.clear()
    value.items.extend(kept)
    notify_keyspace_event(call, "l", "ltrim", key)  # NOTIFY-4: sent even when nothing went
    if not value.items:
        del call.db[key]
        notify_keyspace_event(call, "g", "del", key)
    call.modified(key)  # LIST-12: the key is touched even when nothing went
    if left + right:
        call.changed(left + right)  # STATS-4
        call.propagate_verbatim()
    return OK


@command("lpos")
def lpos(call: Call) -> Reply:
    argv = call.argv
    rank, count, maxlen = 1, -1, 0
    j = 3
    while j < len(argv):  # LIST-13: options in order, each may repeat
        opt = c_string(argv[j]).lower()
        more = len(argv) - 1 - j
        if opt == b"rank" and more:
            rank = parse_long(argv[j + 1])
            if rank == 0:
                raise CommandError(call.server.dialect.lpos_rank_zero_error)  # LIST-DIALECT-2
        elif opt == b"count" and more:
            count = parse_not_negative(argv[j + 1], COUNT_NEGATIVE)
        elif opt == b"maxlen" and more:
            maxlen = parse_not_negative(argv[j + 1], MAXLEN_NEGATIVE)
        else:
            raise CommandError(table.SYNTAX)
        j += 2
    value = list_at(call, argv[1])
    if value is None:
        return Array(()) if count != -1 else NULL_BULK
    items = list(value.items)
    n = len(items)
    order = range(n) if rank > 0 else range(n - 1, -1, -1)
    skip = abs(rank) - 1
    found: list[int] = []
    for scanned, i in enumerate(order):
        if maxlen and scanned >= maxlen:
            break
        if items[i] != argv[2]:
            continue
        if skip:
            skip -= 1
            continue
        found.append(i)
        if count == -1 or (count and len(found) >= count):
            break
    if count == -1:
        return Int(found[0]) if found else NULL_BULK
    return Array(tuple(Int(i) for i in found))


@command("lrem")
def lrem(call: Call) -> Reply:
    limit = parse_long(call.argv[2])  # LIST-14: the count before the key
    key = call.argv[1]
    value = list_at(call, key)
    if value is None:
        return Int(0)
    items = list(value.items)
    positions = range(len(items)) if limit >= 0 else range(len(items) - 1, -1, -1)
    doomed: set[int] = set()
    for i in positions:
        if items[i] == call.argv[3]:
            doomed.add(i)
            if limit and len(doomed) == abs(limit):
                break
    if doomed:
        value.items.clear()
        value.items.extend(e for i, e in enumerate(items) if i not in doomed)
        call.modified(key)
        notify_keyspace_event(call, "l", "lrem", key)  # NOTIFY-4
        call.changed(len(doomed))  # STATS-4
        call.propagate_verbatim()
    if not value.items:
        del call.db[key]
        notify_keyspace_event(call, "g", "del", key)
    return Int(len(doomed))


@command("rpoplpush")
def rpoplpush(call: Call) -> Reply:
    src, dst = call.argv[1], call.argv[2]
    source = list_at(call, src)
    if source is None:  # LIST-15: LMOVE src dst RIGHT LEFT, propagated as typed
        return NULL_BULK
    element = move(call, src, source, dst, TAIL, HEAD)
    call.propagate_verbatim()
    return Bulk(element)


@command("lmpop")
def lmpop(call: Call) -> Reply:
    keys, where, count = parse_lmpop(call, 1)  # LIST-16
    for key in keys:
        value = list_at(call, key)  # LIST-16: a missing key is skipped, another type refused
        if value is None:
            continue
        call.propagate([b"LPOP" if where == HEAD else b"RPOP", key, min(count, len(value.items))])  # LIST-16
        return pop_range(call, key, value, where, count)
    return NullArray()
