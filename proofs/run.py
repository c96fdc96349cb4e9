"""Running the catalogue: one result per property, with its time and any counterexample."""

from __future__ import annotations

import fnmatch
import itertools
import time
from dataclasses import dataclass, field, replace

import z3

from xspec.proofs.catalogue import PROPERTIES as STREAM_PROPERTIES
from xspec.proofs.catalogue import Obligation, Property
from xspec.proofs.replication import PROPERTIES as REPLICATION_PROPERTIES

PROPERTIES: list[Property] = [*STREAM_PROPERTIES, *REPLICATION_PROPERTIES]

HOLDS, VIOLATED, UNKNOWN = "holds", "violated", "unknown"


@dataclass
class Result:
    prop: Property
    status: str  # holds, violated or unknown
    seconds: float
    failed: str = ""  # the obligation that did not hold
    counterexample: list[str] = field(default_factory=list)
    reason: str = ""  # why the solver gave up, for unknown

    @property
    def as_expected(self) -> bool:
        return self.status == self.prop.expect

    @property
    def verdict(self) -> str:
        if self.status == UNKNOWN:
            return "UNKNOWN"
        if self.status == VIOLATED:
            return "violated (expected)" if self.as_expected else "VIOLATED"
        return "holds" if self.as_expected else "HOLDS (expected violated)"


def _check(ob: Obligation, timeout_ms: int) -> tuple[str, z3.ModelRef | None, str]:
    """Prove under the obligation's hypotheses; a failure is searched again under all of them
    (``full``), in small shapes first, so a counterexample shown is never spurious."""
    status, model, reason = _solve(ob.hypotheses, ob, timeout_ms, [] if ob.full else ob.small)
    if status != HOLDS and ob.full:
        return _solve(ob.full, ob, timeout_ms, ob.small)
    return status, model, reason


def _solve(hypotheses: list[z3.BoolRef], ob: Obligation, timeout_ms: int,
           shapes: list[list[z3.BoolRef]]) -> tuple[str, z3.ModelRef | None, str]:
    solver = z3.Solver()
    solver.set(timeout=timeout_ms)
    solver.add(*hypotheses)
    solver.add(z3.Not(ob.goal))
    for shape in shapes:
        solver.push()
        solver.add(*shape)
        if solver.check() == z3.sat:
            return VIOLATED, solver.model(), ""
        solver.pop()
    answer = solver.check()
    if answer == z3.unsat:
        return HOLDS, None, ""
    if answer == z3.sat:
        return VIOLATED, solver.model(), ""
    return UNKNOWN, None, solver.reason_unknown()


def _split(obligations: list[Obligation]) -> list[Obligation]:
    """One obligation per conjunct of the goal and per branch of the step: small proofs are fast."""
    out = []
    for ob in obligations:
        parts = ob.goal.children() if z3.is_and(ob.goal) else [ob.goal]
        for part in parts:
            for branch in itertools.product((True, False), repeat=len(ob.cases)):
                fixed = [(c, z3.BoolVal(v)) for c, v in zip(ob.cases, branch, strict=True)]
                literals = [c if v else z3.Not(c) for c, v in zip(ob.cases, branch, strict=True)]
                goal = z3.simplify(z3.substitute(part, *fixed)) if fixed else part
                out.append(replace(ob, goal=goal, hypotheses=[*ob.hypotheses, *literals],
                                   full=[*ob.full, *literals] if ob.full else []))
    return out


def prove(prop: Property, timeout_ms: int = 20_000) -> Result:
    """Check every obligation of ``prop``; the first that fails decides."""
    start = time.perf_counter()
    unknown: tuple[str, str] | None = None
    for ob in _split(prop.build()):
        status, model, reason = _check(ob, timeout_ms)
        if status == VIOLATED:
            assert model is not None
            return Result(prop, VIOLATED, time.perf_counter() - start, ob.label, ob.show(model))
        if status == UNKNOWN and unknown is None:
            unknown = (ob.label, reason)
    if unknown is not None:
        return Result(prop, UNKNOWN, time.perf_counter() - start, unknown[0], reason=unknown[1])
    return Result(prop, HOLDS, time.perf_counter() - start)


def select(pattern: str | None) -> list[Property]:
    """The properties whose name matches the glob ``pattern`` (case-insensitive); all without one."""
    if not pattern:
        return list(PROPERTIES)
    return [p for p in PROPERTIES if fnmatch.fnmatch(p.name.lower(), pattern.lower())]


def prove_all(pattern: str | None = None, timeout_ms: int = 20_000) -> list[Result]:
    return [prove(p, timeout_ms) for p in select(pattern)]
