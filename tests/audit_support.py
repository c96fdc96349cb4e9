"""Helpers of the audit tests: one Spark session for the whole test session, and trace builders.

The session is started on first use and stopped when the interpreter exits, so every audit test
module shares it (a second SparkSession would cost its start-up again: 10-50 s on CI's 2 cores).
"""

from __future__ import annotations

import atexit
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xspec.audit.batches import canonical
from xspec.audit.ledger import anomalies_from, ledger_of
from xspec.audit.workload import ModelDriver
from xspec.spec.trace_format import Trace, dump

_SESSION: Any = None

TABLES = ("traces", "quarantine", "verdicts", "ledger", "anomalies", "events")


def spark_session() -> Any:
    """The test session's SparkSession on local[2] (skips when Spark cannot run here; fails on CI)."""
    global _SESSION
    if _SESSION is None:
        from xspec.audit.spark import spark_available
        missing = spark_available()
        if missing is not None:
            if os.environ.get("CI"):
                pytest.fail(missing)
            pytest.skip(missing)
        from xspec.audit.spark import session
        _SESSION = session("local[2]", app="xspec-audit-tests")
        atexit.register(_SESSION.stop)
    return _SESSION


def read_tables(out: Path) -> dict[str, pa.Table]:
    """The Parquet tables of an audit output folder, each in its canonical order."""
    tables = {}
    for name in TABLES:
        t = pq.read_table(out / name)
        if name == "traces":
            t = t.drop(["bytes"])
        tables[name] = canonical(name, t)
    return tables


def ledger_and_anomalies(trace: Trace, stuck_after_ms: int = 60_000,
                         poison: int = 5) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ledger and anomalies of one in-memory trace (written to a temporary file and ingested)."""
    import tempfile

    from xspec.audit.ingest import read_files
    from xspec.audit.ledger import LEDGER_INPUT
    folder = Path(tempfile.mkdtemp(prefix="xspec-audit-"))
    try:
        path = folder / "t.jsonl"
        dump(trace, path)
        events, _, quarantine = read_files([str(path)])
        assert quarantine.num_rows == 0, quarantine.to_pylist()
        rows = [r for r in events.select(list(LEDGER_INPUT)).to_pylist() if r["ev"] != "header"]
        ledger = ledger_of(str(path), rows)
        assert_columns_equal_fold(events)
        return ledger, anomalies_from(ledger, stuck_after_ms, poison)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def file_ledger(path: Path, stuck_after_ms: int = 60_000,
                poison: int = 5) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ledger and anomalies of one trace file (header row included: a trace/2 header names the nodes)."""
    from xspec.audit.ingest import read_files
    from xspec.audit.ledger import LEDGER_INPUT
    events, _, quarantine = read_files([str(path)])
    assert quarantine.num_rows == 0, quarantine.to_pylist()
    ledger = ledger_of(str(path), events.select(list(LEDGER_INPUT)).to_pylist())
    assert_columns_equal_fold(events)
    return ledger, anomalies_from(ledger, stuck_after_ms, poison)


def batch_ledger(events: pa.Table, columns: bool = True, chunk: int = 500) -> pa.Table:
    """The ledger step's table (canonical order) over an events table, fed in batches of ``chunk`` rows."""
    from xspec.audit.batches import ledger_batches
    from xspec.audit.ledger import LEDGER_INPUT
    from xspec.audit.schema import LEDGER
    events = events.sort_by([("trace", "ascending"), ("event", "ascending")]).select(list(LEDGER_INPUT))
    return canonical("ledger", pa.Table.from_batches(list(ledger_batches(iter(events.to_batches(
        max_chunksize=chunk)), columns=columns)), LEDGER))


def assert_columns_equal_fold(events: pa.Table) -> None:
    """The column-wise ledger (with the fold for what it leaves) equals the fold's, row for row."""
    by_columns, by_fold = batch_ledger(events), batch_ledger(events, columns=False)
    if not by_columns.equals(by_fold):
        for a, b in zip(by_columns.to_pylist(), by_fold.to_pylist(), strict=False):
            assert a == b
        assert by_columns.num_rows == by_fold.num_rows


def kinds(anomalies: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(kind, id) of each anomaly."""
    return {(a["kind"], a["id"]) for a in anomalies}


class Script:
    """A conversation on the model (virtual clock), for building ledger cases with real replies."""

    def __init__(self) -> None:
        self.driver = ModelDriver("redis-7.0")

    def __call__(self, c: int, *args: str | bytes) -> Any:
        return self.driver.call(c, *[a.encode() if isinstance(a, str) else a for a in args])

    def sleep(self, ms: int) -> None:
        self.driver.sleep(ms)

    def close(self, c: int) -> None:
        self.driver.close(c)

    def trace(self) -> Trace:
        return self.driver.trace()
