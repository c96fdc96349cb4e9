"""The mutation gate: every seeded mutant of the model (models/mutants.py) must be killed.

Three killers are tried on each mutant, in this order, until one kills it:

1. ``z3``: the Z3 cross-check (:func:`xspec.proofs.crosscheck.cross_check`) of the
   encodings against the model, on the command families the mutant touches
   (:data:`CROSS_CHECK_FAMILIES`). It kills when the mutated model leaves the
   behaviour the encoding allows.
2. ``explore``: a *differential exploration* of a small configuration chosen for the
   mutant (:data:`EXPLORATIONS`). The unmutated model is explored first, recording
   every command transition ``(abstract state, process, command) -> (reply, next
   state)`` in the order the breadth-first walk computes them; then the mutated model
   is explored with the same abstraction (so equal values get equal numbers in keys)
   and stops at the first transition that differs. Both walks are deterministic, so
   they agree up to that transition, whose source state both models reach by the
   same path. The kill counts only when that path replayed concretely on fresh
   servers (no abstraction) gives a different outcome or state on the mutant. An
   invariant (models/invariants.py) that only the mutant violates kills as well.
3. ``hypothesis``: a differential Hypothesis property: a random sequence of
   commands from several clients (blocking reads, RESP3, clock moves, disconnects)
   run on the unmutated and on the mutated model must give equal outcomes (reply,
   replies served to blocked clients, propagation) and equal frozen states after
   every step, and the mutant must keep every invariant. Hypothesis shrinks the
   first difference it finds to a minimal sequence.

A killer that does not apply to a mutant (no family, no configuration) is skipped.
The blocking mutants are the explorer's blind spot: it refuses blocked clients
(EXPLORE-KEY-3). Definitions and the measured table: spec/exploration.md, "The mutation gate".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from xspec.explore.abstraction import Abstraction, Key
from xspec.explore.config import ConfigSystem, Configuration
from xspec.explore.engine import Result, Step, explore
from xspec.explore.execution import CRASH, ByAges, Executor, initial_server
from xspec.models import Instant, ManualClock, Server
from xspec.models.invariants import violations
from xspec.models.mutants import MUTANTS, apply
from xspec.models.server import Outcome
from xspec.proofs.crosscheck import LAG_HELPERS, cross_check
from xspec.spec.resp import Reply

KILLERS = ("z3", "explore", "hypothesis")
CROSS_CHECK_SAMPLES = 30
CROSS_CHECK_SEED = 7
HYPOTHESIS_EXAMPLES = 1000

# -- killer 1: the Z3 cross-check ----------------------------------------------------------------------
FAMILIES_RUNNING: dict[str, list[str]] = {
    "xclaim": ["XCLAIM"],
    "xautoclaim": ["XAUTOCLAIM"],
    "xack": ["XACK"],
    "xgroup_delconsumer": ["XGROUP DELCONSUMER"],
    "group_lag": [LAG_HELPERS],
    "deliver_new": ["XREADGROUP >"],
    "history": ["XREADGROUP history"],
    "xdel": ["XDEL"],
    "_next_auto_id": ["XADD"],
    "xsetid": ["XSETID"],
    # EXPLORE-GATE-4: the encodings check XPENDING, XRANGE and XREAD only as commands that change
    # nothing (their replies are left out), RESP2 only, and one blocked client at a time.
    "_pending_entries": ["read-only commands"],
    "range_reply": ["read-only commands"],
    "streams_reply": ["read-only commands"],
    "_handle_ready": ["client sessions"],
    "xgroup_destroy": [],  # XGROUP DESTROY has no encoding
}
"""The cross-check's command families that run each function a mutant changes (empty: none does)."""

CROSS_CHECK_FAMILIES: dict[str, list[str]] = {name: FAMILIES_RUNNING.get(m.function, [])
                                              for name, m in MUTANTS.items()}
"""Each mutant's families: those running the function it changes (a test requires every function listed)."""


