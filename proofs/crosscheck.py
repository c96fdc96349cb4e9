"""The encodings against the executable model, on random concrete states.

Each sample drives a model :class:`~xspec.models.server.Server` (with a
:class:`~xspec.models.ManualClock`) through random commands to a random
state, encodes that state, runs one more command on the model, and asks Z3
whether the encoding's transition, from the encoded state with the command's
parameters, can end anywhere but in the encoding of the model's new state,
or report anything but the model's reply. It must not: every model of the
oracle constraints gives exactly the model's post-state and reply. The
oracle constraints must also be satisfiable (an encoding that admits no
behaviour would pass vacuously).

IDs and clock readings are drawn near the boundaries (0, 1, the maximum),
where the arithmetic is delicate.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from errno import EDOM
from types import SimpleNamespace
from typing import Any

import z3

from xspec.models import Instant, ManualClock, Server, intervals
from xspec.models import lag as model_lag
from xspec.models.cerrno import note_id_parse
from xspec.models.server import CommandError
from xspec.models.state import Client, Group, Stream
from xspec.proofs import clients, ids, steps
from xspec.proofs.clients import ClientState
from xspec.proofs.concrete import Consumers, differences, encode
from xspec.proofs.ids import ID_SORT, U64, ZERO, id_value
from xspec.proofs.state import State
from xspec.proofs.steps import Step
from xspec.spec import commands as table
from xspec.spec import ids as spec_ids
from xspec.spec.errors import ERR_START_INTERVAL
from xspec.spec.ids import I64_MAX, I64_MIN, MAX_ID, U64_MAX, StreamID, parse_id
from xspec.spec.limits import AUTOCLAIM_ATTEMPTS_FACTOR, AUTOCLAIM_DEFAULT_COUNT
from xspec.spec.resp import Array, Bulk, Error, Int, Reply

KEY, GROUP = b"s", b"g"
CONSUMER_NAMES = (b"alice", b"bob", b"carol")
_EDGE = (0, 1, 2, 3, 7, 1 << 63, U64_MAX - 1, U64_MAX)


class Mismatch(AssertionError):
    """The encoding and the model disagree (or the encoding admits no behaviour)."""


def _half(rng: random.Random) -> int:
    return rng.choice(_EDGE) if rng.random() < 0.8 else rng.randrange(1 << 64)


def _id_arg(rng: random.Random, near: StreamID | None = None) -> bytes:
    """An ID argument: near a boundary, or near ``near`` (an ID the state holds)."""
    if near is not None and rng.random() < 0.3:
        return near.encode()
    if near is not None and rng.random() < 0.6:
        ms = near.ms if rng.random() < 0.7 else min(max(near.ms + rng.choice((-1, 1)), 0), U64_MAX)
        seq = min(max(near.seq + rng.choice((-1, 0, 1)), 0), U64_MAX)
        return b"%d-%d" % (ms, seq)
    return b"%d-%d" % (_half(rng), _half(rng))


def _known_ids(server: Server) -> list[StreamID]:
    stream = server.dbs[0].get(KEY)
    if not isinstance(stream, Stream):
        return []
    out = list(stream.entries) + [stream.last_id, stream.max_deleted_id]
    for g in stream.groups.values():
        out.extend(g.pel)
        out.append(g.last_id)
    return out


def _near(server: Server, rng: random.Random) -> StreamID | None:
    known = _known_ids(server)
    return rng.choice(known) if known else None


# -- random commands -------------------------------------------------------------------------------
def _xadd(server: Server, rng: random.Random) -> list[bytes]:
    r = rng.random()
    if r < 0.4:
        stream = server.dbs[0].get(KEY)
        top = stream.last_id.ms if isinstance(stream, Stream) else 0
        server.clock.set(_half(rng) if rng.random() < 0.4 else  # type: ignore[attr-defined]
                         min(max(top + rng.choice((-1, 0, 1, 5)), 0), U64_MAX))
        idarg = b"*"
    elif r < 0.7:
        idarg = _id_arg(rng, _near(server, rng))
    else:
        near = _near(server, rng)
        ms = near.ms if near is not None and rng.random() < 0.6 else _half(rng)
        idarg = b"%d-*" % ms
    trim: list[bytes] = []
    if rng.random() < 0.2:
        if rng.random() < 0.5:
            trim = [b"MAXLEN", rng.choice((b"=", b"~")), b"%d" % rng.randrange(4)]
        else:
            trim = [b"MINID", b"=", _id_arg(rng, _near(server, rng))]
    return [b"XADD", KEY, *trim, idarg, b"f", b"v"]


def _xdel(server: Server, rng: random.Random) -> list[bytes]:
    return [b"XDEL", KEY, *(_id_arg(rng, _near(server, rng)) for _ in range(rng.randint(1, 3)))]


def _xtrim(server: Server, rng: random.Random) -> list[bytes]:
    if rng.random() < 0.5:
        return [b"XTRIM", KEY, b"MAXLEN", rng.choice((b"=", b"~")), b"%d" % rng.randrange(5)]
    return [b"XTRIM", KEY, b"MINID", b"=", _id_arg(rng, _near(server, rng))]


def _xsetid(server: Server, rng: random.Random) -> list[bytes]:
    argv = [b"XSETID", KEY, _id_arg(rng, _near(server, rng))]
    if rng.random() < 0.4:
        argv += [b"ENTRIESADDED", b"%d" % rng.choice((0, 1, 3, 10, (1 << 63) - 1))]
    if rng.random() < 0.3:
        argv += [b"MAXDELETEDID", _id_arg(rng, _near(server, rng))]
    return argv


def _setid(server: Server, rng: random.Random) -> list[bytes]:
    target = b"$" if rng.random() < 0.3 else _id_arg(rng, _near(server, rng))
    argv = [b"XGROUP", b"SETID", KEY, GROUP, target]
    if rng.random() < 0.5:
        argv += [b"ENTRIESREAD", b"%d" % rng.choice((-1, 0, 1, 2, 5, (1 << 63) - 1))]
    return argv


def _consumer(rng: random.Random) -> bytes:
    return rng.choice(CONSUMER_NAMES)


def _createconsumer(server: Server, rng: random.Random) -> list[bytes]:
    return [b"XGROUP", b"CREATECONSUMER", KEY, GROUP, _consumer(rng)]


def _delconsumer(server: Server, rng: random.Random) -> list[bytes]:
    return [b"XGROUP", b"DELCONSUMER", KEY, GROUP, _consumer(rng)]


def _read_new(server: Server, rng: random.Random) -> list[bytes]:
    opts = [b"COUNT", b"%d" % rng.randrange(4)] if rng.random() < 0.6 else []
    if rng.random() < 0.2:
        opts.append(b"NOACK")
    return [b"XREADGROUP", b"GROUP", GROUP, _consumer(rng), *opts, b"STREAMS", KEY, b">"]


def _pending_consumer(server: Server, rng: random.Random) -> bytes:
    """Mostly a consumer with pending entries, when there is one: history reads and claims need them."""
    group = _group(server)
    owners = [] if group is None else [c.name for c in group.consumers.values() if c.pel]
    return rng.choice(owners) if owners and rng.random() < 0.8 else _consumer(rng)


def _read_history(server: Server, rng: random.Random) -> list[bytes]:
    opts = [b"COUNT", b"%d" % rng.randrange(3)] if rng.random() < 0.5 else []
    after = b"0" if rng.random() < 0.5 else _id_arg(rng, _near(server, rng))
    return [b"XREADGROUP", b"GROUP", GROUP, _pending_consumer(server, rng), *opts, b"STREAMS", KEY, after]


def _xack(server: Server, rng: random.Random) -> list[bytes]:
    return [b"XACK", KEY, GROUP, *(_pending_id(server, rng) for _ in range(rng.randint(1, 3)))]


def _group(server: Server) -> Group | None:
    stream = server.dbs[0].get(KEY)
    return stream.groups.get(GROUP) if isinstance(stream, Stream) else None


def _pending_id(server: Server, rng: random.Random) -> bytes:
    """Mostly a pending ID (claims need them), else one near the state's IDs."""
    group = _group(server)
    if group is not None and group.pel and rng.random() < 0.7:
        return rng.choice(list(group.pel)).encode()
    return _id_arg(rng, _near(server, rng))


