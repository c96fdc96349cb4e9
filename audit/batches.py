"""The audit's steps as functions from Arrow record batches to Arrow record batches.

Spark runs them with ``mapInArrow`` (whole batches cross between the JVM and Python, never
rows); the in-process path runs the very same functions over the tables it holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from xspec.audit.conformance import DEFAULT_SPLIT_MIN_EVENTS, check_file
from xspec.audit.ingest import FileResult, read_file
from xspec.audit.ledger import LEDGER_INPUT, LedgerFold, anomalies_of
from xspec.audit.schema import ANOMALIES, EVENTS, LEDGER, VERDICTS

OUT_ROWS = 8_192

META_TRACE = "_trace"
META_QUARANTINE = "_quarantine"
"""``ev`` of the rows the ingest step adds after a file's events: the file's TRACES row, or one
QUARANTINE row per malformed line (their fields are in ``text`` as JSON). They never reach the
events table."""

SORT_KEYS: dict[str, list[str]] = {
    "traces": ["trace"], "quarantine": ["file", "line"], "verdicts": ["trace"],
    "ledger": ["trace", "key", "group", "id"], "anomalies": ["kind", "trace", "key", "group", "id"],
    "events": ["trace", "event"],
}


def canonical(name: str, table: pa.Table) -> pa.Table:
    """A table in its one order (so both paths write the same files' worth of rows in the same order)."""
    return table.sort_by([(k, "ascending") for k in SORT_KEYS[name]])


def ingest_batches(paths: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Batches of a ``path`` column in, EVENTS batches out (plus the META rows of each file)."""
    import json
    for batch in paths:
        for path in batch.column("path").to_pylist():
            result = FileResult()
            yield from read_file(path, result)
            meta: list[dict[str, Any]] = []
            if result.trace is not None:
                meta.append({"trace": path, "ev": META_TRACE, "line": 0, "event": -1,
                             "text": json.dumps(result.trace)})
            for q in result.quarantine:
                meta.append({"trace": path, "ev": META_QUARANTINE, "line": q["line"], "event": -1,
                             "text": json.dumps(q)})
            if meta:
                yield pa.RecordBatch.from_pylist(meta, EVENTS)


def conformance_batches(paths: Iterator[pa.RecordBatch], dialect: str = "auto",
                        split_min_events: int = DEFAULT_SPLIT_MIN_EVENTS) -> Iterator[pa.RecordBatch]:
    """Batches of a ``path`` column in, VERDICTS batches out (one row per readable trace)."""
    for batch in paths:
        rows = []
        for path in batch.column("path").to_pylist():
            row = check_file(path, dialect, split_min_events)
            if row is not None:
                rows.append(row)
        if rows:
            yield pa.RecordBatch.from_pylist(rows, VERDICTS)


def ledger_batches(events: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """EVENTS batches sorted by (trace, event) in (whole traces per partition), LEDGER batches out.

    The fold carries its state across batch boundaries and emits a trace's rows when the next
    trace starts, so a trace larger than memory's batch never needs to be one batch.
    """
    fold: LedgerFold | None = None
    out: list[dict[str, Any]] = []
    for batch in events:
        if batch.num_rows == 0:
            continue
        cols = {name: batch.column(name).to_pylist() for name in LEDGER_INPUT}
        traces = cols["trace"]
        for i in range(batch.num_rows):
            trace = traces[i]
            if fold is None or fold.trace != trace:
                if fold is not None:
                    out += fold.ledger_rows()
                    if len(out) >= OUT_ROWS:
                        yield pa.RecordBatch.from_pylist(out, LEDGER)
                        out = []
                fold = LedgerFold(trace)
            if cols["ev"][i] in ("header", META_TRACE, META_QUARANTINE):
                continue
            fold.feed({name: cols[name][i] for name in LEDGER_INPUT})
    if fold is not None:
        out += fold.ledger_rows()
    if out:
        yield pa.RecordBatch.from_pylist(out, LEDGER)


def anomaly_batches(ledger: Iterator[pa.RecordBatch], stuck_after_ms: int,
                    poison_deliveries: int) -> Iterator[pa.RecordBatch]:
    """LEDGER batches in, ANOMALIES batches out (each anomaly is a property of one ledger row)."""
    for batch in ledger:
        out: list[dict[str, Any]] = []
        for row in batch.to_pylist():
            out += anomalies_of(row, stuck_after_ms, poison_deliveries)
        if out:
            yield pa.RecordBatch.from_pylist(out, ANOMALIES)


__all__ = ["LEDGER_INPUT", "canonical", "ingest_batches", "conformance_batches", "ledger_batches",
           "anomaly_batches"]
