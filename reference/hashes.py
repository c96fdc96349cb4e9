"""The reference server's hash commands (spec/rules/hashes.md), written apart from the model.

A hash is a :class:`RefHash`: a dict of field to value (insertion order: a listpack's order) and
its encoding, ``listpack`` until a field or value is longer than 64 bytes or it has more than 128
fields, then ``hashtable`` for good. A hash table's walk is in an order of its own: the reference
answers in insertion order, one of the orders a real server may give.
"""

from __future__ import annotations

import random
from typing import ClassVar, Final

from xspec.reference.api import ReplyError
from xspec.reference.core import Context
from xspec.reference.expiry import look, propagate_as
from xspec.reference.keyspace import SELF_EXPIRING
from xspec.reference.notify import notify_keyspace_event, notify_new
from xspec.reference.strings import long_double_sum
from xspec.reference.values import handler_table, int_reply, integer, random_count, random_draw
from xspec.spec import commands as table
from xspec.spec.errors import INVALID_CURSOR
from xspec.spec.floats import string2ld
from xspec.spec.glob import pattern_matches
from xspec.spec.ids import I64_MAX, I64_MIN, c_string, strtoull
from xspec.spec.resp import NULL_BULK, OK, Array, Bulk, Int, Map, Reply

__all__ = ["HANDLERS", "RefHash"]

HANDLERS, _handler = handler_table()
SELF_EXPIRING.update({"hset", "hsetnx", "hmset", "hget", "hmget", "hgetall", "hdel", "hexists", "hincrby",
                      "hincrbyfloat", "hkeys", "hvals", "hlen", "hstrlen", "hscan", "hrandfield"})


class RefHash(dict[bytes, bytes]):
    """A hash value: field -> value, in insertion order, and its encoding."""

    kind: ClassVar[str] = "hash"  # a class attribute, also when compiled
    __slots__ = ("encoding",)

    def __init__(self) -> None:
        super().__init__()
        self.encoding = "listpack"


_LIMIT_NAMES: Final = {what: (f"hash-max-listpack-{what}", f"hash-max-ziplist-{what}") for what in ("value", "entries")}


def _limit(ctx: Context, what: str, default: int) -> int:
    config = ctx.core.config
    for name in _LIMIT_NAMES[what]:
        if name in config:
            return int(config[name])
    return default


def _hash(ctx: Context, key: bytes) -> RefHash | None:
    v = look(ctx, key)
    if v is not None and type(v) is not RefHash:
        raise ReplyError(table.WRONGTYPE)  # HASH-1
    return v


def _writable(ctx: Context, key: bytes) -> RefHash:
    h = _hash(ctx, key)
    if h is None:
        h = RefHash()
        ctx.db[key] = h
        notify_new(ctx, key)  # NOTIFY-3
    return h


def _check_lengths(ctx: Context, h: RefHash, args: list[bytes]) -> None:
    if h.encoding == "listpack" and max(map(len, args), default=0) > _limit(ctx, "value", 64):  # HASH-10
        h.encoding = "hashtable"


def _put(ctx: Context, h: RefHash, field: bytes, value: bytes) -> int:
    added = field not in h
    h[field] = value
    if h.encoding == "listpack" and len(h) > _limit(ctx, "entries", 128):  # HASH-10
        h.encoding = "hashtable"
    return int(added)


