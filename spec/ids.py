"""Stream IDs and Redis's number parsers, bit for bit.

An ID is two unsigned 64-bit halves, ``ms-seq``. The parsers here reproduce
Redis's C helpers (``string2ll``, ``string2ull`` with its ``strtoull``
fallback, ``streamGenericParseIDOrReply``), because their leniency is visible
to clients (spec/rules/streams.md, rules ID-1 .. ID-9).
"""

from __future__ import annotations

from typing import NamedTuple

U64_MAX = (1 << 64) - 1
I64_MAX = (1 << 63) - 1
I64_MIN = -(1 << 63)
LONG_STR_SIZE = 21  # Redis's LONG_STR_SIZE: string2ll refuses inputs this long or longer


def as_u64(v: int) -> int:
    """``v`` as a C ``uint64_t`` holds it: wrapped modulo 2^64."""
    return v & U64_MAX


def as_i64(v: int) -> int:
    """``v`` as a C ``long long`` holds it: wrapped into [-2^63, 2^63)."""
    return ((v - I64_MIN) & U64_MAX) + I64_MIN


_SHORTEST_UNSAFE = 19  # digits: the shortest decimal that may exceed I64_MAX


class StreamID(NamedTuple):
    """A stream entry ID; orders like Redis's streamCompareID."""

    ms: int
    seq: int

    def __str__(self) -> str:
        return f"{self.ms}-{self.seq}"

    def encode(self) -> bytes:
        return b"%d-%d" % self


MIN_ID = StreamID(0, 0)
_new_tuple = tuple.__new__
MAX_ID = StreamID(U64_MAX, U64_MAX)


def successor(i: StreamID) -> StreamID | None:
    """The next ID, or None after the maximum (streamIncrID's overflow; ID-9)."""
    if i.seq < U64_MAX:
        return StreamID(i.ms, i.seq + 1)
    if i.ms < U64_MAX:
        return StreamID(i.ms + 1, 0)
    return None


def predecessor(i: StreamID) -> StreamID | None:
    """The previous ID, or None before 0-0 (streamDecrID's underflow; ID-9)."""
    if i.seq > 0:
        return StreamID(i.ms, i.seq - 1)
    if i.ms > 0:
        return StreamID(i.ms - 1, U64_MAX)
    return None


def c_string(arg: bytes) -> bytes:
    """What C string functions see of an argument: everything before the first NUL."""
    nul = arg.find(b"\0")
    return arg if nul < 0 else arg[:nul]


def c_atoi(arg: bytes) -> int:
    """C's ``atoi``: leading white space, an optional sign, then the digits up to the first other byte;
    0 when there are none."""
    s = c_string(arg).lstrip(b" \t\n\v\f\r")
    sign = -1 if s[:1] == b"-" else 1
    if s[:1] in (b"-", b"+"):
        s = s[1:]
    end = 0
    while end < len(s) and 48 <= s[end] <= 57:
        end += 1
    return sign * int(s[:end]) if end else 0


def string2ll(s: bytes) -> int | None:
    """Redis's strict signed 64-bit parser (util.c string2ll)."""
    if s.isdigit() and len(s) < _SHORTEST_UNSAFE and (s[0] != 48 or len(s) == 1):
        return int(s)  # the common case, a plain decimal: taken whole, cannot overflow
    n = len(s)
    if n == 0 or n >= LONG_STR_SIZE:
        return None
    if s == b"0":
        return 0
    negative = s[0:1] == b"-"
    digits = s[1:] if negative else s
    if not digits or not (49 <= digits[0] <= 57) or not digits.isdigit():
        return None
    v = int(digits)
    if negative:
        if v > -I64_MIN:
            return None
        return -v
    if v > I64_MAX:
        return None
    return v


_C_SPACE = b" \t\n\v\f\r"


def strtoull(s: bytes) -> tuple[int, int] | None:
    """C ``strtoull(s, &end, 10)``: (value, number of bytes consumed), or None on ERANGE.

    Consumed is 0 when no digits were found (endptr == s).
    """
    i = 0
    n = len(s)
    while i < n and s[i] in _C_SPACE:
        i += 1
    negative = False
    if i < n and s[i] in b"+-":
        negative = s[i] == 45
        i += 1
    j = i
    while j < n and 48 <= s[j] <= 57:
        j += 1
    if j == i:
        return 0, 0
    v = int(s[i:j])
    if v > U64_MAX:
        return None
    if negative:
        v = (-v) & U64_MAX
    return v, j


def string2ull(s: bytes) -> int | None:
    """Redis's string2ull: strict parse first, then the lenient strtoull fallback (ID-7)."""
    ll = string2ll(s)
    if ll is not None:
        return None if ll < 0 else ll
    r = strtoull(s)
    if r is None:
        return None
    value, consumed = r
    if not s or consumed != len(s):
        return None
    return value