def _min_idle(server: Server, rng: random.Random) -> bytes:
    """A min-idle-time: often exactly some pending entry's idle time (the boundary), else a fixed one."""
    group = _group(server)
    now = server.clock.ms  # type: ignore[attr-defined]
    idle = sorted({now - Instant.exact_ms(n.delivery_time) for n in group.pel.values()} - {0}) if group is not None else []
    if idle and rng.random() < 0.6:
        chosen = rng.choice(idle)
        if I64_MIN <= chosen <= I64_MAX:
            return b"%d" % chosen
    return b"%d" % rng.choice((-5, 0, 1, 10, 1000))


def _xclaim(server: Server, rng: random.Random) -> list[bytes]:
    argv = [b"XCLAIM", KEY, GROUP, _consumer(rng), _min_idle(server, rng),
            *(_pending_id(server, rng) for _ in range(rng.randint(1, 3)))]
    if rng.random() < 0.3:
        argv += [b"IDLE", b"%d" % rng.choice((-1, 0, 5, 5000))]
    elif rng.random() < 0.2:
        argv += [b"TIME", b"%d" % rng.choice((-1, 0, 5, 1 << 62))]
    if rng.random() < 0.3:
        argv += [b"RETRYCOUNT", b"%d" % rng.choice((-1, 0, 3, (1 << 63) - 1))]
    for opt in (b"FORCE", b"JUSTID"):
        if rng.random() < 0.3:
            argv.append(opt)
    if rng.random() < 0.2:
        argv += [b"LASTID", _id_arg(rng, _near(server, rng))]
    return argv


