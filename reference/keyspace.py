"""The reference server's databases with their expiry tables, and lazy expiry (spec/rules/expiry.md).

A :class:`Database` is the key-to-value dict the command modules already use, plus ``expires``:
each expiring key's absolute time in ms. Removing a key or storing a new value with ``db[key] =``
drops its time; :meth:`Database.keep` stores a value keeping it. :func:`expire_if_needed` deletes a
key whose time has passed when a command looks it up; the core runs it for the keys of every
command whose module does not do it itself (:data:`SELF_EXPIRING`). While clients are paused it
deletes nothing: the key is set aside for the rest of the command (missing to it) and stored again
when the command ends (:func:`restore_aside`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from xspec.reference.notify import notify_core_event
from xspec.spec import commands as table
from xspec.spec.commands import CommandSpec

__all__ = ["Database", "SELF_EXPIRING", "clients_paused", "delete_expired", "expire_if_needed", "expire_keys",
           "restore_aside", "store"]

# Commands whose handlers call expire_if_needed where Redis looks their keys up.
SELF_EXPIRING: set[str] = set()


class Database(dict[bytes, Any]):
    """One database: keys to values, and ``expires``: key -> absolute expiry in ms."""

    __slots__ = ("expires",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.expires: dict[bytes, int] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_database, (dict(self), dict(self.expires)))

    def __setitem__(self, key: bytes, value: Any) -> None:
        expires = self.expires
        if expires:
            expires.pop(key, None)
        _dict_setitem(self, key, value)

    def keep(self, key: bytes, value: Any) -> None:
        """Store ``value`` at ``key``, keeping the key's expiry time."""
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: bytes) -> None:
        dict.__delitem__(self, key)
        if self.expires:
            self.expires.pop(key, None)

    def pop(self, key: bytes, *default: Any) -> Any:  # type: ignore[override]
        if self.expires:
            self.expires.pop(key, None)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[bytes, Any]:
        key, value = dict.popitem(self)
        self.expires.pop(key, None)
        return key, value

    def clear(self) -> None:
        dict.clear(self)
        self.expires.clear()

    def setdefault(self, key: bytes, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)


_dict_setitem: Final = dict.__setitem__  # the store itself, without Database's override


def store(db: Database, key: bytes, value: Any) -> None:
    """``db[key] = value`` (the key's time dropped) without the dispatch to the override: a hot write's way."""
    expires = db.expires
    if expires:
        expires.pop(key, None)
    _dict_setitem(db, key, value)


def _database(data: dict[bytes, Any], expires: dict[bytes, int]) -> Database:
    db = Database(data)
    db.expires.update(expires)
    return db


def expire_if_needed(core: Any, dbid: int, key: bytes, now: int) -> bool:
    """``expireIfNeeded``: delete ``key`` if its time is before ``now``; whether it had expired (EXPIRE-LAZY-1).

    The deletion propagates as DEL (UNLINK under ``lazyfree-lazy-expire``) with the command's own
    writes; watchers, trackers and stream readers blocked on the key learn. While clients are paused
    the key is only set aside, missing to the rest of the command (EXPIRE-PAUSE-1).
    """
    db = core.dbs[dbid]
    when = db.expires.get(key)
    if when is None or not now > when:
        return False
    if core.running_reads and core.replication is not None and core.replication.is_replica:
        core.expired_aside.append((dbid, key, db.pop(key), when))  # EXPIRE-REPLICA-1: a replica's reader
        return True
    if core.pause_until and clients_paused(core, now):  # EXPIRE-PAUSE-1: missing to the command, kept
        core.expired_aside.append((dbid, key, db.pop(key), when))
        return True
    delete_expired(core, dbid, key)
    return True


def clients_paused(core: Any, now: int) -> bool:
    """``checkClientPauseTimeoutAndReturnIfPaused`` at ``now`` (EXPIRE-PAUSE-2): a CLIENT PAUSE (or a
    FAILOVER's) holds until its end, through that very ms in 6.2 and 7.0, not in 7.2+ and Valkey."""
    until = core.pause_until
    if not until:
        return False
    return now <= until if core.dialect.pause_holds_at_its_end else now < until


