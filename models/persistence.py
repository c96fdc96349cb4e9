"""What a node's persistence keeps: the RDB file and the append-only file (rules RDB-*, AOF-*).

The model keeps what a file *means*, not its bytes: an RDB file is a
:class:`Snapshot` (the databases as of the moment the snapshot was taken, and
the replication ID and offset the file records); an AOF is a base (the
snapshot or the rewrite commands its last rewrite wrote) followed by the
write units appended since, each unit one command or one MULTI/EXEC
transaction, so that a crash can cut it only at a unit boundary (rule 10).

What each RDB version keeps of a stream (RDB-3, RDB-4): version 10 (Redis 7.0)
keeps everything the model holds of a stream except the consumers' 7.2
active-time; version 9 (Redis 6.2) has no entries-added, max-deleted-entry-id,
recorded-first-entry-id or entries-read, and 6.2 reconstructs none of them,
which the 6.2 dialect never shows; version 11 (7.2+) keeps active-time too.
Clients, blocked readers and WATCHes are never kept.
"""

from __future__ import annotations

import copy
import io
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from xspec.models.clock import Instant
from xspec.models.state import HashValue, Stream, Value, ZSetValue, freeze_value
from xspec.spec.ids import StreamID

Unit = tuple[tuple[int, tuple[bytes, ...]], ...]
"""One write unit of the AOF: its commands with the database each ran in."""


@dataclass
class Snapshot:
    """An RDB file: the data as of one moment and the replication info it records (RDB-1, RDB-5)."""

    dbs: list[dict[bytes, Value]]
    replid: str | None = None  # the "repl-id" aux field; None when the file records no replication info
    offset: int = -1  # "repl-offset"
    stream_db: int = -1  # "repl-stream-db"

    def freeze(self) -> tuple[Any, ...]:
        # A snapshot's data never changes once taken (loading copies it): its frozen form is kept.
        frozen = self.__dict__.get("_frozen_dbs")
        if frozen is None:
            frozen = tuple(tuple(sorted((k, freeze_value(v)) for k, v in db.items())) for db in self.dbs)
            self.__dict__["_frozen_dbs"] = frozen
        return (frozen, self.replid, self.offset, self.stream_db)


SHARED_IN_COPIES: set[type] = set()
"""Types whose values a copy of the databases shares instead of copying: immutable values that
refer to state outside the data (a checker's symbolic clock readings register theirs)."""


class _Pickler(pickle.Pickler):
    def __init__(self, buffer: io.BytesIO, shared: list[Any]) -> None:
        super().__init__(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared = shared

    def persistent_id(self, obj: Any) -> int | None:
        if type(obj) in SHARED_IN_COPIES:
            self.shared.append(obj)
            return len(self.shared) - 1
        return None


class SharedUnpickler(pickle.Unpickler):
    """Loads a pickle whose persistent ids index ``shared`` (the objects a copy shares with its original)."""

    def __init__(self, buffer: io.BytesIO, shared: list[Any]) -> None:
        super().__init__(buffer)
        self.shared = shared

    def persistent_load(self, pid: Any) -> Any:
        return self.shared[pid]


def copy_dbs(dbs: list[dict[bytes, Value]]) -> list[dict[bytes, Value]]:
    """A deep copy of the databases (a pickle round trip: several times faster than
    ``copy.deepcopy``, with the same sharing; ``deepcopy`` when something does not pickle)."""
    shared: list[Any] = []
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, shared).dump(dbs)
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(dbs)
    buffer.seek(0)
    return SharedUnpickler(buffer, shared).load()  # type: ignore[no-any-return]


