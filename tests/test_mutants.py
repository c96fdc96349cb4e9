"""The fuzzer catches seeded bugs: every mutant of ``models/mutants.py``, run as the fuzz target
``model:redis-7.0+mutant:<name>`` and checked against the unmutated model, must be found and shrunk
to a short trace that still diverges when replayed.

Each mutant is fuzzed with the generator profile that exercises its area, from a fixed seed (the
model runs on a virtual clock, so a seed always gives the same run), for at most
:data:`STEPS_PER_MUTANT` steps. The kill rate is printed at the end of the session
(``pytest -s``) and the whole file stays well under the CI budget.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from xspec.models.mutants import MUTANTS, MutantError, apply
from xspec.models.server import HANDLERS, Server
from xspec.traces.check.checker import check_trace
from xspec.traces.check.report import expectation, meets
from xspec.traces.fuzz.fuzzer import run_campaign

STEPS_PER_MUTANT = 20_000
SHORT = 15
"""A minimal trace longer than this many steps is not short."""

KILLED: dict[str, int] = {}  # mutant -> length of its minimal trace


@pytest.fixture(scope="module", autouse=True)
def kill_rate() -> Iterator[None]:
    yield
    print(f"\nmutation kill rate: {len(KILLED)}/{len(MUTANTS)} mutants killed "
          f"({100 * len(KILLED) / len(MUTANTS):.0f}%); minimal trace lengths: {KILLED}")


def test_enough_realistic_mutants() -> None:
    assert len(MUTANTS) >= 15
    assert len({m.rule for m in MUTANTS.values()}) >= 12, "mutants should break many different rules"


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_applies_and_restores(name: str) -> None:
    """Every anchor still matches the model exactly once; the patch is undone on exit."""
    mutant = MUTANTS[name]
    original = mutant.original()
    handlers = dict(HANDLERS)
    with apply(name):
        assert getattr(mutant.owner, mutant.function) is not original
    assert getattr(mutant.owner, mutant.function) is original
    assert HANDLERS == handlers


def test_unknown_mutant_is_an_error() -> None:
    with pytest.raises(MutantError, match="unknown mutant"), apply("no-such-mutant"):
        pass


def test_mutant_changes_behaviour_only_while_applied() -> None:
    """XCLAIM with a min-idle-time far above the idle time claims nothing, unless mutated."""
    def claimed() -> int:
        s = Server()
        s.execute(1, [b"XADD", b"s", b"1-0", b"f", b"v"])
        s.execute(1, [b"XGROUP", b"CREATE", b"s", b"g", b"0"])
        s.execute(1, [b"XREADGROUP", b"GROUP", b"g", b"a", b"STREAMS", b"s", b">"])
        reply = s.execute(1, [b"XCLAIM", b"s", b"g", b"b", b"100000", b"1-0"]).reply
        return len(reply.items)  # type: ignore[union-attr]

    assert claimed() == 0
    with apply("xclaim-no-idle-check"):
        assert claimed() == 1
    assert claimed() == 0


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_fuzzer_kills_mutant(name: str) -> None:
    mutant = MUTANTS[name]
    # A second seed when the first misses or shrinks poorly: Hypothesis's generation for one seed is
    # not fully reproducible across process histories (seen in CI for delconsumer-keeps-pending's
    # kill and xautoclaim-budget-off-by-one's shrinking), so the test asks for a short kill within two
    # campaigns of the budget, not for one exact run.
    findings = []
    for seed in (1, 2):
        result = run_campaign([f"model:redis-7.0+mutant:{name}"], steps=STEPS_PER_MUTANT, seed=seed,
                              profiles=[mutant.profile], max_findings=1)
        findings += result.divergences
        if result.divergences and len(result.divergences[0].steps) <= SHORT:
            break
    assert findings, f"{name} ({mutant.description}) survived two campaigns of {result.steps} steps"
    finding = min(findings, key=lambda f: len(f.steps))
    assert len(finding.steps) <= SHORT, f"{name}: the minimal trace has {len(finding.steps)} steps"
    # The written trace replays as the divergence its header expects.
    verdict = check_trace(finding.trace)
    expected, event = expectation(finding.trace, "auto")
    assert expected == "diverge" and meets(verdict, expected, event), verdict.describe()
    KILLED[name] = len(finding.steps)


@pytest.mark.slow
def test_kill_rate_with_every_profile() -> None:
    """The campaign as a user runs it (every profile, no hint): how many mutants it kills in 20,000 steps."""
    killed = [name for name in sorted(MUTANTS)
              if run_campaign([f"model:redis-7.0+mutant:{name}"], steps=20_000, seed=2, max_findings=1).divergences]
    print(f"\nkill rate with every profile: {len(killed)}/{len(MUTANTS)}; survivors: "
          f"{sorted(set(MUTANTS) - set(killed))}")
    assert len(killed) >= len(MUTANTS) * 0.8
