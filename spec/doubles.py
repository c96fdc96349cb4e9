"""Doubles as Redis reads and writes them: ``strtod``, ``string2d`` and the texts of scores.

Sorted-set scores, weights and ranges are C doubles. Redis reads them with the C
library's ``strtod`` (correctly rounded, as Python's ``float`` is) and writes them in
three ways that differ between versions:

* a reply (``addReplyDouble``): ``%.17g`` up to 7.0; from 7.2 ``d2string``, which
  prints an integral value in ``long long`` range as an integer and any other one
  with the shortest digits that read back to it (``fpconv_dtoa``, Grisu2);
* a listpack's score entry (``zzlInsertAt``, :func:`packed_score_text`): an integer
  when the value is integral and within half the ``long long`` range, else
  ``d2string``'s text (``%.17g`` in 7.0, shortest digits from 7.2); 6.2's ziplist
  keeps ``d2string``'s text, whose integer shortcut stops at 2^52;
* ZSCAN of a hash-table sorted set: ``%.17Lg`` of the value as a long double,
  which prints the same digits as ``%.17g``.

Grisu2 gives the shortest digits for all but a small fraction of doubles; Python's
``repr`` always gives the shortest, so for those few values a 7.2+ text here may be
one digit shorter than the real server's (spec/corrections.md says so).
"""

from __future__ import annotations

import math
import re

LLONG_MAX = 2**63 - 1

