"""The string commands (spec/rules/strings.md): SET with every option, GET and its kin, the counters,
APPEND and the ranges, MGET/MSET, as Redis 7.0.15's ``t_string.c`` runs them.

A string value is ``bytes``. Each command looks its keys up (lazy expiry) where Redis does; a
command that changes a string in place (INCR, APPEND, SETRANGE, INCRBYFLOAT) keeps its expiry
time, one that sets it anew (SET without KEEPTTL, GETSET, MSET) drops it.
"""

from __future__ import annotations

from fractions import Fraction

from xspec.models.clock import Duration, Instant
from xspec.models.expiry import invalid_expire_time, keyspace, lookup, notify_past_expiry, set_expire
from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.server import SELF_EXPIRING, Call, CommandError, command
from xspec.spec import commands as table
from xspec.spec.floats import round_long_double, string2ld
from xspec.spec.ids import I64_MAX, I64_MIN, c_string, parse_ll
from xspec.spec.resp import NULL_BULK, OK, Array, Bulk, Int, Reply

SELF_EXPIRING.update("set get getdel getex getset setnx setex psetex mget mset msetnx incr decr incrby decrby "
                     "incrbyfloat append strlen getrange substr setrange".split())

PROTO_MAX_BULK_LEN = 512 * 1024 * 1024
STRING_TOO_LONG = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
_EXPIRE_OPTIONS = (b"ex", b"px", b"exat", b"pxat")


def string_at(call: Call, key: bytes) -> bytes | None:
    """``lookupKey`` + ``checkType``: the string at ``key``, None if missing; WRONGTYPE for another type."""
    v = lookup(call, key)
    if v is None or isinstance(v, bytes):
        return v
    raise CommandError(table.WRONGTYPE)  # STRING-1


def get_value(call: Call, key: bytes) -> Reply:
    """``getGenericCommand``: the string at ``key``, a null bulk, or WRONGTYPE (GET-1)."""
    v = string_at(call, key)
    return NULL_BULK if v is None else Bulk(v)


def _store(call: Call, key: bytes, value: bytes, keepttl: bool = False) -> None:
    """``setKey``: store ``value``; the key's time is dropped unless ``keepttl`` (SET-5)."""
    db = keyspace(call)
    old = db.get(key)
    if keepttl:
        db.replace(key, value)
    else:
        db[key] = value
    if old is not None:
        call.deleted(key, old)
    else:
        notify_new(call, key)  # NOTIFY-3
    call.modified(key)


def _created(call: Call, key: bytes, value: bytes) -> None:
    """``dbAdd`` of a new string: stored, its ``new`` event (NOTIFY-3), watchers told."""
    keyspace(call)[key] = value
    notify_new(call, key)
    call.modified(key)


def _replace(call: Call, key: bytes, value: bytes) -> None:
    """A string changed in place (``dbOverwrite``/``dbUnshareStringValue``): the time stays (STRING-2)."""
    keyspace(call).replace(key, value)
    call.modified(key)


# -- SET and its short forms ---------------------------------------------------------------
def _parse_set_options(call: Call, first: int, for_get: bool) -> tuple[set[bytes], bytes | None, bytes]:
    """``parseExtendedStringArgumentsOrReply`` for SET (``for_get`` False) and GETEX (SET-1, GETEX-1)."""
    argv = call.argv
    nx_with_get = call.server.dialect.set_nx_with_get  # SET-DIALECT-1: 6.2 refuses GET and NX together
    flags: set[bytes] = set()
    unit: bytes | None = None
    amount = b""
    i = first
    while i < len(argv):
        opt = c_string(argv[i]).lower()
        has_next = i + 1 < len(argv)
        if not for_get and opt == b"nx" and b"xx" not in flags and (nx_with_get or b"get" not in flags):
            flags.add(opt)
        elif not for_get and opt == b"xx" and b"nx" not in flags:
            flags.add(opt)
        elif not for_get and opt == b"get" and (nx_with_get or b"nx" not in flags):
            flags.add(opt)
        elif not for_get and opt == b"keepttl" and unit is None:
            flags.add(opt)
        elif for_get and opt == b"persist" and unit is None:
            flags.add(opt)
        elif opt in _EXPIRE_OPTIONS and not flags & {b"keepttl", b"persist"} and unit in (None, opt) and has_next:
            unit = opt
            amount = argv[i + 1]
            i += 1
        else:
            raise CommandError(table.SYNTAX)
        i += 1
    return flags, unit, amount


