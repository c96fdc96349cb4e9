"""The reference server's set commands over several sets (spec/rules/sets.md, SETS-6 to SETS-10).

SINTER SINTERSTORE SINTERCARD SUNION SUNIONSTORE SDIFF SDIFFSTORE SMOVE SMISMEMBER
SSCAN, written apart from the model on :class:`xspec.reference.sets.RefSet`. A
result is an intset taking its members one by one, as Redis builds it.
"""

from __future__ import annotations

from collections.abc import Iterable

from xspec.reference.api import ReplyError
from xspec.reference.core import Context, value_kind
from xspec.reference.notify import notify_keyspace_event, notify_new
from xspec.reference.sets import RefSet, add_member, fresh_set
from xspec.reference.values import handler_table, value_at
from xspec.spec import commands as table
from xspec.spec import zsets as z
from xspec.spec.errors import INVALID_CURSOR
from xspec.spec.glob import pattern_matches
from xspec.spec.ids import c_string, string2ll, strtoull
from xspec.spec.resp import Array, Bulk, Int, Reply, Set

__all__ = ["HANDLERS"]

HANDLERS, _handler = handler_table()


def _sets(ctx: Context, keys: Iterable[bytes]) -> list[RefSet | None]:
    return [value_at(ctx.db, k, RefSet) for k in keys]  # SETS-6: WRONGTYPE at the first other type


def _built(ctx: Context, members: Iterable[bytes]) -> RefSet:
    out = RefSet("intset")
    for m in members:
        add_member(out, m, ctx.dialect.set_listpack)  # SETS-ENC-2
    return out


def _reply(s: RefSet) -> Set:
    return Set(tuple(map(Bulk, s.listed())))


def _store(ctx: Context, dst: bytes, result: RefSet, event: str) -> Int:
    if result.members:  # SETS-8
        old = ctx.db.get(dst)
        ctx.db[dst] = result
        if old is None:
            notify_new(ctx, dst)
            ctx.modified(dst)
        elif value_kind(old) == "stream":
            ctx.deleted(dst)
        else:
            ctx.modified(dst)
        notify_keyspace_event(ctx, "s", event, dst)
        ctx.changed()
        return Int(len(result.members))
    if ctx.db.pop(dst, None) is not None:
        ctx.deleted(dst)
        notify_keyspace_event(ctx, "g", "del", dst)
        ctx.changed()
    return Int(0)


def _common(sets: list[RefSet | None], limit: int = 0) -> list[bytes] | None:
    if any(s is None for s in sets):
        return None  # SETS-6
    ordered = sorted((s for s in sets if s is not None), key=lambda s: len(s.members))
    head = ordered[0]
    out: list[bytes] = []
    for m in head.listed():
        if all(m in s.members for s in ordered[1:]):
            out.append(m)
            if limit and len(out) >= limit:
                break
    return out


def _inter(ctx: Context, keys: list[bytes], dst: bytes | None) -> Reply:
    found = _common(_sets(ctx, keys))
    if dst is not None:
        return _store(ctx, dst, _built(ctx, found or []), "sinterstore")
    return Set(tuple(map(Bulk, found or [])))


@_handler("sinter")
def sinter(ctx: Context) -> Reply:
    return _inter(ctx, ctx.argv[1:], None)


@_handler("sinterstore")
def sinterstore(ctx: Context) -> Reply:
    return _inter(ctx, ctx.argv[2:], ctx.argv[1])


@_handler("sintercard")
def sintercard(ctx: Context) -> Reply:
    argv = ctx.argv
    n = string2ll(argv[1])
    if n is None or n < 1:  # SETS-7
        raise ReplyError(z.NUMKEYS_NOT_POSITIVE)
    if n > len(argv) - 2:
        raise ReplyError("ERR Number of keys can't be greater than number of args")
    limit = 0
    j = n + 2
    while j < len(argv):
        if c_string(argv[j]).lower() != b"limit" or j + 1 >= len(argv):
            raise ReplyError(table.SYNTAX)
        value = string2ll(argv[j + 1])
        if value is None or value < 0:
            raise ReplyError(z.LIMIT_NEGATIVE)
        limit = value
        j += 2
    found = _common(_sets(ctx, argv[2:2 + n]), limit)
    return Int(len(found) if found else 0)