def z3_killer(name: str) -> str | None:
    """The first disagreement the cross-check finds on the mutant, or None."""
    families = CROSS_CHECK_FAMILIES[name]
    if not families:
        return None
    with apply(name):
        report = cross_check(CROSS_CHECK_SAMPLES, seed=CROSS_CHECK_SEED, commands=families)
    return report.failures[0] if report.failures else None


# -- killer 2: differential exploration ----------------------------------------------------------------
def _configuration(name: str, *, consumers: int = 1, entries: int = 1, actions: Sequence[str] = (),
                   commands: Sequence[Sequence[str]] = (), **options: Any) -> Configuration:
    return Configuration(f"gate-{name}", consumers=consumers, entries=entries, actions=tuple(actions),
                         commands=tuple(tuple(c) for c in commands), **options)


_PENDING = ["XPENDING", "s", "{group}", "-", "+", "10"]
_GROUPS_INFO = ["XINFO", "GROUPS", "s"]
_STREAM_INFO = ["XINFO", "STREAM", "s"]
EXPLORATIONS: dict[str, Configuration] = {
    "xclaim-no-idle-check": _configuration("claim", consumers=2, actions=("read", "claim", "tick")),
    "xclaim-min-idle-inclusive": _configuration("claim", consumers=2, actions=("read", "claim", "tick")),
    "xclaim-justid-counts": _configuration(
        "claim-justid", consumers=2, actions=("read",), count_cap=3,
        commands=[["XCLAIM", "s", "g", "{consumer}", "0", "{id}", "JUSTID"], _PENDING]),
    "xclaim-ignores-retrycount": _configuration(
        "claim-retrycount", consumers=2, actions=("read",), count_cap=3,
        commands=[["XCLAIM", "s", "g", "{consumer}", "0", "{id}", "RETRYCOUNT", "2"], _PENDING]),
    "xautoclaim-forgets-deleted": _configuration("autoclaim", consumers=2, actions=("read", "autoclaim", "delete",
                                                                                    "tick")),
    "xautoclaim-budget-off-by-one": _configuration(
        "autoclaim-budget", consumers=1, entries=10, prefill=True,
        commands=[["XREADGROUP", "GROUP", "g", "{consumer}", "STREAMS", "s", ">"],
                  ["XAUTOCLAIM", "s", "g", "{consumer}", "100", "0-0", "COUNT", "1"]]),
    "xautoclaim-min-idle-inclusive": _configuration("autoclaim", consumers=2, actions=("read", "autoclaim", "delete",
                                                                                       "tick")),
    "xautoclaim-justid-counts": _configuration(
        "autoclaim-justid", consumers=2, actions=("read",), count_cap=3,
        commands=[["XAUTOCLAIM", "s", "g", "{consumer}", "0", "0-0", "JUSTID"], _PENDING]),
    "xack-keeps-consumer-pel": _configuration("ack", consumers=2, actions=("read", "ack"),
                                              commands=[["XPENDING", "s", "g"]]),
    "xack-counts-unknown-ids": _configuration("ack-all", consumers=1, actions=("read", "ack"), arguments="all"),
    "xpending-idle-inclusive": _configuration(
        "pending-idle", consumers=1, actions=("read", "tick"),
        commands=[["XPENDING", "s", "g", "IDLE", "100", "-", "+", "10"]]),
    "delconsumer-keeps-pending": _configuration(
        "delconsumer", consumers=1, actions=("read",),
        commands=[["XGROUP", "DELCONSUMER", "s", "{group}", "{consumer}"], ["XPENDING", "s", "g"]]),
    "lag-off-by-one": _configuration("lag", consumers=1, actions=("read",), commands=[_GROUPS_INFO]),
    "noack-adds-to-pel": _configuration(
        "noack", consumers=1, commands=[["XREADGROUP", "GROUP", "g", "{consumer}", "NOACK", "STREAMS", "s", ">"],
                                        ["XPENDING", "s", "g"]]),
    "history-redelivery-not-counted": _configuration("history", consumers=1, actions=("read", "history"),
                                                     count_cap=3, commands=[_PENDING]),
    "xdel-forgets-max-deleted": _configuration("xdel", entries=2, actions=("delete",), commands=[_STREAM_INFO]),
    "xsetid-ignores-entries-added": _configuration(
        "setid", commands=[["XSETID", "s", "1-0", "ENTRIESADDED", "5"], _STREAM_INFO]),
    "xrange-count-off-by-one": _configuration("xrange", entries=2, commands=[["XRANGE", "s", "-", "+", "COUNT", "1"]]),
    "resp3-read-reply-as-array": _configuration(
        "resp3", commands=[["HELLO", "3"], ["XREAD", "COUNT", "1", "STREAMS", "s", "0"]]),
    # Out of the explorer's scope (EXPLORE-KEY-3): xadd-auto-seq-starts-at-one (IDs from the clock,
    # XADD '*'), destroy-leaves-readers-blocked and blocked-fifo-reversed (blocked clients).
}
"""A small configuration per mutant, explored without symmetry reduction (so paths name real processes)."""

