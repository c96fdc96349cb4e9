"""The checker's witness: the execution of the model that explains a trace, as data.

A :class:`Witness` lists the steps of the execution in the order the model ran them
(:class:`WitnessStep`): commands, timeouts of blocked commands, connections opened and
closed, each with the clock readings it made (symbolic times resolved to values that satisfy
every constraint), the blocked commands it served and the answers the model's own open
choices got (SWAPDB-8). A diverging trace's witness explains the longest prefix that
conforms and names the first event no execution explains, with the replies the model allows
there (:class:`Divergence`).

A witness can be run again on a fresh model (:class:`WitnessReplay`): every reply then comes
out as the checker explained it. Run under a :class:`RuleTracer`, which follows the model's
executed lines with :func:`sys.settrace`, the replay also says which spec rules each step
went through; :func:`collect_rules` does that for every step (``check_trace(..., rules=True)``),
``xspec explain`` does it while it snapshots the state. Which rules govern a line comes from
the rule index (:func:`xspec.spec.rule_index.load_index`), not from the model's source.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import CodeType, FrameType
from typing import Any

from xspec.models import Instant, ManualClock, Server
from xspec.models.server import HANDLERS, CommandError, Outcome
from xspec.spec import commands as table
from xspec.spec.dialect import Dialect
from xspec.spec.resp import Reply, show
from xspec.spec.rule_index import Levels, LineRules, RuleIndex, chain, load_index
from xspec.spec.trace_format import Trace

STEP_KINDS = ("command", "timeout", "connect", "close", "expire", "rewrite", "bgsave-done", "start-rewrite",
              "start-bgsave")


@dataclass(frozen=True, slots=True)
class WitnessStep:
    """One step of the execution the checker found.

    Events are indexes into ``trace.events`` (0-based; the trace format's event number, as in
    ``Verdict.event``, is the index plus one, and the file's line the index plus two).
    """

    kind: str  # one of STEP_KINDS
    event: int  # command, timeout: the command's call or send; connect, close: that event; expire: ``at``
    at: int  # the event the execution had reached: the step ran after the events before ``at``
    client: int  # expire: 0, no client
    argv: list[bytes] | None = None  # command, timeout: the command; expire: the key deleted
    reply_event: int | None = None  # command, timeout: the call or recv that has its reply; None: never replied
    readings: tuple[int, ...] = ()  # the clock readings the step made, in ms, in order (virtual traces: its ``now``)
    blocked: bool = False  # command: it blocked; a later step serves it or times it out
    served: tuple[int, ...] = ()  # the blocked commands (their ``event``) this step served, in order
    model_choices: tuple[int, ...] = ()  # answers to the model's own open choices (``Server.chooser``)
    rules: tuple[str, ...] = ()  # the rules cited by the model lines the step ran (only when asked for)
    db: int = 0  # expire: the database of the key the active expiry cycle deleted (EXPIRE-ACTIVE-2)


@dataclass(frozen=True)
class Divergence:
    """The first event no execution of the model explains, and what the model allows there."""

    event: int  # index into trace.events
    message: str
    argv: list[bytes] | None  # the command the event is about (its own, or the one its recv answers)
    got: Reply | None  # what the trace says
    allowed: tuple[Reply, ...] = ()  # replies the model could give there (symbolic integers at their lowest)
    allowed_text: tuple[str, ...] = ()  # ``allowed`` rendered, symbolic integers with their range

    def detail_lines(self) -> list[str]:
        """``trace says: ...`` and one ``model allows: ...`` per allowed reply."""
        lines = [] if self.got is None else [f"trace says: {show(self.got)}"]
        return lines + [f"model allows: {a}" for a in self.allowed_text or [show(a) for a in self.allowed]]


@dataclass(frozen=True, eq=False)
class Witness:
    """An execution of the model explaining the first ``events`` events of a trace.

    For a conforming trace ``events`` is the whole trace; for a diverging one it is the longest
    prefix known to conform, and ``divergence`` names the event after it. The steps are built
    on first use (``build``): checking alone never pays for them. Two witnesses are equal only
    when they are the same object; compare their ``steps``.
    """

    events: int
    divergence: Divergence | None = None
    build: Callable[[], tuple[WitnessStep, ...]] = field(default=tuple, repr=False, compare=False)

    @classmethod
    def of(cls, steps: Iterable[WitnessStep], events: int, divergence: Divergence | None = None) -> Witness:
        """A witness of the given steps."""
        built = tuple(steps)
        return cls(events, divergence, lambda: built)

    @cached_property
    def steps(self) -> tuple[WitnessStep, ...]:
        """The steps of the execution, in the order the model ran them."""
        return self.build()

    def readings(self) -> list[int]:
        """Every clock reading of the execution, in order."""
        return [r for s in self.steps for r in s.readings]

    def step_of(self, event: int) -> WitnessStep | None:
        """The step that executed the command invoked at ``event`` (its call or send)."""
        for s in self.steps:
            if s.kind == "command" and s.event == event:
                return s
        return None

    def completed_by(self, event: int) -> WitnessStep | None:
        """For a command that blocked: the step that served it or its timeout step; None while it stays blocked."""
        for s in self.steps:
            if event in s.served or (s.kind == "timeout" and s.event == event):
                return s
        return None

    def with_rules(self, rules: Iterable[tuple[str, ...]]) -> Witness:
        """The same witness with each step's rules given, in step order."""
        return Witness.of((replace(s, rules=r) for s, r in zip(self.steps, rules, strict=True)), self.events,
                          self.divergence)


# ---------------------------------------------------------------------------
# Running a witness again


class ReadingsClock(ManualClock):
    """A clock that returns given readings in order, then keeps the last one."""

    def __init__(self, ms: int = 0) -> None:
        super().__init__(ms)
        self.queue: deque[int] = deque()

    def load(self, readings: tuple[int, ...]) -> None:
        """The readings of the next step; the clock shows the first at once."""
        self.queue = deque(readings)
        if readings:
            self.ms = readings[0]

    def now_ms(self) -> Instant:
        if self.queue:
            self.ms = self.queue.popleft()
        return super().now_ms()


@dataclass
class StepResult:
    """What the model did in one replayed step; the rules only when the replay follows them."""

    outcome: Outcome | None  # command: the model's outcome
    reply: Reply | None  # command: its reply (None when it blocked); timeout: the timeout's reply
    rules: tuple[str, ...] = ()  # the rules the step went through that are about it (``keep``)
    error_levels: Levels | None = None  # the rules governing the line that raised an error reply
    keep: Callable[[str], bool] | None = None  # which rules are about the step (:func:`rule_filter`)


class WitnessReplay:
    """Runs the steps of a witness, one at a time, on a fresh model of ``dialect``.

    Each step's clock readings are returned in order by the clock, and the model's open
    choices get the step's recorded answers, so the replies are the ones the checker checked.
    ``rules`` traces every step with a :class:`RuleTracer` (slow: only when rules are asked for).
    """

    def __init__(self, trace: Trace, dialect: Dialect, first_reading: int = 0, *, rules: bool = False) -> None:
        self.clock = ReadingsClock(first_reading)
        self.server = Server(dialect, self.clock, trace.header.config)
        self.choices: deque[int] = deque()
        self.server.chooser = self._choose
        self.index = load_index() if rules else None

    def _choose(self, n: int) -> int:
        return self.choices.popleft() if self.choices else 0

    def run(self, step: WitnessStep, on_move: Callable[[Levels], None] | None = None) -> StepResult:
        """Run ``step``; ``on_move`` (with ``rules``) is called whenever the governing rules change."""
        self.clock.load(step.readings)
        self.choices = deque(step.model_choices)
        if self.index is None:
            return self._run(step)
        keep = rule_filter(self.index, step_families(self.index, self.server, step), self.server.dialect.name)
        tracer = self.tracer(on_move)
        with tracer:
            result = self._run(step)
        result.rules = tuple(r for r in tracer.checked if keep(r))
        result.error_levels = tracer.error_levels
        result.keep = keep
        return result

    def tracer(self, on_move: Callable[[Levels], None] | None) -> RuleTracer:
        """The rule tracer a step runs under (a subclass may watch more than the rules)."""
        assert self.index is not None
        return RuleTracer(self.index, on_move)

    def _run(self, step: WitnessStep) -> StepResult:
        server = self.server
        if step.kind == "command":
            assert step.argv is not None
            out = server.execute(step.client, step.argv)
            return StepResult(out, out.reply)
        if step.kind == "timeout":
            # The step's first reading is the moment the timeout fired, past the deadline (BLOCK-8).
            self.clock.now_ms()
            return StepResult(None, server.timeout(step.client))
        if step.kind == "close":
            if step.client in server.clients:
                server.close(step.client)
            return StepResult(None, None)
        if step.kind == "expire":
            # EXPIRE-ACTIVE-2: the step's first reading is the moment past the key's time; DBSIZE counts exactly.
            assert step.argv is not None
            server.active_expiry_steps = True
            self.clock.now_ms()
            server.active_expire(step.db, step.argv[0])
            server.pushes = ()
            return StepResult(None, None)
        if step.kind == "rewrite":  # AOF-7: the running BGREWRITEAOF's child finished
            server.aof_rewrite_done()
            return StepResult(None, None)
        if step.kind in ("bgsave-done", "start-rewrite", "start-bgsave"):  # FORK-2: the cron's steps about children
            server.persistence_step(step.kind)
            return StepResult(None, None)
        server.client(step.client)
        return StepResult(None, None)


def collect_rules(trace: Trace, dialect: Dialect, witness: Witness) -> Witness:
    """``witness`` with every step's rules: those cited by the model lines the step ran that are
    about the step (:func:`rule_filter`), in the order they ran."""
    readings = witness.readings()
    replay = WitnessReplay(trace, dialect, readings[0] if readings else 0, rules=True)
    return witness.with_rules(replay.run(step).rules for step in witness.steps)


# ---------------------------------------------------------------------------
# Following the rules of the model's executed lines

READS_SHARE_XREAD = {"XREADGROUP": "XREAD"}
"""XREADGROUP-1: XREADGROUP parses its options with XREAD's rules, so XREAD-* rules cited in
docstrings of the shared helpers apply to it."""


def step_families(index: RuleIndex, server: Server, step: WitnessStep) -> set[str]:
    """The rule families of what a step runs, read before it runs: its command, the commands an
    EXEC runs, and the commands of the blocked clients it may serve or time out."""
    argv = step.argv if step.kind == "command" else None
    names = [argv[0]] if argv else []
    c = server.clients.get(step.client)
    if argv and argv[0].lower() == b"exec" and c is not None:
        names += [q[0] for q in c.multi_queue]
    names += [o.blocked.argv[0] for o in server.clients.values() if o.blocked is not None]
    if step.kind == "expire":
        names.append(b"EXPIRE")  # EXPIRE-ACTIVE-2: the expiry rules are the EXPIRE family's
    out: set[str] = set()
    for n in names:
        name = n.decode("utf-8", "backslashreplace").upper()
        out |= index.families.get(name, frozenset()) | {name}
        if name in READS_SHARE_XREAD:
            out.add(READS_SHARE_XREAD[name])
    return out


def rule_filter(index: RuleIndex, families: set[str], dialect: str) -> Callable[[str], bool]:
    """Keeps the rules of the step's commands (``families``) and the rules of no command (BLOCK, LAG, ID ...).

    Helpers shared by several commands cite all their commands' rules (``XPENDING-6,
    XCLAIM-1``); only the step's own apply. XADD-14 (the C errno that one XADD error text
    depends on) is cited wherever a command touches errno, and so is kept for XADD only.
    A dialect rule (``XREADGROUP-DIALECT-1``) is kept only for the dialects it names: in
    the others the code it cites only checks a switch.
    """
    rules = index.rules

    def keep(rule: str) -> bool:
        known = rules.get(rule)
        if known is not None and known.dialects and dialect not in known.dialects:
            return False
        family = rule.split("-", 1)[0]
        return family in families or family.lower() not in table.COMMANDS

    return keep


@dataclass
class _Frame:
    frame: FrameType
    lines: dict[int, LineRules]
    caller_direct: tuple[str, ...]  # what the calling line cites itself
    caller: Levels  # all the calling line's levels
    current: Levels = ()
    direct: tuple[str, ...] = ()


class RuleTracer:
    """Follows the model's executed lines during one step (``sys.settrace``).

    The *governing levels* at any moment (:data:`~xspec.spec.rule_index.Levels`) are those of
    the innermost model frame's current line, as the rule index gives them
    (:meth:`~xspec.spec.rule_index.RuleIndex.line_rules`), followed by what the calling line
    cites itself, the function's docstring citations and the caller's levels (a command
    handler starts afresh). ``on_move`` is called with the new levels whenever they change,
    before :attr:`active` moves to them. ``checked`` lists the rules cited by every statement
    that ran, in order; ``error_levels`` the levels governing the line that raised an error
    reply. Another tracer in place (a debugger, coverage) is put back afterwards.
    """

    def __init__(self, index: RuleIndex, on_move: Callable[[Levels], None] | None = None) -> None:
        self.modules = {m: index.module_lines(m) for m in index.module_paths}
        self.handler_codes: set[CodeType] = {fn.__code__ for fn in HANDLERS.values()}
        self.on_move = on_move
        self.stack: list[_Frame] = []
        self.active: Levels = ()
        self.checked: list[str] = []
        self.error_levels: Levels | None = None
        self.previous_trace: Any = None

    def __enter__(self) -> RuleTracer:
        self.previous_trace = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self.previous_trace)

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        lines = self.modules.get(frame.f_globals.get("__name__", ""))
        if lines is None:
            return None
        if frame.f_code in self.handler_codes or not self.stack:
            self.stack.append(_Frame(frame, lines, (), ()))
        else:
            caller = self.stack[-1]
            self.stack.append(_Frame(frame, lines, caller.direct, caller.current, caller.current))
        return self._local

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            top = self.stack[-1] if self.stack and self.stack[-1].frame is frame else self._find(frame)
            if top is not None:
                here = top.lines.get(frame.f_lineno)
                if here is None:
                    top.current, top.direct = top.caller, ()
                else:
                    top.current = chain(*here.levels, top.caller_direct, here.doc, *top.caller)
                    top.direct = here.direct
                    for r in here.own:
                        if r not in self.checked:
                            self.checked.append(r)
                self._moved()
        elif event == "return":
            while self.stack:
                popped = self.stack.pop()
                if popped.frame is frame:
                    break
            self._moved()
        elif event == "exception" and self.error_levels is None and isinstance(arg[1], CommandError):
            self.error_levels = self.active
        return self._local

    def _find(self, frame: FrameType) -> _Frame | None:
        for f in reversed(self.stack):
            if f.frame is frame:
                return f
        return None

    def _moved(self) -> None:
        active = self.stack[-1].current if self.stack else ()
        if active != self.active:
            if self.on_move is not None:
                self.on_move(active)
            self.active = active


__all__ = ["Divergence", "ReadingsClock", "RuleTracer", "StepResult", "Witness", "WitnessReplay", "WitnessStep",
           "collect_rules", "rule_filter", "step_families"]
