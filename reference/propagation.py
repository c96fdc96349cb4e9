"""What a command propagates to the AOF (and would to replicas), as Redis 7.0 does it.

The handlers do not say what they propagate; this module derives it from the
command's arguments, its reply and the data before and after it ran, as
``call()`` and the stream commands' ``alsoPropagate`` calls decide it:

* a command that changed the data (``server.dirty`` moved) propagates its
  arguments, with these rewrites: XADD's ``*`` (or ``ms-*``) becomes the ID it
  added, and a trim with ``~`` becomes ``=`` with the threshold it reached (the
  length after it for MAXLEN, the first entry's ID for MINID; LIMIT is kept,
  and ignored when loaded), XTRIM likewise; BLPOP/BRPOP become LPOP/RPOP,
  BLMOVE LMOVE, BRPOPLPUSH RPOPLPUSH;
* XREADGROUP, XCLAIM and XAUTOCLAIM never propagate themselves: each entry
  delivered or claimed is ``XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n
  FORCE JUSTID LASTID last-id`` (an entry gone from the stream too: its NACK
  leaves the PEL where the XCLAIM is applied); XREADGROUP with NOACK propagates
  ``XGROUP SETID key group last-id ENTRIESREAD n`` and the consumer it created
  as ``XGROUP CREATECONSUMER``; XCLAIM's LASTID, when it moved the group and
  nothing was claimed, ``XGROUP SETID``;
* the commands of one call (a command, an EXEC, a blocked client served) that
  propagate more than one command are wrapped in MULTI/EXEC.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from itertools import islice
from typing import Any

from xspec.reference.streams import U64, Group, Stream
from xspec.spec.ids import c_string

Argv = list[bytes]

# A script propagates the commands it ran, never itself (SCRIPT-9).
_NEVER_SELF = frozenset({"xreadgroup", "xclaim", "xautoclaim", "exec", "multi", "eval", "evalsha", "eval_ro",
                         "evalsha_ro", "fcall", "fcall_ro"})
_POP_REWRITES = {"blpop": b"LPOP", "brpop": b"RPOP", "blmove": b"LMOVE", "brpoplpush": b"RPOPLPUSH",
                 "bzpopmin": b"ZPOPMIN", "bzpopmax": b"ZPOPMAX", "zmpop": b"", "bzmpop": b"", "lmpop": b"",
                 "blmpop": b""}


def id_text(key: int) -> bytes:
    return b"%d-%d" % (key >> 64, key & U64)


def _word(arg: bytes) -> bytes:
    return c_string(arg).lower()


class _StreamSnapshot:
    """What a stream command's propagation needs of the group before it ran."""

    __slots__ = ("last_id", "consumer_existed", "counts", "owners")

    def __init__(self, last_id: int, consumer_existed: bool, counts: dict[int, tuple[bytes, int, int]]) -> None:
        self.last_id = last_id
        self.consumer_existed = consumer_existed
        self.counts = counts  # PEL key -> (owner, delivery time, delivery count) of the entries involved


def _group(db: dict[bytes, Any], key: bytes, group: bytes) -> Group | None:
    s = db.get(key)
    if not isinstance(s, Stream):
        return None
    return s.groups.get(group)


def _xclaim(key: bytes, group_name: bytes, g: Group, pid: int, owner: bytes, time: int, count: int,
            last_id: int | None = None) -> Argv:
    """streamPropagateXCLAIM; LASTID is the group's last-delivered-id at the time (``last_id``, else now)."""
    return [b"XCLAIM", key, group_name, owner, b"0", id_text(pid), b"TIME", b"%d" % time, b"RETRYCOUNT",
            b"%d" % count, b"FORCE", b"JUSTID", b"LASTID", id_text(g.last_id if last_id is None else last_id)]


def _setid(key: bytes, group_name: bytes, g: Group, counters: bool = True) -> Argv:
    setid = [b"XGROUP", b"SETID", key, group_name, id_text(g.last_id)]
    return setid + [b"ENTRIESREAD", b"%d" % g.entries_read] if counters else setid  # 6.2: no ENTRIESREAD


# -- XREADGROUP ------------------------------------------------------------------------------------


