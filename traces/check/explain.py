"""``xspec explain TRACE``: replay a trace on the model and show, step by step, the state that
matters and the spec rules that changed it.

How a trace is replayed:

* **Order and time.** The conformance checker (:mod:`xspec.traces.check.checker`) decides in which
  order the server executed overlapping commands and which clock readings explain the trace,
  and returns that execution as its witness (:mod:`xspec.traces.check.witness`): the steps in
  order (commands, timeouts, connections opened and closed), the clock readings of each (in
  wall-clock traces the smallest times the constraints allow: the least solution of a system of
  difference constraints satisfies them all) and the model's own choices. The witness is run
  again on a fresh :class:`~xspec.models.server.Server` (:class:`WitnessReplay`), so every reply
  comes out as the checker explained it; for a diverging trace, the witness of the events
  before the divergence. When the checker settles no order (inconclusive), the file's order is
  used instead and the output says so.
* **State.** After every step the tables show the keys, stream entries, groups
  (last-delivered-id, entries-read, lag), pending entries (owner, idle time, delivery count),
  consumers and the clients that are blocked or inside a transaction. Rows and cells that
  changed are highlighted.
* **Rules.** The model cites the spec rule of every branch in a comment (``# XCLAIM-6``); the
  rule index (:mod:`xspec.spec.rule_index`) gives every line of the model the rules that govern
  it. While a step runs, the replay follows the executed lines (:class:`RuleTracer`) and the
  state is snapshotted whenever the governing rules change (:class:`_ChangeRecorder`), so each
  change is attributed to the rules in force when it happened.

:func:`explain_trace` is the entry point; :func:`render_steps` prints steps (the explorer
reuses it for counterexamples); ``--json`` gives the same content for tools.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, TextIO

from xspec.spec.dialect import Dialect
from xspec.spec.environment import environment_matches
from xspec.spec.resp import Reply, arg_to_json, show, to_json
from xspec.spec.rule_index import Levels, load_index
from xspec.spec.trace_format import Call, Close, Connect, Note, Recv, Send, Trace
from xspec.traces.check import checker
from xspec.traces.check.explain_multinode import explain_multinode_trace
from xspec.traces.check.state_tables import (
    KEY_COLUMNS,
    TABLES,
    TIME_COLUMNS,
    TITLES,
    EntryRows,
    Snapshot,
    state_rows,
    text,
)
from xspec.traces.check.witness import (
    RuleTracer,
    StepResult,
    Witness,
    WitnessReplay,
    WitnessStep,
)

# ---------------------------------------------------------------------------
# The rules: which file defines each, which ids a text cites (from the rule index)


@dataclass(frozen=True)
class SpecIndex:
    """Every rule id the spec defines, with the file defining it (spec/rules/groups.md)."""

    files: dict[str, str]

    def defined(self, rule: str) -> bool:
        return rule in self.files


@cache
def spec_index() -> SpecIndex:
    return SpecIndex({r.id: r.file for r in load_index().rules.values()})


def cited_rules(text: str) -> tuple[str, ...]:
    """The rule ids a comment or docstring cites, in order (``XREADGROUP-7, -10`` is two rules).

    Ranges (``XREAD-1 .. XREAD-7``) are left out: they summarise a function, they do not say
    which rule a line implements. Words that only look like rule ids (``UTF-8``) are ignored.
    """
    return load_index().cited_rules(text)




@dataclass
class RawChange:
    row: tuple[Any, ...]
    old: tuple[Any, ...] | None
    new: tuple[Any, ...] | None
    governing: list[Levels]  # the levels in force while it happened (several once the budget ran out)


SNAPSHOT_BUDGET = 200_000
"""Rows a step may snapshot. A step that delivers or trims thousands of entries on a big
state would otherwise take seconds; past the budget, the changes of the rest of the step
are attributed to every rule in force during it together."""


class _ChangeRecorder:
    """Attributes the state changes of one step to the rules governing when they happened.

    :class:`RuleTracer` reports every change of the governing levels (:meth:`moved`); the
    state is snapshotted then and compared with the previous snapshot, and the differences
    are attributed to the levels that governed until then. Snapshots stop when
    :data:`SNAPSHOT_BUDGET` is spent (see there).

    The tracer (:class:`_WriteWatcher`) marks the recorder ``dirty`` when a line that may change
    the state (:func:`writing_lines`) starts; a move while nothing may have changed since the
    last snapshot takes none: that snapshot would equal the last one (and as many rows are
    counted against the budget).
    """

    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self.snapshot = snapshot
        self.active: Levels = ()
        self.changes: list[RawChange] = []
        self.last = snapshot()
        self.budget = SNAPSHOT_BUDGET
        self.unsettled: list[Levels] = []  # levels in force since the budget ran out
        self.dirty = True  # a line that may write ran since the last snapshot

    def moved(self, active: Levels) -> None:
        if self.budget > 0:
            self._settle()
        elif active not in self.unsettled:
            self.unsettled.append(active)
        self.active = active

    def finish(self) -> None:
        self._settle()

    def _settle(self) -> None:
        """Attribute what changed since the last snapshot to the levels that governed meanwhile."""
        if not self.dirty:
            self.budget -= len(self.last)
            return
        self.dirty = False
        now = self.snapshot()
        self.budget -= len(now)
        governing = [self.active, *(u for u in self.unsettled if u != self.active)]
        if now != self.last:
            last = self.last
            moved = [row for row, values in now.items() if last.get(row) != values]
            moved += [row for row in last if row not in now]
            for row in sorted(moved, key=repr):  # only the rows that changed are ordered
                self.changes.append(RawChange(row, last.get(row), now.get(row), governing))
            self.last = now


_WRITING_NODES = (ast.AugAssign, ast.Delete, ast.With, ast.AsyncWith, ast.Await, ast.Yield, ast.YieldFrom)

READING_BUILTINS = frozenset("""abs all any bool bytes callable chr dict divmod enumerate filter float format
    frozenset getattr hasattr hash id int isinstance issubclass iter len list map max min next ord range repr
    reversed round set slice sorted str sum tuple type zip""".split())
"""Built-in functions that change nothing they are given (``next`` resumes a generator, whose lines are traced)."""

CONTAINER_WRITES = frozenset("""add append appendleft clear discard extend extendleft insert move_to_end pop popitem
    popleft remove reverse rotate setdefault sort update""".split())
"""Methods by which the containers the model keeps its state in change (never taken for model code)."""


@cache
def model_functions() -> frozenset[str]:
    """The names of every function and method defined in the modules whose lines the tracer follows
    (the rule index's model modules): a call to one of them is watched line by line as it runs."""
    names: set[str] = set()
    for module in load_index().module_paths:
        path = getattr(importlib.import_module(module), "__file__", None)
        if path is None:
            continue
        for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
    return frozenset(names - CONTAINER_WRITES)


def _call_may_write(call: ast.Call) -> bool:
    """A call may write unless it calls a built-in that only reads or a function of the model by its name
    (a model function's own lines are watched as they run)."""
    f = call.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    if name is None or name in CONTAINER_WRITES:
        return True
    if isinstance(f, ast.Name) and name in READING_BUILTINS:
        return False
    return name not in model_functions()


def _may_write(node: ast.AST) -> bool:
    """Whether running ``node`` may change state: a call that may run code other than the model's
    (:func:`_call_may_write`), a store into an attribute or an item, an augmented assignment,
    ``del``, ``with``, a ``yield`` (the consumer runs)."""
    for n in ast.walk(node):
        if isinstance(n, _WRITING_NODES):
            return True
        if isinstance(n, ast.Call) and _call_may_write(n):
            return True
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            return True
    return False


def _headers(stmt: ast.stmt) -> list[ast.AST]:
    """The parts of a statement that run on its own lines (a compound statement's header, a simple one whole)."""
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt]  # __enter__/__exit__ run on the header: always a possible write
    if isinstance(stmt, ast.Match):
        return [stmt.subject]
    if isinstance(stmt, ast.Try):
        return [h.type for h in stmt.handlers if h.type is not None]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [*stmt.decorator_list, *getattr(stmt.args, "defaults", []), *getattr(stmt.args, "kw_defaults", [])] \
            if not isinstance(stmt, ast.ClassDef) else [*stmt.decorator_list, *stmt.bases]
    return [stmt]