def expire_time(call: Call, unit: bytes, arg: bytes) -> tuple[Duration, Instant]:
    """``getExpireMillisecondsOrReply``: the time in ms as given (relative for EX/PX) and as an instant (SET-2)."""
    ms = parse_ll(arg)
    if ms is None:
        raise CommandError(table.NOT_INTEGER)
    seconds = unit in (b"ex", b"exat")
    if ms <= 0 or (seconds and ms > I64_MAX // 1000):
        raise CommandError(invalid_expire_time(call))
    if seconds:
        ms *= 1000
    if unit in (b"ex", b"px"):
        when = call.now() + Duration(ms)
        if when > Instant(I64_MAX):  # the C sum overflows and turns negative
            raise CommandError(invalid_expire_time(call))
        return Duration(ms), when
    return Duration(ms), Instant(ms)


def _set_propagation(call: Call, key: bytes, value: bytes, unit: bytes | None,
                     expire: tuple[Duration, Instant] | None, get: bool) -> list[bytes | int]:
    """The argv a SET that wrote sends to replicas and the AOF (SET-6, SET-DIALECT-2)."""
    argv = call.argv
    style = call.server.dialect.set_expiry_propagation
    if expire is not None and not (unit == b"pxat" and style == "pxat-verbatim" and call.spec.name == "set"):
        relative, absolute = expire
        if style == "px" and unit in (b"ex", b"px"):  # SET-DIALECT-2: 6.2 sends EX and PX as PX <ms>
            return [b"SET", key, value, b"PX", Duration.propagated_ms(relative)]
        return [b"SET", key, value, b"PXAT", Instant.propagated_ms(absolute)]  # SET-6: every expiry becomes PXAT
    if get and expire is None:
        # SET-6: every GET option is dropped (matched as C does, up to the first NUL)
        return [a for n, a in enumerate(argv) if n < 3 or c_string(a).lower() != b"get"]
    return list[bytes | int](argv)  # SET-DIALECT-2: Valkey sends a PXAT SET as typed, GET included


def set_generic(call: Call, key: bytes, value: bytes, flags: set[bytes], unit: bytes | None, amount: bytes,
                ok: Reply = OK, abort: Reply = NULL_BULK) -> Reply:
    """``setGenericCommand`` (SET-2 .. SET-6)."""
    expire: tuple[Duration, Instant] | None = None
    if unit is not None:  # SET-2
        expire = expire_time(call, unit, amount)
    get = b"get" in flags
    reply: Reply = ok
    if get:  # SET-3
        reply = get_value(call, key)
    found = lookup(call, key) is not None
    if (b"nx" in flags and found) or (b"xx" in flags and not found):  # SET-4
        return reply if get else abort
    _store(call, key, value, b"keepttl" in flags)  # SET-5
    call.changed()  # STATS-5
    notify_keyspace_event(call, "$", "set", key)  # NOTIFY-1
    if expire is not None:  # SET-7
        set_expire(call, key, expire[1])
        notify_keyspace_event(call, "g", "expire", key)
    call.propagate(_set_propagation(call, key, value, unit, expire, get))  # SET-6
    return reply


@command("set")
def set_(call: Call) -> Reply:
    flags, unit, amount = _parse_set_options(call, 3, for_get=False)  # SET-1
    return set_generic(call, call.argv[1], call.argv[2], flags, unit, amount)


@command("setnx")
def setnx(call: Call) -> Reply:
    return set_generic(call, call.argv[1], call.argv[2], {b"nx"}, None, b"", Int(1), Int(0))  # SETNX-1


@command("setex")
def setex(call: Call) -> Reply:
    return set_generic(call, call.argv[1], call.argv[3], set(), b"ex", call.argv[2])  # SETEX-1


@command("psetex")
def psetex(call: Call) -> Reply:
    return set_generic(call, call.argv[1], call.argv[3], set(), b"px", call.argv[2])  # SETEX-1


# -- GET and its kin -------------------------------------------------------------------------
@command("get")
def get(call: Call) -> Reply:
    return get_value(call, call.argv[1])  # GET-1


@command("getdel")
def getdel(call: Call) -> Reply:
    key = call.argv[1]
    reply = get_value(call, key)  # GETDEL-1
    old = call.db.pop(key, None)
    if old is not None:  # GETDEL-2
        call.deleted(key, old)
        call.modified(key)
        notify_keyspace_event(call, "g", "del", key)  # NOTIFY-1
        call.changed()
        call.propagate([call.server.deletion_word("lazyfree-lazy-user-del"), key])
    return reply


@command("getex")
def getex(call: Call) -> Reply:
    key = call.argv[1]
    flags, unit, amount = _parse_set_options(call, 2, for_get=True)  # GETEX-1
    expire: tuple[Duration, Instant] | None = None
    if unit is not None and call.server.dialect.getex_checks_time_first:  # GETEX-DIALECT-1
        expire = expire_time(call, unit, amount)
    v = string_at(call, key)
    if v is None:  # GETEX-2
        return NULL_BULK
    if unit is not None and expire is None:  # GETEX-3
        expire = expire_time(call, unit, amount)
    if expire is not None and unit in (b"exat", b"pxat") and expire[1] <= call.now():  # GETEX-4
        old = call.db.pop(key)
        call.deleted(key, old)
        call.modified(key)
        notify_past_expiry(call, key)  # NOTIFY-1
        call.changed()
        call.propagate([call.server.deletion_word("lazyfree-lazy-expire"), key])
    elif expire is not None:  # GETEX-5
        set_expire(call, key, expire[1])
        if unit in (b"ex", b"px") and call.server.dialect.set_expiry_propagation == "px":
            call.propagate([b"PEXPIRE", key, Duration.propagated_ms(expire[0])])  # GETEX-DIALECT-2
        else:
            call.propagate([b"PEXPIREAT", key, Instant.propagated_ms(expire[1])])
        call.modified(key)
        notify_keyspace_event(call, "g", "expire", key)  # NOTIFY-1
        call.changed()
    elif b"persist" in flags and keyspace(call).expires.pop(key, None) is not None:  # GETEX-6
        call.modified(key)
        notify_keyspace_event(call, "g", "persist", key)  # NOTIFY-1
        call.propagate([b"PERSIST", key])
        call.changed()
    return Bulk(v)


@command("getset")
def getset(call: Call) -> Reply:
    key = call.argv[1]
    reply = get_value(call, key)  # GETSET-1
    _store(call, key, call.argv[2])
    notify_keyspace_event(call, "$", "set", key)  # NOTIFY-1
    call.changed()
    call.propagate([b"SET", *call.argv[1:]])  # GETSET-2
    return reply


@command("mget")
def mget(call: Call) -> Reply:
    out: list[Reply] = []
    for key in call.argv[1:]:  # MGET-1: another type answers nil, not WRONGTYPE
        v = lookup(call, key)
        out.append(Bulk(v) if isinstance(v, bytes) else NULL_BULK)
    return Array(tuple(out))


def _mset(call: Call, nx: bool) -> Reply:
    argv = call.argv
    if len(argv) % 2 == 0:  # MSET-1
        if not call.server.dialect.set_nx_with_get:  # STRING-DIALECT-1: 6.2's own text, for MSETNX too
            raise CommandError("ERR wrong number of arguments for MSET")
        raise CommandError(table.arity_error(call.spec))
    if nx:
        for key in argv[1::2]:  # MSET-2
            if lookup(call, key) is not None:
                return Int(0)
    for key, value in zip(argv[1::2], argv[2::2], strict=True):  # MSET-3
        _store(call, key, value)
        notify_keyspace_event(call, "$", "set", key)  # NOTIFY-1
    call.changed(len(argv) // 2)
    call.propagate_verbatim()
    return Int(1) if nx else OK


@command("mset")
def mset(call: Call) -> Reply:
    return _mset(call, nx=False)


@command("msetnx")
def msetnx(call: Call) -> Reply:
    return _mset(call, nx=True)


# -- counters --------------------------------------------------------------------------------
def _incr_by(call: Call, incr: int) -> Reply:
    key = call.argv[1]
    v = string_at(call, key)  # INCR-1
    value = 0
    if v is not None:
        parsed = parse_ll(v)
        if parsed is None:  # INCR-2
            raise CommandError(table.NOT_INTEGER)
        value = parsed
    if (incr < 0 and value < 0 and incr < I64_MIN - value) or (incr > 0 and value > 0 and incr > I64_MAX - value):
        raise CommandError("ERR increment or decrement would overflow")  # INCR-3
    value += incr
    if v is None:
        _created(call, key, b"%d" % value)
    else:
        _replace(call, key, b"%d" % value)  # STRING-2: the time stays
    notify_keyspace_event(call, "$", "incrby", key)  # NOTIFY-1
    call.changed()
    call.propagate_verbatim()  # INCR-4
    return Int(value)


@command("incr")
def incr(call: Call) -> Reply:
    return _incr_by(call, 1)


@command("decr")
def decr(call: Call) -> Reply:
    return _incr_by(call, -1)


@command("incrby")
def incrby(call: Call) -> Reply:
    by = parse_ll(call.argv[2])
    if by is None:  # INCR-2: the increment is read before the key
        raise CommandError(table.NOT_INTEGER)
    return _incr_by(call, by)


@command("decrby")
def decrby(call: Call) -> Reply:
    by = parse_ll(call.argv[2])
    if by is None:  # INCR-2
        raise CommandError(table.NOT_INTEGER)
    if by == I64_MIN and call.server.dialect.set_nx_with_get:  # INCR-3; INCR-DIALECT-1: 6.2 has no such check
        raise CommandError("ERR decrement would overflow")
    return _incr_by(call, -by if by != I64_MIN else I64_MIN)


def long_double_text(q: Fraction) -> bytes:
    """``ld2string(..., LD_STR_HUMAN)``: ``%.17Lf`` of a long double, trailing zeros and point removed."""
    scaled = q * 10 ** 17
    n = scaled.numerator // scaled.denominator
    rest = scaled - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    sign = "-" if n < 0 else ""
    digits = str(abs(n)).rjust(18, "0")
    text = f"{sign}{digits[:-17]}.{digits[-17:]}".rstrip("0").rstrip(".")
    return text.encode()


def add_long_doubles(value: bytes | None, increment: bytes, not_float: str) -> bytes:
    """The long double sum of a stored number (None: 0) and an increment, as Redis formats it (INCRBYFLOAT-2)."""
    current = string2ld(value) if value is not None else Fraction(0)
    by = string2ld(increment)
    if current is None or by is None:
        raise CommandError(not_float)
    if isinstance(current, float) or isinstance(by, float):  # an infinity: the sum is NaN or infinite
        raise CommandError("ERR increment would produce NaN or Infinity")
    total = round_long_double(Fraction(current) + Fraction(by))
    if abs(total) > _LONG_DOUBLE_MAX:
        raise CommandError("ERR increment would produce NaN or Infinity")
    return long_double_text(total)


_LONG_DOUBLE_MAX = Fraction(2 ** 64 - 1) * Fraction(2) ** (16383 - 63)


@command("incrbyfloat")
def incrbyfloat(call: Call) -> Reply:
    key = call.argv[1]
    v = string_at(call, key)  # INCRBYFLOAT-1
    new = add_long_doubles(v, call.argv[2], "ERR value is not a valid float")  # INCRBYFLOAT-2
    if v is None:
        _created(call, key, new)
    else:
        _replace(call, key, new)
    notify_keyspace_event(call, "$", "incrbyfloat", key)  # NOTIFY-1
    call.changed()
    call.propagate([b"SET", key, new, b"KEEPTTL"])  # INCRBYFLOAT-3
    return Bulk(new)


# -- APPEND, STRLEN, GETRANGE, SETRANGE -------------------------------------------------------
@command("append")
def append(call: Call) -> Reply:
    key, extra = call.argv[1], call.argv[2]
    v = string_at(call, key)  # APPEND-1
    if v is None:
        _created(call, key, extra)
        new = extra
    else:
        if len(v) + len(extra) > PROTO_MAX_BULK_LEN:  # APPEND-2
            raise CommandError(STRING_TOO_LONG)
        new = v + extra
        _replace(call, key, new)
    notify_keyspace_event(call, "$", "append", key)  # NOTIFY-1
    call.changed()
    call.propagate_verbatim()
    return Int(len(new))


@command("strlen")
def strlen(call: Call) -> Reply:
    v = string_at(call, call.argv[1])  # STRLEN-1
    return Int(0 if v is None else len(v))


def _getrange(call: Call) -> Reply:
    start = parse_ll(call.argv[2])
    end = parse_ll(call.argv[3])
    if start is None or end is None:  # GETRANGE-1: both are read before the key
        raise CommandError(table.NOT_INTEGER)
    v = string_at(call, call.argv[1])
    if v is None:  # GETRANGE-2
        return Bulk(b"")
    n = len(v)
    if start < 0 and end < 0 and start > end:  # GETRANGE-3
        return Bulk(b"")
    if start < 0:
        start += n
    if end < 0:
        end += n
    start = max(start, 0)
    end = max(end, 0)
    if end >= n:
        end = n - 1
    if start > end or n == 0:
        return Bulk(b"")
    return Bulk(v[start:end + 1])


@command("getrange")
def getrange(call: Call) -> Reply:
    return _getrange(call)


@command("substr")
def substr(call: Call) -> Reply:
    return _getrange(call)


@command("setrange")
def setrange(call: Call) -> Reply:
    key, chunk = call.argv[1], call.argv[3]
    offset = parse_ll(call.argv[2])
    if offset is None:  # SETRANGE-1
        raise CommandError(table.NOT_INTEGER)
    if offset < 0:
        raise CommandError("ERR offset is out of range")
    v = string_at(call, key)  # SETRANGE-2
    if v is None and not chunk:
        return Int(0)
    if v is not None and not chunk:
        return Int(len(v))
    if offset + len(chunk) > PROTO_MAX_BULK_LEN:  # SETRANGE-3
        raise CommandError(STRING_TOO_LONG)
    base = v or b""
    if len(base) < offset + len(chunk):
        base = base + b"\x00" * (offset + len(chunk) - len(base))
    new = base[:offset] + chunk + base[offset + len(chunk):]
    if v is None:
        _created(call, key, new)
    else:
        _replace(call, key, new)
    notify_keyspace_event(call, "$", "setrange", key)  # NOTIFY-1
    call.changed()
    call.propagate_verbatim()
    return Int(len(new))

