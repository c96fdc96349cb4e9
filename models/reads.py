"""XREAD and XREADGROUP, and the clients they leave blocked (rules XREAD-*, XREADGROUP-*, BLOCK-*).

Both commands share Redis 7.0's ``xreadCommand``: one option loop, one
per-stream check loop in argument order, one synchronous serving loop. A
command that serves nothing and has BLOCK blocks on all its keys; the server
later calls :func:`serve_blocked` for it, in FIFO order, each time one of
those keys is signalled (``serveClientsBlockedOnStreamKey`` and
``unblockDeletedStreamReadgroupClients`` of 7.0's blocked.c).

Inside this module the special ID ``>`` is :data:`~xspec.spec.ids.MAX_ID`, as
in Redis, which is why an explicit maximum ID behaves as ``>`` (XREADGROUP-8).

PYTEST_DONT_REWRITE: the seeded bugs of models/mutants.py recompile this module's functions from
their source and compare bytecode; pytest would otherwise rewrite its asserts wherever xspec's
pytest plugin is installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import cast

from xspec.models import lag, pel
from xspec.models.cerrno import note_entry_lookup, note_iterator_end, strict_id
from xspec.models.clock import Duration, Instant
from xspec.models.notify import notify_keyspace_event
from xspec.models.ordered import keys_from
from xspec.models.server import BLOCKED, Call, CommandError, HandlerResult, command
from xspec.models.state import Consumer, Fields, Group, Nack, Stream
from xspec.spec import commands as table
from xspec.spec.errors import (
    DOLLAR_IN_XREADGROUP,
    GROUP_IN_XREAD,
    GT_IN_XREAD,
    MISSING_GROUP,
    NOACK_IN_XREAD,
    PLUS_AT_ZERO_LAST_ID,
    PLUS_IN_XREADGROUP,
    TIMEOUT_NEGATIVE,
    TIMEOUT_NOT_INTEGER,
    TIMEOUT_OUT_OF_RANGE,
    UNBLOCKED_GROUP_GONE,
    UNBLOCKED_KEY_GONE,
    no_such_key_or_group_in_xreadgroup,
    unbalanced_streams,
)
from xspec.spec.ids import (
    I64_MAX,
    MAX_ID,
    MIN_ID,
    StreamID,
    c_string,
    parse_ll,
    predecessor,
    successor,
)
from xspec.spec.limits import BLOCKED_DEFAULT_COUNT
from xspec.spec.resp import Array, Bulk, Error, Map, NullArray, Reply


def entry_reply(entry_id: StreamID, fields: Fields) -> Reply:
    """One stream entry: ``[id, [field, value, ...]]``."""
    return Array((Bulk(entry_id.encode()), Array(tuple(map(Bulk, fields)))))


def streams_reply(call: Call, served: list[tuple[bytes, Reply]]) -> Reply:
    """The top level of a read reply: RESP2 ``[[key, entries], ...]``, RESP3 ``{key: entries}``."""
    if call.client.proto == 2:
        return Array(tuple(Array((Bulk(k), entries)) for k, entries in served))
    return Map(tuple((Bulk(k), entries) for k, entries in served))


@dataclass(slots=True)
class ReadOptions:
    """What the option loop of XREAD/XREADGROUP found."""

    count: int  # 0: no limit
    timeout_ms: Duration | None  # None: no BLOCK; 0: block forever
    timeout_read_at: Instant | None  # the clock reading of a positive BLOCK timeout
    group: bytes | None
    consumer: bytes | None
    noack: bool
    keys: list[bytes]
    id_args: list[bytes]


@dataclass
class BlockedRead:
    """The payload of a blocked XREAD/XREADGROUP (7.0's ``client->bpop``)."""

    count: int  # never 0: BLOCKED_DEFAULT_COUNT when none was given
    group: bytes | None
    consumer: bytes | None
    noack: bool
    after: dict[bytes, StreamID]  # XREAD: per key, the ID entries must be greater than


def parse_options(call: Call, grouped: bool) -> ReadOptions:
    """The option loop, from argv[1] to STREAMS (XREAD-1 .. XREAD-7, XREADGROUP-1)."""
    argv = call.argv
    argc = len(argv)
    count = 0
    timeout_ms: Duration | None = None
    timeout_read_at: Instant | None = None
    group: bytes | None = None
    consumer: bytes | None = None
    noack = False
    streams_at = 0
    i = 1
    while i < argc:
        more = argc - i - 1
        opt = c_string(argv[i]).lower()
        if opt == b"block" and more:
            i += 1
            t = parse_ll(argv[i])
            if t is None:  # XREAD-2
                raise CommandError(TIMEOUT_NOT_INTEGER)
            if t < 0:  # XREAD-2
                raise CommandError(TIMEOUT_NEGATIVE)
            timeout_ms = Duration(t)
            # XREAD-2: 7.0 turns a positive timeout into a deadline while parsing, so this
            # reading comes before the command's delivery and seen-time readings.
            timeout_read_at = call.now() if t > 0 else None
            if (timeout_read_at is not None and call.server.dialect.block_timeout_range_check
                    and timeout_ms > Instant(I64_MAX) - timeout_read_at):  # XREAD-DIALECT-3
                raise CommandError(TIMEOUT_OUT_OF_RANGE)
        elif opt == b"count" and more:
            i += 1
            n = parse_ll(argv[i])
            if n is None:  # XREAD-3
                raise CommandError(table.NOT_INTEGER)
            count = max(n, 0)  # XREAD-3: negative means no limit
        elif opt == b"streams" and more:
            streams_at = i + 1
            if (argc - streams_at) % 2:  # XREAD-4
                # XREAD-DIALECT-1: the text may name the command
                raise CommandError(unbalanced_streams(grouped, call.server.dialect.unbalanced_names_command))
            break
        elif opt == b"group" and more >= 2:
            if not grouped:  # XREAD-5
                raise CommandError(GROUP_IN_XREAD)
            group, consumer = argv[i + 1], argv[i + 2]  # XREADGROUP-1: the last GROUP wins
            i += 2
        elif opt == b"noack":
            if not grouped:  # XREAD-5
                raise CommandError(NOACK_IN_XREAD)
            noack = True
        else:  # XREAD-6
            raise CommandError(table.SYNTAX)
        i += 1
    if streams_at == 0:  # XREAD-6
        raise CommandError(table.SYNTAX)
    if grouped and group is None:  # XREADGROUP-1
        raise CommandError(MISSING_GROUP)
    half = (argc - streams_at) // 2
    return ReadOptions(count, timeout_ms, timeout_read_at, group, consumer, noack,
                       argv[streams_at:streams_at + half], argv[streams_at + half:])


@dataclass(slots=True)
class StreamRead:
    """One key/ID pair after the per-stream checks."""

    key: bytes
    stream: Stream | None
    group: Group | None
    after: StreamID  # MAX_ID stands for ">"


def check_streams(call: Call, opts: ReadOptions) -> list[StreamRead]:
    """Per key/ID pair in argument order: type, group, then ID (XREAD-8, XREAD-9, XREADGROUP-2..4)."""
    reads = []
    for key, id_arg in zip(opts.keys, opts.id_args, strict=True):
        stream = call.stream(key)  # XREAD-8: WRONGTYPE
        group = None
        if opts.group is not None:
            group = None if stream is None else stream.groups.get(opts.group)
            if group is None:  # XREADGROUP-2
                raise CommandError(no_such_key_or_group_in_xreadgroup(key, opts.group))
        token = c_string(id_arg)
        if token == b"$":
            if opts.group is not None:  # XREADGROUP-3
                raise CommandError(DOLLAR_IN_XREADGROUP)
            after = MIN_ID if stream is None else stream.last_id  # XREAD-9
        elif token == b"+" and call.server.dialect.xread_plus_id:  # XREAD-DIALECT-2
            if opts.group is not None:
                raise CommandError(PLUS_IN_XREADGROUP)
            if (stream is not None and stream.last_id == MIN_ID
                    and call.server.dialect.xread_plus_zero_last_id_error):  # XREAD-DIALECT-4
                raise CommandError(PLUS_AT_ZERO_LAST_ID)
            # the last entry: what follows the ID before last-generated-id (0-0 without entries)
            after = MIN_ID if stream is None or not stream.length else predecessor(stream.last_id) or MIN_ID
        elif token == b">":
            if opts.group is None:  # XREAD-9
                raise CommandError(GT_IN_XREAD)
            after = MAX_ID  # XREADGROUP-4
        else:
            parsed = strict_id(call, id_arg)  # XADD-14
            if parsed is None:  # XREAD-9
                raise CommandError(table.INVALID_ID)
            after = parsed
        reads.append(StreamRead(key, stream, group, after))
    return reads


def read_command(call: Call, grouped: bool) -> HandlerResult:
    """``xreadCommand``: parse, check every pair, serve what can be served, else block or reply nil."""
    opts = parse_options(call, grouped)
    reads = check_streams(call, opts)
    served: list[tuple[bytes, Reply]] = []
    touch_always = call.server.dialect.consumer_active_time
    for r in reads:
        s = r.stream
        if s is None:  # XREAD-10: a missing key is left out
            continue
        if r.group is None:
            if s.length and s.last_live_id() > r.after:  # XREAD-10
                served.append((r.key, Array(range_after(call, s, r.after, opts.count))))
            continue
        assert opts.consumer is not None
        if touch_always:  # XREADGROUP-DIALECT-1: 7.2+ creates or refreshes the consumer at every read
            touch_consumer(call, r.key, r.group, opts.consumer, opts.noack)
        if r.after != MAX_ID:  # XREADGROUP-5: history is always served
            consumer = touch_consumer(call, r.key, r.group, opts.consumer, opts.noack)
            served.append((r.key, Array(history(call, s, consumer, r.after, opts.count))))
            if call.server.dialect.history_read_counts:  # STATS-DIALECT-6
                call.changed()  # STATS-7: one per stream replied for
        elif s.length and s.last_live_id() > r.group.last_id:  # XREADGROUP-7
            consumer = touch_consumer(call, r.key, r.group, opts.consumer, opts.noack)
            served.append((r.key, Array(deliver_new(call, r.key, s, r.group, consumer, r.group.last_id,
                                                    opts.count, opts.noack))))
            call.changed()  # STATS-7
    if served:  # XREAD-11
        return streams_reply(call, served)
    if opts.timeout_ms is None or not call.can_block:  # XREAD-11, XREAD-12
        return NullArray()
    after: dict[bytes, StreamID] = {}
    for r in reads:
        after.setdefault(r.key, r.after)  # BLOCK-1: the first occurrence of a key counts
    payload = BlockedRead(opts.count or BLOCKED_DEFAULT_COUNT, opts.group, opts.consumer,
                          opts.noack, after)
    if call.server.dialect.blocked_reexecution:
        return block_for_reexecution(call, opts, reads, payload)
    return call.block(list(opts.keys), opts.timeout_ms, payload, serve_blocked,  # BLOCK-1
                      read_at=opts.timeout_read_at)


def block_for_reexecution(call: Call, opts: ReadOptions, reads: list[StreamRead],
                          payload: BlockedRead) -> HandlerResult:
    """7.2+: block so that a signalled key re-executes the whole command (BLOCK-DIALECT-2).

    ``$`` is replaced by the ID it stood for, so that the re-executed command
    waits for what came after. A command that blocks again on re-execution
    keeps its first deadline.
    """
    argv = call.argv
    ids_at = len(argv) - len(reads)
    for n, r in enumerate(reads):
        if c_string(argv[ids_at + n]) == b"$":
            if argv is call.argv:
                argv = list(argv)
            argv[ids_at + n] = r.after.encode()
    call.argv = argv
    assert opts.timeout_ms is not None
    return call.block(list(opts.keys), opts.timeout_ms, payload, serve_by_reexecution,
                      read_at=opts.timeout_read_at)


def serve_by_reexecution(call: Call, key: bytes) -> Reply | None:
    """7.2+: run the blocked command again now that ``key`` was signalled (BLOCK-DIALECT-2).

    A blocked XREAD runs again only when the key holds a stream; XREADGROUP
    runs again at any signal, so a deleted key or group is its usual NOGROUP
    error and another type WRONGTYPE. A command that finds nothing blocks
    again, at the back of the queues, and None leaves it so.
    """
    blocked = call.client.blocked
    assert blocked is not None
    grouped = blocked.payload.group is not None
    if not grouped and not isinstance(call.lookup(key), Stream):
        return None
    call.server._unblock(call.client)
    result = read_command(call, grouped)
    if result is BLOCKED:
        assert call.client.blocked is not None
        call.client.blocked.deadline = blocked.deadline  # the first deadline still holds
        return None
    return cast(Reply, result)  # read_command replies or blocks, it never pre-renders


@command("xread")
def xread(call: Call) -> HandlerResult:
    return read_command(call, grouped=False)


@command("xreadgroup")
def xreadgroup(call: Call) -> HandlerResult:
    return read_command(call, grouped=True)


def first_after(after: StreamID) -> StreamID:
    """``streamIncrID``: where a read "greater than ``after``" starts.

    Reads only start below the maximum ID: ``>`` never reaches here as an ID,
    and a stream is served only when it holds something greater than ``after``.
    """
    nxt = successor(after)
    assert nxt is not None
    return nxt


def walk_after(call: Call, stream: Stream, after: StreamID) -> Iterator[tuple[StreamID, Fields]]:
    """On a disordered layout (LAYOUT-2): the entries Redis's forward walk from the successor of
    ``after`` emits, in its order; a walk that runs off the tree sets errno (XADD-14)."""
    walk = stream.layout.walk(first_after(after), MAX_ID)
    yield from walk
    if walk.ran_off:
        note_iterator_end(call)


def lookup_entry(call: Call, stream: Stream, entry_id: StreamID) -> Fields | None:
    """``streamEntryExists`` or a one-entry range read: the entry's fields, None when the stream has
    no such live entry (or Redis's walk does not reach it)."""
    if stream.layout.disordered:
        fields, ran_off = stream.layout.lookup(entry_id)  # LAYOUT-2
        if ran_off:
            note_iterator_end(call)  # XADD-14
        return fields
    fields = stream.entries.get(entry_id)
    if fields is None:
        note_entry_lookup(call, stream, entry_id)  # XADD-14: the lookup may run off the tree
    return fields


def range_after(call: Call, stream: Stream, after: StreamID, count: int) -> tuple[Reply, ...]:
    """Live entries greater than ``after``, at most ``count`` of them (0: all)."""
    out: list[Reply] = []
    if stream.layout.disordered:
        for entry_id, fields in walk_after(call, stream, after):
            out.append(entry_reply(entry_id, fields))
            if count and len(out) == count:
                break
        return tuple(out)
    for entry_id in keys_from(stream.entries, first_after(after)):
        out.append(entry_reply(entry_id, stream.entries[entry_id]))
        if count and len(out) == count:
            return tuple(out)
    note_iterator_end(call)  # XADD-14: unless COUNT stopped it, the iterator runs off the tree
    return tuple(out)


def touch_consumer(call: Call, key: bytes, group: Group, name: bytes, noack: bool) -> Consumer:
    """The reading consumer: its seen-time refreshed, or created (XREADGROUP-9).

    With NOACK a creation is propagated at once as XGROUP CREATECONSUMER,
    since no XCLAIM will create it on the replica (XREADGROUP-12).
    """
    consumer = group.consumers.get(name)
    if consumer is not None:
        consumer.seen_time = call.now()
        return consumer
    consumer = pel.create_consumer(group, name, call.now())
    if noack:
        pel.propagate_consumer_creation(call, key, group, name)
    if call.server.dialect.consumer_creation_counts:  # STATS-7; STATS-DIALECT-5; NOTIFY-DIALECT-2
        call.changed()
        notify_keyspace_event(call, "t", "xgroup-createconsumer", key)
    return consumer


def history(call: Call, stream: Stream, consumer: Consumer, after: StreamID, count: int) -> tuple[Reply, ...]:
    """The consumer's own pending entries greater than ``after`` (XREADGROUP-6).

    An entry still in the stream is re-delivered (new delivery time, count + 1);
    one that was deleted shows as ``[id, nil]`` and its NACK is left alone.
    Nothing is propagated.
    """
    out: list[Reply] = []
    for entry_id in consumer.pel.keys_from(first_after(after)):
        if count and len(out) >= count:
            return tuple(out)
        fields = lookup_entry(call, stream, entry_id)  # a one-entry range read
        if fields is None:
            out.append(Array((Bulk(entry_id.encode()), NullArray())))
            continue
        out.append(entry_reply(entry_id, fields))
        nack: Nack = consumer.pel[entry_id]
        nack.delivery_time = call.now()
        pel.count_delivery(nack)
    # XADD-14: the PEL walk tests for a next entry before COUNT, so it ends off the tree
    # unless an entry remained past the COUNT-th.
    note_iterator_end(call)
    return tuple(out)


def deliver_new(call: Call, key: bytes, stream: Stream, group: Group, consumer: Consumer,
                after: StreamID, count: int, noack: bool) -> tuple[Reply, ...]:
    """Deliver the entries greater than ``after`` to ``consumer`` (XREADGROUP-7, -10, -11, -12).

    Each delivered entry moves the group (last-delivered-id, entries-read) and,
    without NOACK, becomes a NACK of this consumer (an existing one is taken
    over, its delivery count reset to 1) propagated as an XCLAIM. With NOACK the
    group's new position is propagated once, as XGROUP SETID ... ENTRIESREAD.
    """
    out: list[Reply] = []
    fixed = call.server.dialect.lag_fixes  # LAG-DIALECT-1
    entries = stream.entries
    walked = list(islice(walk_after(call, stream, after), count or None)) if stream.layout.disordered else None
    for entry_id in keys_from(entries, first_after(after)) if walked is None else [i for i, _ in walked]:
        if walked is None:
            lag.advance_group(stream, group, entry_id, fixed)
            out.append(entry_reply(entry_id, entries[entry_id]))
        else:
            if entry_id > group.last_id:  # LAYOUT-2: a walk can meet IDs below the group's new position
                lag.advance_group(stream, group, entry_id, fixed)
            out.append(entry_reply(entry_id, walked[len(out)][1]))
        if not noack:
            fresh = Nack(call.now(), 1, consumer)  # streamCreateNACK reads the clock
            nack = group.pel.get(entry_id)
            if nack is None:
                nack = fresh
            else:
                # XREADGROUP-10: the fresh NACK is dropped and the taken-over one
                # gets a second reading of the clock.
                nack.delivery_time = call.now()
                nack.delivery_count = 1
            pel.give(group, entry_id, nack, consumer)
            pel.propagate_claim(call, key, group, consumer.name, entry_id.encode(), nack)
        if count and len(out) == count:
            break
    else:
        note_iterator_end(call)  # XADD-14: unless COUNT stopped it, the iterator runs off the tree
    if noack and out:
        pel.propagate_group_id(call, key, group)
    elif out and call.server.dialect.consumer_active_time:
        consumer.active_time = call.now()  # XREADGROUP-DIALECT-1: a delivery that leaves NACKs
        if call.server.dialect.readgroup_propagates_group_id:  # PROP-DIALECT-2
            pel.propagate_group_id(call, key, group)
    return tuple(out)


def serve_blocked(call: Call, key: bytes) -> Reply | None:
    """A key this blocked client waits on was signalled: its reply, or None to stay blocked.

    BLOCK-2 .. BLOCK-7: the reply holds only this key; XREADGROUP waits for
    last-generated-id to pass the group's *current* last-delivered-id; an
    XREAD keeps waiting when the key is deleted or replaced, an XREADGROUP
    gets an error.
    """
    blocked = call.client.blocked
    assert blocked is not None
    b: BlockedRead = blocked.payload
    value = call.lookup(key)
    if not isinstance(value, Stream):
        # BLOCK-5; BLOCK-DIALECT-1: 6.2 serves only a key that holds a stream
        if b.group is None or not call.server.dialect.deleted_key_wakes_readgroup:
            return None
        return Error(UNBLOCKED_KEY_GONE)  # BLOCK-5
    group = None
    if b.group is not None:
        group = value.groups.get(b.group)
        if group is None:  # BLOCK-6
            return Error(UNBLOCKED_GROUP_GONE)
        after = group.last_id  # BLOCK-3
    else:
        after = b.after[key]
    if not value.last_id > after:  # BLOCK-2: last-generated-id, not the last live entry
        return None
    if group is None:
        entries = range_after(call, value, after, b.count)  # BLOCK-4
    else:
        assert b.consumer is not None
        consumer = touch_consumer(call, key, group, b.consumer, b.noack)
        entries = deliver_new(call, key, value, group, consumer, after, b.count, b.noack)
    return streams_reply(call, [(key, Array(entries))])