@cache
def writing_lines(path: str) -> frozenset[int]:
    """The lines of a source file on which a statement that may change state starts or runs
    (:func:`_may_write`), every line a multi-line statement spans included."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    out: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        for part in _headers(node):
            if part is not None and _may_write(part):
                end = getattr(part, "end_lineno", None) or part.lineno  # type: ignore[attr-defined]
                first = node.lineno if part is node else min(node.lineno, part.lineno)  # type: ignore[attr-defined]
                out.update(range(first, end + 1))
    return frozenset(out)


class _WriteWatcher(RuleTracer):
    """A :class:`RuleTracer` that also marks its recorder ``dirty`` when a line that may change the
    state is about to run (:func:`writing_lines`), after the move that line's event may make.

    Code whose source is not its module's file (a dataclass's generated ``__init__``) counts
    as writing on every line.
    """

    def __init__(self, index: Any, on_move: Callable[[Levels], None] | None, recorder: _ChangeRecorder) -> None:
        super().__init__(index, on_move)
        self.recorder = recorder
        self.lines: dict[CodeType, frozenset[int] | None] = {}

    def _writes(self, frame: FrameType) -> bool:
        code = frame.f_code
        try:
            lines = self.lines[code]
        except KeyError:
            module = sys.modules.get(frame.f_globals.get("__name__", ""))
            path = getattr(module, "__file__", None)
            lines = self.lines[code] = writing_lines(path) if path and path == code.co_filename else None
        return lines is None or frame.f_lineno in lines

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        out = super()._local(frame, event, arg)  # the move happens before the line runs
        if event == "line" and not self.recorder.dirty and self._writes(frame):
            self.recorder.dirty = True
        return out


# ---------------------------------------------------------------------------
# Steps


@dataclass
class Change:
    """One row added, removed or changed by a step, with the rules that made each column change."""

    table: str
    row: dict[str, Any]  # the key columns
    kind: str  # added | removed | changed
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    rules: list[str]  # every rule behind the change, in order
    column_rules: dict[str, list[str]] = field(default_factory=dict)  # changed column -> its rules

    def columns(self) -> list[str]:
        if self.kind != "changed":
            return []
        assert self.old is not None and self.new is not None
        return [c for c in self.old if self.old[c] != self.new[c]]


@dataclass
class Served:
    client: int
    reply: Reply
    line: int | None  # the recv's line in the trace file
    expected: Reply | None

    @property
    def matches(self) -> bool:
        return self.expected is None or _same_reply(None, self.expected, self.reply)


@dataclass
class Step:
    """One thing the server did: a command, a blocked client's timeout, a connection closing."""

    kind: str  # command | timeout | close | connect | expire
    client: int
    line: int | None  # line of the trace file (events are line - 1)
    now: int | None
    command: list[bytes] | None = None
    reply: Reply | None = None  # the model's reply; None when the client blocked
    expected: Reply | None = None  # the trace's reply, when it has one
    blocked: bool = False
    served: list[Served] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)  # rules that changed state or decided an error
    checked: list[str] = field(default_factory=list)  # every rule whose lines ran
    state: Snapshot = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # the trace's notes just before this step
    expired: tuple[int, bytes] | None = None  # expire: the database and key the active expiry cycle deleted

    @property
    def matches(self) -> bool:
        """The model's reply is the trace's (replies about the host compared by shape: spec/rules/environment.md)."""
        if self.expected is None or self.reply is None:
            return True
        return _same_reply(self.command, self.expected, self.reply)


