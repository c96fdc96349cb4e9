"""BITFIELD and BITFIELD_RO (spec/rules/bitfield.md): integers of 1 to 64 bits at any bit offset of a string.

As Redis 7.0.15's ``bitfieldGeneric`` runs them: every operation is read before any runs; a command
with a write grows (or creates) the string to its farthest written bit first, then runs the operations
in order, each reply an integer, or a null for a write that OVERFLOW FAIL refused. Bits are numbered
from the most significant bit of the first byte.
"""

from __future__ import annotations

from dataclasses import dataclass

from xspec.models.expiry import keyspace
from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.server import Call, CommandError, command
from xspec.spec import commands as table
from xspec.spec.ids import c_string, parse_ll, string2ll
from xspec.spec.resp import NULL_BULK, Array, Int, Reply

U64 = (1 << 64) - 1
PROTO_MAX_BULK_LEN = 512 * 1024 * 1024
BAD_TYPE = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
BAD_OFFSET = "ERR bit offset is not an integer or out of range"
BAD_OVERFLOW = "ERR Invalid OVERFLOW type specified"
READONLY_GET_ONLY = "ERR BITFIELD_RO only supports the GET subcommand"
WRAP, SAT, FAIL = "wrap", "sat", "fail"


@dataclass(frozen=True)
class Op:
    """One GET, SET or INCRBY, with the OVERFLOW in force when it was read."""

    kind: str
    signed: bool
    bits: int
    offset: int
    value: int
    overflow: str


def parse_type(arg: bytes) -> tuple[bool, int]:
    """``getBitfieldTypeFromArgument``: i1..i64 or u1..u63 (BITFIELD-2)."""
    text = c_string(arg)
    if text[:1] not in (b"i", b"u"):
        raise CommandError(BAD_TYPE)
    signed = text[:1] == b"i"
    bits = string2ll(text[1:])
    if bits is None or bits < 1 or bits > (64 if signed else 63):
        raise CommandError(BAD_TYPE)
    return signed, bits


def parse_offset(arg: bytes, bits: int) -> int:
    """``getBitOffsetFromArgument``: a bit offset, or ``#n`` for n times the width (BITFIELD-3)."""
    hashed = arg[:1] == b"#"
    value = string2ll(arg[1:] if hashed else arg)
    if value is None:
        raise CommandError(BAD_OFFSET)
    if hashed:
        value = _wrap_signed(value * bits)
    if value < 0 or value >> 3 >= PROTO_MAX_BULK_LEN:
        raise CommandError(BAD_OFFSET)
    return value


def parse_ops(argv: list[bytes]) -> list[Op]:
    """Every operation, in order; the first malformed one stops the command before anything runs (BITFIELD-1)."""
    ops: list[Op] = []
    overflow = WRAP
    j = 2
    while j < len(argv):
        word = c_string(argv[j]).lower()
        left = len(argv) - j - 1
        if word == b"overflow" and left >= 1:
            how = c_string(argv[j + 1]).lower()
            if how not in (b"wrap", b"sat", b"fail"):
                raise CommandError(BAD_OVERFLOW)
            overflow = how.decode()
            j += 2
            continue
        if not ((word == b"get" and left >= 2) or (word in (b"set", b"incrby") and left >= 3)):
            raise CommandError(table.SYNTAX)
        signed, bits = parse_type(argv[j + 1])
        offset = parse_offset(argv[j + 2], bits)
        value = 0
        if word != b"get":
            parsed = parse_ll(argv[j + 3])
            if parsed is None:
                raise CommandError(table.NOT_INTEGER)
            value = parsed
        ops.append(Op(word.decode(), signed, bits, offset, value, overflow))
        j += 3 if word == b"get" else 4
    return ops


def _wrap_signed(v: int) -> int:
    v &= U64
    return v - (1 << 64) if v >> 63 else v


def read_field(data: bytes | bytearray, offset: int, bits: int, signed: bool) -> int:
    """``getUnsignedBitfield`` / ``getSignedBitfield``; bits past the end read as 0."""
    first, last = offset >> 3, (offset + bits - 1) >> 3
    chunk = bytes(data[first:last + 1]).ljust(last - first + 1, b"\0")
    whole = int.from_bytes(chunk, "big")
    value = (whole >> ((last + 1) * 8 - (offset + bits))) & ((1 << bits) - 1)
    if signed and bits < 64 and value >> (bits - 1):
        value -= 1 << bits
    elif signed and bits == 64:
        value = _wrap_signed(value)
    return value


