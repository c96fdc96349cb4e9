"""The anomalies of a batch of ledger rows, computed column by column (Arrow compute and numpy).

:func:`anomaly_table` gives exactly the rows :func:`xspec.audit.ledger.anomalies_of` gives for each ledger
row, in the same order (row by row, and within a row in the order of
:data:`~xspec.audit.ledger.ANOMALY_KINDS`), with each anomaly's consumers and events sorted and
distinct (spec/audit.md, "Anomalies"). The deliveries and XACKs of the rows are flattened into
arrays with their row's index; every definition is then a mask over rows, or over deliveries with
their row's values broadcast, and an anomaly's consumers and events are (anomaly, value) pairs made
distinct and sorted in one pass. Rows this does not read, namely trace/2 rows without a group and
rows whose XACKs are not in event order (where "the first XACK after a delivery" in list order
could differ from the earliest one), are left to :func:`~xspec.audit.ledger.anomalies_of`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from xspec.audit.ledger import ANOMALY_KINDS, anomalies_of
from xspec.audit.schema import ANOMALIES

_KIND = {k: n for n, k in enumerate(ANOMALY_KINDS)}
_SLOTS = len(ANOMALY_KINDS)  # an anomaly's identity is row * _SLOTS + its kind's index: the output order


def _bools(a: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False), dtype=bool)


def _ints(a: pa.Array, fill: int = -1) -> np.ndarray:
    return np.asarray(pc.fill_null(a, fill).to_numpy(zero_copy_only=False), dtype=np.int64)


def _valid(a: pa.Array) -> np.ndarray:
    return _bools(pc.is_valid(a))


def _ranked(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """(the distinct values sorted, each value's rank among them, -1 for null): ranks compare as the values do
    (binary values as Python compares bytes)."""
    enc = pc.dictionary_encode(values)
    dictionary = enc.dictionary
    order = np.asarray(pc.array_sort_indices(dictionary).to_numpy(), dtype=np.int64)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = _ints(enc.indices)
    if not len(order):  # every value is null
        return dictionary, np.full(len(codes), -1, dtype=np.int64)
    return pc.take(dictionary, pa.array(order)), np.where(codes >= 0, rank[np.maximum(codes, 0)], -1)


def _lists(ids: np.ndarray, pair_ids: np.ndarray, pair_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, values) of one list per anomaly in ``ids`` (sorted): the distinct ``pair_values`` paired with it,
    sorted."""
    if len(pair_ids):
        order = np.lexsort((pair_values, pair_ids))
        pair_ids, pair_values = pair_ids[order], pair_values[order]
        new = np.concatenate([[True], (pair_ids[1:] != pair_ids[:-1]) | (pair_values[1:] != pair_values[:-1])])
        pair_ids, pair_values = pair_ids[new], pair_values[new]
    offsets = np.searchsorted(pair_ids, np.concatenate([ids, [np.iinfo(np.int64).max]]), side="left")
    return offsets.astype(np.int32), pair_values


class _Found:
    """The anomalies found so far: their identities and their (identity, consumer rank) and (identity, event)
    pairs."""

    def __init__(self) -> None:
        self.ids: list[np.ndarray] = []
        self.consumers: list[tuple[np.ndarray, np.ndarray]] = []
        self.events: list[tuple[np.ndarray, np.ndarray]] = []

    def add(self, kind: str, rows: np.ndarray) -> None:
        self.ids.append(rows * _SLOTS + _KIND[kind])

    def consumer(self, kind: str, rows: np.ndarray, ranks: np.ndarray) -> None:
        keep = ranks >= 0  # a null consumer is left out
        self.consumers.append((rows[keep] * _SLOTS + _KIND[kind], ranks[keep]))

    def event(self, kind: str, rows: np.ndarray, events: np.ndarray, valid: np.ndarray | None = None) -> None:
        keep = np.ones(len(rows), dtype=bool) if valid is None else valid
        self.events.append((rows[keep] * _SLOTS + _KIND[kind], events[keep]))


def _pairs(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return (np.concatenate([p[0] for p in parts]).astype(np.int64),
            np.concatenate([p[1] for p in parts]).astype(np.int64))


def anomaly_table(ledger: pa.RecordBatch, stuck_after_ms: int, poison_deliveries: int) -> pa.Table:
    """The ANOMALIES rows of a batch of LEDGER rows, as :func:`~xspec.audit.ledger.anomalies_of` gives them row by
    row."""
    n = ledger.num_rows
    col = ledger.column
    rows = np.arange(n, dtype=np.int64)
    deliveries, acks = col("deliveries"), col("acks")
    d_parent = np.asarray(pc.list_parent_indices(deliveries).to_numpy(), dtype=np.int64)
    a_parent = np.asarray(pc.list_parent_indices(acks).to_numpy(), dtype=np.int64)
    d_flat, a_flat = pc.list_flatten(deliveries), pc.list_flatten(acks)
    d_event, a_event = _ints(pc.struct_field(d_flat, "event")), _ints(pc.struct_field(a_flat, "event"))
    d_time, d_time_ok = _ints(pc.struct_field(d_flat, "time"), 0), _valid(pc.struct_field(d_flat, "time"))
    a_included = _bools(pc.struct_field(a_flat, "included"))
    consumer_values, ranks = _ranked(pa.concat_arrays([pc.struct_field(d_flat, "consumer"),
                                                       pc.struct_field(a_flat, "consumer"), col("owner")]))
    d_cons, a_cons, owner = ranks[: len(d_event)], ranks[len(d_event): len(d_event) + len(a_event)], \
        ranks[len(d_event) + len(a_event):]

    # rows left to anomalies_of: trace/2 rows without a group, and rows whose XACKs are not in event order
    python = ~_valid(col("group"))
    python[d_parent[~_valid(pc.struct_field(d_flat, "event"))]] = True
    python[a_parent[~_valid(pc.struct_field(a_flat, "event"))]] = True
    if len(a_event) > 1:
        back = (a_parent[1:] == a_parent[:-1]) & (a_event[1:] < a_event[:-1])
        python[a_parent[1:][back]] = True
    here = ~python
    d_here, a_here = here[d_parent], here[a_parent]

    d_n = np.bincount(d_parent, minlength=n)
    d_end = np.cumsum(d_n)
    last = np.maximum(d_end - 1, 0)  # the row's last delivery (when it has one)
    has_last = d_n > 0
    incl = a_included & a_here
    n_included = np.bincount(a_parent[incl], minlength=n)
    first_ack = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_ack, a_parent[incl], a_event[incl])

    found = _Found()
    # lost: added with the group there, never delivered, no longer in the stream
    added, removed = _ints(col("added_event")), _ints(col("removed_event"))
    added_ok, removed_ok = _valid(col("added_event")), _valid(col("removed_event"))
    lost = rows[here & added_ok & _bools(col("group_at_add")) & (d_n == 0) & ~_bools(col("in_stream"))]
    found.add("lost", lost)
    found.event("lost", lost, added[lost])
    found.event("lost", lost, removed[lost], removed_ok[lost])

    # stuck: pending at the end, and the end minus the last delivery's time (or when it became pending) is too long
    end, end_ok = _ints(col("end_time"), 0), _valid(col("end_time"))
    pending_time, pending_ok = _ints(col("pending_time"), 0), _valid(col("pending_time"))
    since = np.where(has_last, d_time[last] if len(d_time) else 0, pending_time)
    since_ok = np.where(has_last, d_time_ok[last] if len(d_time) else False, pending_ok)
    pending = _bools(pc.equal(col("state"), "pending"))
    stuck = rows[here & pending & end_ok & since_ok & (end - since >= stuck_after_ms * 1000)]
    found.add("stuck", stuck)
    found.consumer("stuck", stuck, owner[stuck])
    with_last = stuck[has_last[stuck]]
    found.event("stuck", with_last, d_event[last[with_last]])

    # poison: delivered at least poison_deliveries times, never acked
    poison = here & (d_n >= poison_deliveries) & (n_included == 0)
    found.add("poison", rows[poison])
    in_poison = poison[d_parent]
    found.consumer("poison", d_parent[in_poison], d_cons[in_poison])
    found.event("poison", d_parent[in_poison], d_event[in_poison])

    # double-processing: two consumers each received E and each sent an XACK for it after that delivery; the XACK
    # paired with a delivery is the consumer's first one after it (the earliest: XACKs are in event order here)
    named = np.flatnonzero(d_here & (d_cons >= 0))
    if len(named) and len(a_event):
        width = int(max(d_cons.max(initial=0), a_cons.max(initial=0))) + 2
        # (row, consumer) as a small number, so that (it, event) fits one int64 key
        both = np.unique(np.concatenate([a_parent * width + a_cons + 1, d_parent[named] * width + d_cons[named] + 1]),
                         return_inverse=True)[1].astype(np.int64)
        a_key = both[: len(a_event)] << 32 | a_event
        a_order = np.argsort(a_key, kind="stable")
        a_sorted = a_key[a_order]
        seg = both[len(a_event):] << 32
        at = np.searchsorted(a_sorted, seg | d_event[named], side="right")
        hit = at < len(a_sorted)
        hit[hit] = (a_sorted[at[hit]] >> 32) == (seg[hit] >> 32)
        served, ack_of = named[hit], a_order[at[hit]]
        pair_row, pair_cons = d_parent[served], d_cons[served]
        width = int(d_cons.max(initial=0)) + 1
        distinct = np.unique(pair_row * width + pair_cons)
        per_row = np.bincount(distinct // width, minlength=n)
        double = rows[per_row >= 2]
        found.add("double-processing", double)
        keep = per_row[pair_row] >= 2
        found.consumer("double-processing", pair_row[keep], pair_cons[keep])
        found.event("double-processing", pair_row[keep], d_event[served[keep]])
        found.event("double-processing", pair_row[keep], a_event[ack_of[keep]])

    # deleted-while-pending: removed while pending; the last delivery's consumer and event, and the removal
    gone = rows[here & _bools(col("removed_pending"))]
    found.add("deleted-while-pending", gone)
    with_last = gone[has_last[gone]]
    found.consumer("deleted-while-pending", with_last, d_cons[last[with_last]])
    found.event("deleted-while-pending", with_last, d_event[last[with_last]])
    found.event("deleted-while-pending", gone, removed[gone], removed_ok[gone])

    # redelivered-after-ack: a delivery after the first XACK whose count included E
    again = d_here & (n_included[d_parent] > 0) & (d_event > first_ack[d_parent])
    redelivered = np.unique(d_parent[again])
    found.add("redelivered-after-ack", redelivered)
    found.consumer("redelivered-after-ack", d_parent[again], d_cons[again])
    found.event("redelivered-after-ack", redelivered, first_ack[redelivered])
    found.event("redelivered-after-ack", d_parent[again], d_event[again])

    ids = np.sort(np.concatenate(found.ids)) if found.ids else np.zeros(0, np.int64)
    c_off, c_rank = _lists(ids, *_pairs(found.consumers))
    e_off, e_values = _lists(ids, *_pairs(found.events))
    where = pa.array(ids // _SLOTS)
    table = pa.table({
        "kind": pc.take(pa.array(ANOMALY_KINDS), pa.array(ids % _SLOTS)),
        "trace": pc.take(col("trace"), where), "key": pc.take(col("key"), where),
        "group": pc.take(col("group"), where), "id": pc.take(col("id"), where),
        "consumers": pa.ListArray.from_arrays(pa.array(c_off), pc.take(consumer_values, pa.array(c_rank))),
        "events": pa.ListArray.from_arrays(pa.array(e_off), pa.array(e_values, pa.int32())),
    }, schema=ANOMALIES)
    if not python.any():
        return table
    # the rows anomalies_of reads, merged in row order
    left = np.flatnonzero(python)
    names = ledger.schema.names
    picked = ledger.take(pa.array(left))
    out, out_ids = [], []
    for r, values in zip(left.tolist(), zip(*(c.to_pylist() for c in picked.columns), strict=True), strict=True):
        for a in anomalies_of(dict(zip(names, values, strict=True)), stuck_after_ms, poison_deliveries):
            out.append(a)
            out_ids.append(r * _SLOTS + _KIND[a["kind"]])
    if not out:
        return table
    merged = pa.concat_tables([table, pa.Table.from_pylist(out, ANOMALIES)])
    order = np.argsort(np.concatenate([ids, np.asarray(out_ids, dtype=np.int64)]), kind="stable")
    return merged.take(pa.array(order))
