"""Handlers of the stream-entry commands: XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XSETID.

Rules: spec/rules/streams.md (XADD-*, XTRIM-*, XLEN-*, XRANGE-*, XDEL-*,
XSETID-*), ID grammar in spec/ids.py (ID-*). The physical node layout that
approximate trimming depends on lives in :mod:`xspec.models.layout`; this
module keeps ``Stream.entries`` and the stream's metadata in step with it.

Besides the replies, Redis 7.0's XADD lets one hidden value show: the C
``errno`` of the main thread, which words the error of an ``ms-*`` ID whose
sequence is exhausted (XADD-14). The handlers here record where the code
behind them writes ``errno`` (ID parsing through ``strtoull``, a radix-tree
iterator running off its end, a failed append) in ``Server.errno``, with the
helpers of :mod:`xspec.models.cerrno` that every command family shares.

PYTEST_DONT_REWRITE: the seeded bugs of models/mutants.py recompile this module's functions from
their source and compare bytecode; pytest would otherwise rewrite its asserts wherever xspec's
pytest plugin is installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from errno import EDOM, ERANGE

from sortedcontainers import SortedDict

from xspec.models.cerrno import note_entry_lookup, note_id_parse, note_iterator_end, strict_id
from xspec.models.clock import Instant
from xspec.models.intervals import interval_bounds
from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.ordered import (
    discard_all,
    first_key,
    first_key_from,
    keys_down_from,
    keys_from,
    last_key_to,
    put,
)
from xspec.models.reads import entry_reply
from xspec.models.server import Call, CommandError, HandlerResult, command
from xspec.models.state import Fields, Stream
from xspec.spec import commands as table
from xspec.spec.errors import (
    ERR_ENTRIES_ADDED_NEGATIVE,
    ERR_EXHAUSTED,
    ERR_ID_NOT_ABOVE_TOP,
    ERR_ID_ZERO,
    ERR_LIMIT_NEGATIVE,
    ERR_LIMIT_NO_STRATEGY,
    ERR_LIMIT_NOT_APPROX,
    ERR_MAXLEN_NEGATIVE,
    ERR_SETID_BELOW_CURRENT_MAXDELETED,
    ERR_SETID_BELOW_MAXDELETED,
    ERR_SETID_BELOW_TOP,
    ERR_SETID_ENTRIES_ADDED,
    ERR_STRATEGIES,
    ERR_TOO_LARGE,
    ERR_XADD_ARITY,
    ERR_XTRIM_NO_STRATEGY,
)
from xspec.spec.ids import (
    MAX_ID,
    MIN_ID,
    U64_MAX,
    ParsedID,
    StreamID,
    as_i64,
    as_u64,
    c_string,
    canonical_id,
    parse_id,
    parse_ll,
    successor,
)
from xspec.spec.limits import APPROX_LIMIT_CAP, APPROX_LIMIT_WHEN_UNSET, DEFAULT_APPROX_LIMIT_FACTOR, LISTPACK_MAX_SIZE
from xspec.spec.resp import OK, Array, Bulk, Int, NullArray, NullBulk, Reply


# -- errno (XADD-14) ---------------------------------------------------------------
def parse_id_noting_errno(call: Call, arg: bytes, *, allow_auto_seq: bool = False) -> ParsedID | None:
    """``parse_id(arg, strict=True)``, with the errno that parse leaves (``note_id_parse``)."""
    fast = canonical_id(arg)
    if fast is not None:  # both parts pass the strict signed parse: errno untouched
        return ParsedID(fast, True)
    note_id_parse(call, arg, allow_auto_seq=allow_auto_seq)
    return parse_id(arg, strict=True, allow_auto_seq=allow_auto_seq)


# -- the XADD/XTRIM argument parser ------------------------------------------------------
@dataclass(slots=True)
class AddTrimArgs:
    """``streamAddTrimArgs``: what XADD and XTRIM parsed (XTRIM-1 .. XTRIM-7)."""

    strategy: str | None = None  # "maxlen", "minid" or None
    approx: bool = False
    maxlen: int = 0
    minid: StreamID = MIN_ID
    limit: int = 0  # 0: unlimited; negative (6.2 only, XTRIM-DIALECT-1): nothing is trimmed
    threshold_index: int = 0  # argv index of the MAXLEN/MINID value (the rewrite target)
    nomkstream: bool = False
    id: ParsedID | None = None  # XADD's explicit ID; None for ``*``
    id_index: int = 0  # argv index of the ID (XADD), or argc when options ran out


def _getll(arg: bytes) -> int:
    value = parse_ll(arg)
    if value is None:
        raise CommandError(table.NOT_INTEGER)
    return value


def _lower(arg: bytes) -> bytes:
    return (c_string(arg) if b"\0" in arg else arg).lower()  # strcasecmp on the C string


def parse_add_trim_args(call: Call, xadd: bool) -> AddTrimArgs:
    """``streamParseAddOrTrimArgsOrReply``: options from argv[2], left to right (XTRIM-1 .. XTRIM-7)."""
    argv = call.argv
    args = AddTrimArgs()
    limit_given = False
    argc = len(argv)
    i = 2
    while i < argc:
        more = argc - 1 - i
        opt = _lower(argv[i])
        if xadd and opt == b"*":  # XADD-2: the auto-ID fast path ends the options
            break
        if opt in (b"maxlen", b"minid") and more:  # XTRIM-2
            if args.strategy is not None:
                raise CommandError(ERR_STRATEGIES)
            args.approx = False
            marker = c_string(argv[i + 1])
            if more >= 2 and marker == b"~":
                args.approx = True
                i += 1
            elif more >= 2 and marker == b"=":
                i += 1
            if opt == b"maxlen":
                args.maxlen = _getll(argv[i + 1])
                if args.maxlen < 0:
                    raise CommandError(ERR_MAXLEN_NEGATIVE)
            else:
                minid = strict_id(call, argv[i + 1])
                if minid is None:
                    raise CommandError(table.INVALID_ID)
                args.minid = minid
            i += 1
            args.strategy = opt.decode()
            args.threshold_index = i
        elif opt == b"limit" and more:  # XTRIM-3
            args.limit = _getll(argv[i + 1])
            if args.limit < 0:
                raise CommandError(ERR_LIMIT_NEGATIVE)
            limit_given = True
            i += 1
        elif xadd and opt == b"nomkstream":  # XADD-3
            args.nomkstream = True
        elif xadd:  # XADD-4: the first other word is the ID; XADD-DIALECT-1: 6.2 has no ms-*
            parsed = parse_id_noting_errno(call, argv[i], allow_auto_seq=call.server.dialect.xadd_auto_sequence)
            if parsed is None:
                raise CommandError(table.INVALID_ID)
            args.id = parsed
            break
        else:  # XTRIM-4
            raise CommandError(table.SYNTAX)
        i += 1
    args.id_index = i
    if args.limit and args.strategy is None:  # XTRIM-5
        raise CommandError(ERR_LIMIT_NO_STRATEGY)
    if not xadd and args.strategy is None:  # XTRIM-5
        raise CommandError(ERR_XTRIM_NO_STRATEGY)
    if limit_given:
        if not args.approx:  # XTRIM-6
            raise CommandError(ERR_LIMIT_NOT_APPROX)
    elif args.approx:  # XTRIM-7: the default work limit of ~, a C long long product that wraps
        limit = as_i64(DEFAULT_APPROX_LIMIT_FACTOR * call.server.config_int("stream-node-max-entries"))
        if call.server.dialect.approx_limit_bounded:  # XTRIM-7: bounded on both sides
            if limit <= 0:
                limit = APPROX_LIMIT_WHEN_UNSET
            limit = min(limit, APPROX_LIMIT_CAP)
        # XTRIM-DIALECT-1: otherwise as it is, 0 meaning unlimited and a negative one trimming nothing
        args.limit = limit
    else:
        args.limit = 0  # XTRIM-7: exact trimming is never limited
    return args


# -- trimming ------------------------------------------------------------------------------
def trim(call: Call, stream: Stream, args: AddTrimArgs) -> int:
    """``streamTrim``: remove entries per ``args``; returns how many (XTRIM-9, XTRIM-10)."""
    layout = stream.layout
    removed = layout.trim(  # XTRIM-9: the node walk is the layout's
        maxlen=args.maxlen if args.strategy == "maxlen" else None,
        minid=args.minid if args.strategy == "minid" else None,
        approx=args.approx, limit=args.limit)
    if layout.radix_tree_keys == 0:
        note_iterator_end(call)  # the node walk ran off the end of the tree
    if layout.disordered:
        sync_entries(stream)
        if removed or not stream.length:  # XTRIM-10: a trim that removed nothing leaves it, LAYOUT-3
            stream.first_id = first_live_id(stream)
        return len(removed)
    if removed:
        discard_all(stream.entries, removed)
    # XTRIM-10: the first live entry, 0-0 for an empty stream; max-deleted-entry-id stays.
    stream.first_id = first_key(stream.entries) if stream.entries else MIN_ID
    return len(removed)


def sync_entries(stream: Stream) -> None:
    """LAYOUT-1: a disordered layout holds the entries; ``Stream.entries`` mirrors the live ones it can walk."""
    stream.entries = SortedDict(stream.layout.live_entries())


def first_live_id(stream: Stream) -> StreamID:
    """streamGetEdgeID(first, skipping tombstones) on a disordered layout (LAYOUT-3): the first live
    entry of a forward walk; 0-0 for an empty stream, the maximum ID when only lost entries count."""
    if not stream.length:
        return MIN_ID
    return stream.layout.first_live() or MAX_ID


def rewritten_trim_argv(argv: Sequence[bytes | int], stream: Stream, args: AddTrimArgs) -> list[bytes | int]:
    """XTRIM-11: ``~`` becomes ``=`` and the threshold what the trim left: the length, or the
    first entry ID counting tombstones (the maximum ID when no node is left)."""
    out = list(argv)
    out[args.threshold_index - 1] = b"="
    if args.strategy == "maxlen":
        out[args.threshold_index] = b"%d" % stream.length
    else:
        first = stream.layout.first_id()
        out[args.threshold_index] = (MAX_ID if first is None else first).encode()
    return out


# -- XADD ------------------------------------------------------------------------------------
def _next_auto_id(call: Call, last: StreamID) -> StreamID:
    """``streamNextID`` (XADD-11): the clock's millisecond if it is past the top, else the top's successor."""
    now = call.now()
    if now > Instant(last.ms):
        return StreamID(Instant.id_ms(now), 0)
    nxt = successor(last)
    assert nxt is not None, "the exhausted check (XADD-9) comes first"
    return nxt


@command("xadd")
def xadd(call: Call) -> HandlerResult:
    argv = call.argv
    key = argv[1]
    args = parse_add_trim_args(call, xadd=True)
    field_pos = args.id_index + 1
    nfields = len(argv) - field_pos
    if nfields < 2 or nfields % 2 == 1:  # XADD-5
        if not call.server.dialect.subcommand_table:  # XADD-DIALECT-2: 6.2's own wording
            raise CommandError(ERR_XADD_ARITY)
        raise CommandError(table.arity_error(call.spec))
    given = args.id
    if given is not None and given.seq_given and given.id == MIN_ID:  # XADD-6
        raise CommandError(ERR_ID_ZERO)
    stream = call.stream(key)  # XADD-7: WRONGTYPE
    if stream is None:
        if args.nomkstream:  # XADD-7
            return NullBulk()
        stream = Stream()  # XADD-8: the key exists from here on, even if the append fails
        call.db[key] = stream
        notify_new(call, key)  # NOTIFY-3
    last = stream.last_id
    if last == MAX_ID:  # XADD-9
        raise CommandError(ERR_EXHAUSTED)
    # XADD-10: the new ID, from the clock, the argument, or both
    if given is None:
        new_id = _next_auto_id(call, last)
    elif given.seq_given:
        new_id = given.id  # XADD-12
    elif given.id.ms == last.ms:  # XADD-13
        if last.seq == U64_MAX:
            # XADD-14: streamAppendItem fails without setting errno; 7.0 words
            # the error after whatever errno was left by earlier code.
            # XADD-DIALECT-3: 7.2+ words it as a too-small ID whatever errno holds
            if call.server.errno == EDOM or call.server.dialect.xadd_auto_sequence_overflow_is_too_small:
                raise CommandError(ERR_ID_NOT_ABOVE_TOP)
            raise CommandError(ERR_TOO_LARGE)
        new_id = StreamID(last.ms, last.seq + 1)
    else:
        new_id = given.id  # XADD-13: ms-0
    if new_id <= last:  # XADD-15
        call.server.errno = EDOM
        raise CommandError(ERR_ID_NOT_ABOVE_TOP)
    fields: Fields = tuple(argv[field_pos:])
    if sum(map(len, fields)) > LISTPACK_MAX_SIZE:  # XADD-16
        call.server.errno = ERANGE
        raise CommandError(ERR_TOO_LARGE)
    if stream.layout.radix_tree_keys == 0:
        note_iterator_end(call)  # the seek for the tail node finds an empty tree
    stream.layout.append(new_id, fields, call.server.config_int("stream-node-max-entries"),
                         call.server.config_int("stream-node-max-bytes"), stream.entries)
    put(stream.entries, new_id, fields)  # XADD-17
    if stream.layout.disordered:
        sync_entries(stream)  # LAYOUT-1, LAYOUT-4: a replaced node's entries are gone from every walk
    stream.last_id = new_id
    stream.entries_added = as_u64(stream.entries_added + 1)  # a uint64_t in Redis (LAG-6)
    if stream.length == 1:
        stream.first_id = new_id
    call.modified(key)
    notify_keyspace_event(call, "t", "xadd", key)  # NOTIFY-4
    call.changed()  # STATS-6: one change, whatever the trimming removes
    propagated: list[bytes | int] = list(argv)
    if args.strategy is not None:  # XADD-18: the new entry itself may go
        if trim(call, stream, args):
            notify_keyspace_event(call, "t", "xtrim", key)  # NOTIFY-4
        if args.approx:
            propagated = rewritten_trim_argv(propagated, stream, args)
    if given is None or not given.seq_given:  # XADD-19
        propagated[args.id_index] = new_id.encode()
    call.propagate(propagated)
    call.ready(key)  # XADD-20
    return Bulk(new_id.encode())


# -- XTRIM ---------------------------------------------------------------------------------
@command("xtrim")
def xtrim(call: Call) -> Reply:
    args = parse_add_trim_args(call, xadd=False)  # XTRIM-1: before the key
    stream = call.stream(call.argv[1])  # XTRIM-8: WRONGTYPE
    if stream is None:
        return Int(0)  # XTRIM-8
    deleted = trim(call, stream, args)
    if deleted:  # XTRIM-12
        call.modified(call.argv[1])
        notify_keyspace_event(call, "t", "xtrim", call.argv[1])  # NOTIFY-4
        call.changed(deleted)  # STATS-6
        argv: list[bytes | int] = rewritten_trim_argv(call.argv, stream, args) if args.approx else list(call.argv)
        call.propagate(argv)
    return Int(deleted)


# -- XLEN ------------------------------------------------------------------------------------
@command("xlen")
def xlen(call: Call) -> Reply:
    stream = call.stream(call.argv[1])  # XLEN-1
    return Int(0 if stream is None else stream.length)


# -- XRANGE / XREVRANGE ----------------------------------------------------------------
def _range_count(argv: list[bytes]) -> int:
    """XRANGE-3: ``COUNT n`` pairs after the bounds; -1 when none. A negative count is 0."""
    count = -1
    j = 4
    while j < len(argv):
        if _lower(argv[j]) == b"count" and len(argv) - j - 1 >= 1:
            count = max(_getll(argv[j + 1]), 0)
            j += 2
        else:
            raise CommandError(table.SYNTAX)
    return count


def range_reply(call: Call, stream: Stream, low: StreamID, high: StreamID, count: int, rev: bool) -> Reply:
    """``streamReplyWithRange`` without a group: live entries in [low, high], at most ``count`` (0: all).

    The iterator stops at the first live entry beyond the range or when COUNT
    is reached; otherwise it runs off the end of the tree (errno 0).
    """
    if stream.layout.disordered:
        return _walked_range_reply(call, stream, low, high, count, rev)
    entries = stream.entries
    out: list[Reply] = []
    for entry_id in keys_down_from(entries, high, low) if rev else keys_from(entries, low, high):
        out.append(entry_reply(entry_id, entries[entry_id]))
        if count and len(out) == count:
            return Array(tuple(out))
    if rev:  # beyond: a live entry below low that is not above high
        beyond = last_key_to(entries, low, inclusive=False) if low <= high else last_key_to(entries, high)
    else:  # beyond: a live entry above high that is not below low
        beyond = first_key_from(entries, high, inclusive=False) if low <= high else first_key_from(entries, low)
    if beyond is None:
        note_iterator_end(call)
    return Array(tuple(out))


def _walked_range_reply(call: Call, stream: Stream, low: StreamID, high: StreamID, count: int,
                        rev: bool) -> Reply:
    """``range_reply`` on a disordered layout: what Redis's iterator emits, in its order (LAYOUT-2)."""
    out: list[Reply] = []
    walk = stream.layout.walk(low, high, rev)
    for entry_id, fields in walk:
        out.append(entry_reply(entry_id, fields))
        if count and len(out) == count:
            return Array(tuple(out))
    if walk.ran_off:
        note_iterator_end(call)
    return Array(tuple(out))