def _xautoclaim(server: Server, rng: random.Random) -> list[bytes]:
    if rng.random() < 0.15:  # a PEL longer than 10 x COUNT 1: the attempts budget runs out (XAUTOCLAIM-6)
        for _ in range(AUTOCLAIM_ATTEMPTS_FACTOR + 1):
            server.execute(1, [b"XADD", KEY, b"*", b"f", b"v"])
        server.execute(1, [b"XREADGROUP", b"GROUP", GROUP, _consumer(rng), b"STREAMS", KEY, b">"])
        return [b"XAUTOCLAIM", KEY, GROUP, _consumer(rng), b"1000000", b"0", b"COUNT", b"1"]
    start = rng.choice((b"0", b"-", b"(" + _id_arg(rng, _near(server, rng)), _pending_id(server, rng)))
    argv = [b"XAUTOCLAIM", KEY, GROUP, _consumer(rng), _min_idle(server, rng), start]
    if rng.random() < 0.6:
        argv += [b"COUNT", b"%d" % rng.randint(1, 3)]
    elif rng.random() < 0.5:
        argv += [b"COUNT", b"1"]
    if rng.random() < 0.3:
        argv.append(b"JUSTID")
    return argv


def _read_only(server: Server, rng: random.Random) -> list[bytes]:
    """A command that reads the stream or group without changing them (XRANGE-6, XREAD-*, XPENDING-*, XINFO-*)."""
    bound = _id_arg(rng, _near(server, rng))
    return rng.choice((
        [b"XRANGE", KEY, b"-", b"+"], [b"XREVRANGE", KEY, b"+", bound, b"COUNT", b"2"], [b"XLEN", KEY],
        [b"XREAD", b"STREAMS", KEY, bound], [b"XPENDING", KEY, GROUP],
        [b"XPENDING", KEY, GROUP, b"IDLE", b"1", b"-", b"+", b"10", _consumer(rng)],
        [b"XINFO", b"STREAM", KEY, b"FULL"], [b"XINFO", b"GROUPS", KEY], [b"XINFO", b"CONSUMERS", KEY, GROUP]))


def _tick(server: Server, rng: random.Random) -> list[bytes]:
    clock: ManualClock = server.clock  # type: ignore[assignment]
    clock.set(min(clock.ms + rng.choice((0, 1, 10, 5000)), U64_MAX))
    return []


Generator = Callable[[Server, random.Random], list[bytes]]
PREFIX: list[tuple[Generator, int]] = [
    (_xadd, 10), (_xdel, 2), (_xtrim, 1), (_xsetid, 1), (_setid, 1), (_createconsumer, 1), (_delconsumer, 1),
    (_read_new, 5), (_read_history, 2), (_xack, 2), (_xclaim, 3), (_xautoclaim, 2), (_tick, 3),
]


def random_server(rng: random.Random, length: int) -> Server:
    """A model server after ``length`` random commands on one stream with one group."""
    server = Server(clock=ManualClock(rng.choice((0, 1000, 1 << 40))))
    server.execute(1, [b"XGROUP", b"CREATE", KEY, GROUP, b"0", b"MKSTREAM"])
    if rng.random() < 0.7:  # a few entries read by someone: most interesting states have pending entries
        for _ in range(rng.randint(1, 4)):
            server.execute(1, [b"XADD", KEY, b"*", b"f", b"v"])
            _tick(server, rng)
        server.execute(1, _read_new(server, rng))
        _tick(server, rng)
    gens, weights = zip(*PREFIX, strict=True)
    for _ in range(length):
        argv = rng.choices(gens, weights)[0](server, rng)
        if argv:
            server.execute(1, argv)
    return server


# -- one check ------------------------------------------------------------------------------------------
@dataclass
class Sample:
    """What one command did on the model, and the encoding's account of it."""

    argv: list[bytes]
    pre: State
    post: State  # the model's post-state, encoded
    reply: Reply
    consumers: Consumers
    now: int
    errno: int  # the model's errno after parsing the command's ID (XADD-14)
    stream: Stream  # the model's stream after the command
    pre_pending: list[StreamID]  # the group PEL before the command, in ID order
    side: list[z3.BoolRef] = field(default_factory=list)
    claims: list[z3.BoolRef] = field(default_factory=list)  # what the encoding's run must also satisfy

    def expect(self, condition: z3.BoolRef) -> None:
        self.claims.append(condition)


def _state(server: Server, consumers: Consumers) -> tuple[Stream, State]:
    stream = server.dbs[0][KEY]
    assert isinstance(stream, Stream)
    return stream, encode(stream, stream.groups.get(GROUP), consumers)


def _bulk_id(r: Reply) -> z3.BitVecRef:
    assert isinstance(r, Bulk)
    i = parse_id(r.value, strict=True)
    assert i is not None
    return id_value(i.id)


def _ids_of(entries: Reply) -> list[z3.BitVecRef]:
    """The IDs of an array of entry replies or ID replies."""
    assert isinstance(entries, Array)
    return [_bulk_id(e.items[0] if isinstance(e, Array) else e) for e in entries.items]


