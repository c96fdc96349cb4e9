"""Handlers of the set commands (spec/rules/sets.md): SADD, SREM, SMEMBERS, SCARD, SISMEMBER, SRANDMEMBER, SPOP.

A set is a :class:`SetValue`, never empty while stored. Its encoding decides
the order SMEMBERS lists it in: an intset in numeric order, a listpack (7.2+)
in insertion order; a hash table's order depends on the server's random hash
seed, so SMEMBERS then replies a :class:`AnyOrderArray` (RESP2) or
:class:`AnyOrderSet` (RESP3), equal to a reply with the same members in any order.
"""

from __future__ import annotations

from typing import Any

from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.samples import OneOf, Sample
from xspec.models.server import Call, CommandError, HandlerResult, PreRendered, command
from xspec.models.state import SetValue
from xspec.spec import commands as table
from xspec.spec.errors import COUNT_NOT_POSITIVE
from xspec.spec.ids import I64_MAX, parse_ll, string2ll
from xspec.spec.resp import NULL_BULK, Array, Bulk, Int, Reply, Set

SET_MAX_INTSET_ENTRIES = 512
SET_MAX_LISTPACK_ENTRIES = 128  # 7.2+
SET_MAX_LISTPACK_VALUE = 64  # 7.2+


class _AnyOrder:
    """Equal to a reply of type ``exact`` with the same items in any order."""

    __slots__ = ()
    exact: type[Array] | type[Set]
    items: tuple[Any, ...]

    def __eq__(self, other: object) -> bool:
        return type(other) is self.exact and _same_items(self.items, other.items)  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return hash(frozenset(self.items))


class AnyOrderArray(_AnyOrder, Array):  # type: ignore[misc]
    """An array reply whose items may come in any order (a hash table's walk)."""

    __slots__ = ()
    exact = Array


class AnyOrderSet(_AnyOrder, Set):  # type: ignore[misc]
    """A RESP3 set reply whose items may come in any order."""

    __slots__ = ()
    exact = Set