def _readgroup_args(argv: Argv) -> tuple[bytes, bytes, bool, list[tuple[bytes, bytes]]] | None:
    """(group, consumer, NOACK, [(key, id)]) of a well-formed XREADGROUP."""
    group = consumer = None
    noack = False
    i = 1
    while i < len(argv):
        word = _word(argv[i])
        if word == b"group" and i + 2 < len(argv):
            group, consumer = argv[i + 1], argv[i + 2]
            i += 3
        elif word in (b"count", b"block") and i + 1 < len(argv):
            i += 2
        elif word == b"noack":
            noack = True
            i += 1
        elif word == b"streams":
            rest = argv[i + 1:]
            half = len(rest) // 2
            if group is None or consumer is None or not half or len(rest) % 2:
                return None
            return group, consumer, noack, list(zip(rest[:half], rest[half:], strict=True))
        else:
            i += 1
    return None


def before_readgroup(db: dict[bytes, Any], argv: Argv) -> list[_StreamSnapshot | None] | None:
    parsed = _readgroup_args(argv)
    if parsed is None:
        return None
    group, consumer, _, pairs = parsed
    out: list[_StreamSnapshot | None] = []
    for key, _ in pairs:
        g = _group(db, key, group)
        if g is None:
            out.append(None)
            continue
        c = g.consumers.get(consumer)
        out.append(_StreamSnapshot(g.last_id, c is not None, {}))
    return out


def after_readgroup(db: dict[bytes, Any], argv: Argv, before: list[_StreamSnapshot | None],
                    counters: bool = True) -> list[Argv]:
    parsed = _readgroup_args(argv)
    if parsed is None:
        return []
    group, consumer, noack, pairs = parsed
    ops: list[Argv] = []
    for (key, start), snap in zip(pairs, before, strict=True):
        g = _group(db, key, group)
        if g is None or snap is None:
            continue
        c = g.consumers.get(consumer)
        if c is None:
            continue
        if noack and not snap.consumer_existed:
            ops.append([b"XGROUP", b"CREATECONSUMER", key, group, consumer])
        if start != b">":
            continue  # 7.0 propagates nothing of a read of the consumer's history (its new counts stay here)
        if noack:
            if g.last_id != snap.last_id:
                ops.append(_setid(key, group, g, counters))
            continue
        for k in c.pel:
            if snap.last_id < k <= g.last_id:
                nack = c.pel[k]
                # the group's last-delivered-id moves to each entry as it is delivered
                ops.append(_xclaim(key, group, g, k, consumer, nack.time, nack.count, k))
    return ops


# -- XCLAIM, XAUTOCLAIM -----------------------------------------------------------------------------


def before_claim(db: dict[bytes, Any], argv: Argv, auto: bool) -> _StreamSnapshot | None:
    if len(argv) < 5:
        return None
    g = _group(db, argv[1], argv[2])
    if g is None:
        return None
    counts = {}
    for k in _claimed_keys(g, argv, auto):
        nack = g.pel.get(k)
        if nack is not None:
            owner = nack.owner.name if nack.owner is not None else b""
            counts[k] = (owner, nack.time, nack.count)
    return _StreamSnapshot(g.last_id, argv[3] in g.consumers, counts)


def _claimed_keys(g: Group, argv: Argv, auto: bool) -> Iterable[int]:
    """The PEL entries a claim may touch: XCLAIM's ID arguments; XAUTOCLAIM's from its start, as many
    as its attempts (COUNT times 10, COUNT 100 by default)."""
    if not auto:
        return _id_arguments(argv[5:])
    start = _id_arguments(argv[5:6])
    count = 100
    for i in range(6, len(argv) - 1):
        if _word(argv[i]) == b"count" and argv[i + 1].isdigit():
            count = int(argv[i + 1])
    return islice(g.pel.keys_from(start[0] if start else 0), min(count * 10, sys.maxsize))  # a huge COUNT: all


def _id_arguments(args: Argv) -> list[int]:
    """The leading arguments that are stream IDs (``ms-seq`` or ``ms``), as keys."""
    out: list[int] = []
    for arg in args:
        ms, _, seq = arg.partition(b"-")
        if not ms.isdigit() or (seq and not seq.isdigit()):
            break
        out.append(int(ms) << 64 | int(seq or b"0"))
    return out


