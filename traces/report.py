"""Replaying many traces and printing the conformance report."""

from __future__ import annotations

from pathlib import Path

import click

from xspec.models.dialect import UnknownDialect
from xspec.traces.checker import Verdict, check_trace
from xspec.traces.format import TraceError, find_traces, load


def expected_status(header_expect: dict[str, object] | None) -> str:
    if not header_expect:
        return "conform"
    return str(header_expect.get("verdict", "conform"))


def run_replay(paths: list[Path], dialect: str, *, quiet: bool = False) -> int:
    """Check every trace under ``paths``; print one line each and a summary. Returns the exit status."""
    for p in paths:
        if not p.exists():
            click.echo(f"error: {p}: no such file or folder", err=True)
            return 2
    files = find_traces(paths)
    if not files:
        click.echo("error: no trace files (*.jsonl, *.jsonl.gz) found", err=True)
        return 2
    counts = {"conform": 0, "diverge": 0, "unsupported": 0, "inconclusive": 0}
    events = 0
    ok = True
    for f in files:
        try:
            trace = load(f)
            verdict = check_trace(trace, dialect)
        except TraceError as e:
            click.echo(f"error: {e}", err=True)
            ok = False
            continue
        except UnknownDialect as e:
            verdict = Verdict("unsupported", 0, message=str(e))
            trace = None
        events += verdict.events
        counts[verdict.status] += 1
        expected = expected_status(trace.header.expect if trace else None)
        met = verdict.status == expected
        if expected == "diverge" and trace is not None and trace.header.expect:
            want_event = trace.header.expect.get("event")
            met = met and (want_event is None or want_event == verdict.event)
        ok = ok and met
        if not quiet or verdict.status != "conform" or not met:
            mark = "" if met else f"  (expected {expected})"
            click.echo(f"{f}: {verdict.describe()}{mark}")
    click.echo(f"{len(files)} traces, {events} events: {counts['conform']} conform, "
               f"{counts['diverge']} diverge, {counts['unsupported']} unsupported, "
               f"{counts['inconclusive']} inconclusive")
    return 0 if ok else 1
