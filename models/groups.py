"""Handlers of consumer-group management and claiming: XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM.

Every branch cites its rule in ``spec/rules/groups.md``. The checks come in
the order Redis 7.0.15 makes them, because that order decides which error a
client sees when several arguments are wrong at once.

Redis compares option names and the special IDs (``$``) as C strings, so an
argument is read up to its first NUL there; IDs, counts and names are
binary-safe. Error texts that quote an argument quote it as C's ``%s`` would
(up to the first NUL), with CR and LF turned into spaces.

PYTEST_DONT_REWRITE: the seeded bugs of models/mutants.py recompile this module's functions from
their source and compare bytecode; pytest would otherwise rewrite its asserts wherever xspec's
pytest plugin is installed.
"""

from __future__ import annotations

from typing import NamedTuple, cast

from xspec.models import pel
from xspec.models.cerrno import note_id_parse, note_iterator_end, strict_id
from xspec.models.clock import EPOCH, ZERO_DURATION, Duration, Instant
from xspec.models.intervals import interval_bounds, interval_start
from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.reads import lookup_entry
from xspec.models.server import Call, CommandError, command
from xspec.models.state import Consumer, Group, Nack, Stream
from xspec.spec import commands as table
from xspec.spec.errors import (
    BUSYGROUP,
    ENTRIESREAD_RANGE,
    KEY_REQUIRED,
    XAUTOCLAIM_BAD_MIN_IDLE,
    XAUTOCLAIM_COUNT_NOT_POSITIVE,
    XCLAIM_BAD_IDLE,
    XCLAIM_BAD_MIN_IDLE,
    XCLAIM_BAD_RETRYCOUNT,
    XCLAIM_BAD_TIME,
    no_such_group_for_key,
    no_such_key_or_group,
    subcommand_syntax,
    xclaim_unrecognized_option,
)
from xspec.spec.help import XGROUP_HELP, XGROUP_HELP_62
from xspec.spec.ids import (
    I64_MAX,
    MIN_ID,
    StreamID,
    as_i64,
    c_string,
    parse_ll,
    parse_loose,
    successor,
)
from xspec.spec.limits import AUTOCLAIM_ATTEMPTS_FACTOR, AUTOCLAIM_DEFAULT_COUNT, AUTOCLAIM_MAX_COUNT
from xspec.spec.resp import OK, Array, Bulk, Int, NullArray, NullBulk, Reply, Simple

# -- helpers ------------------------------------------------------------------


def _option(arg: bytes) -> bytes:
    """An argument as ``strcasecmp`` compares it to an option name."""
    return c_string(arg).lower()


def _entry_reply(entry_id: StreamID, fields: tuple[bytes, ...]) -> Reply:
    return Array((Bulk(entry_id.encode()), Array(tuple(map(Bulk, fields)))))


def _id_reply(entry_id: StreamID) -> Reply:
    return Bulk(entry_id.encode())


def _nogroup(call: Call) -> CommandError:
    return CommandError(no_such_key_or_group(call.argv[1], call.argv[2]))


def _stream_and_group(call: Call) -> tuple[Stream, Group]:
    """Key lookup, WRONGTYPE, then NOGROUP (XPENDING-6, XCLAIM-1, XAUTOCLAIM-4)."""
    stream = call.stream(call.argv[1])
    group = None if stream is None else stream.groups.get(call.argv[2])
    if stream is None or group is None:
        raise _nogroup(call)
    return stream, group


def _claimant(call: Call, group: Group, name: bytes) -> Consumer:
    """The claiming consumer, looked up or created at the first claim (XCLAIM-13).

    Either way Redis 7.0 reads the clock once: a found consumer's seen-time is
    refreshed, a new one starts with it.
    """
    now = call.now()
    consumer = group.consumers.get(name)
    if consumer is None:
        consumer = pel.create_consumer(group, name, now)
        if call.server.dialect.consumer_creation_counts:  # STATS-8; STATS-DIALECT-5; NOTIFY-DIALECT-2
            call.changed()
            notify_keyspace_event(call, "t", "xgroup-createconsumer", call.argv[1])
        return consumer
    consumer.seen_time = now
    return consumer


