"""Explorer speed: distinct states per second, and the time to explore whole configurations.

    python benchmarks/bench_explore.py [--skip-standard] [--rounds 3] [--breakdown]
    python benchmarks/bench_explore.py --failover    # section 4 only

0. The compact engine (explore/compact.py, explore/fastwalk.py) beside today's model-driven engine, in
   the same run: ``compact`` (best of ``--rounds``, a fresh system each round: nothing carried over) and
   ``standard``, states, transitions, depth, CPU time, distinct states (symmetry representatives) per CPU
   second, bytes per state, and the speed-up. Targets: compact >= 50,000 states per CPU second (10x the
   model engine), standard under 5 s. The two engines must give the same numbers.

Sections 1-3 measure the model-driven engine (``--engine model``); section 4 (``--failover``) the
replication configurations of ``xspec explore --protocol failover`` (target: each under 60 s on one core).

1. ``compact`` (2 consumers x 3 entries: read, ack, claim, autoclaim, delete, crash, clock),
   explored whole with symmetry reduction: states, transitions, depth, and distinct
   states per second, best of ``--rounds``; also how many states the representatives
   stand for without the reduction (orbits counted). Target: >= 20,000 states/s on one core.
2. ``standard`` (3 consumers x 4 entries, the same actions), explored whole once.
   Target: under 60 s.
3. Every consumer protocol of ``xspec explore --protocol``: states, time, verdicts.

Times are given as wall clock and as this process's CPU time; on a machine other
processes share, the CPU time is the figure of the explorer itself. "model runs" counts
the steps the model actually ran (the rest came from the memo). No assertion is made.

With ``--breakdown``, one more compact run is timed by part (perf_counter around each call,
so the parts add a little of their own): the model's dispatcher running steps
(``Server.execute``, crashes), thawing keys, reading keys, the invariants, and the rest
(the walk, memo look-ups, symmetry). The model's share bounds what the explorer can reach
while every step it cannot answer from the memo runs through the dispatcher. Two bounds follow: the
rate the model runs alone would allow, and the walk alone (the same system explored again, with
every step in the memo: no model run, no thaw).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from xspec.explore.compact import CompactConfig  # noqa: E402
from xspec.explore.config import NAMED, ConfigSystem  # noqa: E402
from xspec.explore.engine import Result, explore  # noqa: E402
from xspec.explore.fastwalk import CompactResult, walk  # noqa: E402
from xspec.explore.protocols import PROTOCOLS  # noqa: E402
from xspec.explore.report import check_protocol, explore_configuration  # noqa: E402


def covered(system: ConfigSystem, r: Result) -> int:
    """How many states without symmetry reduction the representatives stand for (their orbits' sizes)."""
    return sum(len(system.abstraction.orbit(key, local)) for key, local, _ in r.states)


def line(name: str, r: Result, executed: int) -> str:
    wall_rate = len(r.states) / r.seconds if r.seconds else float("inf")
    return (f"{name:<24} {len(r.states):>9,} states {r.transitions:>10,} transitions  depth {r.max_depth:>3}  "
            f"wall {r.seconds:7.2f} s ({wall_rate:>8,.0f} states/s)  "
            f"CPU {r.cpu_seconds:7.2f} s ({r.rate():>8,.0f} states/s)  {executed:>8,} model runs")


def breakdown() -> None:
    """One compact exploration with the time spent in each part (see the module docstring)."""
    from xspec.explore import abstraction, execution
    from xspec.models.server import Server

    spent: Counter[str] = Counter()
    patched: list[tuple[Any, str, Any]] = []

    def timed(owner: Any, name: str, part: str) -> None:
        original = getattr(owner, name)

        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[part] += time.perf_counter() - started

        patched.append((owner, name, original))
        setattr(owner, name, run)

    timed(Server, "execute", "model: commands")
    timed(Server, "close", "model: crashes")
    timed(Server, "connect", "model: crashes")
    timed(abstraction.Abstraction, "thaw", "thaw keys")
    timed(abstraction.Abstraction, "key", "read keys")
    timed(execution, "invariant_violations", "invariants")
    try:
        started = time.perf_counter()
        report, system = explore_configuration(NAMED["compact"])
        total = time.perf_counter() - started
    finally:
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)
    spent["the rest (walk, memo, symmetry)"] = total - sum(spent.values())
    runs = system.executor.executed
    print(f"   breakdown of one compact run ({total:.2f} s with the timers, {runs:,} model runs):")
    for part, seconds in spent.most_common():
        print(f"      {part:<34} {seconds:6.3f} s  {100 * seconds / total:5.1f} %")
    per_run = sum(spent[part] for part in ("model: commands", "model: crashes", "thaw keys", "read keys")) / runs
    print(f"   a model run (thaw, dispatcher, key read) costs {per_run * 1e6:.1f} us with the timers: the "
          f"{runs:,} runs alone cap the rate at {len(report.result.states) / (runs * per_run):,.0f} states/s")
    floor = min((explore(system)[0] for _ in range(3)), key=lambda r: r.cpu_seconds)
    print(f"   the walk alone (the same system again: memo, plans, verdicts warm, no model run): "
          f"{floor.cpu_seconds:.3f} CPU s, {floor.cpu_seconds / floor.transitions * 1e6:.2f} us per transition, "
          f"{floor.rate():,.0f} states/s")


