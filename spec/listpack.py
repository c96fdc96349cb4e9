"""Byte sizes of Redis 7.0 listpack elements, as a stream node stores them.

A listpack is a 6-byte header (total bytes, element count), the elements, and
a 1-byte terminator. Each element is its encoding (type bits, optional length,
payload) followed by a "backlen": the encoding's length written in 7-bit
groups so the listpack can be walked backwards.

Strings that read as canonical 64-bit integers ("12", "-7"; not "012", "+1",
"-0" or " 1") are stored as integers, so their size depends on the value.
"""

from __future__ import annotations

import re
from functools import lru_cache

LISTPACK_OVERHEAD = 7  # header (4-byte total size + 2-byte element count) and the 0xFF terminator

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_CANONICAL_INT = re.compile(rb"(?:0|-?[1-9][0-9]*)\Z")
_LONGEST_INT64_TEXT = 20  # len(b"-9223372036854775808")


def backlen_size(encoded: int) -> int:
    """Bytes of the backlen that follows an element whose encoding takes ``encoded`` bytes."""
    if encoded <= 127:
        return 1
    if encoded < 16383:
        return 2
    if encoded < 2097151:
        return 3
    if encoded < 268435455:
        return 4
    return 5


def int_element_size(value: int) -> int:
    """Bytes of an integer element (encoding and backlen); ``value`` is a signed 64-bit integer."""
    if 0 <= value <= 127:
        return 2  # 7-bit unsigned, inside the type byte
    if -4096 <= value <= 4095:
        return 3  # 13-bit signed
    if -32768 <= value <= 32767:
        return 4  # 16-bit signed
    if -8388608 <= value <= 8388607:
        return 5  # 24-bit signed
    if -2147483648 <= value <= 2147483647:
        return 6  # 32-bit signed
    return 10  # 64-bit signed


def as_listpack_int(data: bytes) -> int | None:
    """The integer a listpack stores ``data`` as, or None when it stays a string."""
    if not data or len(data) > _LONGEST_INT64_TEXT or not _CANONICAL_INT.match(data):
        return None
    value = int(data)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


@lru_cache(maxsize=1 << 16)
def _short_element_size(data: bytes) -> int:
    value = as_listpack_int(data)
    if value is not None:
        return int_element_size(value)
    return len(data) + 2  # 6-bit length string: 1 type byte, payload, 1 backlen byte


def element_size(data: bytes) -> int:
    """Bytes of the element ``lpAppend`` makes of ``data`` (encoding and backlen)."""
    n = len(data)
    if n <= _LONGEST_INT64_TEXT:
        if n and (48 <= data[0] <= 57 or data[0] == 45):  # starts with a digit or "-": maybe an integer
            return _short_element_size(data)
        return n + 2  # a 6-bit length string
    if n < 64:
        encoded = 1 + n  # 6-bit length string
    elif n < 4096:
        encoded = 2 + n  # 12-bit length string
    else:
        encoded = 5 + n  # 32-bit length string
    return encoded + backlen_size(encoded)
