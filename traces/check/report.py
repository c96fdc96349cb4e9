"""``xspec replay``: check many traces against the model and print the conformance report.

One line per trace (conform, diverge, unsupported, inconclusive; for a
divergence the event, what the trace says there and what the model allows),
then the summary line ``N traces, M events: K conform, J diverge, U
unsupported, I inconclusive``. A trace's header may state what to expect
(``expect``: a verdict, for a dialect, at an event); the exit status is 0
only when every trace meets its expectation (conform when it states none)
and every file could be read.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import click

from xspec.spec.dialect import UnknownDialect
from xspec.spec.trace_format import Trace, TraceError, find_traces, load
from xspec.traces.check.checker import Verdict, check_trace, trace_dialect

STATUSES = ("conform", "diverge", "unsupported", "inconclusive")


def expected_status(header_expect: dict[str, Any] | None) -> str:
    """The verdict a header's ``expect`` states (conform when it states none)."""
    if not header_expect:
        return "conform"
    return str(header_expect.get("verdict", "conform"))


def expectation(trace: Trace, dialect: str) -> tuple[str, int | None]:
    """The verdict (and event, for a divergence) the header expects under ``dialect``.

    An ``expect`` stated for another dialect does not apply: the trace should
    then conform.
    """
    expect: dict[str, Any] | None = trace.header.expect
    if not expect:
        return "conform", None
    named = expect.get("dialect")
    if named is not None:
        try:
            used = trace_dialect(trace, dialect).name
        except UnknownDialect:
            used = None
        if used != named:
            return "conform", None
    event = expect.get("event")
    return expected_status(expect), event if isinstance(event, int) else None


def meets(verdict: Verdict, expected: str, event: int | None) -> bool:
    if verdict.status != expected:
        return False
    return expected != "diverge" or event is None or verdict.event == event


def run_replay(paths: list[Path], dialect: str, *, quiet: bool = False) -> int:
    """Check every trace under ``paths``; print one entry each and a summary. Returns the exit status."""
    for p in paths:
        if not p.exists():
            click.echo(f"error: {p}: no such file or folder", err=True)
            return 2
    files = find_traces(paths)
    if not files:
        click.echo("error: no trace files (*.jsonl, *.jsonl.gz) found", err=True)
        return 2
    counts = dict.fromkeys(STATUSES, 0)
    events = 0
    ok = True
    for f in files:
        try:
            trace = load(f)
        except TraceError as e:
            click.echo(f"error: {e}", err=True)
            ok = False
            continue
        try:
            verdict = check_trace(trace, dialect)
        except UnknownDialect as e:
            verdict = Verdict("unsupported", len(trace.events), message=str(e))
        except TraceError as e:
            click.echo(f"error: {e}", err=True)
            ok = False
            continue
        except Exception as e:  # a defect in the model or the checker: report it, go on
            where = traceback.extract_tb(e.__traceback__)[-1]
            click.echo(f"error: {f}: internal error: {type(e).__name__}: {e} "
                       f"({Path(where.filename).name}:{where.lineno})", err=True)
            ok = False
            continue
        events += verdict.events
        counts[verdict.status] += 1
        expected, event = expectation(trace, dialect)
        met = meets(verdict, expected, event)
        ok = ok and met
        if quiet and met and verdict.status == "conform":
            continue
        if met:
            mark = "" if expected == "conform" else "  (as expected)"
        else:
            at = f" at event {event}" if expected == "diverge" and event is not None else ""
            mark = f"  (expected {expected}{at})"
        first, *details = verdict.describe().split("\n")
        click.echo("\n".join([f"{f}: {first}{mark}", *details]))
    click.echo(f"{len(files)} traces, {events} events: {counts['conform']} conform, "
               f"{counts['diverge']} diverge, {counts['unsupported']} unsupported, "
               f"{counts['inconclusive']} inconclusive")
    return 0 if ok else 1
