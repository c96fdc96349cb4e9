"""The reference server's stream handlers against the model, command for command.

The handlers (xspec.reference.xcommands) run inside a small fake core written
here: databases, a manual clock, MULTI/EXEC, DEL/UNLINK/SET, FIFO wake-ups of
blocked readers and their timeouts, the shared errno. The model
(xspec.models.server.Server, verified against Redis 7.0.15) runs the same
steps; every reply, every reply a blocked client receives, which clients are
blocked, which keys are signalled as modified (WATCH), and whether errno is
EDOM (the only errno value a client can see, XADD-14) must agree, and at the
end of a sequence every stream in full (XINFO STREAM FULL, XRANGE, XINFO
GROUPS and CONSUMERS). Sequences come from Hypothesis (shrinkable, mixed RESP2
and RESP3 clients) and from the fuzzer's generator (traces/fuzz/generate.py).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Sequence
from errno import EAGAIN, EDOM
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xspec.models import ManualClock
from xspec.models.server import Server
from xspec.reference.api import BLOCKED, Blocked, Encoded, ReplyError
from xspec.reference.protocol import decoded
from xspec.reference.streams import MAX_KEY as MAX_ID_KEY
from xspec.reference.streams import RaxShape, Stream, rax_key
from xspec.reference.xcommands import HANDLERS
from xspec.spec import commands as table
from xspec.spec.dialect import REDIS_70
from xspec.spec.resp import OK, QUEUED, Array, Error, Int, Reply, for_protocol, show
from xspec.traces.fuzz.generate import PROFILES, Generator, Profile, Step, random_config, resolve

START_MS = 1_700_000_000_000


# -- a fake core ------------------------------------------------------------------------------


class FakeClient:
    def __init__(self, cid: int) -> None:
        self.id = cid
        self.name = b""
        self.proto = 2
        self.db = 0
        self.in_multi = False
        self.queue: list[list[bytes]] = []
        self.doomed = False


class Waiter:
    """A blocked client: keys, deadline, what to do when a key is signalled or time runs out."""

    def __init__(self, keys: list[bytes], deadline: int | None,
                 retry: Callable[[Any, bytes], Reply | Encoded | None], timeout_reply: Reply) -> None:
        self.keys = list(dict.fromkeys(keys))
        self.deadline = deadline
        self.retry = retry
        self.timeout_reply = timeout_reply


class FakeContext:
    """What xspec.reference.api.Context promises, over a :class:`FakeCore`."""

    dialect = REDIS_70

    def __init__(self, core: FakeCore, client: FakeClient, argv: list[bytes], can_block: bool = True) -> None:
        self.core = core
        self.client = client
        self.argv = argv
        self.db = core.dbs[client.db]
        self.can_block = can_block

    @property
    def errno(self) -> int:
        return self.core.errno

    @errno.setter
    def errno(self, value: int) -> None:
        self.core.errno = value

    def now_ms(self) -> int:
        return self.core.now

    def clock(self) -> Callable[[], int]:
        return self.now_ms

    def config_int(self, name: str) -> int:
        return int(self.core.config[name])

    def modified(self, key: bytes) -> None:
        self.core.touched.append((self.client.db, key))

    def ready(self, key: bytes) -> None:
        self.core.signal(self.client.db, key)

    def changed(self, n: int = 1) -> None:
        self.core.dirty += n

    def deleted(self, key: bytes) -> None:
        self.core.touched.append((self.client.db, key))
        self.core.signal(self.client.db, key)

    def block(self, keys: list[bytes], timeout_ms: int, retry: Callable[[Any, bytes], Reply | Encoded | None],
              timeout_reply: Reply, read_at: int | None = None) -> Blocked:
        core = self.core
        start = core.now if read_at is None else read_at
        core.waiters[self.client.id] = Waiter(keys, None if timeout_ms == 0 else start + timeout_ms,
                                              retry, timeout_reply)
        for k in dict.fromkeys(keys):
            core.queues.setdefault((self.client.db, k), []).append(self.client.id)
        return BLOCKED


class FakeCore:
    """Dispatch, transactions, a few keyspace commands, blocking: just enough to drive the handlers."""

    def __init__(self, config: dict[str, str], now: int = START_MS) -> None:
        self.config = {"stream-node-max-entries": "100", "stream-node-max-bytes": "4096", **config}
        self.now = now
        self.errno = 0
        self.dbs: list[dict[bytes, Any]] = [{} for _ in range(16)]
        self.clients: dict[int, FakeClient] = {}
        self.waiters: dict[int, Waiter] = {}
        self.queues: dict[tuple[int, bytes], list[int]] = {}
        self.ready_keys: dict[tuple[int, bytes], None] = {}
        self.touched: list[tuple[int, bytes]] = []  # keys signalled as modified (WATCH), in order
        self.dirty = 0  # the handlers' count of changes (STATS-4)

    def connect(self, cid: int) -> FakeClient:
        c = self.clients[cid] = FakeClient(cid)
        self.errno = EAGAIN  # the accept loop ends on EAGAIN
        return c

    def signal(self, db: int, key: bytes) -> None:
        if (db, key) in self.queues:
            self.ready_keys[(db, key)] = None

    def execute(self, cid: int, argv: list[bytes]) -> tuple[Reply | None, list[tuple[int, Reply]]]:
        """One command: (the rendered reply or None when it blocked, replies of served clients)."""
        c = self.clients.get(cid) or self.connect(cid)
        reply = self._dispatch(c, argv)
        served = self._handle_ready()
        return reply, served

    def _dispatch(self, c: FakeClient, argv: list[bytes]) -> Reply | None:
        spec = table.lookup(argv)
        if spec is None or not spec.arity_ok(len(argv)):
            if c.in_multi:
                c.doomed = True
            text = table.unknown_command_error(argv) if spec is None else table.arity_error(spec)
            return for_protocol(Error(text), c.proto)
        name = spec.fullname
        if name == "multi":
            if c.in_multi:
                return Error("ERR MULTI calls can not be nested")
            c.in_multi = True
            return OK
        if name in ("exec", "discard"):
            if not c.in_multi:
                return Error(f"ERR {name.upper()} without MULTI")
            queue, doomed = c.queue, c.doomed
            c.in_multi, c.queue, c.doomed = False, [], False
            if name == "discard":
                return OK
            if doomed:
                return Error(table.EXECABORT)
            return Array(tuple(self._run(c, q, can_block=False) for q in queue))
        if c.in_multi:
            c.queue.append(argv)
            return QUEUED
        return self._run(c, argv, can_block=True)

    def _run(self, c: FakeClient, argv: list[bytes], can_block: bool) -> Reply | None:
        spec = table.lookup(argv)
        assert spec is not None
        ctx = FakeContext(self, c, argv, can_block)
        try:
            if spec.fullname in ("del", "unlink"):
                r: Reply | Encoded | Blocked = Int(sum(self._drop(ctx, k) for k in argv[1:]))
            elif spec.fullname == "config|set":
                name = argv[2].decode().lower()
                assert name in ("stream-node-max-entries", "stream-node-max-bytes") and len(argv) == 4
                if name == "stream-node-max-bytes":
                    self.errno = 0  # memtoull's strtoull (XADD-14)
                self.config[name] = argv[3].decode()
                r = OK
            elif spec.fullname == "set":
                old = ctx.db.get(argv[1])
                ctx.db[argv[1]] = argv[2]
                self._lost(ctx, argv[1], old)
                r = OK
            else:
                r = HANDLERS[spec.fullname](ctx)
        except ReplyError as e:
            r = Error(e.text)
        if isinstance(r, Blocked):
            return None
        return for_protocol(decoded(r), c.proto)

    def _drop(self, ctx: FakeContext, key: bytes) -> int:
        old = ctx.db.pop(key, None)
        if old is not None:
            self._lost(ctx, key, old)
        return old is not None

    def _lost(self, ctx: FakeContext, key: bytes, old: Any) -> None:
        """A key's value was removed or replaced: WATCH sees it; blocked readers too, if it was a stream."""
        if isinstance(old, Stream):
            ctx.deleted(key)
        else:
            self.touched.append((ctx.client.db, key))

    def _unblock(self, cid: int) -> Waiter:
        w = self.waiters.pop(cid)
        db = self.clients[cid].db
        for k in w.keys:
            q = self.queues[(db, k)]
            q.remove(cid)
            if not q:
                del self.queues[(db, k)]
        return w

    def _handle_ready(self) -> list[tuple[int, Reply]]:
        served: list[tuple[int, Reply]] = []
        while self.ready_keys:
            for db, key in list(self.ready_keys):
                del self.ready_keys[(db, key)]
                for cid in list(self.queues.get((db, key), ())):
                    if cid not in self.queues.get((db, key), ()):
                        continue
                    c = self.clients[cid]
                    ctx = FakeContext(self, c, [], True)
                    try:
                        r = self.waiters[cid].retry(ctx, key)
                    except ReplyError as e:
                        r = Error(e.text)
                    if r is None:
                        continue
                    self._unblock(cid)
                    served.append((cid, for_protocol(decoded(r), c.proto)))
        return served

    def advance(self, ms: int) -> list[tuple[int, Reply]]:
        """Time passes: clients whose deadline is now behind the clock time out, earliest first."""
        self.now += ms
        due = sorted((w.deadline, cid) for cid, w in self.waiters.items()
                     if w.deadline is not None and w.deadline < self.now)
        out = []
        for _, cid in due:
            w = self._unblock(cid)
            if not any(o.deadline is not None for o in self.waiters.values()):
                self.errno = 0  # the timeout table's walk ran off its tree
            out.append((cid, for_protocol(w.timeout_reply, self.clients[cid].proto)))
        return out


