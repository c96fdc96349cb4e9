"""Consumer-group entries-read and lag, computed exactly as Redis 7.0 does (rules LAG-1 .. LAG-5).

Redis 7.0 keeps, per group, ``entries_read``: how many entries the group has
read counting from the first entry ever added to the stream. It is a logical
counter that the server can only keep exact while no deleted entry (a
"tombstone") lies in the way; otherwise it estimates it or gives up (-1, shown
as nil). The functions below are those of Redis 7.0's ``t_stream.c``, bugs
included (see spec/rules/info.md, LAG-*):

* :func:`range_has_tombstones` is ``streamRangeHasTombstones``;
* :func:`estimate_entries_read` is ``streamEstimateDistanceFromFirstEverEntry``;
* :func:`group_lag` is ``streamReplyWithCGLag`` (XINFO GROUPS and STREAM FULL);
* :func:`advance_group` is the update ``streamReplyWithRange`` makes when it
  delivers an entry newer than the group's last-delivered-id.

PYTEST_DONT_REWRITE: the seeded bugs of models/mutants.py recompile this module's functions from
their source and compare bytecode; pytest would otherwise rewrite its asserts wherever xspec's
pytest plugin is installed.
"""

from __future__ import annotations

from xspec.models.state import Group, Stream
from xspec.spec.ids import MAX_ID, MIN_ID, StreamID, as_i64

INVALID_ENTRIES_READ = -1  # SCG_INVALID_ENTRIES_READ: "unknown", shown as nil


def range_has_tombstones(stream: Stream, start: StreamID | None, end: StreamID | None = None,
                         fixed: bool = False) -> bool:
    """Whether a deleted entry may lie in ``[start, end]`` (None: unbounded) (LAG-1).

    Only max-deleted-entry-id is known, so the answer is "the newest deletion
    is inside the range". 7.0 also answers False when that deletion is older
    than the recorded first entry; the ``fixed`` code (LAG-DIALECT-1) does not.
    """
    if stream.max_deleted_id == MIN_ID or stream.length == 0:
        return False
    if not fixed and stream.first_id > stream.max_deleted_id:
        return False
    lo = MIN_ID if start is None else start
    hi = MAX_ID if end is None else end
    return lo <= stream.max_deleted_id <= hi


def estimate_entries_read(stream: Stream, entry_id: StreamID, fixed: bool = False) -> int:
    """The entries-read value of a group whose last-delivered-id is ``entry_id``, or -1 (LAG-2)."""
    if stream.entries_added == 0:
        return 0
    added = as_i64(stream.entries_added)  # LAG-6: C's uint64_t read as long long
    if stream.length == 0 and entry_id <= stream.last_id:
        return added
    if fixed and entry_id != MIN_ID and entry_id < stream.max_deleted_id:  # LAG-DIALECT-1
        return INVALID_ENTRIES_READ
    if entry_id == stream.last_id:
        return added
    if entry_id > stream.last_id:
        return INVALID_ENTRIES_READ
    if stream.max_deleted_id == MIN_ID or stream.max_deleted_id < stream.first_id:
        if entry_id < stream.first_id:
            return as_i64(stream.entries_added - stream.length)
        if entry_id == stream.first_id:
            return as_i64(stream.entries_added - stream.length + 1)
    return INVALID_ENTRIES_READ


def group_lag(stream: Stream, group: Group, fixed: bool = False) -> int | None:
    """XINFO's ``lag`` of a group: entries not yet delivered to it, None when unknown (LAG-3).

    It can be negative when ENTRIESREAD was set beyond entries-added.
    """
    if stream.entries_added == 0:
        return 0
    if group.entries_read != INVALID_ENTRIES_READ and not range_has_tombstones(stream, group.last_id, fixed=fixed):
        return as_i64(as_i64(stream.entries_added) - group.entries_read)  # LAG-6
    estimate = estimate_entries_read(stream, group.last_id, fixed)
    if estimate == INVALID_ENTRIES_READ:
        return None
    return as_i64(as_i64(stream.entries_added) - estimate)


def advance_group(stream: Stream, group: Group, entry_id: StreamID, fixed: bool = False) -> None:
    """The group delivers ``entry_id``, newer than its last-delivered-id (LAG-4).

    7.0 looks for tombstones from the entry being delivered onwards, not from
    the group's previous position, so a deletion the group skipped over is
    missed and entries-read stays too low (the bug fixed in 8.0). The ``fixed``
    code (LAG-DIALECT-1) looks from the group's position, which must not be
    before the first entry.
    """
    if fixed:
        valid = (group.entries_read != INVALID_ENTRIES_READ and group.last_id >= stream.first_id
                 and not range_has_tombstones(stream, group.last_id, fixed=True))
    else:
        valid = group.entries_read != INVALID_ENTRIES_READ and not range_has_tombstones(stream, entry_id)
    if valid:
        group.entries_read = as_i64(group.entries_read + 1)  # LAG-6
    else:  # 7.0 also requires entries-added > 0, always true while an entry is delivered
        group.entries_read = estimate_entries_read(stream, entry_id, fixed)
    group.last_id = entry_id
