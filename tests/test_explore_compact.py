"""The compact exploration engine against the model (spec/exploration.md, EXPLORE-COMPACT-1 .. EXPLORE-COMPACT-5).

* refinement: from the abstraction of model states (every state the model's engine reaches in the small
  configurations, a sample of the compact one, random concrete walks of every named configuration) the
  compact system offers the model's steps, with the same replies, propagation and successors;
* the fast successor function agrees with the step-by-step semantics on every reachable state;
* both engines give the same numbers of states, transitions and depth, with and without symmetry, and the
  orbits of the representatives add up to the unreduced count;
* a path of the compact walk replays on the model and ends in the state reported.
The exhaustive refinement of ``compact`` and of the variants' larger spaces is slow-marked.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.test_explore_counts import CONFIGURATIONS, STANDARD
from xspec.commands.explore import explore_command
from xspec.explore.compact import CompactConfig, Unsupported, _successors_by_apply, supported
from xspec.explore.compact_run import concretize_compact, explore_compact
from xspec.explore.config import NAMED, Configuration
from xspec.explore.fastwalk import walk
from xspec.explore.refinement import check_model_states, random_walks
from xspec.explore.report import explore_configuration
from xspec.traces.check.checker import check_trace

FULL = ("read", "history", "ack", "claim", "autoclaim", "delete", "crash", "tick")
VARIANTS = {c.name: c for c in (
    Configuration("all-args", consumers=2, entries=2, arguments="all"),
    Configuration("no-idle", consumers=2, entries=2, min_idle_ticks=0, actions=FULL),
    Configuration("horizon", consumers=2, entries=2, min_idle_ticks=2, horizon_ticks=3, count_cap=3, actions=FULL),
    Configuration("three", consumers=3, entries=2, actions=FULL),
    Configuration("adds", consumers=2, entries=3, prefill=False, count_cap=2,
                  actions=("add", "read", "history", "ack", "claim", "autoclaim", "crash", "tick")),
)}


def _numbers(config: Configuration, symmetry: bool = True) -> tuple[int, int, int]:
    r, _ = walk(CompactConfig(config, symmetry=symmetry))
    assert r.complete and not r.violations
    return len(r.states), r.transitions, r.max_depth


@pytest.mark.parametrize("name", list(CONFIGURATIONS))
def test_compact_engine_gives_the_model_engines_pinned_numbers(name: str) -> None:
    assert _numbers(NAMED[name]) == CONFIGURATIONS[name]


def test_compact_engine_explores_the_standard_configuration_with_the_pinned_numbers() -> None:
    assert _numbers(NAMED["standard"]) == STANDARD


@pytest.mark.parametrize("name", ["tiny", "producer", "all-args", "no-idle", "three"])
@pytest.mark.parametrize("symmetry", [True, False])
def test_both_engines_agree_with_and_without_symmetry(name: str, symmetry: bool) -> None:
    config = NAMED.get(name) or VARIANTS[name]
    report, _ = explore_configuration(config, symmetry=symmetry)
    r = report.result
    assert _numbers(config, symmetry) == (len(r.states), r.transitions, r.max_depth)


@pytest.mark.parametrize("name", ["tiny", "compact", "producer", "three"])
def test_orbits_of_the_representatives_add_up_to_the_unreduced_count(name: str) -> None:
    config = NAMED.get(name) or VARIANTS[name]
    system = CompactConfig(config)
    reduced, _ = walk(system)
    whole, _ = walk(CompactConfig(config, symmetry=False))
    assert sum(len(system.orbit(s)) for s in reduced.states) == len(whole.states)
    assert {system.canonical(s)[0] for s in whole.states} == set(reduced.states)


@pytest.mark.parametrize("name", ["compact", "producer", "all-args", "horizon", "three", "adds"])
def test_the_fast_successors_are_those_of_the_step_semantics(name: str) -> None:
    config = NAMED.get(name) or VARIANTS[name]
    for symmetry in (True, False):
        system = CompactConfig(config, symmetry=symmetry)
        result, _ = walk(system)
        for s in result.states:
            assert system.expand(s) == _successors_by_apply(system, s, system.ties(s)), system.decode(s)


@pytest.mark.parametrize("name", ["tiny", "producer", "no-idle"])
def test_refinement_from_every_state_the_model_reaches(name: str) -> None:
    config = NAMED.get(name) or VARIANTS[name]
    out = check_model_states(config)
    assert out.states > 20 and not out.mismatches, "\n".join(map(str, out.mismatches[:5]))


def test_refinement_from_a_sample_of_the_compact_configurations_model_states() -> None:
    out = check_model_states(NAMED["compact"], every=12)
    assert out.states > 350 and not out.mismatches, "\n".join(map(str, out.mismatches[:5]))


@pytest.mark.parametrize("name", list(NAMED))
def test_refinement_on_random_concrete_walks(name: str) -> None:
    """Concrete servers (a real clock, uncapped ages and counts) along random steps: the abstraction commutes."""
    out = random_walks(NAMED[name], walks=4, length=25, seed=17)
    assert out.transitions > 100 and not out.mismatches, "\n".join(map(str, out.mismatches[:5]))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["compact", "all-args", "horizon", "three", "adds"])
def test_refinement_exhaustive(name: str) -> None:
    config = NAMED.get(name) or VARIANTS[name]
    out = check_model_states(config)
    assert not out.mismatches, "\n".join(map(str, out.mismatches[:5]))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["horizon", "adds"])
def test_both_engines_agree_on_the_larger_variants(name: str) -> None:
    for symmetry in (True, False):
        report, _ = explore_configuration(VARIANTS[name], symmetry=symmetry)
        r = report.result
        assert _numbers(VARIANTS[name], symmetry) == (len(r.states), r.transitions, r.max_depth)


def test_a_compact_path_replays_on_the_model_and_ends_in_its_state() -> None:
    """EXPLORE-COMPACT-3: the paths to the deepest states, made concrete, conform and abstract to the state."""
    system = CompactConfig(NAMED["compact"])
    result, perm0 = walk(system)
    deepest = [i for i, d in enumerate(result.depth) if d == result.max_depth][:5]
    for target in deepest:
        concrete = concretize_compact(system, result, target, perm0, "compact path")
        assert len(concrete.steps) == result.max_depth
        verdict = check_trace(concrete.trace)
        assert verdict.status == "conform", verdict.describe()


def test_unsupported_configurations_are_refused_with_a_reason() -> None:
    config = Configuration("both", consumers=2, entries=2, actions=("add", "delete", "read"))
    assert supported(config) == "both add and delete"
    with pytest.raises(Unsupported, match="--engine model"):
        CompactConfig(config)
    assert supported(Configuration("groups", groups=2)) == "several groups"


def test_cli_uses_the_compact_engine_and_keeps_the_model_engine() -> None:
    out = CliRunner().invoke(explore_command, ["--config", "compact"])
    assert out.exit_code == 0, out.output
    assert "configuration compact: 2,312 states, 27,880 transitions, depth 10" in out.output
    assert "bytes/state" in out.output
    model = CliRunner().invoke(explore_command, ["--config", "tiny", "--engine", "model"])
    assert model.exit_code == 0 and "invariants of models/invariants.py: holds" in model.output
    assert "configuration tiny: 14 states, 78 transitions, depth 5" in model.output


def test_cli_refuses_the_compact_engine_where_it_cannot_go(tmp_path: Path) -> None:
    out = CliRunner().invoke(explore_command, ["--config", "compact", "--engine", "compact",
                                               "--dot", str(tmp_path / "x.dot")])
    assert out.exit_code == 2 and "needs --engine model" in out.output


def test_the_compact_report_states_bytes_per_state() -> None:
    report = explore_compact(CompactConfig(NAMED["compact"]))
    assert report.ok()
    assert 20 < report.result.bytes_per_state < 400  # type: ignore[union-attr]
