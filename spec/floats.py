"""Long doubles as Redis reads them: ``string2ld`` and the seconds timeouts of blocking list commands.

Redis parses a timeout in seconds with ``strtold`` into an x87 80-bit long
double (64-bit significand), multiplies it by 1000 in that precision and
rounds it up (7.0+) or truncates it (6.2) to whole milliseconds. The values
here are exact rationals rounded the way that hardware rounds, so a timeout
such as ``0.1`` gives the same milliseconds as the real server.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

MAX_LONG_DOUBLE_CHARS = 5 * 1024
_SIGNIFICAND_BITS = 64
_MIN_EXP = -16382 - 63  # the smallest subnormal is 2**-16445
_MAX = Fraction(2**64 - 1, 1) * Fraction(2) ** (16383 - 63)  # the largest finite long double

_DECIMAL = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_HEX = re.compile(rb"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?\d+)?")
_INFINITY = re.compile(rb"[+-]?(inf|infinity)", re.IGNORECASE)


def round_long_double(q: Fraction) -> Fraction:
    """``q`` rounded to the nearest long double (ties to even); infinities are not represented."""
    if q == 0:
        return q
    sign = -1 if q < 0 else 1
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    shift = max(e - (_SIGNIFICAND_BITS - 1), _MIN_EXP)
    scaled = a / Fraction(2) ** shift
    n = math.floor(scaled)
    rest = scaled - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    return sign * n * Fraction(2) ** shift


def string2ld(arg: bytes) -> Fraction | float | None:
    """``string2ld``: the long double ``arg`` spells, or None when Redis refuses it.

    Refused: empty or too long text, leading space, trailing bytes (a NUL
    included), NaN, and values out of the long double range (overflow, or an
    underflow to zero). Infinities come back as ``float('inf')``/``-inf``.
    """
    if not arg or len(arg) >= MAX_LONG_DOUBLE_CHARS:
        return None
    if _INFINITY.fullmatch(arg):
        return float("-inf") if arg.startswith(b"-") else float("inf")
    m = _HEX.fullmatch(arg)
    if m is not None:
        digits = m.group(1)
        whole, _, frac = digits.partition(b".")
        value = Fraction(int(whole or b"0", 16)) + (Fraction(int(frac, 16), 16 ** len(frac)) if frac else 0)
        if m.group(2):
            value *= Fraction(2) ** int(m.group(2)[1:])
    else:
        m = _DECIMAL.fullmatch(arg)
        if m is None:
            return None
        mantissa = m.group(1)
        exponent = int(m.group(2)[1:]) if m.group(2) else 0
        if abs(exponent) > 20000:  # far outside the range: overflow or underflow to zero
            return None if int(mantissa.replace(b".", b"") or b"0") != 0 else Fraction(0)
        value = Fraction(mantissa.decode()) * Fraction(10) ** exponent
    if arg.startswith(b"-"):
        value = -value
    rounded = round_long_double(value)
    if abs(rounded) > _MAX or (rounded == 0 and value != 0):
        return None  # ERANGE: HUGE_VAL or an underflow to zero
    return rounded


def timeout_ms(seconds: Fraction | float, round_up: bool) -> int | None:
    """``(long long) ceill(seconds * 1000.0)`` (or without ``ceill``): the timeout in ms.

    None when the product does not fit a long long: x86 then yields LLONG_MIN, which
    7.0 reports as a negative timeout and 7.4 checks before converting.
    """
    if isinstance(seconds, float):  # an infinity
        return None
    ms = round_long_double(seconds * 1000)
    whole = math.ceil(ms) if round_up else math.trunc(ms)
    if not -(2**63) <= whole < 2**63 or ms >= 2**63:
        return None
    return whole
