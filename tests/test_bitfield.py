"""Differential tests of BITFIELD and BITFIELD_RO (spec/rules/bitfield.md).

The script runs on every dialect's real server (its trace checked on the model) and on the reference in the
same dialect, in RESP2 and RESP3 (``tests/test_lists.py``'s helpers); propagation is compared with a 7.0.15
replica's.
"""

from __future__ import annotations

import pytest

from tests.test_lists import ALL_DIALECTS, differential, lists_real_servers, lists_reference_servers
from tests.test_propagation import assert_propagation_matches

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers", "lists_reference_servers"]


def c(*args: object) -> tuple[object, ...]:
    return ("call", 1, *args)


BITFIELDS = [
    # BITFIELD-1 .. BITFIELD-3: operations read first, their errors
    c("BITFIELD", "b", "GET", "u8", "0"), c("EXISTS", "b"), c("BITFIELD", "b", "GET", "u64", "0"),
    c("BITFIELD", "b", "GET", "i65", "0"), c("BITFIELD", "b", "GET", "i0", "0"), c("BITFIELD", "b", "GET", "I8", "0"),
    c("BITFIELD", "b", "GET", "u8", "-1"), c("BITFIELD", "b", "GET", "u8", "#x"), c("BITFIELD", "b", "GET", "u8", "#"),
    c("BITFIELD", "b", "GET", "u8", "4294967296"), c("BITFIELD", "b", "SET", "u8", "0", "x"),
    c("BITFIELD", "b", "OVERFLOW", "up"), c("BITFIELD", "b", "GET", "u8"), c("BITFIELD", "b", "JUNK", "u8", "0"),
    c("BITFIELD", "b", "SET", "u8", "0", "1", "GET", "u8", "x"), c("EXISTS", "b"),
    # BITFIELD-4: values, signs, widths, overflow
    c("BITFIELD", "b", "SET", "i8", "0", "100", "INCRBY", "i8", "0", "100", "GET", "u4", "0", "GET", "i4", "#1"),
    c("BITFIELD", "b", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "-200", "INCRBY", "u3", "20", "100",
      "OVERFLOW", "FAIL", "INCRBY", "u2", "#5", "7", "SET", "u4", "100", "-1", "OVERFLOW", "WRAP",
      "SET", "u4", "104", "-1", "GET", "u8", "#12"),
    c("BITFIELD", "b", "SET", "i64", "64", "-9223372036854775808", "INCRBY", "i64", "64", "-1",
      "OVERFLOW", "SAT", "INCRBY", "i64", "64", "-1", "GET", "i64", "64", "SET", "u63", "1", "9223372036854775807"),
    c("BITFIELD", "b", "OVERFLOW", "FAIL", "SET", "i8", "200", "128", "SET", "u8", "200", "256"),
    c("GET", "b"), c("STRLEN", "b"),
    # BITFIELD-5, BITFIELD-6, BITFIELD-7: types, growth, read-only
    c("SET", "s", "ab"), c("BITFIELD", "s", "GET", "u16", "0", "GET", "u8", "12", "GET", "i16", "#5"),
    c("BITFIELD", "s", "SET", "u8", "#3", "255"), c("GET", "s"), c("BITFIELD", "s", "SET", "u8", "0", "97"),
    c("BITFIELD", "new", "OVERFLOW", "FAIL", "SET", "u2", "100", "9"), c("GET", "new"),
    c("BITFIELD_RO", "s", "GET", "u8", "0", "GET", "i4", "#3"), c("BITFIELD_RO", "s", "SET", "u8", "0", "1"),
    c("BITFIELD_RO", "nokey", "GET", "u8", "0"), c("LPUSH", "l", "x"), c("BITFIELD", "l", "GET", "u8", "0"),
    c("BITFIELD_RO", "l", "SET", "u8", "0", "1"), c("BITFIELD", "l", "SET", "u8", "0", "1"), c("BITFIELD", "b"),
]


def test_bitfield_differential(lists_real_servers, lists_reference_servers):
    """BITFIELD-1 to BITFIELD-7 on every dialect's real server, the model and the reference."""
    differential(lists_real_servers, lists_reference_servers, BITFIELDS, ALL_DIALECTS)


def test_bitfield_propagation(redis):
    """BITFIELD-6: propagated verbatim when a write changed a field or grew the string; a FAIL-only or an
    unchanged write is not."""
    assert_propagation_matches(redis, [
        (1, ["BITFIELD", "b", "SET", "u8", "0", "1"]), (1, ["BITFIELD", "b", "SET", "u8", "0", "1"]),
        (1, ["BITFIELD", "b", "GET", "u8", "0"]), (1, ["BITFIELD", "b", "OVERFLOW", "FAIL", "SET", "u2", "0", "9"]),
        (1, ["BITFIELD", "c", "OVERFLOW", "FAIL", "SET", "u2", "0", "9"]), (1, ["BITFIELD", "b", "INCRBY", "u8", "8", "3"]),
    ])