def _error_text(r: Reply) -> str | None:
    return r.text if isinstance(r, Error) else None


def _stream_entries(reply: Reply) -> Reply:
    """The entries of the one stream a read reply holds (RESP2), or an empty array for nil."""
    if not isinstance(reply, Array):
        return Array(())
    return reply.items[0].items[1]  # type: ignore[union-attr]


# -- the encodings of whole commands ----------------------------------------------------------------
def _code_of(errors: dict[int, str], ok: int, reply: Reply) -> int:
    text = _error_text(reply)
    if text is None:
        return ok
    codes = [code for code, t in errors.items() if t == text]
    if not codes:
        raise Mismatch(f"an error the encoding does not know: {text}")
    return codes[0]


def _run_xadd(x: Sample) -> State:
    argv = x.argv
    idarg = argv[-3]
    if idarg == b"*":
        form, given = steps.AUTO, ZERO
    else:
        parsed = parse_id(idarg, strict=True, allow_auto_seq=True)
        assert parsed is not None
        form, given = (steps.EXPLICIT if parsed.seq_given else steps.MS_STAR), id_value(parsed.id)
    step = steps.xadd(x.pre, z3.IntVal(form), given, z3.BitVecVal(x.now, U64), z3.BoolVal(x.errno == EDOM))
    x.side.extend(step.side)
    x.expect(step.out["outcome"] == _code_of(steps.XADD_ERRORS, steps.OK, x.reply))
    if isinstance(x.reply, Bulk):
        x.expect(step.out["id"] == _bulk_id(x.reply))
    state = step.post
    if len(argv) > 6 and isinstance(x.reply, Bulk):  # XADD-18: then the trim
        state = _run_trim(x, state, argv[2:5])
    return state


def _run_trim(x: Sample, state: State, strategy: list[bytes]) -> State:
    """A trim: the encoding's prefix removal, with as many entries as the model removed."""
    removed = z3.IntVal(_length(state) - x.stream.length)
    step = steps.trim(state, removed)
    x.side.extend(step.side)
    if strategy[1] == b"=":  # an exact trim removes exactly what its rule says
        if strategy[0].upper() == b"MAXLEN":
            x.expect(removed == steps.exact_maxlen(state, z3.IntVal(int(strategy[2]))))
        else:
            minid = parse_id(strategy[2], strict=True)
            assert minid is not None
            x.expect(steps.exact_minid(state, removed, id_value(minid.id)))
    return step.post


def _length(state: State) -> int:
    """The length of a concrete encoded state."""
    return z3.simplify(state.L).as_long()  # type: ignore[attr-defined]


def _run_xtrim(x: Sample) -> State:
    return _run_trim(x, x.pre, x.argv[2:5])


def _per_id(x: Sample, first: int, step_of: Callable[[State, z3.BitVecRef], Step], counted: str) -> State:
    """A command that handles its IDs one by one (XDEL, XACK) and replies how many counted."""
    state = x.pre
    flags: list[z3.BoolRef] = []
    for arg in x.argv[first:]:
        parsed = parse_id(arg, strict=True)
        assert parsed is not None
        step = step_of(state, id_value(parsed.id))
        flags.append(step.out[counted])
        state = step.post
    assert isinstance(x.reply, Int)
    x.expect(z3.Sum([z3.If(f, 1, 0) for f in flags]) == x.reply.value)
    return state


def _run_xdel(x: Sample) -> State:
    return _per_id(x, 2, steps.xdel, "deleted")


def _run_xsetid(x: Sample) -> State:
    argv = x.argv
    last = parse_id(argv[2], strict=True)
    assert last is not None
    opts = dict(zip(argv[3::2], argv[4::2], strict=True))
    added = opts.get(b"ENTRIESADDED")
    md = opts.get(b"MAXDELETEDID")
    max_deleted = ZERO if md is None else id_value(parse_id(md, strict=True).id)  # type: ignore[union-attr]
    step = steps.xsetid(x.pre, id_value(last.id), z3.BoolVal(added is not None),
                        z3.IntVal(0 if added is None else int(added)), max_deleted)
    x.side.extend(step.side)
    x.expect(step.out["outcome"] == _code_of(steps.XSETID_ERRORS, steps.SETID_OK, x.reply))
    return step.post


def _run_setid(x: Sample) -> State:
    argv = x.argv
    target = x.pre.T if argv[4] == b"$" else id_value(parse_id(argv[4], strict=False).id)  # type: ignore[union-attr]
    entries_read = int(argv[6]) if len(argv) > 6 else -1
    step = steps.group_setid(x.pre, target, z3.IntVal(entries_read))
    x.side.extend(step.side)
    return step.post


def _run_createconsumer(x: Sample) -> State:
    step = steps.create_consumer(x.pre, x.consumers.number(x.argv[4]))
    assert isinstance(x.reply, Int)
    x.expect(step.out["created"] == (x.reply.value == 1))
    return step.post


