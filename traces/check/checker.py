"""Exact conformance checking of a trace against the model (spec/trace-format.md, "What it means
for a trace to conform").

A trace conforms when *some* execution of the model explains it. The checker
searches for one, depth first, and keeps the search small:

* **Order.** Each command is an *operation* with an invocation event (``call``
  or ``send``) and a response event (the same ``call``, or the matching
  ``recv``; none when the reply never came). Operations execute one at a time;
  an operation can execute once its invocation has been read and must be
  complete (replied, or unblocked) before its response event. The search
  only makes decisions at response events (and ``close``): which available
  operation executes next, whether a blocked one times out, or whether to
  move on. Moving on *defers* what was available; a deferred operation may
  only run after an operation invoked later has run (otherwise the same
  order was already tried), which removes the duplicates a naive
  interleaving search would explore; a state already explored in full from
  another order is pruned too. The preferred choice is the natural one
  (execute what was sent, oldest first), so a trace whose order is the
  file's needs no backtracking at all.
* **Time.** In wall traces the model runs on a :class:`SymbolicClock`: every
  reading is a variable in its command's window, readings never decrease,
  and the model's comparisons of times branch only when the constraints
  collected so far do not decide them (:mod:`xspec.traces.check.symbolic`). A
  reply holding symbolic integers is compared with the trace's by adding
  equalities. Virtual traces run in file order with every reading ``now``.
* **Blocking** is two steps: a blocked operation completes when a later
  operation serves it (the served reply is checked then; the readings made
  while serving it lie in both windows) or when its timeout fires, a step of
  its own whose reading must have passed the deadline (7.0 times a client
  out once ``deadline < now``, BLOCK-8) and lie within the blocked command's
  window.
* **Model choices.** Where the real server's behaviour depends on something the
  model cannot know (the order of a walk over a hash table with a random seed,
  SWAPDB-8), the model asks ``Server.chooser``; the search answers like any
  other choice, so every alternative is explored (in virtual traces too).
* **Search.** Choices are recorded in a log; on a failure the search goes
  back to the last choice with an untried alternative, restores the nearest
  checkpoint before it (a copy of the model and the zone) and re-executes
  from there with the recorded choices. Nothing is copied while nothing
  branches. Past the step budget the verdict is ``inconclusive``.
* **Witness.** The search keeps the path of the execution it is on: one record per
  step (command, timeout, connect, close) and per blocked command served or model
  choice made within one, cut back with the checkpoint it returns to. When the
  search succeeds that path is the verdict's witness
  (:mod:`xspec.traces.check.witness`), built on first use: the steps in order, the
  clock readings of each at their lowest values (which satisfy every constraint
  together), which step served which blocked command, the model's choices.

A reply that differs fails its branch at once. When no execution explains the
whole trace, the first event that no execution explains is found by checking
prefixes (a prefix is a trace of its own: commands whose replies come later
have no reply yet), starting from the furthest event the failed search
reached; it is reported with the replies the model could give there, and the
witness is that of the longest prefix that conforms.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import gc
import hashlib
import importlib
import io
import pickle
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xspec.models import ManualClock, Server
from xspec.models.clock import Duration, Instant
from xspec.models.server import HANDLERS
from xspec.spec import commands as table
from xspec.spec.dialect import DIALECTS, Dialect, UnknownDialect, dialect_for_server, get_dialect
from xspec.spec.environment import environment_matches
from xspec.spec.ids import c_string
from xspec.spec.resp import Array, Int, Map, Reply, Set, show
from xspec.spec.trace_format import Call, Close, Connect, Recv, Send, Trace, TraceError
from xspec.spec.trace_format import Push as PushEvent
from xspec.traces.check import pushes as _pushes
from xspec.traces.check.symbolic import UNBOUNDED, Infeasible, LaterIds, SymbolicClock, Time, Zone, require_at_least
from xspec.traces.check.witness import Divergence, Witness, WitnessStep, collect_rules

STEP_BUDGET_BASE = 50_000
STEP_BUDGET_PER_EVENT = 20
"""The search gives up (inconclusive) after base + per_event * events operation executions."""

CHECKPOINT_DISTANCE = 4
"""A re-execution longer than this many events leaves a checkpoint at the choice it returns to."""

MAX_ALLOWED_SHOWN = 5
EXPLORED_LIMIT = 1_000_000
"""How many explored states the search remembers (by digest) to prune repeated orders."""
VISIT_BYTES_PER_STEP = 16_384
"""Remembering a state counts against the step budget: one step per this many bytes of state."""


@dataclass
class Verdict:
    """The outcome of checking one trace, and for a divergence where and why.

    ``witness`` is the execution the checker found (:class:`~xspec.traces.check.witness.Witness`):
    for a conforming trace, of the whole trace; for a diverging one, of the longest prefix
    that conforms, with the divergence. None for the other verdicts.
    """

    status: str  # conform | diverge | unsupported | inconclusive
    events: int
    event: int | None = None  # 1-based event index (line number minus 1) of the first problem
    message: str = ""
    got: Reply | None = None
    allowed: list[Reply] = field(default_factory=list)
    # ``allowed`` rendered, symbolic integers shown with the range of values they can take
    allowed_text: list[str] = field(default_factory=list)
    witness: Witness | None = None

    def describe(self) -> str:
        if self.status == "conform":
            return "conform"
        where = f" at event {self.event}" if self.event is not None else ""
        s = f"{self.status}{where}: {self.message}"
        divergence = self.witness.divergence if self.witness is not None else None
        if divergence is not None:
            details = divergence.detail_lines()
        else:
            details = [] if self.got is None else [f"trace says: {show(self.got)}"]
            details += [f"model allows: {a}" for a in self.allowed_text or [show(a) for a in self.allowed]]
        return s + "".join(f"\n    {line}" for line in details)


def trace_dialect(trace: Trace, override: str | None = None) -> Dialect:
    """The dialect to check ``trace`` against: ``override``, else the header's server, else (for a
    server no dialect models, such as a finding against a fork) the dialect its ``expect`` names."""
    if override and override != "auto":
        return get_dialect(override)
    nodes = getattr(trace.header, "nodes", None)
    server = next(iter(nodes.values())) if nodes else trace.header  # trace/2: its (first) node's server
    try:
        return dialect_for_server(server.server_name, server.server_version)
    except UnknownDialect:
        named = (trace.header.expect or {}).get("dialect")
        if isinstance(named, str) and named in DIALECTS:
            return DIALECTS[named]
        raise


# Settings the model reads besides the dialect's: save points decide what FLUSHALL does (FLUSH-6).
_MODELLED_SETTINGS = frozenset({"save"})


def _config_reason(trace: Trace, dialect: Dialect) -> str | None:
    for key in trace.header.config:
        if key not in dialect.config_defaults and key not in _MODELLED_SETTINGS:
            return f"sets {key!r}, a setting outside the model's scope"
    return None


def _dialect_scope_reason(trace: Trace, dialect: Dialect) -> str | None:
    """A command the dialect's model does not cover yet (``Dialect.unsupported``), or None."""
    if not dialect.unsupported:
        return None
    for e in trace.events:
        cmd = getattr(e, "cmd", None)
        if cmd:
            why = dialect.unsupported_reason(cmd)
            if why is not None:
                return why
    return None


