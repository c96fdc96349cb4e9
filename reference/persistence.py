"""RDB persistence in the reference server: SAVE, BGSAVE, LASTSAVE, save points, DEBUG RELOAD, loading at start.

The file is Redis's own format (:mod:`xspec.spec.rdb_file`, in the dialect's RDB
version), written to ``temp-<pid>.rdb`` in ``dir``, synced and renamed over
``dbfilename`` as ``rdbSave`` does. BGSAVE forks, as Redis does: the child
writes the snapshot of the data as of the fork (copy-on-write) and exits; the
server goes on serving, and a cron (every 100 ms, Redis's ``hz 10``) reaps the
child, then counts the save (LASTSAVE, the changes since it) when it succeeded.
Where the server has no event loop to run the cron (a core driven by a test),
BGSAVE saves at once. The same cron starts a BGSAVE when a save point of
``save`` (``<seconds> <changes>`` pairs) is met, and one BGSAVE SCHEDULE asked
for while another child ran.

Keys keep no TTL in this server (SET-7): a key loaded with an expiry in the
past is left out, as a primary does; one in the future is kept without it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable
from typing import Any

from xspec.reference.api import ReplyError
from xspec.reference.core import Context, Core
from xspec.reference.dump import record_value, value_record
from xspec.spec import rdb
from xspec.spec import rdb_file as rf
from xspec.spec.commands import SYNTAX
from xspec.spec.ids import c_string
from xspec.spec.resp import OK, Int, Reply, Simple

log = logging.getLogger("xspec.serve")

CRON_SECONDS = 0.1
BGSAVE_RETRY_SECONDS = 5  # CONFIG_BGSAVE_RETRY_DELAY: after a failed BGSAVE, save points wait this long
SAVE_IN_PROGRESS = "ERR Background save already in progress"
CHILD_ACTIVE = ("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in "
                "order to schedule a BGSAVE whenever possible.")
RELOAD_OPTIONS = "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options."
RELOAD_FAILED = "ERR Error trying to load the RDB dump"


class LoadError(Exception):
    """A file the server cannot load at start; the text is one line."""


def close_inherited_descriptors(keep: int = -1) -> None:
    """In a forked child: close every descriptor above stderr but ``keep``, the listening sockets of every
    server in this process among them (Redis's ``closeChildUnusedResourceAfterFork``), so that no port stays
    taken by a child after its server closed it (a node of a deployment restarting on its port)."""
    if keep > 2:
        os.closerange(3, keep)
        os.closerange(keep + 1, _FD_LIMIT)
    else:
        os.closerange(3, _FD_LIMIT)


_FD_LIMIT = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 65536


class Child:
    """A forked child writing a file: its pid, what it writes, and the changes counted when it started."""

    def __init__(self, pid: int, kind: str, dirty: int, on_exit: Callable[[bool], None] | None = None) -> None:
        self.pid = pid
        self.kind = kind  # "rdb" or "aof"
        self.dirty = dirty
        self.on_exit = on_exit
        self.killed = False  # killRDBChild's SIGUSR1 (FLUSH-6): the cron reaps it as no failure


class Persistence:
    """The persistence state of one core (``core.persistence``)."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.lastsave = core.now_ms() // 1000  # LASTSAVE: a server that never saved says when it started
        self.last_bgsave_ok = True
        self.last_bgsave_try = 0
        self.child: Child | None = None
        self.bgsave_scheduled = False
        self.cron_armed = False
        self.hooks: list[Callable[[], None]] = []  # run by every cron tick (the AOF's everysec sync)
        self.first_hooks: list[Callable[[], None]] = []  # before a finished child is reaped (a scheduled rewrite)
        self.idle_hooks: list[Callable[[], None]] = []  # after the save points, while no child runs (AOF-AUTO-1)
        self.aof: Any = None  # reference.aof.Aof while appendonly is yes
        self.aof_rewrite_scheduled = False
        self.saves = 0  # rdb_saves
        self.forks = 0  # INFO stats total_forks
        self.finished = False  # the server shut down: nothing more is saved
        self.aof_rewrites = 0
        # RDB-5: the replication ID and offset of the RDB file loaded at start (reference/replication.py)
        self.loaded_replication: tuple[bytes | None, bytes | None] | None = None
        self.last_aof_rewrite_ok = True
        self.aof_rewrite_failures = 0  # aof_rewrites_consecutive_failures (AOF-LIMIT-1)
        self.rewrite_limit = (0, 0)  # aofRewriteLimited's delay in minutes and the second it ends (AOF-LIMIT-1)

    # -- paths and configuration ---------------------------------------------------------------------

    def path(self, name: str) -> str:
        return os.path.join(self.core.config.get("dir") or ".", name)

    def rdb_path(self) -> str:
        return self.path(self.core.config.get("dbfilename") or "dump.rdb")

    def save_points(self) -> list[tuple[int, int]]:
        words = self.core.config.get("save", "").split()
        try:
            return [(int(words[i]), int(words[i + 1])) for i in range(0, len(words) - 1, 2)]
        except ValueError:
            return []

    # -- writing ---------------------------------------------------------------------------------------

    def snapshot(self, aof_base: bool = False) -> rf.RdbFile:
        """The data as a file of the dialect's RDB version holds it, with the aux fields it writes."""
        core = self.core
        dialect = core.dialect
        version = dialect.rdb_version
        # EXPIRE-KEYS-1: each key with its absolute expiry time
        dbs = {i: [rf.RdbKey(k, value_record(v), getattr(db, "expires", {}).get(k)) for k, v in db.items()]
               for i, db in enumerate(core.dbs) if db}
        # RDB-5: a primary with a backlog, or a replica, records its replication ID and offset (not an AOF base)
        replication = core.replication
        repl = replication.rdb_info() if replication is not None and not aof_base else None
        # the file's ctime is no reading of the command that saves (--checked: the model reads none here)
        aux = rf.standard_aux(version, dialect.server_name, dialect.version, core.clock.now_ms() // 1000,
                              _used_memory(), aof_base, repl)
        return rf.RdbFile(version, aux, [], dbs)

    def rdb_chunks(self, aof_base: bool = False) -> Iterable[bytes]:
        return rf.write_chunks(self.snapshot(aof_base), self.core.config.get("rdbchecksum", "yes") == "yes")

    def write_rdb(self, path: str) -> None:
        """``rdbSave``: the whole file to a temporary name, synced, then renamed over ``path``."""
        write_atomically(self.path(f"temp-{os.getpid()}.rdb"), path, self.rdb_chunks())

    def saved(self, dirty_at_start: int) -> None:
        """A save succeeded: the changes it holds are no longer unsaved (STATS-4), LASTSAVE moves."""
        core = self.core
        core.dirty = max(core.dirty - dirty_at_start, 0)
        self.lastsave = core.clock.now_ms() // 1000  # not a command's reading (--checked): the cron's, often
        self.last_bgsave_ok = True

    def save(self) -> bool:
        """SAVE (RDB-1): the file of this moment, in the dialect's RDB version (RDB-3, RDB-4)."""
        dirty = self.core.dirty
        try:
            self.write_rdb(self.rdb_path())
        except (OSError, ReplyError) as e:
            log.warning("Failed opening the temp RDB file %s (in server root dir %s) for saving: %s",
                        self.core.config.get("dbfilename"), self.core.config.get("dir"), e)
            return False
        self.saved(dirty)
        log.info("DB saved on disk")
        return True

    def bgsave(self) -> bool:
        """Fork a child that writes the RDB file; False when it could not start."""
        self.last_bgsave_try = self.core.clock.now_ms() // 1000  # not a command's reading (--checked)
        self.saves += 1  # rdb_saves counts each BGSAVE as it starts (and each SAVE)
        if not self.can_fork():
            ok = self.save()
            self.last_bgsave_ok = ok
            return ok
        dirty = self.core.dirty
        target = self.rdb_path()
        try:
            pid = self.fork()
        except OSError as e:
            log.warning("Can't save in background: fork: %s", e)
            self.last_bgsave_ok = False
            return False
        if pid == 0:  # RDB-1: the child writes the snapshot of the moment of the fork, and leaves
            code = 1
            try:
                close_inherited_descriptors()
                self.child_delay()
                self.write_rdb(target)
                code = 0
            finally:
                os._exit(code)
        self.child = Child(pid, "rdb", dirty)
        log.info("Background saving started by pid %d", pid)
        self.arm_cron()
        return True

    def child_delay(self) -> None:
        """In a child: ``rdb-key-save-delay`` (microseconds a key, a testing knob of Redis's) as one wait."""
        try:
            per_key = int(self.core.config.get("rdb-key-save-delay", "0"))
        except ValueError:
            per_key = 0
        if per_key > 0:
            time.sleep(per_key * sum(len(db) for db in self.core.dbs) / 1e6)

    def can_fork(self) -> bool:
        return hasattr(os, "fork") and self.core.timer_factory is not None

    def fork(self) -> int:
        """``os.fork`` for one of the server's children (BGSAVE, rewrite, full sync), counted in the parent
        as ``total_forks`` (redisFork's count); OSError when the fork fails."""
        pid = os.fork()
        if pid:
            self.forks += 1
        return pid

    # -- the cron -----------------------------------------------------------------------------------------

    def arm_cron(self) -> None:
        if self.cron_armed or self.core.timer_factory is None:
            return
        self.cron_armed = True
        self.core.timer_factory(CRON_SECONDS, self.cron)

    def cron(self) -> None:
        """serverCron's persistence steps, in its order: a scheduled rewrite, the child reaped, or else
        the save points and the automatic rewrite; the AOF's sync; a scheduled BGSAVE."""
        self.cron_armed = False
        server = self.core.server
        if server is not None and getattr(server, "shutdown_asap", False):
            self.kill_child()
            return
        if server is not None and getattr(server, "paused", False):  # NODE-PAUSE-1: a stopped process
            self.arm_cron()
            return
        if self.child is None:
            for hook in self.first_hooks:
                hook()
        if self.child is not None:
            self.reap()
        else:
            self.start_due_save()
            for hook in self.idle_hooks:
                if self.child is None:
                    hook()
        for hook in self.hooks:
            hook()
        self.start_scheduled_save()
        self.arm_cron()

    def reap(self) -> None:
        child = self.child
        if child is None:
            return
        try:
            pid, status = os.waitpid(child.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = child.pid, 1
        if pid == 0:
            return
        self.child = None
        ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        if child.on_exit is not None:
            child.on_exit(ok)
        else:
            if child.killed and not ok:  # FLUSH-6: killed on purpose: no file, and no failure either
                with contextlib.suppress(OSError):
                    os.remove(self.path(f"temp-{child.pid}.rdb"))
                log.warning("Background saving terminated by signal %d", signal.SIGUSR1)
            elif ok:
                self.saved(child.dirty)
                log.info("Background saving terminated with success")
            else:
                self.last_bgsave_ok = False
                log.warning("Background saving error")
            mirror_step(self.core, "bgsave-done")  # FORK-2: --checked's model reaps its child too
        # FORK-2: the tick that reaps a child ends by starting a scheduled BGSAVE (a command that reaps
        # stands for that tick; the model's reaping step includes the start)
        self.start_scheduled_save(mirrored=False)

    def kill_child(self) -> None:
        child, self.child = self.child, None
        if child is not None:
            try:
                os.kill(child.pid, 9)
                os.waitpid(child.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass

    def start_scheduled_save(self, mirrored: bool = True) -> None:
        """serverCron's end: a BGSAVE scheduled by BGSAVE SCHEDULE (or EXEC) once no child runs (FORK-2)."""
        now = self.core.clock.now_ms() // 1000  # not a command's reading (--checked)
        if self.child is None and self.bgsave_scheduled and (
                self.last_bgsave_ok or now - self.last_bgsave_try > BGSAVE_RETRY_SECONDS):
            self.bgsave_scheduled = False
            if self.bgsave() and mirrored:
                mirror_step(self.core, "start-bgsave")

    def start_due_save(self) -> None:
        """serverCron: a BGSAVE a save point asks for."""
        now = self.core.now_ms() // 1000
        dirty = self.core.dirty
        for seconds, changes in self.save_points():  # RDB-7
            if dirty >= changes and now - self.lastsave > seconds and (
                    self.last_bgsave_ok or now - self.last_bgsave_try > BGSAVE_RETRY_SECONDS):
                log.info("%d changes in %d seconds. Saving...", changes, seconds)
                if self.bgsave():
                    mirror_step(self.core, "bgsave")  # RDB-7
                return

    # -- loading ------------------------------------------------------------------------------------

    def load_rdb(self, data: bytes, merge: bool = False, aof_base: bool = False) -> rf.RdbFile:
        """Put a file's keys into the databases (``rdbLoad``); raises :class:`rf.RdbFileError`."""
        core = self.core
        f = rf.read_rdb(data, core.dialect.rdb_version, core.now_ms(),
                        check_crc=core.config.get("rdbchecksum", "yes") == "yes", drop_expired=not aof_base)
        for dbid, keys in f.dbs.items():
            if dbid >= len(core.dbs):
                raise rf.RdbFileError(f"FATAL: Data file was created with a Redis server configured to handle "
                                      f"more than {len(core.dbs)} databases. Exiting")
            db = core.dbs[dbid]
            for k in keys:
                if k.key in db and not merge:
                    raise rf.RdbFileError(f"RDB has duplicated key '{k.key.decode('latin-1')}' in DB {dbid}")
                try:
                    db[k.key] = record_value(k.value, core.dialect)
                    if k.expire_ms is not None:  # EXPIRE-KEYS-1
                        db.expires[k.key] = k.expire_ms  # type: ignore[attr-defined]
                except ReplyError as e:
                    raise rf.RdbFileError(str(e)) from e
        for dbid, db in enumerate(core.dbs):
            if db:
                core.signal_streams_present(dbid)
        return f

    def empty_data(self) -> None:
        """emptyData: every database emptied as FLUSHALL does (blocked readers and WATCH see it)."""
        core = self.core
        for dbid in range(len(core.dbs)):
            if core.dbs[dbid]:
                core.flush_db(dbid)

    def load_rdb_at_start(self) -> None:
        """loadDataFromDisk with appendonly no: the RDB file when there is one (RDB-2)."""
        path = self.rdb_path()
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return
        except OSError as e:
            raise LoadError(f"cannot read the RDB file {path!r}: {e.strerror}") from e
        try:
            f = self.load_rdb(data)
        except (rf.RdbFileError, rdb.UnmodelledType) as e:
            raise LoadError(f"cannot load the RDB file {path!r}: {e}") from e
        log.info("DB loaded from disk: %d keys", sum(len(k) for k in f.dbs.values()))
        self.loaded_replication = (f.aux_value(b"repl-id"), f.aux_value(b"repl-offset"))  # RDB-5


def keeps_sync_file(config: dict[str, str]) -> bool:
    """RDB-6: a replica reads a full sync's snapshot into its RDB file (``repl-diskless-load disabled``)
    and keeps it, unless ``rdb-del-sync-files yes`` and no persistence is on."""
    if config.get("repl-diskless-load", "disabled") != "disabled":
        return False
    no_persistence = not config.get("save", "").strip() and config.get("appendonly", "no") != "yes"
    return not (config.get("rdb-del-sync-files", "no") == "yes" and no_persistence)


def mirror_step(core: Core, kind: str) -> None:
    """Tell ``--checked``'s model that the cron took a step about children (FORK-2, RDB-7, AOF-AUTO-1:
    the model's ``persistence_step``); nothing without an observer that listens."""
    observer = core.observer
    mirror = getattr(observer, "persistence_step", None) if observer is not None else None
    if mirror is not None:
        mirror(kind)


def write_atomically(temp: str, target: str, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` to ``temp``, sync it and rename it over ``target`` (removing ``temp`` on failure)."""
    try:
        with open(temp, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def _used_memory() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def persistence_of(core: Core) -> Persistence:
    found = core.persistence
    if found is None:
        found = core.persistence = Persistence(core)
    assert isinstance(found, Persistence)
    return found


# -- the commands -------------------------------------------------------------------------------------


def flushall_save(core: Core) -> None:
    """``flushAllDataAndResetRDB`` once FLUSHALL emptied the data (FLUSH-6): a BGSAVE's child is
    signalled to stop (the cron reaps it; its file is never written), then, with save points set,
    the empty data set is saved at once, which no ``rdb_saves`` counts; 6.2 keeps its changes counter
    across that save (so that the FLUSHALL is still propagated), 7.0 and Valkey leave it at zero."""
    p = core.persistence
    if isinstance(p, Persistence) and p.child is not None and p.child.kind == "rdb" and not p.child.killed:
        p.child.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.child.pid, signal.SIGUSR1)
    if core.config.get("save", "").split():
        p = persistence_of(core)
        dirty = core.dirty
        if p.save() and core.dialect.flushall_save_keeps_changes:
            core.dirty = dirty


def save_command(ctx: Context) -> Reply:
    p = persistence_of(ctx.core)
    p.reap()
    if p.child is not None and p.child.kind == "rdb":
        raise ReplyError(SAVE_IN_PROGRESS)
    p.saves += 1  # rdb_saves
    if not p.save():
        raise ReplyError("ERR")
    return OK


def bgsave_command(ctx: Context) -> Reply:
    argv = ctx.argv
    schedule = False
    if len(argv) > 1:
        if len(argv) == 2 and c_string(argv[1]).lower() == b"schedule":
            schedule = True
        else:
            raise ReplyError(SYNTAX)
    p = persistence_of(ctx.core)
    p.reap()
    if p.child is not None and p.child.kind == "rdb":
        raise ReplyError(SAVE_IN_PROGRESS)  # FORK-1
    in_exec = ctx.client.in_multi and ctx.core.dialect.exec_schedules_children  # FORK-3
    if p.child is not None or in_exec:
        if schedule or in_exec:  # FORK-2
            p.bgsave_scheduled = True
            p.arm_cron()
            return Simple("Background saving scheduled")
        raise ReplyError(CHILD_ACTIVE)
    if not p.bgsave():
        raise ReplyError("ERR")
    return Simple("Background saving started")


def lastsave_command(ctx: Context) -> Reply:
    return Int(persistence_of(ctx.core).lastsave)


def debug_reload(ctx: Context) -> Reply:
    merge = False
    flush = save = True
    for opt in ctx.argv[2:]:
        word = c_string(opt).lower()
        if word == b"merge":
            merge = True
        elif word == b"noflush":
            flush = False
        elif word == b"nosave":
            save = False
        else:
            raise ReplyError(RELOAD_OPTIONS)
    p = persistence_of(ctx.core)
    if save and not p.save():
        raise ReplyError("ERR")
    if flush:
        p.empty_data()
    try:
        with open(p.rdb_path(), "rb") as fh:
            data = fh.read()
        p.load_rdb(data, merge=merge)
    except (OSError, rf.RdbFileError, rdb.UnmodelledType) as e:
        log.warning("DEBUG RELOAD: %s", e)
        raise ReplyError(RELOAD_FAILED) from None
    log.info("DB reloaded by DEBUG RELOAD")
    return OK


DEBUG_SUBCOMMANDS: dict[bytes, Callable[[Context], Reply]] = {b"reload": debug_reload}


def add_persistence(handlers: dict[str, Any]) -> None:
    """Put the persistence commands into a handler table, and DEBUG's persistence subcommands in front
    of the table's DEBUG."""
    handlers["save"] = save_command
    handlers["bgsave"] = bgsave_command
    handlers["lastsave"] = lastsave_command
    other = handlers.get("debug")

    def debug(ctx: Context) -> Any:
        argv = ctx.argv
        sub = DEBUG_SUBCOMMANDS.get(c_string(argv[1]).lower()) if len(argv) > 1 else None
        if sub is not None:
            return sub(ctx)
        if other is None:
            raise ReplyError("ERR unknown subcommand")
        return other(ctx)

    handlers["debug"] = debug

