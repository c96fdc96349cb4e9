"""Reading trace files into the events table (spec/audit.md, "Ingest").

:func:`read_file` streams one ``.jsonl``/``.jsonl.gz`` trace into Arrow record batches of
:data:`~xspec.audit.schema.EVENTS`, validating every line with the trace format's own reader
(:mod:`xspec.spec.trace_format`), so a file the audit accepts is exactly a file ``xspec replay``
accepts. A malformed file yields :class:`FileResult.quarantine` rows (file, line, message) for
every line that is malformed on its own, and for the first error the reader raises; its rows are
then dropped by the caller (no partial traces). Nothing here needs Spark.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from xspec.audit.commands import command_keys, op_name
from xspec.audit.json_text import loads
from xspec.audit.schema import EVENTS, QUARANTINE, TRACES
from xspec.audit.trace_lines import collections_paused, events_of, json_lines
from xspec.spec import trace_format as tf
from xspec.spec.resp import (
    Array,
    Attribute,
    BlobError,
    Bulk,
    Error,
    Int,
    Map,
    Reply,
    to_json,
)

BATCH_ROWS = 32_768
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1

def _entry(item: Reply, key: bytes | None) -> dict[str, Any] | None:
    """``[id, [field, value, ...]]`` (or ``[id, nil]``) as an entry row, None for anything else."""
    if not isinstance(item, Array) or len(item.items) != 2 or not isinstance(item.items[0], Bulk):
        return None
    payload = item.items[1]
    fields: list[bytes] | None
    if isinstance(payload, Array):
        if not all(isinstance(f, Bulk) for f in payload.items):
            return None
        fields = [f.value for f in payload.items if isinstance(f, Bulk)]
    elif isinstance(payload, Map):
        fields = []
        for k, v in payload.pairs:
            if not (isinstance(k, Bulk) and isinstance(v, Bulk)):
                return None
            fields += [k.value, v.value]
    else:
        fields = None  # a deleted entry's history slot: [id, nil]
    return {"key": key, "id": item.items[0].value.decode("latin-1"), "fields": fields}


def _entries(items: tuple[Reply, ...], key: bytes | None) -> list[dict[str, Any]]:
    out = []
    for item in items:
        e = _entry(item, key)
        if e is not None:
            out.append(e)
    return out


def reply_payload(op: str | None, cmd: list[bytes] | None, reply: Reply) -> tuple[list[str] | None,
                                                                                     list[dict[str, Any]] | None]:
    """The entry IDs and the entries (key, ID, fields) a reply carries, for the stream commands."""
    if isinstance(reply, Attribute):
        reply = reply.value
    if op is None or cmd is None:
        return None, None
    key = cmd[1] if len(cmd) > 1 else None
    if op == "XADD":
        return ([reply.value.decode("latin-1")] if isinstance(reply, Bulk) else None), None
    if op in ("XRANGE", "XREVRANGE", "XCLAIM"):
        if not isinstance(reply, Array):
            return None, None
        ids = [i.value.decode("latin-1") for i in reply.items if isinstance(i, Bulk)]
        return (ids or None), _entries(reply.items, key) or None
    if op == "XAUTOCLAIM":
        if not isinstance(reply, Array) or len(reply.items) < 2 or not isinstance(reply.items[1], Array):
            return None, None
        claimed = reply.items[1].items
        ids = [i.value.decode("latin-1") for i in claimed if isinstance(i, Bulk)]
        if len(reply.items) > 2 and isinstance(reply.items[2], Array):  # 7.0+: the deleted IDs it dropped
            ids += [i.value.decode("latin-1") for i in reply.items[2].items if isinstance(i, Bulk)]
        return (ids or None), _entries(claimed, key) or None
    if op in ("XREAD", "XREADGROUP"):
        out: list[dict[str, Any]] = []
        if isinstance(reply, Array):
            for per_key in reply.items:
                if (isinstance(per_key, Array) and len(per_key.items) == 2 and isinstance(per_key.items[0], Bulk)
                        and isinstance(per_key.items[1], Array)):
                    out += _entries(per_key.items[1].items, per_key.items[0].value)
        elif isinstance(reply, Map):
            for k, v in reply.pairs:
                if isinstance(k, Bulk) and isinstance(v, Array):
                    out += _entries(v.items, k.value)
        return None, out or None
    return None, None


def dumps(obj: Any) -> str:
    """Compact JSON text, non-ASCII as is (orjson when it can: it refuses integers past 64 bits)."""
    try:
        return orjson.dumps(obj).decode()
    except TypeError:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def reply_values(op: str | None, cmd: list[bytes] | None, reply: Reply, as_json: Any = None) -> tuple[Any, ...]:
    """The reply columns of an event, in :data:`REPLY_COLUMNS` order: JSON text, RESP type, integer, error text,
    IDs, entries.

    ``as_json``: the reply as the trace's line wrote it (else it is written from ``reply``)."""
    if as_json is None:
        as_json = to_json(reply)
    ids, entries = reply_payload(op, cmd, reply)
    inner = reply.value if isinstance(reply, Attribute) else reply
    # an integer past 64 bits (no server sends one; a hand-written trace may) is in reply_json only
    number = inner.value if isinstance(inner, Int) and _I64_MIN <= inner.value <= _I64_MAX else None
    return (dumps(as_json), next(iter(as_json)), number, inner.text if isinstance(inner, (Error, BlobError)) else None,
            ids, entries)


