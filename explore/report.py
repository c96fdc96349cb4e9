"""Running explorations and protocol checks, and printing what they found.

:func:`explore_configuration` and :func:`check_protocol` return reports whose
every violation carries its counterexample made concrete (:mod:`.concrete`):
a virtual-clock trace of the real model's replies, which
:func:`render_counterexample` explains step by step with the renderer of
``xspec explain`` (traces/check/explain.py), after a numbered summary.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TextIO

from xspec.explore.concrete import Concrete, concretize
from xspec.explore.config import ConfigSystem, Configuration
from xspec.explore.engine import INVARIANTS, Progress, Result, explore
from xspec.explore.fastwalk import CompactResult
from xspec.explore.liveness import enabled_processes, find_violation
from xspec.explore.protocols import LIVENESS, Protocol, ProtocolSystem
from xspec.spec.resp import show
from xspec.spec.trace_format import Call


@dataclass
class PropertyResult:
    name: str
    kind: str  # "invariants" | "safety" | "liveness"
    holds: bool
    expected: bool | None = None
    message: str = ""
    counterexample: Concrete | None = None
    cycle_from: int | None = None  # liveness: index of the first counterexample step that repeats forever

    @property
    def as_expected(self) -> bool:
        return self.expected is None or self.expected == self.holds


@dataclass
class Report:
    title: str
    result: Result | CompactResult
    properties: list[PropertyResult] = field(default_factory=list)

    def ok(self) -> bool:
        return all(p.as_expected for p in self.properties)


def explore_configuration(config: Configuration, *, symmetry: bool = True, max_states: int | None = None,
                          progress: Progress | None = None) -> tuple[Report, ConfigSystem]:
    """Every reachable state of ``config``; the model's invariants checked in each."""
    system = ConfigSystem(config, symmetry=symmetry)
    result, perm0 = explore(system, max_states=max_states, progress=progress)
    report = Report(f"configuration {config.name}", result)
    found = result.violations.get(INVARIANTS)
    prop = PropertyResult("invariants of models/invariants.py", "invariants", found is None, True)
    if found is not None:
        prop.message = found.message
        prop.counterexample = concretize(system, result, found.state, perm0,
                                         f"explore {config.name}: invariant violated")
    report.properties.append(prop)
    return report, system


def check_protocol(protocol: Protocol, *, progress: Progress | None = None) -> tuple[Report, ProtocolSystem]:
    """Safety and liveness of ``protocol`` over its whole (bounded) state space."""
    system = ProtocolSystem(protocol)
    result, perm0 = explore(system, progress=progress)
    report = Report(f"protocol {protocol.name}", result)
    found = result.violations.get(INVARIANTS)
    inv = PropertyResult("invariants of models/invariants.py", "invariants", found is None, True)
    if found is not None:
        inv.message = found.message
        inv.counterexample = concretize(system, result, found.state, perm0, f"{protocol.name}: invariant violated")
    report.properties.append(inv)
    for name in system.safety_properties:
        v = result.violations.get(name)
        prop = PropertyResult(name, "safety", v is None, protocol.expected.get(name))
        if v is not None:
            prop.message = v.message
            prop.counterexample = concretize(system, result, v.state, perm0, f"{protocol.name}: {name} violated")
        report.properties.append(prop)
    enabled = enabled_processes(result)
    for name in LIVENESS:
        if name not in protocol.properties:
            continue
        unmet = _unmet(system, result, name)
        lasso = find_violation(result, _any(unmet), enabled)
        prop = PropertyResult(name, "liveness", lasso is None, protocol.expected.get(name))
        if lasso is not None:
            stuck = ", ".join(f"{n}-0" for n in unmet(lasso.anchor))
            prop.message = (f"a fair run never finishes message(s) {stuck}" if lasso.cycle else
                            f"a run stops with message(s) {stuck} unfinished")
            prop.counterexample = concretize(system, result, lasso.anchor, perm0,
                                             f"{protocol.name}: {name} violated", path=lasso.steps(result))
            prop.cycle_from = len(lasso.stem)
        report.properties.append(prop)
    return report, system