EXPLORE_MAX_STATES = 20_000

Transition = tuple[Key, int, tuple[bytes, ...], Reply | None, Key]


class _Diverged(Exception):
    def __init__(self, at: int, transition: Transition) -> None:
        super().__init__(at)
        self.transition = transition


class _RecordingExecutor(Executor):
    """Records every command and crash transition in the order computed; with ``reference``, raises
    :class:`_Diverged` at the first one that differs from the reference's transition at the same place."""

    def __init__(self, abstraction: Abstraction, reference: list[Transition] | None = None) -> None:
        super().__init__(abstraction)
        self.log: list[Transition] = []
        self.reference = reference

    def command(self, key: Key, proc: int, argv: tuple[bytes, ...]) -> tuple[Reply | None, Key, Server | None]:
        reply, new, server = super().command(key, proc, argv)
        self._record((key, proc, argv, reply, new))
        return reply, new, server

    def crash(self, key: Key, proc: int) -> tuple[Key, Server | None]:
        new, server = super().crash(key, proc)
        self._record((key, proc, CRASH, None, new))
        return new, server

    def outcomes(self, key: Key, plan: list[tuple[int, tuple[bytes, ...], ByAges | None]]
                 ) -> list[tuple[Reply | None, Key, Server | None]]:
        done = []
        for step in plan:  # one at a time: each is recorded before the next is computed
            reply, new, server = super().outcomes(key, [step])[0]
            self._record((key, step[0], step[1], reply, new))
            done.append((reply, new, server))
        return done

    def _record(self, transition: Transition) -> None:
        at = len(self.log)
        self.log.append(transition)
        if self.reference is not None and (at >= len(self.reference) or self.reference[at] != transition):
            raise _Diverged(at, transition)


@dataclass
class _Reference:
    system: ConfigSystem
    result: Result
    log: list[Transition]


_references: dict[str, _Reference] = {}


def _reference(config: Configuration) -> _Reference:
    """The unmutated model's exploration of ``config`` (run once per configuration)."""
    ref = _references.get(config.name)
    if ref is None:
        system = ConfigSystem(config, symmetry=False)
        recorder = system.executor = _RecordingExecutor(system.abstraction)
        result, _ = explore(system, max_states=EXPLORE_MAX_STATES)
        ref = _references[config.name] = _Reference(system, result, recorder.log)
    return ref


def _replay(system: ConfigSystem, steps: Sequence[Step]) -> list[Any]:
    """Run ``steps`` from the configuration's initial state on a fresh concrete server: each step's
    outcome, then the final frozen state and invariant violations."""
    server = initial_server(system.abstraction, system.setup())
    observed: list[Any] = []
    for step in steps:
        if step.kind == "command":
            observed.append(server.execute(step.proc + 1, list(step.argv)))
            continue
        if step.kind == "tick":
            clock = server.clock
            assert isinstance(clock, ManualClock)
            clock.advance(system.tick_ms)
        else:
            server.close(step.proc + 1)
            server.connect(step.proc + 1)
        observed.append(None)
    return [*observed, server.freeze(), violations(server)]


