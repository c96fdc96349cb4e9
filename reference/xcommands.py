"""The reference server's stream commands: XADD ... XINFO, every option, in every dialect.

Handlers follow spec/rules/streams.md, groups.md, reads.md and info.md (rule
ids cited in comments); checks come in the order 7.0 makes them. They see the
server only through :class:`xspec.reference.api.Context` and return the
semantic replies of :mod:`xspec.spec.resp`. IDs are ints (``ms << 64 | seq``,
see :mod:`xspec.reference.streams`).

Where the served dialect departs from 7.0.15 a handler reads the switch from
``ctx.dialect`` (spec/dialect.py, spec/dialects.md; the ``*-DIALECT-*``
rules), once per command. 6.2 has no subcommand table: its core runs every
XGROUP and XINFO through the container handlers registered as ``xgroup`` and
``xinfo``, which check the subcommand as 6.2 does. 7.2+ serve a blocked reader
by running its command again (BLOCK-DIALECT-2); the retry functions do it.

``ctx.errno`` follows the C errno of 7.0's main thread where these commands
write it (ID parts read by ``strtoull``, radix-tree walks running off their
tree, XADD's failures), because XADD's ``ms-*`` overflow error is worded after
it (XADD-14).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from errno import EDOM, ERANGE
from typing import Any

from xspec.reference.api import BLOCKED, Blocked, Context, Encoded, Handler, ReplyError
from xspec.reference.notify import notify_keyspace_event, notify_new
from xspec.reference.protocol import encode_reply
from xspec.reference.streams import (
    INVALID_ENTRIES_READ,
    MAX_KEY,
    SMALL_DECIMALS,
    U64,
    Consumer,
    Group,
    Nack,
    Node,
    Stream,
    as_i64,
    id_bytes,
)
from xspec.reference.values import handler_table, integer, value_at
from xspec.spec import commands as table
from xspec.spec.errors import (
    BUSYGROUP,
    DOLLAR_IN_XREADGROUP,
    ENTRIESREAD_RANGE,
    ERR_END_INTERVAL,
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
    ERR_START_INTERVAL,
    ERR_STRATEGIES,
    ERR_TOO_LARGE,
    ERR_XADD_ARITY,
    ERR_XTRIM_NO_STRATEGY,
    GROUP_IN_XREAD,
    GT_IN_XREAD,
    KEY_REQUIRED,
    MISSING_GROUP,
    NOACK_IN_XREAD,
    PLUS_AT_ZERO_LAST_ID,
    PLUS_IN_XREADGROUP,
    TIMEOUT_NEGATIVE,
    TIMEOUT_NOT_INTEGER,
    TIMEOUT_OUT_OF_RANGE,
    UNBLOCKED_GROUP_GONE,
    UNBLOCKED_KEY_GONE,
    XAUTOCLAIM_BAD_MIN_IDLE,
    XAUTOCLAIM_COUNT_NOT_POSITIVE,
    c_text,
    no_such_group_for_key,
    no_such_key_or_group,
    no_such_key_or_group_in_xreadgroup,
    subcommand_syntax,
    unbalanced_streams,
    xclaim_unrecognized_option,
)
from xspec.spec.help import XGROUP_HELP, XGROUP_HELP_62, XINFO_HELP
from xspec.spec.ids import (
    I64_MAX,
    c_string,
    parse_id,
    parse_interval,
    parse_ll,
    string2ll,
    strtoull,
)
from xspec.spec.limits import (
    APPROX_LIMIT_CAP,
    APPROX_LIMIT_WHEN_UNSET,
    AUTOCLAIM_ATTEMPTS_FACTOR,
    AUTOCLAIM_DEFAULT_COUNT,
    AUTOCLAIM_MAX_COUNT,
    BLOCKED_DEFAULT_COUNT,
    DEFAULT_APPROX_LIMIT_FACTOR,
    FULL_DEFAULT_COUNT,
    LISTPACK_MAX_SIZE,
)
from xspec.spec.resp import (
    EMPTY_ARRAY,
    NULL_ARRAY,
    NULL_BULK,
    OK,
    Array,
    Bulk,
    Int,
    Map,
    Reply,
    Simple,
)

HANDLERS, _handler = handler_table()


# -- small helpers ------------------------------------------------------------------------


def _stream(ctx: Context, key: bytes) -> Stream | None:
    """The stream at ``key``, None when missing; WRONGTYPE for another type."""
    return value_at(ctx.db, key, Stream)


_int = integer


def _word(arg: bytes) -> bytes:
    """An argument as ``strcasecmp`` compares it with an option name."""
    nul = arg.find(b"\0")  # not ``b"\0" in arg``, which first tries the NUL as an int and fails
    return (arg if nul < 0 else arg[:nul]).lower()


def _container(ctx: Context) -> str:
    """The container's name as typed, in capitals, for its HELP reply."""
    return c_text(ctx.argv[0]).upper()


def _subcommand_syntax(ctx: Context) -> ReplyError:
    """addReplySubcommandSyntaxError: the subcommand as typed, at most 128 bytes."""
    # DISPATCH-DIALECT-1: 6.2 words it "Unknown"
    return ReplyError(subcommand_syntax(ctx.argv[1], ctx.argv[0], ctx.dialect.subcommand_table))


def _help(ctx: Context, head: str | None, lines: tuple[str, ...]) -> Reply:
    """A HELP reply: ``lines`` (after the usage line ``head``, when given) closed by the dialect's last
    line (HELP-DIALECT-1)."""
    shown = (*lines[:-1], ctx.dialect.help_last_line)
    return Array(tuple(map(Simple, shown if head is None else (head, *shown))))


def _id_reply(key: int) -> Bulk:
    return Bulk(id_bytes(key))


def _entry(key: int, node: Node, i: int) -> Array:
    """The entry reply of entry ``i`` of ``node``, whose ID is ``key``, as a reply tree (for replies that
    hold entries among other things; reads write theirs in RESP straight away, :meth:`Node.reply_at`)."""
    return Array((_id_reply(key), Array(tuple(map(Bulk, node.fields_at(i))))))


def _entries(rows: list[bytes]) -> list[bytes]:
    """Entries in RESP (:meth:`Node.replies`) made one RESP array: its header goes before them."""
    rows.insert(0, b"*%d\r\n" % len(rows))
    return rows


# -- IDs and errno (ID-1 .. ID-8, XADD-14) ---------------------------------------------------


def _note_part(ctx: Context, part: bytes) -> bool:
    """One ID part read by ``string2ull``: True when it parses. ``strtoull`` (after the strict
    signed parse refused the part) leaves errno 0, or ERANGE on overflow."""
    v = string2ll(part)
    if v is not None:
        return v >= 0
    r = strtoull(part)
    if r is None:
        ctx.errno = ERANGE
        return False
    ctx.errno = 0
    return bool(part) and r[1] == len(part)


def _note_id_errno(ctx: Context, arg: bytes, auto_seq: bool = False) -> None:
    """The errno parsing ``arg`` as an ID leaves (a non-canonical ID; ID-2 .. ID-7)."""
    if len(arg) > 127:
        return
    buf = c_string(arg)
    if buf == b"-" or buf == b"+":
        return
    ms, dash, seq = buf.partition(b"-")
    if not _note_part(ctx, ms) or not dash:
        return
    if not (auto_seq and seq == b"*"):
        _note_part(ctx, seq)


def _key_of(ms: int, seq: int) -> int:
    return ms << 64 | seq


def _plain_id(arg: bytes, missing_seq: int = 0) -> int | None:
    """The ID key of ``ms`` or ``ms-seq`` written canonically (1 to 18 digits, no leading zero), else None.

    Such an ID means the same to every parser and leaves errno alone (the
    strict signed parse takes each part), so it needs none of ID-1 .. ID-8.
    """
    ms, dash, seq = arg.partition(b"-")  # ID-5: split at the first "-"
    if not ms.isdigit() or len(ms) > 18 or (ms[0] == 48 and len(ms) > 1):
        return None
    if not dash:
        return int(ms) << 64 | missing_seq
    if not seq.isdigit() or len(seq) > 18 or (seq[0] == 48 and len(seq) > 1):
        return None
    return int(ms) << 64 | int(seq)


def _strict_or_none(ctx: Context, arg: bytes) -> int | None:
    """A strict ID (ID-3), None when invalid."""
    key = _plain_id(arg)
    if key is not None:
        return key
    _note_id_errno(ctx, arg)
    parsed = parse_id(arg, strict=True)
    return None if parsed is None else _key_of(*parsed.id)


