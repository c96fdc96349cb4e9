"""The reference server's string commands (spec/rules/strings.md), written apart from the model:
SET with its options, SETNX SETEX PSETEX, GET GETDEL GETEX GETSET, MGET MSET MSETNX, the INCR family,
INCRBYFLOAT, APPEND STRLEN GETRANGE SUBSTR SETRANGE.

A string is ``bytes``. In-place changes keep the key's expiry time (``Database.keep``); SET without
KEEPTTL, GETSET and MSET store a new value and drop it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from xspec.reference.api import ReplyError
from xspec.reference.core import Context
from xspec.reference.expiry import deletion_word, invalid_expire, look, past_expiry_event, propagate_as
from xspec.reference.keyspace import SELF_EXPIRING, expire_if_needed, store
from xspec.reference.notify import notify_keyspace_event, notify_new
from xspec.reference.values import bulk_reply, handler_table, int_reply, integer
from xspec.spec import commands as table
from xspec.spec.floats import round_long_double, string2ld
from xspec.spec.ids import I64_MAX, I64_MIN, c_string
from xspec.spec.resp import NULL_BULK, OK, Array, Bulk, Int, Reply

__all__ = ["HANDLERS", "ld_human", "long_double_sum"]

HANDLERS, _handler = handler_table()
SELF_EXPIRING.update({"set", "get", "getdel", "getex", "getset", "setnx", "setex", "psetex", "mget", "mset",
                      "msetnx", "incr", "decr", "incrby", "decrby", "incrbyfloat", "append", "strlen", "getrange",
                      "substr", "setrange"})

MAX_STRING = 512 * 1024 * 1024
TOO_BIG = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
_UNITS = {b"ex": (1000, True), b"px": (1, True), b"exat": (1000, False), b"pxat": (1, False)}
_LD_MAX = Fraction(2 ** 64 - 1) * Fraction(2) ** (16383 - 63)


def _string(ctx: Context, key: bytes) -> bytes | None:
    v = look(ctx, key)
    if v is not None and type(v) is not bytes:
        raise ReplyError(table.WRONGTYPE)  # STRING-1
    return v


def _db(ctx: Context) -> Any:
    return ctx.db


def _overwrite(ctx: Context, key: bytes, value: bytes, keepttl: bool = False) -> None:
    db = _db(ctx)
    old = db.get(key)
    if keepttl:
        db.keep(key, value)
    else:
        db[key] = value
    if old is None:
        notify_new(ctx, key)  # NOTIFY-3
    if old is not None and type(old) is not bytes and getattr(old, "kind", "stream") == "stream":
        ctx.deleted(key)
    else:
        ctx.modified(key)


def _fresh(ctx: Context, key: bytes, value: bytes) -> None:
    """A new string at a missing key (``dbAdd``)."""
    _db(ctx)[key] = value
    notify_new(ctx, key)  # NOTIFY-3


# -- option parsing ---------------------------------------------------------------------------
def _options(ctx: Context, start: int, getex: bool) -> tuple[set[bytes], bytes | None, bytes]:
    """SET-1 / GETEX-1: flags, the expiry unit and its argument."""
    argv = ctx.argv
    nx_get_ok = ctx.dialect.set_nx_with_get
    flags: set[bytes] = set()
    unit: bytes | None = None
    amount = b""
    i = start
    while i < len(argv):
        w = c_string(argv[i]).lower()
        if w in _UNITS:
            if flags & {b"keepttl", b"persist"} or (unit is not None and unit != w) or i + 1 >= len(argv):
                raise ReplyError(table.SYNTAX)
            unit, amount = w, argv[i + 1]
            i += 2
            continue
        ok = False
        if getex:
            ok = w == b"persist" and unit is None
        elif w == b"nx":
            ok = b"xx" not in flags and (nx_get_ok or b"get" not in flags)
        elif w == b"xx":
            ok = b"nx" not in flags
        elif w == b"get":
            ok = nx_get_ok or b"nx" not in flags
        elif w == b"keepttl":
            ok = unit is None
        if not ok:
            raise ReplyError(table.SYNTAX)
        flags.add(w)
        i += 1
    return flags, unit, amount


def _expiry_ms(ctx: Context, unit: bytes, amount: bytes) -> int:
    """SET-2: the absolute expiry in ms."""
    n = integer(amount)
    scale, relative = _UNITS[unit]
    if n <= 0 or (scale == 1000 and n > I64_MAX // 1000):
        raise invalid_expire(ctx)
    n *= scale
    if relative:
        n += ctx.now_ms()
        if n > I64_MAX:
            raise invalid_expire(ctx)
    return n


def _set(ctx: Context, key: bytes, value: bytes, flags: set[bytes], unit: bytes | None, amount: bytes,
         ok: Reply = OK, abort: Reply = NULL_BULK) -> Reply:
    when = _expiry_ms(ctx, unit, amount) if unit is not None else None  # SET-2
    getting = b"get" in flags
    old_reply: Reply = NULL_BULK
    if getting:  # SET-3
        old = _string(ctx, key)
        old_reply = NULL_BULK if old is None else Bulk(old)
    exists = look(ctx, key) is not None
    if (b"nx" in flags and exists) or (b"xx" in flags and not exists):  # SET-4
        return old_reply if getting else abort
    _overwrite(ctx, key, value, b"keepttl" in flags)  # SET-5
    ctx.changed()
    notify_keyspace_event(ctx, "$", "set", key)  # NOTIFY-1
    if when is not None:  # SET-7
        _db(ctx).expires[key] = when
        notify_keyspace_event(ctx, "g", "expire", key)
        style = ctx.dialect.set_expiry_propagation  # SET-6, SET-DIALECT-2
        name = ctx.spec.name if ctx.spec is not None else "set"
        if style == "pxat-verbatim" and unit == b"pxat" and name == "set":
            pass
        elif style == "px" and unit in (b"ex", b"px"):
            propagate_as(ctx, [b"SET", key, value, b"PX", b"%d" % (when - ctx.now_ms())])
        else:
            propagate_as(ctx, [b"SET", key, value, b"PXAT", b"%d" % when])
    elif getting:
        propagate_as(ctx, [a for j, a in enumerate(ctx.argv) if j < 3 or c_string(a).lower() != b"get"])
    return old_reply if getting else ok


@_handler("set")
def set_(ctx: Context) -> Reply:
    argv = ctx.argv
    core = ctx.core
    if len(argv) == 3 and not getattr(core, "notify_events", None):  # a core stand-in may have none
        # No option and no event class on: what _set does for a plain SET, without its generality.
        key = argv[1]
        db: Any = ctx.db
        if key in db.expires:
            expire_if_needed(core, ctx.client.db, key, ctx.now_ms())  # look(): EXPIRE-LAZY-1
        old = db.get(key)
        store(db, key, argv[2])  # SET-5
        if old is not None and type(old) is not bytes and getattr(old, "kind", "stream") == "stream":
            ctx.deleted(key)
        elif core.watchers or core.tracking.table or core.tracking.prefixes:
            ctx.modified(key)
        core.dirty += 1
        return OK
    flags, unit, amount = _options(ctx, 3, False)
    return _set(ctx, ctx.argv[1], ctx.argv[2], flags, unit, amount)


@_handler("setnx")
def setnx(ctx: Context) -> Reply:
    return _set(ctx, ctx.argv[1], ctx.argv[2], {b"nx"}, None, b"", Int(1), Int(0))  # SETNX-1


@_handler("setex")
def setex(ctx: Context) -> Reply:
    return _set(ctx, ctx.argv[1], ctx.argv[3], set(), b"ex", ctx.argv[2])  # SETEX-1


@_handler("psetex")
def psetex(ctx: Context) -> Reply:
    return _set(ctx, ctx.argv[1], ctx.argv[3], set(), b"px", ctx.argv[2])  # SETEX-1


# -- reads and their writing kin -----------------------------------------------------------------
@_handler("get")
def get(ctx: Context) -> Reply:
    key = ctx.argv[1]
    db: Any = ctx.db
    if key in db.expires:
        expire_if_needed(ctx.core, ctx.client.db, key, ctx.now_ms())  # look(): EXPIRE-LAZY-1
    v = db.get(key)
    if v is None:
        return NULL_BULK
    if type(v) is not bytes:
        raise ReplyError(table.WRONGTYPE)  # STRING-1
    return bulk_reply(v)  # GET-1


@_handler("getdel")
def getdel(ctx: Context) -> Reply:
    key = ctx.argv[1]
    v = _string(ctx, key)  # GETDEL-1
    if v is None:
        return NULL_BULK
    _db(ctx).pop(key)  # GETDEL-2
    ctx.deleted(key)
    notify_keyspace_event(ctx, "g", "del", key)  # NOTIFY-1
    ctx.changed()
    propagate_as(ctx, [deletion_word(ctx, "lazyfree-lazy-user-del"), key])
    return Bulk(v)


@_handler("getex")
def getex(ctx: Context) -> Reply:
    key = ctx.argv[1]
    flags, unit, amount = _options(ctx, 2, True)  # GETEX-1
    early = None
    if unit is not None and ctx.dialect.getex_checks_time_first:  # GETEX-DIALECT-1
        early = _expiry_ms(ctx, unit, amount)
    v = _string(ctx, key)
    if v is None:  # GETEX-2
        return NULL_BULK
    db = _db(ctx)
    if unit is not None:
        when = early if early is not None else _expiry_ms(ctx, unit, amount)  # GETEX-3
        if unit in (b"exat", b"pxat") and when <= ctx.now_ms():  # GETEX-4
            db.pop(key)
            ctx.deleted(key)
            past_expiry_event(ctx, key)  # NOTIFY-1
            propagate_as(ctx, [deletion_word(ctx, "lazyfree-lazy-expire"), key])
        else:  # GETEX-5
            db.expires[key] = when
            ctx.modified(key)
            if unit in (b"ex", b"px") and ctx.dialect.set_expiry_propagation == "px":  # GETEX-DIALECT-2
                propagate_as(ctx, [b"PEXPIRE", key, b"%d" % (integer(amount) * _UNITS[unit][0])])
            else:
                propagate_as(ctx, [b"PEXPIREAT", key, b"%d" % when])
            notify_keyspace_event(ctx, "g", "expire", key)  # NOTIFY-1
        ctx.changed()
    elif b"persist" in flags and db.expires.pop(key, None) is not None:  # GETEX-6
        ctx.modified(key)
        notify_keyspace_event(ctx, "g", "persist", key)  # NOTIFY-1
        ctx.changed()
        propagate_as(ctx, [b"PERSIST", key])
    return Bulk(v)


@_handler("getset")
def getset(ctx: Context) -> Reply:
    key = ctx.argv[1]
    v = _string(ctx, key)  # GETSET-1
    _overwrite(ctx, key, ctx.argv[2])
    notify_keyspace_event(ctx, "$", "set", key)  # NOTIFY-1
    ctx.changed()
    propagate_as(ctx, [b"SET", key, ctx.argv[2]])  # GETSET-2
    return NULL_BULK if v is None else Bulk(v)


@_handler("mget")
def mget(ctx: Context) -> Reply:
    values = [look(ctx, k) for k in ctx.argv[1:]]  # MGET-1
    return Array(tuple(Bulk(v) if type(v) is bytes else NULL_BULK for v in values))


def _mset(ctx: Context, nx: bool) -> Reply:
    argv = ctx.argv
    if len(argv) % 2 == 0:  # MSET-1
        if not ctx.dialect.set_nx_with_get:  # STRING-DIALECT-1
            raise ReplyError("ERR wrong number of arguments for MSET")
        raise ReplyError(table.arity_error(ctx.spec))  # type: ignore[arg-type]
    keys = argv[1::2]
    if nx and any(look(ctx, k) is not None for k in keys):  # MSET-2
        return Int(0)
    for j in range(1, len(argv), 2):  # MSET-3
        _overwrite(ctx, argv[j], argv[j + 1])
        notify_keyspace_event(ctx, "$", "set", argv[j])  # NOTIFY-1
    ctx.changed(len(keys))
    return Int(1) if nx else OK


@_handler("mset")
def mset(ctx: Context) -> Reply:
    return _mset(ctx, False)


@_handler("msetnx")
def msetnx(ctx: Context) -> Reply:
    return _mset(ctx, True)


# -- counters ----------------------------------------------------------------------------------
def _add(ctx: Context, delta: int) -> Reply:
    key = ctx.argv[1]
    cur = _string(ctx, key)  # INCR-1
    n = 0 if cur is None else integer(cur)  # INCR-2
    total = n + delta
    if not I64_MIN <= total <= I64_MAX:  # INCR-3
        raise ReplyError("ERR increment or decrement would overflow")
    db = _db(ctx)
    if cur is None:
        _fresh(ctx, key, b"%d" % total)
    else:
        db.keep(key, b"%d" % total)  # STRING-2
    ctx.modified(key)
    notify_keyspace_event(ctx, "$", "incrby", key)  # NOTIFY-1
    ctx.changed()
    return int_reply(total)


@_handler("incr")
def incr(ctx: Context) -> Reply:
    return _add(ctx, 1)


@_handler("decr")
def decr(ctx: Context) -> Reply:
    return _add(ctx, -1)


@_handler("incrby")
def incrby(ctx: Context) -> Reply:
    return _add(ctx, integer(ctx.argv[2]))  # INCR-2: the increment first


@_handler("decrby")
def decrby(ctx: Context) -> Reply:
    by = integer(ctx.argv[2])
    if by == I64_MIN:
        if ctx.dialect.set_nx_with_get:  # INCR-3 (INCR-DIALECT-1: not in 6.2)
            raise ReplyError("ERR decrement would overflow")
        return _add(ctx, I64_MIN)
    return _add(ctx, -by)


def ld_human(value: Fraction) -> bytes:
    """``%.17Lf`` of an exact long double, trailing zeros (and a bare point) dropped; -0 as 0."""
    units = value * 10 ** 17
    whole, frac = divmod(units.numerator, units.denominator)
    twice = 2 * frac
    if twice > units.denominator or (twice == units.denominator and whole & 1):
        whole += 1
    negative = whole < 0
    digits = f"{abs(whole):018d}"
    text = digits[:-17] + "." + digits[-17:]
    text = text.rstrip("0").rstrip(".")
    if negative and text != "0":
        text = "-" + text
    return text.encode()


def long_double_sum(current: bytes | None, by: bytes, current_error: str) -> bytes:
    """INCRBYFLOAT-2 / HINCRBYFLOAT: the long double sum, formatted as Redis does."""
    a = Fraction(0) if current is None else string2ld(current)
    if a is None:
        raise ReplyError(current_error)
    b = string2ld(by)
    if b is None:
        raise ReplyError("ERR value is not a valid float")
    if isinstance(a, float) or isinstance(b, float):
        raise ReplyError("ERR increment would produce NaN or Infinity")
    total = round_long_double(Fraction(a) + Fraction(b))
    if abs(total) > _LD_MAX:
        raise ReplyError("ERR increment would produce NaN or Infinity")
    return ld_human(total)


@_handler("incrbyfloat")
def incrbyfloat(ctx: Context) -> Reply:
    key = ctx.argv[1]
    cur = _string(ctx, key)  # INCRBYFLOAT-1
    new = long_double_sum(cur, ctx.argv[2], "ERR value is not a valid float")  # INCRBYFLOAT-2
    db = _db(ctx)
    if cur is None:
        _fresh(ctx, key, new)
    else:
        db.keep(key, new)
    ctx.modified(key)
    notify_keyspace_event(ctx, "$", "incrbyfloat", key)  # NOTIFY-1
    ctx.changed()
    propagate_as(ctx, [b"SET", key, new, b"KEEPTTL"])  # INCRBYFLOAT-3
    return Bulk(new)


# -- APPEND, STRLEN, ranges ------------------------------------------------------------------------
@_handler("append")
def append(ctx: Context) -> Reply:
    key, more = ctx.argv[1], ctx.argv[2]
    cur = _string(ctx, key)  # APPEND-1
    db = _db(ctx)
    if cur is None:
        _fresh(ctx, key, more)
        new = more
    else:
        if len(cur) + len(more) > MAX_STRING:  # APPEND-2
            raise ReplyError(TOO_BIG)
        new = cur + more
        db.keep(key, new)
    ctx.modified(key)
    notify_keyspace_event(ctx, "$", "append", key)  # NOTIFY-1
    ctx.changed()
    return Int(len(new))


@_handler("strlen")
def strlen(ctx: Context) -> Reply:
    cur = _string(ctx, ctx.argv[1])  # STRLEN-1
    return Int(len(cur) if cur is not None else 0)


def _range(ctx: Context) -> Reply:
    start, end = integer(ctx.argv[2]), integer(ctx.argv[3])  # GETRANGE-1
    cur = _string(ctx, ctx.argv[1])
    if not cur:  # GETRANGE-2
        return Bulk(b"")
    size = len(cur)
    if start < 0 and end < 0 and start > end:  # GETRANGE-3
        return Bulk(b"")
    start = max(start + size if start < 0 else start, 0)
    end = min(max(end + size if end < 0 else end, 0), size - 1)
    return Bulk(cur[start:end + 1] if start <= end else b"")


@_handler("getrange")
def getrange(ctx: Context) -> Reply:
    return _range(ctx)


@_handler("substr")
def substr(ctx: Context) -> Reply:
    return _range(ctx)


@_handler("setrange")
def setrange(ctx: Context) -> Reply:
    key, piece = ctx.argv[1], ctx.argv[3]
    offset = integer(ctx.argv[2])  # SETRANGE-1
    if offset < 0:
        raise ReplyError("ERR offset is out of range")
    cur = _string(ctx, key)  # SETRANGE-2
    if not piece:
        return Int(0 if cur is None else len(cur))
    if offset + len(piece) > MAX_STRING:  # SETRANGE-3
        raise ReplyError(TOO_BIG)
    buf = bytearray(cur or b"")
    if len(buf) < offset + len(piece):
        buf.extend(bytes(offset + len(piece) - len(buf)))
    buf[offset:offset + len(piece)] = piece
    db = _db(ctx)
    if cur is None:
        _fresh(ctx, key, bytes(buf))
    else:
        db.keep(key, bytes(buf))
    ctx.modified(key)
    notify_keyspace_event(ctx, "$", "setrange", key)  # NOTIFY-1
    ctx.changed()
    return Int(len(buf))