def after_claim(db: dict[bytes, Any], argv: Argv, snap: _StreamSnapshot) -> list[Argv]:
    key, group, consumer = argv[1], argv[2], argv[3]
    g = _group(db, key, group)
    ops: list[Argv] = []
    if g is None:
        return ops
    c = g.consumers.get(consumer)
    for k, (owner, time, count) in sorted(snap.counts.items(), key=_argument_order(argv)):
        nack = g.pel.get(k)
        if nack is None:
            ops.append(_xclaim(key, group, g, k, owner, time, count))  # deleted: the NACK leaves the PEL
        elif c is not None and nack.owner is c and (owner != consumer or nack.time != time or nack.count != count):
            ops.append(_xclaim(key, group, g, k, consumer, nack.time, nack.count))
    if not ops and g.last_id != snap.last_id:
        ops.append(_setid(key, group, g))
    return ops


def _argument_order(argv: Argv) -> Any:
    """XCLAIM claims in the order of its ID arguments; XAUTOCLAIM in PEL order."""
    order: dict[int, int] = {}
    if _word(argv[0]) == b"xclaim":
        for n, k in enumerate(_id_arguments(argv[5:])):
            order.setdefault(k, n)

    def position(item: tuple[int, Any]) -> tuple[int, int]:
        return order.get(item[0], len(order)), item[0]

    return position


# -- XADD, XTRIM ------------------------------------------------------------------------------------


def _trim_rewrite(argv: Argv, s: Stream | None, end: int | None = None) -> None:
    """streamRewriteApproxSpecifier and streamRewriteTrimArgument, in place, on the options before ``end``
    (XADD's ID: its fields are no options)."""
    i = 2
    stop = len(argv) if end is None else end
    while i < stop:
        word = _word(argv[i])
        if word in (b"maxlen", b"minid") and i + 1 < len(argv):
            j = i + 1
            if argv[j] in (b"~", b"="):
                if argv[j] == b"~" and s is not None:
                    argv[j] = b"="
                    if word == b"maxlen":
                        argv[j + 1] = b"%d" % s.length
                    else:
                        first = s.first_live()
                        argv[j + 1] = id_text(first) if first is not None else id_text(s.last_id + 1)
                return
            return
        i += 1


# The first byte of an XADD ID argument that was accepted: the options before it are words.
XADD_ID_STARTS = frozenset([b"*", *(b"%d" % d for d in range(10))])


def _xadd(argv: Argv, reply: Any, db: dict[bytes, Any]) -> Argv:
    out = list(argv)
    s = db.get(argv[1])
    stream = s if isinstance(s, Stream) else None
    if stream is not None and argv[2][:1] in XADD_ID_STARTS:  # no option: only the ID to rewrite
        out[2] = id_text(stream.last_id)
        return out
    i = 2
    while i < len(out):
        word = _word(out[i])
        if word == b"nomkstream":
            i += 1
        elif word in (b"maxlen", b"minid"):
            i += 2 + (out[i + 1] in (b"~", b"=") if i + 1 < len(out) else 0)
        elif word == b"limit":
            i += 2
        else:
            break
    if i < len(out) and stream is not None:
        out[i] = id_text(stream.last_id)
    _trim_rewrite(out, stream, i)
    return out


def _xtrim(argv: Argv, db: dict[bytes, Any]) -> Argv:
    out = list(argv)
    s = db.get(argv[1])
    _trim_rewrite(out, s if isinstance(s, Stream) else None)
    return out


# -- the propagator -----------------------------------------------------------------------------------


_WRAPPED_62 = frozenset({"exec", "eval", "evalsha", "eval_ro", "evalsha_ro"})