def _run_delconsumer(x: Sample) -> State:
    return steps.delete_consumer(x.pre, x.consumers.number(x.argv[4])).post


def _count_option(argv: list[bytes]) -> int:
    """COUNT n of a read, 0 (no limit) when absent or not positive."""
    upper = [a.upper() for a in argv]
    return max(int(argv[upper.index(b"COUNT") + 1]), 0) if b"COUNT" in upper else 0


def _run_read_new(x: Sample) -> State:
    c = x.consumers.number(x.argv[3])
    noack = z3.BoolVal(b"NOACK" in x.argv)
    count = _count_option(x.argv)
    delivered = _ids_of(_stream_entries(x.reply))
    state = x.pre
    for want in delivered:
        step = steps.deliver(state, c, z3.IntVal(x.now), noack)
        x.side.extend(step.side)
        x.expect(z3.And(step.out["found"], step.out["id"] == want))
        state = step.post
    if not count or len(delivered) < count:  # the loop stopped because nothing was left
        step = steps.deliver(state, c, z3.IntVal(x.now), noack)
        x.side.extend(step.side)
        x.expect(z3.Not(step.out["found"]))
    return state


def _run_read_history(x: Sample) -> State:
    c = x.consumers.number(x.argv[3])
    after = parse_id(x.argv[-1], strict=True)
    assert after is not None
    if after.id == MAX_ID:  # XREADGROUP-8: the maximum ID reads like ">"
        return _run_read_new(x)
    position = id_value(after.id)
    count = _count_option(x.argv)
    read = _ids_of(_stream_entries(x.reply))
    state = x.pre
    universe = [id_value(i) for i in x.pre_pending]  # a consumer's PEL is part of the group's
    for want in read:
        step = steps.redeliver(state, c, position, z3.IntVal(x.now), universe)
        x.side.extend(step.side)
        x.expect(z3.And(step.out["found"], step.out["id"] == want))
        state, position = step.post, want
    if not count or len(read) < count:
        step = steps.redeliver(state, c, position, z3.IntVal(x.now), universe)
        x.side.extend(step.side)
        x.expect(z3.Not(step.out["found"]))
        state = step.post
    return state


def _run_xack(x: Sample) -> State:
    return _per_id(x, 3, steps.xack, "acked")


def _run_xclaim(x: Sample) -> State:
    argv = x.argv
    c = x.consumers.number(argv[3])
    j = 5
    entry_ids = []
    while j < len(argv):
        parsed = parse_id(argv[j], strict=True)
        if parsed is None:
            break
        entry_ids.append(id_value(parsed.id))
        j += 1
    options: dict[bytes, bytes] = {}
    flags = set()
    while j < len(argv):
        if argv[j] in (b"FORCE", b"JUSTID"):
            flags.add(argv[j])
            j += 1
        else:
            options[argv[j]] = argv[j + 1]
            j += 2
    has_time = b"IDLE" in options or b"TIME" in options
    time = x.now - int(options[b"IDLE"]) if b"IDLE" in options else int(options.get(b"TIME", b"0"))
    last = parse_id(options.get(b"LASTID", b"0-0"), strict=True)
    assert last is not None
    state = x.pre
    claimed = []  # the IDs the encoding claims, in order (XCLAIM has no oracle: each flag is a constant)
    for entry_id in entry_ids:
        step = steps.xclaim(state, entry_id, c, z3.IntVal(int(argv[4])), z3.IntVal(x.now),
                            force=z3.BoolVal(b"FORCE" in flags), justid=z3.BoolVal(b"JUSTID" in flags),
                            retry=z3.BitVecVal(int(options.get(b"RETRYCOUNT", b"-1")) & U64_MAX, U64),
                            has_time=z3.BoolVal(has_time), time=z3.IntVal(time), last_id=id_value(last.id))
        flag = z3.simplify(step.out["claimed"])
        if not (z3.is_true(flag) or z3.is_false(flag)):
            raise Mismatch(f"{_show(argv)}: the claim of {entry_id} does not evaluate")
        if z3.is_true(flag):
            claimed.append(entry_id)
        state = step.post
    want = _ids_of(x.reply)
    x.expect(z3.BoolVal(len(claimed) == len(want)))
    x.expect(z3.And(*(a == b for a, b in zip(claimed, want, strict=False))))
    return state