def take_snapshot(dbs: list[dict[bytes, Value]], rdb_version: int, replid: str | None = None,
                  offset: int = -1, stream_db: int = -1) -> Snapshot:
    """The databases as an RDB file of ``rdb_version`` keeps them (RDB-1, RDB-3, RDB-4)."""
    copied = copy_dbs(dbs)
    if rdb_version < 10:  # RDB-4: version 9 has no stream metadata of 7.0
        for db in copied:
            for v in db.values():
                if isinstance(v, Stream):
                    _strip_v9(v)
    for db in copied:  # RESTORE-11: a sorted set comes back in the encoding loading gives it
        for v in db.values():
            if isinstance(v, ZSetValue):
                v.reload(unsigned_zero=rdb_version >= 10)
    return Snapshot(copied, replid, offset, stream_db)


def _strip_v9(s: Stream) -> None:
    """RDB-4: the fields a version-9 file does not hold, as 6.2 leaves them after loading."""
    for g in s.groups.values():
        g.entries_read = -1


def load_snapshot(snapshot: Snapshot) -> list[dict[bytes, Value]]:
    """The databases a node holds after loading ``snapshot`` (a copy: the file stays as it is)."""
    return copy_dbs(snapshot.dbs)


@dataclass
class AppendOnlyFile:
    """An AOF: the base its last rewrite wrote, then the write units appended since (AOF-1, AOF-2).

    ``base`` is an RDB preamble (a :class:`Snapshot`) or the rewrite's commands;
    ``units`` are appended after every command that propagated something;
    ``synced`` counts the units the last fsync covered (AOF-3). While a rewrite runs (AOF-7),
    ``rewriting`` is the base it will write and ``history`` the units of the incremental files
    from before it started, which a load replays between ``base`` and ``units``; a rewrite that
    never finished (the process killed) leaves ``history`` until the next one finishes.

    ``units`` are what the process wrote to the file (``write(2)``), which is what a killed
    process (trace/2's ``crash``) leaves: under ``always`` and ``no`` every unit is written
    before the reply of the command that made it, under ``everysec`` possibly up to two
    seconds later (AOF-3). What an OS crash would lose besides (writes not yet fsynced) is not
    modelled: no trace event stands for it.
    """

    base: Snapshot | list[tuple[int, tuple[Any, ...]]] | None = None
    units: list[Unit] = field(default_factory=list)
    synced: int = 0
    history: list[Unit] = field(default_factory=list)
    rewriting: Snapshot | list[tuple[int, tuple[Any, ...]]] | None = None

    def start_rewrite(self, new_base: Snapshot | list[tuple[int, tuple[Any, ...]]]) -> None:
        """A rewrite starts (AOF-7): the incremental file written so far joins the history, a new
        one starts empty, and ``new_base`` waits for the rewrite to finish."""
        self.history = self.history + self.units
        self.units = []
        self.synced = 0
        self.rewriting = new_base

    def finish_rewrite(self) -> None:
        """The rewrite finished (AOF-7): its base replaces the old one and the history goes."""
        if self.rewriting is not None:
            self.base, self.rewriting, self.history = self.rewriting, None, []

    def freeze(self) -> tuple[Any, ...]:
        return (_frozen_base(self.base), tuple(self.units), self.synced, tuple(self.history),
                _frozen_base(self.rewriting))


def _frozen_base(base: Snapshot | list[tuple[int, tuple[Any, ...]]] | None) -> Any:
    return base.freeze() if isinstance(base, Snapshot) else (None if base is None else tuple(base))