def _pending_owner(nack: Nack) -> Consumer:
    # INV-6: every NACK in a group PEL has an owner.
    assert nack.consumer is not None
    return nack.consumer


# -- XGROUP ---------------------------------------------------------------------


def _subcommand_syntax(call: Call) -> CommandError:
    # XGROUP-2: the subcommand is echoed as typed, at most 128 bytes.
    # DISPATCH-DIALECT-1: 6.2 words it "Unknown"
    return CommandError(subcommand_syntax(call.argv[1], call.argv[0], call.server.dialect.subcommand_table))


class _XGroupTarget(NamedTuple):
    """What the shared preamble of the XGROUP subcommands found."""

    stream: Stream | None
    group: Group | None
    entries_read: int


def _xgroup_preamble(call: Call, sub: str) -> _XGroupTarget:
    """Options, key and group checks shared by every XGROUP subcommand but HELP."""
    argv = call.argv
    create = sub == "create"
    mkstream = False
    entries_read = -1
    i = 5
    while i < len(argv):  # XGROUP-2
        opt = _option(argv[i])
        if create and opt == b"mkstream":
            mkstream = True
            i += 1
        elif sub in ("create", "setid") and opt == b"entriesread" and i + 1 < len(argv):
            value = parse_ll(argv[i + 1])
            if value is None:
                raise CommandError(table.NOT_INTEGER)
            if value < 0 and value != -1:
                raise CommandError(ENTRIESREAD_RANGE)
            entries_read = value
            i += 2
        else:
            raise _subcommand_syntax(call)
    stream = call.stream(argv[2])  # XGROUP-3
    group = None
    if not mkstream:
        if stream is None:  # XGROUP-4
            raise CommandError(KEY_REQUIRED)
        group = stream.groups.get(argv[3])
        if group is None and sub in ("setid", "createconsumer", "delconsumer"):  # XGROUP-5
            raise CommandError(no_such_group_for_key(argv[3], argv[2]))
    return _XGroupTarget(stream, group, entries_read)


@command("xgroup|create")
def xgroup_create(call: Call) -> Reply:
    target = _xgroup_preamble(call, "create")
    argv = call.argv
    if not 5 <= len(argv) <= 8:  # XGROUP-6
        raise _subcommand_syntax(call)
    stream = target.stream
    if c_string(argv[4]) == b"$":  # XGROUP-7
        last_id = stream.last_id if stream is not None else MIN_ID
    else:
        parsed = strict_id(call, argv[4])  # XADD-14
        if parsed is None:
            raise CommandError(table.INVALID_ID)
        last_id = parsed
    if stream is None:  # XGROUP-8
        stream = Stream()
        call.db[argv[2]] = stream
        call.ready(argv[2])
        notify_new(call, argv[2])  # NOTIFY-3
        call.modified(argv[2])
    name = argv[3]
    if name in stream.groups:  # XGROUP-9
        raise CommandError(BUSYGROUP)
    stream.groups[name] = Group(name, last_id, target.entries_read)  # XGROUP-10
    stream.groups_allocated = True
    call.changed()  # STATS-6
    notify_keyspace_event(call, "t", "xgroup-create", argv[2])  # NOTIFY-4
    call.propagate_verbatim()
    return OK


@command("xgroup|setid")
def xgroup_setid(call: Call) -> Reply:
    target = _xgroup_preamble(call, "setid")
    argv = call.argv
    if len(argv) not in (5, 7):  # XGROUP-6
        raise _subcommand_syntax(call)
    stream, group = target.stream, target.group
    assert stream is not None and group is not None
    if c_string(argv[4]) == b"$":  # XGROUP-11
        last_id = stream.last_id
    else:
        note_id_parse(call, argv[4])  # XADD-14
        parsed = parse_loose(argv[4])
        if parsed is None:
            raise CommandError(table.INVALID_ID)
        last_id = parsed
    group.last_id = last_id
    group.entries_read = target.entries_read
    call.changed()  # STATS-6
    notify_keyspace_event(call, "t", "xgroup-setid", argv[2])  # NOTIFY-4
    call.propagate_verbatim()
    return OK