def _run_xautoclaim(x: Sample) -> State:
    argv = x.argv
    c = x.consumers.number(argv[3])
    justid = z3.BoolVal(b"JUSTID" in argv)
    count = int(argv[argv.index(b"COUNT") + 1]) if b"COUNT" in argv else AUTOCLAIM_DEFAULT_COUNT
    start_arg = argv[5]
    exclusive = start_arg.startswith(b"(")
    start = parse_id(start_arg[1:] if exclusive else start_arg, strict=False)
    assert start is not None
    valid, position = ids.interval_start(id_value(start.id), z3.BoolVal(exclusive))
    if isinstance(x.reply, Error):  # XAUTOCLAIM-2: an exclusive start without a successor
        x.expect(z3.And(z3.Not(valid), z3.BoolVal(x.reply.text == ERR_START_INTERVAL)))
        return x.pre
    x.expect(valid)
    state = x.pre
    resumable: z3.BoolRef = z3.BoolVal(True)
    attempts: z3.ArithRef = z3.IntVal(count * AUTOCLAIM_ATTEMPTS_FACTOR)
    left: z3.ArithRef = z3.IntVal(count)
    claimed = z3.K(ID_SORT, z3.BoolVal(False))
    deleted = z3.K(ID_SORT, z3.BoolVal(False))
    universe = [id_value(i) for i in x.pre_pending]  # the walk only removes pending entries
    for _ in range(len(universe) + 1):  # and visits each at most once
        active = z3.And(resumable, attempts > 0, left > 0)
        step = steps.autoclaim_visit(state, position, c, z3.IntVal(int(argv[4])), z3.IntVal(x.now), justid,
                                     universe)
        x.side.extend(step.side)
        visit = z3.And(active, step.out["found"])
        state = choose(visit, step.post, state)
        attempts = z3.If(visit, attempts - 1, attempts)
        left = z3.If(z3.And(visit, z3.Or(step.out["deleted"], step.out["claimed"])), left - 1, left)
        claimed = z3.If(z3.And(visit, step.out["claimed"]), z3.Store(claimed, step.out["id"], True), claimed)
        deleted = z3.If(z3.And(visit, step.out["deleted"]), z3.Store(deleted, step.out["id"], True), deleted)
        resumable = z3.If(active, z3.And(step.out["found"], step.out["has_next"]), resumable)
        position = z3.If(visit, step.out["next"], position)
    cursor, side = steps.autoclaim_cursor(state, position, resumable, universe)
    x.side.extend(side)
    assert isinstance(x.reply, Array)
    x.expect(cursor == _bulk_id(x.reply.items[0]))
    x.expect(claimed == _set(_ids_of(x.reply.items[1])))
    x.expect(deleted == _set(_ids_of(x.reply.items[2])))
    return state


def _set(members: list[z3.BitVecRef]) -> z3.ArrayRef:
    out = z3.K(ID_SORT, z3.BoolVal(False))
    for m in members:
        out = z3.Store(out, m, True)
    return out


def choose(cond: z3.BoolRef, a: State, b: State) -> State:
    """``a`` where ``cond`` holds, else ``b``, field by field."""
    return State(**{name: z3.If(cond, value, getattr(b, name)) for name, value in a.field_items()})


Runner = Callable[[Sample], State]
COMMANDS: dict[str, tuple[Generator, Runner]] = {
    "XADD": (_xadd, _run_xadd),
    "XDEL": (_xdel, _run_xdel),
    "XTRIM": (_xtrim, _run_xtrim),
    "XSETID": (_xsetid, _run_xsetid),
    "XGROUP SETID": (_setid, _run_setid),
    "XGROUP CREATECONSUMER": (_createconsumer, _run_createconsumer),
    "XGROUP DELCONSUMER": (_delconsumer, _run_delconsumer),
    "XREADGROUP >": (_read_new, _run_read_new),
    "XREADGROUP history": (_read_history, _run_read_history),
    "XACK": (_xack, _run_xack),
    "XCLAIM": (_xclaim, _run_xclaim),
    "XAUTOCLAIM": (_xautoclaim, _run_xautoclaim),
    "read-only commands": (_read_only, lambda x: x.pre),
}


def _errno_after_parse(server: Server, argv: list[bytes]) -> int:
    """The errno the model leaves after parsing XADD's ID (the model's own helper, on a scratch call)."""
    scratch: Any = SimpleNamespace(server=SimpleNamespace(errno=server.errno))
    if argv[0] == b"XADD" and argv[-3] != b"*":
        note_id_parse(scratch, argv[-3], allow_auto_seq=True)
    return scratch.server.errno


def check_once(command: str, rng: random.Random, prefix: int = 8) -> str | None:
    """One random sample of ``command``: None when the encoding agrees with the model, else why not.

    Samples whose command fails before touching the state (a parse error) are
    still checked: the encoding must leave the state unchanged.
    """
    generate, run = COMMANDS[command]
    server = random_server(rng, rng.randint(0, prefix))
    argv = generate(server, rng)
    consumers = Consumers()
    stream, pre = _state(server, consumers)
    group = stream.groups.get(GROUP)
    pre_pending = [] if group is None else list(group.pel)
    now = server.clock.ms  # type: ignore[attr-defined]
    errno = _errno_after_parse(server, argv)
    reply = server.execute(1, argv).reply
    assert reply is not None
    stream, post = _state(server, consumers)
    sample = Sample(argv, pre, post, reply, consumers, now, errno, stream, pre_pending)
    if isinstance(reply, Error) and any(w in reply.text for w in ("Invalid", "syntax", "not an integer")):
        return _compare(sample, pre)  # an argument the command refuses: nothing may change
    try:
        mine = run(sample)
    except (Mismatch, AssertionError) as e:  # a reply of a shape the command never gives
        return f"{_show(argv)}: {e or 'unexpected reply ' + repr(reply)}"
    return _compare(sample, mine)