def _strict(ctx: Context, arg: bytes) -> int:
    key = _strict_or_none(ctx, arg)
    if key is None:
        raise ReplyError(table.INVALID_ID)
    return key


def _interval(ctx: Context, arg: bytes, missing_seq: int) -> tuple[int, bool]:
    """An interval bound (ID-8): (key, exclusive)."""
    key = _plain_id(arg, missing_seq)
    if key is not None:
        return key, False
    if arg == b"-":  # ID-4: no number is read
        return 0, False
    if arg == b"+":
        return MAX_KEY, False
    _note_id_errno(ctx, arg[1:] if len(arg) > 1 and arg[0] == 40 else arg)
    parsed = parse_interval(arg, missing_seq)
    if parsed is None:
        raise ReplyError(table.INVALID_ID)
    return _key_of(*parsed.id), parsed.exclusive


def _range_start(ctx: Context, arg: bytes) -> int:
    key, exclusive = _interval(ctx, arg, 0)
    if exclusive:
        if key == MAX_KEY:
            raise ReplyError(ERR_START_INTERVAL)
        key += 1
    return key


def _range_end(ctx: Context, arg: bytes) -> int:
    key, exclusive = _interval(ctx, arg, U64)
    if exclusive:
        if key == 0:
            raise ReplyError(ERR_END_INTERVAL)
        key -= 1
    return key


# -- XADD / XTRIM options (XTRIM-1 .. XTRIM-7) --------------------------------------------------


class _Trim:
    """What ``streamParseAddOrTrimArgsOrReply`` found."""

    __slots__ = ("maxlen", "minid", "approx", "limit", "nomkstream", "id", "seq_given", "id_at")

    def __init__(self) -> None:
        self.maxlen: int | None = None
        self.minid: int | None = None
        self.approx = False
        self.limit = 0
        self.nomkstream = False
        self.id: int | None = None  # XADD's explicit ID (its ms half for ``ms-*``); None for ``*``
        self.seq_given = True
        self.id_at = 0  # the argv index of XADD's ID


def _parse_trim(ctx: Context, xadd: bool) -> _Trim:
    argv = ctx.argv
    argc = len(argv)
    t = _Trim()
    strategy = False
    limit_given = False
    i = 2
    while i < argc:
        more = argc - 1 - i
        opt = _word(argv[i])
        if xadd and opt == b"*":  # XADD-2
            break
        if (opt == b"maxlen" or opt == b"minid") and more:  # XTRIM-2
            if strategy:
                raise ReplyError(ERR_STRATEGIES)
            strategy = True
            t.approx = False
            marker = c_string(argv[i + 1])
            if more >= 2 and (marker == b"~" or marker == b"="):
                t.approx = marker == b"~"
                i += 1
            i += 1
            if opt == b"maxlen":
                t.maxlen = _int(argv[i])
                if t.maxlen < 0:
                    raise ReplyError(ERR_MAXLEN_NEGATIVE)
            else:
                t.minid = _strict(ctx, argv[i])
        elif opt == b"limit" and more:  # XTRIM-3
            i += 1
            t.limit = _int(argv[i])
            if t.limit < 0:
                raise ReplyError(ERR_LIMIT_NEGATIVE)
            limit_given = True
        elif xadd and opt == b"nomkstream":  # XADD-3
            t.nomkstream = True
        elif xadd:  # XADD-4: the ID
            arg = argv[i]
            t.id = _plain_id(arg)
            if t.id is None:
                auto_seq = ctx.dialect.xadd_auto_sequence  # XADD-DIALECT-1: 6.2 has no ms-*
                _note_id_errno(ctx, arg, auto_seq=auto_seq)
                parsed = parse_id(arg, strict=True, allow_auto_seq=auto_seq)
                if parsed is None:
                    raise ReplyError(table.INVALID_ID)
                t.id = _key_of(*parsed.id)
                t.seq_given = parsed.seq_given
            break
        else:  # XTRIM-4
            raise ReplyError(table.SYNTAX)
        i += 1
    t.id_at = i
    if t.limit and not strategy:  # XTRIM-5
        raise ReplyError(ERR_LIMIT_NO_STRATEGY)
    if not xadd and not strategy:
        raise ReplyError(ERR_XTRIM_NO_STRATEGY)
    if limit_given:
        if not t.approx:  # XTRIM-6
            raise ReplyError(ERR_LIMIT_NOT_APPROX)
    elif t.approx:  # XTRIM-7: the product is a C long long, so it wraps
        limit = as_i64(DEFAULT_APPROX_LIMIT_FACTOR * ctx.config_int("stream-node-max-entries"))
        if ctx.dialect.approx_limit_bounded:
            t.limit = min(limit if limit > 0 else APPROX_LIMIT_WHEN_UNSET, APPROX_LIMIT_CAP)
        else:  # XTRIM-DIALECT-1: as it is, 0 unlimited, negative trimming nothing
            t.limit = limit
    else:
        t.limit = 0
    return t


def _trim(ctx: Context, stream: Stream, t: _Trim) -> int:
    removed = stream.trim(t.maxlen, t.minid, t.approx, t.limit)  # XTRIM-9, XTRIM-10
    if not stream.nodes:
        ctx.errno = 0  # XTRIM-10: the node walk ran off the tree
    return removed


# -- XADD, XTRIM, XLEN, XRANGE, XREVRANGE, XDEL, XSETID ---------------------------------------


# The millisecond part XADD printed last and its ``ms-`` text, as one tuple: replaced whole, so
# servers running in several threads of one process never see one's millisecond with another's text.
_LAST_MS: list[tuple[int, bytes]] = [(-1, b"")]


@_handler("xadd")
def xadd(ctx: Context) -> Reply:
    argv = ctx.argv
    key = argv[1]
    if argv[2] == b"*":  # XADD-2, the common case: no options
        t = None
        new_given = None
        seq_given = True
        field_at = 3
    else:
        t = _parse_trim(ctx, xadd=True)
        new_given = t.id
        seq_given = t.seq_given
        field_at = t.id_at + 1
    nfields = len(argv) - field_at
    if nfields < 2 or nfields & 1:  # XADD-5
        if not ctx.dialect.subcommand_table:  # XADD-DIALECT-2: 6.2's own wording
            raise ReplyError(ERR_XADD_ARITY)
        raise ReplyError("ERR wrong number of arguments for 'xadd' command")
    if new_given == 0 and seq_given:  # XADD-6
        raise ReplyError(ERR_ID_ZERO)
    stream = ctx.db.get(key)
    if type(stream) is not Stream:
        if stream is not None:  # XADD-7
            raise ReplyError(table.WRONGTYPE)
        if t is not None and t.nomkstream:  # XADD-7
            return NULL_BULK
        stream = ctx.db[key] = Stream()  # XADD-8
        notify_new(ctx, key)  # NOTIFY-3
    last = stream.last_id
    if last == MAX_KEY:  # XADD-9
        raise ReplyError(ERR_EXHAUSTED)
    # XADD-10: the new ID by XADD-11, XADD-12 or XADD-13, then checked by XADD-15 and XADD-16
    if new_given is None:  # XADD-11
        now = ctx.now_ms()
        new = now << 64 if now > last >> 64 else last + 1
    elif seq_given:  # XADD-12
        new = new_given
    elif new_given >> 64 == last >> 64:  # XADD-13
        if last & U64 == U64:  # XADD-14; XADD-DIALECT-3: 7.2+ words it as a too-small ID
            too_small = ctx.errno == EDOM or ctx.dialect.xadd_auto_sequence_overflow_is_too_small
            raise ReplyError(ERR_ID_NOT_ABOVE_TOP if too_small else ERR_TOO_LARGE)
        new = last + 1
    else:
        new = new_given
    if new <= last:  # XADD-15
        ctx.errno = EDOM
        raise ReplyError(ERR_ID_NOT_ABOVE_TOP)
    fields = argv[field_at:]
    payload = len(fields[0]) + len(fields[1]) if nfields == 2 else sum(map(len, fields))
    if payload > LISTPACK_MAX_SIZE:  # XADD-16
        ctx.errno = ERANGE
        raise ReplyError(ERR_TOO_LARGE)
    if not stream.nodes:
        ctx.errno = 0  # XADD-14: the seek for the tail node finds an empty tree
    stream.append(new, fields, payload, ctx.config_int("stream-node-max-entries"),  # XADD-17
                  ctx.config_int("stream-node-max-bytes"))
    ctx.modified(key)
    notify_keyspace_event(ctx, "t", "xadd", key)  # NOTIFY-4
    ctx.changed()  # STATS-6: one change, whatever the trimming removes
    if t is not None and (t.maxlen is not None or t.minid is not None) and _trim(ctx, stream, t):  # XADD-18
        notify_keyspace_event(ctx, "t", "xtrim", key)  # NOTIFY-4
    ctx.ready(key)  # XADD-20
    # The ID's text (id_bytes), the millisecond part kept from the XADD before: most IDs share it.
    ms = new >> 64
    seq = new & U64
    shown_ms, text = _LAST_MS[0]
    if ms != shown_ms:
        text = b"%d-" % ms
        _LAST_MS[0] = (ms, text)
    return Bulk(text + SMALL_DECIMALS[seq] if seq < 1024 else b"%b%d" % (text, seq))