class _Scope:
    """Which commands the model covers (rule 6), memoised by name and subcommand."""

    def __init__(self) -> None:
        self.containers: dict[bytes, bool] = {}  # first argument -> has subcommands
        self.known: dict[tuple[bytes, bytes], tuple[str | None, table.CommandSpec | None]] = {}

    def reason(self, cmd: list[bytes]) -> str | None:
        """Why ``cmd`` is outside the model's scope, None if it is inside."""
        first = cmd[0]
        container = self.containers.get(first)
        if container is None:
            base = table.COMMANDS.get(c_string(first).decode("latin-1").lower())
            container = base is not None and bool(base.subcommands)
            self.containers[first] = container
        key = (first, cmd[1] if container and len(cmd) > 1 else b"")
        entry = self.known.get(key)
        if entry is None:
            entry = self.known[key] = self._classify(cmd)
        why, unmodelled = entry
        if unmodelled is not None and unmodelled.arity_ok(len(cmd)):
            return f"uses {unmodelled.fullname.upper()}, which the model does not implement yet"
        return why

    @staticmethod
    def _classify(cmd: list[bytes]) -> tuple[str | None, table.CommandSpec | None]:
        """(why out of scope, or the command if it has no handler: out of scope when its arity is right)."""
        name = cmd[0].decode("latin-1").lower()
        if name in table.OUT_OF_SCOPE:
            return f"uses {name.upper()}, outside the model's scope", None
        spec = table.lookup(cmd)
        if spec is None or spec.subcommands or spec.fullname in HANDLERS:
            return None, None  # unknown or incomplete commands get the dispatcher's errors
        return None, spec


# ---------------------------------------------------------------------------
# Operations


@dataclass(slots=True)
class Op:
    """One command of the trace, from its invocation to its response."""

    inv: int  # event index (0-based) of the call or send; identifies the operation
    client: int
    argv: list[bytes]
    resp: int | None  # event index of the call or recv; None: the reply never came
    expected: Reply | None
    lo: int  # window of its clock readings, ms (wall traces)
    hi: int
    now: int | None = None  # virtual traces: the reading of the command
    recv_now: int | None = None  # virtual traces: the moment a blocking command ended


_CALL, _SEND, _RECV, _CONNECT, _CLOSE, _NOTE = range(6)
_PUSH = 19  # a Pub/Sub message (traces/check/pushes.py); past _NOTE, below the deployment's kinds


# Commands whose reply counts the stored keys, expired ones included until something deletes them.
_KEY_COUNT_READ = frozenset({b"dbsize"})
# What an internal step passes to ``_pushed`` as the command that sent its messages (none: every
# message comes after it).
_NO_OP = Op(-1, 0, [], None, None, 0, 0)
_KEYEVENT_EXPIRED = re.compile(rb"__keyevent@([0-9]+)__:expired")
_KEYSPACE = re.compile(rb"__keyspace@([0-9]+)__:(.*)", re.DOTALL)


_READS_REWRITE = frozenset({b"bgrewriteaof", b"info", b"bgsave", b"save", b"exec"})
"""Commands one server's clients can tell a running AOF rewrite from a finished one by (AOF-7), or
whether a BGSAVE's child runs and what the cron started since (FORK-1, FORK-2)."""
_FORKS = frozenset({b"bgrewriteaof", b"bgsave"})
_CHILD_STEPS = ("rewrite", "bgsave-done", "start-rewrite", "start-bgsave")
"""The deployment's steps about children the one-server checker takes (AOF-7, FORK-2)."""


def _rewrites_aof(trace: Trace) -> bool:
    """Whether a client of the trace runs BGREWRITEAOF (AOF-7) or BGSAVE (FORK-1)."""
    return any(type(e) in (Call, Send) and e.cmd and e.cmd[0].lower() in _FORKS  # type: ignore[union-attr]
               for e in trace.events)


def _reads_key_count(trace: Trace) -> bool:
    """Whether a client of the trace reads a key count (EXPIRE-ACTIVE-2)."""
    return any(type(e) in (Call, Send) and e.cmd and len(e.cmd[0]) == 6  # type: ignore[union-attr]
               and e.cmd[0].lower() in _KEY_COUNT_READ for e in trace.events)  # type: ignore[union-attr]


def _expired_message(reply: Reply) -> tuple[int, bytes] | None:
    """The database and key of an ``expired`` keyspace notification (NOTIFY-1); None for another message."""
    items: tuple[Any, ...] = getattr(reply, "items", ())
    kind = getattr(items[0], "value", None) if items else None
    if kind == b"message" and len(items) == 3:
        channel, payload = items[1], items[2]
    elif kind == b"pmessage" and len(items) == 4:
        channel, payload = items[2], items[3]
    else:
        return None
    name, text = getattr(channel, "value", None), getattr(payload, "value", None)
    if not isinstance(name, bytes) or not isinstance(text, bytes):
        return None
    m = _KEYEVENT_EXPIRED.fullmatch(name)
    if m:
        return int(m.group(1)), text
    m = _KEYSPACE.fullmatch(name)
    if m and text == b"expired":
        return int(m.group(1)), m.group(2)
    return None


class _Failure(Exception):
    """This branch does not explain event ``pos``."""

    def __init__(self, pos: int, message: str, got: Reply | None = None,
                 allowed: Reply | None = None, allowed_text: str | None = None) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message
        self.got = got
        self.allowed = allowed
        self.allowed_text = allowed_text


class _Pruned(Exception):
    """This branch reached a state whose every continuation has already failed."""


class _Exhausted(Exception):
    """The search budget ran out."""


# What the path of the current execution records (_Search.path): the steps, then what
# happened within the latest step.
_STEP_EXECUTE, _STEP_TIME_OUT, _STEP_CONNECT, _STEP_CLOSE, _BLOCKED, _SERVED, _MODEL_CHOICE = range(7)
_STEP_EXPIRE = -1  # the active expiry cycle deleted a key (EXPIRE-ACTIVE-2): a step, as those up to _STEP_CLOSE
_STEP_REWRITE = -2  # a BGREWRITEAOF's child finished (AOF-7): a step too
_STEP_KIND = {_STEP_EXECUTE: "command", _STEP_TIME_OUT: "timeout", _STEP_CONNECT: "connect", _STEP_CLOSE: "close"}


class _Choice:
    __slots__ = ("n", "chosen", "event", "complete")

    def __init__(self, n: int, chosen: int, event: int, complete: bool) -> None:
        self.n = n
        self.chosen = chosen
        self.event = event
        self.complete = complete