def _compare(x: Sample, mine: State) -> str | None:
    solver = z3.Solver()
    solver.set(timeout=10_000)
    solver.add(*x.side)
    if solver.check() != z3.sat:
        return f"{_show(x.argv)}: the encoding admits no behaviour"
    diffs = differences(mine, x.post)
    bad = [*diffs, *(("reply", z3.Not(c)) for c in x.claims)]
    solver.add(z3.Or(*(d for _, d in bad)))
    answer = solver.check()
    if answer == z3.unsat:
        return None
    if answer == z3.unknown:
        return f"{_show(x.argv)}: unknown ({solver.reason_unknown()})"
    m = solver.model()
    which = [name for name, d in bad if z3.is_true(m.eval(d, model_completion=True))]
    return f"{_show(x.argv)}: the encoding differs from the model in {', '.join(which)}"


# -- the lag helpers, on synthetic states ------------------------------------------------------------
_LAG_IDS = [StreamID(0, n) for n in range(6)] + [StreamID(U64_MAX, U64_MAX)]
_COUNTERS = (0, 1, 2, 3, 5, 6, (1 << 63) - 1, 1 << 63, U64_MAX)


def check_lag_once(rng: random.Random) -> str | None:
    """The model's LAG-1 .. LAG-4 helpers against the encoding's, on a random stream and group.

    The state need not be reachable: the helpers are pure functions of a few
    fields, and the encoding must agree with them everywhere.
    """
    stream = Stream()
    live = sorted(rng.sample(_LAG_IDS[1:-1], rng.randint(0, 3)))
    for i in live:
        stream.entries[i] = (b"f", b"v")
    stream.first_id = live[0] if live else StreamID(0, 0)
    stream.last_id = rng.choice(_LAG_IDS[len(live) and _LAG_IDS.index(live[-1]):])
    stream.max_deleted_id = rng.choice(_LAG_IDS)
    stream.entries_added = rng.choice(_COUNTERS)
    group = Group(GROUP, rng.choice(_LAG_IDS), rng.choice((-1, 0, 1, 2, 4, (1 << 63) - 1)))
    state = encode(stream, group, Consumers())
    entry = rng.choice(_LAG_IDS)
    defined, value = steps.lag(state)
    want = model_lag.group_lag(stream, group)
    got_defined = z3.is_true(z3.simplify(defined))
    facts = {
        "LAG-1": (z3.is_true(z3.simplify(steps.tombstone_after(state, id_value(entry)))),
                  model_lag.range_has_tombstones(stream, entry)),
        "LAG-2": (z3.simplify(steps.estimate(state, id_value(entry))).as_long(),  # type: ignore[attr-defined]
                  model_lag.estimate_entries_read(stream, entry)),
        "LAG-3": (z3.simplify(value).as_long() if got_defined else None, want),  # type: ignore[attr-defined]
        "LAG-4": (z3.simplify(steps.advanced_entries_read(state, id_value(entry))).as_long(),  # type: ignore[attr-defined]
                  _advanced(stream, group, entry)),
    }
    wrong = [f"{rule}: encoding {mine}, model {theirs}" for rule, (mine, theirs) in facts.items() if mine != theirs]
    if wrong:
        return (f"stream {live} T={stream.last_id} D={stream.max_deleted_id} A={stream.entries_added}, group at "
                f"{group.last_id} R={group.entries_read}, entry {entry}: " + "; ".join(wrong))
    return None


def check_ids_once(rng: random.Random) -> str | None:
    """ID-5, ID-8, ID-9: the encoding's successor, predecessor and range bounds against the model's.

    A range bound is given as XRANGE would get it (``ms``, ``ms-seq``, with or
    without ``(``), read by the model's own ``interval_start``/``interval_end``;
    the encoding completes and shifts the same ID.
    """
    i = StreamID(_half(rng), _half(rng))
    v = id_value(i)
    problems = []
    for name, mine, theirs in (("successor", ids.successor(v), spec_ids.successor(i)),
                               ("predecessor", ids.predecessor(v), spec_ids.predecessor(i))):
        defined, value = (z3.simplify(t) for t in mine)
        got = ids.as_stream_id(value.as_long()) if z3.is_true(defined) else None  # type: ignore[attr-defined]
        if got != theirs:
            problems.append(f"{name}({i}): encoding {got}, model {theirs}")
    exclusive = rng.random() < 0.5
    text = (b"(" if exclusive else b"") + (b"%d" % i.ms if rng.random() < 0.5 else i.encode())
    missing_ms_only = b"-" not in text
    for name, model_bound, encoded, missing in (("start", intervals.interval_start, ids.interval_start, 0),
                                                ("end", intervals.interval_end, ids.interval_end, U64_MAX)):
        scratch: Any = SimpleNamespace(server=SimpleNamespace(errno=0))
        try:
            model_says: StreamID | None = model_bound(scratch, text)
        except CommandError:
            model_says = None
        given = ids.incomplete(ids.ms(v), missing) if missing_ms_only else v
        valid, bound = (z3.simplify(t) for t in encoded(given, z3.BoolVal(exclusive)))
        got = ids.as_stream_id(bound.as_long()) if z3.is_true(valid) else None  # type: ignore[attr-defined]
        if got != model_says:
            problems.append(f"{name} bound {text.decode()}: encoding {got}, model {model_says}")
    return "; ".join(problems) or None