@command("xgroup|destroy")
def xgroup_destroy(call: Call) -> Reply:
    target = _xgroup_preamble(call, "destroy")
    stream, group = target.stream, target.group
    assert stream is not None
    if group is None:  # XGROUP-12
        return Int(0)
    del stream.groups[group.name]
    call.changed()  # STATS-6
    notify_keyspace_event(call, "t", "xgroup-destroy", call.argv[2])  # NOTIFY-4
    call.propagate_verbatim()
    # XGROUP-12: every client blocked on the key re-checks it; readers of this group fail.
    call.ready(call.argv[2])
    return Int(1)


@command("xgroup|createconsumer")
def xgroup_createconsumer(call: Call) -> Reply:
    group = _xgroup_preamble(call, "createconsumer").group
    assert group is not None
    name = call.argv[4]
    if name in group.consumers:  # XGROUP-13
        return Int(0)
    pel.create_consumer(group, name, call.now())
    call.changed()  # STATS-6
    notify_keyspace_event(call, "t", "xgroup-createconsumer", call.argv[2])  # NOTIFY-4
    call.propagate_verbatim()
    return Int(1)


@command("xgroup|delconsumer")
def xgroup_delconsumer(call: Call) -> Reply:
    group = _xgroup_preamble(call, "delconsumer").group
    assert group is not None
    consumer = group.consumers.get(call.argv[4])
    if consumer is None:  # XGROUP-14
        if call.server.dialect.delconsumer_always_counts:  # STATS-DIALECT-4; NOTIFY-DIALECT-2
            call.changed()
            notify_keyspace_event(call, "t", "xgroup-delconsumer", call.argv[2])
        return Int(0)
    pending = len(consumer.pel)
    for entry_id in list(consumer.pel):
        pel.remove(group, entry_id)
    note_iterator_end(call)  # XADD-14: the walk over the consumer's PEL ends off the tree
    del group.consumers[consumer.name]
    call.changed()  # STATS-6
    notify_keyspace_event(call, "t", "xgroup-delconsumer", call.argv[2])  # NOTIFY-4
    call.propagate_verbatim()
    return Int(pending)


@command("xgroup|help")
def xgroup_help(call: Call) -> Reply:
    dialect = call.server.dialect
    lines = XGROUP_HELP if dialect.stream_counters else XGROUP_HELP_62  # XGROUP-15, XGROUP-DIALECT-2
    # HELP-DIALECT-1: the closing line is the dialect's
    return Array(tuple(Simple(line) for line in (*lines[:-1], dialect.help_last_line)))


@command("xgroup|*")
def xgroup_refused(call: Call) -> Reply:
    """6.2's XGROUP with an unknown subcommand or a count it does not take (XGROUP-DIALECT-1).

    With at least four arguments 6.2 first checks the key and, for SETID,
    CREATECONSUMER and DELCONSUMER, the group, as for a valid subcommand.
    """
    argv = call.argv
    if len(argv) >= 4:
        stream = call.stream(argv[2])
        if stream is None:
            raise CommandError(KEY_REQUIRED)
        if argv[3] not in stream.groups and _option(argv[1]) in (b"setid", b"createconsumer", b"delconsumer"):
            raise CommandError(no_such_group_for_key(argv[3], argv[2]))
    raise _subcommand_syntax(call)


# -- XACK -------------------------------------------------------------------------


@command("xack")
def xack(call: Call) -> Reply:
    argv = call.argv
    stream = call.stream(argv[1])  # XACK-1
    group = None if stream is None else stream.groups.get(argv[2])
    if group is None:
        return Int(0)
    ids: list[StreamID] = []
    for arg in argv[3:]:  # XACK-2
        parsed = strict_id(call, arg)  # XADD-14
        if parsed is None:
            raise CommandError(table.INVALID_ID)
        ids.append(parsed)
    acknowledged = 0
    for entry_id in ids:  # XACK-3
        if pel.remove(group, entry_id) is not None:
            acknowledged += 1
    if acknowledged:  # XACK-4
        call.changed(acknowledged)  # STATS-6
        call.propagate_verbatim()
    return Int(acknowledged)


# -- XPENDING -----------------------------------------------------------------------