def _hset(ctx: Context, ok_reply: bool) -> Reply:
    argv = ctx.argv
    if len(argv) % 2:  # HSET-1
        raise ReplyError(table.arity_error(ctx.spec))  # type: ignore[arg-type]
    h = _writable(ctx, argv[1])
    _check_lengths(ctx, h, argv[2:])
    added = 0
    for j in range(2, len(argv), 2):
        added += _put(ctx, h, argv[j], argv[j + 1])
    ctx.modified(argv[1])
    notify_keyspace_event(ctx, "h", "hset", argv[1])  # NOTIFY-1
    ctx.changed((len(argv) - 2) // 2)  # HSET-2
    return OK if ok_reply else int_reply(added)


@_handler("hset")
def hset(ctx: Context) -> Reply:
    return _hset(ctx, False)


@_handler("hmset")
def hmset(ctx: Context) -> Reply:
    return _hset(ctx, True)


@_handler("hsetnx")
def hsetnx(ctx: Context) -> Reply:
    key, field, value = ctx.argv[1:4]
    existing = _hash(ctx, key)
    if existing is not None and field in existing:  # HSETNX-1
        return Int(0)
    h = _writable(ctx, key)
    _check_lengths(ctx, h, [field, value])
    _put(ctx, h, field, value)
    ctx.modified(key)
    notify_keyspace_event(ctx, "h", "hset", key)  # NOTIFY-1
    ctx.changed()
    return Int(1)


@_handler("hdel")
def hdel(ctx: Context) -> Reply:
    key = ctx.argv[1]
    h = _hash(ctx, key)
    if h is None:  # HDEL-1
        return Int(0)
    gone = 0
    for field in ctx.argv[2:]:
        if field in h:
            del h[field]
            gone += 1
            if not h:  # HDEL-2
                del ctx.db[key]
                break
    if gone:
        ctx.modified(key)
        notify_keyspace_event(ctx, "h", "hdel", key)  # NOTIFY-1
        if key not in ctx.db:
            notify_keyspace_event(ctx, "g", "del", key)
        ctx.changed(gone)
    return Int(gone)


@_handler("hincrby")
def hincrby(ctx: Context) -> Reply:
    key, field = ctx.argv[1], ctx.argv[2]
    by = integer(ctx.argv[3])  # HINCRBY-1
    h = _writable(ctx, key)
    cur = h.get(field)
    n = 0 if cur is None else integer(cur, "ERR hash value is not an integer")  # HINCRBY-2
    total = n + by
    if not I64_MIN <= total <= I64_MAX:  # HINCRBY-3
        if not h:
            del ctx.db[key]
        raise ReplyError("ERR increment or decrement would overflow")
    _put(ctx, h, field, b"%d" % total)
    ctx.modified(key)
    notify_keyspace_event(ctx, "h", "hincrby", key)  # NOTIFY-1
    ctx.changed()
    return Int(total)


@_handler("hincrbyfloat")
def hincrbyfloat(ctx: Context) -> Reply:
    key, field, by = ctx.argv[1], ctx.argv[2], ctx.argv[3]
    parsed = string2ld(by)
    if parsed is None:  # HINCRBYFLOAT-1
        raise ReplyError("ERR value is not a valid float")
    if isinstance(parsed, float):
        raise ReplyError("ERR value is NaN or Infinity")
    existing = _hash(ctx, key)
    cur = None if existing is None else existing.get(field)
    new = long_double_sum(cur, by, "ERR hash value is not a float")  # HINCRBYFLOAT-2
    h = _writable(ctx, key)
    _put(ctx, h, field, new)
    ctx.modified(key)
    notify_keyspace_event(ctx, "h", "hincrbyfloat", key)  # NOTIFY-1
    ctx.changed()
    propagate_as(ctx, [b"HSET", key, field, new])  # HINCRBYFLOAT-3
    return Bulk(new)


@_handler("hget")
def hget(ctx: Context) -> Reply:
    h = _hash(ctx, ctx.argv[1])
    v = h.get(ctx.argv[2]) if h is not None else None
    return Bulk(v) if v is not None else NULL_BULK  # HGET-1


@_handler("hmget")
def hmget(ctx: Context) -> Reply:
    h: dict[bytes, bytes] = _hash(ctx, ctx.argv[1]) or {}  # HGET-2
    return Array(tuple(Bulk(h[f]) if f in h else NULL_BULK for f in ctx.argv[2:]))


@_handler("hexists")
def hexists(ctx: Context) -> Reply:
    h = _hash(ctx, ctx.argv[1])
    return Int(1 if h is not None and ctx.argv[2] in h else 0)  # HGET-3


@_handler("hlen")
def hlen(ctx: Context) -> Reply:
    h = _hash(ctx, ctx.argv[1])
    return Int(len(h) if h is not None else 0)  # HGET-3


@_handler("hstrlen")
def hstrlen(ctx: Context) -> Reply:
    h = _hash(ctx, ctx.argv[1])
    return Int(len(h.get(ctx.argv[2], b"")) if h is not None else 0)  # HGET-3


@_handler("hgetall")
def hgetall(ctx: Context) -> Reply:
    h: dict[bytes, bytes] = _hash(ctx, ctx.argv[1]) or {}
    return Map(tuple((Bulk(f), Bulk(v)) for f, v in h.items()))  # HASH-11


@_handler("hkeys")
def hkeys(ctx: Context) -> Reply:
    h: dict[bytes, bytes] = _hash(ctx, ctx.argv[1]) or {}
    return Array(tuple(Bulk(f) for f in h))  # HASH-11


@_handler("hvals")
def hvals(ctx: Context) -> Reply:
    h: dict[bytes, bytes] = _hash(ctx, ctx.argv[1]) or {}
    return Array(tuple(Bulk(v) for v in h.values()))  # HASH-11


def _cursor_ok(arg: bytes) -> bool:
    text = c_string(arg)
    if text[:1] in (b" ", b"\t", b"\n", b"\v", b"\f", b"\r"):
        return False
    parsed = strtoull(text)
    return parsed is not None and parsed[1] == len(text)


@_handler("hscan")
def hscan(ctx: Context) -> Reply:
    argv = ctx.argv
    if not _cursor_ok(argv[2]):  # HSCAN-1
        raise ReplyError(INVALID_CURSOR)
    h = _hash(ctx, argv[1])
    if h is None:
        return Array((Bulk(b"0"), Array(())))
    pattern: bytes | None = None
    j = 3
    while j < len(argv):  # HSCAN-2
        w = c_string(argv[j]).lower()
        if j + 1 >= len(argv) or w not in (b"count", b"match"):
            raise ReplyError(table.SYNTAX)
        if w == b"count":
            if integer(argv[j + 1]) < 1:
                raise ReplyError(table.SYNTAX)
        else:
            pattern = argv[j + 1] if argv[j + 1] != b"*" else None
        j += 2
    page: list[Reply] = []
    for f, v in h.items():  # HSCAN-3
        if pattern is None or pattern_matches(pattern, f):
            page += [Bulk(f), Bulk(v)]
    return Array((Bulk(b"0"), Array(tuple(page))))


@_handler("hrandfield")
def hrandfield(ctx: Context) -> Reply:
    argv = ctx.argv
    if len(argv) == 2:  # HASH-13
        h = _hash(ctx, argv[1])
        return NULL_BULK if h is None else Bulk(random.choice(list(h)))
    n, withvalues = random_count(argv, b"withvalues")  # HASH-13
    h = _hash(ctx, argv[1])
    if h is None or n == 0:
        return Array(())
    drawn = random_draw(list(h.items()), n)
    if not withvalues:
        return Array(tuple(Bulk(f) for f, _ in drawn))
    if ctx.client.proto == 3:  # HASH-13: a pair per field in RESP3
        return Array(tuple(Array((Bulk(f), Bulk(v))) for f, v in drawn))
    return Array(tuple(Bulk(x) for pair in drawn for x in pair))
