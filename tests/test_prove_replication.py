"""Z3 proofs of the replication invariants (proofs/replication.py; spec/proofs.md, "Replication"), their
cross-check against models/replication.py, and the expected counterexamples replayed on the model."""

from __future__ import annotations

import random

import pytest
import z3

from xspec.models.replication import Deployment
from xspec.proofs import replication
from xspec.proofs.replication_check import _Ids, check_state, new_deployment, random_walk
from xspec.proofs.run import VIOLATED, prove, select


@pytest.mark.parametrize("prop", replication.PROPERTIES, ids=lambda p: p.name)
def test_each_replication_property_comes_out_as_expected(prop: replication.Property) -> None:
    result = prove(prop)
    assert result.status == prop.expect, (result.failed, result.counterexample, result.reason)
    if prop.expect == VIOLATED:
        assert result.counterexample and prop.why


def test_the_registry_lists_them_after_the_stream_catalogue() -> None:
    names = [p.name for p in select("REPL-*")]
    assert names == [p.name for p in replication.PROPERTIES]
    assert len(set(p.name for p in select(None))) == len(select(None))


@pytest.mark.parametrize("step", list(replication.STEPS))
def test_no_step_is_vacuous(step: str) -> None:
    """Each step can be taken from some state satisfying the invariant (and PSYNC both ways), so the
    inductive proofs are not proved from an empty relation."""
    d, e = replication.fresh(""), replication.fresh("'")
    side, params = replication.STEPS[step](d, e)
    branches = [z3.BoolVal(True)]
    if "partial" in params:
        branches = [params["partial"] == z3.BoolVal(True), params["partial"] == z3.BoolVal(False)]
    for branch in branches:
        solver = z3.Solver()
        solver.add(replication.invariant(d), *side, branch, d.P.off >= 2)
        assert solver.check() == z3.sat, (step, branch)


def _wrote(d: Deployment, node: str, n: int) -> None:
    for i in range(n):
        d.execute(node, 1, [b"XADD", b"s", b"%d-1" % (i + 1), b"f", b"v"])


def _settle(d: Deployment, *, skip: str | None = None) -> None:
    for _ in range(500):
        steps = [s for s in d.steps() if s[0] not in ("ping", "failover") and s[1] != skip]
        if not steps:
            return
        d.step(*steps[0])


def _ahead_then_promote(d: Deployment) -> None:
    """n1 and n2 replicate n0; n2 applies two writes n1 never gets; n1 is promoted and n2 follows it."""
    for name in ("n1", "n2"):
        d.execute(name, 9, [b"REPLICAOF", b"127.0.0.1", b"7000"])
    _settle(d)
    d.set_link("n0", "n1", "held")
    _wrote(d, "n0", 2)
    _settle(d)
    d.crash("n0")
    d.execute("n1", 9, [b"REPLICAOF", b"NO", b"ONE"])
    d.execute("n2", 9, [b"REPLICAOF", b"127.0.0.1", b"7001"])
    d.step("connect", "n2")


def test_promotion_ahead_counterexample_on_the_model() -> None:
    """REPL-PROMOTION-AHEAD: the replica ahead of the promoted one is refused a partial resync."""
    d = new_deployment()
    _ahead_then_promote(d)
    link = d.links["n2"]
    assert link.sync is None and link.phase == "wait-bgsave"  # a full resynchronisation, not +CONTINUE
    assert d.nodes["n2"].offset > d.nodes["n1"].offset


def test_wait_other_counterexample_on_the_model() -> None:
    """REPL-WAIT-OTHER: WAIT 1 met by n2; n1 (behind) promoted: the write is not there."""
    d = new_deployment()
    for name in ("n1", "n2"):
        d.execute(name, 9, [b"REPLICAOF", b"127.0.0.1", b"7000"])
    _settle(d)
    d.set_link("n0", "n1", "held")
    _wrote(d, "n0", 1)
    d.execute("n0", 1, [b"WAIT", b"1", b"0"])
    _settle(d)
    assert d.links["n2"].ack >= d.nodes["n0"].offset  # WAIT 1 is met by n2's acknowledgement
    d.execute("n1", 9, [b"REPLICAOF", b"NO", b"ONE"])
    assert b"s" not in d.nodes["n1"].server.dbs[0]


def test_the_cross_check_finds_every_model_state_inside_the_invariant() -> None:
    rng = random.Random(3)
    for _ in range(12):
        assert random_walk(rng, 30) is None


def test_the_cross_check_kills_a_partial_resync_that_ignores_the_secondary_offset(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A mutant of the model that lets a replica ahead of the promoted one continue: the invariant fails."""
    def loose(primary, replid: str, offset: int) -> bool:  # type: ignore[no-untyped-def]
        if replid not in (primary.replid, primary.replid2):
            return False
        b = primary.backlog
        return b is not None and b.first <= offset

    d = new_deployment()
    ids = _Ids()
    _ahead_then_promote(d)
    assert check_state(d, "n1", ids) is None
    monkeypatch.setattr(Deployment, "_partial_ok", staticmethod(loose))
    d = new_deployment()
    _ahead_then_promote(d)
    problem = check_state(d, "n1", _Ids())
    assert problem is not None and "REPL-INV-3" in problem, problem
