"""The audit's tables and their explicit schemas (spec/audit.md, "Tables").

Every table the audit reads or writes has one Arrow schema here; Spark's schemas are derived
from them (:func:`spark_schema`), so the in-process path and the Spark path write the same
columns with the same types. ``tests/test_audit.py`` checks these schemas against the tables
in spec/audit.md.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

ENTRY = pa.struct([("key", pa.binary()), ("id", pa.string()), ("fields", pa.list_(pa.binary()))])

EVENTS = pa.schema([
    ("trace", pa.string()),
    ("line", pa.int32()),
    ("event", pa.int32()),
    ("node", pa.string()),
    ("primary", pa.string()),
    ("replica", pa.string()),
    ("client", pa.int32()),
    ("ev", pa.string()),
    ("t0", pa.int64()),
    ("t1", pa.int64()),
    ("t", pa.int64()),
    ("now", pa.int64()),
    ("cmd", pa.list_(pa.binary())),
    ("raw", pa.binary()),
    ("by", pa.string()),
    ("text", pa.string()),
    ("answers", pa.int32()),
    ("op", pa.string()),
    ("keys", pa.list_(pa.binary())),
    ("reply_json", pa.string()),
    ("reply_type", pa.string()),
    ("reply_int", pa.int64()),
    ("reply_error", pa.string()),
    ("reply_ids", pa.list_(pa.string())),
    ("entries", pa.list_(ENTRY)),
])
"""One row per line of a trace file: the header (``ev`` = ``header``) and every event."""

TRACES = pa.schema([
    ("trace", pa.string()),
    ("format", pa.string()),
    ("server", pa.string()),
    ("clock", pa.string()),
    ("expect_json", pa.string()),
    ("events", pa.int64()),
    ("bytes", pa.int64()),
])
"""One row per trace file that could be read."""

QUARANTINE = pa.schema([
    ("file", pa.string()),
    ("line", pa.int32()),
    ("message", pa.string()),
])
"""One row per malformed line (or unreadable file: line of the failure)."""

VERDICTS = pa.schema([
    ("trace", pa.string()),
    ("status", pa.string()),
    ("events", pa.int64()),
    ("event", pa.int32()),
    ("message", pa.string()),
    ("expected", pa.string()),
    ("expected_event", pa.int32()),
    ("met", pa.bool_()),
    ("parts", pa.int32()),
    ("split", pa.string()),
])
"""One row per trace: its conformance verdict, as ``xspec replay`` gives it."""

DELIVERY = pa.struct([
    ("event", pa.int32()),
    ("client", pa.int32()),
    ("consumer", pa.binary()),
    ("time", pa.int64()),
    ("how", pa.string()),
    ("count", pa.int64()),
])
ACK = pa.struct([
    ("event", pa.int32()),
    ("client", pa.int32()),
    ("consumer", pa.binary()),
    ("time", pa.int64()),
    ("reply", pa.int64()),
    ("included", pa.bool_()),
])

LEDGER = pa.schema([
    ("trace", pa.string()),
    ("key", pa.binary()),
    ("group", pa.binary()),
    ("id", pa.string()),
    ("added_event", pa.int32()),
    ("added_client", pa.int32()),
    ("added_time", pa.int64()),
    ("group_at_add", pa.bool_()),
    ("deliveries", pa.list_(DELIVERY)),
    ("acks", pa.list_(ACK)),
    ("removed_event", pa.int32()),
    ("removed_how", pa.string()),
    ("removed_time", pa.int64()),
    ("removed_pending", pa.bool_()),
    ("dead_letter_key", pa.binary()),
    ("dead_letter_id", pa.string()),
    ("dead_letter_event", pa.int32()),
    ("state", pa.string()),
    ("owner", pa.binary()),
    ("pending_time", pa.int64()),
    ("in_stream", pa.bool_()),
    ("end_time", pa.int64()),
    ("read_event", pa.int32()),
    ("seen_event", pa.int32()),
    ("payload_events", pa.list_(pa.int32())),
    ("gone", pa.bool_()),
])
"""One row per (trace, stream key, group, entry ID): the entry's life in that group."""

ANOMALIES = pa.schema([
    ("kind", pa.string()),
    ("trace", pa.string()),
    ("key", pa.binary()),
    ("group", pa.binary()),
    ("id", pa.string()),
    ("consumers", pa.list_(pa.binary())),
    ("events", pa.list_(pa.int32())),
])
"""One row per anomaly found (spec/anomalies.md names the kinds)."""

TABLES: dict[str, pa.Schema] = {
    "events": EVENTS, "traces": TRACES, "quarantine": QUARANTINE, "verdicts": VERDICTS,
    "ledger": LEDGER, "anomalies": ANOMALIES,
}


def type_text(t: pa.DataType) -> str:
    """A type as spec/audit.md writes it: ``string``, ``int32``, ``list<binary>``, ``list<entry>``..."""
    if pa.types.is_list(t):
        return f"list<{type_text(t.value_type)}>"
    if t == ENTRY:
        return "entry"
    if t == DELIVERY:
        return "delivery"
    if t == ACK:
        return "ack"
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"{f.name}: {type_text(f.type)}" for f in t) + ">"
    return {"bool": "boolean"}.get(str(t), str(t))


def empty(schema: pa.Schema) -> pa.Table:
    """A table with no rows."""
    return schema.empty_table()


def spark_schema(schema: pa.Schema) -> Any:
    """The Spark ``StructType`` of an Arrow schema (needs pyspark)."""
    from pyspark.sql.pandas.types import from_arrow_schema
    return from_arrow_schema(schema)
