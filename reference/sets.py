"""The reference server's set commands: SADD SREM SMEMBERS SCARD SISMEMBER SRANDMEMBER SPOP (spec/rules/sets.md).

Written apart from the model. A set is a :class:`RefSet`: its members in a
dict (insertion order) and its encoding, which decides SMEMBERS's order
(intset: numeric; listpack, 7.2+: insertion; hashtable: the dict's order here,
a hash order on a real server).
"""

from __future__ import annotations

import random

from xspec.reference.api import ReplyError
from xspec.reference.core import Context
from xspec.reference.expiry import deletion_word, propagate_as
from xspec.reference.notify import notify_keyspace_event, notify_new
from xspec.reference.values import handler_table, is_integer, value_at
from xspec.spec import commands as table
from xspec.spec.errors import COUNT_NOT_POSITIVE
from xspec.spec.ids import I64_MAX, string2ll
from xspec.spec.resp import NULL_BULK, Array, Bulk, Int, Reply, Set

__all__ = ["HANDLERS", "RefSet", "add_member", "fresh_set"]

INTSET_MAX = 512
LISTPACK_MAX_ENTRIES = 128
LISTPACK_MAX_VALUE = 64


class RefSet:
    """A set value; never stored empty."""

    __slots__ = ("members", "encoding")
    kind = "set"

    def __init__(self, encoding: str) -> None:
        self.members: dict[bytes, None] = {}
        self.encoding = encoding

    def listed(self) -> list[bytes]:
        if self.encoding == "intset":
            return sorted(self.members, key=int)
        return list(self.members)


HANDLERS, _handler = handler_table()


def _get(ctx: Context, key: bytes) -> RefSet | None:
    return value_at(ctx.db, key, RefSet)  # SETS-1: WRONGTYPE for another type


_integer = is_integer


def fresh_set(first: bytes, size_hint: int, listpacks: bool) -> RefSet:
    """SETS-ENC-1, SETS-DIALECT-1: the encoding a set made for ``first`` and ``size_hint`` members starts in."""
    if _integer(first) and (not listpacks or size_hint <= INTSET_MAX):
        return RefSet("intset")
    if listpacks and size_hint <= LISTPACK_MAX_ENTRIES:
        return RefSet("listpack")
    return RefSet("hashtable")


def add_member(s: RefSet, m: bytes, listpacks: bool) -> bool:
    """SETS-ENC-2, SETS-DIALECT-1."""
    if m in s.members:
        return False
    if s.encoding == "intset" and not _integer(m):
        fits = (listpacks and len(s.members) < LISTPACK_MAX_ENTRIES and len(m) <= LISTPACK_MAX_VALUE
                and all(len(x) <= LISTPACK_MAX_VALUE for x in s.members))
        if fits:
            s.members = dict.fromkeys(s.listed())
        s.encoding = "listpack" if fits else "hashtable"
    elif s.encoding == "listpack" and (len(s.members) >= LISTPACK_MAX_ENTRIES or len(m) > LISTPACK_MAX_VALUE):
        s.encoding = "hashtable"
    s.members[m] = None
    if s.encoding == "intset" and len(s.members) > INTSET_MAX:
        s.encoding = "hashtable"
    return True


@_handler("sadd")
def sadd(ctx: Context) -> Reply:
    key, members = ctx.argv[1], ctx.argv[2:]
    s = _get(ctx, key)
    listpacks = ctx.dialect.set_listpack
    if s is None:  # SETS-ENC-1
        s = fresh_set(members[0], len(members), listpacks)
        ctx.db[key] = s
        notify_new(ctx, key)  # NOTIFY-3
    added = 0
    for m in members:
        added += add_member(s, m, listpacks)
    if added:
        ctx.modified(key)  # SETS-2
        notify_keyspace_event(ctx, "s", "sadd", key)  # NOTIFY-4
        ctx.changed(added)  # STATS-4
    return Int(added)


@_handler("srem")
def srem(ctx: Context) -> Reply:
    key = ctx.argv[1]
    s = _get(ctx, key)
    gone = 0
    if s is not None:
        for m in ctx.argv[2:]:  # SETS-3
            if s.members.pop(m, 0) is None:
                gone += 1
                if not s.members:
                    del ctx.db[key]
                    break
    if gone:
        ctx.modified(key)
        notify_keyspace_event(ctx, "s", "srem", key)  # NOTIFY-4
        if s is not None and not s.members:
            notify_keyspace_event(ctx, "g", "del", key)
        ctx.changed(gone)
    return Int(gone)


@_handler("smembers")
def smembers(ctx: Context) -> Reply:
    s = _get(ctx, ctx.argv[1])
    return Set(() if s is None else tuple(map(Bulk, s.listed())))  # SETS-4


