"""The reference server's set commands: SADD SREM SMEMBERS SCARD SISMEMBER (spec/rules/sets.md).

Written apart from the model. A set is a :class:`RefSet`: its members in a
dict (insertion order) and its encoding, which decides SMEMBERS's order
(intset: numeric; listpack, 7.2+: insertion; hashtable: the dict's order here,
a hash order on a real server).
"""

from __future__ import annotations

from xspec.reference.core import Context
from xspec.reference.values import handler_table, is_integer, value_at
from xspec.spec.resp import Bulk, Int, Reply, Set

__all__ = ["HANDLERS", "RefSet"]

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


def _add(s: RefSet, m: bytes, listpacks: bool) -> bool:
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
        if _integer(members[0]) and (not listpacks or len(members) <= INTSET_MAX):
            s = RefSet("intset")
        elif listpacks and len(members) <= LISTPACK_MAX_ENTRIES:
            s = RefSet("listpack")
        else:
            s = RefSet("hashtable")
        ctx.db[key] = s
    added = 0
    for m in members:
        added += _add(s, m, listpacks)
    if added:
        ctx.modified(key)  # SETS-2
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
