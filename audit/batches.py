"""The audit's steps as functions from Arrow record batches to Arrow record batches.

Spark runs them with ``mapInArrow`` (whole batches cross between the JVM and Python, never
rows); the in-process path runs the very same functions over the tables it holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from xspec.audit.ingest import Check, FileResult, RangeResult, read_file, read_range
from xspec.audit.ledger import LEDGER_INPUT, LedgerFold, anomalies_of
from xspec.audit.schema import ANOMALIES, EVENTS, LEDGER, VERDICTS

OUT_ROWS = 8_192

META_TRACE = "_trace"
META_QUARANTINE = "_quarantine"
META_RANGE = "_range"
META_VERDICT = "_verdict"
META_EVS = (META_TRACE, META_QUARANTINE, META_RANGE, META_VERDICT)
"""``ev`` of the rows the ingest step adds after a file's events: the file's TRACES row, one
QUARANTINE row per malformed line, what reading a byte range gave (:class:`RangeResult`'s
fields), or the file's VERDICTS row (when checked while read); their fields are in ``text`` as JSON. They never
reach the events table."""

STAGING = EVENTS.append(pa.field("part", pa.int32()))
"""The ingest step's output: EVENTS plus the byte range (``part``) a row was read in, -1 for a file read whole."""

SORT_KEYS: dict[str, list[str]] = {
    "traces": ["trace"], "quarantine": ["file", "line"], "verdicts": ["trace"],
    "ledger": ["trace", "key", "group", "id"], "anomalies": ["kind", "trace", "key", "group", "id"],
    "events": ["trace", "event"],
}


def canonical(name: str, table: pa.Table) -> pa.Table:
    """A table in its one order (so both paths write the same files' worth of rows in the same order)."""
    return table.sort_by([(k, "ascending") for k in SORT_KEYS[name]])


