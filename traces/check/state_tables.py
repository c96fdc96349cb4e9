"""The state ``xspec explain`` and ``xspec view`` show, as rows of tables: keys, stream entries,
groups, pending entries, consumers, and the clients that are blocked or inside a transaction."""

from __future__ import annotations

from typing import Any

from xspec.models import Server
from xspec.models import lag as lag_rules
from xspec.models.state import Stream, type_name, value_size

Snapshot = dict[tuple[Any, ...], tuple[Any, ...]]
"""{row key: column values}; a row key starts with its table's name."""


TABLES: dict[str, tuple[str, ...]] = {
    "keys": ("type", "length", "last-generated-id", "entries-added", "max-deleted-id", "first-id"),
    "entries": ("fields",),
    "groups": ("last-delivered-id", "entries-read", "lag", "pending", "consumers"),
    "pending": ("owner", "delivery-time", "deliveries"),
    "consumers": ("pending", "seen-time"),
    "clients": ("blocked-on", "command", "deadline", "transaction"),
}
"""Each table's value columns. A row is keyed ``(table, ...)``: keys by (db, key), entries by
(db, key, id), groups by (db, key, group), pending entries by (db, key, group, id), consumers
by (db, key, group, name), clients by (client id,)."""

KEY_COLUMNS: dict[str, tuple[str, ...]] = {
    "keys": ("key",), "entries": ("key", "id"), "groups": ("key", "group"),
    "pending": ("key", "group", "id"), "consumers": ("key", "group", "consumer"), "clients": ("client",),
}
TITLES = {"keys": "Keys", "entries": "Entries", "groups": "Groups", "pending": "Pending entries (PEL)",
          "consumers": "Consumers", "clients": "Clients"}
TIME_COLUMNS = {"delivery-time": "idle", "seen-time": "seen", "deadline": "deadline"}
"""Absolute times, shown relative to the step's clock (idle = now - delivery time)."""


def text(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


class EntryRows:
    """The ``entries`` rows of each stream, kept between snapshots while the stream's entries cannot
    have changed.

    A stream's entries change only by adding (which counts in ``entries_added``) or removing
    (which changes their number), or when the entries' container or the stream is replaced; the
    fields of an entry never change. So rows built for a stream stay right while the same stream
    object has the same container, as many entries, the same ``entries_added`` and the same
    metadata; the cache keeps the objects alive, so they are compared by identity.
    """

    def __init__(self) -> None:
        self.kept: dict[tuple[int, bytes], tuple[Stream, Any, tuple[Any, ...], list[tuple[tuple[Any, ...], tuple[Any, ...]]]]] = {}

    def rows(self, db: int, key: bytes, s: Stream) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        """The entries rows of stream ``s`` at ``key`` of ``db``."""
        mark = (len(s.entries), s.entries_added, s.last_id, s.max_deleted_id, s.first_id)
        found = self.kept.get((db, key))
        if found is not None and found[0] is s and found[1] is s.entries and found[2] == mark:
            return found[3]
        built = [(("entries", db, key, entry_id), (fields,)) for entry_id, fields in s.entries.items()]
        self.kept[(db, key)] = (s, s.entries, mark, built)
        return built


def state_rows(server: Server, entries: EntryRows | None = None) -> Snapshot:
    """The state of ``server`` that explain shows, as {row key: column values}.

    ``entries``: a cache of the streams' entries rows, for a caller that snapshots one server
    again and again (explain, between the lines of a command)."""
    rows: Snapshot = {}
    for db, keys in enumerate(server.dbs):
        for key, value in keys.items():
            if not isinstance(value, Stream):
                rows[("keys", db, key)] = (type_name(value), value_size(value), None, None, None, None)
                continue
            s = value
            rows[("keys", db, key)] = ("stream", s.length, str(s.last_id), s.entries_added,
                                       str(s.max_deleted_id), str(s.first_id))
            if entries is not None:
                rows.update(entries.rows(db, key, s))
            else:
                for entry_id, fields in s.entries.items():
                    rows[("entries", db, key, entry_id)] = (fields,)
            for gname, g in s.groups.items():
                rows[("groups", db, key, gname)] = (str(g.last_id), None if g.entries_read == -1 else g.entries_read,
                                                    lag_rules.group_lag(s, g), len(g.pel), len(g.consumers))
                owners = {c.name: text(c.name) for c in g.consumers.values()}  # decoded once per group
                for entry_id, nack in g.pel.items():
                    c = nack.consumer
                    owner = None if c is None else owners.get(c.name) or text(c.name)
                    rows[("pending", db, key, gname, entry_id)] = (owner, nack.delivery_time, nack.delivery_count)
                for cname, c in g.consumers.items():
                    rows[("consumers", db, key, gname, cname)] = (len(c.pel), c.seen_time)
    for cid, client in sorted(server.clients.items()):
        b = client.blocked
        transaction = None
        if client.in_multi:
            transaction = f"MULTI, {len(client.multi_queue)} queued" + (" (will abort)" if client.multi_error else "")
        elif client.watched:
            transaction = "WATCH " + " ".join(text(k) for _, k in client.watched) + (
                " (touched)" if client.dirty_cas else "")
        if b is None and transaction is None:
            continue
        blocked_on = None if b is None else " ".join(text(k) for k in dict.fromkeys(b.keys))
        command = None if b is None else " ".join(text(a) for a in b.argv)
        deadline = None if b is None else b.deadline
        rows[("clients", cid)] = (blocked_on, command, deadline, transaction)
    return rows


__all__ = ["EntryRows", "KEY_COLUMNS", "TABLES", "TIME_COLUMNS", "TITLES", "Snapshot", "state_rows", "text"]