def _union_diff(ctx: Context, keys: list[bytes], dst: bytes | None, union: bool) -> Reply:
    sets = _sets(ctx, keys)
    if union:
        result = _built(ctx, (m for s in sets if s is not None for m in s.listed()))
    elif sets[0] is None or any(s is sets[0] for s in sets[1:]):  # SETS-8
        result = RefSet("intset")
    else:
        head = sets[0]
        rest = [s for s in sets[1:] if s is not None]
        if len(head.members) * (len(rest) + 1) // 2 <= len(head.members) + sum(len(s.members) for s in rest):
            result = _built(ctx, (m for m in head.listed() if all(m not in s.members for s in rest)))
        else:
            result = _built(ctx, head.listed())
            for s in rest:
                for m in s.listed():
                    result.members.pop(m, None)
                if not result.members:
                    break
    if dst is not None:
        return _store(ctx, dst, result, "sunionstore" if union else "sdiffstore")
    return _reply(result)


@_handler("sunion")
def sunion(ctx: Context) -> Reply:
    return _union_diff(ctx, ctx.argv[1:], None, True)


@_handler("sunionstore")
def sunionstore(ctx: Context) -> Reply:
    return _union_diff(ctx, ctx.argv[2:], ctx.argv[1], True)


@_handler("sdiff")
def sdiff(ctx: Context) -> Reply:
    return _union_diff(ctx, ctx.argv[1:], None, False)


@_handler("sdiffstore")
def sdiffstore(ctx: Context) -> Reply:
    return _union_diff(ctx, ctx.argv[2:], ctx.argv[1], False)


@_handler("smove")
def smove(ctx: Context) -> Reply:
    src, dst, m = ctx.argv[1], ctx.argv[2], ctx.argv[3]
    if src not in ctx.db:  # SETS-9
        return Int(0)
    a = value_at(ctx.db, src, RefSet)
    b = value_at(ctx.db, dst, RefSet)
    assert a is not None
    if a is b:
        return Int(1 if m in a.members else 0)
    if m not in a.members:
        return Int(0)
    del a.members[m]
    notify_keyspace_event(ctx, "s", "srem", src)
    if not a.members:
        del ctx.db[src]
        notify_keyspace_event(ctx, "g", "del", src)
    if b is None:
        b = fresh_set(m, 1, ctx.dialect.set_listpack)
        ctx.db[dst] = b
        notify_new(ctx, dst)
    ctx.modified(src)
    ctx.changed()
    if add_member(b, m, ctx.dialect.set_listpack):
        ctx.changed()
        ctx.modified(dst)
        notify_keyspace_event(ctx, "s", "sadd", dst)
    return Int(1)


@_handler("smismember")
def smismember(ctx: Context) -> Reply:
    s = value_at(ctx.db, ctx.argv[1], RefSet)  # SETS-9
    return Array(tuple(Int(1 if s is not None and m in s.members else 0) for m in ctx.argv[2:]))


@_handler("sscan")
def sscan(ctx: Context) -> Reply:
    argv = ctx.argv
    ctx.errno = 0  # XADD-14
    text = c_string(argv[2])
    parsed = None if text[:1] in (b" ", b"\t", b"\n", b"\v", b"\f", b"\r") else strtoull(text)
    if parsed is None or parsed[1] != len(text):  # SETS-10
        raise ReplyError(INVALID_CURSOR)
    s = value_at(ctx.db, argv[1], RefSet)
    if s is None:
        return Array((Bulk(b"0"), Array(())))
    pattern = None
    j = 3
    while j < len(argv):
        word = c_string(argv[j]).lower()
        if word == b"count" and j + 1 < len(argv):
            count = string2ll(argv[j + 1])
            if count is None:
                raise ReplyError(table.NOT_INTEGER)
            if count < 1:
                raise ReplyError(table.SYNTAX)
        elif word == b"match" and j + 1 < len(argv):
            pattern = argv[j + 1]
        else:
            raise ReplyError(table.SYNTAX)
        j += 2
    chosen = [m for m in s.listed() if pattern is None or pattern == b"*" or pattern_matches(pattern, m)]
    return Array((Bulk(b"0"), Array(tuple(map(Bulk, chosen)))))