def xadd_obeyed(db: Any, argv: list[bytes], max_entries: int, max_bytes: int) -> bool:
    """``XADD key ms-seq field value ...`` as a primary propagates it, run for the master client the short
    way: True when the entry was appended (XADD-12, XADD-17), False (nothing done) when the command is any
    other form or would take any other branch of :func:`xadd` (an error, a new key, an empty stream's errno,
    options), which the caller then runs the general way.

    The caller does what :func:`xadd` leaves to the core for this client (the dirty counter, the command's
    statistics) and takes this way only while nothing else would see the change: no keyspace events, no
    watched or tracked keys, no blocked clients (XADD-20). The master client expires no key (EXPIRE-ACTIVE-4).
    """
    # _plain_id, inline (this runs for every entry a replica applies), and only with both parts (XADD-13)
    ms, dash, seq = argv[2].partition(b"-")
    if (not dash or not ms.isdigit() or not seq.isdigit() or len(ms) > 18 or len(seq) > 18
            or (ms[0] == 48 and len(ms) > 1) or (seq[0] == 48 and len(seq) > 1) or len(argv) & 1 == 0
            or len(argv) < 5):  # XADD-5
        return False
    new = int(ms) << 64 | int(seq)
    stream = db.get(argv[1])
    if type(stream) is not Stream or not stream.nodes or new <= stream.last_id:  # XADD-7/8, XADD-14/15
        return False
    fields = argv[3:]
    payload = len(argv[3]) + len(argv[4]) if len(argv) == 5 else sum(map(len, fields))
    if payload > LISTPACK_MAX_SIZE:  # XADD-16
        return False
    stream.append(new, fields, payload, max_entries, max_bytes)  # XADD-17
    return True


@_handler("xtrim")
def xtrim(ctx: Context) -> Reply:
    t = _parse_trim(ctx, xadd=False)  # XTRIM-1
    stream = _stream(ctx, ctx.argv[1])  # XTRIM-8
    if stream is None:
        return Int(0)
    removed = _trim(ctx, stream, t)
    if removed:  # XTRIM-12
        ctx.modified(ctx.argv[1])
        notify_keyspace_event(ctx, "t", "xtrim", ctx.argv[1])  # NOTIFY-4
        ctx.changed(removed)  # STATS-6
    return Int(removed)


@_handler("xlen")
def xlen(ctx: Context) -> Reply:
    stream = _stream(ctx, ctx.argv[1])  # XLEN-1
    return Int(0 if stream is None else stream.length)


def _xrange(ctx: Context, rev: bool) -> Reply | Encoded:
    """XRANGE and XREVRANGE: read only, nothing changes (XRANGE-6)."""
    argv = ctx.argv
    low = _range_start(ctx, argv[3] if rev else argv[2])  # XRANGE-1
    high = _range_end(ctx, argv[2] if rev else argv[3])  # XRANGE-2
    count = -1
    j = 4
    while j < len(argv):  # XRANGE-3
        if j + 1 < len(argv) and _word(argv[j]) == b"count":
            count = max(_int(argv[j + 1]), 0)
            j += 2
        else:
            raise ReplyError(table.SYNTAX)
    stream = _stream(ctx, argv[1])  # XRANGE-4
    if stream is None:
        return EMPTY_ARRAY
    if count == 0:  # XRANGE-5
        return NULL_ARRAY
    out: list[bytes] = []
    if rev:
        for node, i in stream.backward(high):
            if (node.ms[i] << 64 | node.seq[i]) < low:
                break
            out.append(node.reply_at(i))
            if len(out) == count:
                break
        else:
            ctx.errno = 0  # XRANGE-4: the walk ran off the tree
    else:
        for node, start, end in stream.forward_runs(low):
            stop = end
            if node.key(end - 1) > high:  # the range ends in this run (a run of one in an unordered layout)
                stop = start if stream.unordered else max(node.seek(high + 1), start)
            if count > 0 and stop - start > count - len(out):
                stop = start + count - len(out)
            out += node.replies(start, stop)
            if stop < end or len(out) == count:
                break
        else:
            ctx.errno = 0
    return Encoded(_entries(out))


@_handler("xrange")
def xrange(ctx: Context) -> Reply | Encoded:
    return _xrange(ctx, rev=False)


@_handler("xrevrange")
def xrevrange(ctx: Context) -> Reply | Encoded:
    return _xrange(ctx, rev=True)


@_handler("xdel")
def xdel(ctx: Context) -> Reply:
    key = ctx.argv[1]
    stream = _stream(ctx, key)  # XDEL-1
    if stream is None:
        return Int(0)
    ids = [_strict(ctx, arg) for arg in ctx.argv[2:]]  # XDEL-2
    deleted = 0
    first_deleted = False
    for k in ids:  # XDEL-3
        if stream.delete(k):
            deleted += 1
            first_deleted = first_deleted or k == stream.first_id
        elif stream.lookup_runs_off(k):
            ctx.errno = 0  # the lookup ran off the tree
    if deleted:  # XDEL-4
        if not stream.length or first_deleted:
            stream.first_id = stream.recorded_first()  # LAYOUT-3
        ctx.modified(key)
        notify_keyspace_event(ctx, "t", "xdel", key)  # NOTIFY-4
        ctx.changed(deleted)  # STATS-6
    return Int(deleted)


def _xsetid_options(ctx: Context, top: int) -> tuple[int, int]:
    """XSETID-2: ENTRIESADDED (-1 when not given) and MAXDELETEDID (0 when not given), in any order;
    a MAXDELETEDID above the new top ID ``top`` is refused as soon as it is read."""
    argv = ctx.argv
    added, max_deleted = -1, 0
    for i in range(3, len(argv), 2):
        word = _word(argv[i])
        if i + 1 == len(argv) or word not in (b"entriesadded", b"maxdeletedid"):
            raise ReplyError(table.SYNTAX)
        if word == b"entriesadded":
            added = _int(argv[i + 1])
            if added < 0:
                raise ReplyError(ERR_ENTRIES_ADDED_NEGATIVE)
        else:
            max_deleted = _strict(ctx, argv[i + 1])
            if max_deleted > top:
                raise ReplyError(ERR_SETID_BELOW_MAXDELETED)
    return added, max_deleted


@_handler("xsetid")
def xsetid(ctx: Context) -> Reply:
    key = ctx.argv[1]
    if not ctx.dialect.stream_counters and _stream(ctx, key) is None:
        raise ReplyError(table.NO_SUCH_KEY)  # XSETID-DIALECT-1: 6.2 checks the key before the ID
    top = _strict(ctx, ctx.argv[2])  # XSETID-1
    added, max_deleted = _xsetid_options(ctx, top)  # XSETID-2
    if key not in ctx.db:  # XSETID-3
        raise ReplyError(table.NO_SUCH_KEY)
    stream = _stream(ctx, key)
    assert stream is not None
    if ctx.dialect.xsetid_checks_max_deleted and top < stream.max_deleted:  # XSETID-DIALECT-2
        raise ReplyError(ERR_SETID_BELOW_CURRENT_MAXDELETED)
    if stream.length and top < stream.top():  # XSETID-4, LAYOUT-3
        raise ReplyError(ERR_SETID_BELOW_TOP)
    if stream.length and added != -1 and added < stream.length:  # XSETID-4
        raise ReplyError(ERR_SETID_ENTRIES_ADDED)
    stream.last_id = top  # XSETID-5: not signalled as modified
    stream.entries_added = stream.entries_added if added == -1 else added
    stream.max_deleted = max_deleted or stream.max_deleted
    ctx.changed()  # STATS-6
    notify_keyspace_event(ctx, "t", "xsetid", ctx.argv[1])  # NOTIFY-4
    return OK


# -- XGROUP ------------------------------------------------------------------------------