def _unmet(system: ProtocolSystem, result: Result, prop: str) -> Callable[[int], list[int]]:
    """For liveness property ``prop``: state index -> the messages not yet meeting it there."""
    return lambda i: system.goal(prop, result.states[i])


def _any(unmet: Callable[[int], list[int]]) -> Callable[[int], bool]:
    return lambda i: bool(unmet(i))


@contextlib.contextmanager
def live_progress(title: str) -> Iterator[Progress | None]:
    """A progress line on a terminal's stderr while a walk runs (states, depth, states per second), gone
    when it ends; None when stderr is not a terminal, so that logs and pipes get nothing extra."""
    from rich.console import Console
    from rich.progress import Progress as Bar
    from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    started = time.perf_counter()
    with Bar(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
             transient=True) as bar:
        task = bar.add_task(f"{title}: starting")

        def show(states: int, depth: int, transitions: int) -> None:
            rate = states / max(time.perf_counter() - started, 1e-9)
            bar.update(task, description=f"{title}: {states:,} states, depth {depth}, {rate:,.0f} states/s")

        yield show


def render_statistics(report: Report, out: TextIO) -> None:
    """One line of EXPLORE-3's statistics, marked incomplete when the state bound stopped the walk."""
    r = report.result
    rate = f"{r.rate():,.0f}" if r.cpu_seconds > 0 else "-"
    memory = f", {r.bytes_per_state:.0f} bytes/state" if isinstance(r, CompactResult) else ""
    out.write(f"{report.title}: {len(r.states):,} states, {r.transitions:,} transitions, depth {r.max_depth}, "
              f"{r.seconds:.2f} s ({r.cpu_seconds:.2f} s CPU, {rate} states/s{memory})"
              f"{'' if r.complete else ' [state bound reached: incomplete]'}\n")


def render_report(report: Report, names: tuple[str, ...], out: TextIO, *, explain: bool = True) -> None:
    render_statistics(report, out)
    for p in report.properties:
        verdict = "holds" if p.holds else "violated"
        expectation = "" if p.expected is None else ("  (as expected)" if p.as_expected else "  (UNEXPECTED)")
        out.write(f"  {p.kind:<10} {p.name}: {verdict}{expectation}\n")
    for p in report.properties:
        if p.counterexample is not None:
            out.write(f"\n== {p.name}: violated. {p.message}\n")
            render_counterexample(p, names, out, explain=explain)


def render_counterexample(p: PropertyResult, names: tuple[str, ...], out: TextIO, *, explain: bool = True) -> None:
    """A numbered list of the steps (who did what, what the model replied), then the explain tables (EXPLORE-CEX-2)."""
    c = p.counterexample
    assert c is not None
    calls = [e for e in c.trace.events if isinstance(e, Call)]
    replies = iter(calls[len(calls) - sum(1 for s in c.steps if s.kind == "command"):])
    out.write(f"Shortest counterexample, {len(c.steps)} steps (trace: {len(c.trace.events)} events):\n")
    for n, step in enumerate(c.steps, 1):
        line = step.describe(names)
        if step.kind == "command":
            line += f"  ->  {show(next(replies).reply)}"
        marker = "   <- from here on, repeats forever" if p.cycle_from is not None and n == p.cycle_from + 1 else ""
        out.write(f"  {n:>3}. {line}{marker}\n")
    if p.cycle_from is not None and p.cycle_from >= len(c.steps):
        out.write("       (and then no process can take a step)\n")
    if explain:
        text = explain_text(c)
        if text:
            out.write("\nStep by step (xspec explain):\n")
            out.write(text)


def explain_text(c: Concrete) -> str:
    """The trace rendered by ``xspec explain`` (plain text) from the execution that made it, or '' when
    that renderer is not available."""
    try:
        from xspec.traces.check.explain import explain, render_steps
    except ImportError:
        return ""
    buffer = io.StringIO()
    render_steps(explain(c.trace, witness=c.witness).steps, plain=True, out=buffer)
    return buffer.getvalue()