@_handler("scard")
def scard(ctx: Context) -> Reply:
    s = _get(ctx, ctx.argv[1])
    return Int(len(s.members) if s else 0)  # SETS-5


@_handler("sismember")
def sismember(ctx: Context) -> Reply:
    s = _get(ctx, ctx.argv[1])
    return Int(1 if s is not None and ctx.argv[2] in s.members else 0)  # SETS-5


@_handler("srandmember")
def srandmember(ctx: Context) -> Reply:
    argv = ctx.argv
    if len(argv) > 3:  # SETS-11
        raise ReplyError(table.SYNTAX)
    if len(argv) == 2:
        s = _get(ctx, argv[1])
        return NULL_BULK if s is None else Bulk(random.choice(s.listed()))
    n = string2ll(argv[2])  # SETS-11: the count first
    if n is None:
        raise ReplyError(table.NOT_INTEGER)
    if n < -I64_MAX:
        raise ReplyError("ERR value is out of range, value must between -9223372036854775807 and "
                         "9223372036854775807")
    s = _get(ctx, argv[1])
    if s is None or n == 0:
        return Array(())
    members = s.listed()
    if n > 0:
        return Array(tuple(map(Bulk, random.sample(members, min(n, len(members))))))
    return Array(tuple(Bulk(random.choice(members)) for _ in range(-n)))


# -- SPOP ------------------------------------------------------------------------------------------
_KEEP_REST_FACTOR = 5  # SETS-13: the members left are few enough to draw them instead


@_handler("spop")
def spop(ctx: Context) -> Reply:
    argv = ctx.argv
    if len(argv) > 3:  # SETS-12
        raise ReplyError(table.SYNTAX)
    key = argv[1]
    if len(argv) == 3:
        return _spop_count(ctx, key, argv[2])
    s = _get(ctx, key)
    if s is None:
        return NULL_BULK  # SETS-12
    member = random.choice(s.listed())
    del s.members[member]
    notify_keyspace_event(ctx, "s", "spop", key)  # NOTIFY-4
    propagate_as(ctx, [b"SREM", key, member])  # SETS-12
    if not s.members:
        del ctx.db[key]
        notify_keyspace_event(ctx, "g", "del", key)
    ctx.modified(key)
    ctx.changed()
    return Bulk(member)


def _spop_count(ctx: Context, key: bytes, text: bytes) -> Reply:
    count = string2ll(text)
    if count is None or count < 0:  # SETS-13: the count before the key
        raise ReplyError(COUNT_NOT_POSITIVE)
    s = _get(ctx, key)
    if s is None or not count:
        return Set(())
    size = len(s.members)
    notify_keyspace_event(ctx, "s", "spop", key)  # NOTIFY-4
    listpacks = ctx.dialect.set_listpack
    batched = ctx.dialect.spop_one_srem
    if count >= size:  # SETS-13: SUNION's reply of the set, then DEL (or UNLINK, SETS-DIALECT-2)
        union = RefSet("intset")
        for m in s.listed():
            add_member(union, m, listpacks)
        del ctx.db[key]
        notify_keyspace_event(ctx, "g", "del", key)
        propagate_as(ctx, [deletion_word(ctx, "lazyfree-lazy-server-del") if batched else b"DEL", key])
        ctx.modified(key)
        ctx.changed(size)
        return Set(tuple(map(Bulk, union.listed())))
    members = s.listed()
    left = size - count
    if left * _KEEP_REST_FACTOR > count:  # SETS-13: draw the members to pop
        chosen = set(random.sample(range(size), count))
        if s.encoding == "listpack":  # SETS-DIALECT-2: one walk along the listpack
            out = [m for i, m in enumerate(members) if i in chosen]
        else:
            out = [members[i] for i in chosen]
            random.shuffle(out)
        for m in out:
            del s.members[m]
    else:  # SETS-13: draw the members to keep, as a new set; pop the rest in the old set's order
        keep = random.sample(members, left)
        if s.encoding == "listpack":
            keep_set = set(keep)
            keep = [m for m in members if m in keep_set]
            rest = RefSet("listpack")
        elif listpacks:  # SETS-DIALECT-2
            rest = RefSet("intset" if s.encoding == "intset" else "listpack")
        else:
            rest = fresh_set(keep[0], 1, False)
        for m in keep:
            add_member(rest, m, listpacks)
            del s.members[m]
        out = s.listed() if s.encoding != "hashtable" else random.sample(s.listed(), len(s.members))
        ctx.db[key] = rest
    if batched:  # SETS-DIALECT-2
        propagate_as(ctx, *([b"SREM", key, *out[i:i + 1024]] for i in range(0, len(out), 1024)))
    else:
        propagate_as(ctx, *([b"SREM", key, m] for m in out))  # SETS-13
    ctx.modified(key)
    ctx.changed(count)
    return Set(tuple(map(Bulk, out)))
