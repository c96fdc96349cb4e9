"""Consumer programs as processes, and the delivery guarantees checked on them (spec/exploration.md,
EXPLORE-PROC-1 .. EXPLORE-PROC-6 and EXPLORE-PROP-1 .. EXPLORE-PROP-4).

A protocol is a producer that adds ``messages`` entries (``1-0``, ``2-0``, ...;
some may be poison pills) to stream ``s`` with group ``g``, and consumer
programs that run against the real model. A program is a state machine; each
step sends at most one command, whose reply it reads atomically. Between any
two steps a process can crash (a bounded number of times): its connection
closes, it restarts from its first instruction on a new connection, forgetting
what it held.
A poison pill crashes whoever processes it, every time.

Time: the clock advances in ticks. Processing a message takes exactly
``processing_ticks`` ticks; every other step the program takes at once once it
is due (the clock does not move while a process has a due step), except waiting
for work (reading, claiming), which may take any time.

Properties (every message ``m`` the producer adds):

* ``no message lost`` (safety): never is ``m`` delivered, out of every PEL, not
  held by any process, and neither processed nor dead-lettered;
* ``no duplicate without a crash`` (safety): ``m`` is processed a second time
  only after some process crashed;
* ``every message processed and acked or dead-lettered`` (liveness): eventually
  ``m`` is out of the PEL and was processed or moved to the dead-letter stream;
* ``poison pills end in the dead-letter stream`` (liveness, poison pills only).

Liveness is checked on the state graph under weak fairness (:mod:`.liveness`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from xspec.explore.abstraction import Abstraction, Key
from xspec.explore.engine import State, Step, Successor
from xspec.explore.execution import Executor, initial_server
from xspec.models.server import Server
from xspec.spec.ids import StreamID
from xspec.spec.resp import Array, Bulk, Int, Reply

STREAM = b"s"
GROUP = b"g"
DEAD_LETTERS = b"dlq"

NO_LOSS = "no message lost"
NO_DUPLICATE = "no duplicate without a crash"
ALL_DONE = "every message processed and acked or dead-lettered"
POISON_DEAD = "poison pills end in the dead-letter stream"
SAFETY = (NO_LOSS, NO_DUPLICATE)
LIVENESS = (ALL_DONE, POISON_DEAD)

# A process's local state (EXPLORE-PROC-1): (instruction, message held (0: none), cursor, ticks
# spent processing, crashes so far). The cursor is a message number: the seed consumer's last history ID, the
# recovery worker's XAUTOCLAIM cursor (0 is 0-0), -1 once the seed consumer reads new messages.
Local = tuple[str, int, int, int, int]
# Ghost: (times each message was processed, capped at 2; some process crashed; a duplicate
# happened with no crash before it: EXPLORE-PROP-2).
Ghost = tuple[tuple[int, ...], bool, bool]


def message_id(n: int) -> bytes:
    return b"%d-0" % n


def message_number(entry_id: bytes) -> int:
    return int(entry_id.split(b"-")[0])


@dataclass(frozen=True)
class Move:
    """One step a program can take: a command whose reply gives the next local state, or a local act."""

    kind: str  # "command" | "process"
    argv: tuple[bytes, ...] = ()
    after: Callable[[Reply | None], Local] | None = None
    text: str = ""
    message: int = 0  # for "process": the message being processed


class Program:
    """A consumer program (EXPLORE-PROC-1); subclasses say what it does at each instruction (EXPLORE-PROC-5)."""

    start = "read"
    waiting: tuple[str, ...] = ("read",)  # instructions that may wait for any time

    def __init__(self, consumer: bytes, processing_ticks: int) -> None:
        self.consumer = consumer
        self.processing_ticks = processing_ticks

    def initial(self, crashes: int) -> Local:
        return (self.start, 0, 0, 0, crashes)

    def moves(self, local: Local) -> list[Move]:
        raise NotImplementedError

    def urgent(self, local: Local) -> bool:
        """True when the process has a step due now: the clock waits for it (EXPLORE-PROC-4).

        Processing is due once it took its ``processing_ticks``; every other
        instruction at once, except waiting for work.
        """
        pc, _, _, elapsed, _ = local
        if pc == "process":
            return elapsed >= self.processing_ticks
        return pc not in self.waiting

    def processing(self, local: Local, then: Local) -> list[Move]:
        """Processing the message held, possible once it took its time (EXPLORE-PROC-4); then ``then``."""
        if local[3] < self.processing_ticks:
            return []
        return [Move("process", text=f"processes {message_id(local[1]).decode()}", message=local[1],
                     after=lambda _: then)]

    def read_new(self, local: Local, then: str, noack: bool = False) -> Move:
        """Read one new message (``>``); with one, go to ``then`` holding it, otherwise stay."""
        def after(reply: Reply | None) -> Local:
            got = first_read(reply)
            return (then, got, 0, 0, local[4]) if got else local

        return Move("command", self.read_argv(b">", noack), after)

    def ack(self, message: int, then: Local) -> Move:
        """``XACK s g <message>``, then the local state ``then``."""
        return Move("command", (b"XACK", STREAM, GROUP, message_id(message)), lambda _: then)

    def read_argv(self, start: bytes, noack: bool = False) -> tuple[bytes, ...]:
        return ((b"XREADGROUP", b"GROUP", GROUP, self.consumer, b"COUNT", b"1")
                + ((b"NOACK",) if noack else ()) + (b"STREAMS", STREAM, start))


def first_read(reply: Reply | None) -> int:
    """The message number of the first entry an XREADGROUP reply holds, 0 for none."""
    if isinstance(reply, Array) and reply.items:
        stream = reply.items[0]
        assert isinstance(stream, Array)
        entries = stream.items[1]
        if isinstance(entries, Array) and entries.items:
            entry = entries.items[0]
            assert isinstance(entry, Array) and isinstance(entry.items[0], Bulk)
            return message_number(entry.items[0].value)
    return 0


class SeedConsumer(Program):
    """The consumer of the Streams introduction: history from ID 0 until empty, then ``>``; process; XACK.

    After a restart its cursor is 0 again, so it reads its history first (EXPLORE-PROC-5).
    """

    def moves(self, local: Local) -> list[Move]:
        pc, msg, cursor, _, crashes = local
        if pc == "read":
            start = b">" if cursor < 0 else message_id(cursor)

            def after(reply: Reply | None) -> Local:
                got = first_read(reply)
                if got:
                    return ("process", got, cursor, 0, crashes)
                return ("read", 0, -1, 0, crashes)  # history empty: switch to new messages

            return [Move("command", self.read_argv(start), after)]
        if pc == "process":
            return self.processing(local, ("ack", msg, cursor, 0, crashes))
        assert pc == "ack"
        return [self.ack(msg, ("read", 0, msg if cursor >= 0 else cursor, 0, crashes))]


class NewOnlyConsumer(Program):
    """Wrong: reads only ``>``, so after a crash its pending messages are never read again (EXPLORE-PROC-5)."""

    def moves(self, local: Local) -> list[Move]:
        pc, msg, _, _, crashes = local
        if pc == "read":
            return [self.read_new(local, "process")]
        if pc == "process":
            return self.processing(local, ("ack", msg, 0, 0, crashes))
        return [self.ack(msg, ("read", 0, 0, 0, crashes))]


class AckFirstConsumer(Program):
    """Wrong: XACK as soon as a message arrives, then process it (EXPLORE-PROC-5)."""

    def moves(self, local: Local) -> list[Move]:
        pc, msg, _, _, crashes = local
        if pc == "read":
            return [self.read_new(local, "ack")]
        if pc == "ack":
            return [self.ack(msg, ("process", msg, 0, 0, crashes))]
        return self.processing(local, ("read", 0, 0, 0, crashes))


class NoAckReader(Program):
    """Wrong: reads with NOACK, so nothing is pending while it processes (EXPLORE-PROC-5)."""

    def moves(self, local: Local) -> list[Move]:
        pc, msg, _, _, crashes = local
        if pc == "read":
            return [self.read_new(local, "process", noack=True)]
        return self.processing(local, ("read", 0, 0, 0, crashes))


class RecoveryWorker(Program):
    """The XAUTOCLAIM worker of the stuck-pending-entries seed, with a poison-pill limit (EXPLORE-PROC-5).

    Claims one idle message at a time (``XAUTOCLAIM s g me <min-idle> <cursor> COUNT 1``),
    asks XPENDING for its delivery count, and moves it to the dead-letter stream
    (``XADD dlq <id> id <id>``, then XACK) once it was delivered more than
    ``poison_limit`` times; otherwise processes and acks it. Without a limit
    (``None``, the seed's code before its poison-pill section) it processes every
    message it claims.
    """

    start = "claim"
    waiting = ("claim",)

    def __init__(self, consumer: bytes, processing_ticks: int, min_idle_ms: int, poison_limit: int | None) -> None:
        super().__init__(consumer, processing_ticks)
        self.min_idle_ms = min_idle_ms
        self.poison_limit = poison_limit

    def moves(self, local: Local) -> list[Move]:
        pc, msg, cursor, _, crashes = local
        if pc == "claim":
            argv = (b"XAUTOCLAIM", STREAM, GROUP, self.consumer, b"%d" % self.min_idle_ms,
                    message_id(cursor), b"COUNT", b"1")

            def claimed(reply: Reply | None) -> Local:
                assert isinstance(reply, Array) and isinstance(reply.items[0], Bulk)
                nxt = message_number(reply.items[0].value)
                entries = reply.items[1]
                if isinstance(entries, Array) and entries.items:
                    entry = entries.items[0]
                    assert isinstance(entry, Array) and isinstance(entry.items[0], Bulk)
                    then = "process" if self.poison_limit is None else "inspect"
                    return (then, message_number(entry.items[0].value), nxt, 0, crashes)
                return ("claim", 0, nxt, 0, crashes)

            return [Move("command", argv, claimed)]
        mid = message_id(msg)
        if pc == "inspect":
            def counted(reply: Reply | None) -> Local:
                if isinstance(reply, Array) and reply.items:
                    row = reply.items[0]
                    assert isinstance(row, Array) and isinstance(row.items[3], Int)
                    deliveries = row.items[3].value
                    assert self.poison_limit is not None
                    return ("dead" if deliveries > self.poison_limit else "process", msg, cursor, 0, crashes)
                return ("claim", 0, cursor, 0, crashes)

            return [Move("command", (b"XPENDING", STREAM, GROUP, mid, mid, b"1"), counted)]
        if pc == "process":
            return self.processing(local, ("ack", msg, cursor, 0, crashes))
        if pc == "dead":
            return [Move("command", (b"XADD", DEAD_LETTERS, mid, b"id", mid),
                         lambda _: ("deadack", msg, cursor, 0, crashes))]
        return [self.ack(msg, ("claim", 0, cursor, 0, crashes))]


@dataclass
class Protocol:
    """A producer, consumer programs, and the bounds they are checked within."""

    name: str
    description: str
    programs: list[Program]
    messages: int = 2
    poison: frozenset[int] = frozenset()
    crash_budget: int = 1
    tick_ms: int = 100
    expected: dict[str, bool] = field(default_factory=dict)  # property -> holds? (EXPLORE-PROC-6)

    @property
    def properties(self) -> tuple[str, ...]:
        return SAFETY + ((ALL_DONE, POISON_DEAD) if self.poison else (ALL_DONE,))


class ProtocolSystem:
    """The processes of a :class:`Protocol`: the producer (last), the programs, the clock."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self.programs = protocol.programs
        self.producer = len(self.programs)
        self.tick_ms = protocol.tick_ms
        self.process_names = tuple(p.consumer.decode() for p in self.programs) + ("producer",)
        self.safety_properties: tuple[str, ...] = SAFETY
        horizon = max((getattr(p, "min_idle_ms", 0) for p in self.programs), default=0)
        limit = max((getattr(p, "poison_limit", None) or 0 for p in self.programs), default=0)
        self.abstraction = Abstraction(
            names=tuple(p.consumer for p in self.programs) + (None,),
            classes=tuple(range(len(self.programs) + 1)), horizon_ms=horizon,
            count_cap=limit + 1, symmetry=False)
        self.executor = Executor(self.abstraction)

    def setup(self) -> list[tuple[int, tuple[bytes, ...]]]:
        """The group ``g`` at ``0``, with MKSTREAM (EXPLORE-PROC-2)."""
        return [(self.producer, (b"XGROUP", b"CREATE", STREAM, GROUP, b"0", b"MKSTREAM"))]

    def initial(self) -> tuple[State, Server]:
        server = initial_server(self.abstraction, self.setup())
        local = tuple(p.initial(0) for p in self.programs) + (("produce", 0, 0, 0, 0),)
        ghost: Ghost = ((0,) * self.protocol.messages, False, False)
        return (self.abstraction.key(server), local, ghost), server

    # -- steps -------------------------------------------------------------------------------
    def successors(self, state: State, skip: tuple[bool, ...]) -> Iterable[Successor]:
        key, local, ghost = state
        out: list[Successor] = []
        for proc, program in enumerate(self.programs):
            mine = local[proc]
            for move in program.moves(mine):
                out.append(self._move(key, local, ghost, proc, move))
            if mine[4] < self.protocol.crash_budget:  # EXPLORE-PROC-3: crashes within the budget
                out.append(self._crash(key, local, ghost, proc, "crashes", budget=True))
        produced = local[self.producer][1]
        if produced < self.protocol.messages:  # EXPLORE-PROC-2: the producer adds the next message
            n = produced + 1
            argv = (b"XADD", STREAM, message_id(n), b"job", b"poison" if n in self.protocol.poison else b"ok")
            _, new, server = self.executor.command(key, self.producer, argv)
            out.append((Step(self.producer, "command", argv),
                        (new, _replace(local, self.producer, ("produce", n, 0, 0, 0)), ghost), server))
        if not any(p.urgent(local[i]) for i, p in enumerate(self.programs)):  # EXPLORE-PROC-4
            ticked = tuple(
                (pc, msg, cursor, min(elapsed + 1, p.processing_ticks), crashes) if pc == "process"
                else (pc, msg, cursor, elapsed, crashes)
                for p, (pc, msg, cursor, elapsed, crashes) in zip(self.programs, local, strict=False))
            out.append((Step(-1, "tick", text=f"+{self.tick_ms} ms"),
                        (self.abstraction.advance(key, self.tick_ms), ticked + local[len(ticked):], ghost), None))
        return out

    def _move(self, key: Key, local: tuple[Local, ...], ghost: Ghost, proc: int, move: Move) -> Successor:
        if move.kind == "command":
            assert move.after is not None
            reply, new, server = self.executor.command(key, proc, move.argv)
            return (Step(proc, "command", move.argv), (new, _replace(local, proc, move.after(reply)), ghost), server)
        if move.message in self.protocol.poison:  # EXPLORE-PROC-3: a poison pill crashes, outside the budget
            return self._crash(key, local, ghost, proc, f"crashes processing poison pill "
                                                        f"{message_id(move.message).decode()}", budget=False)
        assert move.after is not None
        # EXPLORE-PROP-2: processing a message again with no crash before is a duplicate.
        counts, crashed, duplicate = ghost
        before = counts[move.message - 1]
        counts = counts[:move.message - 1] + (min(before + 1, 2),) + counts[move.message:]
        new_ghost: Ghost = (counts, crashed, duplicate or (before > 0 and not crashed))
        return (Step(proc, "local", text=move.text), (key, _replace(local, proc, move.after(None)), new_ghost), None)

    def _crash(self, key: Key, local: tuple[Local, ...], ghost: Ghost, proc: int, text: str,
               budget: bool) -> Successor:
        new, server = self.executor.crash(key, proc)
        crashes = local[proc][4] + (1 if budget else 0)
        restarted = self.programs[proc].initial(crashes)  # EXPLORE-PROC-3: from the start, holding nothing
        return (Step(proc, "crash" if budget else "local-crash", text=text),
                (new, _replace(local, proc, restarted), (ghost[0], True, ghost[2])), server)

    # -- properties --------------------------------------------------------------------------
    def facts(self, state: State) -> list[dict[str, bool]]:
        """Per message: added, delivered, pending, held, processed, dead-lettered (spec/exploration.md, "Properties")."""
        key, local, ghost = state
        view = self.abstraction.group_view(key, STREAM, GROUP)
        dead = {message_number(i.encode()) for i in self.abstraction.stream_ids(key, DEAD_LETTERS)}
        held = {msg for _, msg, *_ in local[:self.producer] if msg}
        added = local[self.producer][1]
        out = []
        for n in range(1, self.protocol.messages + 1):
            entry = StreamID(n, 0)
            out.append({
                "added": n <= added,
                "delivered": view.last_delivered is not None and view.last_delivered >= entry,
                "pending": entry in view.pending,
                "held": n in held,
                "processed": ghost[0][n - 1] > 0,
                "dead": n in dead,
            })
        return out

    def safety(self, state: State) -> Iterator[tuple[str, str]]:
        """EXPLORE-PROP-1 and EXPLORE-PROP-2 in ``state``."""
        for n, f in enumerate(self.facts(state), 1):
            if (f["delivered"] and not f["pending"] and not f["held"]
                    and not f["processed"] and not f["dead"]):
                yield NO_LOSS, f"message {message_id(n).decode()} was delivered and is no longer pending, " \
                               f"but nobody processed it and it is not in the dead-letter stream"
        if state[2][2]:
            yield NO_DUPLICATE, "a message was processed twice although no process crashed"

    def goal(self, prop: str, state: State) -> list[int]:
        """The messages for which liveness property ``prop`` is not yet met in ``state``.

        The goals of EXPLORE-PROP-3 (every message) and EXPLORE-PROP-4 (poison pills).
        """
        out = []
        for n, f in enumerate(self.facts(state), 1):
            if prop == ALL_DONE:
                done = f["delivered"] and not f["pending"] and not f["held"] and (f["processed"] or f["dead"])
            else:
                done = n not in self.protocol.poison or (f["dead"] and not f["pending"])
            if not done:
                out.append(n)
        return out


def _replace(local: tuple[Local, ...], proc: int, value: Local) -> tuple[Local, ...]:
    return local[:proc] + (value,) + local[proc + 1:]


# EXPLORE-PROC-6: the protocols, each with the verdicts it is expected to get.
PROTOCOLS: dict[str, Protocol] = {}


def _register(p: Protocol) -> None:
    PROTOCOLS[p.name] = p


_register(Protocol(
    "seed-consumer", "Two consumers of the Streams introduction (history from ID 0 until empty, then >; "
    "process; XACK), each crashing at most once; 2 messages, processing takes 1 tick.",
    [SeedConsumer(b"c1", 1), SeedConsumer(b"c2", 1)], messages=2,
    expected={NO_LOSS: True, NO_DUPLICATE: True, ALL_DONE: True}))
_register(Protocol(
    "recovery-worker", "A consumer reading > (crashes at most once) and the XAUTOCLAIM recovery worker of the "
    "stuck-pending-entries seed with min-idle 2 ticks and a poison-pill limit of 2 deliveries; "
    "message 2 is a poison pill; processing takes 1 tick.",
    [NewOnlyConsumer(b"c1", 1), RecoveryWorker(b"w", 1, 200, 2)], messages=2, poison=frozenset({2}),
    expected={NO_LOSS: True, NO_DUPLICATE: True, ALL_DONE: True, POISON_DEAD: True}))
_register(Protocol(
    "ack-before-processing", "Wrong: a consumer that XACKs a message before processing it (crashes at most once).",
    [AckFirstConsumer(b"c1", 1)], messages=1,
    expected={NO_LOSS: False, NO_DUPLICATE: True, ALL_DONE: False}))
_register(Protocol(
    "noack-reader", "Wrong: a consumer reading with NOACK (crashes at most once).",
    [NoAckReader(b"c1", 1)], messages=1,
    expected={NO_LOSS: False, NO_DUPLICATE: True, ALL_DONE: False}))
_register(Protocol(
    "short-min-idle", "Wrong: the recovery worker's min-idle (1 tick) is shorter than the processing time "
    "(2 ticks): it steals messages still being processed. No crashes.",
    [NewOnlyConsumer(b"c1", 2), RecoveryWorker(b"w", 2, 100, 5)], messages=1, crash_budget=0,
    expected={NO_LOSS: True, NO_DUPLICATE: False, ALL_DONE: True}))
_register(Protocol(
    "no-poison-limit", "Wrong: the recovery worker without the poison-pill limit (the seed's first version); "
    "message 1 is a poison pill, which crashes whoever processes it. No other crashes.",
    [NewOnlyConsumer(b"c1", 1), RecoveryWorker(b"w", 1, 200, None)], messages=1, poison=frozenset({1}),
    crash_budget=0, expected={NO_LOSS: True, NO_DUPLICATE: True, ALL_DONE: False, POISON_DEAD: False}))
_register(Protocol(
    "new-only-consumer", "Wrong: a consumer that only ever reads > and no recovery worker: a message it held "
    "when it crashed stays pending forever.",
    [NewOnlyConsumer(b"c1", 1)], messages=1,
    expected={NO_LOSS: True, NO_DUPLICATE: True, ALL_DONE: False}))