def _same_reply(argv: list[bytes] | None, expected: Reply, reply: Reply) -> bool:
    if reply == expected:
        return True
    return argv is not None and bool(environment_matches(argv, expected, reply))


@dataclass
class Explanation:
    trace: Trace
    verdict: checker.Verdict
    order: str  # "checker" or "file"
    note: str
    steps: list[Step]
    start: int | None  # the first clock reading, for relative times


def _row_key(table_name: str, row: tuple[Any, ...]) -> dict[str, Any]:
    parts = row[1:]
    names = KEY_COLUMNS[table_name]
    if table_name == "clients":
        return {"client": parts[0]}
    db, key, *rest = parts
    out: dict[str, Any] = {"key": text(key) if db == 0 else f"db{db}:{text(key)}"}
    for name, value in zip(names[1:], rest, strict=True):
        out[name] = str(value) if name == "id" else text(value)
    return out


def _values(table_name: str, values: tuple[Any, ...] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    out = dict(zip(TABLES[table_name], values, strict=True))
    if table_name == "entries":
        out["fields"] = [text(f) for f in values[0]]
    return out




class _WatchedReplay(WitnessReplay):
    """A :class:`WitnessReplay` that follows the rules with a :class:`_WriteWatcher` for a recorder."""

    recorder: _ChangeRecorder | None = None

    def run(self, step: WitnessStep, on_move: Callable[[Levels], None] | None = None,  # type: ignore[override]
            recorder: _ChangeRecorder | None = None) -> StepResult:
        self.recorder = recorder  # None: a step with no state worth recording (a connection opening)
        try:
            return super().run(step, on_move)
        finally:
            self.recorder = None

    def tracer(self, on_move: Callable[[Levels], None] | None) -> RuleTracer:
        if self.recorder is None:
            return super().tracer(on_move)
        assert self.index is not None
        return _WriteWatcher(self.index, on_move, self.recorder)


class _Replayer:
    """Runs steps on a fresh model (:class:`WitnessReplay`), following rules and collecting the state after each."""

    def __init__(self, trace: Trace, dialect: Dialect, first_reading: int = 0) -> None:
        self.trace = trace
        self.replay = _WatchedReplay(trace, dialect, first_reading, rules=True)
        self.server = self.replay.server
        self.clock = self.replay.clock
        self.steps: list[Step] = []
        self.notes: list[str] = []
        self.blocked: dict[int, tuple[Step, int | None, Reply | None]] = {}  # client -> step, recv line, reply
        self.entries = EntryRows()  # the streams' entries rows, between snapshots

    def run(self, step: Step, action: WitnessStep) -> StepResult:
        recorder = _ChangeRecorder(lambda: state_rows(self.server, self.entries))
        result = self.replay.run(action, recorder.moved, recorder)
        recorder.finish()
        keep = result.keep
        assert keep is not None
        step.now = self.clock.ms if step.now is None else step.now
        step.changes = _merge_changes(recorder.changes, keep)
        for change in step.changes:
            _add(step.rules, change.rules)
        if result.error_levels:
            _add(step.rules, _resolve(result.error_levels, keep))
        step.checked = list(result.rules)
        step.state = recorder.last
        step.notes, self.notes = self.notes, []
        self.steps.append(step)
        return result

    # -- the kinds of step ------------------------------------------------------------
    def execute(self, action: WitnessStep, expected: Reply | None) -> None:
        """A command; ``expected`` is the trace's reply to it, if any."""
        assert action.argv is not None
        step = Step("command", action.client, action.event + 2, None, command=action.argv, expected=None)
        out = self.run(step, action).outcome
        assert out is not None
        recv_line = None if action.reply_event is None else action.reply_event + 2
        if out.blocked:
            step.blocked = True
            self.blocked[action.client] = (step, recv_line, expected)
        else:
            step.reply = out.reply
            step.expected = expected
        for cid, reply in out.served:
            _, served_line, served_expected = self.blocked.pop(cid, (None, None, None))
            step.served.append(Served(cid, reply, served_line, served_expected))

    def time_out(self, action: WitnessStep, expected: Reply | None) -> None:
        line = None if action.reply_event is None else action.reply_event + 2
        step = Step("timeout", action.client, line, None, expected=expected)
        self.blocked.pop(action.client, None)
        step.reply = self.run(step, action).reply

    def close(self, action: WitnessStep) -> None:
        self.blocked.pop(action.client, None)
        if action.client in self.server.clients:
            self.run(Step("close", action.client, action.event + 2, None), action)

    def connect(self, action: WitnessStep) -> None:
        self.replay.run(action)

    def expire(self, action: WitnessStep) -> None:
        """The active expiry cycle deleted a key before the event at ``action.at`` (EXPIRE-ACTIVE-2)."""
        assert action.argv is not None
        self.run(Step("expire", action.client, action.at + 2, None, expired=(action.db, action.argv[0])), action)

    def step(self, action: WitnessStep) -> None:
        """Run one step of a witness."""
        expected = self._reply_at(action.reply_event)
        if action.kind == "command":
            self.execute(action, expected)
        elif action.kind == "timeout":
            self.time_out(action, expected)
        elif action.kind == "close":
            self.close(action)
        elif action.kind == "expire":
            self.expire(action)
        else:
            self.connect(action)

    def _reply_at(self, event: int | None) -> Reply | None:
        return None if event is None else getattr(self.trace.events[event], "reply", None)


def _resolve(levels: Levels, keep: Callable[[str], bool]) -> list[str]:
    """The rules of the most specific level that names a rule of the step."""
    for level in levels:
        kept = [r for r in level if keep(r)]
        if kept:
            return kept
    return []


def _merge_changes(raw: list[RawChange], keep: Callable[[str], bool]) -> list[Change]:
    """One change per row: first old value, last new value, and per column the rules that moved it."""
    merged: dict[tuple[Any, ...], tuple[tuple[Any, ...] | None, tuple[Any, ...] | None, dict[int, list[str]],
                                        list[str]]] = {}
    for change in raw:
        rules: list[str] = []
        for levels in change.governing:
            _add(rules, _resolve(levels, keep))
        width = len(TABLES[change.row[0]])
        touched: list[int]
        if change.old is None or change.new is None:
            touched = list(range(width))
        else:
            touched = [i for i in range(width) if change.old[i] != change.new[i]]
        first_old, _, per_column, all_rules = merged.get(change.row, (change.old, None, {}, []))
        for i in touched:
            _add(per_column.setdefault(i, []), rules)
        _add(all_rules, rules)
        merged[change.row] = (first_old, change.new, per_column, all_rules)
    out: list[Change] = []
    for row, (old, new, per_column, all_rules) in merged.items():
        if old == new:
            continue  # changed and changed back within the step
        table_name = row[0]
        kind = "added" if old is None else "removed" if new is None else "changed"
        names = TABLES[table_name]
        column_rules = {names[i]: r for i, r in per_column.items()
                        if old is None or new is None or old[i] != new[i]}
        out.append(Change(table_name, _row_key(table_name, row), kind, _values(table_name, old),
                          _values(table_name, new), all_rules, column_rules))
    return out


def _add(into: list[str], rules: Iterable[str]) -> None:
    for r in rules:
        if r not in into:
            into.append(r)


# ---------------------------------------------------------------------------
# Replaying in the checker's order


def _resolved_order(trace: Trace, dialect: Dialect) -> checker.Verdict | None:
    """The checker's verdict on ``trace``, whose witness gives the order to replay; None to replay
    in the file's order."""
    return checker.check_trace(trace, dialect.name)


def _replay_witness(trace: Trace, dialect: Dialect, witness: Witness) -> _Replayer:
    """Run the witness's steps, each after the trace's connects and notes that come before it."""
    readings = witness.readings()
    r = _Replayer(trace, dialect, readings[0] if trace.header.clock == "wall" and readings else 0)
    by_pos: dict[int, list[WitnessStep]] = {}
    for action in witness.steps:
        by_pos.setdefault(action.at, []).append(action)
    for p, e in enumerate(trace.events):
        if isinstance(e, Note):
            r.notes.append(e.text)
        for action in by_pos.get(p, ()):
            r.step(action)
    return r


def _replay_file_order(trace: Trace, dialect: Dialect) -> _Replayer:
    """Every command executes when it is sent; a client still blocked at its recv times out then.

    The clock is the event's ``now``, or its time (``t0``/``t``) in ms, never going back.
    """
    r = _Replayer(trace, dialect)
    clock = r.clock
    answers: dict[int, int] = {}  # send event -> its recv event
    waiting: dict[int, list[int]] = {}
    for p, e in enumerate(trace.events):
        if isinstance(e, Send):
            waiting.setdefault(e.c, []).append(p)
        elif isinstance(e, Recv) and waiting.get(e.c):
            answers[waiting[e.c].pop(0)] = p

    def at(now: int | None, t: int | None) -> tuple[int]:
        if now is not None:
            return (now,)
        return (max(clock.ms, t // 1000) if t is not None else clock.ms,)

    for p, e in enumerate(trace.events):
        line = p + 2
        if isinstance(e, Call):
            r.step(WitnessStep("command", p, p, e.c, e.cmd, p, at(e.now, e.t0)))
        elif isinstance(e, Send) and e.cmd is not None:
            blocked = e.c in r.server.clients and r.server.clients[e.c].blocked is not None
            if blocked:
                continue  # pipelined behind a blocked command: the model cannot run it yet
            r.step(WitnessStep("command", p, p, e.c, e.cmd, answers.get(p), at(e.now, e.t)))
        elif isinstance(e, Recv):
            entry = r.blocked.get(e.c)
            if entry is not None and entry[1] == line and entry[0].line is not None:
                r.step(WitnessStep("timeout", entry[0].line - 2, p, e.c, entry[0].command, p, at(e.now, e.t)))
        elif isinstance(e, Close):
            r.step(WitnessStep("close", p, p, e.c))
        elif isinstance(e, Connect):
            r.step(WitnessStep("connect", p, p, e.c))
        elif isinstance(e, Note):
            r.notes.append(e.text)
    return r


def explain(trace: Trace, dialect: str | None = None, witness: Witness | None = None) -> Explanation:
    """Replay ``trace`` on the model (in the checker's order when it finds one) and collect its steps.

    ``witness``: an execution known to explain the whole trace (an explorer's counterexample,
    made by running the model), replayed as it is without checking the trace again.
    """
    d = checker.trace_dialect(trace, dialect)
    if witness is not None:
        verdict: checker.Verdict | None = checker.Verdict("conform", len(trace.events), witness=witness)
    else:
        verdict = _resolved_order(trace, d)
    if verdict is None:
        verdict = checker.check_trace(trace, dialect)
    else:
        witness = verdict.witness
    if verdict.status == "unsupported":
        return Explanation(trace, verdict, "none", f"not replayed: {verdict.message}", [], None)
    order_note = ""
    prefix = trace
    if verdict.status == "diverge" and verdict.event is not None:
        prefix = Trace(trace.header, trace.events[:verdict.event - 1], trace.path)
        order_note = (f"replayed up to event {verdict.event - 1} (line {verdict.event}); "
                      f"event {verdict.event} (line {verdict.event + 1}) is where the trace diverges")
    if witness is not None and witness.events == len(prefix.events):
        replayer = _replay_witness(prefix, d, witness)
        order, note = "checker", "order and clock readings as the conformance checker explained the trace"
    else:
        replayer = _replay_file_order(prefix, d)
        order = "file"
        note = ("the checker settled no order, so commands run in the file's order at the times the "
                "trace gives; replies may differ from the trace")
    if order_note:
        note += "; " + order_note
    readings = [s.now for s in replayer.steps if s.now is not None]
    return Explanation(trace, verdict, order, note, replayer.steps, min(readings) if readings else None)


# ---------------------------------------------------------------------------
# Rendering: plain text, rich, JSON


def _show_value(column: str, value: Any, now: int | None) -> str:
    if value is None:
        return "never" if column == "deadline" else "nil" if column in ("entries-read", "lag") else "-"
    if column in TIME_COLUMNS and now is not None:
        if column == "deadline":
            return f"in {value - now} ms"
        return f"{now - value} ms"
    if column == "fields":
        return " ".join(value if isinstance(value, list) else [text(v) for v in value])
    return str(value)


def _column_title(column: str) -> str:
    return TIME_COLUMNS.get(column, column)


def _relative(now: int | None, start: int | None) -> str:
    if now is None:
        return ""
    if start is None:
        return f"now {now}"
    return f"t+{now - start} ms"


def _command_text(argv: Sequence[bytes]) -> str:
    return " ".join(_quote(text(a)) for a in argv)


def _quote(s: str) -> str:
    return s if s and re.fullmatch(r"[\w.:$>*+\-()=~#@/]+", s) else json.dumps(s, ensure_ascii=False)


def _rules_note(rules: list[str]) -> str:
    return f"[{', '.join(rules)}]" if rules else "[no rule cited]"


def change_text(change: Change, now: int | None) -> str:
    """One line: ``~ pending s g 1-0: owner alice -> bob [XCLAIM-14]; ...``."""
    name = " ".join(str(v) for v in change.row.values())
    label = {"keys": "key", "entries": "entry", "groups": "group", "pending": "pending",
             "consumers": "consumer", "clients": "client"}[change.table] + f" {name}"
    if change.kind == "added":
        assert change.new is not None
        body = ", ".join(f"{_column_title(c)} {_show_value(c, v, now)}" for c, v in change.new.items()
                         if v is not None)
        return f"+ {label}: {body}  {_rules_note(change.rules)}"
    if change.kind == "removed":
        return f"- {label}  {_rules_note(change.rules)}"
    assert change.old is not None and change.new is not None
    columns = change.columns()
    per_column = [change.column_rules.get(c, []) for c in columns]
    same = all(r == per_column[0] for r in per_column)
    parts = []
    for c, rules in zip(columns, per_column, strict=True):
        part = f"{_column_title(c)} {_show_value(c, change.old[c], now)} -> {_show_value(c, change.new[c], now)}"
        parts.append(part if same else f"{part} {_rules_note(rules)}")
    body = "; ".join(parts)
    return f"~ {label}: {body}  {_rules_note(per_column[0])}" if same else f"~ {label}: {body}"


def _table_rows(step: Step) -> dict[str, list[tuple[dict[str, Any], dict[str, Any], str, Change | None]]]:
    """Per table: (key columns, values, mark, change) for the current rows and the removed ones."""
    changes = {(c.table, tuple(c.row.values())): c for c in step.changes}
    out: dict[str, list[tuple[dict[str, Any], dict[str, Any], str, Change | None]]] = {t: [] for t in TABLES}
    for row, values in step.state.items():
        t = row[0]
        key = _row_key(t, row)
        change = changes.get((t, tuple(key.values())))
        mark = " " if change is None else "+" if change.kind == "added" else "*"
        vals = _values(t, values)
        assert vals is not None
        out[t].append((key, vals, mark, change))
    for change in step.changes:
        if change.kind == "removed" and change.old is not None:
            out[change.table].append((change.row, change.old, "-", change))
    return out


ENTRY_ROWS_SHOWN = 12

ROUTINE_PREFIXES = ("DISPATCH-", "CONN-", "PROP-")
"""Rules the dispatcher checks for every command; the text output lists them only when they
changed something or decided an error (the JSON output always does)."""


def also_checked(step: Step) -> list[str]:
    return [r for r in step.checked if r not in step.rules and not r.startswith(ROUTINE_PREFIXES)]


def _visible(rows: list[Any]) -> tuple[list[Any], int]:
    """At most ENTRY_ROWS_SHOWN entries per table: the changed ones and the newest."""
    if len(rows) <= ENTRY_ROWS_SHOWN:
        return rows, 0
    changed = [r for r in rows if r[2] != " "]
    rest = [r for r in rows if r[2] == " "][-(max(ENTRY_ROWS_SHOWN - len(changed), 0)):]
    keep = {id(r) for r in changed + rest}
    shown = [r for r in rows if id(r) in keep]
    return shown, len(rows) - len(shown)


def _plain_table(title: str, header: list[str], rows: list[list[str]], marks: list[str], out: TextIO) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    out.write(f"  {title}\n")
    out.write("      " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip() + "\n")
    for mark, row in zip(marks, rows, strict=True):
        out.write(f"    {mark} " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")


def _cells(key: dict[str, Any], vals: dict[str, Any], change: Change | None, now: int | None,
           was: bool) -> list[str]:
    cells = [str(v) for v in key.values()]
    changed = change.columns() if change is not None else []
    for c, v in vals.items():
        cell = _show_value(c, v, now)
        if was and c in changed and change is not None and change.old is not None:
            cell += f" (was {_show_value(c, change.old[c], now)})"
        cells.append(cell)
    return cells


def _headline(step: Step, start: int | None) -> str:
    where = f"line {step.line}" if step.line is not None else "generated"
    when = _relative(step.now, start)
    if step.kind == "command":
        return f"{where} · client {step.client} · {when}"
    if step.kind == "timeout":
        return f"{where} · client {step.client} times out (BLOCK-8) · {when}"
    if step.kind == "expire" and step.expired is not None:
        db, key = step.expired
        return (f"before {where} · active expiry of {key.decode('utf-8', 'backslashreplace')!r} in db {db} "
                f"(EXPIRE-ACTIVE-2) · {when}")
    return f"{where} · client {step.client} closes its connection · {when}"


def _reply_lines(step: Step) -> list[tuple[str, bool]]:
    """(text, is a mismatch) lines about the step's reply and the clients it served."""
    lines: list[tuple[str, bool]] = []
    if step.blocked:
        lines.append(("< (blocks)", False))
    elif step.reply is not None:
        lines.append((f"< {show(step.reply)}", False))
        if not step.matches and step.expected is not None:
            lines.append((f"! the trace says {show(step.expected)}", True))
    for s in step.served:
        where = f" (line {s.line})" if s.line is not None else ""
        lines.append((f"< client {s.client} is served{where}: {show(s.reply)}", False))
        if not s.matches and s.expected is not None:
            lines.append((f"! the trace says {show(s.expected)}", True))
    return lines


def render_plain(steps: Sequence[Step], out: TextIO, start: int | None = None, tables: bool = True) -> None:
    for n, step in enumerate(steps, 1):
        for note in step.notes:
            out.write(f"\n# {note}\n")
        out.write(f"\n[{n}] {_headline(step, start)}\n")
        if step.command is not None:
            out.write(f"  > {_command_text(step.command)}\n")
        for line, _ in _reply_lines(step):
            out.write(f"  {line}\n")
        if step.changes:
            out.write("  changes:\n")
            for change in step.changes:
                out.write(f"    {change_text(change, step.now)}\n")
        else:
            out.write("  no state change\n")
        if step.rules:
            out.write(f"  rules: {', '.join(step.rules)}\n")
        other = also_checked(step)
        if other:
            out.write(f"  also checked: {', '.join(other)}\n")
        for t, rows in _table_rows(step).items() if tables else ():
            rows, hidden = _visible(rows) if t == "entries" else (rows, 0)
            if not rows:
                continue
            header = list(KEY_COLUMNS[t]) + [_column_title(c) for c in TABLES[t]]
            cells = [_cells(k, v, c, step.now, True) for k, v, _, c in rows]
            title = TITLES[t] + (f" ({hidden} unchanged not shown)" if hidden else "")
            _plain_table(title, header, cells, [m for _, _, m, _ in rows], out)


def render_rich(steps: Sequence[Step], out: TextIO, start: int | None = None, tables: bool = True) -> None:
    from rich.console import Console, Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    console = Console(file=out, force_terminal=True, highlight=False, soft_wrap=False)
    for n, step in enumerate(steps, 1):
        for note in step.notes:
            console.print(Text(f"# {note}", style="italic cyan"))
        parts: list[Any] = []
        if step.command is not None:
            parts.append(Text("> " + _command_text(step.command), style="bold"))
        for line, bad in _reply_lines(step):
            parts.append(Text(line, style="bold red" if bad else "green"))
        for change in step.changes:
            style = {"added": "green", "removed": "red", "changed": "yellow"}[change.kind]
            parts.append(Text(change_text(change, step.now), style=style))
        if not step.changes:
            parts.append(Text("no state change", style="dim"))
        other = also_checked(step)
        if step.rules or other:
            t = Text("rules: ", style="bold")
            t.append(", ".join(step.rules) or "-", style="bold magenta")
            if other:
                t.append("   also checked: " + ", ".join(other), style="dim")
            parts.append(t)
        for name, rows in _table_rows(step).items() if tables else ():
            rows, hidden = _visible(rows) if name == "entries" else (rows, 0)
            if not rows:
                continue
            title = TITLES[name] + (f" ({hidden} unchanged not shown)" if hidden else "")
            table = Table(title=title, title_justify="left", title_style="bold", show_edge=False,
                          header_style="dim", pad_edge=False)
            for c in [*KEY_COLUMNS[name], *(_column_title(c) for c in TABLES[name])]:
                table.add_column(c)
            for key, vals, mark, row_change in rows:
                row_changed = row_change.columns() if row_change is not None else []
                cells = _cells(key, vals, row_change, step.now, False)
                styled: list[Text] = []
                n_keys = len(key)
                for i, cell in enumerate(cells):
                    column = None if i < n_keys else list(vals)[i - n_keys]
                    if mark == "+":
                        styled.append(Text(cell, style="green"))
                    elif mark == "-":
                        styled.append(Text(cell, style="red strike"))
                    elif column in row_changed and row_change is not None and row_change.old is not None:
                        t = Text(cell, style="bold yellow")
                        t.append(f" (was {_show_value(column, row_change.old[column], step.now)})", style="dim")
                        styled.append(t)
                    else:
                        styled.append(Text(cell))
                table.add_row(*styled)
            parts.append(table)
        console.print(Panel(Group(*parts), title=f"[{n}] {_headline(step, start)}", title_align="left",
                            border_style="blue"))


def render_steps(steps: Sequence[Step], *, plain: bool = True, out: TextIO | None = None,
                 start: int | None = None, tables: bool = True) -> None:
    """Print steps with rich (boxes, colours) or as plain text.

    ``start`` is the time shown as t+0; ``tables=False`` leaves out the state tables and
    keeps the changes. Steps come from :func:`explain` (a counterexample is a trace too).
    """
    out = out if out is not None else sys.stdout
    if not plain:
        try:
            render_rich(steps, out, start, tables)
            return
        except ImportError:  # rich is optional: without it the text form is the output
            pass
    render_plain(steps, out, start, tables)


def _json_value(v: Any) -> Any:
    if isinstance(v, bytes):
        return arg_to_json(v)
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    return v


def step_json(step: Step) -> dict[str, Any]:
    tables: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
    for row, values in step.state.items():
        t = row[0]
        d = _row_key(t, row)
        vals = _values(t, values)
        assert vals is not None
        for c, v in vals.items():
            d[c] = _json_value(v)
            if c in TIME_COLUMNS and v is not None and step.now is not None:
                d["idle" if c == "delivery-time" else "seen-idle" if c == "seen-time" else "remaining"] = (
                    v - step.now if c == "deadline" else step.now - v)
        tables[t].append(d)
    return {
        "kind": step.kind,
        "line": step.line,
        "client": step.client,
        "now": step.now,
        "command": None if step.command is None else [arg_to_json(a) for a in step.command],
        "blocked": step.blocked,
        "reply": None if step.reply is None else to_json(step.reply),
        "trace_reply": None if step.expected is None else to_json(step.expected),
        "matches": step.matches,
        "served": [{"client": s.client, "line": s.line, "reply": to_json(s.reply),
                    "matches": s.matches} for s in step.served],
        "rules": step.rules,
        "checked": step.checked,
        "changes": [{"table": c.table, "row": c.row, "kind": c.kind, "column_rules": c.column_rules,
                     "old": None if c.old is None else {k: _json_value(v) for k, v in c.old.items()},
                     "new": None if c.new is None else {k: _json_value(v) for k, v in c.new.items()},
                     "rules": c.rules} for c in step.changes],
        "state": tables,
        "notes": step.notes,
        **({} if step.expired is None else {"expired": {"db": step.expired[0], "key": arg_to_json(step.expired[1])}}),
    }


def explanation_json(e: Explanation) -> dict[str, Any]:
    index = spec_index()
    used = sorted({r for s in e.steps for r in [*s.rules, *s.checked]})
    v = e.verdict
    return {
        "trace": e.trace.path,
        "title": e.trace.header.title,
        "verdict": {"status": v.status, "event": v.event, "message": v.message},
        "order": e.order,
        "note": e.note,
        "steps": [step_json(s) for s in e.steps],
        "rule_files": {r: index.files[r] for r in used},
    }


def explain_trace(trace: Trace, *, plain: bool = False, out: TextIO | None = None, as_json: bool = False,
                  dialect: str | None = None, tables: bool = True) -> Explanation:
    """Replay ``trace`` on the model and print it step by step (or as JSON); returns what was shown."""
    out = out if out is not None else sys.stdout
    if getattr(trace.header, "nodes", None) is not None:  # trace/2: every node's state after each step
        verdict = explain_multinode_trace(trace, out, dialect)
        return Explanation(trace, verdict, "checker", "several nodes", [], None)
    e = explain(trace, dialect)
    if as_json:
        json.dump(explanation_json(e), out, ensure_ascii=False, indent=1)
        out.write("\n")
        return e
    title = trace.header.title or Path(trace.path).name
    out.write(f"{title}\n{trace.path} · {trace.header.server_name} {trace.header.server_version} · "
              f"{trace.header.clock} clock · {e.note}\n")
    render_steps(e.steps, plain=plain, out=out, start=e.start, tables=tables)
    out.write(f"\nverdict: {e.verdict.describe()}\n")
    return e


__all__ = ["Change", "Explanation", "Step", "cited_rules", "explain", "explain_trace", "render_steps", "spec_index",
           "state_rows"]