def _staged(batch: pa.RecordBatch, part: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([*batch.columns, pa.array([part] * batch.num_rows, pa.int32())],
                                      schema=STAGING)


def ingest_batches(paths: Iterator[pa.RecordBatch], check: Check | None = None) -> Iterator[pa.RecordBatch]:
    """Batches of ``path`` (and, for a byte range of a file, ``start``, ``end``, ``part`` >= 0) in, STAGING
    batches out: the events, and the META rows of each file or range (with ``check``, a trace/1 file read whole
    is also checked against the model, from the events just parsed: its verdict is a META row)."""
    import json
    for batch in paths:
        cols = batch.to_pydict()
        for i, path in enumerate(cols["path"]):
            part = cols["part"][i] if "part" in cols else -1
            meta: list[dict[str, Any]] = []
            if part >= 0:
                got = RangeResult()
                for b in read_range(path, cols["start"][i], cols["end"][i], got):
                    yield _staged(b, part)
                meta.append({"trace": path, "ev": META_RANGE, "line": 0, "event": -1, "text": json.dumps(
                    {"part": part, "lines": got.lines, "events": got.events, "whole": got.whole,
                     "row": got.trace})})
            else:
                result = FileResult()
                for b in read_file(path, result, check=check):
                    yield _staged(b, part)
                if result.trace is not None:
                    meta.append({"trace": path, "ev": META_TRACE, "line": 0, "event": -1,
                                 "text": json.dumps(result.trace)})
                if result.verdict is not None:
                    meta.append({"trace": path, "ev": META_VERDICT, "line": 0, "event": -1,
                                 "text": json.dumps(result.verdict)})
                for q in result.quarantine:
                    meta.append({"trace": path, "ev": META_QUARANTINE, "line": q["line"], "event": -1,
                                 "text": json.dumps(q)})
            if meta:
                yield _staged(pa.RecordBatch.from_pylist(meta, EVENTS), part)


def conformance_batches(paths: Iterator[pa.RecordBatch], dialect: str = "auto",
                        split_min_events: int | None = None) -> Iterator[pa.RecordBatch]:
    """Batches of a ``path`` column in, VERDICTS batches out (one row per readable trace)."""
    # imported here: the model is what only this step needs (the other steps' workers start without it)
    from xspec.audit.conformance import DEFAULT_SPLIT_MIN_EVENTS, check_file
    if split_min_events is None:
        split_min_events = DEFAULT_SPLIT_MIN_EVENTS
    for batch in paths:
        rows = []
        for path in batch.column("path").to_pylist():
            row = check_file(path, dialect, split_min_events)
            if row is not None:
                rows.append(row)
        if rows:
            yield pa.RecordBatch.from_pylist(rows, VERDICTS)


def decide_batches(traces: Iterator[pa.RecordBatch], dialect: str, split_min_events: int
                   ) -> Iterator[pa.RecordBatch]:
    """SPLIT_TRACES batches in, VERDICTS batches out: each row exactly as the in-process split gives it
    (:func:`xspec.audit.split.check_split`), decided from the parts' verdicts and merged witnesses, checking the
    whole trace where they cannot decide."""
    for batch in traces:
        rows = [row for r in batch.to_pylist() if (row := _decided(r, dialect, split_min_events)) is not None]
        if rows:
            yield pa.RecordBatch.from_pylist(rows, VERDICTS)


def _decided(r: dict[str, Any], dialect: str, split_min_events: int) -> dict[str, Any] | None:
    """The VERDICTS row of one SPLIT_TRACES row (None: the file is malformed)."""
    import pyarrow.parquet as pq

    from xspec.audit.conformance import check_file, verdict_row
    from xspec.audit.split import part_trace, steps_of, undecided
    from xspec.spec.trace_format import Trace
    from xspec.traces.check.checker import Verdict, check_trace

    path, reason, statuses, files = r["trace"], r["reason"], r["statuses"], r["steps"]
    if reason is not None:
        def whole(trace: Trace, dialect: str) -> tuple[Verdict, int, str]:
            return check_trace(trace, dialect), 1, f"whole: {reason}"
        return check_file(path, dialect, decide=whole)
    if "error" in statuses:  # a part raised: the in-process split raises the same, and reports it as it does
        return check_file(path, dialect, split_min_events)

    def witnesses() -> list[list[Any]] | None:
        if any(f is None for f in files):
            return None
        return [steps_of(pq.read_table(f).column("step").combine_chunks()) for f in files]

    head = part_trace(path, [])  # the header alone: the verdict row reads only it
    why = undecided(head.header.clock, statuses, witnesses)
    if why is None:
        return verdict_row(head, path, Verdict("conform", r["events"]), dialect, parts=r["parts"], split="split")

    def fallback(trace: Trace, dialect: str) -> tuple[Verdict, int, str]:
        return check_trace(trace, dialect), r["parts"], f"fallback: {why}"
    return check_file(path, dialect, decide=fallback)


_SILENT_OPS = pa.array(["XREADGROUP", "XCLAIM", "XAUTOCLAIM"])
_META_EVS = pa.array(META_EVS)
_GROUP = pa.array([b"GROUP", b"group", b"Group"], pa.binary())
_NOT_EFFECT = pa.array(["error", "blob_error", "simple"])


def _event_times(batch: pa.RecordBatch) -> pa.Array:
    """Each event's largest timestamp (``t0``, ``t1``, ``t``; ``now`` as µs when it has none)."""
    wall = pc.max_element_wise(batch.column("t0"), batch.column("t1"), batch.column("t"), skip_nulls=True)
    return pc.coalesce(wall, pc.multiply(batch.column("now"), pa.scalar(1000, pa.int64())))


def _silent(batch: pa.RecordBatch) -> pa.Array:
    """The calls that read or claimed for a group and got nothing (no entry, no ID, no error, not QUEUED).

    All such a call does to the ledger is name the connection's consumer for that group, so the
    fold does just that for them instead of reading the whole row (most of a consumer's polls).
    """
    op = batch.column("op")
    cmd = batch.column("cmd")
    padded = pc.if_else(pc.greater(pc.list_value_length(cmd), 3), cmd, pa.scalar([b""] * 4, pa.list_(pa.binary())))
    # GROUP first, and a group and consumer that cannot be the word STREAMS (where the keys column would differ
    # from the fold's reading of the command)
    named = pc.or_kleene(pc.not_equal(op, "XREADGROUP"), pc.and_kleene(
        pc.is_in(pc.list_element(padded, 1), _GROUP), pc.and_kleene(
            pc.not_equal(pc.binary_length(pc.list_element(padded, 2)), len(b"STREAMS")),
            pc.not_equal(pc.binary_length(pc.list_element(padded, 3)), len(b"STREAMS")))))
    mask = pc.and_kleene(pc.equal(batch.column("ev"), "call"), pc.is_in(op, _SILENT_OPS))
    for condition in (named, pc.is_null(batch.column("entries")), pc.is_null(batch.column("reply_ids")),
                      pc.is_null(batch.column("reply_error")), pc.invert(pc.is_in(batch.column("reply_type"),
                                                                                      _NOT_EFFECT)),
                      pc.greater(pc.list_value_length(cmd), 3), pc.is_valid(batch.column("keys"))):
        mask = pc.and_kleene(mask, condition)
    return pc.fill_null(mask, False)


CHUNK_ROWS = 262_144
"""Events the ledger step gathers before computing (it always computes whole traces: a trace's events wait for the
next trace's first one, however many there are)."""


def _rows_of(batch: pa.RecordBatch, trace: Any) -> int:
    return int(pc.sum(pc.equal(batch.column("trace"), trace)).as_py() or 0)


def _combined(held: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    if len(held) == 1:
        yield held[0]
    else:
        yield from pa.Table.from_batches(held).combine_chunks().to_batches()


def _whole_traces(events: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """EVENTS batches (sorted by trace and event) regrouped into batches of whole traces of about CHUNK_ROWS rows.

    Small batches are gathered (copied into one); a big batch is cut where its traces start, and only the rows that
    end the trace held from the batches before are copied with them, the rest goes on as slices of it.
    """
    held: list[pa.RecordBatch] = []
    rows = 0
    for batch in events:
        n = batch.num_rows
        if n == 0:
            continue
        held.append(batch)
        rows += n
        if rows < CHUNK_ROWS:
            continue
        tail = _rows_of(batch, batch.column("trace")[-1])  # the rows of its last trace, which may go on
        if tail == n and len(held) > 1 and held[-2].column("trace")[-1] == batch.column("trace")[-1]:
            continue  # one trace goes on: nothing is whole yet
        if len(held) > 1 and 2 * n >= CHUNK_ROWS:
            head = _rows_of(batch, held[-2].column("trace")[-1])  # the rows that end the held trace
            yield from _combined([*held[:-1], batch.slice(0, head)])
            if n - tail > head:
                yield batch.slice(head, n - tail - head)
        elif n - tail > 0 or len(held) > 1:
            yield from _combined([*held[:-1], batch.slice(0, n - tail)])
        held = [batch.slice(n - tail)]
        rows = tail
    if held:
        yield from _combined(held)


def _trace_ends(batch: pa.RecordBatch) -> dict[str, int | None]:
    times = pa.table({"trace": batch.column("trace"), "time": _event_times(batch)})
    return dict(zip(*times.group_by("trace").aggregate([("time", "max")]).to_pydict().values(), strict=True))


def ledger_batches(events: Iterator[pa.RecordBatch], columns: bool = True) -> Iterator[pa.RecordBatch]:
    """EVENTS batches sorted by (trace, event) in (whole traces per partition), LEDGER batches out.

    Events are gathered into batches of whole traces. In each, :func:`xspec.audit.columns.split_ledger` computes
    the rows of the keys it can read column by column and picks the events of the other keys, which
    :func:`_fold` reads (``columns=False``: the fold reads everything).
    """
    from xspec.audit.columns import split_ledger
    for batch in _whole_traces(events):
        ends = _trace_ends(batch)
        if not columns:
            rows = _fold(batch, ends)
        else:
            table, rest, keep_keys, keep_traces = split_ledger(batch, ends)
            yield from table.to_batches(max_chunksize=OUT_ROWS)
            rows = [r for r in _fold(rest, ends) if r["trace"] in keep_traces or (r["trace"], r["key"]) in keep_keys]
        for at in range(0, len(rows), OUT_ROWS):
            yield pa.RecordBatch.from_pylist(rows[at: at + OUT_ROWS], LEDGER)


WRITTEN = pa.schema([("path", pa.string())])
"""What a step that writes its own files returns: their paths."""


def ledger_files(paths: Iterator[pa.RecordBatch], out: str, anomalies_out: str, stuck_after_ms: int,
                 poison_deliveries: int) -> Iterator[pa.RecordBatch]:
    """Batches of a ``path`` column (events-table files: whole traces sorted by trace and event) in, WRITTEN batches
    out: each events file's ledger is written to ``out`` and its anomalies to ``anomalies_out``, as Parquet files of
    the same name, whose anomalies paths are returned.

    The files are read and written here with pyarrow: through Spark, every nested event, ledger row and anomaly
    would be turned into a JVM row and back into Arrow, which costs more than the ledger itself. A task run again
    writes the same files again.
    """
    import os

    import pyarrow.parquet as pq
    for batch in paths:
        for path in batch.column("path").to_pylist():
            source = pq.ParquetFile(path).iter_batches(batch_size=CHUNK_ROWS, columns=list(LEDGER_INPUT))
            name = os.path.basename(path)
            partial = os.path.join(out, f"_{name}")  # a name readers skip until it is whole
            found: list[pa.RecordBatch] = []
            with pq.ParquetWriter(partial, LEDGER) as writer:
                for ledger in ledger_batches(source):
                    writer.write_batch(ledger)
                    found += anomaly_batches(iter([ledger]), stuck_after_ms, poison_deliveries)
            os.replace(partial, os.path.join(out, name))
            done = os.path.join(anomalies_out, name)
            pq.write_table(pa.Table.from_batches(found, ANOMALIES), done)
            yield pa.RecordBatch.from_pylist([{"path": done}], WRITTEN)


def _fold(batch: pa.RecordBatch, ends: dict[str, int | None]) -> list[dict[str, Any]]:
    """The fold over a batch of whole traces (``ends``: each trace's largest timestamp).

    The polls that delivered nothing (:func:`_silent`) only name the connection's consumer, so Python reads four
    small columns of them; only the other rows become Python rows.
    """
    out: list[dict[str, Any]] = []
    if batch.num_rows == 0:
        return out
    silent = _silent(batch)
    meta = pc.fill_null(pc.is_in(batch.column("ev"), _META_EVS), False)
    full = pc.invert(pc.or_(silent, meta))
    kinds = pc.add(pc.cast(silent, pa.int8()), pc.multiply(pc.cast(meta, pa.int8()), 2)).to_pylist()
    quiet = batch.filter(silent)
    polls = zip(quiet.column("client").to_pylist(), quiet.column("keys").to_pylist(),
                pc.list_element(quiet.column("cmd"), 2).to_pylist(),
                pc.list_element(quiet.column("cmd"), 3).to_pylist(), strict=True)
    kept = batch.filter(full)
    # column by column: Arrow's row-wise to_pylist is several times slower on nested columns
    rows = [dict(zip(LEDGER_INPUT, values, strict=True))
            for values in zip(*(kept.column(c).to_pylist() for c in LEDGER_INPUT), strict=True)]
    traces = batch.column("trace").to_pylist()
    fold: LedgerFold | None = None
    r = 0
    for i, kind in enumerate(kinds):
        if kind == 2:
            continue
        trace = traces[i]
        if fold is None or fold.trace != trace:
            if fold is not None:
                out += fold.ledger_rows()
            fold = LedgerFold(trace, times_given=True)
            fold.note_time(ends.get(trace))
        if kind == 1:
            client, keys, group, consumer = next(polls)
            fold.used_consumer(client, keys, group, consumer)
        else:
            fold.feed(rows[r])
            r += 1
    if fold is not None:
        out += fold.ledger_rows()
    return out


def _anomaly_candidates(batch: pa.RecordBatch, poison_deliveries: int) -> pa.Array:
    """Ledger rows that may show an anomaly (a superset, from Arrow compute); the others show none."""
    deliveries = pc.list_value_length(batch.column("deliveries"))
    acks = pc.list_value_length(batch.column("acks"))
    first_delivery = pc.struct_field(pc.list_element(pc.if_else(pc.greater(deliveries, 0), batch.column(
        "deliveries"), pa.scalar([None], batch.schema.field("deliveries").type)), 0), "event")
    first_ack = pc.struct_field(pc.list_element(pc.if_else(pc.greater(acks, 0), batch.column("acks"), pa.scalar(
        [None], batch.schema.field("acks").type)), 0), "event")
    conditions = [
        pc.is_null(batch.column("group")),  # trace/2: phantom, id-reuse, group-less lost
        pc.and_(pc.equal(deliveries, 0), pc.invert(batch.column("in_stream"))),  # lost
        pc.equal(batch.column("state"), "pending"),  # stuck
        pc.greater_equal(deliveries, poison_deliveries),  # poison
        batch.column("removed_pending"),  # deleted-while-pending
        pc.and_(pc.greater_equal(deliveries, 2), pc.greater_equal(acks, 1)),  # double-processing, redelivered
        pc.and_(pc.greater_equal(acks, 1), pc.greater(first_delivery, first_ack)),  # redelivered-after-ack
    ]
    mask = conditions[0]
    for c in conditions[1:]:
        mask = pc.or_kleene(mask, pc.fill_null(c, False))
    return pc.fill_null(mask, False)


def anomaly_batches(ledger: Iterator[pa.RecordBatch], stuck_after_ms: int, poison_deliveries: int,
                    columns: bool = True) -> Iterator[pa.RecordBatch]:
    """LEDGER batches in, ANOMALIES batches out (each anomaly is a property of one ledger row).

    :func:`xspec.audit.anomaly_columns.anomaly_table` computes them column by column over the whole batch; with
    ``columns=False``, Arrow compute picks the rows that may show one and :func:`anomalies_of` reads each of those in
    Python.
    """
    from xspec.audit.anomaly_columns import anomaly_table
    for batch in ledger:
        if batch.num_rows == 0:
            continue
        if columns:
            yield from anomaly_table(batch, stuck_after_ms, poison_deliveries).to_batches()
            continue
        batch = batch.filter(_anomaly_candidates(batch, poison_deliveries))
        out: list[dict[str, Any]] = []
        names = batch.schema.names
        for values in zip(*(c.to_pylist() for c in batch.columns), strict=True):
            out += anomalies_of(dict(zip(names, values, strict=True)), stuck_after_ms, poison_deliveries)
        if out:
            yield pa.RecordBatch.from_pylist(out, ANOMALIES)


__all__ = ["LEDGER_INPUT", "canonical", "ingest_batches", "conformance_batches", "ledger_batches", "ledger_files",
           "anomaly_batches"]