# -- running both sides -------------------------------------------------------------------------


class Pair:
    """The fake core with the reference handlers, and the model, fed the same steps."""

    def __init__(self, config: dict[str, str], protos: dict[int, int]) -> None:
        self.clock = ManualClock(START_MS)
        self.model = Server(clock=self.clock, config=dict(config))
        self.ref = FakeCore(config, START_MS)
        for cid, proto in protos.items():
            self.model.connect(cid)
            self.model.clients[cid].proto = proto
            self.ref.connect(cid).proto = proto
        self.steps = 0
        self.log: list[str] = []
        self.model_touched: list[tuple[int, bytes]] = []
        touch = self.model.touch_watched

        def recording_touch(db: int, key: bytes) -> None:
            self.model_touched.append((db, key))
            touch(db, key)

        self.model.touch_watched = recording_touch  # type: ignore[method-assign]

    def _check(self, what: str, mine: Any, model: Any) -> None:
        assert mine == model, f"{what} differs\n" + "\n".join(self.log[-40:]) + (
            f"\nreference: {_show(mine)}\nmodel:     {_show(model)}")

    def _check_errno(self) -> None:
        self._check("errno is EDOM", self.ref.errno == EDOM, self.model.errno == EDOM)

    def run(self, cid: int, argv: list[bytes]) -> Reply | None:
        if cid in self.ref.waiters:
            return None  # a blocked client sends nothing
        if cid not in self.model.clients:
            self.model.connect(cid)
            self.ref.connect(cid)
        self.log.append(f"c{cid}> {_describe(argv)}")
        out = self.model.execute(cid, argv)
        mine, served = self.ref.execute(cid, argv)
        self.steps += 1
        self._check("reply", mine, out.reply)
        self._check("served", served, out.served)
        self._check("blocked", sorted(self.ref.waiters), sorted(self.model.blocked_clients()))
        self._check("keys signalled as modified", set(self.ref.touched), set(self.model_touched))
        self.ref.touched.clear()
        self.model_touched.clear()
        self._check_errno()
        return mine

    def pause(self, ms: int) -> None:
        self.log.append(f"(pause {ms} ms)")
        self.clock.advance(ms)
        expected = self.model.due_timeouts(self.clock.ms)
        self._check("timeouts", self.ref.advance(ms), expected)
        self._check_errno()

    def final_state(self) -> None:
        """Every stream of db 0, in full, and its groups and consumers, read by a fresh RESP2 client."""
        reader = 99
        for key in sorted(set(self.ref.dbs[0]) | set(self.model.dbs[0])):
            self.run(reader, [b"XINFO", b"STREAM", key, b"FULL", b"COUNT", b"0"])
            self.run(reader, [b"XRANGE", key, b"-", b"+"])
            reply = self.run(reader, [b"XINFO", b"GROUPS", key])
            if isinstance(reply, Array):
                for record in reply.items:
                    name = record.items[1]  # type: ignore[union-attr]
                    self.run(reader, [b"XINFO", b"CONSUMERS", key, name.value])  # type: ignore[union-attr]


def _describe(argv: Sequence[bytes]) -> str:
    return " ".join(repr(a)[2:-1] if a else '""' for a in argv)


def _show(x: Any) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_show(i) for i in x) + "]"
    if isinstance(x, tuple):
        return "(" + ", ".join(_show(i) for i in x) + ")"
    try:
        return show(x)
    except Exception:
        return repr(x)


_STREAM_COMMANDS = frozenset(name.encode() for name in HANDLERS if "|" not in name) | {
    b"xgroup", b"xinfo", b"multi", b"exec", b"discard", b"del", b"unlink", b"set"}


def _supported(argv: Sequence[Any]) -> bool:
    head = argv[0]
    if not isinstance(head, bytes):
        return False
    if head.lower() == b"config":
        return (len(argv) == 4 and argv[1].lower() == b"set" and argv[3].isdigit() and len(argv[3]) < 10
                and argv[2] in (b"stream-node-max-entries", b"stream-node-max-bytes"))
    if head.lower() == b"set":
        return len(argv) == 3  # the fake core's SET knows no options
    return head.lower() in _STREAM_COMMANDS


def run_generated(pair: Pair, steps: Sequence[Step]) -> None:
    """Generator steps the fake core supports (stream commands, MULTI/EXEC, DEL/SET), and pauses."""
    for step in steps:
        if not step.argv:
            pair.pause(step.pause)
            continue
        if not _supported(step.argv):
            continue
        pair.run(step.client, resolve(step.argv, pair.clock.ms))
    pair.final_state()