def _xrange(call: Call, rev: bool) -> Reply:
    """XRANGE and XREVRANGE; they change and propagate nothing (XRANGE-6)."""
    argv = call.argv
    start_arg, end_arg = (argv[3], argv[2]) if rev else (argv[2], argv[3])  # XRANGE-1
    low, high = interval_bounds(call, start_arg, end_arg)  # XRANGE-1, XRANGE-2
    count = _range_count(argv)
    stream = call.stream(argv[1])  # XRANGE-4
    if stream is None:
        return Array(())
    if count == 0:  # XRANGE-5
        return NullArray()
    return range_reply(call, stream, low, high, 0 if count < 0 else count, rev)


@command("xrange")
def xrange(call: Call) -> Reply:
    return _xrange(call, rev=False)


@command("xrevrange")
def xrevrange(call: Call) -> Reply:
    return _xrange(call, rev=True)


# -- XDEL --------------------------------------------------------------------------------------
@command("xdel")
def xdel(call: Call) -> Reply:
    key = call.argv[1]
    stream = call.stream(key)  # XDEL-1
    if stream is None:
        return Int(0)
    ids: list[StreamID] = []
    for arg in call.argv[2:]:  # XDEL-2: every ID before any deletion
        entry_id = strict_id(call, arg)
        if entry_id is None:
            raise CommandError(table.INVALID_ID)
        ids.append(entry_id)
    layout = stream.layout
    if layout.disordered:
        return _xdel_walked(call, stream, ids)
    deleted = 0
    first_deleted = False
    for entry_id in ids:  # XDEL-3
        if entry_id not in stream.entries:
            note_entry_lookup(call, stream, entry_id)  # the lookup may run past the last node
            continue
        del stream.entries[entry_id]
        layout.delete(entry_id)
        first_deleted = first_deleted or entry_id == stream.first_id
        stream.max_deleted_id = max(stream.max_deleted_id, entry_id)
        deleted += 1
    if deleted:  # XDEL-4
        if not stream.entries:
            stream.first_id = MIN_ID
        elif first_deleted:
            stream.first_id = first_key(stream.entries)
        call.modified(key)
        notify_keyspace_event(call, "t", "xdel", key)  # NOTIFY-4
        call.changed(deleted)  # STATS-6
        call.propagate_verbatim()
    return Int(deleted)


