"""The in-process audit (``--master none``): the same steps as the Spark job, one after the other.

Every step is the same function the Spark job runs on Arrow batches (ingest, conformance,
ledger, anomalies), so the two paths give identical tables; this one is for small inputs and
for comparing with the Spark path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from xspec.audit import batches
from xspec.audit.conformance import check_file
from xspec.audit.ingest import read_files
from xspec.audit.schema import ANOMALIES, LEDGER, VERDICTS


def write_table(table: pa.Table, folder: Path) -> None:
    """A table as a Parquet folder of one file (the layout Spark writes, so readers need not care)."""
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "part-00000.parquet")


def run_local(files: list[str], out: Path, *, dialect: str, stuck_after_ms: int, poison_deliveries: int,
              split_min_events: int, progress: Callable[[str], None]) -> dict[str, pa.Table]:
    """Audit ``files`` in this process; writes the Parquet tables under ``out`` and returns them."""
    progress(f"ingest: {len(files)} files")
    events, traces, quarantine = read_files(files)
    events = events.sort_by([("trace", "ascending"), ("event", "ascending")])
    write_table(events, out / "events")
    good = [str(t) for t in traces.column("trace").to_pylist()]
    progress(f"conformance: {len(good)} traces")
    rows: list[dict[str, Any]] = []
    for n, f in enumerate(good, 1):
        row = check_file(f, dialect, split_min_events)
        if row is not None:
            rows.append(row)
        if n % 100 == 0:
            progress(f"conformance: {n}/{len(good)} traces")
    verdicts = pa.Table.from_pylist(rows, VERDICTS)
    progress(f"ledger: {events.num_rows} events")
    ledger = _run(batches.ledger_batches, events.select(list(batches.LEDGER_INPUT)).to_batches(), LEDGER)
    anomalies = _run(lambda it: batches.anomaly_batches(it, stuck_after_ms, poison_deliveries),
                     ledger.to_batches(), ANOMALIES)
    tables = {"traces": traces, "quarantine": quarantine, "verdicts": verdicts, "ledger": ledger,
              "anomalies": anomalies}
    for name, table in tables.items():
        write_table(batches.canonical(name, table), out / name)
    return tables


def _run(step: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]], source: list[pa.RecordBatch],
         schema: pa.Schema) -> pa.Table:
    return pa.Table.from_batches(list(step(iter(source))), schema)

