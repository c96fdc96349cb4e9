"""Exploring a configuration with the compact engine, and its counterexamples made concrete on the model.

:func:`explore_compact` walks :class:`~xspec.explore.compact.CompactConfig` with
:func:`~xspec.explore.fastwalk.walk` and returns the same kind of report as
:func:`xspec.explore.report.explore_configuration`. A violation's path is replayed
on the full model (:func:`xspec.explore.concrete.replay`), which must end in a state
whose abstraction, relabelled as the path was, is the compact state reported
(EXPLORE-COMPACT-3).
"""

from __future__ import annotations

from xspec.explore.compact import CompactConfig
from xspec.explore.concrete import AbstractionMismatch, Concrete, replay
from xspec.explore.engine import INVARIANTS, invert
from xspec.explore.fastwalk import CompactResult, Progress, walk
from xspec.explore.report import PropertyResult, Report
from xspec.models.server import Server
from xspec.spec.dialect import REDIS_70


def explore_compact(config_system: CompactConfig, *, max_states: int | None = None,
                    progress: Progress | None = None) -> Report:
    """Every reachable state of the compact system; its invariants checked in each (EXPLORE-COMPACT-5)."""
    result, perm0 = walk(config_system, max_states=max_states, progress=progress)
    report = Report(f"configuration {config_system.config.name}", result)
    found = result.violations.get(INVARIANTS)
    prop = PropertyResult("invariants of the compact system", "invariants", found is None, True)
    if found is not None:
        prop.message = found.message
        prop.counterexample = concretize_compact(config_system, result, found.state, perm0,
                                                 f"explore {config_system.config.name}: invariant violated")
    report.properties.append(prop)
    return report


def concretize_compact(system: CompactConfig, result: CompactResult, target: int,
                       initial_perm: tuple[int, ...] | None, title: str) -> Concrete:
    """The shortest path to ``target`` replayed on the model; its end must abstract to ``target``'s state."""
    expected = result.states[target]

    def check(server: Server, mapping: dict[int, int]) -> None:
        to_label = invert(tuple(mapping[label] for label in range(len(mapping))))
        if system.relabel(system.alpha(server), to_label) != expected:
            raise AbstractionMismatch("the model's replay does not end in the compact state reported")

    names: tuple[bytes | None, ...] = system.names + (None,)
    return replay(names, REDIS_70, {}, system.setup(), system.tick_ms, system.process_names,
                  result.path(target, system.steps), initial_perm, title, check)