REPLY_COLUMNS = ("reply_json", "reply_type", "reply_int", "reply_error", "reply_ids", "entries")


def reply_columns(op: str | None, cmd: list[bytes] | None, reply: Reply, as_json: Any = None) -> dict[str, Any]:
    """The reply columns of an event (:func:`reply_values`) by name."""
    return dict(zip(REPLY_COLUMNS, reply_values(op, cmd, reply, as_json), strict=True))


@dataclass
class FileResult:
    """What reading one file gave besides its event rows."""

    trace: dict[str, Any] | None = None  # a TRACES row when the file was read whole
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    verdict: dict[str, Any] | None = None  # its VERDICTS row, when read with ``check`` (trace/1 files)


@dataclass
class Check:
    """Check each trace/1 file against the model while it is read (its events are parsed once for both)."""

    dialect: str = "auto"
    split_min_events: int | None = None  # None: the default threshold
    split_elsewhere: bool = False  # True: a trace to split is left unchecked (the Spark job checks its parts apart)


_EMPTY_ROW = dict.fromkeys(EVENTS.names)
# the column order of the tuple `_event_row` writes for a call
assert EVENTS.names == ["trace", "line", "event", "node", "primary", "replica", "client", "ev", "t0", "t1", "t", "now",
                        "cmd", "raw", "by", "text", "answers", "op", "keys", *REPLY_COLUMNS]