class Propagator:
    """Collects what the commands of one call propagate; :meth:`flush` hands them to ``sink``."""

    def __init__(self, sink: Any, counters: bool = True, transactions_only: bool = False) -> None:
        self.sink = sink  # called with [(db, argv), ...] for each call that propagated something
        self.counters = counters  # the dialect's streams have entries-read (not 6.2)
        # PROP-DIALECT-3 (6.2): only an EXEC's writes are wrapped in MULTI/EXEC, even a single one
        self.transactions_only = transactions_only
        self.outer = ""  # the name of the outermost command running
        self.several_also = False  # a command propagated several ops instead of its argv (6.2's alsoPropagate)
        self.depth = 0
        self.pending: list[tuple[int, Argv]] = []
        # What the running command propagates instead of its argv, set by its handler (SET's PXAT,
        # EXPIRE's PEXPIREAT, INCRBYFLOAT's SET ... KEEPTTL: spec/rules/strings.md, expiry.md).
        self.replacement: list[Argv] | None = None

    def before(self, name: str, db: dict[bytes, Any], argv: Argv) -> Any:
        if not self.depth:
            self.outer = name
        self.depth += 1
        if name == "xreadgroup":
            return before_readgroup(db, argv)
        if name in ("xclaim", "xautoclaim"):
            return before_claim(db, argv, name == "xautoclaim")
        return None

    def after(self, name: str, dbid: int, db: dict[bytes, Any], argv: Argv, reply: Any, token: Any,
              changed: bool) -> None:
        self.depth -= 1
        if name == "xadd" and changed and self.replacement is None:  # the commonest write, the short way
            op = _xadd(argv, reply, db)
            if self.depth == 0 and not self.pending:
                self.sink([(dbid, op)])
                return
            self.pending.append((dbid, op))
            if self.depth == 0:
                self.flush()
            return
        if not changed and token is None and self.replacement is None and name not in _POP_REWRITES:
            # a read, or a write that changed nothing: it propagates nothing of its own (the short way:
            # this runs for every command while a backlog or an AOF is on)
            if self.depth == 0 and self.pending:
                self.flush()
            return
        ops: list[Argv] = []
        if name == "xreadgroup":
            if token is not None:
                ops = after_readgroup(db, argv, token, self.counters)
        elif name in ("xclaim", "xautoclaim"):
            if token is not None:
                ops = after_claim(db, argv, token)
        elif name in _POP_REWRITES:
            if changed or _served(reply):  # a blocked pop served from handle_ready counts no change here
                ops = [_pop(name, argv, reply)]
        elif changed and name not in _NEVER_SELF:
            if self.replacement is not None:
                ops = self.replacement
                self.several_also |= len(ops) > 1
            elif name == "xadd":
                ops = [_xadd(argv, reply, db)]
            elif name == "xtrim":
                ops = [_xtrim(argv, db)]
            else:
                ops = [list(argv)]
        self.replacement = None
        if (self.depth == 0 and not self.pending and len(ops) == 1 and not self.several_also
                and not (self.transactions_only and name in _WRAPPED_62)):
            self.sink([(dbid, ops[0])])  # one command alone: nothing to wrap (flush's answer), at once
            return
        self.pending += ((dbid, op) for op in ops)
        if self.depth == 0:
            self.flush()

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        if not pending:
            return
        if self.transactions_only:
            # PROP-DIALECT-3, SCRIPT-DIALECT-4: 6.2 wraps an EXEC's writes and a script's, even a single one;
            # SETS-DIALECT-3: and a command's several alsoPropagate ops (SPOP's SREMs) outside them
            wrap = self.outer in _WRAPPED_62 or self.several_also
        else:
            wrap = len(pending) > 1
        self.several_also = False
        if wrap:  # AOF-1: one unit
            pending = [(-1, [b"MULTI"]), *pending, (-1, [b"EXEC"])]
        self.sink(pending)


def _served(reply: Any) -> bool:
    """A blocking pop's reply that popped something: an array of key and value, or the value moved."""
    return bool(getattr(reply, "items", None)) or getattr(reply, "value", None) is not None


def _pop(name: str, argv: Argv, reply: Any) -> Argv:
    """A blocking pop as the pop it was: BLPOP/BRPOP as LPOP/RPOP of the key served (the reply's first
    element), BLMOVE and BRPOPLPUSH without their timeout."""
    if name in ("zmpop", "bzmpop", "lmpop", "blmpop"):
        return _mpop(name, argv, reply)
    if name in ("blpop", "brpop", "bzpopmin", "bzpopmax"):
        items = getattr(reply, "items", None)
        key = getattr(items[0], "value", argv[1]) if items else argv[1]
        return [_POP_REWRITES[name], key]
    return [_POP_REWRITES[name], *argv[1:-1]]


_MPOP_SIDES = {b"min": b"ZPOPMIN", b"max": b"ZPOPMAX", b"left": b"LPOP", b"right": b"RPOP"}


def _mpop(name: str, argv: Argv, reply: Any) -> Argv:
    """ZMPOP, BZMPOP and LMPOP as ZPOPMIN/ZPOPMAX/LPOP/RPOP of the key served with the count popped
    (ZSET-16, BZSET-1, LIST-16): the reply is [key, [popped, ...]]; the side is the word after the keys."""
    items: tuple[Any, ...] = getattr(reply, "items", ())
    key = getattr(items[0], "value", b"")
    popped = len(getattr(items[1], "items", ()))
    at = 2 if name in ("bzmpop", "blmpop") else 1
    side = _word(argv[at + int(argv[at]) + 1])
    return [_MPOP_SIDES[side], key, b"%d" % popped]