def _xdel_walked(call: Call, stream: Stream, ids: list[StreamID]) -> Reply:
    """XDEL-3, XDEL-4 on a disordered layout: each ID is looked up by Redis's walk (LAYOUT-2), so an
    entry the walk cannot reach is not deleted."""
    layout = stream.layout
    deleted = 0
    first_deleted = False
    for entry_id in ids:  # XDEL-3
        if not layout.delete(entry_id):
            if layout.lookup(entry_id)[1]:
                note_iterator_end(call)  # the lookup ran past the last node
            continue
        first_deleted = first_deleted or entry_id == stream.first_id
        stream.max_deleted_id = max(stream.max_deleted_id, entry_id)
        deleted += 1
    if deleted:  # XDEL-4
        sync_entries(stream)
        if not stream.length:
            stream.first_id = MIN_ID
        elif first_deleted:
            stream.first_id = first_live_id(stream)
        call.modified(call.argv[1])
        notify_keyspace_event(call, "t", "xdel", call.argv[1])  # NOTIFY-4
        call.changed(deleted)  # STATS-6
        call.propagate_verbatim()
    return Int(deleted)


# -- XSETID -------------------------------------------------------------------------------------
@command("xsetid")
def xsetid(call: Call) -> Reply:
    argv = call.argv
    if not call.server.dialect.stream_counters and call.stream(argv[1]) is None:
        raise CommandError(table.NO_SUCH_KEY)  # XSETID-DIALECT-1: 6.2 checks the key before the ID
    last_id = strict_id(call, argv[2])  # XSETID-1
    if last_id is None:
        raise CommandError(table.INVALID_ID)
    entries_added = -1
    max_deleted = MIN_ID
    i = 3
    while i < len(argv):  # XSETID-2
        more = len(argv) - 1 - i
        opt = _lower(argv[i])
        if opt == b"entriesadded" and more:
            entries_added = _getll(argv[i + 1])
            if entries_added < 0:
                raise CommandError(ERR_ENTRIES_ADDED_NEGATIVE)
        elif opt == b"maxdeletedid" and more:
            parsed = strict_id(call, argv[i + 1])
            if parsed is None:
                raise CommandError(table.INVALID_ID)
            if last_id < parsed:
                raise CommandError(ERR_SETID_BELOW_MAXDELETED)
            max_deleted = parsed
        else:
            raise CommandError(table.SYNTAX)
        i += 2
    value = call.lookup(argv[1])  # XSETID-3
    if value is None:
        raise CommandError(table.NO_SUCH_KEY)
    stream = call.stream(argv[1])
    assert stream is not None
    if call.server.dialect.xsetid_checks_max_deleted and last_id < stream.max_deleted_id:  # XSETID-DIALECT-2
        raise CommandError(ERR_SETID_BELOW_CURRENT_MAXDELETED)
    if stream.length:  # XSETID-4
        if last_id < stream.last_live_id():
            raise CommandError(ERR_SETID_BELOW_TOP)
        if entries_added != -1 and stream.length > entries_added:
            raise CommandError(ERR_SETID_ENTRIES_ADDED)
    stream.last_id = last_id  # XSETID-5
    if entries_added != -1:
        stream.entries_added = entries_added
    if max_deleted != MIN_ID:
        stream.max_deleted_id = max_deleted
    # XSETID-5: 7.0 does not signal the key as modified: WATCH does not see it.
    call.changed()  # STATS-6
    notify_keyspace_event(call, "t", "xsetid", call.argv[1])  # NOTIFY-4
    call.propagate_verbatim()  # XSETID-6
    return OK