def restore_aside(core: Any) -> None:
    """Store again, with their times, the keys set aside during the command that ended (EXPIRE-PAUSE-1).
    A key the command wrote meanwhile keeps its new value (EXPIRE-PAUSE-4)."""
    aside, core.expired_aside = core.expired_aside, []
    for dbid, key, value, when in aside:
        db = core.dbs[dbid]
        if key not in db:
            db[key] = value
            db.expires[key] = when


def delete_expired(core: Any, dbid: int, key: bytes) -> None:
    """``deleteExpiredKeyAndPropagate``: delete ``key``, whose time has passed, as lazy and active expiry
    do (EXPIRE-LAZY-1, EXPIRE-ACTIVE-1): the ``expired`` event, watchers, trackers, blocked stream
    readers, the ``expired_keys`` count, and DEL or UNLINK queued for the AOF and the replicas."""
    old = core.dbs[dbid].pop(key)
    notify_core_event(core, "x", "expired", key, dbid)  # NOTIFY-1
    watchers = core.watchers.get((dbid, key)) if core.watchers else None
    if watchers:
        remembered = _remembered(core)
        for c in watchers:
            if (dbid, key) in remembered.get(c.id, ()):
                remembered[c.id].discard((dbid, key))  # EXPIRE-WATCH-1: no change
            else:
                c.dirty_cas = True
    if core.tracking.table or core.tracking.prefixes:
        core.tracking.invalidate(None, key)
    if getattr(old, "kind", "stream") == "stream" and type(old) is not bytes and core.blocking \
            and core.signal_deletions:
        core.signal_ready(dbid, key)
    core.expired_keys += 1
    if core.propagation is not None:
        lazy = core.config.get("lazyfree-lazy-expire", "no") == "yes"
        core.propagation.pending.append((dbid, [b"UNLINK" if lazy else b"DEL", key]))


def _remembered(core: Any) -> dict[int, set[tuple[int, bytes]]]:
    """Per client id: the watched keys that had expired when WATCHed (EXPIRE-WATCH-1)."""
    found: dict[int, set[tuple[int, bytes]]] = core.watched_expired
    return found


def _expired(core: Any, dbid: int, key: bytes, clock: Callable[[], int]) -> bool:
    when = core.dbs[dbid].expires.get(key)
    return when is not None and clock() > when  # the clock is read only for a key with a time, as the model


def _watch_or_exec(core: Any, c: Any, exec_: bool, argv: list[bytes], clock: Callable[[], int]) -> None:
    """EXPIRE-WATCH-1: WATCH remembers the keys already expired; EXEC fails if another one has expired."""
    remember = core.dialect.watch_remembers_expired  # EXPIRE-DIALECT-3
    remembered = _remembered(core)
    mine = remembered.setdefault(c.id, set())
    if not exec_:
        if not c.watched:
            mine.clear()
        for key in argv[1:]:
            k = (c.db, key)
            if remember and k not in c.watched and _expired(core, c.db, key, clock):
                mine.add(k)
            elif k not in c.watched:
                mine.discard(k)
        return
    if c.in_multi and any(k not in mine and _expired(core, k[0], k[1], clock) for k in c.watched):
        c.dirty_cas = True


def expire_keys(core: Any, c: Any, spec: CommandSpec, argv: list[bytes], clock: Callable[[], int]) -> None:
    """Lazy expiry of a command's keys before its handler runs (EXPIRE-LAZY-2)."""
    name = spec.fullname
    if name == "watch" or name == "exec":
        _watch_or_exec(core, c, name == "exec", argv, clock)
        return
    if name in SELF_EXPIRING or c.kind == "master":
        return  # EXPIRE-ACTIVE-4: a replica deletes no key its primary's commands name; it waits for DEL
    dbid = c.db
    expires = core.dbs[dbid].expires
    for key in table.command_keys(spec, argv):
        if key in expires:
            expire_if_needed(core, dbid, key, clock())