@command("xpending")
def xpending(call: Call) -> Reply:
    argv = call.argv
    argc = len(argv)
    if argc != 3 and not 6 <= argc <= 9:  # XPENDING-1
        raise CommandError(table.SYNTAX)
    min_idle = ZERO_DURATION
    count = 0
    start = end = MIN_ID
    consumer_name: bytes | None = None
    if argc >= 6:
        first = 3
        if _option(argv[3]) == b"idle":  # XPENDING-2
            idle = parse_ll(argv[4])
            if idle is None:
                raise CommandError(table.NOT_INTEGER)
            min_idle = Duration(idle)
            if argc < 8:
                raise CommandError(table.SYNTAX)
            first += 2
        parsed_count = parse_ll(argv[first + 2])  # XPENDING-3
        if parsed_count is None:
            raise CommandError(table.NOT_INTEGER)
        count = max(parsed_count, 0)
        start, end = interval_bounds(call, argv[first], argv[first + 1])  # XPENDING-4
        if first + 3 < argc:  # XPENDING-5
            consumer_name = argv[first + 3]
    _, group = _stream_and_group(call)  # XPENDING-6
    if argc == 3:
        return _pending_summary(call, group)
    return _pending_entries(call, group, start, end, count, min_idle, consumer_name)


def _pending_summary(call: Call, group: Group) -> Reply:
    if not group.pel:  # XPENDING-8
        return Array((Int(0), NullBulk(), NullBulk(), NullArray()))
    note_iterator_end(call)  # XADD-14: the walk over the consumers ends off the tree
    owners = tuple(  # XPENDING-7
        Array((Bulk(c.name), Bulk(b"%d" % len(c.pel))))
        for c in group.consumers.values() if c.pel)
    return Array((Int(len(group.pel)), _id_reply(group.pel.first()),
                  _id_reply(group.pel.last()), Array(owners)))


def _pending_entries(call: Call, group: Group, start: StreamID, end: StreamID, count: int,
                     min_idle: Duration, consumer_name: bytes | None) -> Reply:
    if consumer_name is not None:
        consumer = group.consumers.get(consumer_name)
        if consumer is None:  # XPENDING-9
            return Array(())
        scanned = consumer.pel
    else:
        scanned = group.pel
    now = call.now()  # XPENDING-10
    rows: list[Reply] = []
    if not count:
        return Array(())
    for entry_id in scanned.keys_from(start):
        if entry_id > end:
            break
        nack: Nack = scanned[entry_id]
        if min_idle and now - nack.delivery_time < min_idle:
            continue
        count -= 1
        rows.append(Array((_id_reply(entry_id), Bulk(_pending_owner(nack).name),
                           Int(Duration.reply_ms(max(now - nack.delivery_time, ZERO_DURATION))),
                           Int(pel.reported_count(nack)))))
        if not count:
            break
    else:
        note_iterator_end(call)  # XADD-14: neither COUNT nor the end ID stopped the walk
    return Array(tuple(rows))


# -- XCLAIM -----------------------------------------------------------------------------


class _ClaimOptions:
    """The options after XCLAIM's IDs (XCLAIM-5)."""

    __slots__ = ("force", "justid", "delivery_time", "retry_count", "last_id")

    def __init__(self) -> None:
        self.force = False
        self.justid = False
        self.delivery_time: Instant | None = None  # from IDLE or TIME
        self.retry_count = -1  # -1: not given
        self.last_id = MIN_ID


def _claim_options(call: Call, first: int, now: Instant) -> _ClaimOptions:
    argv = call.argv
    opts = _ClaimOptions()
    j = first
    while j < len(argv):
        more = j + 1 < len(argv)
        opt = _option(argv[j])
        if opt == b"force":
            opts.force = True
        elif opt == b"justid":
            opts.justid = True
        elif opt == b"idle" and more:
            j += 1
            idle = parse_ll(argv[j])
            if idle is None:
                raise CommandError(XCLAIM_BAD_IDLE)
            opts.delivery_time = now - Duration(idle)
        elif opt == b"time" and more and not isinstance(argv[j + 1], bytes):
            j += 1  # an AOF's XCLAIM replayed with its time as computed (models/persistence.replayable)
            opts.delivery_time = cast(Instant, argv[j])
        elif opt == b"time" and more:
            j += 1
            at = parse_ll(argv[j])
            if at is None:
                raise CommandError(XCLAIM_BAD_TIME)
            opts.delivery_time = Instant(at)
        elif opt == b"retrycount" and more:
            j += 1
            retry = parse_ll(argv[j])
            if retry is None:
                raise CommandError(XCLAIM_BAD_RETRYCOUNT)
            opts.retry_count = retry
        elif opt == b"lastid" and more:
            j += 1
            last_id = strict_id(call, argv[j])  # XADD-14
            if last_id is None:
                raise CommandError(table.INVALID_ID)
            opts.last_id = last_id
        else:
            raise CommandError(xclaim_unrecognized_option(argv[j]))
        j += 1
    return opts