def _xgroup_target(ctx: Context, sub: bytes) -> tuple[Stream | None, Group | None, int]:
    """XGROUP-2 .. XGROUP-5: options from argv[5], the key, the group. (stream, group, entries-read)."""
    argv = ctx.argv
    mkstream = False
    entries_read = -1
    i = 5
    while i < len(argv):  # XGROUP-2
        opt = _word(argv[i])
        if sub == b"create" and opt == b"mkstream":
            mkstream = True
            i += 1
        elif (sub == b"create" or sub == b"setid") and opt == b"entriesread" and i + 1 < len(argv):
            entries_read = _int(argv[i + 1])
            if entries_read < 0 and entries_read != -1:
                raise ReplyError(ENTRIESREAD_RANGE)
            i += 2
        else:
            raise _subcommand_syntax(ctx)
    stream = _stream(ctx, argv[2])  # XGROUP-3
    group = None
    if not mkstream:
        if stream is None:  # XGROUP-4
            raise ReplyError(KEY_REQUIRED)
        group = stream.groups.get(argv[3])
        if group is None and sub != b"create" and sub != b"destroy":  # XGROUP-5
            raise ReplyError(no_such_group_for_key(argv[3], argv[2]))
    return stream, group, entries_read


def _group_position(ctx: Context, arg: bytes, stream: Stream | None, create: bool) -> int:
    """The last-delivered ID an XGROUP CREATE or SETID argument names: ``$`` is the stream's last ID
    (0 for a stream MKSTREAM is about to make), else an ID: strict for CREATE (XGROUP-7), with the
    missing sequence read as 0 for SETID (XGROUP-11)."""
    if c_string(arg) == b"$":
        return 0 if stream is None else stream.last_id
    if create:
        return _strict(ctx, arg)
    key = _plain_id(arg)
    if key is None:
        _note_id_errno(ctx, arg)
        parsed = parse_id(arg, strict=False)
        if parsed is None:
            raise ReplyError(table.INVALID_ID)
        key = _key_of(*parsed.id)
    return key


@_handler("xgroup|create")
def xgroup_create(ctx: Context) -> Reply:
    stream, _, entries_read = _xgroup_target(ctx, b"create")
    key, name = ctx.argv[2], ctx.argv[3]
    if len(ctx.argv) > 8:  # XGROUP-6 (the table's arity gives at least 5)
        raise _subcommand_syntax(ctx)
    position = _group_position(ctx, ctx.argv[4], stream, create=True)  # XGROUP-7
    if stream is None:  # XGROUP-8: MKSTREAM's new empty stream wakes and touches the key
        ctx.db[key] = stream = Stream()
        ctx.ready(key)
        notify_new(ctx, key)  # NOTIFY-3
        ctx.modified(key)
    elif name in stream.groups:  # XGROUP-9
        raise ReplyError(BUSYGROUP)
    stream.groups[name] = Group(name, position, entries_read)  # XGROUP-10
    stream.groups_allocated = True
    ctx.changed()  # STATS-6
    notify_keyspace_event(ctx, "t", "xgroup-create", key)  # NOTIFY-4
    return OK


@_handler("xgroup|setid")
def xgroup_setid(ctx: Context) -> Reply:
    stream, group, entries_read = _xgroup_target(ctx, b"setid")
    if len(ctx.argv) not in (5, 7):  # XGROUP-6
        raise _subcommand_syntax(ctx)
    assert stream is not None and group is not None
    group.last_id = _group_position(ctx, ctx.argv[4], stream, create=False)  # XGROUP-11
    group.entries_read = entries_read  # LAG-5: ENTRIESREAD, or -1
    ctx.changed()  # STATS-6
    notify_keyspace_event(ctx, "t", "xgroup-setid", ctx.argv[2])  # NOTIFY-4
    return OK


@_handler("xgroup|destroy")
def xgroup_destroy(ctx: Context) -> Reply:
    stream, group, _ = _xgroup_target(ctx, b"destroy")
    if group is None:  # XGROUP-12
        return Int(0)
    assert stream is not None
    del stream.groups[group.name]
    ctx.ready(ctx.argv[2])  # XGROUP-12: blocked clients re-check the key
    ctx.changed()  # STATS-6
    notify_keyspace_event(ctx, "t", "xgroup-destroy", ctx.argv[2])  # NOTIFY-4
    return Int(1)


@_handler("xgroup|createconsumer")
def xgroup_createconsumer(ctx: Context) -> Reply:
    _, group, _ = _xgroup_target(ctx, b"createconsumer")
    assert group is not None
    name = ctx.argv[4]
    if name in group.consumers:  # XGROUP-13
        return Int(0)
    group.add_consumer(name, ctx.now_ms())
    ctx.changed()  # STATS-6
    notify_keyspace_event(ctx, "t", "xgroup-createconsumer", ctx.argv[2])  # NOTIFY-4
    return Int(1)


@_handler("xgroup|delconsumer")
def xgroup_delconsumer(ctx: Context) -> Reply:
    _, group, _ = _xgroup_target(ctx, b"delconsumer")
    assert group is not None
    consumer = group.consumers.pop(ctx.argv[4], None)
    if consumer is None:  # XGROUP-14
        if ctx.dialect.delconsumer_always_counts:  # STATS-DIALECT-4; NOTIFY-DIALECT-2
            ctx.changed()
            notify_keyspace_event(ctx, "t", "xgroup-delconsumer", ctx.argv[2])
        return Int(0)
    for k in consumer.pel:
        group.pel.pop(k)
    ctx.errno = 0  # the walk over the consumer's PEL ends off the tree
    ctx.changed()  # STATS-6
    notify_keyspace_event(ctx, "t", "xgroup-delconsumer", ctx.argv[2])  # NOTIFY-4
    return Int(len(consumer.pel))


@_handler("xgroup|help")
def xgroup_help(ctx: Context) -> Reply:
    # XGROUP-15; XGROUP-DIALECT-2: 6.2's lines
    return _help(ctx, None, XGROUP_HELP if ctx.dialect.stream_counters else XGROUP_HELP_62)


# 6.2's XGROUP subcommands and the argument counts it takes for each (DISPATCH-DIALECT-1)
_XGROUP_62: dict[bytes, tuple[tuple[int, ...], Handler]] = {
    b"create": ((5, 6), xgroup_create),
    b"setid": ((5,), xgroup_setid),
    b"destroy": ((4,), xgroup_destroy),
    b"createconsumer": ((5,), xgroup_createconsumer),
    b"delconsumer": ((5,), xgroup_delconsumer),
    b"help": ((2,), xgroup_help),
}


@_handler("xgroup")
def xgroup_container(ctx: Context) -> Reply | Encoded | Blocked:
    """XGROUP where the dialect has no subcommand table (6.2): the command checks its subcommand itself,
    after its key checks (DISPATCH-DIALECT-1, XGROUP-DIALECT-1)."""
    argv = ctx.argv
    sub = _word(argv[1])
    found = _XGROUP_62.get(sub)
    if found is not None and len(argv) in found[0]:
        if len(argv) == 6 and _word(argv[5]) != b"mkstream":  # CREATE's only option: before the key
            raise _subcommand_syntax(ctx)
        return found[1](ctx)
    if len(argv) >= 4:  # XGROUP-DIALECT-1: the key checks of a valid subcommand come first
        stream = _stream(ctx, argv[2])
        if stream is None:
            raise ReplyError(KEY_REQUIRED)
        if argv[3] not in stream.groups and sub in (b"setid", b"createconsumer", b"delconsumer"):
            raise ReplyError(no_such_group_for_key(argv[3], argv[2]))
    raise _subcommand_syntax(ctx)


# -- XACK, XPENDING -------------------------------------------------------------------------


@_handler("xack")
def xack(ctx: Context) -> Reply:
    argv = ctx.argv
    stream = _stream(ctx, argv[1])  # XACK-1
    group = None if stream is None else stream.groups.get(argv[2])
    if group is None:
        return Int(0)
    ids = [_strict(ctx, arg) if (k := _plain_id(arg)) is None else k for arg in argv[3:]]  # XACK-2
    acked = group.acknowledge(ids)  # XACK-3, XACK-4
    ctx.changed(acked)  # STATS-6
    return Int(acked)


def _stream_and_group(ctx: Context) -> tuple[Stream, Group]:
    """WRONGTYPE, then NOGROUP for a missing key or group (XPENDING-6, XCLAIM-1, XAUTOCLAIM-4)."""
    argv = ctx.argv
    stream = _stream(ctx, argv[1])
    group = None if stream is None else stream.groups.get(argv[2])
    if group is None:
        raise ReplyError(no_such_key_or_group(argv[1], argv[2]))
    assert stream is not None
    return stream, group


