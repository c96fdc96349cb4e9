"""Interval arguments: the range IDs of XRANGE, XREVRANGE, XPENDING and XAUTOCLAIM.

All four read them the way ``streamParseIntervalIdOrReply`` does (ID-8): ``-``
and ``+`` are accepted, ``(ID`` is exclusive and parsed strictly, and an
incomplete ID is completed with sequence 0 for a start and the maximum for an
end. An exclusive start becomes its successor and an exclusive end its
predecessor, with an error when there is none (XRANGE-1, XRANGE-2).
"""

from __future__ import annotations

from xspec.models.cerrno import note_interval_parse
from xspec.models.server import Call, CommandError
from xspec.spec import commands as table
from xspec.spec.errors import ERR_END_INTERVAL, ERR_START_INTERVAL
from xspec.spec.ids import (
    MAX_ID,
    MIN_ID,
    U64_MAX,
    IntervalID,
    StreamID,
    canonical_id,
    parse_interval,
    predecessor,
    successor,
)

_SPECIAL_BOUNDS = {b"-": MIN_ID, b"+": MAX_ID}  # ID-4


def parse_interval_noting_errno(call: Call, arg: bytes, missing_seq: int) -> IntervalID | None:
    """``parse_interval``, with the errno that parse leaves (``note_interval_parse``, XADD-14).

    The callers first try the lone ``-`` and ``+`` (ID-4) and :func:`canonical_id`:
    neither has a ``(``, so both are inclusive, and neither leaves errno changed
    (the special IDs read no number; both parts of a canonical ID pass the
    strict signed parse).
    """
    note_interval_parse(call, arg)
    return parse_interval(arg, missing_seq)


def interval_start(call: Call, arg: bytes) -> StreamID:
    """The first ID a range starting at ``arg`` includes."""
    fast = _SPECIAL_BOUNDS.get(arg) or canonical_id(arg)
    if fast is not None:  # inclusive, errno untouched (see parse_interval_noting_errno)
        return fast
    start = parse_interval_noting_errno(call, arg, 0)
    if start is None:
        raise CommandError(table.INVALID_ID)
    if not start.exclusive:
        return start.id
    after = successor(start.id)
    if after is None:
        raise CommandError(ERR_START_INTERVAL)
    return after


def interval_end(call: Call, arg: bytes) -> StreamID:
    """The last ID a range ending at ``arg`` includes."""
    fast = _SPECIAL_BOUNDS.get(arg) or canonical_id(arg, U64_MAX)
    if fast is not None:  # inclusive, errno untouched (see parse_interval_noting_errno)
        return fast
    end = parse_interval_noting_errno(call, arg, U64_MAX)
    if end is None:
        raise CommandError(table.INVALID_ID)
    if not end.exclusive:
        return end.id
    before = predecessor(end.id)
    if before is None:
        raise CommandError(ERR_END_INTERVAL)
    return before


def interval_bounds(call: Call, start_arg: bytes, end_arg: bytes) -> tuple[StreamID, StreamID]:
    """Start, then end: the inclusive bounds of a range (the start's errors come first)."""
    return interval_start(call, start_arg), interval_end(call, end_arg)
