"""The reference server's expiry commands: EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL EXPIRETIME
PEXPIRETIME PERSIST (spec/rules/expiry.md), written apart from the model.

Times are absolute milliseconds in each database's ``expires`` table (``reference.keyspace``).
"""

from __future__ import annotations

from typing import Any

from xspec.reference.api import ReplyError
from xspec.reference.core import Context
from xspec.reference.keyspace import SELF_EXPIRING, expire_if_needed
from xspec.reference.notify import notify_keyspace_event
from xspec.reference.values import handler_table
from xspec.spec import commands as table
from xspec.spec.ids import I64_MAX, c_string, string2ll
from xspec.spec.resp import Int, Reply

__all__ = ["HANDLERS", "deletion_word", "invalid_expire", "look", "past_expiry_event", "propagate_as"]

HANDLERS, _handler = handler_table()
SELF_EXPIRING.update({"expire", "pexpire", "expireat", "pexpireat", "ttl", "pttl", "expiretime", "pexpiretime",
                      "persist"})
_FLAG_WORDS = {b"nx", b"xx", b"gt", b"lt"}


def look(ctx: Context, key: bytes) -> Any:
    """``lookupKey``: expire ``key`` if due (EXPIRE-LAZY-1), then its value or None."""
    db = ctx.db
    if key in db.expires:  # type: ignore[attr-defined]
        expire_if_needed(ctx.core, ctx.client.db, key, ctx.now_ms())
    return db.get(key)


def propagate_as(ctx: Context, *argvs: list[bytes]) -> None:
    """The command propagates ``argvs`` instead of its own argv (when it changed something)."""
    p = ctx.core.propagation
    if p is not None:
        p.replacement = [list(a) for a in argvs]


def deletion_word(ctx: Context, setting: str) -> bytes:
    return b"UNLINK" if ctx.core.config.get(setting, "no") == "yes" else b"DEL"


def invalid_expire(ctx: Context) -> ReplyError:
    """EXPIRE-2's error: 7.0+ quote the command name, 6.2 does not (EXPIRE-DIALECT-1)."""
    spec = ctx.spec
    name = spec.fullname if spec is not None else "?"
    if ctx.dialect.set_invalid_expire_error.endswith("'set' command"):
        return ReplyError(f"ERR invalid expire time in '{name}' command")
    return ReplyError(f"ERR invalid expire time in {name}")


def past_expiry_event(ctx: Context, key: bytes) -> None:
    """A key deleted for a time already past: "del", or "expired" in Valkey (EXPIRE-DIALECT-2)."""
    if ctx.dialect.past_expiry_notifies_expired:
        notify_keyspace_event(ctx, "x", "expired", key)
    else:
        notify_keyspace_event(ctx, "g", "del", key)


def _options(argv: list[bytes]) -> frozenset[bytes]:
    seen: set[bytes] = set()
    for raw in argv[3:]:  # EXPIRE-3
        w = c_string(raw).lower()
        if w not in _FLAG_WORDS:
            raise ReplyError("ERR Unsupported option " + c_string(raw).decode("latin-1"))
        seen.add(w)
    if b"nx" in seen and len(seen) > 1:
        raise ReplyError("ERR NX and XX, GT or LT options at the same time are not compatible")
    if {b"gt", b"lt"} <= seen:
        raise ReplyError("ERR GT and LT options at the same time are not compatible")
    return frozenset(seen)


def _expire(ctx: Context, relative: bool, unit_ms: int) -> Reply:
    argv = ctx.argv
    key = argv[1]
    opts = _options(argv)
    n = string2ll(argv[2])
    if n is None:  # EXPIRE-1
        raise ReplyError(table.NOT_INTEGER)
    if unit_ms == 1000 and not -(2 ** 63 // 1000) <= n <= I64_MAX // 1000:  # EXPIRE-2
        raise invalid_expire(ctx)
    n *= unit_ms
    base = ctx.now_ms() if relative else 0
    if n > I64_MAX - base:  # EXPIRE-2
        raise invalid_expire(ctx)
    when = n + base
    if look(ctx, key) is None:  # EXPIRE-4
        return Int(0)
    db: Any = ctx.db
    current = db.expires.get(key)
    if opts and (  # EXPIRE-5
            (b"nx" in opts and current is not None) or (b"xx" in opts and current is None)
            or (b"gt" in opts and (current is None or when <= current))
            or (b"lt" in opts and current is not None and when >= current)):
        return Int(0)
    ctx.changed()
    if when <= ctx.now_ms():  # EXPIRE-6
        db.pop(key)
        ctx.deleted(key)
        past_expiry_event(ctx, key)  # NOTIFY-1
        propagate_as(ctx, [deletion_word(ctx, "lazyfree-lazy-expire"), key])
        return Int(1)
    db.expires[key] = when  # EXPIRE-7
    ctx.modified(key)
    notify_keyspace_event(ctx, "g", "expire", key)  # NOTIFY-1
    if ctx.spec is not None and ctx.spec.name != "pexpireat" and ctx.dialect.set_expiry_propagation != "px":
        # EXPIRE-8 (EXPIRE-DIALECT-1: 6.2 propagates them as typed)
        propagate_as(ctx, [b"PEXPIREAT", key, b"%d" % when, *argv[3:]])
    return Int(1)


@_handler("expire")
def expire(ctx: Context) -> Reply:
    return _expire(ctx, True, 1000)


@_handler("pexpire")
def pexpire(ctx: Context) -> Reply:
    return _expire(ctx, True, 1)


@_handler("expireat")
def expireat(ctx: Context) -> Reply:
    return _expire(ctx, False, 1000)


@_handler("pexpireat")
def pexpireat(ctx: Context) -> Reply:
    return _expire(ctx, False, 1)


def _ttl(ctx: Context, in_ms: bool, absolute: bool) -> Reply:
    key = ctx.argv[1]
    if look(ctx, key) is None:  # TTL-1
        return Int(-2)
    when = ctx.db.expires.get(key)  # type: ignore[attr-defined]
    if when is None:  # TTL-2
        return Int(-1)
    left = when if absolute else max(when - ctx.now_ms(), 0)  # TTL-3
    if in_ms:
        return Int(left)
    return Int((left + 500) // 1000)  # TTL-3: EXPIRETIME rounds as TTL does


@_handler("ttl")
def ttl(ctx: Context) -> Reply:
    return _ttl(ctx, False, False)


@_handler("pttl")
def pttl(ctx: Context) -> Reply:
    return _ttl(ctx, True, False)


@_handler("expiretime")
def expiretime(ctx: Context) -> Reply:
    return _ttl(ctx, False, True)


@_handler("pexpiretime")
def pexpiretime(ctx: Context) -> Reply:
    return _ttl(ctx, True, True)


@_handler("persist")
def persist(ctx: Context) -> Reply:
    key = ctx.argv[1]
    if look(ctx, key) is None or ctx.db.expires.pop(key, None) is None:  # type: ignore[attr-defined]  # PERSIST-1
        return Int(0)
    ctx.modified(key)  # PERSIST-2
    notify_keyspace_event(ctx, "g", "persist", key)  # NOTIFY-1
    ctx.changed()
    return Int(1)
