"""The delivery ledger and its anomalies (spec/audit.md, "The delivery ledger" and "Anomalies").

:class:`LedgerFold` reads the events of one trace in order (rows of the events table) and keeps,
for every stream key K, group G and entry ID E, what happened to E in G: who added it and when,
every delivery (consumer, time, how, delivery count after it), every XACK (with the consumer it
is attributed to and whether its count included E), its removal, its dead-lettering, and its
state at the end. :func:`anomalies_of` derives the anomalies from one ledger row alone, so both
steps run the same on Arrow batches in Spark and in process. Nothing here needs Spark.

The ledger is derived from the replies clients received, never from the model: a trace is read
the way its clients saw it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from xspec.audit.commands import op_name
from xspec.audit.ingest import reply_payload
from xspec.audit.nodes import NodeViews, id_order, xadd_parts
from xspec.spec.resp import Array, Int, from_json, to_json

ANOMALY_KINDS = ("lost", "stuck", "poison", "double-processing", "deleted-while-pending", "redelivered-after-ack",
                 "phantom", "id-reuse")
"""The anomalies, in the order spec/anomalies.md lists them (the last two from trace/2 traces only)."""

DEFAULT_STUCK_AFTER_MS = 60_000
DEFAULT_POISON_DELIVERIES = 5

LEDGER_INPUT = ("trace", "event", "ev", "node", "primary", "replica", "client", "t0", "t1", "t", "now", "cmd", "op",
                "text", "answers", "keys", "reply_json", "reply_type", "reply_int", "reply_error", "reply_ids",
                "entries")
"""The events-table columns the fold reads."""


def _reply_time(row: dict[str, Any]) -> int | None:
    """When the reply was received: ``t1`` of a call, ``t`` of a recv; ``now`` (as µs) without times."""
    t = row["t1"] if row["ev"] == "call" else row["t"]
    if t is None and row["now"] is not None:
        return int(row["now"]) * 1000
    return t


def _times(row: dict[str, Any]) -> Iterator[int]:
    any_wall = False
    for name in ("t0", "t1", "t"):
        v = row[name]
        if v is not None:
            any_wall = True
            yield v
    if not any_wall and row["now"] is not None:
        yield int(row["now"]) * 1000


@dataclass
class Entry:
    """The life of entry E of stream K in group G (one ledger row)."""

    key: bytes
    group: bytes
    id: str
    added_event: int | None = None
    added_client: int | None = None
    added_time: int | None = None
    group_at_add: bool = False
    deliveries: list[dict[str, Any]] = field(default_factory=list)
    acks: list[dict[str, Any]] = field(default_factory=list)
    removed_event: int | None = None
    removed_how: str | None = None
    removed_time: int | None = None
    removed_pending: bool = False
    dead_letter: tuple[bytes, str, int] | None = None
    pending: bool = False
    owner: bytes | None = None
    count: int = 0
    pending_time: int | None = None
    acked: bool = False


@dataclass
class _Connection:
    multi: list[tuple[list[bytes], str | None]] | None = None  # queued commands while in MULTI
    consumer: dict[tuple[bytes, bytes], bytes] = field(default_factory=dict)  # (K, G) -> consumer last used
    sends: dict[int, dict[str, Any]] = field(default_factory=dict)  # outstanding sends by event
    delivered: dict[tuple[bytes, bytes, str], tuple[bytes, ...]] = field(default_factory=dict)  # not yet acked
    by_payload: dict[tuple[bytes, ...], set[tuple[bytes, bytes, str]]] = field(default_factory=dict)
    dead_letter: dict[tuple[bytes, bytes, str], tuple[bytes, str, int]] = field(default_factory=dict)


@dataclass
class _Stream:
    entries: dict[str, tuple[bytes, ...]] = field(default_factory=dict)  # insertion order = ID order
    groups: set[bytes] = field(default_factory=set)
    added: dict[str, tuple[int, int | None, int | None]] = field(default_factory=dict)  # id -> event, client, time


def _group_read_args(cmd: list[bytes]) -> tuple[bytes | None, bytes | None, bool, dict[bytes, bytes]]:
    """(group, consumer, NOACK, key -> ID argument) of an XREADGROUP."""
    group = consumer = None
    noack = False
    ids: dict[bytes, bytes] = {}
    i = 1
    while i < len(cmd):
        a = cmd[i].upper()
        if a == b"GROUP" and i + 2 < len(cmd):
            group, consumer = cmd[i + 1], cmd[i + 2]
            i += 3
        elif a in (b"COUNT", b"BLOCK"):
            i += 2
        elif a == b"NOACK":
            noack = True
            i += 1
        elif a == b"STREAMS":
            rest = cmd[i + 1:]
            half = len(rest) // 2
            ids = dict(zip(rest[:half], rest[half:], strict=False))
            break
        else:
            i += 1
    return group, consumer, noack, ids


def _retrycount(cmd: list[bytes]) -> int | None:
    for i, a in enumerate(cmd[:-1]):
        if a.upper() == b"RETRYCOUNT":
            try:
                return int(cmd[i + 1])
            except ValueError:
                return None
    return None


class LedgerFold:
    """The ledger of one trace, built event by event (call :meth:`feed` in file order, then :meth:`rows`)."""

    def __init__(self, trace: str, *, times_given: bool = False) -> None:
        self.trace = trace
        self.times_given = times_given  # the caller reports the trace's largest timestamp (note_time)
        self.conns: dict[int, _Connection] = {}
        self.streams: dict[bytes, _Stream] = {}
        self.rows: dict[tuple[bytes, bytes, str], Entry] = {}
        self.groups_of: dict[tuple[bytes, str], set[bytes]] = {}  # (K, E) -> the groups with a row for E
        self.end: int | None = None
        self.views: NodeViews | None = None  # a trace/2 trace: what each node was seen to hold

    # -- events -----------------------------------------------------------------------------
    def feed(self, row: dict[str, Any]) -> None:
        ev = row["ev"]
        if ev == "header":
            header = json.loads(row["text"]) if row["text"] else {}
            if isinstance(header, dict) and isinstance(header.get("nodes"), dict):
                self.views = NodeViews(header["nodes"])
            return
        if not self.times_given:
            for t in _times(row):
                if self.end is None or t > self.end:
                    self.end = t
        c = row["client"]
        if ev == "call":
            self._reply(c, row["cmd"], row, row["node"])
        elif ev == "send":
            if row["cmd"] is not None:
                self._conn(c).sends[row["event"]] = row
        elif ev == "recv":
            conn = self._conn(c)
            sent = conn.sends.pop(row["answers"], None) if row["answers"] is not None else None
            if sent is not None:
                self._reply(c, sent["cmd"], row, sent["node"])
        elif ev == "close":
            self.conns.pop(c, None)
        elif self.views is not None:
            self.views.node_event(row)

    def note_time(self, end: int | None) -> None:
        """The largest timestamp of events the fold is not fed (see :func:`xspec.audit.batches.ledger_batches`)."""
        if end is not None and (self.end is None or end > self.end):
            self.end = end

    def used_consumer(self, c: int, keys: list[bytes], group: bytes, consumer: bytes) -> None:
        """A read or claim on ``keys`` for ``group`` by ``consumer`` that replied without delivering anything: all it
        does to the ledger is name the consumer this connection uses (XACK attribution)."""
        conn = self.conns.get(c)
        if conn is None:
            conn = self.conns[c] = _Connection()
        for k in keys:
            conn.consumer[(k, group)] = consumer

    def _conn(self, c: int) -> _Connection:
        conn = self.conns.get(c)
        if conn is None:
            conn = self.conns[c] = _Connection()
        return conn

    def _stream(self, key: bytes) -> _Stream:
        s = self.streams.get(key)
        if s is None:
            s = self.streams[key] = _Stream()
        return s

    def _has_groups(self, cmd: list[bytes]) -> bool:
        s = self.streams.get(cmd[1]) if len(cmd) > 1 else None
        return s is not None and bool(s.groups)

    def _entry(self, key: bytes, group: bytes, entry_id: str) -> Entry:
        k = (key, group, entry_id)
        e = self.rows.get(k)
        if e is None:
            e = self.rows[k] = Entry(key, group, entry_id)
            self.groups_of.setdefault((key, entry_id), set()).add(group)
            added = self.streams.get(key, _Stream()).added.get(entry_id)
            if added is not None:
                e.added_event, e.added_client, e.added_time = added
        return e

    def _reply(self, c: int, cmd: list[bytes], reply_row: dict[str, Any], node: str | None = None) -> None:
        """Command ``cmd`` of client ``c`` got the reply of ``reply_row`` (the command has executed)."""
        op = reply_row["op"] or op_name(cmd)
        if op is None:
            return
        conn = self._conn(c)
        event = reply_row["event"]
        time = _reply_time(reply_row)
        if self.views is not None and conn.multi is None and op not in ("MULTI", "EXEC", "DISCARD"):
            self.views.command(node, c, cmd, op, reply_row, event, time, self._has_groups(cmd))
        if conn.multi is not None and op not in ("EXEC", "DISCARD", "MULTI"):
            if reply_row["reply_type"] == "simple":  # QUEUED: it runs with EXEC
                conn.multi.append((cmd, op))
            return
        if op == "MULTI":
            if reply_row["reply_type"] == "simple":
                conn.multi = []
            return
        if op in ("EXEC", "DISCARD"):
            queued, conn.multi = conn.multi, None
            if op == "EXEC" and queued and reply_row["reply_type"] == "array":
                replies = from_json(json.loads(reply_row["reply_json"]))
                assert isinstance(replies, Array)
                for (qcmd, qop), sub in zip(queued, replies.items, strict=False):
                    ids, entries = reply_payload(qop, qcmd, sub)
                    sub_row = {"reply_type": next(iter(_json_kind(sub))), "reply_int": sub.value
                               if isinstance(sub, Int) else None, "reply_ids": ids, "entries": entries}
                    if self.views is not None:
                        self.views.command(node, c, qcmd, qop or "", {**sub_row, "reply_error": None}, event,
                                           time, self._has_groups(qcmd))
                    self._apply(c, conn, qcmd, qop or "", sub_row, event, time)
            return
        if reply_row["reply_error"] is not None or reply_row["reply_type"] == "error":
            return
        self._apply(c, conn, cmd, op, reply_row, event, time)

    # -- commands ---------------------------------------------------------------------------
    def _apply(self, c: int, conn: _Connection, cmd: list[bytes], op: str, r: dict[str, Any], event: int,
               time: int | None) -> None:
        if r["reply_type"] in ("error", "blob_error"):
            return
        key = cmd[1] if len(cmd) > 1 else b""
        if op == "XADD":
            self._xadd(c, conn, cmd, r, event, time)
        elif op == "XGROUP CREATE" and len(cmd) > 3:
            s = self._stream(cmd[2])
            s.groups.add(cmd[3])
        elif op == "XGROUP DESTROY" and len(cmd) > 3 and r["reply_int"]:
            s = self._stream(cmd[2])
            s.groups.discard(cmd[3])
            for e in self._group_rows(cmd[2], cmd[3]):
                e.pending = False
        elif op == "XGROUP DELCONSUMER" and len(cmd) > 4:
            for e in self._group_rows(cmd[2], cmd[3]):
                if e.pending and e.owner == cmd[4]:
                    e.pending = False
        elif op == "XREADGROUP":
            self._xreadgroup(c, conn, cmd, r, event, time)
        elif op == "XCLAIM" and len(cmd) > 5:
            self._claim(c, conn, key, cmd[2], cmd[3], r, event, time, "XCLAIM", _retrycount(cmd),
                        any(a.upper() == b"JUSTID" for a in cmd[5:]))
        elif op == "XAUTOCLAIM" and len(cmd) > 5:
            self._claim(c, conn, key, cmd[2], cmd[3], r, event, time, "XAUTOCLAIM", None,
                        any(a.upper() == b"JUSTID" for a in cmd[6:]))
        elif op == "XACK" and len(cmd) > 3:
            self._xack(c, conn, key, cmd[2], [a.decode("latin-1") for a in cmd[3:]], r["reply_int"] or 0, event,
                       time)
        elif op == "XDEL" and len(cmd) > 2:
            if key in self.streams:
                for a in cmd[2:]:
                    self._remove(key, a.decode("latin-1"), "XDEL", event, time)
        elif op == "XTRIM":
            self._remove_oldest(key, r["reply_int"] or 0, "XTRIM", event, time)
        elif op in ("DEL", "UNLINK"):
            for k in cmd[1:]:
                self._drop_key(k, op, event, time)
        elif op in ("FLUSHALL", "FLUSHDB"):
            for k in list(self.streams):
                self._drop_key(k, op, event, time)

    def _group_rows(self, key: bytes, group: bytes) -> Iterable[Entry]:
        return [e for (k, g, _), e in self.rows.items() if k == key and g == group]

    def _xadd(self, c: int, conn: _Connection, cmd: list[bytes], r: dict[str, Any], event: int,
              time: int | None) -> None:
        ids = r["reply_ids"]
        if not ids or len(cmd) < 2:
            return
        key, entry_id = cmd[1], ids[0]
        kind, threshold, exact, _, fields = xadd_parts(cmd)
        s = self._stream(key)
        payload = tuple(fields)
        s.entries[entry_id] = payload
        s.added[entry_id] = (event, c, time)
        for g in s.groups:
            e = self._entry(key, g, entry_id)
            e.group_at_add = True
        # dead-lettering: the payload of an entry this connection received and has not acked, added elsewhere
        for origin in conn.by_payload.get(payload, ()):
            if origin[0] != key:
                conn.dead_letter[origin] = (key, entry_id, event)
        if kind is not None and exact and threshold is not None:
            if kind == "MAXLEN":
                try:
                    excess = len(s.entries) - int(threshold)
                except ValueError:
                    excess = 0
                self._remove_oldest(key, excess, "XADD", event, time)
            else:
                floor = id_order(threshold)
                old = [i for i in s.entries if id_order(i) < floor]
                for i in old:
                    self._remove(key, i, "XADD", event, time)

    def _deliver(self, c: int, conn: _Connection, key: bytes, group: bytes, consumer: bytes, ent: dict[str, Any],
                 event: int, time: int | None, how: str, count: int | None, pend: bool) -> None:
        e = self._entry(key, group, ent["id"])
        if pend:
            e.pending = True
            e.owner = consumer
            e.pending_time = time
        e.count = count if count is not None else e.count + 1
        e.deliveries.append({"event": event, "client": c, "consumer": consumer, "time": time, "how": how,
                             "count": e.count})
        payload = tuple(ent["fields"])
        k = (key, group, ent["id"])
        old = conn.delivered.get(k)
        if old is not None:
            conn.by_payload.get(old, set()).discard(k)
        conn.delivered[k] = payload
        conn.by_payload.setdefault(payload, set()).add(k)

    def _xreadgroup(self, c: int, conn: _Connection, cmd: list[bytes], r: dict[str, Any], event: int,
                    time: int | None) -> None:
        group, consumer, noack, ids = _group_read_args(cmd)
        if group is None or consumer is None:
            return
        for k in ids:
            conn.consumer[(k, group)] = consumer
        for ent in r["entries"] or ():
            if ent["fields"] is None:
                continue  # [E, nil]: the payload was deleted; not a delivery
            key = ent["key"]
            arg = ids.get(key, b">")
            if arg == b">":
                self._deliver(c, conn, key, group, consumer, ent, event, time, ">", 1, not noack)
            else:
                self._deliver(c, conn, key, group, consumer, ent, event, time, "history", None, True)

    def _claim(self, c: int, conn: _Connection, key: bytes, group: bytes, consumer: bytes, r: dict[str, Any],
               event: int, time: int | None, how: str, retry: int | None, justid: bool) -> None:
        conn.consumer[(key, group)] = consumer
        if justid:
            for entry_id in r["reply_ids"] or ():
                e = self._entry(key, group, entry_id)
                e.pending = True
                e.owner = consumer
                if retry is not None:
                    e.count = retry
                if e.pending_time is None or not e.deliveries:
                    e.pending_time = time
            return
        claimed = set()
        for ent in r["entries"] or ():
            if ent["fields"] is None:
                continue
            claimed.add(ent["id"])
            self._deliver(c, conn, key, group, consumer, ent, event, time, how, retry, True)
        if how == "XAUTOCLAIM":  # 7.0+: the IDs it found deleted are dropped from the PEL
            for entry_id in r["reply_ids"] or ():
                if entry_id not in claimed:
                    dropped = self.rows.get((key, group, entry_id))
                    if dropped is not None:
                        dropped.pending = False

    def _xack(self, c: int, conn: _Connection, key: bytes, group: bytes, ids: list[str], count: int, event: int,
              time: int | None) -> None:
        distinct = list(dict.fromkeys(ids))
        if count >= len(distinct):
            included = set(distinct)
        elif count <= 0:
            included = set()
        else:
            pend = [i for i in distinct if (e := self.rows.get((key, group, i))) is not None and e.pending]
            included = set(pend[:count])
        consumer = conn.consumer.get((key, group))
        for entry_id in distinct:
            e = self._entry(key, group, entry_id)
            e.acks.append({"event": event, "client": c, "consumer": consumer, "time": time, "reply": count,
                           "included": entry_id in included})
            if entry_id in included:
                e.acked = True
                e.pending = False
            k = (key, group, entry_id)
            dl = conn.dead_letter.pop(k, None)
            if dl is not None and e.dead_letter is None:
                e.dead_letter = dl
            payload = conn.delivered.pop(k, None)
            if payload is not None:
                conn.by_payload.get(payload, set()).discard(k)

    # -- removal ----------------------------------------------------------------------------
    def _remove(self, key: bytes, entry_id: str, how: str, event: int, time: int | None) -> None:
        s = self.streams.get(key)
        if s is None or entry_id not in s.entries:
            return
        del s.entries[entry_id]
        if self.views is not None:
            self.views.removed(key, entry_id, how, event, time)
        groups = set(s.groups) | self.groups_of.get((key, entry_id), set())
        for g in groups:
            e = self.rows.get((key, g, entry_id))
            if e is None:
                if g not in s.groups:
                    continue
                e = self._entry(key, g, entry_id)
            if e.removed_event is None:
                e.removed_event, e.removed_how, e.removed_time = event, how, time
                e.removed_pending = e.pending

    def _remove_oldest(self, key: bytes, n: int, how: str, event: int, time: int | None) -> None:
        s = self.streams.get(key)
        if s is None or n <= 0:
            return
        for entry_id in list(s.entries)[:n]:
            self._remove(key, entry_id, how, event, time)

    def _drop_key(self, key: bytes, how: str, event: int, time: int | None) -> None:
        s = self.streams.get(key)
        if s is None:
            return
        for entry_id in list(s.entries):
            self._remove(key, entry_id, how, event, time)
        for (k, _, _), e in self.rows.items():
            if k == key:
                e.pending = False
        s.groups.clear()

    # -- output -----------------------------------------------------------------------------
    def ledger_rows(self) -> list[dict[str, Any]]:
        """The ledger of the trace, one row per (K, G, E), sorted by key, group and ID (and, for a trace/2
        trace, one row per (K, E) with a null group: the entry as every reader saw it)."""
        out = []
        gone = self.views.gone() if self.views is not None else {}
        for (key, group, entry_id) in sorted(self.rows, key=lambda k: (k[0], k[1], id_order(k[2]), k[2])):
            e = self.rows[(key, group, entry_id)]
            s = self.streams.get(key)
            vanished = gone.get((key, entry_id), False)
            if e.pending:
                state = "pending"
            elif e.acked:
                state = "acked"
            elif e.deliveries:
                state = "delivered"
            else:
                state = "undelivered"
            out.append({
                "trace": self.trace, "key": key, "group": group, "id": entry_id,
                "added_event": e.added_event, "added_client": e.added_client, "added_time": e.added_time,
                "group_at_add": e.group_at_add, "deliveries": e.deliveries, "acks": e.acks,
                "removed_event": e.removed_event, "removed_how": e.removed_how, "removed_time": e.removed_time,
                "removed_pending": e.removed_pending,
                "dead_letter_key": e.dead_letter[0] if e.dead_letter else None,
                "dead_letter_id": e.dead_letter[1] if e.dead_letter else None,
                "dead_letter_event": e.dead_letter[2] if e.dead_letter else None,
                "state": state, "owner": e.owner if e.pending else None,
                "pending_time": e.pending_time if e.pending else None,
                "in_stream": s is not None and entry_id in s.entries and not vanished, "end_time": self.end,
                "read_event": None, "seen_event": None, "payload_events": None, "gone": vanished,
            })
        if self.views is not None:
            out += self.views.stream_rows(self.trace, {k: v.entries for k, v in self.streams.items()}, gone,
                                          self.end)
        return out


def _json_kind(r: Any) -> dict[str, Any]:
    return to_json(r)  # type: ignore[no-any-return]


def ledger_of(trace: str, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ledger rows of one trace from its events-table rows (in event order)."""
    fold = LedgerFold(trace)
    for row in rows:
        fold.feed(row)
    return fold.ledger_rows()