def _same_items(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and sorted(map(repr, a)) == sorted(map(repr, b))


def is_integer(member: bytes) -> bool:
    """``isSdsRepresentableAsLongLong``: a strict signed 64-bit decimal (SETS-ENC-1)."""
    return string2ll(member) is not None


def set_at(call: Call, key: bytes) -> SetValue | None:
    """The set at ``key``, None if missing; WRONGTYPE for another type (SETS-1)."""
    return call.typed(key, SetValue)


def new_set(call: Call, first: bytes, size_hint: int) -> SetValue:
    """``setTypeCreate``: the encoding a new set starts with (SETS-ENC-1)."""
    if call.server.dialect.set_listpack:  # SETS-DIALECT-1
        if is_integer(first) and size_hint <= SET_MAX_INTSET_ENTRIES:
            return SetValue(encoding="intset")
        if size_hint <= SET_MAX_LISTPACK_ENTRIES:
            return SetValue(encoding="listpack")
        return SetValue(encoding="hashtable")
    return SetValue(encoding="intset" if is_integer(first) else "hashtable")


def add_member(call: Call, value: SetValue, member: bytes) -> bool:
    """``setTypeAdd``: add ``member``, converting the encoding as Redis does (SETS-ENC-2)."""
    if member in value.members:
        return False
    listpack = call.server.dialect.set_listpack
    if value.encoding == "intset":
        if is_integer(member):
            value.members[member] = None
            if len(value.members) > SET_MAX_INTSET_ENTRIES:
                value.encoding = "hashtable"
            return True
        if listpack and _intset_fits_listpack(value, member):  # SETS-DIALECT-1
            value.members = dict.fromkeys(value.ordered())
            value.encoding = "listpack"
        else:
            value.encoding = "hashtable"
    elif value.encoding == "listpack":
        if len(value.members) + 1 > SET_MAX_LISTPACK_ENTRIES or len(member) > SET_MAX_LISTPACK_VALUE:
            value.encoding = "hashtable"
    value.members[member] = None
    return True


def _intset_fits_listpack(value: SetValue, member: bytes) -> bool:
    """7.2's check before an intset takes a non-integer: the listpack limits hold."""
    longest = max((len(m) for m in value.members), default=0)  # canonical decimals: sdigits10
    return (len(value.members) < SET_MAX_LISTPACK_ENTRIES and len(member) <= SET_MAX_LISTPACK_VALUE
            and longest <= SET_MAX_LISTPACK_VALUE)


@command("sadd")
def sadd(call: Call) -> Reply:
    key = call.argv[1]
    value = set_at(call, key)  # SETS-1
    if value is None:
        value = new_set(call, call.argv[2], len(call.argv) - 2)  # SETS-2
        call.db[key] = value
        notify_new(call, key)  # NOTIFY-3
    added = sum(add_member(call, value, m) for m in call.argv[2:])
    if added:  # SETS-2: only a change is signalled and propagated
        call.modified(key)
        notify_keyspace_event(call, "s", "sadd", key)  # NOTIFY-4
        call.changed(added)  # STATS-4
        call.propagate_verbatim()
    return Int(added)


@command("srem")
def srem(call: Call) -> Reply:
    key = call.argv[1]
    value = set_at(call, key)
    if value is None:  # SETS-3
        return Int(0)
    removed = 0
    for m in call.argv[2:]:
        if m in value.members:
            del value.members[m]
            removed += 1
            if not value.members:  # SETS-3: the emptied set is deleted, later members are not looked at
                del call.db[key]
                break
    if removed:
        call.modified(key)
        notify_keyspace_event(call, "s", "srem", key)  # NOTIFY-4
        if key not in call.db:
            notify_keyspace_event(call, "g", "del", key)
        call.changed(removed)  # STATS-4
        call.propagate_verbatim()
    return Int(removed)


@command("smembers")
def smembers(call: Call) -> HandlerResult:
    value = set_at(call, call.argv[1])
    if value is None:  # SETS-4
        return Set(())
    items = tuple(Bulk(m) for m in value.ordered())
    if value.encoding != "hashtable":  # SETS-4
        return Set(items)
    resp3 = call.client.proto == 3
    return PreRendered(AnyOrderSet(items) if resp3 else AnyOrderArray(items))


@command("scard")
def scard(call: Call) -> Reply:
    return Int(call.size(call.argv[1], SetValue))  # SETS-5


@command("sismember")
def sismember(call: Call) -> Reply:
    value = set_at(call, call.argv[1])
    return Int(int(value is not None and call.argv[2] in value.members))  # SETS-5


RANDOM_COUNT_RANGE = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"


def random_count(arg: bytes) -> int:
    """``getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)``: SRANDMEMBER's and ZRANDMEMBER's count (SETS-11)."""
    value = parse_ll(arg)
    if value is None:
        raise CommandError(table.NOT_INTEGER)
    if value < -I64_MAX:
        raise CommandError(RANDOM_COUNT_RANGE)
    return value


@command("srandmember")
def srandmember(call: Call) -> HandlerResult:
    argv = call.argv
    if len(argv) > 3:  # SETS-11
        raise CommandError(table.SYNTAX)
    if len(argv) == 2:
        value = set_at(call, argv[1])
        return NULL_BULK if value is None else PreRendered(OneOf.of(value.ordered()))  # ENV-RANDOM
    count = random_count(argv[2])  # SETS-11: the count before the key
    value = set_at(call, argv[1])
    if value is None or count == 0:
        return Array(())
    pool = [(Bulk(m),) for m in value.ordered()]
    distinct = count > 0
    size = min(count, len(pool)) if distinct else -count
    return PreRendered(Sample.of(pool, size, distinct))  # ENV-RANDOM


# -- SPOP ------------------------------------------------------------------------------------------
SPOP_MOVE_STRATEGY_MUL = 5  # t_set.c: keep-the-rest strategy when the members left are few
DRAW_ORDER_LIMIT = 5  # the search tries at most 5! orders of a new listpack's members


def draw_positions(call: Call, size: int, count: int) -> list[int]:
    """Which ``count`` of ``size`` members a random draw takes (ENV-RANDOM), as increasing positions.

    The model cannot know the server's draw, so under the checker it asks ``server.chooser`` member by
    member (a combination, not an order: the reply and the state do not depend on the order, and the
    search stays at C(size, count) branches); without a chooser it takes the first ``count``.
    """
    choose = call.server.chooser
    if choose is None:
        return list(range(count))
    taken: list[int] = []
    low = 0
    for i in range(count):
        options = size - (count - i) - low + 1  # leave room for the picks after this one
        low += choose(options) if options > 1 else 0
        taken.append(low)
        low += 1
    return taken


def spop_deleted(call: Call, key: bytes) -> None:
    """The emptied set's deletion (SETS-12): ``del`` event, the key touched."""
    del call.db[key]
    notify_keyspace_event(call, "g", "del", key)  # NOTIFY-4


@command("spop")
def spop(call: Call) -> HandlerResult:
    argv = call.argv
    if len(argv) == 3:
        return spop_with_count(call)
    if len(argv) > 3:  # SETS-12
        raise CommandError(table.SYNTAX)
    key = argv[1]
    value = set_at(call, key)
    if value is None:  # SETS-12
        return NULL_BULK
    members = value.ordered()
    member = members[draw_positions(call, len(members), 1)[0]]  # ENV-RANDOM
    del value.members[member]
    notify_keyspace_event(call, "s", "spop", key)  # NOTIFY-4
    call.propagate([b"SREM", key, member])  # SETS-12
    if not value.members:
        spop_deleted(call, key)
    call.modified(key)
    call.changed()  # STATS-4
    return Bulk(member)


def spop_with_count(call: Call) -> HandlerResult:
    """``spopWithCountCommand`` (SETS-13)."""
    count = parse_ll(call.argv[2])
    if count is None or count < 0:  # SETS-13: the count before the key
        raise CommandError(COUNT_NOT_POSITIVE)
    key = call.argv[1]
    value = set_at(call, key)
    if value is None or count == 0:  # SETS-13: an empty set reply
        return Set(())
    size = len(value.members)
    notify_keyspace_event(call, "s", "spop", key)  # NOTIFY-4: before anything moves
    call.changed(min(count, size))  # STATS-4
    dialect = call.server.dialect
    if count >= size:  # SETS-13: the whole set, as SUNION key replies it, then the key goes
        whole = SetValue(encoding="intset")
        for m in value.ordered():
            add_member(call, whole, m)
        spop_deleted(call, key)
        word = call.server.deletion_word("lazyfree-lazy-server-del") if dialect.spop_one_srem else b"DEL"
        call.propagate([word, key])  # SETS-13, SETS-DIALECT-2
        call.modified(key)
        items = tuple(Bulk(m) for m in whole.ordered())
        if whole.encoding != "hashtable":
            return Set(items)
        return PreRendered(AnyOrderSet(items) if call.client.proto == 3 else AnyOrderArray(items))
    members = value.ordered()
    popped = [members[i] for i in draw_positions(call, size, count)]  # ENV-RANDOM
    keep_rest = (size - count) * SPOP_MOVE_STRATEGY_MUL <= count  # SETS-13: the third strategy
    # SETS-13: the reply's order is known for a listpack (its positions) and for an intset walked whole
    in_order = value.encoding == "listpack" or (keep_rest and value.encoding == "intset")
    for m in popped:
        del value.members[m]
    if keep_rest and not dialect.set_listpack and value.encoding == "hashtable":
        rebuild_rest(call, value)  # SETS-13: 7.0 and 6.2 build the rest as a new set
    elif keep_rest and dialect.set_listpack and value.encoding == "hashtable":
        rebuild_rest_listpack(call, value)  # SETS-DIALECT-2
    if dialect.spop_one_srem:  # SETS-DIALECT-2
        for at in range(0, len(popped), 1024):
            call.propagate([b"SREM", key, *popped[at:at + 1024]])
    else:
        # SETS-DIALECT-3: 6.2 wraps a command's own several ops in MULTI/EXEC (not inside a transaction
        # or a script, whose unit already is one)
        wrap = dialect.wraps_transactions_only and not call.in_exec and len(popped) > 1
        if wrap:
            call.propagate([b"MULTI"])
        for m in popped:  # SETS-13: one SREM per member
            call.propagate([b"SREM", key, m])
        if wrap:
            call.propagate([b"EXEC"])
    call.modified(key)
    items = tuple(Bulk(m) for m in popped)
    if in_order:
        return Set(items)
    return PreRendered(AnyOrderSet(items) if call.client.proto == 3 else AnyOrderArray(items))


def rebuild_rest(call: Call, value: SetValue) -> None:
    """7.0's new set of the members SPOP leaves: created for the first and added to (SETS-ENC-1, SETS-ENC-2),
    so a hash table whose remaining members are all integers becomes an intset."""
    rest = value.ordered()
    value.encoding = "intset" if is_integer(rest[0]) else "hashtable"
    value.members = {}
    for m in rest:
        add_member(call, value, m)


def rebuild_rest_listpack(call: Call, value: SetValue) -> None:
    """7.2+'s new set of the members SPOP leaves a hash table: a listpack taking them in the draw's order
    (converted to a hash table as SADD would, SETS-DIALECT-1). Up to :data:`DRAW_ORDER_LIMIT` members the
    model asks its chooser for that order; beyond it keeps its own walk's order (SETS-DIALECT-2)."""
    rest = value.ordered()
    choose = call.server.chooser
    if choose is not None and len(rest) <= DRAW_ORDER_LIMIT:
        drawn: list[bytes] = []
        while rest:
            drawn.append(rest.pop(choose(len(rest)) if len(rest) > 1 else 0))
        rest = drawn
    value.encoding = "listpack"
    value.members = {}
    for m in rest:
        add_member(call, value, m)
