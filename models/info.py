"""XINFO STREAM [FULL [COUNT n]], XINFO GROUPS, XINFO CONSUMERS and XINFO HELP (rules XINFO-*).

Every record is a :class:`~xspec.spec.resp.Map`: a flat array of names and
values in RESP2, a map in RESP3. Groups, consumers and PELs come out in radix
tree order, which is the order of the state's sorted maps. XINFO only reads:
it changes nothing and propagates nothing (XINFO-8).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Any

from sortedcontainers import SortedDict

from xspec.models.cerrno import note_iterator_end
from xspec.models.clock import ZERO_DURATION, Duration, Instant
from xspec.models.lag import INVALID_ENTRIES_READ, group_lag
from xspec.models.ordered import LazySortedDict
from xspec.models.pel import reported_count
from xspec.models.reads import entry_reply
from xspec.models.server import Call, CommandError, command
from xspec.models.state import NEVER_ACTIVE, Group, Stream
from xspec.spec import commands as table
from xspec.spec.errors import no_such_group_for_key, subcommand_syntax
from xspec.spec.help import XINFO_HELP
from xspec.spec.ids import MAX_ID, MIN_ID, as_i64, c_string, parse_ll
from xspec.spec.limits import FULL_DEFAULT_COUNT
from xspec.spec.resp import Array, Bulk, Int, Map, NullBulk, Reply, Simple


def _field(name: str, value: Reply) -> tuple[Reply, Reply]:
    return Bulk(name.encode()), value


def _maybe_int(value: int | None) -> Reply:
    return NullBulk() if value is None else Int(value)


def _entries_read(group: Group) -> Reply:
    return NullBulk() if group.entries_read == INVALID_ENTRIES_READ else Int(group.entries_read)


def info_stream(call: Call) -> Stream:
    """The key every subcommand but HELP starts with: ``no such key``, then WRONGTYPE (XINFO-2)."""
    value = call.lookup(call.argv[2])
    if value is None:
        raise CommandError(table.NO_SUCH_KEY)
    if not isinstance(value, Stream):
        raise CommandError(table.WRONGTYPE)
    return value


def subcommand_syntax_error(call: Call) -> CommandError:
    """``addReplySubcommandSyntaxError``: names the subcommand as typed."""
    # DISPATCH-DIALECT-1: 6.2 words it "Unknown"
    return CommandError(subcommand_syntax(call.argv[1], call.argv[0], call.server.dialect.subcommand_table))


@command("xinfo|*")
def xinfo_refused(call: Call) -> Reply:
    """6.2's XINFO with an unknown subcommand or a wrong count: the key is checked first (XINFO-DIALECT-2)."""
    if len(call.argv) >= 3:
        info_stream(call)
    raise subcommand_syntax_error(call)


@command("xinfo|help")
def xinfo_help(call: Call) -> Reply:
    """XINFO-1: the usage line, then the help lines, as simple strings."""
    container = c_string(call.argv[0]).decode("utf-8", "surrogateescape").upper()
    head = f"{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    # HELP-DIALECT-1: the closing line is the dialect's
    return Array(tuple(Simple(line) for line in (head, *XINFO_HELP[:-1], call.server.dialect.help_last_line)))


@command("xinfo|stream")
def xinfo_stream(call: Call) -> Reply:
    stream = info_stream(call)
    options = call.argv[3:]
    if not options:
        if not stream.entries:
            note_iterator_end(call)  # XADD-14: the first/last-entry walks find no live entry
        return Map((*_stream_head(call, stream), *_stream_summary(stream)))  # XINFO-3
    if len(options) not in (1, 3) or c_string(options[0]).lower() != b"full":  # XINFO-4
        raise subcommand_syntax_error(call)
    count = FULL_DEFAULT_COUNT
    if len(options) == 3:
        if c_string(options[1]).lower() != b"count":  # XINFO-4
            raise subcommand_syntax_error(call)
        n = parse_ll(options[2])
        if n is None:  # XINFO-4
            raise CommandError(table.NOT_INTEGER)
        count = FULL_DEFAULT_COUNT if n < 0 else n
    # XADD-14: the entry walk runs off the tree unless COUNT stops it; then the walk over
    # the groups' tree, once allocated, always does.
    layout = stream.layout
    walkable = layout.length - layout.lost if layout.disordered else len(stream.entries)
    if not count or walkable < count or stream.groups_allocated:
        note_iterator_end(call)
    return Map((*_stream_head(call, stream), *_stream_full(call, stream, count)))  # XINFO-5


def _stream_head(call: Call, stream: Stream) -> tuple[tuple[Reply, Reply], ...]:
    """The seven fields both forms of XINFO STREAM start with (XINFO-3)."""
    head = (
        _field("length", Int(stream.length)),
        _field("radix-tree-keys", Int(stream.layout.radix_tree_keys)),
        _field("radix-tree-nodes", Int(stream.layout.radix_tree_nodes)),
        _field("last-generated-id", Bulk(stream.last_id.encode())),
    )
    if not call.server.dialect.stream_counters:  # XINFO-DIALECT-1: 6.2 stops here
        return head
    return (
        *head,
        _field("max-deleted-entry-id", Bulk(stream.max_deleted_id.encode())),
        _field("entries-added", Int(as_i64(stream.entries_added))),  # LAG-6
        _field("recorded-first-entry-id", Bulk(stream.first_id.encode())),
    )


def _stream_summary(stream: Stream) -> tuple[tuple[Reply, Reply], ...]:
    """groups, first-entry, last-entry (XINFO-3): the first live entry of a forward and of a
    backward walk."""
    if stream.layout.disordered:
        first, last = _walked_edges(stream)
    elif stream.entries:
        first = entry_reply(*stream.entries.peekitem(0))
        last = entry_reply(*stream.entries.peekitem(-1))
    else:
        first = last = NullBulk()
    return (_field("groups", Int(len(stream.groups))), _field("first-entry", first),
            _field("last-entry", last))