def write_field(data: bytearray, offset: int, bits: int, value: int) -> None:
    """``setUnsignedBitfield``: the low ``bits`` bits of ``value`` at ``offset``."""
    for i in range(bits):
        bit = (value >> (bits - 1 - i)) & 1
        pos = offset + i
        mask = 1 << (7 - (pos & 7))
        if bit:
            data[pos >> 3] |= mask
        else:
            data[pos >> 3] &= ~mask & 0xFF


def unsigned_overflow(value: int, incr: int, bits: int, how: str) -> tuple[int, int]:
    """``checkUnsignedBitfieldOverflow``: (0, 1 or -1, and the value to store) (BITFIELD-4).

    ``value`` is the 64-bit pattern (a negative SET value is read as unsigned, so it overflows)."""
    top = (1 << bits) - 1
    value &= U64
    if value > top or (incr > 0 and incr > top - value):
        return 1, (value + incr) & top if how == WRAP else top
    if incr < 0 and incr < -value:
        return -1, (value + incr) & top if how == WRAP else 0
    return 0, value + incr


def signed_overflow(value: int, incr: int, bits: int, how: str) -> tuple[int, int]:
    """``checkSignedBitfieldOverflow`` with C's 64-bit wrap-around in its limits (BITFIELD-4)."""
    top = (1 << (bits - 1)) - 1 if bits < 64 else (1 << 63) - 1
    bottom = -top - 1
    max_incr = _wrap_signed(top - value)
    min_incr = _wrap_signed(bottom - value)
    if value > top or (bits != 64 and incr > max_incr) or (value >= 0 and 0 < incr and incr > max_incr):
        return 1, _wrapped(value, incr, bits) if how == WRAP else top
    if value < bottom or (bits != 64 and incr < min_incr) or (value < 0 and incr < 0 and incr < min_incr):
        return -1, _wrapped(value, incr, bits) if how == WRAP else bottom
    return 0, value + incr


def _wrapped(value: int, incr: int, bits: int) -> int:
    """The sum modulo 2^bits, sign-extended from its top bit."""
    low = ((value + incr) & U64) & ((1 << bits) - 1)
    return low - (1 << bits) if low >> (bits - 1) else low


def bitfield_command(call: Call, readonly: bool) -> Reply:
    argv = call.argv
    key = argv[1]
    ops = parse_ops(argv)  # BITFIELD-1
    writes = [op for op in ops if op.kind != "get"]
    if writes and readonly:  # BITFIELD-7: before the key is looked at
        raise CommandError(READONLY_GET_ONLY)
    value = call.db.get(key)
    if value is not None and not isinstance(value, bytes):  # BITFIELD-5
        raise CommandError(table.WRONGTYPE)
    data = bytearray(value or b"")
    grown = False
    if writes:  # BITFIELD-5: room up to the farthest bit written, before any operation runs
        need = (max(op.offset + op.bits - 1 for op in writes) >> 3) + 1
        if value is None or len(data) < need:
            data.extend(b"\0" * (need - len(data)))
            grown = True
        if value is None:
            call.db[key] = bytes(data)
            notify_new(call, key)  # NOTIFY-3
    replies: list[Reply] = []
    changes = 0
    for op in ops:  # BITFIELD-4
        old = read_field(data, op.offset, op.bits, op.signed)
        if op.kind == "get":
            replies.append(Int(old))
            continue
        check = signed_overflow if op.signed else unsigned_overflow
        if op.kind == "incrby":
            over, new = check(old, op.value, op.bits, op.overflow)
            result = new
        else:
            over, new = check(op.value, 0, op.bits, op.overflow)
            result = old
        if over and op.overflow == FAIL:
            replies.append(NULL_BULK)
            continue
        replies.append(Int(result))
        write_field(data, op.offset, op.bits, new & ((1 << op.bits) - 1))
        if grown or read_field(data, op.offset, op.bits, op.signed) != old:
            changes += 1
    if writes:
        keyspace(call).replace(key, bytes(data))  # the string keeps its expiry time
    if changes:  # BITFIELD-6
        call.modified(key)
        notify_keyspace_event(call, "$", "setbit", key)  # NOTIFY-4
        call.changed(changes)  # STATS-4
        call.propagate_verbatim()
    return Array(tuple(replies))


@command("bitfield")
def bitfield(call: Call) -> Reply:
    return bitfield_command(call, readonly=False)


@command("bitfield_ro")
def bitfield_ro(call: Call) -> Reply:
    return bitfield_command(call, readonly=True)