def explore_killer(name: str) -> str | None:
    """A concretely confirmed counterexample from the differential exploration of the mutant, or None
    (EXPLORE-GATE-2)."""
    config = EXPLORATIONS.get(name)
    if config is None:
        return None
    ref = _reference(config)
    diverged: Transition | None = None
    with apply(name):
        system = ConfigSystem(config, symmetry=False)
        system.abstraction = ref.system.abstraction  # one numbering of key parts for both walks
        recorder = system.executor = _RecordingExecutor(ref.system.abstraction, ref.log)
        try:
            result, _ = explore(system, max_states=EXPLORE_MAX_STATES)
        except _Diverged as d:
            diverged = d.transition
    if diverged is not None:
        return _confirm(name, ref, diverged)
    broken = {k: v for k, v in result.violations.items() if k not in ref.result.violations}
    if broken:
        prop, violation = next(iter(broken.items()))
        path = [step for step, _ in result.path(violation.state)]
        return _describe(ref.system, path) + f"\n  -> {prop}: {violation.message}"
    if len(recorder.log) != len(ref.log):  # the mutant's walk computed fewer transitions
        return f"the mutant's exploration stops after {len(recorder.log)} of {len(ref.log)} transitions"
    return None


def _confirm(name: str, ref: _Reference, transition: Transition) -> str | None:
    """The path to the diverging transition's source, replayed concretely on both models; the
    counterexample when their outcomes differ, else None (the abstraction alone saw the difference)."""
    key, proc, argv, _, _ = transition
    source = next((i for i, state in enumerate(ref.result.states) if state[0] == key), None)
    if source is None:  # the diverging transition starts in the initial state of the mutant's setup
        path: list[Step] = []
    else:
        path = [step for step, _ in ref.result.path(source)]
    path.append(Step(proc, "crash") if argv == CRASH else Step(proc, "command", argv))
    expected = _replay(ref.system, path)
    with apply(name):
        seen = _replay(ref.system, path)
    if seen == expected:
        return None
    at = next(i for i, (a, b) in enumerate(zip(expected, seen, strict=True)) if a != b)
    what = ("the final state" if at == len(path) else "the invariants" if at > len(path)
            else f"step {at + 1}'s outcome")
    return _describe(ref.system, path) + f"\n  -> {what} differs: {_difference(expected[at], seen[at])}"


def _describe(system: ConfigSystem, path: Sequence[Step]) -> str:
    return "\n".join(f"  {n}. {step.describe(system.process_names)}" for n, step in enumerate(path, 1))


def _difference(expected: Any, seen: Any, context: int = 100) -> str:
    """Where two observations differ: the outcome's field, or the text around the first differing character."""
    if isinstance(expected, Outcome) and isinstance(seen, Outcome):
        part = next(f.name for f in fields(Outcome) if getattr(expected, f.name) != getattr(seen, f.name))
        expected, seen = getattr(expected, part), getattr(seen, part)
        prefix = f"{part}: "
    else:
        prefix = ""
    a, b = repr(expected), repr(seen)
    start = max(next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))) - context // 2, 0)

    def cut(text: str) -> str:
        return ("..." if start else "") + text[start:start + context] + ("..." if len(text) > start + context else "")

    return f"{prefix}model {cut(a)}, mutant {cut(b)}"


# -- killer 3: a differential Hypothesis property ---------------------------------------------------------
_CLIENTS = (1, 2, 3)
_ids = st.builds(lambda ms, seq: b"%d-%d" % (ms, seq), st.integers(0, 4), st.integers(0, 1))
_consumer = st.sampled_from([b"alice", b"bob"])
_idle = st.sampled_from([b"0", b"1", b"5", b"10"])
_count = st.sampled_from([b"1", b"2", b"3"])


def _words(*parts: st.SearchStrategy[bytes] | bytes) -> st.SearchStrategy[tuple[bytes, ...]]:
    return st.tuples(*(part if isinstance(part, st.SearchStrategy) else st.just(part) for part in parts))


def _optional(word: bytes) -> st.SearchStrategy[tuple[bytes, ...]]:
    return st.sampled_from([(), (word,)])


