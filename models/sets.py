"""Handlers of the set commands (spec/rules/sets.md): SADD, SREM, SMEMBERS, SCARD, SISMEMBER.

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