def compact_line(name: str, r: CompactResult) -> str:
    return (f"{name:<24} {len(r.states):>9,} states {r.transitions:>10,} transitions  depth {r.max_depth:>3}  "
            f"wall {r.seconds:7.2f} s  CPU {r.cpu_seconds:7.3f} s ({r.rate():>8,.0f} states/s)  "
            f"{r.bytes_per_state:.0f} bytes/state")


def compact_engines(rounds: int, standard: bool) -> None:
    """Section 0 of the module docstring."""
    print("0. compact engine beside the model engine (targets: compact >= 50,000 states/CPU s, standard < 5 s)")
    for name in ("compact", "standard") if standard else ("compact",):
        config = NAMED[name]
        fast = min((walk(CompactConfig(config))[0] for _ in range(rounds if name == "compact" else 1)),
                   key=lambda r: r.cpu_seconds)
        print("   " + compact_line(f"{name} (compact engine)", fast))
        runs = [explore_configuration(config) for _ in range(rounds if name == "compact" else 1)]
        report, system = min(runs, key=lambda run: run[0].result.cpu_seconds)
        model = report.result
        assert isinstance(model, Result)
        print("   " + line(f"{name} (model engine)", model, system.executor.executed))
        same = (len(fast.states), fast.transitions, fast.max_depth) == (len(model.states), model.transitions,
                                                                         model.max_depth)
        print(f"   {name}: {fast.rate() / model.rate():.1f}x the model engine's states per CPU second; "
              f"same numbers: {'yes' if same else 'NO'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-standard", action="store_true")
    parser.add_argument("--breakdown", action="store_true", help="also time one compact run by part")
    parser.add_argument("--failover", action="store_true", help="only section 4: the replication configurations")
    args = parser.parse_args()
    if args.failover:
        failover_configurations()
        return

    compact_engines(args.rounds, not args.skip_standard)

    print("1. compact configuration, model engine (target >= 20,000 states/s)")
    runs = []
    for _ in range(args.rounds):
        report, system = explore_configuration(NAMED["compact"])
        print("   " + line("compact", report.result, system.executor.executed))
        runs.append((report.result, system))
    best, system = max(runs, key=lambda run: run[0].rate())
    whole = covered(system, best)
    print(f"   best: {best.rate():,.0f} states per CPU second; the {len(best.states):,} representatives stand for "
          f"{whole:,} states without symmetry reduction ({whole / best.cpu_seconds:,.0f} per CPU second)")

    if args.breakdown:
        breakdown()

    if not args.skip_standard:
        print("2. standard configuration (target: under 60 s)")
        report, system = explore_configuration(NAMED["standard"])
        r = report.result
        print("   " + line("standard", r, system.executor.executed))
        whole = covered(system, r)
        print(f"   the representatives stand for {whole:,} states without symmetry reduction "
              f"({whole / r.cpu_seconds:,.0f} per CPU second)")
        print(f"   invariants: {'hold' if report.properties[0].holds else 'VIOLATED'}")

    print("3. protocols")
    for name, protocol in PROTOCOLS.items():
        preport, psystem = check_protocol(protocol)
        verdicts = ", ".join(f"{p.name}: {'holds' if p.holds else 'violated'}" for p in preport.properties[1:])
        print("   " + line(name, preport.result, psystem.executor.executed))
        print(f"      {verdicts}{'' if preport.ok() else '  [NOT AS EXPECTED]'}")


def failover_configurations() -> None:
    """Section 4: every replication configuration of ``--protocol failover`` (target: each under 60 s on one core)."""
    from xspec.explore.failover import NAMED as FAILOVER
    from xspec.explore.failover_report import check_failover

    print("4. replication configurations (target: each under 60 CPU s)")
    for config in FAILOVER.values():
        r = check_failover(config).result
        print("   " + compact_line(config.name, r))


if __name__ == "__main__":
    main()
