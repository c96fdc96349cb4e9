"""Stream IDs in Z3: one 128-bit bit-vector, ``ms`` in the high half, ``seq`` in the low half.

Unsigned order on the 128-bit value is exactly Redis's ``streamCompareID``
(``ms`` first, then ``seq``; ID-9), which property ID-ORDER proves. The
bounds come from :mod:`xspec.spec.ids`, so the encoding and the model share
one definition of 0-0, the maximum ID and the width of a half.
"""

from __future__ import annotations

import z3

from xspec.spec.ids import MAX_ID, MIN_ID, U64_MAX, StreamID

HALF_BITS = U64_MAX.bit_length()  # 64
ID_SORT = z3.BitVecSort(2 * HALF_BITS)
U64 = z3.BitVecSort(HALF_BITS)


def id_value(i: StreamID) -> z3.BitVecNumRef:
    """The Z3 constant of a concrete ID."""
    return z3.BitVecVal((i.ms << HALF_BITS) | i.seq, ID_SORT)


def as_stream_id(v: int) -> StreamID:
    """The concrete ID of a 128-bit value."""
    return StreamID(v >> HALF_BITS, v & U64_MAX)


ZERO = id_value(MIN_ID)
TOP = id_value(MAX_ID)
U64_TOP = z3.BitVecVal(U64_MAX, U64)


def fresh_id(name: str) -> z3.BitVecRef:
    return z3.BitVec(name, ID_SORT)


def make(ms: z3.BitVecRef, seq: z3.BitVecRef) -> z3.BitVecRef:
    """The ID ``ms-seq`` from two 64-bit halves."""
    return z3.Concat(ms, seq)


def ms(i: z3.BitVecRef) -> z3.BitVecRef:
    return z3.Extract(2 * HALF_BITS - 1, HALF_BITS, i)


def seq(i: z3.BitVecRef) -> z3.BitVecRef:
    return z3.Extract(HALF_BITS - 1, 0, i)


def lt(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BoolRef:
    return z3.ULT(a, b)


def le(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BoolRef:
    return z3.ULE(a, b)


def maximum(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BitVecRef:
    return z3.If(z3.ULT(a, b), b, a)


def successor(i: z3.BitVecRef) -> tuple[z3.BoolRef, z3.BitVecRef]:
    """``streamIncrID``: (defined, value). Undefined exactly at the maximum (ID-9).

    Written half by half, as the C code does, not as 128-bit ``+ 1``; ID-SUCC
    proves the two agree.
    """
    carry = seq(i) == U64_TOP
    value = z3.If(carry, make(ms(i) + 1, z3.BitVecVal(0, U64)), make(ms(i), seq(i) + 1))
    return i != TOP, value


def predecessor(i: z3.BitVecRef) -> tuple[z3.BoolRef, z3.BitVecRef]:
    """``streamDecrID``: (defined, value). Undefined exactly at 0-0 (ID-9)."""
    borrow = seq(i) == 0
    value = z3.If(borrow, make(ms(i) - 1, U64_TOP), make(ms(i), seq(i) - 1))
    return i != ZERO, value


def lexicographic_lt(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BoolRef:
    """``streamCompareID(a, b) < 0`` written on the halves."""
    return z3.Or(z3.ULT(ms(a), ms(b)), z3.And(ms(a) == ms(b), z3.ULT(seq(a), seq(b))))


def interval_start(i: z3.BitVecRef, exclusive: z3.BoolRef) -> tuple[z3.BoolRef, z3.BitVecRef]:
    """The first ID a range start includes (XRANGE-1): (valid, id). ``(MAX`` is the start error."""
    defined, after = successor(i)
    return z3.Or(z3.Not(exclusive), defined), z3.If(exclusive, after, i)


def interval_end(i: z3.BitVecRef, exclusive: z3.BoolRef) -> tuple[z3.BoolRef, z3.BitVecRef]:
    """The last ID a range end includes (XRANGE-2): (valid, id). ``(0-0`` is the end error."""
    defined, before = predecessor(i)
    return z3.Or(z3.Not(exclusive), defined), z3.If(exclusive, before, i)


def incomplete(ms_half: z3.BitVecRef, missing_seq: int) -> z3.BitVecRef:
    """An ``ms``-only ID completed with the command's missing sequence (ID-5)."""
    return make(ms_half, z3.BitVecVal(missing_seq, U64))


def render(v: int) -> str:
    """A 128-bit value as ``ms-seq``."""
    return str(as_stream_id(v))