# ---------------------------------------------------------------------------------------------
# Anomalies


def anomalies_of(row: dict[str, Any], stuck_after_ms: int = DEFAULT_STUCK_AFTER_MS,
                 poison_deliveries: int = DEFAULT_POISON_DELIVERIES) -> list[dict[str, Any]]:
    """The anomalies one ledger row shows (spec/audit.md, "Anomalies")."""
    out: list[dict[str, Any]] = []
    deliveries = row["deliveries"] or []
    acks = row["acks"] or []

    def anomaly(kind: str, consumers: Iterable[bytes | None], events: Iterable[int | None]) -> None:
        out.append({"kind": kind, "trace": row["trace"], "key": row["key"], "group": row["group"], "id": row["id"],
                    "consumers": sorted({x for x in consumers if x is not None}),
                    "events": sorted({x for x in events if x is not None})})

    if row["group"] is None:  # a trace/2 entry as every reader saw it (spec/audit.md, "trace/2")
        if row["gone"] and row["removed_event"] is None:
            if row["read_event"] is not None:
                anomaly("phantom", [], [row["read_event"], row["added_event"]])
            elif row["added_event"] is not None and not row["group_at_add"]:
                anomaly("lost", [], [row["added_event"]])
        if row["payload_events"]:
            anomaly("id-reuse", [], [row["seen_event"], *row["payload_events"]])
        return out
    if row["added_event"] is not None and row["group_at_add"] and not deliveries and not row["in_stream"]:
        anomaly("lost", [], [row["added_event"], row["removed_event"]])
    if row["state"] == "pending" and row["end_time"] is not None:
        last = deliveries[-1] if deliveries else None
        # the time of E's last delivery in G; an entry made pending without one (XCLAIM FORCE JUSTID) counts
        # from when it became pending
        since = last["time"] if last is not None else row["pending_time"]
        if since is not None and row["end_time"] - since >= stuck_after_ms * 1000:
            anomaly("stuck", [row["owner"]], [last["event"] if last else None])
    included = [a for a in acks if a["included"]]
    if len(deliveries) >= poison_deliveries and not included:
        anomaly("poison", [d["consumer"] for d in deliveries], [d["event"] for d in deliveries])
    processed: dict[bytes, list[int]] = {}
    for d in deliveries:
        later = [a for a in acks if a["consumer"] == d["consumer"] and a["event"] > d["event"]]
        if later and d["consumer"] is not None:
            processed.setdefault(d["consumer"], []).extend([d["event"], later[0]["event"]])
    if len(processed) >= 2:
        anomaly("double-processing", processed, [e for evs in processed.values() for e in evs])
    if row["removed_pending"]:
        anomaly("deleted-while-pending", [d["consumer"] for d in deliveries[-1:]],
                [*(d["event"] for d in deliveries[-1:]), row["removed_event"]])
    if included:
        first_ack = min(a["event"] for a in included)
        again = [d for d in deliveries if d["event"] > first_ack]
        if again:
            anomaly("redelivered-after-ack", [d["consumer"] for d in again], [first_ack, *(d["event"] for d in again)])
    return out


def anomalies_from(rows: Iterable[dict[str, Any]], stuck_after_ms: int = DEFAULT_STUCK_AFTER_MS,
                   poison_deliveries: int = DEFAULT_POISON_DELIVERIES) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in rows:
        out.extend(anomalies_of(row, stuck_after_ms, poison_deliveries))
    return out