def rewrite_commands(dbs: list[dict[bytes, Value]], counters: bool = True) -> list[tuple[int, tuple[Any, ...]]]:
    """What 7.0's ``rewriteAppendOnlyFile`` writes without an RDB preamble, per key (AOF-5).

    A stream: its entries as XADDs (an empty stream as ``XADD key MAXLEN 0 <last-id> x y``),
    ``XSETID key <last-id> ENTRIESADDED n MAXDELETEDID id``, each group as
    ``XGROUP CREATE key g <last-delivered-id> ENTRIESREAD n``, each consumer without pending
    entries as ``XGROUP CREATECONSUMER``, each pending entry as ``XCLAIM key g consumer 0 id
    TIME t RETRYCOUNT n JUSTID FORCE``. Replayed, an XCLAIM of an entry whose payload was
    deleted drops it from the PEL (AOF-6); seen-times become the reload's clock readings.
    Without ``counters`` (6.2, AOF-DIALECT-1) XSETID and XGROUP CREATE carry no ENTRIESADDED,
    MAXDELETEDID or ENTRIESREAD.
    """
    out: list[tuple[int, tuple[Any, ...]]] = []
    for dbi, db in enumerate(dbs):
        expires = getattr(db, "expires", {})
        timed: tuple[int, tuple[Any, ...]] | None = None
        for key, v in db.items():
            if timed is not None:  # EXPIRE-KEYS-1: the previous key's time, after its commands
                out.append(timed)
            timed = (dbi, (b"PEXPIREAT", key, Instant.propagated_ms(expires[key]))) if key in expires else None
            if isinstance(v, HashValue):  # rewriteHashObject: HMSET, 64 pairs a command
                pairs = [x for pair in v.fields.items() for x in pair]
                out += [(dbi, (b"HMSET", key, *pairs[i:i + 128])) for i in range(0, len(pairs), 128)]
                continue
            if not isinstance(v, Stream):
                out.append((dbi, (b"SET", key, v)))
                continue
            if v.entries:
                for eid, fields in v.entries.items():
                    out.append((dbi, (b"XADD", key, _id(eid), *fields)))
            else:
                out.append((dbi, (b"XADD", key, b"MAXLEN", b"0", _id(v.last_id), b"x", b"y")))
            if counters:
                out.append((dbi, (b"XSETID", key, _id(v.last_id), b"ENTRIESADDED", b"%d" % v.entries_added,
                                  b"MAXDELETEDID", _id(v.max_deleted_id))))
            else:  # AOF-DIALECT-1
                out.append((dbi, (b"XSETID", key, _id(v.last_id))))
            for g in v.groups.values():
                if counters:
                    out.append((dbi, (b"XGROUP", b"CREATE", key, g.name, _id(g.last_id),
                                      b"ENTRIESREAD", b"%d" % g.entries_read)))
                else:  # AOF-DIALECT-1
                    out.append((dbi, (b"XGROUP", b"CREATE", key, g.name, _id(g.last_id))))
                for c in g.consumers.values():
                    if not c.pel:
                        out.append((dbi, (b"XGROUP", b"CREATECONSUMER", key, g.name, c.name)))
                        continue
                    for eid, nack in c.pel.items():
                        out.append((dbi, (b"XCLAIM", key, g.name, c.name, b"0", _id(eid), b"TIME",
                                          nack.delivery_time, b"RETRYCOUNT",
                                          b"%d" % nack.delivery_count, b"JUSTID", b"FORCE")))
        if timed is not None:
            out.append(timed)
    return out


def render(argv: Sequence[Any]) -> list[bytes]:
    """A command as the bytes a file or the stream holds: a time becomes the milliseconds it was read
    at (``Instant.rendered``: on the checker's symbolic clock, bytes that stand for the reading)."""
    return [a if isinstance(a, bytes) else Instant.rendered(a) for a in argv]


REPLAYED_TIMES = frozenset({b"XCLAIM"})
"""Commands whose time arguments an AOF keeps as the model computed them (:func:`replayable`)."""


def replayable(argv: Sequence[Any]) -> tuple[Any, ...]:
    """A command as an AOF unit keeps it: like :func:`render`, except that an XCLAIM's times stay
    as the model computed them (on the checker's symbolic clock, the readings themselves), so that
    writing the AOF is not a choice of exact milliseconds; a reload hands them to XCLAIM as they
    are (AOF-1: the file holds the exact values; which ones only later reads can tell)."""
    if not argv or argv[0].upper() not in REPLAYED_TIMES:
        return tuple(render(argv))
    return tuple(b"%d" % a if isinstance(a, int) else a for a in argv)


def _id(i: StreamID) -> bytes:
    return str(i).encode()