_SPACE = b" \t\n\v\f\r"
_HEX = re.compile(rb"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?")
_DECIMAL = re.compile(rb"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_SPECIAL = re.compile(rb"[+-]?(infinity|inf|nan(\([0-9A-Za-z_]*\))?)", re.IGNORECASE)
_REPR = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?(?:e([+-][0-9]+))?")
_PLAIN = re.compile(rb"-?[0-9]{1,15}(\.[0-9]{1,15})?")


def strtod(text: bytes, fast: bool = False) -> tuple[float, int, bool]:
    """C ``strtod`` on ``text`` read as a C string: (value, bytes consumed, ERANGE).

    Leading white space is skipped; nothing parsed consumes 0 bytes and gives 0.0.
    ERANGE is set on an overflow (the value is then an infinity) and on an underflow
    to zero or to a subnormal, as glibc does.

    ``fast``: Valkey 9.1's ``valkey_strtod`` (fast_float's general format with a
    leading ``+``): no white space is skipped and hexadecimal is not read.
    """
    end = text.find(b"\0")
    s = text if end < 0 else text[:end]
    start = 0 if fast else len(s) - len(s.lstrip(_SPACE))
    for pattern in (_SPECIAL, _DECIMAL) if fast else (_SPECIAL, _HEX, _DECIMAL):
        m = pattern.match(s, start)
        if m is None:
            continue
        word = m.group(0)
        negative = word.startswith(b"-")
        if pattern is _SPECIAL:
            magnitude = math.nan if m.group(1)[:1].lower() == b"n" else math.inf
            return (-magnitude if negative else magnitude), m.end(), False
        if pattern is _HEX:
            value = _hex_value(word)
        else:
            value = float(word)
        nonzero = any(c in b"123456789abcdefABCDEF" for c in (m.group(1)))
        erange = math.isinf(value) or (nonzero and (value == 0 or abs(value) < 2.2250738585072014e-308))
        return value, m.end(), erange
    return 0.0, 0, False


def _hex_value(word: bytes) -> float:
    try:
        return float.fromhex(word.decode())
    except OverflowError:
        return -math.inf if word.startswith(b"-") else math.inf


def string2d(arg: bytes, fast: bool = False) -> float | None:
    """``string2d`` (``getDoubleFromObject``): the double ``arg`` spells, None when Redis refuses it.

    Refused: empty text, leading white space, anything after the number (a NUL
    included), NaN, an overflow, and an underflow to zero. ``fast``: as :func:`strtod`.
    """
    return read_double(arg, fast)[0]


def read_double(arg: bytes, fast: bool = False) -> tuple[float | None, bool]:
    """:func:`string2d`'s value, and whether its ``strtod`` set ERANGE (the errno it leaves)."""
    if _PLAIN.fullmatch(arg):  # a short plain decimal: exact, never out of range
        return float(arg), False
    if not arg or arg[0] in _SPACE:
        return None, False
    value, consumed, erange = strtod(arg, fast)
    if consumed != len(arg) or math.isnan(value):
        return None, erange
    if erange and (math.isinf(value) or value == 0):
        return None, erange
    return value, erange


def range_bound(arg: bytes, fast: bool = False) -> tuple[float, bool] | None:
    """One end of a score range (``zslParseRange``): (value, exclusive), None when refused.

    A leading ``(`` makes the end exclusive. The rest goes through ``strtod``
    alone: white space before it, an empty text (0) and an overflow (an
    infinity) are accepted; anything left over in the C string, or NaN, is not.
    ``fast``: as :func:`strtod`.
    """
    exclusive = arg[:1] == b"("
    text = arg[1:] if exclusive else arg
    value, consumed, _ = strtod(text, fast)
    end = text.find(b"\0")
    length = len(text) if end < 0 else end
    if consumed != length or math.isnan(value):
        return None
    return value, exclusive


def double2ll(value: float) -> int | None:
    """``double2ll``: the integer an integral double within half the ``long long`` range equals, else None."""
    if value < -(LLONG_MAX // 2) or value > LLONG_MAX // 2 or math.isnan(value):
        return None
    as_int = int(value)
    return as_int if as_int == value else None


def percent_g17(value: float) -> str:
    """``%.17g`` (and ``%.17Lg`` of the same value), with Redis's spelling of infinities."""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.17g}"


def shortest(value: float) -> str:
    """``fpconv_dtoa``: the shortest digits that read back to ``value``, laid out as Grisu2's emitter does."""
    m = _REPR.fullmatch(repr(value))
    assert m is not None, value
    sign, whole, fraction, exponent = m.groups()
    digits = whole + (fraction or "")
    k = int(exponent or 0) - len(fraction or "")
    stripped = digits.lstrip("0")
    trailing = len(stripped) - len(stripped.rstrip("0"))
    digits = stripped.rstrip("0") or "0"
    k += trailing
    return sign + _emit_digits(digits, k, bool(sign))


def _emit_digits(digits: str, k: int, negative: bool) -> str:
    n = len(digits)
    exp = abs(k + n - 1)
    if k >= 0 and exp < n + 7:  # a plain integer
        return digits + "0" * k
    if k < 0 and (k > -7 or exp < 4):  # a decimal without an exponent
        offset = n - abs(k)
        if offset <= 0:
            return "0." + "0" * -offset + digits
        return digits[:offset] + "." + digits[offset:]
    n = min(n, 18 - negative)
    mantissa = digits[0] + ("." + digits[1:n] if n > 1 else "")
    return f"{mantissa}e{'-' if k + len(digits) - 1 < 0 else '+'}{exp}"


def d2string(value: float) -> str:
    """7.2+'s ``d2string``: nan, inf, -inf, 0 and -0 spelled out; integral values in range as integers;
    any other value with the shortest digits."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    as_int = double2ll(value)
    if as_int is not None:
        return str(as_int)
    return shortest(value)


def packed_score_text(value: float, packing: str) -> str:
    """The text a compact sorted set keeps for a score, as ZSCAN lists it.

    ``packing`` is ``ziplist`` (6.2: ``d2string``, whose integer shortcut stops at
    2^52, else ``%.17g``; -0 keeps its sign), ``listpack`` (7.0: an integer when
    ``double2ll`` allows, which turns -0 into 0, else ``%.17g``) or
    ``listpack-shortest`` (7.2+: the same integers, else the shortest digits).
    """
    if packing == "ziplist":
        if math.isinf(value) or value == 0:
            return d2string(value)
        if -(2**52 - 1) < value < 2**52 and value == int(value):
            return str(int(value))
        return f"{value:.17g}"
    as_int = double2ll(value)
    if as_int is not None:
        return str(as_int)
    return d2string(value) if packing == "listpack-shortest" else percent_g17(value)


def reply_text(value: float, shortest_replies: bool) -> str:
    """``addReplyDouble``'s text: ``%.17g`` (6.2, 7.0) or ``d2string`` (7.2+)."""
    return d2string(value) if shortest_replies else percent_g17(value)
