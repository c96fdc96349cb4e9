"""``xspec audit``: conformance, delivery ledger and anomalies over many traces, on Spark or in process."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from xspec.commands.options import dialect_option, writable_folder


def _master(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if value == "none" or value.startswith(("local", "spark://")):
        return value
    raise click.BadParameter(f"{value!r} is not a Spark master: use local[*], local[N], spark://HOST:PORT or none",
                             ctx=ctx, param=param)


@click.command("audit")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--master", default="local[*]", show_default=True, callback=_master,
              help="Spark master: local[*], local[N], spark://HOST:PORT (a standalone cluster), or 'none' to run "
                   "in this process.")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("xspec-audit"),
              show_default=True, help="Folder for summary.json, report.html and the Parquet tables.")
@click.option("--stuck-after-ms", type=click.IntRange(min=0), default=60_000, show_default=True,
              help="An entry pending this long after its last delivery, at the end of its trace, is stuck.")
@click.option("--poison-deliveries", type=click.IntRange(min=1), default=5, show_default=True,
              help="An entry delivered this many times and never acked is poison.")
@click.option("--split-min-events", type=click.IntRange(min=0), default=100_000, show_default=True,
              help="Check traces with at least this many events in independent parts (0: never).")
@click.option("--dialect", default="auto", show_default=True, callback=dialect_option,
              help="Dialect to check against: 'auto' takes it from each trace's header.")
@click.option("--fail-on-anomaly", is_flag=True, help="Exit 1 when an anomaly was found.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
def audit_command(paths: tuple[Path, ...], master: str, out: Path, stuck_after_ms: int, poison_deliveries: int,
                  split_min_events: int, dialect: str, fail_on_anomaly: bool, quiet: bool) -> None:
    """Audit traces (files, or every trace under folders): conformance to the model, the delivery ledger of every
    consumer group, and its anomalies (lost, stuck, poison, double-processing, deleted-while-pending,
    redelivered-after-ack; across the nodes of a trace/2 also phantom and id-reuse).

    Writes OUT/summary.json, OUT/report.html and the tables as Parquet (events, traces, verdicts, ledger,
    anomalies, quarantine). Exit status 0 when every trace meets its header's expectation and every file could be
    read, 1 otherwise (and, with --fail-on-anomaly, when an anomaly was found), 2 for bad arguments.
    """
    if not paths:
        raise click.UsageError("give at least one trace file or folder")
    for p in paths:
        if not p.exists():
            raise click.BadParameter(f"{str(p)!r}: no such file or folder", param_hint="PATHS")
    from xspec.spec.trace_format import find_traces
    if not find_traces(paths):
        raise click.BadParameter("no trace files (*.jsonl, *.jsonl.gz) found", param_hint="PATHS")
    writable_folder(out, "--out")
    if master != "none":
        from xspec.audit.spark import spark_available
        missing = spark_available()
        if missing is not None:
            click.echo(f"error: {missing} (or use --master none)", err=True)
            sys.exit(2)
    from xspec.audit.run import AuditOptions, audit

    def progress(text: str) -> None:
        if not quiet:
            click.echo(f"audit: {text}", err=True)

    options = AuditOptions(master=master, dialect=dialect or "auto", stuck_after_ms=stuck_after_ms,
                           poison_deliveries=poison_deliveries, split_min_events=split_min_events,
                           fail_on_anomaly=fail_on_anomaly)
    try:
        status, s = audit(list(paths), out, options, progress)
    except Exception as e:  # Spark could not start or lost its cluster: one line, not a Java stack
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        click.echo(f"error: the audit failed: {type(e).__name__}: {first[:300]}", err=True)
        sys.exit(2)
    c = s["conformance"]
    click.echo(f"{s['traces']} traces, {s['events']} events: {c['conform']} conform, {c['diverge']} diverge, "
               f"{c['unsupported']} unsupported, {c['inconclusive']} inconclusive; "
               f"{len(s['unmet'])} not as expected, {len(s['quarantined'])} malformed lines; "
               f"{len(s['anomalies'])} anomalies"
               + (f" ({', '.join(f'{k} {n}' for k, n in s['anomaly_counts'].items())})" if s["anomalies"] else ""))
    click.echo(f"report: {out / 'report.html'}")
    sys.exit(status)
