"""The quality gate: every seeded mutant of the model is killed by a proof, an exploration or a
Hypothesis property (explore/gate.py; spec/exploration.md, "The mutation gate").

The table (mutant, killer, seconds) is printed whether or not pytest captures output.
"""

from __future__ import annotations

import pytest

from xspec.explore import gate
from xspec.models.mutants import MUTANTS
from xspec.proofs.crosscheck import cross_check


@pytest.fixture(scope="module")
def verdicts() -> list[gate.Verdict]:
    return gate.run_gate()


def test_every_mutant_is_killed(verdicts: list[gate.Verdict], capsys: pytest.CaptureFixture[str]) -> None:
    table = gate.render_table(verdicts)
    with capsys.disabled():
        print("\n" + table)
    assert len(verdicts) == len(MUTANTS) >= 15
    survivors = [v.mutant for v in verdicts if v.killer is None]
    assert not survivors, table


def test_killers_run_in_order_and_stop_at_the_first_kill(verdicts: list[gate.Verdict]) -> None:
    for v in verdicts:
        assert v.killer is not None
        assert tuple(v.seconds) == gate.KILLERS[:gate.KILLERS.index(v.killer) + 1], v.mutant


def test_each_killer_kills_something(verdicts: list[gate.Verdict]) -> None:
    """Every stage earns its place: the Z3 cross-check takes most, exploration and Hypothesis the rest."""
    by_killer = {k: [v.mutant for v in verdicts if v.killer == k] for k in gate.KILLERS}
    assert len(by_killer["z3"]) >= 17
    assert set(by_killer["explore"]) >= {"xpending-idle-inclusive", "xrange-count-off-by-one",
                                         "resp3-read-reply-as-array"}
    assert set(by_killer["hypothesis"]) == {"destroy-leaves-readers-blocked", "blocked-fifo-reversed"}


def test_counterexamples_are_short_and_name_the_difference(verdicts: list[gate.Verdict]) -> None:
    for v in verdicts:
        if v.killer == "z3":
            continue
        steps = [line for line in v.counterexample.splitlines() if not line.lstrip().startswith("->")]
        assert 1 <= len(steps) <= 8, v.counterexample
        assert "differs" in v.counterexample or "INV-" in v.counterexample, v.counterexample


def test_the_gate_names_every_mutant() -> None:
    assert {m.function for m in MUTANTS.values()} == set(gate.FAMILIES_RUNNING)
    assert set(gate.CROSS_CHECK_FAMILIES) == set(MUTANTS)
    assert set(gate.EXPLORATIONS) <= set(MUTANTS)


def test_killers_are_silent_on_the_unmutated_model() -> None:
    """A killer that fires on the correct model would kill every mutant for nothing: the cross-check agrees
    with the model on every family the gate uses, and each reference exploration is complete and keeps
    every invariant (so a violation under a mutant is the mutant's)."""
    families = sorted({f for fs in gate.CROSS_CHECK_FAMILIES.values() for f in fs})
    assert not cross_check(gate.CROSS_CHECK_SAMPLES, seed=gate.CROSS_CHECK_SEED, commands=families).failures
    for config in {c.name: c for c in gate.EXPLORATIONS.values()}.values():
        result, _ = gate.explore(gate.ConfigSystem(config, symmetry=False), max_states=gate.EXPLORE_MAX_STATES)
        assert result.complete and not result.violations, config.name


def test_differential_exploration_counterexample_is_replayed_concretely() -> None:
    """XRANGE COUNT 1 on two entries: the shortest counterexample is the command itself."""
    found = gate.explore_killer("xrange-count-off-by-one")
    assert found is not None
    assert found.splitlines()[0].strip() == "1. admin: XRANGE s - + COUNT 1"
    assert "reply" in found.splitlines()[-1]
    assert gate.explore_killer("blocked-fifo-reversed") is None  # blocked clients are out of scope


@pytest.mark.slow
def test_kill_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    """Every killer on every mutant (not only until the first kill): which stages could stand alone."""
    rows = {name: {k: gate.judge(name, (k,)) for k in gate.KILLERS} for name in MUTANTS}
    with capsys.disabled():
        print()
        for name, by_killer in rows.items():
            print(f"{name:32} " + "  ".join(f"{k}:{'x' if v.killer else '.'} {v.total:5.2f}s"
                                            for k, v in by_killer.items()))
    assert all(any(v.killer for v in by_killer.values()) for by_killer in rows.values())
