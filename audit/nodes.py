"""What each node of a trace/2 trace was seen to hold (spec/audit.md, "trace/2 (several nodes)").

:class:`NodeViews` follows a multi-node trace as its clients and its replication links showed it:
every sighting of an entry (an XADD's reply, a read that returned it with its fields, a ``repl``
event carrying its XADD), every complete read of a stream on a node (``XRANGE K - +``,
``XREVRANGE K + -``, an XLEN of 0), and every event after which a node's data is not what it
was (a full resynchronisation from a primary, a restart). From them it decides which entries
are in no node's stream at the end (``gone``), and which IDs were seen with two payloads, for
the ``phantom``, ``id-reuse`` and group-less ``lost`` anomalies. A node about which the trace
says nothing after an entry's last sighting counts as still holding it: the audit may miss one
of these anomalies, never invent one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def id_order(entry_id: str) -> tuple[int, int]:
    """A stream ID as (ms, seq), for ordering."""
    ms, _, seq = entry_id.partition("-")
    try:
        return int(ms), int(seq or 0)
    except ValueError:
        return (0, 0)


# Commands that may remove a stream's entries in ways the ledger does not follow (a time to live, a
# rename, another database): a key they touch never shows a trace/2 anomaly of absence.
_UNFOLLOWED = frozenset({"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "RENAME", "RENAMENX", "MOVE", "RESTORE",
                         "COPY", "GETDEL", "GETEX", "SET", "SETEX", "PSETEX", "SORT"})
_WHOLE_SERVER = frozenset({"SWAPDB", "SELECT", "DEBUG"})
_INFINITY = 1 << 62


@dataclass
class Sighting:
    """Everything seen of entry E of stream K across the nodes (one life of the key)."""

    added: tuple[int, int | None, int | None] | None = None  # event, client, time of the XADD that replied E
    group_at_add: bool = False
    read_event: int | None = None  # the first read by a client that returned E with its fields
    payload: tuple[bytes, ...] | None = None  # the payload seen first
    seen_event: int | None = None  # where it was seen first
    payload_events: list[int] = field(default_factory=list)  # later events showing another payload
    first: int = 0  # the first sighting
    last: int = 0  # the last sighting
    removed: tuple[int, str, int | None] | None = None  # the removal command: event, how, time


def xadd_parts(cmd: list[bytes]) -> tuple[str | None, str | None, bool, bytes | None, list[bytes]]:
    """(trim kind MAXLEN/MINID, threshold, exact, ID argument, fields) of an XADD."""
    i, n = 2, len(cmd)
    kind = threshold = None
    exact = True
    while i < n:
        a = cmd[i].upper()
        if a == b"NOMKSTREAM":
            i += 1
        elif a in (b"MAXLEN", b"MINID"):
            kind = a.decode()
            i += 1
            if i < n and cmd[i] in (b"=", b"~"):
                exact = cmd[i] == b"="
                i += 1
            threshold = cmd[i].decode("latin-1") if i < n else None
            i += 1
        elif a == b"LIMIT":
            i += 2
        else:
            break
    return kind, threshold, exact, (cmd[i] if i < n else None), list(cmd[i + 1:])


def _keeps_data(config: dict[str, Any]) -> bool:
    """Whether a node's persistence keeps anything across a crash (RDB snapshots or an AOF)."""
    return str(config.get("save", "")).strip() != "" or str(config.get("appendonly", "no")).lower() == "yes"


