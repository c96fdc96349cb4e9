"""``xspec prove``: check the catalogue with Z3 (:mod:`xspec.proofs.run`) and print one row per property."""

from __future__ import annotations

import json
import random
import sys
import time

import click

from xspec.proofs.crosscheck import cross_check
from xspec.proofs.replication_check import REPLICATION_WALKS, check_replication_once
from xspec.proofs.run import UNKNOWN, Result, prove_all, select


def _row(r: Result) -> str:
    return f"{r.prop.name:<24} {r.prop.rules:<36} {r.verdict:<26} {r.seconds:6.2f}s"


def _details(r: Result) -> list[str]:
    lines = []
    if r.status == UNKNOWN:
        lines.append(f"    solver gave up on '{r.failed}': {r.reason}")
    elif r.counterexample:
        lines.append(f"    counterexample ({r.failed}):")
        lines += [f"      {line}" for line in r.counterexample]
        if r.prop.why:
            lines.append(f"    why: {r.prop.why}")
    return lines


def _as_json(r: Result) -> dict[str, object]:
    return {"name": r.prop.name, "rules": r.prop.rules, "claim": r.prop.claim, "expected": r.prop.expect,
            "result": r.status, "as_expected": r.as_expected, "seconds": round(r.seconds, 3),
            "obligation": r.failed, "counterexample": r.counterexample, "why": r.prop.why, "reason": r.reason}


@click.command("prove")
@click.option("--only", "pattern", default=None, metavar="PATTERN",
              help="Check only the properties whose name matches this glob (e.g. 'IND-*').")
@click.option("--timeout", "timeout_ms", default=20_000, show_default=True, metavar="MS",
              help="Solver time limit per proof obligation, in milliseconds.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--list", "list_only", is_flag=True, help="List the properties without checking them.")
@click.option("--cross-check", "samples", default=0, metavar="N",
              help="Also compare the encodings with the executable model on N random states.")
@click.option("--seed", default=0, show_default=True, help="Seed of the cross-check's random states.")
def prove_command(pattern: str | None, timeout_ms: int, as_json: bool, list_only: bool, samples: int, seed: int) -> None:
    """Prove the catalogue of properties (proofs.md) over unbounded states with Z3.

    Exits 1 when a property does not come out as expected (one expected to hold
    is violated or unknown, or an expected violation is not shown), or when the
    cross-check finds the encodings and the model disagreeing.
    """
    chosen = select(pattern)
    if not chosen:
        raise click.UsageError(f"no property matches {pattern!r}")
    if list_only:
        for p in chosen:
            click.echo(f"{p.name:<24} {p.rules:<36} {p.expect:<9} {p.claim}")
        return
    start = time.perf_counter()
    results = prove_all(pattern, timeout_ms)
    total = time.perf_counter() - start
    failed = [r for r in results if not r.as_expected]
    report = cross_check(samples, seed) if samples else None
    if report is not None:  # the replication encoding: walks of the model's Deployment (proofs.md)
        rng = random.Random(seed)
        for _ in range(max(1, samples // 100)):
            problem = check_replication_once(rng)
            report.samples[REPLICATION_WALKS] += 1
            if problem is not None:
                report.failures.append(f"{REPLICATION_WALKS}: {problem}")
    if as_json:
        out: dict[str, object] = {"properties": [_as_json(r) for r in results], "seconds": round(total, 3)}
        if report is not None:
            out["cross_check"] = {"samples": dict(report.samples), "failures": report.failures}
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(f"{'property':<24} {'rules':<36} {'result':<26} {'time':>7}")
        for r in results:
            click.echo(_row(r))
            for line in _details(r):
                click.echo(line)
        counts = {s: sum(r.status == s for r in results) for s in ("holds", "violated", UNKNOWN)}
        expected_violations = sum(r.status == "violated" and r.as_expected for r in results)
        click.echo(f"\n{len(results)} properties in {total:.2f}s: {counts['holds']} hold, {counts['violated']} "
                   f"violated ({expected_violations} as expected), {counts[UNKNOWN]} unknown; "
                   f"{len(failed)} not as expected")
        for r in results:
            if r.status == UNKNOWN:
                click.echo(f"unknown (the solver gave up, not a proof either way): {r.prop.name}, {r.reason}")
        if report is not None:
            click.echo(f"cross-check: {sum(report.samples.values())} samples "
                       f"({', '.join(f'{k} {v}' for k, v in report.samples.items())}), "
                       f"{len(report.failures)} disagreements")
            for line in report.failures[:20]:
                click.echo(f"  {line}")
    if failed or (report is not None and report.failures):
        sys.exit(1)

