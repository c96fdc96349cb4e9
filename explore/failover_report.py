"""Checking the seven properties on the replication configurations, and printing the verdicts
(``xspec explore --protocol failover``; spec/exploration.md, EXPLORE-FAIL-*).

One line per property and configuration, ``holds`` or ``violated``; for each violation the shortest
counterexample (breadth first: EXPLORE-1) as numbered steps, replayed from the initial state
(:func:`~xspec.explore.fastwalk.replay_path`), with the state of the serving node after each step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TextIO

from xspec.explore.failover import MESSAGES, NAMED, PROPERTIES, FailoverConfig, FailoverSystem, T
from xspec.explore.fastwalk import CompactResult, Progress, replay_path, walk


@dataclass
class Verdict:
    prop: str
    holds: bool
    steps: list[tuple[int, Any]] = field(default_factory=list)  # the counterexample: (step, state after)


@dataclass
class FailoverReport:
    config: FailoverConfig
    system: FailoverSystem
    result: CompactResult
    verdicts: list[Verdict]


def check_failover(config: FailoverConfig, *, progress: Progress | None = None) -> FailoverReport:
    """Every reachable state of ``config`` and each property's verdict, with a shortest counterexample."""
    system = FailoverSystem(config)
    result, _ = walk(system, progress=progress)
    verdicts = []
    for prop in PROPERTIES:
        found = result.violations.get(prop)
        if found is None:
            verdicts.append(Verdict(prop, True))
        else:
            verdicts.append(Verdict(prop, False, replay_path(system, result, found.state)))
    return FailoverReport(config, system, result, verdicts)


def configurations(name: str) -> list[FailoverConfig]:
    """``failover`` (all of them), a regime (``async``, ``wait``, ``coordinated``) or one configuration's name."""
    if name == "failover":
        return list(NAMED.values())
    if name in ("async", "wait", "coordinated"):
        return [c for c in NAMED.values() if c.regime == name]
    if name in NAMED:
        return [NAMED[name]]
    raise KeyError(name)


def describe_state(system: FailoverSystem, s: Any) -> str:
    """The serving node's stream and group, and each link's queue, in one line."""
    nodes, serving, up, links, budget, local, ghost = s
    node = nodes[serving]
    names = ["c1", "c2", "w"]
    if node is None:
        return ""
    entries, ld, pel, cons, dead = node
    stream = " ".join(f"{T}-{i}:{p}" for i, p in enumerate(entries)) or "(empty)"
    letters = " ".join(f"{T}-{i}" for i in range(dead.bit_length()) if dead >> i & 1)
    pending = " ".join(f"{i}@{names[o]}x{c}" for i, o, c in pel) or "-"
    who = ",".join(n for b, n in enumerate(names) if cons >> b & 1) or "-"
    queues = "; ".join(f"to node {r}: {len(link[0])} queued{' (cut)' if link[1] else ''}"
                       for r, link in enumerate(links) if link is not None)
    return (f"[node {serving}{'' if up else ' DOWN'}: entries {stream}; last-delivered {ld if ld >= 0 else '0-0'}; "
            f"pending {pending}; consumers {who}{'; dead letters ' + letters if letters else ''}"
            f"{'; ' + queues if queues else ''}]")


def render_failover(report: FailoverReport, out: TextIO, *, counterexamples: bool = True) -> None:
    r = report.result
    c = report.config
    out.write(f"failover {c.name} ({c.description}; regime {c.regime}): {len(r.states):,} states, "
              f"{r.transitions:,} transitions, depth {r.max_depth}, {r.cpu_seconds:.2f} s CPU "
              f"({r.rate():,.0f} states/s, {r.bytes_per_state:.0f} bytes/state)\n")
    for v in report.verdicts:
        extra = "" if v.holds else f"  (shortest counterexample: {len(v.steps)} steps)"
        out.write(f"  {c.name:<28} {v.prop:<26} {'holds' if v.holds else 'violated'}{extra}\n")
    if not counterexamples:
        return
    for v in report.verdicts:
        if v.holds:
            continue
        out.write(f"\n== {c.name}: {v.prop} violated: {MESSAGES[v.prop]}\n")
        for n, (sid, state) in enumerate(v.steps, 1):
            out.write(f"  {n:>3}. {report.system.steps[sid].describe(report.system.process_names)}\n")
            out.write(f"       {describe_state(report.system, state)}\n")