# -- disordered layouts: IDs lowered below tombstones (LAYOUT-1 .. LAYOUT-5) -----------------------

LAYOUT_KEY = b"s"
_U64 = (1 << 64) - 1


def _id_arg(key: int) -> bytes:
    return b"%d-%d" % (key >> 64, key & _U64)


class LayoutDriver:
    """Command sequences that disorder a stream's layout and then read it every way.

    Exact MINID trims at a deleted last entry leave nodes of tombstones; XSETID
    then lowers last-generated-id to (or just above) the last live entry, and
    XADDs in small steps land at or below tombstones, fill the node with the
    highest master, open nodes below it, or reuse a deleted master (LAYOUT-1,
    LAYOUT-4). Reads of every kind follow: XRANGE/XREVRANGE, XREAD, XREADGROUP
    ``>`` and history, blocked readers woken by an XADD, XCLAIM, XAUTOCLAIM,
    XDEL, XINFO, trims. Choices come from the reference's own state (``state``),
    so the same driver serves the differential test and the crash test.
    """

    def __init__(self, rng: random.Random, run: Callable[[int, list[bytes]], Any],
                 state: Callable[[], Stream | None]) -> None:
        self.rng = rng
        self.run = run
        self.state = state
        self.added: list[int] = []

    def live(self) -> list[int]:
        stream = self.state()
        if stream is None:
            return []
        return sorted(node.key(i) for node in stream.nodes for i in range(len(node.ms)) if not node.is_dead(i))

    def last(self) -> int:
        stream = self.state()
        return 0 if stream is None else stream.last_id

    def xadd(self, key: int, *options: bytes, client: int = 1) -> None:
        fields = [b"f", b"%d" % self.rng.randint(0, 9)] if self.rng.random() < 0.8 else [b"g", b"w", b"h", b"x"]
        if self.rng.random() < 0.15 and key & _U64 == 0 and key > self.last():
            self.run(client, [b"XADD", LAYOUT_KEY, *options, b"%d-*" % (key >> 64), *fields])
        else:
            self.run(client, [b"XADD", LAYOUT_KEY, *options, _id_arg(key), *fields])
        self.added.append(key)

    def step_up(self) -> int | None:
        """An ID a little above last-generated-id, so that IDs land among the tombstones."""
        last = self.last()
        if last == MAX_ID_KEY:
            return None
        if self.rng.random() < 0.6 or last >> 64 == _U64:
            return last + 1
        return ((last >> 64) + self.rng.randint(1, 2)) << 64

    def pick(self) -> int:
        pool = self.live() + self.added[-12:]
        return self.rng.choice(pool) if pool else 1

    def sequence(self, steps: int) -> None:
        rng = self.rng
        for _ in range(steps):
            roll = rng.random()
            if roll < 0.3:
                self.append()
            elif roll < 0.5:
                self.lower()
            elif roll < 0.6:
                self.delete_or_trim()
            else:
                self.read()

    def append(self) -> None:
        key = self.step_up()
        if key is None:
            return
        roll = self.rng.random()
        if roll < 0.8:
            self.xadd(key)
        elif roll < 0.9:
            self.xadd(key, b"MAXLEN", self.rng.choice([b"~", b"="]), b"%d" % self.rng.randint(0, 8))
        else:
            self.xadd(key, b"MINID", self.rng.choice([b"~", b"="]), _id_arg(self.pick()))

    def lower(self) -> None:
        """Tombstones at the top, last-generated-id down to the last live entry, small steps up, and
        sometimes XADDs at the masters of nodes that hold tombstones only."""
        rng = self.rng
        live = self.live()
        if live and rng.random() < 0.5:
            self.run(1, [b"XDEL", LAYOUT_KEY, _id_arg(live[-1])])
            self.run(1, [b"XTRIM", LAYOUT_KEY, b"MINID", _id_arg(self.added[-1] if self.added else live[-1])])
        else:
            doomed = live[-rng.randint(0, 3):] if live else []
            if doomed:
                self.run(1, [b"XDEL", LAYOUT_KEY, *map(_id_arg, doomed)])
            live = self.live()
            if live and rng.random() < 0.5:
                self.run(1, [b"XTRIM", LAYOUT_KEY, b"MINID", _id_arg(rng.choice(live[-3:]))])
        stream = self.state()
        if stream is None:
            return
        top = stream.last_live() or 0
        if rng.random() < 0.2:
            top = self.pick()
        target = top if top and rng.random() < 0.5 else top + 1
        if target > MAX_ID_KEY:
            return
        self.run(1, [b"XSETID", LAYOUT_KEY, _id_arg(target)])
        masters = list(stream.masters)
        for _ in range(rng.randint(1, 6)):
            key = self.step_up()
            if key is None:
                return
            self.xadd(key)
        if rng.random() < 0.5:
            for master in masters:
                if master > self.last():
                    self.xadd(master)
        if rng.random() < 0.2:
            limit = rng.choice([b"1", b"2", b"3", b"100"])
            self.run(1, [b"CONFIG", b"SET", b"stream-node-max-entries", limit])

    def delete_or_trim(self) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.5:
            self.run(1, [b"XDEL", LAYOUT_KEY, *(_id_arg(self.pick()) for _ in range(rng.randint(1, 3)))])
        elif roll < 0.8:
            mode = rng.choice([[], [b"="], [b"~"], [b"~", b"LIMIT", b"%d" % rng.randint(0, 4)]])
            self.run(1, [b"XTRIM", LAYOUT_KEY, b"MINID", *mode, _id_arg(self.pick() + rng.randint(0, 1))])
        else:
            mode = rng.choice([[], [b"="], [b"~"]])
            self.run(1, [b"XTRIM", LAYOUT_KEY, b"MAXLEN", *mode, b"%d" % rng.randint(0, len(self.live()) + 1)])

    def read(self) -> None:
        rng = self.rng
        low, high = sorted((self.pick(), self.pick()))
        count = [b"COUNT", b"%d" % rng.randint(1, 4)] if rng.random() < 0.5 else []
        group = rng.choice([b"g", b"h"])
        client = rng.choice([1, 2, 3])
        roll = rng.random()
        if roll < 0.2:
            self.run(client, [b"XRANGE", LAYOUT_KEY, _id_arg(low), rng.choice([_id_arg(high), b"+"]), *count])
            self.run(client, [b"XREVRANGE", LAYOUT_KEY, rng.choice([_id_arg(high), b"+"]), _id_arg(low), *count])
        elif roll < 0.3:
            self.run(client, [b"XREAD", *count, b"STREAMS", LAYOUT_KEY, _id_arg(low)])
        elif roll < 0.4:
            self.run(client, [b"XGROUP", b"CREATE", LAYOUT_KEY, group, rng.choice([b"0", _id_arg(low), b"$"])])
        elif roll < 0.45:
            self.run(client, [b"XGROUP", b"SETID", LAYOUT_KEY, group, _id_arg(low)])
        elif roll < 0.6:
            self.run(client, [b"XREADGROUP", b"GROUP", group, rng.choice([b"c", b"d"]),
                              *rng.choice([[], [b"NOACK"]]), *count, b"STREAMS", LAYOUT_KEY, b">"])
        elif roll < 0.65:
            self.run(client, [b"XREADGROUP", b"GROUP", group, rng.choice([b"c", b"d"]), *count,
                              b"STREAMS", LAYOUT_KEY, rng.choice([b"0", _id_arg(low)])])
        elif roll < 0.7:
            self.run(client, [b"XCLAIM", LAYOUT_KEY, group, b"e", b"0", _id_arg(low), _id_arg(high),
                              *rng.choice([[], [b"JUSTID"], [b"FORCE"]])])
        elif roll < 0.75:
            self.run(client, [b"XAUTOCLAIM", LAYOUT_KEY, group, b"c", b"0", _id_arg(low), *count])
        elif roll < 0.85:
            self.run(client, rng.choice([[b"XINFO", b"STREAM", LAYOUT_KEY], [b"XINFO", b"GROUPS", LAYOUT_KEY],
                                         [b"XINFO", b"STREAM", LAYOUT_KEY, b"FULL", b"COUNT",
                                          b"%d" % rng.randint(0, 3)], [b"XPENDING", LAYOUT_KEY, group],
                                         [b"XLEN", LAYOUT_KEY]]))
        elif roll < 0.9:
            self.run(client, [b"XACK", LAYOUT_KEY, group, _id_arg(low), _id_arg(high)])
        else:
            self.blocked_read(group)

    def blocked_read(self, group: bytes) -> None:
        """A reader blocks on ``$`` or ``>`` and an XADD (maybe below tombstones) wakes it."""
        if self.rng.random() < 0.5:
            self.run(4, [b"XREADGROUP", b"GROUP", group, b"b", b"BLOCK", b"0", b"STREAMS", LAYOUT_KEY, b">"])
        else:
            self.run(4, [b"XREAD", b"BLOCK", b"0", b"STREAMS", LAYOUT_KEY, b"$"])
        key = self.step_up()
        if key is not None:
            self.xadd(key)