@_handler("xpending")
def xpending(ctx: Context) -> Reply:
    argv = ctx.argv
    argc = len(argv)
    if argc != 3 and not 6 <= argc <= 9:  # XPENDING-1
        raise ReplyError(table.SYNTAX)
    if argc == 3:
        _, group = _stream_and_group(ctx)
        return _pending_summary(ctx, group)
    min_idle = 0
    at = 3
    if _word(argv[3]) == b"idle":  # XPENDING-2
        min_idle = _int(argv[4])
        if argc < 8:
            raise ReplyError(table.SYNTAX)
        at = 5
    count = max(_int(argv[at + 2]), 0)  # XPENDING-3
    start = _range_start(ctx, argv[at])  # XPENDING-4
    end = _range_end(ctx, argv[at + 1])
    name = argv[at + 3] if at + 3 < argc else None  # XPENDING-5
    _, group = _stream_and_group(ctx)  # XPENDING-6
    if name is None:
        pel = group.pel
    else:
        consumer = group.consumers.get(name)
        if consumer is None:  # XPENDING-9
            return EMPTY_ARRAY
        pel = consumer.pel
    now = ctx.now_ms()  # XPENDING-10
    if not count:
        return EMPTY_ARRAY
    rows: list[Reply] = []
    for k in pel.keys_from(start):
        if k > end:
            break
        nack: Nack = pel[k]
        idle = now - nack.time
        if min_idle and idle < min_idle:
            continue
        rows.append(Array((_id_reply(k), Bulk(nack.owner.name),  # type: ignore[union-attr]
                           Int(idle if idle > 0 else 0), Int(nack.shown_count()))))
        count -= 1
        if not count:
            break
    else:
        ctx.errno = 0  # neither COUNT nor the end stopped the walk
    return Array(tuple(rows))


def _pending_summary(ctx: Context, group: Group) -> Reply:
    pel = group.pel
    if not pel:  # XPENDING-8
        return Array((Int(0), NULL_BULK, NULL_BULK, NULL_ARRAY))
    ctx.errno = 0  # the walk over the consumers ends off the tree
    owners = tuple(Array((Bulk(c.name), Bulk(b"%d" % len(c.pel))))  # XPENDING-7
                   for c in group.consumers_in_order() if c.pel)
    return Array((Int(len(pel)), _id_reply(pel.first()), _id_reply(pel.last()), Array(owners)))


# -- XCLAIM, XAUTOCLAIM -----------------------------------------------------------------------


class _ClaimOptions:
    """XCLAIM's options after its IDs (XCLAIM-5), read against the command's clock reading ``now``."""

    __slots__ = ("force", "justid", "delivery", "retry", "last_id")

    def __init__(self, ctx: Context, first: int, now: int) -> None:
        self.force = self.justid = False
        self.delivery: int | None = None  # IDLE and TIME give it; XCLAIM-7 bounds it
        self.retry = -1  # RETRYCOUNT; -1: the delivery count moves as usual
        self.last_id = 0
        argv = ctx.argv
        j = first
        while j < len(argv):
            word = _word(argv[j])
            if word == b"force":
                self.force = True
            elif word == b"justid":
                self.justid = True
            elif j + 1 == len(argv) or word not in (b"idle", b"time", b"retrycount", b"lastid"):
                raise ReplyError(xclaim_unrecognized_option(argv[j]))
            else:
                j += 1
                value = argv[j]
                if word == b"idle":
                    self.delivery = now - _int(value, "ERR Invalid IDLE option argument for XCLAIM")
                elif word == b"time":
                    self.delivery = _int(value, "ERR Invalid TIME option argument for XCLAIM")
                elif word == b"retrycount":
                    self.retry = _int(value, "ERR Invalid RETRYCOUNT option argument for XCLAIM")
                else:
                    self.last_id = _strict(ctx, value)
            j += 1


def _claimant(ctx: Context, group: Group, name: bytes) -> Consumer:
    """XCLAIM-13: found (seen-time refreshed) or created, with one clock reading."""
    now = ctx.now_ms()
    consumer = group.consumers.get(name)
    if consumer is None:
        if ctx.dialect.consumer_creation_counts:  # STATS-8; STATS-DIALECT-5; NOTIFY-DIALECT-2
            ctx.changed()
            notify_keyspace_event(ctx, "t", "xgroup-createconsumer", ctx.argv[1])
        return group.add_consumer(name, now)
    consumer.seen = now
    return consumer


class _Claim:
    """Pending entries handed to one consumer by XCLAIM or XAUTOCLAIM, and the replies for them.

    The consumer is looked up (or created) when the first entry is taken
    (XCLAIM-13, XAUTOCLAIM-9); 7.2+ does it before anything is taken, and
    stamps its active-time with each entry (XCLAIM-DIALECT-2,
    XAUTOCLAIM-DIALECT-2).
    """

    __slots__ = ("ctx", "stream", "group", "name", "owner", "now", "stamps_active", "justid", "replies", "moved")

    def __init__(self, ctx: Context, stream: Stream, group: Group, name: bytes, now: int, justid: bool) -> None:
        self.ctx = ctx
        self.stream = stream
        self.group = group
        self.name = name
        self.now = now
        self.justid = justid
        self.stamps_active = ctx.dialect.consumer_active_time
        self.owner = _claimant(ctx, group, name) if self.stamps_active else None
        self.replies: list[Reply] = []
        self.moved = 0  # pending records taken or dropped (STATS-8)

    def dropped(self, key: int) -> None:
        """The entry ``key`` is gone from the stream: its pending record goes too (XCLAIM-9, XAUTOCLAIM-7)."""
        self.group.drop(key)
        self.moved += 1
        self.ctx.changed()  # STATS-8

    def take(self, key: int, nack: Nack, place: tuple[int, int] | None, delivered_at: int, retries: int = -1) -> None:
        """Give ``nack`` (entry ``key``, at ``place`` in the stream, None: deleted) to the consumer."""
        owner = self.owner
        if owner is None:
            owner = self.owner = _claimant(self.ctx, self.group, self.name)
        if self.stamps_active:
            owner.active = self.now
        nack.time = delivered_at  # XCLAIM-14
        if retries >= 0:
            nack.count = retries
        elif not self.justid:
            nack.count = (nack.count + 1) & U64
        self.group.give(key, nack, owner)
        self.moved += 1
        self.ctx.changed()  # STATS-8
        if self.justid:  # XCLAIM-15
            self.replies.append(_id_reply(key))
        elif place is None:  # XCLAIM-DIALECT-1: 6.2 claims a deleted entry and replies nil for it
            self.replies.append(NULL_BULK)
        else:
            self.replies.append(_entry(key, self.stream.nodes[place[0]], place[1]))


def _place(ctx: Context, stream: Stream, key: int) -> tuple[int, int] | None:
    """Where entry ``key`` is in the stream (node, index), None if it is not there."""
    place = stream.locate(key)
    if place is None and stream.lookup_runs_off(key):
        ctx.errno = 0  # the lookup ran off the tree
    return place


def _xclaim_targets(ctx: Context, claim: _Claim, keys: list[int], force: bool,
                    min_idle: int, now: int) -> Iterator[tuple[int, Nack, tuple[int, int] | None]]:
    """The entries XCLAIM takes, in argument order (XCLAIM-8), each with its pending record and place.

    Lazy: each is taken before the next is looked at (a repeated ID sees its first claim).
    """
    stream, group = claim.stream, claim.group
    for key in keys:
        nack = group.pel.get(key)
        place = _place(ctx, stream, key)
        if place is None:
            if nack is None:  # XCLAIM-9; XCLAIM-DIALECT-1: FORCE creates nothing either
                continue
            if ctx.dialect.claims_drop_deleted:  # XCLAIM-9: its pending record goes
                claim.dropped(key)
                continue
        elif nack is None:
            if force:  # XCLAIM-10: a new record, delivered now, count 1
                yield key, Nack(ctx.now_ms(), 1, None), place
            continue  # XCLAIM-11
        if min_idle and now - nack.time < min_idle:  # XCLAIM-12
            continue
        yield key, nack, place


@_handler("xclaim")
def xclaim(ctx: Context) -> Reply:
    argv = ctx.argv
    stream, group = _stream_and_group(ctx)  # XCLAIM-1
    min_idle = max(_int(argv[4], "ERR Invalid min-idle-time argument for XCLAIM"), 0)  # XCLAIM-2
    keys: list[int] = []
    for arg in argv[5:]:  # XCLAIM-3: the IDs end at the first argument that is not one
        key = _strict_or_none(ctx, arg)
        if key is None:
            break
        keys.append(key)
    now = ctx.now_ms()  # XCLAIM-4
    options = _ClaimOptions(ctx, 5 + len(keys), now)  # XCLAIM-5
    advanced = options.last_id > group.last_id
    group.last_id = max(group.last_id, options.last_id)  # XCLAIM-6; LAG-5: entries-read stays
    delivered_at = options.delivery
    if delivered_at is None or not 0 <= delivered_at <= now:  # XCLAIM-7
        delivered_at = now
    claim = _Claim(ctx, stream, group, argv[3], now, options.justid)
    for key, nack, place in _xclaim_targets(ctx, claim, keys, options.force, min_idle, now):
        claim.take(key, nack, place, delivered_at, options.retry)
    if advanced and not claim.moved:  # STATS-8: the group's new last ID alone is a change
        ctx.changed()
    return Array(tuple(claim.replies))