@dataclass
class _Checkpoint:
    """The search's state before event ``pos``, after ``choices`` choices and ``path`` path records."""

    pos: int
    choices: int
    path: int
    data: Any  # (pickled (server, driver state), shared objects), a deep copy of them, or None: the start
    zone: Any  # Zone.snapshot()


class _ServeInWindow:
    """Wraps a blocked client's serve function: readings while serving it also lie in its window."""

    __slots__ = ("serve", "lo", "hi", "clock")

    def __init__(self, serve: Callable[..., Any], lo: int, hi: int, clock: SymbolicClock) -> None:
        self.serve = serve
        self.lo = lo
        self.hi = hi
        self.clock = clock

    def __call__(self, *args: Any) -> Any:
        clock = self.clock
        lo, hi = clock.lo, clock.hi
        clock.lo, clock.hi = max(lo, self.lo), min(hi, self.hi)
        try:
            return self.serve(*args)
        finally:
            clock.lo, clock.hi = lo, hi

    def __deepcopy__(self, memo: dict[int, Any]) -> _ServeInWindow:
        return self


class _SnapshotPickler(pickle.Pickler):
    """Pickles the model's state, leaving shared objects (clock, zone, operations) out by reference."""

    def __init__(self, buffer: io.BytesIO, shared: dict[int, Any]) -> None:
        super().__init__(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self.refs = {key: n for n, key in enumerate(shared)}

    def persistent_id(self, obj: Any) -> int | None:
        return self.refs.get(id(obj))


class _SnapshotUnpickler(pickle.Unpickler):
    def __init__(self, buffer: io.BytesIO, shared: list[Any]) -> None:
        super().__init__(buffer)
        self.shared = shared

    def persistent_load(self, pid: Any) -> Any:
        return self.shared[pid]


def _window(t0: int | None, t1: int | None, slack: int) -> tuple[int, int]:
    lo = -UNBOUNDED if t0 is None else t0 // 1000 - slack
    hi = UNBOUNDED if t1 is None else -(-t1 // 1000) + slack
    return lo, hi


class _Unsupported(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _operations(trace: Trace) -> tuple[list[int], list[Op | None]]:
    """Classify events and pair every send with its recv (client by client, in order).

    Returns the kind of every event and the operation invoked or answered at
    each event (None for a recv that answers nothing). Raises
    :class:`_Unsupported` for a command outside the model's scope.
    """
    wall = trace.header.clock == "wall"
    slack = trace.header.slack_ms
    kinds: list[int] = []
    at: list[Op | None] = []
    sends: list[tuple[Op, int | None]] = []  # with the time of the send
    outstanding: dict[int, list[Op]] = {}
    confirming: dict[int, list[Reply]] = {}  # invocation -> the confirmations read so far
    scope = _Scope()
    for i, e in enumerate(trace.events):
        kind = type(e)
        if kind is Call:
            assert isinstance(e, Call)
            reason = scope.reason(e.cmd)
            if reason is not None:
                raise _Unsupported(reason)
            if not wall and e.now is None:
                raise TraceError(trace.path, i + 2, "a call in a virtual trace needs 'now'")
            lo, hi = _window(e.t0, e.t1, slack)
            op = Op(i, e.c, e.cmd, i, e.reply, lo, hi, e.now)
            kinds.append(_CALL)
            at.append(op)
        elif kind is Send:
            assert isinstance(e, Send)
            if e.cmd is None:
                raise _Unsupported("sends raw protocol bytes, which the model does not parse")
            reason = scope.reason(e.cmd)
            if reason is not None:
                raise _Unsupported(reason)
            if not wall and e.now is None:
                raise TraceError(trace.path, i + 2, "a send in a virtual trace needs 'now'")
            op = Op(i, e.c, e.cmd, None, None, -UNBOUNDED, UNBOUNDED, e.now)
            sends.append((op, e.t))
            outstanding.setdefault(e.c, []).append(op)
            kinds.append(_SEND)
            at.append(op)
        elif kind is Recv:
            assert isinstance(e, Recv)
            queue = outstanding.get(e.c)
            kinds.append(_RECV)
            if not queue:
                at.append(None)
                continue
            wanted = _pushes.confirmation_count(queue[0].argv)
            if wanted is not None and wanted != 1:  # several confirmations answer one command
                group = confirming.setdefault(queue[0].inv, [])
                group.append(e.reply)
                if len(group) < wanted or (wanted == 0 and _pushes.more_confirmations(trace, i, e.c, queue[0].argv)):
                    kinds[-1] = _NOTE
                    at.append(None)
                    continue
                e = Recv(e.c, _pushes.combined(confirming.pop(queue[0].inv)), e.t, e.now)
            op = queue.pop(0)
            op.resp = i
            op.expected = e.reply
            op.recv_now = e.now
            at.append(op)
        elif kind is PushEvent:
            assert isinstance(e, PushEvent)
            kinds.append(_PUSH)  # an operation of its own, complete once the model sent it
            at.append(Op(i, e.c, [], i, e.reply, -UNBOUNDED, UNBOUNDED))
        elif kind is Close:
            assert isinstance(e, Close)
            outstanding.pop(e.c, None)
            kinds.append(_CLOSE)
            at.append(None)
        else:
            kinds.append(_CONNECT if kind is Connect else _NOTE)
            at.append(None)
    if wall:
        for op, sent in sends:  # a send's window runs from the send to the recv
            received = trace.events[op.resp].t if op.resp is not None else None  # type: ignore[union-attr]
            op.lo, op.hi = _window(sent, received, slack)
    return kinds, at


# ---------------------------------------------------------------------------
# Replies


def _symbolic_view(r: Reply) -> tuple[Reply, str]:
    """A reply with concrete stand-ins for symbolic integers, and its text with their ranges."""
    if isinstance(r, Int) and isinstance(r.value, Time):
        low = r.value.zone.range_of(r.value.pos, r.value.neg)[0] + r.value.c
        return Int(low), f"(integer) {r.value.describe()}"
    if isinstance(r, Array):
        views = [_symbolic_view(i) for i in r.items]
        return Array(tuple(v[0] for v in views)), "[" + ", ".join(v[1] for v in views) + "]"
    if isinstance(r, Set):
        views = [_symbolic_view(i) for i in r.items]
        return Set(tuple(v[0] for v in views)), "[" + ", ".join(v[1] for v in views) + "]"
    if isinstance(r, Map):
        pairs = [(_symbolic_view(k), _symbolic_view(v)) for k, v in r.pairs]
        return (Map(tuple((k[0], v[0]) for k, v in pairs)),
                "{" + ", ".join(f"{k[1]}: {v[1]}" for k, v in pairs) + "}")
    return r, show(r)


def _steps_from_path(path: list[tuple[int, int, Any, int]], lo: list[int], wall: bool) -> tuple[WitnessStep, ...]:
    """The steps of an execution from its path (``_Search.path``) and, in a wall trace, the lowest
    value of every clock reading (``Zone.lo``)."""
    starts = [i for i, record in enumerate(path) if record[0] <= _STEP_CLOSE]
    steps: list[WitnessStep] = []
    for n, start in enumerate(starts):
        kind, pos, item, mark = path[start]
        end = starts[n + 1] if n + 1 < len(starts) else len(path)
        blocked = False
        served: list[int] = []
        choices: list[int] = []
        for record, _, detail, _ in path[start + 1:end]:
            if record == _BLOCKED:
                blocked = True
            elif record == _SERVED:
                served.append(detail.inv)
            else:
                choices.append(detail)
        readings: tuple[int, ...]
        if wall:
            stop = path[end][3] if n + 1 < len(starts) else len(lo)
            readings = tuple(lo[mark:stop])
        elif kind == _STEP_EXECUTE:
            readings = (item.now,)
        elif kind == _STEP_TIME_OUT:
            readings = (item.recv_now,)
        else:
            readings = ()
        if kind in (_STEP_EXECUTE, _STEP_TIME_OUT):
            op: Op = item
            steps.append(WitnessStep(_STEP_KIND[kind], op.inv, pos, op.client, op.argv, op.resp, readings,
                                     blocked, tuple(served), tuple(choices)))
        elif kind == _STEP_EXPIRE:
            dbid, key = item
            steps.append(WitnessStep("expire", pos, pos, 0, [key], readings=readings, db=dbid))
        elif kind == _STEP_REWRITE:
            steps.append(WitnessStep(item or "rewrite", pos, pos, 0, readings=readings))
        else:
            steps.append(WitnessStep(_STEP_KIND[kind], pos, pos, item, readings=readings,
                                     model_choices=tuple(choices)))
    return tuple(steps)


# ---------------------------------------------------------------------------
# The search


class _Search:
    """The depth-first search for an execution of the model that explains one trace.

    A model with steps of its own that no client causes (a deployment's replication) extends
    it through three hooks: :meth:`_internal_options` offers those steps at every decision,
    :meth:`_internal` takes one, and :meth:`_other_event` handles event kinds beyond the
    client's (``kinds`` values past ``_NOTE``). With ``INTERNAL_STEPS`` false (one server)
    none of them is called.
    """

    INTERNAL_STEPS = False
    """True when the model has internal steps: then even a lone call is a decision point."""

    def __init__(self, trace: Trace, dialect: Dialect, kinds: list[int], at: list[Op | None]) -> None:
        self.trace = trace
        self.dialect = dialect
        self.kinds = kinds
        self.at = at
        self.wall = trace.header.clock == "wall"
        self.n = len(trace.events)
        self.config = trace.header.config
        # next_inv[p]: the first invocation event after p (n if none)
        self.next_inv = [self.n] * (self.n + 1)
        nxt = self.n
        for p in range(self.n - 1, -1, -1):
            self.next_inv[p] = nxt
            if kinds[p] in (_CALL, _SEND):
                nxt = p
        self.zone = Zone()
        self.zone.choose = self.choose
        self.clock: SymbolicClock | ManualClock
        if self.wall:
            self.clock = SymbolicClock(self.zone)
        else:
            self.clock = ManualClock(0)
        self.log: list[_Choice] = []
        self.k = 0  # next log entry to replay or create
        self.branching = self.wall
        self.steps = 0
        self.budget = STEP_BUDGET_BASE + STEP_BUDGET_PER_EVENT * self.n
        self.later_ids: LaterIds | None = None  # built on first use (_later_ids)
        self.incomplete = False
        self.checkpoints = [_Checkpoint(0, 0, 0, None, None)]
        self.checkpoint_at = -1
        # Set by an event whose effect is costly to redo (a restart's reload): the next event
        # starts with a checkpoint, so that backtracking to a later choice does not redo it.
        self.checkpoint_next = False
        self.explored: set[bytes] = set()
        self.searching = False  # some path has failed: remember every state on the later ones
        self.best: _Failure | None = None
        self.alternatives: list[_Failure] = []
        # The model's own open choices (the order of a hash-table walk, SWAPDB-8). One bound
        # method for the whole search, so that snapshots can refer to it instead of copying it.
        self.model_chooser = self._model_choice
        # Pub/Sub: each client's push events in order, each one's place among them, and each
        # client's last event (traces/check/pushes.py)
        self.push_ops: dict[int, list[Op]] = {}
        self.push_index: dict[int, int] = {}
        self.last_event: dict[int, int] = {}
        for p, e in enumerate(trace.events):
            c = getattr(e, "c", None)
            if c is not None:
                self.last_event[c] = p
            if kinds[p] == _PUSH and at[p] is not None:
                mine = self.push_ops.setdefault(c, [])  # type: ignore[arg-type]
                self.push_index[p] = len(mine)
                mine.append(at[p])  # type: ignore[arg-type]
        # EXPIRE-ACTIVE-2: one server, in a trace where a client reads the key count or gets an
        # ``expired`` message, takes the active expiry cycle's deletions as internal steps (other traces
        # cannot tell them from lazy expiry). The messages: push event -> (database, key, latest moment;
        # a virtual trace's messages carry no time).
        self.expired_pushes: dict[int, tuple[int, bytes, int]] = {}
        self.active_expiry = False
        # AOF-7: one server's BGREWRITEAOF runs until its ``rewrite`` step, taken where a client can tell.
        self.aof_rewrites = False
        if not type(self).INTERNAL_STEPS:
            slack = trace.header.slack_ms
            for p in self.push_index:
                e = trace.events[p]
                expired = _expired_message(e.reply)  # type: ignore[union-attr]
                if expired is not None:
                    latest = _window(None, e.t, slack)[1] if self.wall else UNBOUNDED  # type: ignore[union-attr]
                    self.expired_pushes[p] = (*expired, latest)
            # A virtual trace is checked in file order without a search: it takes the deletions its
            # messages show and keeps DBSIZE's range (when a tick of the cycle fell is not in the trace).
            self.active_expiry = bool(self.expired_pushes) or (self.wall and _reads_key_count(trace))
            self.aof_rewrites = _rewrites_aof(trace)
        if self.active_expiry or self.aof_rewrites:
            self.INTERNAL_STEPS = True
        self._fresh()

    # -- state ------------------------------------------------------------------
    def _fresh(self) -> None:
        self.server = Server(self.dialect, self.clock, self.config)  # type: ignore[arg-type]
        self.server.chooser = self.model_chooser
        if self.active_expiry and self.wall:
            self.server.active_expiry_steps = True  # EXPIRE-ACTIVE-2: DBSIZE counts exactly
        self.pos = 0
        self.queues: dict[int, list[Op]] = {}  # invoked, not executed, per client in order
        self.live: dict[int, Op] = {}  # invocation event -> operation invoked and not complete
        self.blocked: dict[int, Op] = {}  # client -> its blocked op
        self.deferred: dict[int, int] = {}  # invocation event -> event where it was passed over
        self.timeout_deferred: dict[int, int] = {}
        self.max_inv = -1
        self.zone.reset()
        # The current execution, one record per step and per event within one (_STEP_* ...):
        # (kind, event reached, operation / client / choice, clock readings before it). A
        # restored checkpoint cuts it back, so once the search succeeds it is the witness.
        self.path: list[tuple[int, int, Any, int]] = []

    def _driver_state(self) -> tuple[Any, ...]:
        return (self.pos, self.queues, self.live, self.blocked, self.deferred, self.timeout_deferred,
                self.max_inv)

    def _shared(self) -> dict[int, Any]:
        """Objects a snapshot refers to but never copies: the clock, the zone, the operations."""
        shared: dict[int, Any] = {id(self.clock): self.clock, id(self.dialect): self.dialect,
                                  id(self.zone): self.zone, id(self.model_chooser): self.model_chooser}
        for op in self.live.values():
            shared[id(op)] = op
        return shared

    def _take_checkpoint(self) -> None:
        state = (self.server, self._driver_state())
        shared = self._shared()
        buffer = io.BytesIO()
        try:
            _SnapshotPickler(buffer, shared).dump(state)
            data: Any = (buffer.getvalue(), list(shared.values()))
        except (pickle.PicklingError, TypeError, AttributeError):
            data = copy.deepcopy(state, shared)  # something in the model does not pickle
        self.checkpoints.append(_Checkpoint(self.pos, self.k, len(self.path), data, self.zone.snapshot()))

    def _restore(self, cp: _Checkpoint) -> None:
        if cp.data is None:
            self._fresh()
            return
        if isinstance(cp.data[0], bytes):
            pickled, shared = cp.data
            server, driver = _SnapshotUnpickler(io.BytesIO(pickled), shared).load()
        else:
            memo = {id(self.clock): self.clock, id(self.dialect): self.dialect, id(self.zone): self.zone,
                    id(self.model_chooser): self.model_chooser}
            for op in cp.data[1][2].values():
                memo[id(op)] = op
            server, driver = copy.deepcopy(cp.data, memo)
        self.server = server
        (self.pos, self.queues, self.live, self.blocked, self.deferred, self.timeout_deferred,
         self.max_inv) = driver
        self.zone.restore(cp.zone)
        del self.path[cp.path:]

    # -- choices ------------------------------------------------------------------
    def choose(self, n: int, complete: bool = True) -> int:
        if not self.branching:
            return 0
        return self._logged_choice(n, complete)

    def _model_choice(self, n: int) -> int:
        """A choice the model itself leaves open (``Server.chooser``): which of ``n`` keys a
        hash-table walk signals next (SWAPDB-8). Unlike the choices of order and time it is
        explored in virtual traces too, which otherwise run in file order without branching."""
        chosen = self._logged_choice(n, True)
        self.path.append((_MODEL_CHOICE, self.pos, chosen, 0))
        return chosen

    def _logged_choice(self, n: int, complete: bool) -> int:
        """Replay the recorded choice, or record a new one starting with alternative 0."""
        k = self.k
        self.k = k + 1
        if k < len(self.log):
            entry = self.log[k]
            if entry.n != n:
                raise RuntimeError("the model is not deterministic: a replayed choice changed")
            return entry.chosen
        self.log.append(_Choice(n, 0, self.pos, complete))
        return 0

    def _backtrack(self) -> bool:
        """Move to the next untried alternative; False when there is none."""
        log = self.log
        while log and log[-1].chosen + 1 >= log[-1].n:
            if not log[-1].complete:
                self.incomplete = True
            log.pop()
        if not log:
            return False
        target = len(log) - 1
        log[target].chosen += 1
        self.searching = True
        while self.checkpoints[-1].choices > target:
            self.checkpoints.pop()
        cp = self.checkpoints[-1]
        self._restore(cp)
        self.checkpoint_next = False
        self.k = cp.choices
        event = log[target].event
        self.checkpoint_at = event if event - cp.pos > CHECKPOINT_DISTANCE else -1
        return True

    # -- running ------------------------------------------------------------------
    def run(self) -> Verdict:
        n = self.n
        while True:
            try:
                self._run()
                # The witness's steps are built on first use, from the path and the readings alone.
                build = functools.partial(_steps_from_path, self.path, self.zone.lo, self.wall)
                return Verdict("conform", n, witness=Witness(n, None, build))
            except _Failure as f:
                self._record(f)
            except _Pruned:
                pass
            except _Exhausted:
                return self._verdict("inconclusive", "the search bound was reached before an execution "
                                     "explaining the trace was found")
            if not self._backtrack():
                if self.incomplete:
                    return self._verdict("inconclusive", "some clock values were not tried")
                return self._verdict("diverge", None)

    def _record(self, f: _Failure) -> None:
        if self.best is None or f.pos > self.best.pos:
            self.best = f
            self.alternatives = [f]
        elif f.pos == self.best.pos and len(self.alternatives) < 50:
            self.alternatives.append(f)

    def _verdict(self, status: str, message: str | None) -> Verdict:
        f = self.best
        if f is None:
            return Verdict(status, self.n, message=message or "")
        allowed: list[Reply] = []
        texts: list[str] = []
        got = f.got
        for a in self.alternatives:
            if a.allowed is not None and a.allowed_text not in texts and len(texts) < MAX_ALLOWED_SHOWN:
                allowed.append(a.allowed)
                texts.append(a.allowed_text or show(a.allowed))
            if got is None and a.got is not None:
                got = a.got
        msg = message or f.message
        if message and status == "inconclusive":
            msg = f"{message}; the furthest any execution reached: {f.message}"
        witness = None
        if status == "diverge":
            op = self.at[f.pos]
            divergence = Divergence(f.pos, msg, None if op is None else op.argv, got, tuple(allowed), tuple(texts))
            witness = Witness(0, divergence)  # the prefix that conforms is found later (_first_unexplained)
        return Verdict(status, self.n, f.pos + 1, msg, got, allowed, texts, witness)

    def _run(self) -> None:
        kinds, at = self.kinds, self.at
        n = self.n
        internal = self.INTERNAL_STEPS
        while self.pos < n:
            p = self.pos
            if p == self.checkpoint_at or self.checkpoint_next:
                if p == self.checkpoint_at:
                    self.checkpoint_at = -1
                self.checkpoint_next = False
                self._take_checkpoint()
            kind = kinds[p]
            op = at[p]
            if kind == _CALL:
                assert op is not None
                if not self.live and not internal:
                    self._execute(op)
                else:
                    self.queues.setdefault(op.client, []).append(op)
                    self.live[op.inv] = op
                    self._decide(p, op)
            elif kind == _SEND:
                assert op is not None
                self.queues.setdefault(op.client, []).append(op)
                self.live[op.inv] = op
            elif kind == _RECV:
                if op is None:
                    e = self.trace.events[p]
                    raise _Failure(p, "a reply to no command: the client has nothing outstanding",
                                   e.reply)  # type: ignore[union-attr]
                if op.inv in self.live:
                    self._decide(p, op)
            elif kind == _CLOSE:
                self._decide(p, None)
                self._close(self.trace.events[p].c)  # type: ignore[union-attr]
            elif kind == _CONNECT:
                client = self.trace.events[p].c  # type: ignore[union-attr]
                self.path.append((_STEP_CONNECT, p, client, len(self.zone.lo)))
                self.server.client(client)
            elif kind == _PUSH:
                assert op is not None
                if self.server.client(op.client).pushes_sent <= self.push_index[op.inv]:
                    # the model has not sent it yet: run commands until it has
                    self.live[op.inv] = op
                    self._decide(p, op)
            elif kind > _NOTE:
                self._decide(p, None)
                self._other_event(p, self.trace.events[p])
            self.pos = p + 1

    def _other_event(self, p: int, event: Any) -> None:
        """An event of a kind the single-server search does not know (a subclass's)."""
        raise NotImplementedError(f"event {p}: {type(event).__name__}")

    def _close(self, client: int) -> None:
        self.path.append((_STEP_CLOSE, self.pos, client, len(self.zone.lo)))
        self._forget_client(client)
        self.server.close(client)

    def _forget_client(self, client: int) -> None:
        """The search stops tracking ``client``'s commands: whatever it had outstanding is gone."""
        for op in self.queues.pop(client, []):
            self.live.pop(op.inv, None)
            self.deferred.pop(op.inv, None)
        blocked = self.blocked.pop(client, None)
        if blocked is not None:
            self.live.pop(blocked.inv, None)
            self.timeout_deferred.pop(blocked.inv, None)

    # -- decisions ------------------------------------------------------------------
    def _decide(self, p: int, required: Op | None) -> None:
        """Run operations until ``required`` is complete, then choose when to move past event ``p``."""
        live = self.live
        internal = self.INTERNAL_STEPS
        lazy: list[Any] = []
        while True:
            options: list[tuple[int, Any]] = []
            heads = self._heads()
            if internal:
                eager, lazy = self._internal_options(heads)
                options.extend((3, s) for s in eager)
            options.extend((0, h) for h in heads)
            done = required is None or required.inv not in live
            if required is not None and not done and self.blocked.get(required.client) is required \
                    and self._can_time_out(required):
                options.append((1, required))
            if done and self._may_move_on(p, heads):
                options.append((2, None))
            if self.branching:
                for b in sorted(self.blocked.values(), key=lambda o: o.inv):
                    if b is not required and self._can_time_out(b):
                        options.append((1, b))
            if lazy:
                options.extend((3, s) for s in lazy)
            if not options:
                raise self._stuck(p, required)
            if (len(heads) > 1 or self.searching) and self.branching and self.k == len(self.log):
                # A new choice between orders, or, once the first path failed, any step while
                # operations overlap (not one replayed on the way back to a later choice).
                self._visit()
            kind, op = options[self.choose(len(options)) if len(options) > 1 else 0]
            if kind == 0:
                self._execute(op)
            elif kind == 1:
                self._time_out(op)
            elif kind == 3:
                self._internal(p, op)
            else:
                for h in heads:
                    self.deferred[h.inv] = p
                if self.branching:
                    for b in self.blocked.values():
                        self.timeout_deferred[b.inv] = p
                return

    def _heads(self) -> list[Op]:
        """The next command of every client that can run now and was not passed over (see ``deferred``),
        in invocation order."""
        heads = []
        for client, queue in self.queues.items():
            if queue and client not in self.blocked:
                head = queue[0]
                since = self.deferred.get(head.inv)
                if since is None or self.max_inv > since:
                    heads.append(head)
        heads.sort(key=lambda o: o.inv)
        return heads

    def _internal_options(self, heads: list[Op]) -> tuple[list[Any], list[Any]]:
        """The model's internal steps possible now: those tried before the clients' commands
        (eager) and those tried last (lazy). Only called when ``INTERNAL_STEPS``.

        One server's only internal step is the active expiry of a key (EXPIRE-ACTIVE-2), offered last,
        where a key count is about to be read or a client waits for an ``expired`` message: the key with
        a time that comes first by database and name (the keys are alike to a count, so deleting them
        in that one order reaches every count without trying each subset), and the key of each client's
        next message when that is an ``expired`` one (the order the messages show)."""
        steps: list[Any] = self._rewrite_options(heads) if self.aof_rewrites else []
        count = self.wall and any(h.argv and c_string(h.argv[0]).lower() in _KEY_COUNT_READ for h in heads)
        if not count and not any(inv in self.live for inv in self.expired_pushes):
            return [], steps
        dbs = self.server.dbs
        if count:
            for dbid, db in enumerate(dbs):
                expires = getattr(db, "expires", None)
                if expires:
                    steps.append(("expire", dbid, min(expires)))
                    break
        for cid, mine in self.push_ops.items():
            client = self.server.clients.get(cid)
            sent = 0 if client is None else client.pushes_sent
            expired = self.expired_pushes.get(mine[sent].inv) if sent < len(mine) else None
            if expired is not None:
                dbid, key, _ = expired
                step = ("expire", dbid, key)
                if step not in steps and key in getattr(dbs[dbid], "expires", ()):
                    steps.append(step)
        return [], steps

    def _rewrite_options(self, heads: list[Op]) -> list[Any]:
        """The running BGREWRITEAOF's end (AOF-7), offered only before a command that can tell it
        happened (another BGREWRITEAOF, INFO): elsewhere its moment changes nothing a client sees."""
        node = self.server.node
        if node is None or not any(h.argv and h.argv[0].lower() in _READS_REWRITE for h in heads):
            return []
        return [(kind,) for kind, name in node.deployment.steps() if kind in _CHILD_STEPS and name == node.name]

    def _internal(self, p: int, step: Any) -> None:
        """Take one internal step (one of :meth:`_internal_options`) while deciding at event ``p``:
        the active expiry cycle deletes a key whose time has passed (EXPIRE-ACTIVE-2), or the running
        AOF rewrite finishes (AOF-7). An expiry runs before every command not run yet and every message
        not sent yet, so before the earliest of their ends."""
        self.steps += 1
        if self.steps > self.budget:
            raise _Exhausted()
        if step[0] in _CHILD_STEPS:
            self.path.append((_STEP_REWRITE, self.pos, None if step[0] == "rewrite" else step[0], len(self.zone.lo)))
            if step[0] == "rewrite":
                self.server.aof_rewrite_done()
            else:
                self.server.persistence_step(step[0])  # FORK-2
            return
        _, dbid, key = step
        when = self.server.keyspace(dbid).expires[key]
        if not self.wall:
            # A virtual trace: the cycle ran with the clock past the key's time, before the next command's
            # reading (with none left, any time may have passed).
            nows = [h.now for h in self._heads() if h.now is not None]
            self.clock.ms = min(nows) if nows else Instant.exact_ms(when) + 1  # type: ignore[union-attr]
            self.path.append((_STEP_EXPIRE, self.pos, (dbid, key), len(self.zone.lo)))
            self.server.active_expire(dbid, key)
            if key in self.server.keyspace(dbid).expires:
                raise _Failure(p, f"the active expiry cycle cannot have deleted {key!r} before its time")
            sent, self.server.pushes = list(self.server.pushes), ()
            if sent:
                self._pushed(_NO_OP, sent)
            return
        hi = min((h.hi for h in self._heads()), default=UNBOUNDED)
        for inv, (_, _, latest) in self.expired_pushes.items():
            if inv in self.live and latest < hi:
                hi = latest
        self.clock.set_window(-UNBOUNDED, hi)  # type: ignore[union-attr]
        self.zone.forget_trail()
        self.path.append((_STEP_EXPIRE, self.pos, (dbid, key), len(self.zone.lo)))
        try:
            require_at_least(self.clock.now_ms(), when + Duration(1))  # type: ignore[union-attr]
            self.server.active_expire(dbid, key)
        except Infeasible as e:
            raise _Failure(p, f"no clock reading lets the active expiry cycle delete {key!r}: {e}") from None
        if key in self.server.keyspace(dbid).expires:  # EXPIRE-ACTIVE-4: clients paused, the cycle deleted nothing
            raise _Failure(p, f"the active expiry cycle cannot delete {key!r} while clients are paused")
        sent, self.server.pushes = list(self.server.pushes), ()
        if sent:
            self._pushed(_NO_OP, sent)

    def _visit(self) -> None:
        """Prune a state this search has already explored in full (from another order).

        The key is exact only when no symbolic time is stored in the model (freezing
        then fails on the unhashable times and nothing is pruned): the zone then
        matters to the future only through the lowest value of the latest reading.
        """
        try:
            key = (self.pos, *self._frozen(), self.max_inv,
                   tuple(sorted((c, tuple(o.inv for o in q)) for c, q in self.queues.items() if q)),
                   tuple(sorted((c, o.inv) for c, o in self.blocked.items())),
                   tuple(sorted(self.deferred.items())), tuple(sorted(self.timeout_deferred.items())))
            hash(key)
        except TypeError:
            return
        data = repr(key).encode()  # canonical, unlike a pickle (which follows object sharing)
        self.steps += len(data) // VISIT_BYTES_PER_STEP  # a large state costs like running commands
        digest = hashlib.blake2b(data, digest_size=20).digest()
        if digest in self.explored:
            raise _Pruned()
        if len(self.explored) < EXPLORED_LIMIT:
            self.explored.add(digest)

    def _frozen(self) -> tuple[Any, Any]:
        """The model's state and what the clock constraints leave of it that matters to the future,
        for :meth:`_visit` (raises TypeError when it cannot be made hashable); with the AOF and the
        children the server's persistence keeps (AOF-7, FORK-1, FORK-2), which its freeze leaves out."""
        node = self.server.node
        if node is None:
            return self.server.freeze(), self.zone.lo[-1]
        files = (None if node.aof is None else node.aof.freeze(), node.bgsave_child is not None,
                 node.rewrite_scheduled, node.bgsave_scheduled)
        return (self.server.freeze(), files), self.zone.lo[-1]

    def _may_move_on(self, p: int, heads: list[Op]) -> bool:
        """Moving on defers the available heads; useless if one must run before anything new arrives."""
        nxt = self.next_inv[p]
        for h in heads:
            if h.resp is not None and h.resp < nxt:
                return False
        return True

    def _can_time_out(self, op: Op) -> bool:
        if op.resp is None:
            return False  # nothing observes it: staying blocked explains as much
        since = self.timeout_deferred.get(op.inv)
        if since is not None and self.max_inv <= since:
            return False
        state = self.server.clients[op.client].blocked
        if state is None or state.deadline is None:
            return False
        if not self.wall:
            return op.recv_now is not None and op.resp == self.pos
        deadline = state.deadline
        if isinstance(deadline, Time):
            low = self.zone.range_of(deadline.pos, deadline.neg)[0] + deadline.c
        else:
            low = Instant.exact_ms(deadline)
        return low < op.hi  # BLOCK-8: the moment must pass the deadline

    def _stuck(self, p: int, required: Op | None) -> _Failure:
        e = self.trace.events[p]
        got = getattr(e, "reply", None)
        if required is not None and required.client in self.blocked \
                and self.blocked[required.client] is required:
            return _Failure(p, "the model is still blocked here: nothing served the command and its "
                               "timeout cannot fire within its window", got)
        return _Failure(p, "no execution order reaches this event", got)

    # -- steps ------------------------------------------------------------------
    def _begin(self, op: Op) -> None:
        self.steps += 1
        if self.steps > self.budget:
            raise _Exhausted()
        if self.wall:
            expected = op.expected if op.resp is not None else self._later_ids()
            self.clock.set_window(op.lo, op.hi, expected)  # type: ignore[union-attr]
            self.zone.forget_trail()
        else:
            self.clock.ms = op.now  # type: ignore[union-attr]

    def _later_ids(self) -> LaterIds:
        """ID hints for commands whose reply never came: the IDs the trace's replies show."""
        if self.later_ids is None:
            self.later_ids = LaterIds(getattr(e, "reply", None) for e in self.trace.events)
        return self.later_ids

    def _execute(self, op: Op) -> None:
        self._begin(op)
        self.path.append((_STEP_EXECUTE, self.pos, op, len(self.zone.lo)))
        queue = self.queues.get(op.client)
        if queue:
            if queue[0] is op:
                queue.pop(0)
            self.live.pop(op.inv, None)
            self.deferred.pop(op.inv, None)
        if op.inv > self.max_inv:
            self.max_inv = op.inv
        try:
            out = self.server.execute(op.client, op.argv)
        except Infeasible as e:
            raise _Failure(self.pos, f"no clock reading fits the time windows: {e}") from None
        if out.blocked:
            self.path.append((_BLOCKED, self.pos, op, 0))
            self.live[op.inv] = op
            self.blocked[op.client] = op
            state = self.server.clients[op.client].blocked
            if self.wall and state is not None:
                state.serve = _ServeInWindow(state.serve, op.lo, op.hi, self.clock)  # type: ignore[arg-type]
        else:
            self._check(op, out.reply)
        if out.served:
            self._served(out.served)
        if out.pushes:
            self._pushed(op, out.pushes)

    def _pushed(self, op: Op, sent: list[tuple[int, Reply]]) -> None:
        """Messages a step sent: the n-th of a client is its n-th ``push`` event (traces/check/pushes.py)."""
        firsts: dict[int, int] = {}
        for cid, _ in sent:
            firsts[cid] = firsts.get(cid, 0) + 1
        for cid in firsts:
            firsts[cid] = self.server.client(cid).pushes_sent - firsts[cid]
        for cid, reply in sent:
            k = firsts[cid]
            firsts[cid] = k + 1
            events = self.push_ops.get(cid, ())
            if k >= len(events):
                if self.last_event.get(cid, -1) > self.pos:
                    raise _Failure(self.pos, f"the model sends client {cid} a message the trace does not show", None,
                                   reply, show(reply))
                continue
            pushed = events[k]
            if pushed.inv < op.inv:
                raise _Failure(pushed.inv, "a message received before the command that sent it was sent",
                               pushed.expected)
            if reply != pushed.expected:
                raise _Failure(pushed.inv, "message differs", pushed.expected, reply, show(reply))
            self.live.pop(pushed.inv, None)

    def _served(self, served_replies: list[tuple[int, Reply]]) -> None:
        """Blocked commands a step served, with their replies (checked now)."""
        for cid, reply in served_replies:
            served = self.blocked.pop(cid, None)
            if served is None:
                continue
            self.path.append((_SERVED, self.pos, served, 0))
            self.live.pop(served.inv, None)
            self.timeout_deferred.pop(served.inv, None)
            self._check(served, reply)

    def _time_out(self, op: Op) -> None:
        self._begin(op)
        self.path.append((_STEP_TIME_OUT, self.pos, op, len(self.zone.lo)))
        if not self.wall:
            self.clock.ms = op.recv_now  # type: ignore[union-attr]
        state = self.server.clients[op.client].blocked
        assert state is not None and state.deadline is not None
        if self.wall:
            try:
                # BLOCK-8: 7.0 times a client out once the clock has passed its deadline.
                require_at_least(self.clock.now_ms(), state.deadline + Duration(1))
            except Infeasible:
                raise _Failure(self.pos, "the blocked command cannot time out within its window") from None
        elif op.recv_now is None or state.deadline >= Instant(op.recv_now):  # BLOCK-8
            raise _Failure(self.pos, "the model's deadline for the blocked command is later than the "
                                     "moment the trace says it timed out")
        self.blocked.pop(op.client, None)
        self.live.pop(op.inv, None)
        self.timeout_deferred.pop(op.inv, None)
        reply = self.server.timeout(op.client)
        self._check(op, reply)

    def _check(self, op: Op, reply: Reply | None) -> None:
        expected = op.expected
        if expected is None or op.resp is None:
            return
        if reply is not None:
            if self.wall:
                zone = self.zone
                mark = zone.mark()
                zone.assume = True
                try:
                    same = reply == expected
                finally:
                    zone.assume = False
                if same:
                    return
                zone.undo(mark)
            elif reply == expected:
                return
            if environment_matches(op.argv, expected, reply):  # rule 5: checked by shape
                return
            model, text = _symbolic_view(reply)
            raise _Failure(op.resp, "reply differs", expected, model, text)
        raise _Failure(op.resp, "the model gives no reply to this command", expected)


MULTINODE_CHECKERS: list[Callable[[Trace, str | None], Verdict]] = []
"""The checker of trace/2 histories (``xspec.traces.check.multinode`` adds it when imported)."""


def check_trace(trace: Trace, dialect: str | None = None, *, rules: bool = False) -> Verdict:
    """Does some execution of the model explain ``trace``? (spec/trace-format.md, rules 1-6).

    The verdict's ``witness`` is the execution found. ``rules`` also gives each of its steps
    the rules the model went through (a replay of the witness that follows the model's lines:
    several times slower than checking).
    """
    if getattr(trace.header, "nodes", None) is not None:
        trace = _pushes.single_node_view(trace) or trace  # one server with Pub/Sub messages: checked here
    if getattr(trace.header, "nodes", None) is not None:
        # trace/2 (rules 7-11): the deployment's search, which builds on this module's; it registers
        # itself in MULTINODE_CHECKERS when imported (importing it here by name would be a cycle).
        if not MULTINODE_CHECKERS:
            importlib.import_module("xspec.traces.check.multinode")
        gc.freeze()
        try:
            return MULTINODE_CHECKERS[0](trace, dialect)
        finally:
            gc.unfreeze()
    d = trace_dialect(trace, dialect)
    n = len(trace.events)
    reason = _config_reason(trace, d) or _dialect_scope_reason(trace, d)
    if reason is not None:
        return Verdict("unsupported", n, message=reason)
    try:
        operations = _operations(trace)
    except _Unsupported as e:
        return Verdict("unsupported", n, message=e.reason)
    # The trace and the model's state are long-lived: keep the cycle collector from walking
    # them again and again while the search allocates (a third of the time on long traces).
    gc.freeze()
    try:
        verdict = _Search(trace, d, *operations).run()
        if verdict.status == "diverge":
            verdict = _first_unexplained(trace, d, verdict)
    finally:
        gc.unfreeze()
    if rules and verdict.witness is not None and verdict.witness.steps:
        verdict.witness = collect_rules(trace, d, verdict.witness)
    return verdict


def _first_unexplained(trace: Trace, dialect: Dialect | None, verdict: Verdict,
                       search: Callable[[Trace], Verdict] | None = None, *, reached: bool = False) -> Verdict:
    """The divergence at the first event no execution explains.

    Explaining a prefix is monotone in its length, so this is a search for the
    shortest prefix that diverges, starting around the event the failed search
    reached. A prefix the search cannot decide leaves the divergence at the
    shortest prefix known to diverge. ``search`` checks a prefix (default: the
    single-server search in ``dialect``). ``reached``: the failed search's furthest
    event is known to end a diverging prefix (no execution got past it), so only
    the prefix before it is checked, for a failure reported at a later reply.
    """
    n = len(trace.events)

    def prefix(length: int) -> Verdict:
        shorter = Trace(trace.header, trace.events[:length], trace.path)
        if search is not None:
            return search(shorter)
        assert dialect is not None
        return _Search(shorter, dialect, *_operations(shorter)).run()

    good, bad, found = 0, n, verdict  # prefixes of length <= good conform; of length bad diverges
    explained = Witness(0)  # the execution explaining the prefix of length good
    hint = verdict.event or n
    lengths = [length for length in (hint - 1, hint) if 0 < length < n]
    if reached and 0 < hint < n:
        bad = hint
    while bad - good > 1:
        length = lengths.pop(0) if lengths else (good + bad) // 2
        if not good < length < bad:
            continue
        v = prefix(length)
        if v.status == "conform":
            good = length
            assert v.witness is not None
            explained = v.witness
        elif v.status == "diverge":
            bad, found = length, v
        else:
            found.message += (f" (no execution explains the first {bad} events; whether one explains the first "
                              f"{length} is past the search bound)")
            break
    found.events = n
    divergence = found.witness.divergence if found.witness is not None else None
    if divergence is not None:
        divergence = dataclasses.replace(divergence, message=found.message)
    found.witness = Witness(good, divergence, explained.build)
    return found
