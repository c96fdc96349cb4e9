"""The reference server's BITFIELD and BITFIELD_RO (spec/rules/bitfield.md), written apart from the model.

The string is handled as one big-endian integer window per operation: the bytes the field spans are
read, the field's bits taken out or put in, and the bytes written back.
"""

from __future__ import annotations

from typing import Any

from xspec.reference.api import ReplyError
from xspec.reference.core import Context
from xspec.reference.notify import notify_keyspace_event, notify_new
from xspec.reference.values import handler_table
from xspec.spec import commands as table
from xspec.spec.ids import c_string, string2ll
from xspec.spec.resp import NULL_BULK, Array, Int, Reply

__all__ = ["HANDLERS"]


def keep(db: Any, key: bytes, value: bytes) -> None:
    """Store ``value`` keeping the key's expiry time (``Database.keep``; a plain dict has no times)."""
    if hasattr(db, "keep"):
        db.keep(key, value)
    else:
        db[key] = value

HANDLERS, _handler = handler_table()
_M64 = (1 << 64) - 1


def _s64(v: int) -> int:
    v &= _M64
    return v - (1 << 64) if v & (1 << 63) else v


def _field_type(arg: bytes) -> tuple[bool, int]:
    t = c_string(arg)
    n = string2ll(t[1:]) if t[:1] in (b"i", b"u") else None
    signed = t[:1] == b"i"
    if n is None or not 1 <= n <= (64 if signed else 63):  # BITFIELD-2
        raise ReplyError("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported "
                         "but i64 is.")
    return signed, n


def _field_offset(arg: bytes, bits: int) -> int:
    by_width = arg.startswith(b"#")
    n = string2ll(arg[1:] if by_width else arg)
    if n is not None and by_width:
        n = _s64(n * bits)
    if n is None or n < 0 or n >> 3 >= 512 * 1024 * 1024:  # BITFIELD-3
        raise ReplyError("ERR bit offset is not an integer or out of range")
    return n


def _get(buf: bytearray, offset: int, bits: int, signed: bool) -> int:
    lo, hi = offset // 8, (offset + bits + 7) // 8
    chunk = bytes(buf[lo:hi])
    window = int.from_bytes(chunk + bytes(hi - lo - len(chunk)), "big")  # past the end: zeros
    shift = hi * 8 - offset - bits
    v = (window >> shift) & ((1 << bits) - 1)
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return v


def _put(buf: bytearray, offset: int, bits: int, v: int) -> None:
    lo, hi = offset // 8, (offset + bits + 7) // 8
    window = int.from_bytes(buf[lo:hi], "big")
    shift = hi * 8 - offset - bits
    mask = ((1 << bits) - 1) << shift
    window = (window & ~mask) | ((v << shift) & mask)
    buf[lo:hi] = window.to_bytes(hi - lo, "big")


def _overflowed(signed: bool, bits: int, value: int, incr: int, how: bytes) -> tuple[bool, int]:
    """BITFIELD-4: whether the result leaves the type's range, and what is stored (WRAP, SAT)."""
    if signed:
        hi = (1 << (bits - 1)) - 1
        lo = -hi - 1
        up = _s64(hi - value)
        down = _s64(lo - value)
        if value > hi or (bits < 64 and incr > up) or (value >= 0 and incr > 0 and incr > up):
            sat = hi
        elif value < lo or (bits < 64 and incr < down) or (value < 0 and incr < 0 and incr < down):
            sat = lo
        else:
            return False, value + incr
        total = (value + incr) & ((1 << bits) - 1)
        wrapped = total - (1 << bits) if total >> (bits - 1) else total
        return True, wrapped if how == b"wrap" else sat
    hi = (1 << bits) - 1
    value &= _M64
    if value > hi or (incr > 0 and incr > hi - value):
        sat = hi
    elif incr < 0 and incr < -value:
        sat = 0
    else:
        return False, value + incr
    return True, (value + incr) & hi if how == b"wrap" else sat


def _bitfield(ctx: Context, readonly: bool) -> Reply:
    argv = ctx.argv
    plan: list[tuple[bytes, bool, int, int, int, bytes]] = []
    how = b"wrap"
    j = 2
    while j < len(argv):  # BITFIELD-1
        w = c_string(argv[j]).lower()
        rest = len(argv) - j - 1
        if w == b"overflow" and rest >= 1:
            how = c_string(argv[j + 1]).lower()
            if how not in (b"wrap", b"sat", b"fail"):
                raise ReplyError("ERR Invalid OVERFLOW type specified")
            j += 2
            continue
        if not (w == b"get" and rest >= 2 or w in (b"set", b"incrby") and rest >= 3):
            raise ReplyError(table.SYNTAX)
        signed, bits = _field_type(argv[j + 1])
        offset = _field_offset(argv[j + 2], bits)
        arg = 0
        if w != b"get":
            parsed = string2ll(argv[j + 3])
            if parsed is None:
                raise ReplyError(table.NOT_INTEGER)
            arg = parsed
        plan.append((w, signed, bits, offset, arg, how))
        j += 3 if w == b"get" else 4
    writing = any(p[0] != b"get" for p in plan)
    if writing and readonly:  # BITFIELD-7
        raise ReplyError("ERR BITFIELD_RO only supports the GET subcommand")
    key = argv[1]
    current = ctx.db.get(key)
    if current is not None and type(current) is not bytes:  # BITFIELD-5
        raise ReplyError(table.WRONGTYPE)
    buf = bytearray(current or b"")
    dirty = False
    if writing:
        size = max((p[3] + p[2] - 1) // 8 + 1 for p in plan if p[0] != b"get")
        if current is None or len(buf) < size:
            buf += bytes(size - len(buf))
            dirty = True
        if current is None:
            ctx.db[key] = bytes(buf)
            notify_new(ctx, key)
    out: list[Reply] = []
    changes = 0
    for w, signed, bits, offset, arg, mode in plan:
        before = _get(buf, offset, bits, signed)
        if w == b"get":
            out.append(Int(before))
            continue
        over, after = _overflowed(signed, bits, before if w == b"incrby" else arg, arg if w == b"incrby" else 0,
                                  mode)
        if over and mode == b"fail":
            out.append(NULL_BULK)
            continue
        out.append(Int(after if w == b"incrby" else before))
        _put(buf, offset, bits, after)
        if dirty or _get(buf, offset, bits, signed) != before:
            changes += 1
    if writing:
        keep(ctx.db, key, bytes(buf))  # BITFIELD-5: the key keeps its expiry time
    if changes:  # BITFIELD-6
        ctx.modified(key)
        notify_keyspace_event(ctx, "$", "setbit", key)
        ctx.changed(changes)
    return Array(tuple(out))


@_handler("bitfield")
def bitfield(ctx: Context) -> Reply:
    return _bitfield(ctx, False)


@_handler("bitfield_ro")
def bitfield_ro(ctx: Context) -> Reply:
    return _bitfield(ctx, True)
