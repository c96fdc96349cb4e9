"""``xspec audit``: find the traces, run the job (Spark or in process), write the outputs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xspec.audit.conformance import DEFAULT_SPLIT_MIN_EVENTS
from xspec.audit.ledger import DEFAULT_POISON_DELIVERIES, DEFAULT_STUCK_AFTER_MS
from xspec.audit.spark import DEFAULT_INGEST_SPLIT_BYTES
from xspec.spec.trace_format import find_traces


@dataclass
class AuditOptions:
    master: str = "local[*]"  # a Spark master URL, or "none" for the in-process path
    dialect: str = "auto"
    stuck_after_ms: int = DEFAULT_STUCK_AFTER_MS
    poison_deliveries: int = DEFAULT_POISON_DELIVERIES
    split_min_events: int = DEFAULT_SPLIT_MIN_EVENTS
    fail_on_anomaly: bool = False
    ingest_split_bytes: int | None = DEFAULT_INGEST_SPLIT_BYTES  # Spark: byte ranges of this size (None: never)


def audit(paths: list[Path], out: Path, options: AuditOptions, progress: Callable[[str], None],
          spark: Any = None) -> tuple[int, dict[str, Any]]:
    """Audit every trace under ``paths`` into ``out``; returns (exit status, summary), whose ``anomalies`` reads the
    anomalies table when iterated (:class:`xspec.audit.report.AnomalyRows`).

    ``spark``: a session to use (tests share one); otherwise one is started for ``options.master``
    and stopped at the end.
    """
    from xspec.audit.report import exit_status, summary, write_html, write_summary
    files = [str(f) for f in find_traces(paths)]
    if options.master == "none":
        from xspec.audit.local import run_local
        run_local(files, out, dialect=options.dialect, stuck_after_ms=options.stuck_after_ms,
                  poison_deliveries=options.poison_deliveries, split_min_events=options.split_min_events,
                  progress=progress)
    else:
        from xspec.audit.spark import run_spark, session
        own = spark is None
        if own:
            progress(f"starting Spark ({options.master})")
            spark = session(options.master)
        try:
            run_spark(spark, files, out, dialect=options.dialect, stuck_after_ms=options.stuck_after_ms,
                      poison_deliveries=options.poison_deliveries, split_min_events=options.split_min_events,
                      progress=progress, ingest_split_bytes=options.ingest_split_bytes)
        finally:
            if own:
                spark.stop()
    progress("summary and report")
    s = summary(len(files), out)
    write_summary(out / "summary.json", s)
    write_html(out / "report.html", s, out)
    return exit_status(s, options.fail_on_anomaly), s