@command("xclaim")
def xclaim(call: Call) -> Reply:
    argv = call.argv
    key = argv[1]
    stream, group = _stream_and_group(call)  # XCLAIM-1
    min_idle_arg = parse_ll(argv[4])  # XCLAIM-2
    if min_idle_arg is None:
        raise CommandError(XCLAIM_BAD_MIN_IDLE)
    min_idle = Duration(max(min_idle_arg, 0))
    ids: list[tuple[StreamID, bytes]] = []
    j = 5
    while j < len(argv):  # XCLAIM-3
        parsed = strict_id(call, argv[j])  # XADD-14: the option word that ends the IDs is parsed too
        if parsed is None:
            break
        ids.append((parsed, argv[j]))
        j += 1
    now = call.now()  # XCLAIM-4
    opts = _claim_options(call, j, now)  # XCLAIM-5
    propagate_last_id = False
    if opts.last_id > group.last_id:  # XCLAIM-6
        group.last_id = opts.last_id
        propagate_last_id = True
    delivery_time = opts.delivery_time  # XCLAIM-7
    if delivery_time is None or delivery_time < EPOCH or delivery_time > now:
        delivery_time = now

    consumer: Consumer | None = None
    active = call.server.dialect.consumer_active_time
    if active:  # XCLAIM-DIALECT-2: 7.2+ creates or refreshes the claimant before claiming anything
        consumer = _claimant(call, group, argv[3])
    claimed: list[Reply] = []
    drop_deleted = call.server.dialect.claims_drop_deleted
    for entry_id, id_arg in ids:  # XCLAIM-8
        nack = group.pel.get(entry_id)
        fields = lookup_entry(call, stream, entry_id)  # XADD-14
        gone = fields is None
        if gone and drop_deleted:  # XCLAIM-9
            if nack is not None:
                pel.propagate_claim(call, key, group, _pending_owner(nack).name, id_arg, nack)
                call.changed()  # STATS-8
                propagate_last_id = False
                pel.remove(group, entry_id)
            continue
        if nack is None:
            if not opts.force or gone:  # XCLAIM-11, XCLAIM-DIALECT-1
                continue
            nack = Nack(call.now(), 1, None)  # XCLAIM-10
        if nack.consumer is not None and min_idle and now - nack.delivery_time < min_idle:
            continue  # XCLAIM-12
        if consumer is None:  # XCLAIM-13
            consumer = _claimant(call, group, argv[3])
        if active:  # XCLAIM-DIALECT-2
            consumer.active_time = now
        nack.delivery_time = delivery_time  # XCLAIM-14
        if opts.retry_count >= 0:
            nack.delivery_count = opts.retry_count
        elif not opts.justid:
            pel.count_delivery(nack)
        pel.give(group, entry_id, nack, consumer)
        if opts.justid:  # XCLAIM-15
            claimed.append(_id_reply(entry_id))
        elif gone:  # XCLAIM-DIALECT-1: 6.2 claims a deleted entry and replies nil for it
            claimed.append(NullBulk())
        else:
            claimed.append(_entry_reply(entry_id, fields))  # type: ignore[arg-type]
        pel.propagate_claim(call, key, group, consumer.name, id_arg, nack)  # XCLAIM-16
        call.changed()  # STATS-8
        propagate_last_id = False
    if propagate_last_id:  # XCLAIM-16
        pel.propagate_group_id(call, key, group)
        call.changed()  # STATS-8
    return Array(tuple(claimed))


# -- XAUTOCLAIM ---------------------------------------------------------------------------