def _walked_edges(stream: Stream) -> tuple[Reply, Reply]:
    """first-entry and last-entry of a disordered layout: the first live entry of a forward and of
    a backward walk over everything, not necessarily the lowest and the highest ID (LAYOUT-2)."""
    first: Reply = NullBulk()
    last: Reply = NullBulk()
    for entry in stream.layout.walk(MIN_ID, MAX_ID):
        first = entry_reply(*entry)
        break
    for entry in stream.layout.walk(MIN_ID, MAX_ID, rev=True):
        last = entry_reply(*entry)
        break
    return first, last


def _group_counters(call: Call, stream: Stream, group: Group) -> tuple[tuple[Reply, Reply], ...]:
    """entries-read and lag of XINFO GROUPS and STREAM FULL (XINFO-5, XINFO-6; LAG-DIALECT-1)."""
    return (_field("entries-read", _entries_read(group)),
            _field("lag", _maybe_int(group_lag(stream, group, call.server.dialect.lag_fixes))))


def _stream_full(call: Call, stream: Stream, count: int) -> tuple[tuple[Reply, Reply], ...]:
    """entries and groups of XINFO STREAM FULL; ``count`` 0 means everything (XINFO-5)."""
    counters = call.server.dialect.stream_counters  # XINFO-DIALECT-1
    active = call.server.dialect.consumer_active_time
    if stream.layout.disordered:
        entries = _walked_head(stream, count)
    else:
        entries = [entry_reply(i, f) for i, f in _head(stream.entries, count)]
    groups = []
    for group in stream.groups.values():
        pending = [Array((Bulk(i.encode()), Bulk(n.consumer.name), Int(Instant.reply_ms(n.delivery_time)),
                          Int(reported_count(n))))
                   for i, n in _head(group.pel, count)]
        consumers = []
        for consumer in group.consumers.values():
            own = [Array((Bulk(i.encode()), Int(Instant.reply_ms(n.delivery_time)), Int(reported_count(n))))
                   for i, n in _head(consumer.pel, count)]
            consumers.append(Map((
                _field("name", Bulk(consumer.name)),
                _field("seen-time", Int(Instant.reply_ms(consumer.seen_time))),
                *((_field("active-time", Int(Instant.reply_ms(consumer.active_time))),)
                  if active else ()),  # XINFO-DIALECT-3
                _field("pel-count", Int(len(consumer.pel))),
                _field("pending", Array(tuple(own))),
            )))
        groups.append(Map((
            _field("name", Bulk(group.name)),
            _field("last-delivered-id", Bulk(group.last_id.encode())),
            *(_group_counters(call, stream, group) if counters else ()),
            _field("pel-count", Int(len(group.pel))),
            _field("pending", Array(tuple(pending))),
            _field("consumers", Array(tuple(consumers))),
        )))
    return _field("entries", Array(tuple(entries))), _field("groups", Array(tuple(groups)))


def _walked_head(stream: Stream, count: int) -> list[Reply]:
    """The first ``count`` entries (0: all) of a forward walk over a disordered layout (LAYOUT-2)."""
    return [entry_reply(*entry) for entry in islice(stream.layout.walk(MIN_ID, MAX_ID), count or None)]


def _head(items: SortedDict | LazySortedDict, count: int) -> Iterable[tuple[Any, Any]]:
    """The first ``count`` (ID, value) pairs of entries or a PEL, a walk from the first; 0 means all."""
    return islice(items.items(), count or None)


@command("xinfo|groups")
def xinfo_groups(call: Call) -> Reply:
    """XINFO-6: one record per group, in name order."""
    stream = info_stream(call)
    if stream.groups_allocated:
        note_iterator_end(call)  # XADD-14: the walk over the groups' tree ends off it
    counters = call.server.dialect.stream_counters  # XINFO-DIALECT-1
    return Array(tuple(Map((
        _field("name", Bulk(g.name)),
        _field("consumers", Int(len(g.consumers))),
        _field("pending", Int(len(g.pel))),
        _field("last-delivered-id", Bulk(g.last_id.encode())),
        *(_group_counters(call, stream, g) if counters else ()),
    )) for g in stream.groups.values()))


@command("xinfo|consumers")
def xinfo_consumers(call: Call) -> Reply:
    """XINFO-7: name, pending and idle (now - seen-time, at least 0) per consumer."""
    stream = info_stream(call)
    group = stream.groups.get(call.argv[3])
    if group is None:
        raise CommandError(no_such_group_for_key(call.argv[3], call.argv[2]))
    now = call.now()
    note_iterator_end(call)  # XADD-14: the walk over the consumers' tree ends off it
    if call.server.dialect.consumer_active_time:  # XINFO-DIALECT-3: 7.2+ adds inactive
        return Array(tuple(Map((
            _field("name", Bulk(c.name)),
            _field("pending", Int(len(c.pel))),
            _field("idle", Int(Duration.reply_ms(max(now - c.seen_time, ZERO_DURATION)))),
            _field("inactive", Int(-1 if c.active_time == NEVER_ACTIVE else Duration.reply_ms(now - c.active_time))),
        )) for c in group.consumers.values()))
    return Array(tuple(Map((
        _field("name", Bulk(c.name)),
        _field("pending", Int(len(c.pel))),
        _field("idle", Int(Duration.reply_ms(max(now - c.seen_time, ZERO_DURATION)))),
    )) for c in group.consumers.values()))