class NodeViews:
    """The nodes of one trace/2 trace as its events showed them."""

    def __init__(self, nodes: dict[str, Any]) -> None:
        self.nodes = list(nodes)
        self.keeps = {n: _keeps_data(spec.get("config", {}) if isinstance(spec, dict) else {})
                      for n, spec in nodes.items()}
        self.seen: dict[tuple[bytes, str], Sighting] = {}
        self.reads: dict[tuple[str, bytes], list[tuple[int, frozenset[str]]]] = {}
        self.breaks: dict[str, list[tuple[int, str, str | None]]] = {n: [] for n in nodes}  # sync, restart, crash
        self.unfollowed: set[bytes] = set()
        self.whole_server = False
        self.approximate: dict[bytes, int] = {}  # key -> its last approximate trim

    # -- what happened ----------------------------------------------------------------------
    def node_event(self, row: dict[str, Any]) -> None:
        """A crash, restart or replication event."""
        ev, event = row["ev"], row["event"]
        if ev in ("crash", "restart") and row["node"] in self.breaks:
            self.breaks[row["node"]].append((event, ev, None))
        elif ev == "repl" and row["text"] == "full" and row["replica"] in self.breaks:
            self.breaks[row["replica"]].append((event, "sync", row["primary"]))
        elif ev == "repl" and row["text"] == "cmd" and row["cmd"] and len(row["cmd"]) > 2 \
                and row["cmd"][0].upper() == b"XADD":
            _, _, _, entry_id, fields = xadd_parts(row["cmd"])
            if entry_id is not None:
                self._sighting(row["cmd"][1], entry_id.decode("latin-1"), tuple(fields), event)

    def command(self, node: str | None, c: int | None, cmd: list[bytes], op: str, r: dict[str, Any], event: int,
                time: int | None, has_groups: bool) -> None:
        """Command ``cmd`` ran on ``node`` and replied ``r`` (called before the ledger applies it)."""
        if r["reply_error"] is not None or r["reply_type"] in ("error", "blob_error"):
            return
        if op == "XADD" and r["reply_ids"] and len(cmd) > 1:
            key, entry_id = cmd[1], r["reply_ids"][0]
            s = self._sighting(key, entry_id, tuple(xadd_parts(cmd)[4]), event)
            s.removed = None  # added again: a new life of E
            s.added = (event, c, time)
            s.group_at_add = has_groups
            if not xadd_parts(cmd)[2]:
                self.approximate[key] = event
        for ent in r["entries"] or ():
            if ent["fields"] is not None and ent["key"] is not None:
                s = self._sighting(ent["key"], ent["id"], tuple(ent["fields"]), event)
                if s.read_event is None:
                    s.read_event = event
        if node is not None and len(cmd) > 1:
            complete: frozenset[str] | None = None
            if (op == "XRANGE" and cmd[2:] == [b"-", b"+"]) or (op == "XREVRANGE" and cmd[2:] == [b"+", b"-"]):
                complete = frozenset(e["id"] for e in r["entries"] or ())
            elif op == "XLEN" and r["reply_int"] == 0:
                complete = frozenset()
            if complete is not None:
                self.reads.setdefault((node, cmd[1]), []).append((event, complete))
        if op in _UNFOLLOWED:
            self.unfollowed.update(cmd[1:3])
        elif op in _WHOLE_SERVER:
            self.whole_server = True

    def removed(self, key: bytes, entry_id: str, how: str, event: int, time: int | None) -> None:
        """A removal command removed E from K (as the ledger reads it)."""
        s = self.seen.get((key, entry_id))
        if s is None:
            return
        s.removed = (event, how, time)
        if how in ("DEL", "UNLINK", "FLUSHALL", "FLUSHDB"):
            s.payload = None  # the key was deleted: a later entry with this ID is a new stream's

    def _sighting(self, key: bytes, entry_id: str, payload: tuple[bytes, ...], event: int) -> Sighting:
        s = self.seen.get((key, entry_id))
        if s is None:
            s = self.seen[(key, entry_id)] = Sighting(first=event)
        if s.payload is None:
            s.payload, s.seen_event = payload, event
        elif payload != s.payload and event not in s.payload_events:
            s.payload_events.append(event)
        s.last = event
        return s

    # -- the end ----------------------------------------------------------------------------
    def _lacks_at(self, node: str, at: int, key: bytes, entry_id: str, since: int, depth: int = 0) -> bool:
        """Whether ``node`` surely did not hold E at event ``at`` (no sighting of E after ``since``)."""
        if depth > len(self.nodes) + 1:
            return False
        breaks = [b for b in self.breaks.get(node, []) if b[0] > since and b[1] != "crash"]
        start: tuple[int, str, str | None] | None = None
        end = _INFINITY
        for b in breaks:
            if b[0] <= at:
                start = b
            else:
                end = b[0]
                break
        lower = start[0] if start is not None else since
        reads = [ids for ev, ids in self.reads.get((node, key), []) if lower < ev < end]
        if reads:
            return entry_id not in reads[-1]
        if start is None:
            return False
        if start[1] == "sync" and start[2] is not None:
            return self._lacks_at(start[2], start[0], key, entry_id, since, depth + 1)
        return start[1] == "restart" and not self.keeps.get(node, True)

    def _lacks_at_end(self, node: str, key: bytes, entry_id: str, since: int) -> bool:
        last = self.breaks.get(node, [])[-1:] or [(0, "", None)]
        if last[0][1] == "crash" and last[0][0] > since:
            return not self.keeps.get(node, True)  # it holds what its persistence kept: nothing
        return self._lacks_at(node, _INFINITY - 1, key, entry_id, since)

    def gone(self) -> dict[tuple[bytes, str], bool]:
        """(K, E) -> E is in no node's stream at the end, as far as the trace shows."""
        out: dict[tuple[bytes, str], bool] = {}
        for (key, entry_id), s in self.seen.items():
            if self.whole_server or key in self.unfollowed or self.approximate.get(key, -1) >= s.first:
                out[(key, entry_id)] = False
                continue
            out[(key, entry_id)] = all(self._lacks_at_end(n, key, entry_id, s.last) for n in self.nodes)
        return out

    def stream_rows(self, trace: str, in_stream: dict[bytes, dict[str, Any]], gone: dict[tuple[bytes, str], bool],
                    end: int | None) -> list[dict[str, Any]]:
        """One ledger row per (K, E) with a null group: the entry as every reader saw it."""
        out = []
        for (key, entry_id) in sorted(self.seen, key=lambda k: (k[0], id_order(k[1]), k[1])):
            s = self.seen[(key, entry_id)]
            vanished = gone.get((key, entry_id), False)
            added = s.added or (None, None, None)
            removed = s.removed or (None, None, None)
            out.append({
                "trace": trace, "key": key, "group": None, "id": entry_id,
                "added_event": added[0], "added_client": added[1], "added_time": added[2],
                "group_at_add": s.group_at_add, "deliveries": [], "acks": [],
                "removed_event": removed[0], "removed_how": removed[1], "removed_time": removed[2],
                "removed_pending": False, "dead_letter_key": None, "dead_letter_id": None, "dead_letter_event": None,
                "state": None, "owner": None, "pending_time": None,
                "in_stream": entry_id in in_stream.get(key, {}) and not vanished, "end_time": end,
                "read_event": s.read_event, "seen_event": s.seen_event, "payload_events": s.payload_events or None,
                "gone": vanished,
            })
        return out