def _batch(rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    """EVENTS rows (tuples in the schema's column order) as one record batch, built column by column."""
    columns = zip(*rows, strict=True)  # every row has every column
    return pa.RecordBatch.from_arrays([pa.array(values, f.type) for values, f in zip(columns, EVENTS, strict=True)],
                                      schema=EVENTS)


def _event_row(trace: str, line: int, index: int, e: Any, pending: dict[int, list[tuple[int, list[bytes] | None]]],
               obj: dict[str, Any]) -> tuple[Any, ...]:
    """One EVENTS row as a tuple in the schema's column order."""
    if type(e) is tf.Call:  # most events: its own row, without looking up absent fields
        op = op_name(e.cmd)
        return (trace, line, index, e.node, None, None, e.c, "call", e.t0, e.t1, None, e.now, e.cmd, None, None, None,
                None, op, command_keys(e.cmd), *reply_values(op, e.cmd, e.reply, obj["reply"]))
    row = dict(_EMPTY_ROW)
    row.update(trace=trace, line=line, event=index, node=getattr(e, "node", None))
    kind = type(e).__name__.lower()
    row["ev"] = {"replcmd": "repl", "replsync": "repl", "replack": "repl"}.get(kind, kind)
    for name in ("t0", "t1", "t", "now", "by", "text"):
        v = getattr(e, name, None)
        if v is not None:
            row[name] = v
    c = getattr(e, "c", None)
    row["client"] = c
    cmd: list[bytes] | None = getattr(e, "cmd", None)
    if isinstance(e, (tf.Call, tf.Send, tf.Recv)):
        if isinstance(e, tf.Recv):  # the command is the oldest unanswered send's
            queue = pending.get(e.c)
            row["answers"], cmd = queue.pop(0) if queue else (None, None)
        else:
            row["cmd"] = cmd
        row["op"] = op_name(cmd)
        row["keys"] = command_keys(cmd)
        if isinstance(e, tf.Send):
            row["raw"] = e.raw
            pending.setdefault(e.c, []).append((index, cmd))
        else:
            row.update(reply_columns(row["op"], cmd, e.reply, obj["reply"]))
    elif isinstance(e, tf.Close):
        pending.pop(e.c, None)
    elif isinstance(e, (tf.Link, tf.ReplCmd, tf.ReplSync, tf.ReplAck)):
        row["primary"], row["replica"] = e.primary, e.replica
        if isinstance(e, tf.ReplCmd):
            row["cmd"] = e.cmd
            row["text"] = "cmd"
        else:
            row["text"] = e.state if isinstance(e, tf.Link) else e.sync if isinstance(e, tf.ReplSync) else "ack"
    elif hasattr(e, "reply"):  # trace/2 push
        row.update(reply_columns(None, None, e.reply, obj["reply"]))
    return tuple(row.values())


def _malformed_lines(path: Path) -> list[dict[str, Any]]:
    """Every line that is malformed on its own (JSON, fields, types), for a file the reader refused."""
    out: list[dict[str, Any]] = []
    p = str(path)
    try:
        with tf._open_text(path) as f:
            header: Any = None
            for n, text in enumerate(f, 1):
                if not text.strip():
                    continue
                try:
                    obj = json.loads(text)
                except json.JSONDecodeError as e:
                    out.append({"file": p, "line": n, "message": f"not valid JSON ({e.msg} at column {e.colno})"})
                    continue
                try:
                    if header is None:
                        header = tf.parse_header(obj, p)
                    elif getattr(header, "nodes", None) is None:
                        tf.parse_event(obj, p, n)
                except tf.TraceError as e:
                    out.append({"file": p, "line": e.line, "message": e.message})
                    if header is None:
                        break
    except (OSError, EOFError, UnicodeDecodeError, ValueError):
        pass  # the reader's own error names the place
    return out


def read_file(path: str | Path, result: FileResult, batch_rows: int = BATCH_ROWS,
              check: Check | None = None) -> Iterator[pa.RecordBatch]:
    """Stream one trace file as EVENTS batches; fills ``result`` (trace row or quarantine rows; with ``check``, the
    verdict of a trace/1 file, from the very events the rows were made of)."""
    with collections_paused():
        yield from _read_file(Path(path), result, batch_rows, check)


def _read_file(path: Path, result: FileResult, batch_rows: int, check: Check | None) -> Iterator[pa.RecordBatch]:
    name = str(path)
    rows: list[tuple[Any, ...]] = []
    index = 0
    try:
        lines = json_lines(path)
        first = next(lines, None)
        if first is None:
            raise tf.TraceError(name, 1, "empty file: a trace starts with its header line")
        header = tf.parse_header(first[1], name)
        head = dict(_EMPTY_ROW)
        head.update(trace=name, line=first[0], event=0, ev="header",
                    text=dumps(first[1]))
        rows.append(tuple(head.values()))
        pending: dict[int, list[tuple[int, list[bytes] | None]]] = {}
        kept: list[Any] | None = [] if check is not None and getattr(header, "nodes", None) is None else None
        for n, e, obj in events_of(header, path, lines):
            index += 1
            rows.append(_event_row(name, n, index, e, pending, obj))
            if kept is not None:
                kept.append(e)
            if len(rows) >= batch_rows:
                yield _batch(rows)
                rows = []
    except tf.TraceError as e:
        bad = _malformed_lines(path)
        if not any(q["line"] == e.line for q in bad):
            bad.append({"file": name, "line": e.line, "message": e.message})
        result.quarantine = sorted(bad, key=lambda q: q["line"])
        return
    if rows:
        yield _batch(rows)
    result.trace = _trace_row(name, header, index, path)
    if kept is not None and check is not None:
        from xspec.audit.conformance import DEFAULT_SPLIT_MIN_EVENTS, check_loaded
        threshold = DEFAULT_SPLIT_MIN_EVENTS if check.split_min_events is None else check.split_min_events
        if not (check.split_elsewhere and threshold and index >= threshold):
            result.verdict = check_loaded(tf.Trace(header, kept, name), name, check.dialect, threshold)


@dataclass
class RangeResult:
    """What reading one byte range of a file gave besides its rows (:func:`read_range`)."""

    lines: int = 0  # lines whose first byte is in the range (empty ones too)
    events: int = 0  # events among them (the header not counted)
    whole: bool = False  # the range cannot be read on its own: read the file whole instead
    trace: dict[str, Any] | None = None  # the first range's TRACES row (its ``events``: the first range's)


def read_range(path: str | Path, start: int, end: int, result: RangeResult,
               batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Stream the events whose line starts in bytes [start, end) of a plain ``trace/1`` file, numbered from 1
    within the range (the caller adds the earlier ranges' lines and events).

    Only a file of self-contained lines can be read this way: a ``send``/``recv`` (paired across lines), a
    ``trace/2`` header (checked across lines), a line the format refuses, or a line ending other than ``\n``
    sets ``result.whole``, and the caller reads the file whole (which also quarantines exactly as
    :func:`read_file` does); the rows already yielded are then dropped.
    """
    with collections_paused():
        yield from _read_range(str(path), start, end, result, batch_rows)


def _read_range(name: str, start: int, end: int, result: RangeResult, batch_rows: int) -> Iterator[pa.RecordBatch]:
    rows: list[tuple[Any, ...]] = []
    try:
        with open(name, "rb") as f:
            first = loads(f.readline().decode("utf-8"))
            header = tf.parse_header(first, name)
            if getattr(header, "nodes", None) is not None:
                result.whole = True
                return
            if start == 0:
                head = dict(_EMPTY_ROW)
                head.update(trace=name, line=1, event=0, ev="header", text=dumps(first))
                rows.append(tuple(head.values()))
                result.lines = 1
            else:
                f.seek(start - 1)
                f.readline()  # the rest of the line that began before the range
            pos = f.tell()
            while pos < end:
                raw = f.readline()
                if not raw:
                    break
                pos += len(raw)
                result.lines += 1
                if b"\r" in raw:
                    result.whole = True
                    return
                text = raw.decode("utf-8")
                if not text.strip():
                    continue
                obj = loads(text)
                e = tf.parse_event(obj, name, result.lines)
                if isinstance(e, (tf.Send, tf.Recv)):
                    result.whole = True
                    return
                result.events += 1
                rows.append(_event_row(name, result.lines, result.events, e, {}, obj))
                if len(rows) >= batch_rows:
                    yield _batch(rows)
                    rows = []
    except (tf.TraceError, ValueError, OSError):  # ValueError: JSON and UTF-8 errors
        result.whole = True
        return
    if rows:
        yield _batch(rows)
    if start == 0:
        result.trace = _trace_row(name, header, result.events, Path(name))


def _trace_row(name: str, header: Any, events: int, path: Path) -> dict[str, Any]:
    """The TRACES row of a file read whole."""
    nodes = getattr(header, "nodes", None)
    fmt = tf.FORMAT_2 if nodes is not None else tf.FORMAT
    server = (f"{header.server_name}-{header.server_version}" if nodes is None
              else ",".join(f"{k}={v.server_name}-{v.server_version}" for k, v in nodes.items()))
    return {"trace": name, "format": fmt, "server": server, "clock": header.clock,
            "expect_json": None if header.expect is None else json.dumps(header.expect, sort_keys=True),
            "events": events, "bytes": path.stat().st_size}


def read_files(paths: list[str]) -> tuple[pa.Table, pa.Table, pa.Table]:
    """EVENTS (of the files read whole), TRACES and QUARANTINE tables of many files, in process."""
    batches: list[pa.RecordBatch] = []
    traces: list[dict[str, Any]] = []
    quarantine: list[dict[str, Any]] = []
    for p in paths:
        result = FileResult()
        got = list(read_file(p, result))
        if result.trace is not None:
            batches += got
            traces.append(result.trace)
        quarantine += result.quarantine
    return (pa.Table.from_batches(batches, EVENTS), pa.Table.from_pylist(traces, TRACES),
            pa.Table.from_pylist(quarantine, QUARANTINE))