def parse_ll(arg: bytes) -> int | None:
    """``getLongLongFromObject``: a strict signed 64-bit integer, or None.

    An argument that stands for a symbolic time (``Instant.rendered`` on the checker's clock)
    is that time.
    """
    if type(arg) is not bytes:
        stands_for = getattr(arg, "stands_for", None)
        if stands_for is not None:
            return stands_for  # type: ignore[no-any-return]
    return string2ll(arg)


class ParsedID(NamedTuple):
    """A parsed ID argument. ``seq_given`` is False for XADD's ``ms-*`` form."""

    id: StreamID
    seq_given: bool


def canonical_id(arg: bytes, missing_seq: int = 0) -> StreamID | None:
    """The ID ``arg`` means when it is in canonical form, ``ms`` or ``ms-seq``; else None.

    Canonical: each part is 1 to 18 ASCII digits with no leading zero (or is
    just ``0``). ``string2ll`` takes such a part whole and it cannot overflow,
    so ``string2ull`` never falls back to ``strtoull`` and the value is the
    plain decimal. Such an ID therefore parses the same in every mode (strict
    or not, ``ms-*`` allowed or not) and leaves errno alone: this is the fast
    path of :func:`parse_id`. Anything else is for the full parser to decide.
    """
    ms, dash, seq = arg.partition(b"-")
    if ms.isdigit() and len(ms) < _SHORTEST_UNSAFE and (ms[0] != 48 or len(ms) == 1):
        # _new_tuple(StreamID, ...) is StreamID(...) without the namedtuple's Python-level __new__
        if not dash:
            return _new_tuple(StreamID, (int(ms), missing_seq))
        if seq.isdigit() and len(seq) < _SHORTEST_UNSAFE and (seq[0] != 48 or len(seq) == 1):
            return _new_tuple(StreamID, (int(ms), int(seq)))
    return None


def parse_id(arg: bytes, *, strict: bool, missing_seq: int = 0, allow_auto_seq: bool = False) -> ParsedID | None:
    """``streamGenericParseIDOrReply``: None means "Invalid stream ID" (ID-1 .. ID-7).

    ``strict`` rejects the lone ``-`` and ``+``; ``missing_seq`` completes an
    ``ms``-only ID; ``allow_auto_seq`` accepts XADD's ``ms-*``.
    """
    fast = canonical_id(arg, missing_seq)
    if fast is not None:
        return ParsedID(fast, True)
    if len(arg) > 127:  # ID-2: the C code copies into a 128-byte buffer
        return None
    buf = c_string(arg)  # ID-1: a C string from here on
    if strict and buf in (b"-", b"+"):  # ID-3
        return None
    if buf == b"-":  # ID-4
        return ParsedID(MIN_ID, True)
    if buf == b"+":
        return ParsedID(MAX_ID, True)
    dash = buf.find(b"-")  # ID-5: split at the first dash
    ms_part = buf if dash < 0 else buf[:dash]
    ms = string2ull(ms_part)  # ID-7
    if ms is None:
        return None
    if dash < 0:
        return ParsedID(StreamID(ms, missing_seq), True)
    seq_part = buf[dash + 1:]
    if allow_auto_seq and seq_part == b"*":  # ID-6
        return ParsedID(StreamID(ms, 0), False)
    seq = string2ull(seq_part)
    if seq is None:
        return None
    return ParsedID(StreamID(ms, seq), True)


def parse_strict(arg: bytes, missing_seq: int = 0) -> StreamID | None:
    """``streamParseStrictIDOrReply`` (no lone ``-``/``+``)."""
    fast = canonical_id(arg, missing_seq)
    if fast is not None:
        return fast
    p = parse_id(arg, strict=True, missing_seq=missing_seq)
    return None if p is None else p.id


def parse_loose(arg: bytes, missing_seq: int = 0) -> StreamID | None:
    """``streamParseIDOrReply`` (``-`` is 0-0, ``+`` is the maximum)."""
    fast = canonical_id(arg, missing_seq)
    if fast is not None:
        return fast
    p = parse_id(arg, strict=False, missing_seq=missing_seq)
    return None if p is None else p.id


class IntervalID(NamedTuple):
    id: StreamID
    exclusive: bool


def parse_interval(arg: bytes, missing_seq: int) -> IntervalID | None:
    """``streamParseIntervalIdOrReply``: ``(ID`` is exclusive and parsed strictly (ID-8)."""
    if len(arg) > 1 and arg[:1] == b"(":
        i = parse_strict(arg[1:], missing_seq)
        return None if i is None else IntervalID(i, True)
    i = parse_loose(arg, missing_seq)
    return None if i is None else IntervalID(i, False)