Action = tuple[str, int, tuple[bytes, ...]]
_add = _words(b"XADD", b"s", st.one_of(st.just(b"*"), _ids), b"f", b"v")
_blocking_reads = st.one_of(
    st.tuples(_words(b"XREADGROUP", b"GROUP", b"g", _consumer), _optional(b"NOACK"),
              _words(b"BLOCK", b"0", b"STREAMS", b"s", b">")).map(lambda t: t[0] + t[1] + t[2]),
    _words(b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$"))
_group_reads = _words(b"XREADGROUP", b"GROUP", b"g", _consumer, b"COUNT", _count, b"STREAMS", b"s",
                      st.sampled_from([b">", b"0"]))
_group_changes = st.one_of(
    _words(b"XGROUP", b"CREATE", b"s", b"g", st.sampled_from([b"0", b"$"]), b"MKSTREAM"),
    _words(b"XGROUP", b"DESTROY", b"s", b"g"),
    _words(b"XGROUP", b"DELCONSUMER", b"s", b"g", _consumer))
_others = st.one_of(
    _words(b"XREAD", b"COUNT", _count, b"STREAMS", b"s", b"0"),
    _words(b"XACK", b"s", b"g", _ids),
    st.tuples(_words(b"XCLAIM", b"s", b"g", _consumer, _idle, _ids), _optional(b"JUSTID")).map(lambda t: t[0] + t[1]),
    st.tuples(_words(b"XAUTOCLAIM", b"s", b"g", _consumer, _idle, b"0-0", b"COUNT", _count),
              _optional(b"JUSTID")).map(lambda t: t[0] + t[1]),
    _words(b"XPENDING", b"s", b"g"),
    _words(b"XPENDING", b"s", b"g", b"-", b"+", b"10"),
    _words(b"XPENDING", b"s", b"g", b"IDLE", _idle, b"-", b"+", b"10"),
    _words(b"XRANGE", b"s", b"-", b"+", b"COUNT", _count),
    _words(b"XDEL", b"s", _ids),
    _words(b"XSETID", b"s", _ids, b"ENTRIESADDED", st.sampled_from([b"5", b"9"])),
    _words(b"XINFO", b"GROUPS", b"s"),
    _words(b"XINFO", b"STREAM", b"s"),
    _words(b"HELLO", st.sampled_from([b"2", b"3"])),
)
# Weighted so that short sequences meet: entries, deliveries and blocked readers come often.
_commands = st.sampled_from([_add] * 3 + [_blocking_reads] * 2 + [_group_reads] * 2 + [_group_changes] + [_others] * 4).flatmap(
    lambda s: s)
_actions = st.sampled_from([
    *[st.tuples(st.just("command"), st.sampled_from(_CLIENTS), _commands)] * 8,
    st.tuples(st.just("tick"), st.sampled_from([0, 1, 5, 10]), st.just(())),
    st.tuples(st.just("close"), st.sampled_from(_CLIENTS), st.just(())),
]).flatmap(lambda s: s)
PRELUDE: tuple[Action, ...] = (("command", 3, (b"XADD", b"s", b"1-0", b"f", b"v")),
                               ("command", 3, (b"XGROUP", b"CREATE", b"s", b"g", b"0")))
"""Every sequence starts with an entry and a group, so that group commands have something to act on."""


def _run_actions(actions: Sequence[Action]) -> list[Any]:
    """What each action did on a fresh model, with the state it left and the invariants it broke."""
    clock = ManualClock(1000)
    server = Server(clock=clock)
    observed: list[Any] = []
    for kind, arg, argv in (*PRELUDE, *actions):
        try:
            if kind == "command":
                client = server.clients.get(arg)
                if client is not None and client.blocked is not None:
                    outcome: Any = "blocked: not sent"
                else:
                    outcome = server.execute(arg, list(argv))
            elif kind == "tick":
                clock.advance(arg)
                outcome = server.due_timeouts(Instant(clock.ms))
            else:
                server.close(arg)
                outcome = None
        except Exception as e:  # noqa: BLE001 - a mutant that makes the model raise is a difference too
            observed.append(f"raised {e!r}")
            break
        observed.append((outcome, server.freeze(), violations(server)))
    return observed


def _first_difference(name: str, actions: Sequence[Action]) -> int | None:
    expected = _run_actions(actions)
    with apply(name):
        seen = _run_actions(actions)
    return next((i for i, (a, b) in enumerate(zip(expected, seen, strict=False)) if a != b),
                None if len(expected) == len(seen) else min(len(expected), len(seen)))


def hypothesis_killer(name: str) -> str | None:
    """The minimal command sequence Hypothesis finds on which the mutant differs, or None (EXPLORE-GATE-3)."""
    try:
        actions = find(st.lists(_actions, max_size=16), lambda a: _first_difference(name, a) is not None,
                       settings=settings(max_examples=HYPOTHESIS_EXAMPLES, derandomize=True, database=None,
                                         deadline=None, suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return None
    at = _first_difference(name, actions)
    assert at is not None
    lines = [f"  {n}. " + (f"client {arg}: " + " ".join(w.decode() for w in argv) if kind == "command"
                           else f"clock +{arg} ms" if kind == "tick" else f"client {arg} closes")
             for n, (kind, arg, argv) in enumerate((*PRELUDE, *actions), 1)]
    expected = _run_actions(actions)
    with apply(name):
        seen = _run_actions(actions)
    a, b = expected[at], seen[at]
    what = "outcome"
    if isinstance(a, tuple) and isinstance(b, tuple):  # (outcome, state, invariants): name the first that differs
        what, a, b = next(t for t in zip(("outcome", "state", "invariants"), a, b, strict=True) if t[1] != t[2])
    return "\n".join(lines) + f"\n  -> action {at + 1}'s {what} differs: {_difference(a, b)}"


# -- the gate ------------------------------------------------------------------------------------------
@dataclass
class Verdict:
    """How a mutant fared: the killer that killed it (None: survived), its counterexample, the time each
    killer tried took (seconds)."""

    mutant: str
    killer: str | None = None
    counterexample: str = ""
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


KILLER_FUNCTIONS: dict[str, Callable[[str], str | None]] = {
    "z3": z3_killer, "explore": explore_killer, "hypothesis": hypothesis_killer}


def judge(name: str, killers: Sequence[str] = KILLERS) -> Verdict:
    """Try ``killers`` on mutant ``name`` in order until one kills it (EXPLORE-GATE-1)."""
    verdict = Verdict(name)
    for killer in killers:
        started = time.perf_counter()
        found = KILLER_FUNCTIONS[killer](name)
        verdict.seconds[killer] = time.perf_counter() - started
        if found is not None:
            verdict.killer, verdict.counterexample = killer, found
            break
    return verdict


def run_gate(names: Sequence[str] | None = None) -> list[Verdict]:
    """Every mutant (default: all of :data:`MUTANTS`), judged."""
    return [judge(name) for name in (names or list(MUTANTS))]


def render_table(verdicts: Sequence[Verdict]) -> str:
    """The kill table: mutant, killer, the killer's time, the time of every killer tried; and the kill rate."""
    width = max(len(v.mutant) for v in verdicts)
    lines = [f"{'mutant':<{width}}  {'killer':<10}  {'kill':>6}  {'total':>6}",
             f"{'-' * width}  {'-' * 10}  {'-' * 6}  {'-' * 6}"]
    lines += [f"{v.mutant:<{width}}  {v.killer or 'SURVIVED':<10}  "
              f"{v.seconds[v.killer] if v.killer else 0:5.2f}s  {v.total:5.2f}s" for v in verdicts]
    killed = sum(v.killer is not None for v in verdicts)
    lines.append(f"killed {killed}/{len(verdicts)} ({100 * killed / len(verdicts):.0f} %) in "
                 f"{sum(v.total for v in verdicts):.1f}s")
    return "\n".join(lines)


__all__ = ["CROSS_CHECK_FAMILIES", "EXPLORATIONS", "KILLERS", "Verdict", "explore_killer", "hypothesis_killer",
           "judge", "render_table", "run_gate", "z3_killer"]