def run_layouts(pair: Pair, seed: int, steps: int) -> None:
    """A :class:`LayoutDriver` sequence of about ``steps`` steps, then the final state."""
    rng = random.Random(seed)
    LayoutDriver(rng, pair.run, lambda: _layout_stream(pair.ref)).sequence(steps)
    pair.final_state()


def run_alone(core: FakeCore, cid: int, argv: list[bytes]) -> Reply | None:
    """One step on the fake core without the model; a blocked client sends nothing."""
    if cid in core.waiters:
        return None
    return core.execute(cid, argv)[0]


def _layout_stream(core: FakeCore) -> Stream | None:
    value = core.dbs[0].get(LAYOUT_KEY)
    return value if isinstance(value, Stream) else None


def layout_config(rng: random.Random) -> dict[str, str]:
    """Small nodes, so that exact MINID trims leave nodes of tombstones."""
    config = {"stream-node-max-entries": rng.choice(["2", "3", "4", "5", "1", "100"])}
    if rng.random() < 0.2:
        config["stream-node-max-bytes"] = rng.choice(["60", "100", "200"])
    return config


# -- Hypothesis: shrinkable command sequences ---------------------------------------------------------

KEYS = [b"s", b"t", b"k\x00x"]
GROUPS = [b"g", b"h", b""]
CONSUMERS = [b"alice", b"bob", b""]
IDS = [b"0", b"0-0", b"1", b"1-1", b"2", b"3-0", b"5", b"7-3", b"10", b"12-*", b"-", b"+", b"(1", b"(5-0",
       b"$", b">", b"*", b" 1-1", b"+2-1", b"01-01", b"1--1", b"abc", b"", b"18446744073709551615-18446744073709551615",
       b"18446744073709551615-*", b"18446744073709551615", b"1-18446744073709551615",
       b"18446744073709551616", b"(18446744073709551615-18446744073709551615", b"(0", b"(0-0",
       b"$\x00x", b">\x00", b"*\x00z", b"3-1\x00junk", b"\t4"]
NUMBERS = [b"0", b"1", b"2", b"3", b"10", b"-1", b"100", b"x", b"9223372036854775807",
           b"-9223372036854775808", b"1000000"]
WORDS = [b"MAXLEN", b"MINID", b"~", b"=", b"LIMIT", b"NOMKSTREAM", b"COUNT", b"BLOCK", b"STREAMS", b"GROUP",
         b"NOACK", b"IDLE", b"TIME", b"RETRYCOUNT", b"FORCE", b"JUSTID", b"LASTID", b"ENTRIESREAD", b"MKSTREAM",
         b"ENTRIESADDED", b"MAXDELETEDID", b"FULL", b"junk", b"count"]
FIELDS = [b"f", b"v", b"", b"127", b"128", b"-4096", b"x" * 70, b"9223372036854775808"]

_id = st.sampled_from(IDS)
_num = st.sampled_from(NUMBERS)
_key = st.sampled_from(KEYS)
_group = st.sampled_from(GROUPS)
_consumer = st.sampled_from(CONSUMERS)
_any = st.one_of(_id, _num, st.sampled_from(WORDS), _key)


def _cmd(*parts: Any) -> st.SearchStrategy[list[bytes]]:
    return st.tuples(*parts).map(lambda t: [x for p in t for x in (p if isinstance(p, list) else [p])])


def _pairs(n: int = 3) -> st.SearchStrategy[list[bytes]]:
    return st.lists(st.sampled_from(FIELDS), min_size=1, max_size=2 * n).map(
        lambda fs: fs if len(fs) % 2 == 0 or len(fs) == 1 else fs[:-1])


_trim: st.SearchStrategy[list[bytes]] = st.one_of(
    st.just([]),
    _cmd(st.sampled_from([b"MAXLEN", b"MINID", b"maxlen"]), st.sampled_from([[], [b"~"], [b"="]]),
         st.one_of(_num, _id), st.sampled_from([[], [b"LIMIT", b"0"], [b"LIMIT", b"2"], [b"LIMIT", b"-1"], [b"LIMIT", b"0"]])),
)
_tail = st.lists(_any, max_size=4)

