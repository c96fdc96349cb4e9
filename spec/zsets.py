"""Sorted sets' wire vocabulary: error texts, range syntax and the encoding limits (spec/rules/zsets.md).

Shared by the model and the reference server so that both read a range or an
option the same way before either runs the command.
"""

from __future__ import annotations

from dataclasses import dataclass

from xspec.spec.doubles import range_bound

MAX_LISTPACK_ENTRIES = 128  # zset-max-listpack-entries (zset-max-ziplist-entries in 6.2)
MAX_LISTPACK_VALUE = 64  # zset-max-listpack-value

NOT_A_FLOAT = "ERR value is not a valid float"
WEIGHT_NOT_A_FLOAT = "ERR weight value is not a float"
RANGE_NOT_A_FLOAT = "ERR min or max is not a float"
LEX_RANGE_INVALID = "ERR min or max not valid string range item"
NAN_RESULT = "ERR resulting score is not a number (NaN)"
XX_AND_NX = "ERR XX and NX options at the same time are not compatible"
GT_LT_NX = "ERR GT, LT, and/or NX options at the same time are not compatible"
INCR_SINGLE_PAIR = "ERR INCR option supports a single increment-element pair"
LIMIT_NEEDS_BY = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
WITHSCORES_WITH_BYLEX = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
NUMKEYS_NOT_POSITIVE = "ERR numkeys should be greater than 0"
COUNT_NOT_ABOVE_ZERO = "ERR count should be greater than 0"
LIMIT_NEGATIVE = "ERR LIMIT can't be negative"


def at_least_one_key(fullname: str, legacy: bool = False) -> str:
    """ZUNION, ZINTER, ZDIFF (and their STORE forms, ZINTERCARD) given numkeys below 1; ``legacy``: 6.2's
    words (ZSET-DIALECT-1)."""
    if legacy:
        return f"ERR at least 1 input key is needed for {fullname}"
    return f"ERR at least 1 input key is needed for '{fullname}' command"


@dataclass(frozen=True, slots=True)
class ScoreRange:
    """``zrangespec``: a score interval, each end open or closed."""

    low: float
    high: float
    low_open: bool
    high_open: bool

    def above_low(self, score: float) -> bool:
        return score > self.low if self.low_open else score >= self.low

    def below_high(self, score: float) -> bool:
        return score < self.high if self.high_open else score <= self.high

    def contains(self, score: float) -> bool:
        return self.above_low(score) and self.below_high(score)

    def empty(self) -> bool:
        """``zslIsInRange``'s first test: no score can be inside."""
        return self.low > self.high or (self.low == self.high and (self.low_open or self.high_open))


def parse_score_range(low: bytes, high: bytes, fast: bool = False) -> ScoreRange | None:
    """``zslParseRange``: None when either end is not a number (ZSET-8); ``fast``: Valkey 9.1's
    parser (ZSET-DIALECT-3)."""
    a, b = range_bound(low, fast), range_bound(high, fast)
    if a is None or b is None:
        return None
    return ScoreRange(a[0], b[0], a[1], b[1])


# The two ends of every lexicographic order: "-" and "+".
LEX_MIN = "min"
LEX_MAX = "max"


@dataclass(frozen=True, slots=True)
class LexRange:
    """``zlexrangespec``: a member interval; an end is bytes or LEX_MIN / LEX_MAX."""

    low: bytes | str
    high: bytes | str
    low_open: bool
    high_open: bool

    def above_low(self, member: bytes) -> bool:
        c = compare_lex(member, self.low)
        return c > 0 if self.low_open else c >= 0

    def below_high(self, member: bytes) -> bool:
        c = compare_lex(member, self.high)
        return c < 0 if self.high_open else c <= 0

    def contains(self, member: bytes) -> bool:
        return self.above_low(member) and self.below_high(member)

    def empty(self) -> bool:
        """``zslIsInLexRange``'s first test."""
        c = compare_lex(self.low, self.high)
        return c > 0 or (c == 0 and (self.low_open or self.high_open))


def compare_lex(a: bytes | str, b: bytes | str) -> int:
    """``sdscmplex``: bytewise, with "-" below and "+" above every member."""
    if a == b:
        return 0
    if a == LEX_MIN or b == LEX_MAX:
        return -1
    if a == LEX_MAX or b == LEX_MIN:
        return 1
    assert isinstance(a, bytes) and isinstance(b, bytes)
    return -1 if a < b else 1


def _lex_item(arg: bytes) -> tuple[bytes | str, bool] | None:
    """``zslParseLexRangeItem``: "+" and "-" (read as C strings), "(" open, "[" closed."""
    first = arg[:1]
    if first in (b"+", b"-"):
        if len(arg) > 1 and arg[1] != 0:
            return None
        return (LEX_MAX if first == b"+" else LEX_MIN), True
    if first == b"(":
        return arg[1:], True
    if first == b"[":
        return arg[1:], False
    return None


def parse_lex_range(low: bytes, high: bytes) -> LexRange | None:
    """``zslParseLexRange``: None when either end is not a valid range item (ZSET-8)."""
    a, b = _lex_item(low), _lex_item(high)
    if a is None or b is None:
        return None
    return LexRange(a[0], b[0], a[1], b[1])