@_handler("xautoclaim")
def xautoclaim(ctx: Context) -> Reply:
    argv = ctx.argv
    min_idle = max(_int(argv[4], XAUTOCLAIM_BAD_MIN_IDLE), 0)  # XAUTOCLAIM-1
    scan_from: int | None = _range_start(ctx, argv[5])  # XAUTOCLAIM-2
    budget = AUTOCLAIM_DEFAULT_COUNT
    justid = False
    j = 6
    while j < len(argv):  # XAUTOCLAIM-3
        word = _word(argv[j])
        if word == b"justid":
            justid = True
        elif word == b"count" and j + 1 < len(argv):
            j += 1
            wanted = parse_ll(argv[j])
            # XAUTOCLAIM-DIALECT-1: 6.2 caps COUNT at LONG_MAX only
            if wanted is None or wanted < 1 or wanted > (
                    AUTOCLAIM_MAX_COUNT if ctx.dialect.claims_drop_deleted else I64_MAX):
                raise ReplyError(XAUTOCLAIM_COUNT_NOT_POSITIVE)
            budget = wanted
        else:
            raise ReplyError(table.SYNTAX)
        j += 1
    stream, group = _stream_and_group(ctx)  # XAUTOCLAIM-4
    # XAUTOCLAIM-5: the room for COUNT deleted IDs is assumed to be there
    # XAUTOCLAIM-6: at most COUNT x 10 pending records are looked at;
    # XAUTOCLAIM-DIALECT-1: 6.2's product wraps around as a C long
    visits = as_i64(budget * AUTOCLAIM_ATTEMPTS_FACTOR)
    now = ctx.now_ms()
    claim = _Claim(ctx, stream, group, argv[3], now, justid)
    gone: list[Reply] = []
    pel = group.pel
    while visits and budget and scan_from is not None:
        key = pel.first_from(scan_from)
        if key is None:
            scan_from = None
            break
        visits -= 1
        scan_from = key + 1 if key < MAX_KEY else None
        nack = pel[key]
        place = _place(ctx, stream, key)
        if place is None and ctx.dialect.claims_drop_deleted:  # XAUTOCLAIM-7: dropped, and reported
            claim.dropped(key)
            gone.append(_id_reply(key))
        elif min_idle and now - nack.time < min_idle:  # XAUTOCLAIM-8
            continue
        else:
            claim.take(key, nack, place, now)  # XAUTOCLAIM-9
        budget -= 1
    cursor = None if scan_from is None else pel.first_from(scan_from)  # XAUTOCLAIM-10
    if cursor is None:
        cursor = 0
        ctx.errno = 0  # the step to the next cursor ran off the tree
    if not ctx.dialect.claims_drop_deleted:  # XAUTOCLAIM-DIALECT-1: 6.2 has no array of deleted IDs
        return Array((_id_reply(cursor), Array(tuple(claim.replies))))
    return Array((_id_reply(cursor), Array(tuple(claim.replies)), Array(tuple(gone))))  # XAUTOCLAIM-11


# -- XREAD, XREADGROUP and blocked readers -----------------------------------------------------


def _streams_reply(ctx: Context, served: list[tuple[bytes, list[bytes]]]) -> Encoded:
    """RESP2 ``[[key, entries], ...]``, RESP3 ``{key: entries}`` (XREAD-11), ``entries`` in RESP."""
    if ctx.client.proto == 2:
        head, pair = b"*%d\r\n", b"*2\r\n$%d\r\n%b\r\n"
    else:
        head, pair = b"%%%d\r\n", b"$%d\r\n%b\r\n"
    parts = [head % len(served)]
    for k, entries in served:
        parts.append(pair % (len(k), k))
        parts += entries
    return Encoded(parts)


def _read_after(ctx: Context, stream: Stream, after: int, count: int) -> list[bytes]:
    """Live entries above ``after``, at most ``count`` (0: all) (XREAD-10, BLOCK-4)."""
    out: list[bytes] = []
    for node, start, end in stream.forward_runs(after + 1):
        if count and end - start > count - len(out):
            end = start + count - len(out)
        out += node.replies(start, end)
        if len(out) == count:
            break
    else:
        ctx.errno = 0  # the iterator ran off the tree
    return _entries(out)


def _reader(ctx: Context, group: Group, name: bytes, key: bytes) -> Consumer:
    """XREADGROUP-9: the reading consumer, seen-time refreshed or created."""
    consumer = group.consumers.get(name)
    if consumer is not None:
        consumer.seen = ctx.now_ms()
        return consumer
    if ctx.dialect.consumer_creation_counts:  # STATS-7; STATS-DIALECT-5; NOTIFY-DIALECT-2
        ctx.changed()
        notify_keyspace_event(ctx, "t", "xgroup-createconsumer", key)
    return group.add_consumer(name, ctx.now_ms())


def _history(ctx: Context, stream: Stream, consumer: Consumer, after: int, count: int) -> list[bytes]:
    """XREADGROUP-6: the consumer's pending entries above ``after``, re-delivered."""
    out: list[bytes] = []
    pel = consumer.pel
    now_ms = ctx.clock()
    for k in pel.keys_from(after + 1):
        if count and len(out) >= count:
            return _entries(out)
        found = stream.locate(k)
        if found is None:
            if stream.lookup_runs_off(k):
                ctx.errno = 0
            out.append(encode_reply(Array((_id_reply(k), NULL_ARRAY)), ctx.client.proto))  # a deleted entry
            continue
        out.append(stream.nodes[found[0]].reply_at(found[1]))
        nack: Nack = pel[k]
        nack.time = now_ms()
        nack.count = (nack.count + 1) & U64
    ctx.errno = 0  # the PEL walk looks for a next entry before COUNT: it ends off the tree
    return _entries(out)


def _deliver(ctx: Context, stream: Stream, group: Group, consumer: Consumer, count: int,
             noack: bool) -> list[bytes]:
    """XREADGROUP-7, -10, -11: entries above the group's last-delivered-id, moving the group.

    The walk comes first, a run of entries at a time; the group's position then moves over the
    keys (LAG-4) and the NACKs are made, one clock reading each, in walk order, as 7.0 makes them
    during its walk (nothing else reads the clock or the PELs meanwhile).
    """
    out: list[bytes] = []
    keys: list[int] = []
    for node, start, end in stream.forward_runs(group.last_id + 1):
        if count and end - start > count - len(keys):
            end = start + count - len(keys)
        keys += node.keys(start, end)
        out += node.replies(start, end)
        if len(keys) == count:
            break
    else:
        ctx.errno = 0  # the walk ran off the tree
    if not keys:
        return _entries(out)
    dialect = ctx.dialect
    passed = keys
    if stream.unordered:  # LAYOUT-2: an unordered walk can meet IDs below the group's new position
        passed = []
        last = group.last_id
        for k in keys:
            if k > last:
                passed.append(k)
                last = k
    if passed:
        stream.advance(group, passed, dialect.lag_fixes)  # LAG-4; LAG-DIALECT-1
    if noack:  # XREADGROUP-11: no PEL change at all
        return _entries(out)
    now_ms = ctx.clock()  # streamCreateNACK reads the clock for each entry
    pending = group.pel.map
    if pending.keys().isdisjoint(keys):
        group.add_pending({k: Nack(now_ms(), 1, consumer) for k in keys}, consumer, not stream.unordered)
    else:
        added: dict[int, Nack] = {}
        for k in keys:
            fresh_time = now_ms()
            nack = pending.get(k)
            if nack is None:
                added[k] = Nack(fresh_time, 1, consumer)
            else:  # XREADGROUP-10: taken over, with a second reading
                nack.time = now_ms()
                nack.count = 1
                group.give(k, nack, consumer)
        if added:
            group.add_pending(added, consumer, not stream.unordered)
    if dialect.consumer_active_time:
        consumer.active = now_ms()  # XREADGROUP-DIALECT-1: a delivery that leaves NACKs
    return _entries(out)