COMMANDS = st.one_of(
    _cmd(st.just(b"XADD"), _key, st.sampled_from([[], [b"NOMKSTREAM"]]), _trim,
         st.sampled_from([b"*", b"*", b"*", b"5-*", b"0-*", b"12-*"]) | _id, _pairs()),
    _cmd(st.just(b"XADD"), _key, st.sampled_from([b"*", b"1-*"]), st.just([b"f", b"v", b"g", b"w"])),
    _cmd(st.just(b"XTRIM"), _key, _trim, _tail),
    _cmd(st.just(b"XLEN"), _key),
    _cmd(st.sampled_from([b"XRANGE", b"XREVRANGE"]), _key, _id, _id,
         st.sampled_from([[], [b"COUNT", b"1"], [b"COUNT", b"2"], [b"COUNT", b"0"], [b"COUNT"], [b"COUNT", b"-3"]])),
    _cmd(st.just(b"XDEL"), _key, st.lists(_id, min_size=1, max_size=3)),
    _cmd(st.just(b"XSETID"), _key, _id, st.lists(st.sampled_from(
        [b"ENTRIESADDED", b"MAXDELETEDID", b"3", b"1-1", b"100", b"-1"]), max_size=4)),
    _cmd(st.just(b"XGROUP"), st.sampled_from([b"CREATE", b"SETID", b"create"]), _key, _group,
         st.sampled_from([b"$", b"0", b"-", b"+", b"5", b"$\x00x"]) | _id,
         st.lists(st.sampled_from([b"MKSTREAM", b"ENTRIESREAD", b"2", b"-1", b"-2"]), max_size=3)),
    _cmd(st.just(b"XGROUP"), st.sampled_from([b"DESTROY"]), _key, _group),
    _cmd(st.just(b"XGROUP"), st.sampled_from([b"CREATECONSUMER", b"DELCONSUMER"]), _key, _group, _consumer),
    _cmd(st.just(b"XGROUP"), st.sampled_from([b"HELP", b"foo", b"help"])),
    _cmd(st.just(b"XREADGROUP"), st.sampled_from([[], [b"NOACK"], [b"COUNT", b"2"], [b"BLOCK", b"0"],
                                                  [b"BLOCK", b"5"], [b"COUNT", b"1", b"BLOCK", b"20"]]),
         st.just(b"GROUP"), _group, _consumer, st.sampled_from([[], [b"NOACK"]]), st.just(b"STREAMS"),
         st.sampled_from([[b"s", b">"], [b"s", b"0"], [b"s", b"t", b">", b">"], [b"t", b">"],
                          [b"s", b"s", b">", b"0"], [b"s", b"$"]]) | st.lists(_any, max_size=3)),
    _cmd(st.just(b"XREAD"), st.sampled_from([[], [b"COUNT", b"1"], [b"BLOCK", b"0"], [b"BLOCK", b"5"],
                                             [b"BLOCK", b"-1"], [b"GROUP", b"g", b"c"], [b"NOACK"]]),
         st.just(b"STREAMS"),
         st.sampled_from([[b"s", b"$"], [b"s", b"0"], [b"s", b"t", b"$", b"0"], [b"t", b"$"], [b"s", b">"]])
         | st.lists(_any, max_size=3)),
    _cmd(st.just(b"XACK"), _key, _group, st.lists(_id, min_size=1, max_size=3)),
    _cmd(st.just(b"XPENDING"), _key, _group,
         st.sampled_from([[], [b"-", b"+", b"10"], [b"IDLE", b"5", b"-", b"+", b"10"], [b"-", b"+", b"1", b"alice"],
                          [b"(1", b"+", b"2"], [b"-", b"+", b"x"], [b"IDLE", b"1", b"-", b"+"]]) | _tail),
    _cmd(st.just(b"XCLAIM"), _key, _group, _consumer, st.sampled_from([b"0", b"5", b"-1", b"x"]),
         st.lists(_id, min_size=1, max_size=3), st.lists(st.sampled_from(
             [b"FORCE", b"JUSTID", b"IDLE", b"0", b"TIME", b"RETRYCOUNT", b"3", b"LASTID", b"9-0", b"junk"]),
             max_size=4)),
    _cmd(st.just(b"XAUTOCLAIM"), _key, _group, _consumer, st.sampled_from([b"0", b"5", b"x"]), _id,
         st.sampled_from([[], [b"COUNT", b"1"], [b"COUNT", b"2"], [b"JUSTID"], [b"COUNT", b"0"], [b"COUNT"]])),
    _cmd(st.just(b"XINFO"), st.sampled_from([b"STREAM", b"GROUPS"]), _key,
         st.sampled_from([[], [b"FULL"], [b"FULL", b"COUNT", b"1"], [b"full", b"count", b"-1"], [b"junk"],
                          [b"FULL", b"x", b"1"]])),
    _cmd(st.just(b"XINFO"), st.just(b"CONSUMERS"), _key, _group),
    _cmd(st.just(b"XINFO"), st.sampled_from([b"HELP", b"nope"])),
    _cmd(st.sampled_from([b"DEL", b"SET"]), _key, st.sampled_from([[], [b"x"]])),
    st.sampled_from([[b"MULTI"], [b"EXEC"], [b"DISCARD"]]),
)

STEPS = st.lists(st.tuples(st.sampled_from([1, 1, 2, 3]), st.one_of(COMMANDS, st.integers(1, 30))),
                 min_size=5, max_size=40)

_DIFF_STEPS: list[int] = []  # steps run by the differential tests of this session (reported below)