@command("xautoclaim")
def xautoclaim(call: Call) -> Reply:
    argv = call.argv
    key = argv[1]
    min_idle_arg = parse_ll(argv[4])  # XAUTOCLAIM-1
    if min_idle_arg is None:
        raise CommandError(XAUTOCLAIM_BAD_MIN_IDLE)
    min_idle = Duration(max(min_idle_arg, 0))
    start = interval_start(call, argv[5])  # XAUTOCLAIM-2
    count = AUTOCLAIM_DEFAULT_COUNT
    justid = False
    j = 6
    while j < len(argv):  # XAUTOCLAIM-3
        opt = _option(argv[j])
        if opt == b"count" and j + 1 < len(argv):
            value = parse_ll(argv[j + 1])
            # XAUTOCLAIM-DIALECT-1: 6.2 caps COUNT at LONG_MAX only
            highest = AUTOCLAIM_MAX_COUNT if call.server.dialect.claims_drop_deleted else I64_MAX
            if value is None or not 1 <= value <= highest:
                raise CommandError(XAUTOCLAIM_COUNT_NOT_POSITIVE)
            count = value
            j += 1
        elif opt == b"justid":
            justid = True
        else:
            raise CommandError(table.SYNTAX)
        j += 1
    stream, group = _stream_and_group(call)  # XAUTOCLAIM-4
    # XAUTOCLAIM-5: the allocation of the deleted list is assumed to succeed.
    # XAUTOCLAIM-6; XAUTOCLAIM-DIALECT-1: 6.2's product wraps around as a C long
    attempts = as_i64(count * AUTOCLAIM_ATTEMPTS_FACTOR)
    drop_deleted = call.server.dialect.claims_drop_deleted
    now = call.now()
    consumer: Consumer | None = None
    active = call.server.dialect.consumer_active_time
    if active:  # XAUTOCLAIM-DIALECT-2: 7.2+ creates or refreshes the claimant before the scan
        consumer = _claimant(call, group, argv[3])
    claimed: list[Reply] = []
    deleted: list[Reply] = []
    position: StreamID | None = start  # where the walk resumes; None past the maximum ID
    while attempts and count and position is not None:
        entry_id = group.pel.first_from(position)
        if entry_id is None:
            position = None
            break
        nack = group.pel[entry_id]
        attempts -= 1
        position = successor(entry_id)
        fields = lookup_entry(call, stream, entry_id)  # XADD-14
        gone = fields is None
        if gone and drop_deleted:  # XAUTOCLAIM-7
            pel.propagate_claim(call, key, group, _pending_owner(nack).name, entry_id.encode(),
                                nack)  # XAUTOCLAIM-11
            call.changed()  # STATS-8
            pel.remove(group, entry_id)
            deleted.append(_id_reply(entry_id))
            count -= 1
            continue
        if min_idle and now - nack.delivery_time < min_idle:  # XAUTOCLAIM-8
            continue
        if consumer is None:  # XAUTOCLAIM-9
            consumer = _claimant(call, group, argv[3])
        if active:  # XAUTOCLAIM-DIALECT-2
            consumer.active_time = now
        nack.delivery_time = now
        if not justid:
            pel.count_delivery(nack)
        pel.give(group, entry_id, nack, consumer)
        if justid:
            claimed.append(_id_reply(entry_id))
        elif gone:  # XAUTOCLAIM-DIALECT-1: 6.2 claims a deleted entry and replies nil for it
            claimed.append(NullBulk())
        else:
            claimed.append(_entry_reply(entry_id, fields))  # type: ignore[arg-type]
        count -= 1
        pel.propagate_claim(call, key, group, consumer.name, entry_id.encode(), nack)  # XAUTOCLAIM-11
        call.changed()  # STATS-8
    cursor = MIN_ID  # XAUTOCLAIM-10
    after_walk = None if position is None else group.pel.first_from(position)
    if after_walk is None:
        note_iterator_end(call)  # XADD-14: the step to the next cursor ran off the tree
    else:
        cursor = after_walk
    if not drop_deleted:  # XAUTOCLAIM-DIALECT-1: 6.2 has no array of deleted IDs
        return Array((_id_reply(cursor), Array(tuple(claimed))))
    return Array((_id_reply(cursor), Array(tuple(claimed)), Array(tuple(deleted))))  # XAUTOCLAIM-11