class _Read:
    """One key/ID pair after the checks of XREAD-8, XREAD-9, XREADGROUP-2 .. XREADGROUP-4."""

    __slots__ = ("key", "stream", "group", "after")

    def __init__(self, key: bytes, stream: Stream | None, group: Group | None, after: int) -> None:
        self.key = key
        self.stream = stream
        self.group = group
        self.after = after  # MAX_KEY stands for ">"


def _read_command(ctx: Context, grouped: bool, deadline: int | None = None) -> Reply | Encoded | Blocked:
    """XREAD and XREADGROUP; ``deadline`` is a re-executed blocked command's first deadline (BLOCK-DIALECT-2)."""
    argv = ctx.argv
    argc = len(argv)
    dialect = ctx.dialect
    count = 0
    timeout: int | None = None
    read_at: int | None = None  # the clock reading of a positive timeout (XREAD-2)
    group_name: bytes | None = None
    consumer_name = b""
    noack = False
    streams_at = 0
    i = 1
    while i < argc:  # XREAD-1
        more = argc - i - 1
        opt = _word(argv[i])
        if opt == b"block" and more:
            i += 1
            t = _int(argv[i], TIMEOUT_NOT_INTEGER)  # XREAD-2
            if t < 0:
                raise ReplyError(TIMEOUT_NEGATIVE)
            if t > 0:
                # XREAD-2: the timeout becomes a deadline while parsing, so the clock is read here,
                # before any delivery or seen-time reading, whether or not the command then blocks.
                read_at = ctx.now_ms()
                if dialect.block_timeout_range_check and t > I64_MAX - read_at:  # XREAD-DIALECT-3
                    raise ReplyError(TIMEOUT_OUT_OF_RANGE)
            timeout = t
        elif opt == b"count" and more:
            i += 1
            count = max(_int(argv[i]), 0)  # XREAD-3
        elif opt == b"streams" and more:
            streams_at = i + 1
            if (argc - streams_at) & 1:  # XREAD-4
                # XREAD-DIALECT-1: the text may name the command
                raise ReplyError(unbalanced_streams(grouped, dialect.unbalanced_names_command))
            break
        elif opt == b"group" and more >= 2:
            if not grouped:  # XREAD-5
                raise ReplyError(GROUP_IN_XREAD)
            group_name, consumer_name = argv[i + 1], argv[i + 2]
            i += 2
        elif opt == b"noack":
            if not grouped:  # XREAD-5
                raise ReplyError(NOACK_IN_XREAD)
            noack = True
        else:  # XREAD-6
            raise ReplyError(table.SYNTAX)
        i += 1
    if not streams_at:  # XREAD-6
        raise ReplyError(table.SYNTAX)
    if grouped and group_name is None:  # XREADGROUP-1
        raise ReplyError(MISSING_GROUP)
    half = (argc - streams_at) >> 1
    keys = argv[streams_at:streams_at + half]
    plus_id = dialect.xread_plus_id
    reads: list[_Read] = []
    for j, key in enumerate(keys):  # XREAD-8; XREAD-7: after every option was checked
        id_arg = argv[streams_at + half + j]
        stream = _stream(ctx, key)
        group = None
        if group_name is not None:
            group = None if stream is None else stream.groups.get(group_name)
            if group is None:  # XREADGROUP-2
                raise ReplyError(no_such_key_or_group_in_xreadgroup(key, group_name))
        token = c_string(id_arg)
        if token == b"$":
            if group_name is not None:  # XREADGROUP-3
                raise ReplyError(DOLLAR_IN_XREADGROUP)
            after = 0 if stream is None else stream.last_id  # XREAD-9
        elif token == b"+" and plus_id:  # XREAD-DIALECT-2: after the ID before last-generated-id
            if group_name is not None:
                raise ReplyError(PLUS_IN_XREADGROUP)
            if stream is not None and not stream.last_id and dialect.xread_plus_zero_last_id_error:
                raise ReplyError(PLUS_AT_ZERO_LAST_ID)  # XREAD-DIALECT-4
            after = 0 if stream is None or not stream.length else max(stream.last_id - 1, 0)
        elif token == b">":
            if group_name is None:  # XREAD-9
                raise ReplyError(GT_IN_XREAD)
            after = MAX_KEY  # XREADGROUP-4
        else:  # XREADGROUP-8: the largest ID is MAX_KEY, which means ">"
            after = _strict(ctx, id_arg)
        reads.append(_Read(key, stream, group, after))
    # XREADGROUP-DIALECT-1: 7.2+ creates or refreshes the consumer for every stream, served or not
    touch_always = dialect.consumer_active_time
    served: list[tuple[bytes, list[bytes]]] = []
    for r in reads:
        s = r.stream
        if s is None:  # XREAD-10
            continue
        g = r.group
        if g is None:
            if s.length and s.top() > r.after:
                served.append((r.key, _read_after(ctx, s, r.after, count)))
            continue
        consumer = _reader(ctx, g, consumer_name, r.key) if touch_always else None
        if r.after != MAX_KEY:  # XREADGROUP-5
            if consumer is None:
                consumer = _reader(ctx, g, consumer_name, r.key)
            served.append((r.key, _history(ctx, s, consumer, r.after, count)))
            if dialect.history_read_counts:  # STATS-DIALECT-6
                ctx.changed()  # STATS-7: one per stream served
        elif s.length and s.top() > g.last_id:  # XREADGROUP-7
            if consumer is None:
                consumer = _reader(ctx, g, consumer_name, r.key)
            served.append((r.key, _deliver(ctx, s, g, consumer, count, noack)))
            ctx.changed()  # STATS-7
    if served:  # XREAD-11
        return _streams_reply(ctx, served)
    if timeout is None or not ctx.can_block:  # XREAD-11, XREAD-12
        return NULL_ARRAY
    if dialect.blocked_reexecution:
        return _block_for_reexecution(ctx, grouped, reads, timeout, read_at, deadline)
    after_by_key: dict[bytes, int] = {}
    for r in reads:
        after_by_key.setdefault(r.key, r.after)  # BLOCK-1: a key's first pair decides
    retry = _blocked_retry(count or BLOCKED_DEFAULT_COUNT, group_name, consumer_name, noack, after_by_key,
                           dialect.deleted_key_wakes_readgroup)
    ctx.block(list(after_by_key), timeout, retry, NULL_ARRAY, read_at)  # BLOCK-1: each key once
    return BLOCKED


def _blocked_retry(count: int, group_name: bytes | None, consumer_name: bytes, noack: bool,
                   after_by_key: dict[bytes, int],
                   deletion_wakes: bool) -> Callable[[Context, bytes], Reply | Encoded | None]:
    """What a blocked reader does when one of its keys is signalled (BLOCK-2 .. BLOCK-7)."""

    def retry(ctx: Context, key: bytes) -> Reply | Encoded | None:
        value = ctx.db.get(key)
        if type(value) is not Stream:
            # BLOCK-5: XREAD keeps waiting; BLOCK-DIALECT-1: in 6.2 so does XREADGROUP
            if group_name is None or not deletion_wakes:
                return None
            raise ReplyError(UNBLOCKED_KEY_GONE)
        if group_name is None:
            after = after_by_key[key]
            if not value.last_id > after:  # BLOCK-2: last-generated-id, not the last live entry
                return None
            entries = _read_after(ctx, value, after, count)  # BLOCK-4
        else:
            group = value.groups.get(group_name)
            if group is None:  # BLOCK-6
                raise ReplyError(UNBLOCKED_GROUP_GONE)
            if not value.last_id > group.last_id:  # BLOCK-3
                return None
            consumer = _reader(ctx, group, consumer_name, key)  # BLOCK-7
            entries = _deliver(ctx, value, group, consumer, count, noack)
        return _streams_reply(ctx, [(key, entries)])

    return retry


def _block_for_reexecution(ctx: Context, grouped: bool, reads: list[_Read], timeout: int, read_at: int | None,
                           deadline: int | None) -> Blocked:
    """7.2+: block so that a signalled key runs the whole command again (BLOCK-DIALECT-2).

    ``$`` is replaced by the ID it stood for, so that the command run again waits
    for what comes after it; a command that blocks again keeps its first deadline.
    """
    argv = ctx.argv
    ids_at = len(argv) - len(reads)
    # what the core keeps and hands back to the retry
    ctx.argv = [*argv[:ids_at], *(id_bytes(r.after) if c_string(arg) == b"$" else arg
                                  for r, arg in zip(reads, argv[ids_at:], strict=True))]
    if timeout:
        if deadline is None:
            assert read_at is not None  # a positive timeout was read while parsing (XREAD-2)
            deadline = read_at + timeout
        first_read_at: int | None = deadline - timeout
    else:
        first_read_at = None

    def retry(ctx: Context, key: bytes) -> Reply | Encoded | None:
        if not grouped and type(ctx.db.get(key)) is not Stream:  # XREAD runs again on a stream only
            return None
        result = _read_command(ctx, grouped, deadline)
        return None if isinstance(result, Blocked) else result

    ctx.block([r.key for r in reads], timeout, retry, NULL_ARRAY, first_read_at)
    return BLOCKED