@settings(max_examples=int(os.environ.get("XSPEC_REF_EXAMPLES", "300")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS, config=st.sampled_from([{}, {"stream-node-max-entries": "2"},
                                            {"stream-node-max-entries": "3", "stream-node-max-bytes": "60"},
                                            {"stream-node-max-entries": "0", "stream-node-max-bytes": "1"}]))
def test_hypothesis_sequences_match_the_model(steps: list[tuple[int, Any]], config: dict[str, str]) -> None:
    pair = Pair(config, {1: 2, 2: 3, 3: 2})
    for cid, what in steps:
        if isinstance(what, int):
            pair.pause(what)
        else:
            pair.run(cid, what)
    pair.final_state()
    _DIFF_STEPS.append(pair.steps)


@pytest.mark.parametrize("seed", range(40))
def test_generated_sequences_match_the_model(seed: int) -> None:
    rng = random.Random(seed)
    names = sorted(PROFILES)
    profile: Profile = PROFILES[names[seed % len(names)]]
    pair = Pair(random_config(rng), {1: 2, 2: 3, 3: 2, 4: 3})
    run_generated(pair, Generator(rng, profile).sequence(250))
    _DIFF_STEPS.append(pair.steps)


@pytest.mark.parametrize("seed", range(30))
def test_disordered_layouts_match_the_model(seed: int) -> None:
    rng = random.Random(seed)
    pair = Pair(layout_config(rng), {1: 2, 2: 3, 3: 2, 4: 3})
    run_layouts(pair, seed, 250)
    _DIFF_STEPS.append(pair.steps)


def test_the_layout_driver_disorders_layouts_regularly() -> None:
    """Most driver sequences reach an unordered node, a node below a tombstone of the node before it, or
    lost entries: the layouts the differential tests above must cover."""
    assert sum(map(_driver_disorders, range(20))) >= 12


def _driver_disorders(seed: int) -> bool:
    """Whether the driver's sequence for ``seed`` disorders the layout at some step."""
    rng = random.Random(seed)
    core = FakeCore(layout_config(rng))
    seen = False

    def run(cid: int, argv: list[bytes]) -> None:
        nonlocal seen
        run_alone(core, cid, argv)
        stream = _layout_stream(core)
        seen = seen or (stream is not None and bool(stream.unordered or stream.lost or _below_a_tombstone(stream)))

    LayoutDriver(rng, run, lambda: _layout_stream(core)).sequence(250)
    return seen


_TOKENS = [*IDS, *NUMBERS, *WORDS, *KEYS, b"$", b">"]


@pytest.mark.parametrize("seed", range(6))
def test_handlers_raise_nothing_but_reply_errors(seed: int) -> None:
    """Random sequences on the reference alone (no model, so many more steps): layout-driver steps with
    arguments sometimes swapped for random tokens, and the fuzzer's generator. FakeCore catches only
    ReplyError, so any other exception a handler (or a woken reader's retry) raises escapes here."""
    rng = random.Random(seed)
    core = FakeCore(layout_config(rng))
    for cid in (2, 4):
        core.connect(cid).proto = 3
    log: list[str] = []

    def run(cid: int, argv: list[bytes]) -> None:
        if rng.random() < 0.2 and len(argv) > 1 and argv[0] != b"CONFIG":  # the fake CONFIG knows 2 names
            argv = list(argv)
            argv[rng.randrange(1, len(argv))] = rng.choice(_TOKENS)
        log.append(f"c{cid}> {_describe(argv)}")
        try:
            run_alone(core, cid, argv)
        except Exception as e:
            raise AssertionError("\n".join(log[-30:]) + f"\nraised {e!r}") from e
        if rng.random() < 0.05:
            core.advance(rng.randint(1, 30))

    LayoutDriver(rng, run, lambda: _layout_stream(core)).sequence(1500)
    names = sorted(PROFILES)
    for step in Generator(rng, PROFILES[names[seed % len(names)]]).sequence(1500):
        if step.argv and _supported(step.argv):
            run(step.client, resolve(step.argv, core.now))
    assert len(log) > 2500


def _below_a_tombstone(stream: Stream) -> bool:
    """Whether some node's master is below an ID (a tombstone) of the node before it."""
    return any(a.last_key() > b.master for a, b in zip(stream.nodes, stream.nodes[1:], strict=False))


@pytest.mark.slow
def test_generated_campaign_matches_the_model() -> None:
    """``XSPEC_REF_STEPS`` (default 200000) steps, seeds from ``XSPEC_REF_SEED`` (default 1000): the
    fuzzer's generator, and every third sequence the :class:`LayoutDriver`."""
    budget = int(os.environ.get("XSPEC_REF_STEPS", "200000"))
    seed = int(os.environ.get("XSPEC_REF_SEED", "1000"))
    names = sorted(PROFILES)
    done = 0
    while done < budget:
        rng = random.Random(seed)
        try:
            if seed % 3 == 0:
                pair = Pair(layout_config(rng), {1: 2, 2: 3, 3: 2, 4: 3})
                run_layouts(pair, seed, 1000)
            else:
                pair = Pair(random_config(rng), {1: 2, 2: 3, 3: 2, 4: 3})
                run_generated(pair, Generator(rng, PROFILES[names[seed % len(names)]]).sequence(1000))
        except AssertionError as e:
            raise AssertionError(f"seed {seed}: {e}") from None
        done += pair.steps
        seed += 1
    _DIFF_STEPS.append(done)
    print(f"\nreference streams campaign: {done} steps, seeds {os.environ.get('XSPEC_REF_SEED', '1000')}..{seed - 1}")


# -- targeted checks ------------------------------------------------------------------------------------


def test_xadd_sequence_overflow_is_worded_after_errno() -> None:
    pair = Pair({}, {1: 2})
    pair.run(1, [b"XADD", b"s", b"5-18446744073709551615", b"f", b"v"])
    assert pair.run(1, [b"XADD", b"s", b"5-*", b"f", b"v"]) == Error("ERR Elements are too large to be stored")
    pair.run(1, [b"XADD", b"s", b"1-1", b"f", b"v"])  # EDOM
    assert pair.run(1, [b"XADD", b"s", b"5-*", b"f", b"v"]) == Error(
        "ERR The ID specified in XADD is equal or smaller than the target stream top item")


def test_node_layout_and_trimming_match_the_model() -> None:
    """Node boundaries at every byte limit from 20 to 260, with values of every listpack encoding."""
    values = [b"0", b"127", b"128", b"-4096", b"4095", b"32767", b"-32769", b"8388608", b"2147483647",
              b"9223372036854775807", b"9223372036854775808", b"01", b"-0", b"x" * 63, b"x" * 64, b"y" * 130]
    for max_bytes in range(20, 261, 3):
        pair = Pair({"stream-node-max-bytes": str(max_bytes), "stream-node-max-entries": "0"}, {1: 3})
        for i in range(1, 30):
            v = values[(i * 7 + max_bytes) % len(values)]
            fields = [b"f", v, b"name", b"x" * (i % 7)] if i % 5 else [b"other", v]
            pair.run(1, [b"XADD", b"s", b"%d-%d" % (i * 1000 if i % 4 else i * 1000 + 1, i * i), *fields])
            if i % 11 == 0:
                pair.run(1, [b"XDEL", b"s", b"%d-%d" % ((i - 4) * 1000, (i - 4) ** 2)])
        pair.run(1, [b"XINFO", b"STREAM", b"s"])
        pair.run(1, [b"XTRIM", b"s", b"MAXLEN", b"~", b"%d" % (max_bytes % 17), b"LIMIT", b"0"])
        pair.run(1, [b"XTRIM", b"s", b"MINID", b"~", b"20000", b"LIMIT", b"5"])
        pair.run(1, [b"XINFO", b"STREAM", b"s"])
    pair.final_state()


def test_c_string_tokens_and_lenient_ids_match_the_model() -> None:
    """``$``, ``>``, ``*``, ``~`` and option names are C strings; ID parts go through strtoull."""
    pair = Pair({}, {1: 2, 2: 3})
    script = [
        [b"XADD", b"s", b"*\x00z", b"f", b"v"], [b"XADD", b"s", b"MAXLEN\x00q", b"~\x00", b"5", b"*", b"f", b"v"],
        [b"XADD", b"s", b" 9999999999999-1", b"f", b"v"], [b"XADD", b"s", b"+9999999999999-*", b"f", b"v"],
        [b"XADD", b"s", b"9999999999999-+18446744073709551615", b"f", b"v"],
        [b"XGROUP", b"CREATE", b"s", b"g", b"$\x00x"], [b"XGROUP", b"CREATE", b"s", b"h", b"\t1-1"],
        [b"XGROUP", b"SETID", b"s", b"h", b"$\x00"], [b"XREADGROUP", b"GROUP", b"h", b"c", b"STREAMS", b"s", b">\x00"],
        [b"XREAD", b"COUNT\x00x", b"1", b"STREAMS", b"s", b"$\x00"], [b"XREAD", b"STREAMS", b"s", b"03-04"],
        [b"XRANGE", b"s", b"(\t1", b"+", b"count\x00", b"2"], [b"XDEL", b"s", b"4--18446744073709551615"],
        [b"XCLAIM", b"s", b"h", b"d", b"0", b"9999999999999-1", b"FORCE\x00", b"JUSTID"],
        [b"XADD", b"s", b"9999999999999-18446744073709551615", b"f", b"v"], [b"XADD", b"s", b"9999999999999-*", b"f", b"v"],
        [b"XINFO", b"STREAM", b"s", b"FULL\x00", b"COUNT\x00", b"1"],
    ]
    for argv in script:
        pair.run(1, argv)
        pair.run(2, [b"XINFO", b"GROUPS", b"s"])
    pair.final_state()


def test_a_full_node_takes_entries_again_once_the_limit_grows() -> None:
    pair = Pair({"stream-node-max-entries": "2"}, {1: 2})
    for i in range(1, 4):
        pair.run(1, [b"XADD", b"s", b"%d-0" % i, b"f", b"v" * (i * 60), b"g", b"w"])
    pair.run(1, [b"XDEL", b"s", b"3-0"])
    pair.run(1, [b"CONFIG", b"SET", b"stream-node-max-entries", b"100"])
    pair.run(1, [b"XADD", b"s", b"4-0", b"f", b"long" * 40, b"g", b"w"])
    pair.run(1, [b"XADD", b"s", b"5-0", b"other", b"x"])
    pair.final_state()
    assert pair.run(1, [b"XLEN", b"s"]) == Int(4)


_TANGLED = [b"XADD s 10-0 f v", b"XADD s 20-0 f v", b"XADD s 30-0 f v", b"XADD s 40-0 f v", b"XADD s 50-0 f v",
            b"XADD s 60-0 f v", b"XDEL s 60-0", b"XTRIM s MINID = 55", b"XINFO STREAM s", b"XSETID s 5",
            b"XADD s 6-0 f v", b"XADD s 7-0 f v", b"XINFO STREAM s", b"CONFIG SET stream-node-max-entries 100",
            b"XADD s 8-0 f v", b"XADD s 9-0 g w", b"XRANGE s - +", b"XREVRANGE s + 7", b"XREVRANGE s 9 -",
            b"XREVRANGE s 35 8", b"XRANGE s 8 (9", b"XDEL s 8-0 7-0 31-0", b"XINFO STREAM s FULL",
            b"XTRIM s MINID 9", b"XINFO STREAM s", b"XADD s 30-0 f v", b"XADD s 45-0 f v", b"XINFO STREAM s FULL",
            b"XSETID s 45 ENTRIESADDED 20", b"XADD s 46 h x", b"XGROUP CREATE s g 0",
            b"XREADGROUP GROUP g c COUNT 2 STREAMS s >", b"XREADGROUP GROUP g c STREAMS s >", b"XDEL s 45-0",
            b"XREADGROUP GROUP g c STREAMS s 0", b"XCLAIM s g d 0 9-0 45-0 46-0 JUSTID",
            b"XAUTOCLAIM s g e 0 0 JUSTID", b"XPENDING s g", b"XACK s g 9-0 30-0", b"XINFO GROUPS s",
            b"XTRIM s MAXLEN 1", b"XINFO STREAM s"]
# A new node whose master equals an older node's deleted master replaces it in the radix tree:
# that node's live entries (8-0) vanish from every walk while XLEN still counts them.
_MASTER_REUSED = [b"XADD s 10-0 f v", b"XADD s 20-0 f v", b"XADD s 30-0 f v", b"XADD s 40-0 f v", b"XDEL s 40-0",
                  b"XTRIM s MINID = 35", b"CONFIG SET stream-node-max-entries 100", b"XSETID s 5",
                  b"XADD s 8-0 f v", b"CONFIG SET stream-node-max-entries 3", b"XSETID s 9", b"XADD s 30-0 f v",
                  b"XRANGE s - +", b"XINFO STREAM s", b"XLEN s", b"XDEL s 8-0", b"XREVRANGE s + -",
                  b"XINFO STREAM s"]

# An ID equal to a tombstone of the same node: both stay in the listpack, the live one after.
_ID_REUSED = [b"XADD s 72-0 f v", b"XADD s 74-0 f v", b"XDEL s 74-0", b"XSETID s 72-0", b"XADD s 74-* g w",
              b"XRANGE s 74 74", b"XREVRANGE s + -", b"XDEL s 0 74-0", b"XINFO STREAM s", b"XADD s 74-1 h x",
              b"XRANGE s - +", b"XINFO STREAM s FULL"]


# The scenarios of tests/test_layout.py (LAYOUT-1 .. LAYOUT-5, checked there against 7.0.15) after
# their common start: a node of tombstones, last-generated-id lowered under it.
_TOMBSTONED = [b"XADD s 5-0 f v", b"XADD s 6-0 f v", b"XADD s 8-0 f v", b"XDEL s 8-0", b"XTRIM s MINID 8-0",
               b"XSETID s 1-0"]
_HIGHEST_MASTER = [*_TOMBSTONED, b"XADD s 2-0 f 2", b"XADD s 3-0 f 3", b"XADD s 6-0 f 6", b"XADD s 7-0 f 7",
                   b"XINFO STREAM s", b"XRANGE s - +"]
_REVERSE_WALK = [b"XADD s 10-0 f v", b"XADD s 11-0 f v", b"XADD s 12-0 f v", b"XDEL s 12-0",
                 b"XTRIM s MINID 12-0", b"XSETID s 1-0", b"XADD s 2-0 f 2", b"XADD s 3-0 f 3", b"XADD s 6-0 f 6",
                 b"XADD s 7-0 f 7", b"XREVRANGE s 9 -", b"XREVRANGE s + -", b"XRANGE s - +",
                 b"XRANGE s 3 6 COUNT 1", b"XRANGE s 6 +", b"XREAD STREAMS s 2-0", b"XINFO STREAM s",
                 b"XINFO STREAM s FULL COUNT 2", b"XGROUP CREATE s g 0",
                 b"XREADGROUP GROUP g c COUNT 3 STREAMS s >", b"XINFO GROUPS s", b"XREADGROUP GROUP g c STREAMS s 0",
                 b"XCLAIM s g d 0 2-0 3-0 7-0", b"XDEL s 6-0 2-0", b"XRANGE s - +", b"XSETID s 3-0"]
_REPLACED_NODE = [*_TOMBSTONED, b"XADD s 2-0 f 2", b"XADD s 3-0 f 3", b"XADD s 5-0 f 5", b"XDEL s 2-0", b"XLEN s",
                  b"XRANGE s - +", b"XTRIM s MINID ~ 1", b"XINFO STREAM s", b"XADD s 5-1 f v",
                  b"XADD s MAXLEN 2 5-2 f v", b"XRANGE s - +", b"XINFO STREAM s", b"XINFO STREAM s FULL"]
_TOMBSTONE_STOPS_TRIM = [b"XADD s 5-0 f v", b"XADD s 6-0 f v", b"XADD s 8-0 f v", b"XADD s 9-0 f v",
                         b"XDEL s 5-0 6-0 9-0", b"XTRIM s MINID 9-0", b"XSETID s 1-0", b"XADD s 2-0 f 2",
                         b"XADD s 3-0 f 3", b"XDEL s 3-0", b"XTRIM s MINID 3-0", b"XRANGE s - +",
                         b"XTRIM s MINID 4-0", b"XINFO STREAM s"]


@pytest.mark.redis
@pytest.mark.parametrize(("max_entries", "script"), [(b"2", _TANGLED), (b"3", _TANGLED), (b"2", _MASTER_REUSED),
                                                     (b"3", _ID_REUSED), (b"4", _HIGHEST_MASTER),
                                                     (b"5", _REVERSE_WALK), (b"4", _REPLACED_NODE),
                                                     (b"6", _TOMBSTONE_STOPS_TRIM)])
def test_appends_below_tombstones_follow_the_real_server(redis: Any, max_entries: bytes, script: list[bytes]) -> None:
    """After an exact MINID trim leaves a node of tombstones and XSETID lowers last-generated-id
    below them, 7.0 appends to the node with the highest master ID (the radix tree's last), so a
    full one makes every XADD start a node, and IDs in a node need not ascend; XREVRANGE then
    starts at the last node whose master is <= its end and misses newer entries of a later node
    (``XREVRANGE s 9 -`` leaves out 9-0 and 8-0). Compared with the real server directly, and
    with the model below (LAYOUT-1 .. LAYOUT-5)."""
    real = redis.connection()
    try:
        real.call([b"CONFIG", b"SET", b"stream-node-max-entries", max_entries])
        core = FakeCore({"stream-node-max-entries": max_entries.decode()})
        for line in script:
            argv = line.split()
            mine, _ = core.execute(1, argv)
            assert mine == real.call(argv), line
    finally:
        real.close()


@pytest.mark.parametrize(("max_entries", "script"), [
    ("2", _TANGLED), ("3", _TANGLED), ("2", _MASTER_REUSED), ("3", _ID_REUSED), ("4", _HIGHEST_MASTER),
    ("5", _REVERSE_WALK), ("4", _REPLACED_NODE), ("6", _TOMBSTONE_STOPS_TRIM)])
def test_named_disordered_layouts_match_the_model(max_entries: str, script: list[bytes]) -> None:
    pair = Pair({"stream-node-max-entries": max_entries}, {1: 2, 2: 3})
    for line in script:
        pair.run(1, line.split())
        pair.run(2, [b"XINFO", b"STREAM", b"s"])
    pair.final_state()


def test_blocked_readers_are_served_in_fifo_order_and_time_out() -> None:
    pair = Pair({}, {1: 2, 2: 3, 3: 2, 4: 3})
    pair.run(1, [b"XGROUP", b"CREATE", b"s", b"g", b"$", b"MKSTREAM"])
    pair.run(2, [b"XREADGROUP", b"GROUP", b"g", b"a", b"BLOCK", b"0", b"STREAMS", b"s", b">"])
    pair.run(3, [b"XREADGROUP", b"GROUP", b"g", b"b", b"BLOCK", b"10", b"STREAMS", b"s", b">"])
    pair.run(4, [b"XREAD", b"BLOCK", b"0", b"STREAMS", b"t", b"s", b"$", b"$"])
    assert pair.ref.waiters.keys() == {2, 3, 4}
    pair.run(1, [b"XADD", b"s", b"1-1", b"f", b"v"])
    assert pair.ref.waiters.keys() == {3}
    pair.pause(11)
    assert not pair.ref.waiters
    pair.run(2, [b"XREADGROUP", b"GROUP", b"g", b"a", b"BLOCK", b"0", b"STREAMS", b"s", b">"])
    pair.run(1, [b"DEL", b"s"])
    assert not pair.ref.waiters


def test_rax_shape_counts_nodes_like_the_model_rax() -> None:
    from xspec.models.rax import Rax  # the model's replay, as the oracle for node counts

    rng = random.Random(5)
    mine, model = RaxShape(), Rax()
    live: list[int] = []
    for step in range(3000):
        if live and rng.random() < 0.45:
            k = live.pop(rng.randrange(len(live)) if rng.random() < 0.5 else 0)
            mine.remove(rax_key(k))
            model.remove(rax_key(k))
        else:
            k = (rng.choice([1, 2, 1000, 1 << 40, 1 << 63]) + step) << 64 | rng.randrange(1 << rng.choice([1, 8, 40]))
            if k not in live:
                live.append(k)
                mine.insert(rax_key(k))
                model.insert(rax_key(k))
        assert mine.nodes == model.numnodes, step


def test_reference_modules_take_only_texts_and_sizes_from_the_model() -> None:
    """From xspec.models the reference stream modules import Redis's texts and constants
    (UPPER_CASE names) and the listpack size arithmetic: no state class, no handler, no helper."""
    import ast

    import xspec.reference
    import xspec.reference.streams as streams_module
    import xspec.reference.xcommands as commands_module

    for module in (streams_module, commands_module):
        # The source file, read from the (uncompiled) package's folder: with XSPEC_MYPYC=1 the module is
        # an extension whose __file__ need not even be its own path (mypyc derives it from the shared library).
        source = os.path.join(os.path.dirname(xspec.reference.__file__ or ""), module.__name__.rsplit(".", 1)[1] + ".py")
        tree = ast.parse(open(source).read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("xspec.models") for a in node.names), module.__name__
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xspec.models"):
                for alias in node.names:
                    allowed = alias.name.isupper() or (node.module == "xspec.spec.listpack" and alias.name in (
                        "element_size", "int_element_size", "as_listpack_int"))
                    assert allowed, (module.__name__, node.module, alias.name)


def test_entries_take_well_under_200_bytes_each() -> None:
    """The memory target (10^6 entries of two short fields, <= 200 bytes each), on 3 * 10^4 entries."""
    import gc
    import tracemalloc

    core = FakeCore({})
    ctx = FakeContext(core, core.connect(1), [])
    ctx.modified = ctx.ready = lambda key: None  # type: ignore[method-assign]
    xadd = HANDLERS["xadd"]
    n = 30_000
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(n):
            core.now += i % 3 == 0
            ctx.argv = [b"XADD", b"s", b"*", b"name", b"user%d" % (i % 10_000), b"score", b"%d" % i]
            xadd(ctx)
        gc.collect()
        per_entry = (tracemalloc.get_traced_memory()[0] - base) / n
    finally:
        tracemalloc.stop()
    assert per_entry < 100, per_entry  # 63 bytes measured for 10^6 entries


def test_report_differential_steps(capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print(f"\nreference streams: {sum(_DIFF_STEPS)} differential steps in {len(_DIFF_STEPS)} sequences")



@pytest.mark.parametrize("node_max_entries", [b"1", b"184467440737095517", b"9223372036854775807", b"0"])
def test_approx_trim_limit_wraps_like_the_model(node_max_entries: bytes) -> None:
    """XTRIM-7: 100 x stream-node-max-entries wraps as a C long long (184467440737095517 -> 84)."""
    from xspec.reference.server import ServerThread
    from xspec.traces.record.client import RespConnection

    cmds = [[b"CONFIG", b"SET", b"stream-node-max-entries", b"1"],
            *([b"XADD", b"s", b"%d-0" % i, b"f", b"v"] for i in range(1, 300)),
            [b"CONFIG", b"SET", b"stream-node-max-entries", node_max_entries],
            [b"XTRIM", b"s", b"MAXLEN", b"~", b"0"], [b"XLEN", b"s"]]
    model = Server(clock=ManualClock())
    expected = [model.execute(1, argv).reply for argv in cmds][-2:]
    with ServerThread() as st:
        conn = RespConnection("127.0.0.1", st.port)
        got = [conn.call(argv) for argv in cmds][-2:]
        conn.close()
    assert got == expected