_CLIENT_COMMANDS: list[tuple[int, list[bytes]]] = [
    (clients.MULTI, [b"MULTI"]), (clients.EXEC, [b"EXEC"]), (clients.DISCARD, [b"DISCARD"]),
    (clients.RESET, [b"RESET"]), (clients.WATCH, [b"WATCH", KEY]), (clients.UNWATCH, [b"UNWATCH"]),
    (clients.OTHER, [b"XLEN", KEY]), (clients.OTHER, [b"XREAD", b"BLOCK", b"0", b"STREAMS", KEY, b"$"]),
    (clients.OTHER, [b"NOSUCHCOMMAND"]), (clients.OTHER, [b"XLEN"]), (clients.EXEC, [b"EXEC", b"extra"]),
]


def _client_state(c: Client | None) -> ClientState:
    if c is None:  # not connected yet: a new connection's state (CONN-2)
        return ClientState(z3.BoolVal(False), z3.IntVal(0), z3.BoolVal(False), z3.BoolVal(False), z3.BoolVal(False))
    return ClientState(z3.BoolVal(c.in_multi), z3.IntVal(len(c.multi_queue)), z3.BoolVal(c.multi_error),
                       z3.BoolVal(c.dirty_cas), z3.BoolVal(c.blocked is not None))


def check_client_once(rng: random.Random) -> str | None:
    """INV-10, INV-11: a random session of client 1 (transactions, watches, a blocking read) against
    :func:`clients.command`, with client 2 writing the watched key and waking the blocked read."""
    server = Server(clock=ManualClock(1000))
    server.execute(2, [b"XADD", KEY, b"*", b"f", b"v"])
    for _ in range(rng.randint(1, 12)):
        c = server.clients.get(1)
        pre = _client_state(c)
        if (c is not None and c.blocked is not None) or rng.random() < 0.2:
            server.execute(2, [b"XADD", KEY, b"*", b"f", b"v"])
            c = server.clients[1] if 1 in server.clients else None
            touched = c is not None and c.dirty_cas
            woken = c is None or c.blocked is None
            mine = clients.others(pre, z3.BoolVal(touched), z3.BoolVal(woken))
            argv = [b"(client 2) XADD", KEY]
        else:
            kind, argv = rng.choice(_CLIENT_COMMANDS)
            spec = table.lookup(argv)
            in_multi = c is not None and c.in_multi
            rejected = (spec is None or not spec.arity_ok(len(argv))  # DISPATCH-1, DISPATCH-2
                        or (in_multi and "no_multi" in spec.flags and spec.fullname not in table.RUN_INSIDE_MULTI))
            outcome = server.execute(1, argv)
            mine = clients.command(pre, z3.IntVal(kind), z3.BoolVal(rejected), z3.BoolVal(outcome.blocked))
        post = _client_state(server.clients.get(1))
        for name in ("M", "Q", "X", "W", "B"):
            if not z3.is_true(z3.simplify(getattr(mine, name) == getattr(post, name))):
                return f"{_show(argv)}: the encoding's {name} is {z3.simplify(getattr(mine, name))}, the model's " \
                       f"{getattr(post, name)}"
    return None


def _advanced(stream: Stream, group: Group, entry: StreamID) -> int:
    copy = Group(group.name, group.last_id, group.entries_read)
    model_lag.advance_group(stream, copy, entry)
    return copy.entries_read


def _show(argv: list[bytes]) -> str:
    return " ".join(a.decode("latin-1") for a in argv)


@dataclass
class Report:
    samples: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


LAG_HELPERS = "lag helpers"
ID_HELPERS = "ID helpers"
CLIENT_SESSIONS = "client sessions"
HELPERS = {LAG_HELPERS: check_lag_once, ID_HELPERS: check_ids_once, CLIENT_SESSIONS: check_client_once}


def cross_check(samples: int, seed: int = 0, commands: list[str] | None = None) -> Report:
    """``samples`` random samples spread over ``commands`` (all commands and helpers by default)."""
    rng = random.Random(seed)
    names = commands or [*COMMANDS, *HELPERS]
    report = Report()
    for n in range(samples):
        name = names[n % len(names)]
        problem = HELPERS[name](rng) if name in HELPERS else check_once(name, rng)
        report.samples[name] += 1
        if problem is not None:
            report.failures.append(problem)
    return report