@_handler("xread")
def xread(ctx: Context) -> Reply | Encoded | Blocked:
    return _read_command(ctx, grouped=False)


@_handler("xreadgroup")
def xreadgroup(ctx: Context) -> Reply | Encoded | Blocked:
    return _read_command(ctx, grouped=True)


# -- XINFO ---------------------------------------------------------------------------------


def _info_stream(ctx: Context) -> Stream:
    """XINFO-2: ``no such key``, then WRONGTYPE."""
    value = ctx.db.get(ctx.argv[2])
    if value is None:
        raise ReplyError(table.NO_SUCH_KEY)
    if type(value) is not Stream:
        raise ReplyError(table.WRONGTYPE)
    return value


def _f(name: bytes, value: Reply) -> tuple[Reply, Reply]:
    return Bulk(name), value


def _nil_or_int(v: int | None) -> Reply:
    return NULL_BULK if v is None else Int(v)


def _stream_head(ctx: Context, stream: Stream) -> list[tuple[Reply, Reply]]:
    """The first seven fields of both forms of XINFO STREAM (XINFO-3); 6.2 has the first four
    (XINFO-DIALECT-1)."""
    head = [
        _f(b"length", Int(stream.length)),
        _f(b"radix-tree-keys", Int(len(stream.nodes))),
        _f(b"radix-tree-nodes", Int(stream.rax.nodes)),
        _f(b"last-generated-id", _id_reply(stream.last_id)),
    ]
    if ctx.dialect.stream_counters:
        head += [
            _f(b"max-deleted-entry-id", _id_reply(stream.max_deleted)),
            _f(b"entries-added", Int(as_i64(stream.entries_added))),  # LAG-6
            _f(b"recorded-first-entry-id", _id_reply(stream.first_id)),
        ]
    return head


def _entry_at(at: tuple[Node, int] | None) -> Reply:
    """The entry reply of an entry given by its position, nil for None."""
    if at is None:
        return NULL_BULK
    node, i = at
    return _entry(node.key(i), node, i)


def _group_counters(ctx: Context, stream: Stream, group: Group) -> tuple[tuple[Reply, Reply], ...]:
    """entries-read and lag of a group record (XINFO-5, XINFO-6); none in 6.2 (XINFO-DIALECT-1)."""
    dialect = ctx.dialect
    if not dialect.stream_counters:
        return ()
    read = NULL_BULK if group.entries_read == INVALID_ENTRIES_READ else Int(group.entries_read)
    return _f(b"entries-read", read), _f(b"lag", _nil_or_int(stream.lag(group, dialect.lag_fixes)))


@_handler("xinfo|stream")
def xinfo_stream(ctx: Context) -> Reply:
    """XINFO (every subcommand) reads only (XINFO-8)."""
    stream = _info_stream(ctx)
    options = ctx.argv[3:]
    if not options:  # XINFO-3
        first = stream.first_live_at()  # LAYOUT-2: the first live entry of a forward walk
        if first is None:
            ctx.errno = 0  # the first/last-entry walks find no live entry
        return Map((*_stream_head(ctx, stream),
                    _f(b"groups", Int(len(stream.groups))),
                    _f(b"first-entry", _entry_at(first)),
                    _f(b"last-entry", _entry_at(stream.last_live_at()))))
    if len(options) not in (1, 3) or _word(options[0]) != b"full":  # XINFO-4
        raise _subcommand_syntax(ctx)
    count = FULL_DEFAULT_COUNT
    if len(options) == 3:
        if _word(options[1]) != b"count":
            raise _subcommand_syntax(ctx)
        n = _int(options[2])
        count = FULL_DEFAULT_COUNT if n < 0 else n
    if not count or stream.length - stream.lost < count or stream.groups_allocated:
        ctx.errno = 0  # the entry walk, then the groups' walk, ran off their trees
    active = ctx.dialect.consumer_active_time
    entries: list[Reply] = []
    for node, i in stream.forward(0):  # XINFO-5
        if count and len(entries) == count:
            break
        entries.append(_entry(node.ms[i] << 64 | node.seq[i], node, i))
    groups: list[Reply] = []
    for name in sorted(stream.groups):
        group = stream.groups[name]
        pending = [Array((_id_reply(k), Bulk(n.owner.name), Int(n.time),  # type: ignore[union-attr]
                          Int(n.shown_count())))
                   for k, n in group.pel.items_head(count)]
        consumers = [Map((
            _f(b"name", Bulk(c.name)),
            _f(b"seen-time", Int(c.seen)),
            *((_f(b"active-time", Int(c.active)),) if active else ()),  # XINFO-DIALECT-3
            _f(b"pel-count", Int(len(c.pel))),
            _f(b"pending", Array(tuple(Array((_id_reply(k), Int(n.time), Int(n.shown_count())))
                                       for k, n in c.pel.items_head(count)))),
        )) for c in group.consumers_in_order()]
        groups.append(Map((
            _f(b"name", Bulk(group.name)),
            _f(b"last-delivered-id", _id_reply(group.last_id)),
            *_group_counters(ctx, stream, group),
            _f(b"pel-count", Int(len(group.pel))),
            _f(b"pending", Array(tuple(pending))),
            _f(b"consumers", Array(tuple(consumers))),
        )))
    return Map((*_stream_head(ctx, stream), _f(b"entries", Array(tuple(entries))),
                _f(b"groups", Array(tuple(groups)))))


@_handler("xinfo|groups")
def xinfo_groups(ctx: Context) -> Reply:
    stream = _info_stream(ctx)
    if stream.groups_allocated:
        ctx.errno = 0  # XINFO-6: the walk over the groups' tree ends off it
    return Array(tuple(Map((
        _f(b"name", Bulk(g.name)),
        _f(b"consumers", Int(len(g.consumers))),
        _f(b"pending", Int(len(g.pel))),
        _f(b"last-delivered-id", _id_reply(g.last_id)),
        *_group_counters(ctx, stream, g),
    )) for g in (stream.groups[n] for n in sorted(stream.groups))))


@_handler("xinfo|consumers")
def xinfo_consumers(ctx: Context) -> Reply:
    stream = _info_stream(ctx)
    group = stream.groups.get(ctx.argv[3])
    if group is None:  # XINFO-7
        raise ReplyError(no_such_group_for_key(ctx.argv[3], ctx.argv[2]))
    now = ctx.now_ms()
    ctx.errno = 0  # the walk over the consumers ends off the tree
    if ctx.dialect.consumer_active_time:  # XINFO-DIALECT-3: 7.2+ adds inactive
        return Array(tuple(Map((
            _f(b"name", Bulk(c.name)),
            _f(b"pending", Int(len(c.pel))),
            _f(b"idle", Int(max(now - c.seen, 0))),
            _f(b"inactive", Int(-1 if c.active == -1 else now - c.active)),
        )) for c in group.consumers_in_order()))
    return Array(tuple(Map((
        _f(b"name", Bulk(c.name)),
        _f(b"pending", Int(len(c.pel))),
        _f(b"idle", Int(max(now - c.seen, 0))),
    )) for c in group.consumers_in_order()))


@_handler("xinfo|help")
def xinfo_help(ctx: Context) -> Reply:
    head = f"{_container(ctx)} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    return _help(ctx, head, XINFO_HELP)  # XINFO-1


@_handler("xinfo")
def xinfo_container(ctx: Context) -> Reply | Encoded | Blocked:
    """XINFO where the dialect has no subcommand table (6.2): HELP with any arguments, else the key
    checks, then the subcommand and its argument count (DISPATCH-DIALECT-1, XINFO-DIALECT-2)."""
    argv = ctx.argv
    sub = _word(argv[1])
    if sub == b"help":
        return xinfo_help(ctx)
    if len(argv) < 3:
        raise _subcommand_syntax(ctx)
    _info_stream(ctx)
    if sub == b"stream":
        return xinfo_stream(ctx)
    if sub == b"groups" and len(argv) == 3:
        return xinfo_groups(ctx)
    if sub == b"consumers" and len(argv) == 4:
        return xinfo_consumers(ctx)
    raise _subcommand_syntax(ctx)


__all__ = ["HANDLERS", "Node", "Stream"]
