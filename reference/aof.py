"""The append-only file: ``appendonly``, ``appendfsync``, BGREWRITEAOF, DEBUG LOADAOF, automatic rewrites.

In ``dir``/``appenddirname`` a manifest (``<appendfilename>.manifest``, one
``file <name> seq <n> type b|h|i`` line per file) names a base file (an RDB file
with ``aof-base 1``, ``.base.rdb``, or with ``aof-use-rdb-preamble no`` the
commands that rebuild the data, ``.base.aof``) and the incremental files
(``.incr.aof``) that follow it. What each command propagates
(:mod:`xspec.reference.propagation`) is appended to the last incremental file as
RESP arrays, with a SELECT before a command of another database than the
previous one's; ``appendfsync always`` syncs it once per loop turn, before
any reply of that turn leaves (Redis's ``beforeSleep``), ``everysec`` once a
second from the cron, ``no`` never.

BGREWRITEAOF (and turning ``appendonly`` on) opens a new incremental file
first, so that what follows goes there, then forks a child that writes the new
base from the data as of the fork; when it is done the manifest names the new
base and the new incremental file only, and the older files are deleted.

Loading (at start, DEBUG LOADAOF) reads the base, then each incremental file,
and runs its commands as the AOF client (no reply, no propagation). A last
incremental file cut inside a command is truncated to its last whole command
when ``aof-load-truncated`` is yes (Redis's default), else loading fails.

Under the ``redis-6.2`` dialect the AOF is one file, ``appendfilename`` in
``dir`` (AOF-SINGLE-1): created empty at start when there is none, the commands
appended to it; BGREWRITEAOF's child writes the new base to a temporary file,
the parent goes on appending to the old one and keeps what it appends in a
rewrite buffer, and once the child is done the buffer is appended to the new
file, which replaces the old one (AOF-SINGLE-2). The multi-part AOF takes such a file in as its
base when it finds one and no AOF directory (AOF-SINGLE-4).

The cron rewrites by itself once the AOF has grown by ``auto-aof-rewrite-percentage``
over its size after the last rewrite or load, when it is larger than
``auto-aof-rewrite-min-size`` (AOF-AUTO-1); INFO persistence shows those sizes
(AOF-INFO-1).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from xspec.reference.api import ReplyError
from xspec.reference.core import Context, Core
from xspec.reference.persistence import (
    DEBUG_SUBCOMMANDS,
    Child,
    LoadError,
    Persistence,
    close_inherited_descriptors,
    mirror_step,
    persistence_of,
    write_atomically,
)
from xspec.reference.persistence import add_persistence as add_rdb_commands
from xspec.reference.propagation import Propagator, id_text
from xspec.reference.streams import Stream
from xspec.spec import rdb
from xspec.spec import rdb_file as rf
from xspec.spec.resp import OK, Simple, Verbatim

log = logging.getLogger("xspec.serve")

REWRITE_IN_PROGRESS = "ERR Background append only file rewriting already in progress"
REWRITE_SCHEDULED = "Background append only file rewriting scheduled"
REWRITE_STARTED = "Background append only file rewriting started"
# DEBUG LOADAOF where Redis exits, on a server whose DEBUG is not enabled (DEBUG-LOADAOF-4)
EXIT_REFUSED = ("ERR DEBUG LOADAOF found no AOF to load, where Redis exits with status 1; xspec serve exits too "
                "only with --enable-debug-command yes")
AOF_CLIENT_ID = 2**64 - 1  # CLIENT_ID_AOF


def resp_command(argv: list[bytes]) -> bytes:
    """catAppendOnlyGenericCommand: one command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(argv)]
    for a in argv:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Manifest:
    """The files of a multi-part AOF (aofManifest): a base, history files, incremental files."""

    def __init__(self) -> None:
        self.base: tuple[str, int, str] | None = None  # (file name, seq, "b")
        self.incr: list[tuple[str, int]] = []
        self.history: list[str] = []

    def text(self) -> bytes:
        lines = []
        if self.base is not None:
            lines.append(f"file {self.base[0]} seq {self.base[1]} type b\n")
        lines += [f"file {name} seq 0 type h\n" for name in self.history]
        lines += [f"file {name} seq {seq} type i\n" for name, seq in self.incr]
        return "".join(lines).encode()

    @staticmethod
    def parse(text: str) -> Manifest:
        m = Manifest()
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words = line.split()
            fields = dict(zip(words[0::2], words[1::2], strict=False))
            if len(words) % 2 or "file" not in fields or "seq" not in fields or "type" not in fields:
                raise LoadError(f"Invalid AOF manifest file format (line {n})")
            name, kind = fields["file"], fields["type"]
            try:
                seq = int(fields["seq"])
            except ValueError:
                raise LoadError(f"Invalid AOF manifest file format (line {n})") from None
            if kind == "b":
                if m.base is not None:
                    raise LoadError("Found duplicate base file information")
                m.base = (name, seq, kind)
            elif kind == "h":
                m.history.append(name)
            elif kind == "i":
                if m.incr and seq <= m.incr[-1][1]:
                    raise LoadError("Found a non-monotonic sequence number")
                m.incr.append((name, seq))
            else:
                raise LoadError(f"Unknown AOF file type {kind}")
        return m


class Aof:
    """The AOF of one core, while ``appendonly`` is yes."""

    def __init__(self, core: Core, persistence: Persistence) -> None:
        self.core = core
        self.persistence = persistence
        self.manifest = Manifest()
        self.fd = -1
        self.selected_db = -1
        self.unsynced = False
        self.last_fsync = core.clock.now_ms()  # not a reading of the command that turns the AOF on (--checked)
        self.loading = False
        self.propagator = Propagator(self.feed, core.dialect.stream_counters, core.dialect.wraps_transactions_only)
        self.single = core.dialect.aof_single_file  # AOF-SINGLE-1: 6.2's one file
        self.current_size = 0  # aof_current_size (AOF-INFO-1)
        self.base_size = 0  # aof_rewrite_base_size: the size after the last rewrite or load
        self.rewrite_buffer: list[bytes] | None = None  # AOF-SINGLE-2: what 6.2 appends while its child runs

    # -- names ----------------------------------------------------------------------------------------------

    def dirname(self) -> str:
        return self.persistence.path(self.core.config.get("appenddirname") or "appendonlydir")

    def filename(self) -> str:
        return self.core.config.get("appendfilename") or "appendonly.aof"

    def manifest_path(self) -> str:
        return os.path.join(self.dirname(), f"{self.filename()}.manifest")

    def single_path(self) -> str:
        """6.2's AOF (AOF-SINGLE-1): ``appendfilename`` in ``dir``."""
        return self.persistence.path(self.filename())

    def file_path(self, name: str) -> str:
        return self.single_path() if self.single else os.path.join(self.dirname(), name)

    def write_manifest(self) -> None:
        write_atomically(os.path.join(self.dirname(), f"temp-{self.filename()}.manifest"), self.manifest_path(),
                         [self.manifest.text()])

    # -- appending --------------------------------------------------------------------------------------------

    def feed(self, ops: list[tuple[int, list[bytes]]]) -> None:
        """feedAppendOnlyFile for one call's commands (AOF-1): SELECT where the database changes."""
        if self.loading or (self.fd < 0 and self.rewrite_buffer is None):
            return  # AOF-SCHEDULE-1: no file yet (a rewrite waits for another child): the base will hold it
        out = []
        if ops[0][0] < 0 and len(ops) > 1 and 0 <= ops[1][0] != self.selected_db \
                and not self.core.dialect.select_after_multi:  # PROP-DIALECT-4: 7.0 and 6.2 select before MULTI
            out.append(resp_command([b"SELECT", b"%d" % ops[1][0]]))
            self.selected_db = ops[1][0]
        for dbid, argv in ops:
            if dbid >= 0 and dbid != self.selected_db:
                out.append(resp_command([b"SELECT", b"%d" % dbid]))
                self.selected_db = dbid
            out.append(resp_command(argv))
        data = b"".join(out)
        if self.rewrite_buffer is not None:  # AOF-SINGLE-2: also for the file the child is writing
            self.rewrite_buffer.append(data)
        if self.fd < 0:
            return  # AOF-SCHEDULE-1: 6.2 waiting for its first rewrite fills the rewrite buffer only
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]
        self.current_size += len(data)  # AOF-INFO-1
        self.unsynced = True
        if self.core.config.get("appendfsync", "everysec") == "always":  # AOF-3: on disk before the reply leaves
            server = self.core.server
            if server is None or not hasattr(server, "before_replies"):
                self.flush()
            else:  # once for every command of this loop turn, before their replies go (beforeSleep)
                server.before_replies = self.sync_before_replies

    def sync_before_replies(self) -> None:
        server = self.core.server
        if server is not None:
            server.before_replies = None
        self.flush()

    def everysec(self) -> None:
        """The cron's part: ``everysec`` syncs what was written at most a second ago."""
        policy = self.core.config.get("appendfsync")
        if self.fd >= 0 and self.unsynced and policy == "always":
            self.flush()  # written by commands whose replies never left (CLIENT REPLY OFF)
        elif self.fd >= 0 and self.unsynced and policy == "everysec":
            now = self.core.now_ms()
            if now - self.last_fsync >= 1000 or now < self.last_fsync:
                os.fsync(self.fd)
                self.unsynced = False
                self.last_fsync = now

    def flush(self) -> None:
        """flushAppendOnlyFile(force): everything written reaches the disk."""
        if self.fd >= 0 and self.unsynced:
            os.fsync(self.fd)
            self.unsynced = False

    def close(self) -> None:
        if self.fd >= 0:
            self.flush()
            os.close(self.fd)
            self.fd = -1

    # -- files -------------------------------------------------------------------------------------------------

    def open_new_incr(self) -> None:
        """openNewIncrAofForAppend: the next incremental file, named in the manifest before anything goes in."""
        os.makedirs(self.dirname(), exist_ok=True)
        seq = self.manifest.incr[-1][1] + 1 if self.manifest.incr else 1
        name = f"{self.filename()}.{seq}.incr.aof"
        fd = os.open(os.path.join(self.dirname(), name), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
        self.manifest.incr.append((name, seq))
        self.write_manifest()
        self.close()
        self.fd = fd
        self.selected_db = -1

    def base_chunks(self) -> list[bytes]:
        """The new base: an RDB file marked as an AOF base, or the commands that rebuild the data."""
        p = self.persistence
        if self.core.config.get("aof-use-rdb-preamble", "yes") == "yes":  # AOF-2
            return list(p.rdb_chunks(aof_base=True))
        return [b"".join(rewrite_commands(self.core))]

    def fork_base_writer(self, temp: str) -> int | None:
        """A child that writes the new base into ``temp`` and exits (0: written); its pid, or None when fork failed."""
        try:
            pid = self.persistence.fork()
        except OSError as e:
            log.warning("Can't rewrite append only file in background: fork: %s", e)
            return None
        if pid == 0:  # the parent names the file when the child is done
            code = 1
            try:
                close_inherited_descriptors()
                self.persistence.child_delay()
                write_synced(temp, self.base_chunks())
                code = 0
            finally:
                os._exit(code)
        return pid

    def start_rewrite(self, background: bool) -> bool:
        """rewriteAppendOnlyFileBackground: new incr file now, the base from a child (or at once)."""
        if self.single:
            return self.start_single_rewrite(background)
        p = self.persistence
        self.flush()
        self.open_new_incr()
        base_seq = self.manifest.base[1] + 1 if self.manifest.base is not None else 1
        preamble = self.core.config.get("aof-use-rdb-preamble", "yes") == "yes"
        name = f"{self.filename()}.{base_seq}.base.{'rdb' if preamble else 'aof'}"
        incr = self.manifest.incr[-1]
        target = os.path.join(self.dirname(), name)
        temp = p.path(f"temp-rewriteaof-bg-{os.getpid()}.aof")
        p.aof_rewrites += 1
        if not background or not p.can_fork():
            write_atomically(temp, target, self.base_chunks())
            self.rewrite_done(name, base_seq, incr)
            return True
        pid = self.fork_base_writer(temp)
        if pid is None:
            return False

        def finished(ok: bool) -> None:
            p.last_aof_rewrite_ok = ok
            if ok:
                try:
                    os.replace(temp, target)
                except OSError as e:
                    p.last_aof_rewrite_ok = False
                    log.warning("Error trying to rename the temporary AOF base file %s into %s: %s", temp, name, e)
                    return
                self.rewrite_done(name, base_seq, incr)
                log.info("Background AOF rewrite finished successfully")
            else:
                log.warning("Background AOF rewrite terminated with error")
                try:
                    os.unlink(temp)
                except OSError:
                    pass

        p.child = Child(pid, "aof", self.core.dirty, counted(p, finished))
        p.arm_cron()
        log.info("Background append only file rewriting started by pid %d", pid)
        return True

    def rewrite_done(self, name: str, seq: int, incr: tuple[str, int]) -> None:
        """backgroundRewriteDoneHandler: the new base and the incr files from ``incr`` on; the rest deleted."""
        m = self.manifest
        old = [m.base[0]] if m.base is not None else []
        keep = m.incr.index(incr) if incr in m.incr else len(m.incr) - 1
        old += [n for n, _ in m.incr[:keep]]
        m.base = (name, seq, "b")
        m.incr = m.incr[keep:]
        self.write_manifest()
        # AOF-INFO-1: the new base and what went into the incr files since the fork, as 7.0 counts them
        self.current_size = sum(_size(os.path.join(self.dirname(), n)) for n in [name, *(i for i, _ in m.incr)])
        self.base_size = self.current_size
        for n in old:  # aof-disable-auto-gc no: the history files go at once
            try:
                os.unlink(os.path.join(self.dirname(), n))
            except OSError:
                pass
        observer = self.core.observer  # AOF-7: --checked's model finishes its rewrite here too
        mirror = getattr(observer, "aof_rewrite_done", None) if observer is not None else None
        if mirror is not None:
            mirror()

    # -- 6.2's single file (AOF-SINGLE-1, AOF-SINGLE-2) ------------------------------------------------------

    def open_single(self) -> None:
        """The AOF file opened for appending (created empty when there is none), sizes as 6.2 takes them."""
        fd = os.open(self.single_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.close()
        self.fd = fd
        self.selected_db = -1
        self.current_size = self.base_size = _size(self.single_path())

    def start_single_rewrite(self, background: bool) -> bool:
        """6.2's rewriteAppendOnlyFileBackground: the child writes the base to a temporary file while
        the parent appends to the old file and to the rewrite buffer, which opens with a SELECT."""
        p = self.persistence
        self.flush()
        self.selected_db = -1
        temp = p.path(f"temp-rewriteaof-bg-{os.getpid()}.aof")
        p.aof_rewrites += 1
        if not background or not p.can_fork():
            write_atomically(temp, self.single_path(), self.base_chunks())
            if self.fd >= 0 or self.persistence.aof is self:
                self.open_single()
            self.mirror_rewrite_done()
            return True
        pid = self.fork_base_writer(temp)
        if pid is None:
            return False
        self.rewrite_buffer = []

        def finished(ok: bool) -> None:
            buffered, self.rewrite_buffer = self.rewrite_buffer or [], None
            p.last_aof_rewrite_ok = ok
            if not ok:
                log.warning("Background AOF rewrite terminated with error")
                _unlink(temp)
                return
            try:
                with open(temp, "ab") as fh:  # the residual parent diff, then the file takes the AOF's name
                    fh.write(b"".join(buffered))
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(temp, self.single_path())
            except OSError as e:
                p.last_aof_rewrite_ok = False
                log.warning("Error trying to rename the temporary AOF file %s into %s: %s", temp,
                            self.filename(), e)
                _unlink(temp)
                return
            if p.aof is self:
                self.open_single()
            self.mirror_rewrite_done()
            log.info("Background AOF rewrite finished successfully")

        p.child = Child(pid, "aof", self.core.dirty, counted(p, finished))
        p.arm_cron()
        log.info("Background append only file rewriting started by pid %d", pid)
        return True

    def mirror_rewrite_done(self) -> None:
        """AOF-7: --checked's model finishes its rewrite where the server's does."""
        observer = self.core.observer
        mirror = getattr(observer, "aof_rewrite_done", None) if observer is not None else None
        if mirror is not None:
            mirror()

    def read_single(self) -> bytes | None:
        """6.2's AOF file's bytes; None when there is no file."""
        try:
            with open(self.single_path(), "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise LoadError(f"cannot read the AOF file {self.single_path()!r}: {e.strerror}") from e

    # -- loading ---------------------------------------------------------------------------------------------

    def read_manifest(self) -> bool:
        """aofLoadManifestFromDisk: False when there is no manifest (6.2: no AOF file). 7.0 first takes
        in an old single AOF file of ``dir`` (AOF-SINGLE-4)."""
        if self.single:
            return os.path.exists(self.single_path())
        found = self._read_manifest()
        if self.upgrade_old_file():
            return True
        return found

    def upgrade_old_file(self) -> bool:
        """aofUpgradePrepare (AOF-SINGLE-4): an ``appendfilename`` file in ``dir`` (6.2's AOF) becomes the
        base of a manifest in the AOF directory, when there is no directory, no manifest, or one naming it
        alone as a base that is not there."""
        old = self.single_path()
        if not os.path.isfile(old):
            return False
        m = self.manifest
        name = self.filename()
        if os.path.isdir(self.dirname()) and (m.base is not None or m.incr) and not (
                m.base is not None and not m.incr and m.base[0] == name
                and not os.path.exists(os.path.join(self.dirname(), name))):
            return False
        try:
            os.makedirs(self.dirname(), exist_ok=True)
            self.manifest = Manifest()
            self.manifest.base = (name, 1, "b")
            self.write_manifest()
            os.replace(old, os.path.join(self.dirname(), name))
        except OSError as e:
            raise LoadError(f"Error trying to move the old AOF file {name} into dir "
                            f"{self.core.config.get('appenddirname') or 'appendonlydir'}: {e.strerror}") from e
        log.info("Successfully migrated an old-style AOF file (%s) into the AOF directory (%s).", name,
                 self.core.config.get("appenddirname") or "appendonlydir")
        return True

    def _read_manifest(self) -> bool:
        try:
            with open(self.manifest_path(), encoding="utf-8", errors="surrogateescape") as fh:
                text = fh.read()
        except FileNotFoundError:
            return False
        except OSError as e:
            raise LoadError(f"cannot read the AOF manifest {self.manifest_path()!r}: {e.strerror}") from e
        self.manifest = Manifest.parse(text)
        return True

    def load(self) -> bool:
        """loadAppendOnlyFiles: the base, then each incremental file, into the (empty) databases.
        False when the AOF holds nothing (an empty file: 6.2's ``loadAppendOnlyFile`` says C_ERR)."""
        m = self.manifest
        files: list[tuple[str, bool]] = []
        if self.single:
            files.append((self.filename(), False))
        else:
            if m.base is not None:
                files.append((m.base[0], True))
            files += [(name, False) for name, _ in m.incr]
        self.loading = True
        propagation, self.core.propagation = self.core.propagation, None  # the AOF client propagates nothing
        observer, self.core.observer = self.core.observer, None  # and is no client of a trace or a checker
        total = base = 0
        try:
            for n, (name, is_base) in enumerate(files):
                path = self.file_path(name)
                try:
                    with open(path, "rb") as fh:
                        data = fh.read()
                except FileNotFoundError:
                    if self.single:
                        raise LoadError("Fatal error: can't open the append log file for reading: "
                                        "No such file or directory") from None
                    if is_base or n == len(files) - 1:
                        raise LoadError(f"The AOF file {name} doesn't exist") from None
                    continue
                last = n == len(files) - 1
                size = self.load_file(name, data, last)
                total += size
                if is_base:
                    base = size
        finally:
            self.loading = False
            self.core.propagation = propagation
            self.core.observer = observer
        self.current_size = total  # AOF-INFO-1: 7.0 counts the base alone as base, 6.2 the whole file
        self.base_size = total if self.single else base
        return total > 0

    def load_file(self, name: str, data: bytes, last: bool) -> int:
        """One file's commands run; the size it has once loaded (a cut tail truncated)."""
        p = self.persistence
        pos = 0
        if data.startswith(b"REDIS") or data.startswith(b"VALKEY"):
            try:
                f = p.load_rdb(data, aof_base=True)
            except (rf.RdbFileError, rdb.UnmodelledType) as e:
                raise LoadError(f"Bad file format reading the append only file {name}: {e}") from e
            pos = f.end
        client = self.core.connect(None)
        client.id = AOF_CLIENT_ID
        before_multi = 0  # where the last MULTI began: a transaction the file cuts is dropped whole
        try:
            while True:
                try:
                    parsed = parse_command(data, pos) if pos < len(data) else None
                except LoadError:  # Redis's fmterr, in its words
                    where = "" if self.single else f" {name}"
                    target = "<filename>" if self.single else "<filename.manifest>"
                    raise LoadError(f"Bad file format reading the append only file{where}: make a backup of "
                                    f"your AOF file, then use ./redis-check-aof --fix {target}") from None
                if parsed is None and pos >= len(data) and not client.in_multi:
                    break
                if parsed is None:
                    # AOF-SINGLE-3: cut inside a command: up to the last whole one (even inside a MULTI);
                    # a file ending inside a MULTI: up to before it
                    cut = before_multi if client.in_multi and pos >= len(data) else pos
                    if not last or self.core.config.get("aof-load-truncated", "yes") != "yes":
                        where = "" if self.single else f" {name}"
                        target = "<filename>" if self.single else "<filename.manifest>"
                        raise LoadError(f"Unexpected end of file reading the append only file{where}. You can: "
                                        f"1) Make a backup of your AOF file, then use ./redis-check-aof --fix "
                                        f"{target}. 2) Alternatively you can set the "
                                        f"'aof-load-truncated' configuration option to yes and restart the server.")
                    if cut == before_multi and client.in_multi:
                        log.warning("Revert incomplete MULTI/EXEC transaction in AOF file %s", name)
                    log.warning("!!! Warning: short read while loading the AOF file %s!!! "
                                "AOF loaded anyway because aof-load-truncated is enabled", name)
                    self.truncate(name, cut)
                    return cut
                argv, end = parsed
                if not argv or argv[0][:1] == b"#":  # an annotation (aof-timestamp-enabled)
                    pos = end
                    continue
                if argv[0].lower() == b"multi":
                    before_multi = pos
                pos = end
                self.core.execute(client, obeyed(argv))
        finally:
            self.core.disconnect(client, "server")
        return len(data)

    def truncate(self, name: str, size: int) -> None:
        try:
            os.truncate(self.file_path(name), size)
        except OSError as e:
            log.warning("Error truncating the AOF file %s: %s", name, e)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_synced(path: str, chunks: list[bytes]) -> None:
    with open(path, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)
        fh.flush()
        os.fsync(fh.fileno())


def obeyed(argv: list[bytes]) -> list[bytes]:
    """What the AOF client runs: a trim's LIMIT without ``~`` is ignored for it (``mustObeyClient``)."""
    name = argv[0].lower()
    if name not in (b"xadd", b"xtrim") or b"=" not in argv:
        return argv
    out: list[bytes] = []
    i = 0
    while i < len(argv):
        if i > 1 and argv[i].lower() == b"limit" and i + 1 < len(argv) and out and b"=" in out:
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def parse_command(data: bytes, pos: int) -> tuple[list[bytes], int] | None:
    """One RESP array of bulk strings at ``pos`` (or an annotation line): (argv, end); None when cut short."""
    if data[pos:pos + 1] == b"#":
        eol = data.find(b"\r\n", pos)
        return ([b"#"], eol + 2) if eol >= 0 else None
    eol = data.find(b"\r\n", pos)
    if eol < 0:
        return None
    if data[pos:pos + 1] != b"*":
        raise LoadError("Bad file format reading the append only file: a command does not start with '*'")
    count = int(data[pos + 1:eol])
    pos = eol + 2
    argv: list[bytes] = []
    for _ in range(count):
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return None
        if data[pos:pos + 1] != b"$":
            raise LoadError("Bad file format reading the append only file: an argument does not start with '$'")
        size = int(data[pos + 1:eol])
        start = eol + 2
        if start + size + 2 > len(data):
            return None
        argv.append(data[start:start + size])
        pos = start + size + 2
    return argv, pos


# -- the rewrite in commands (aof-use-rdb-preamble no) -------------------------------------------------------


def rewrite_commands(core: Core) -> list[bytes]:
    """rewriteAppendOnlyFileRio: per non-empty database a SELECT and each key's commands."""
    out: list[bytes] = []
    for dbid, db in enumerate(core.dbs):
        if not db:
            continue
        out.append(resp_command([b"SELECT", b"%d" % dbid]))
        for key, value in db.items():
            if type(value) is bytes:
                out.append(resp_command([b"SET", key, value]))
            elif isinstance(value, Stream):
                out += _rewrite_stream(key, value, core.dialect.stream_counters)
            elif hasattr(value, "members"):
                members = list(value.members)
                for i in range(0, len(members), 64):  # AOF_REWRITE_ITEMS_PER_CMD
                    out.append(resp_command([b"SADD", key, *members[i:i + 64]]))
            elif getattr(value, "kind", None) == "hash":  # rewriteHashObject: HMSET, 64 pairs a command
                pairs = [x for pair in value.items() for x in pair]
                for i in range(0, len(pairs), 128):
                    out.append(resp_command([b"HMSET", key, *pairs[i:i + 128]]))
            else:
                items = list(value)
                for i in range(0, len(items), 64):
                    out.append(resp_command([b"RPUSH", key, *items[i:i + 64]]))
            when = getattr(db, "expires", {}).get(key)
            if when is not None:  # EXPIRE-KEYS-1: the key's time follows its value
                out.append(resp_command([b"PEXPIREAT", key, b"%d" % when]))
    return out


def _rewrite_stream(key: bytes, s: Stream, counters: bool) -> list[bytes]:
    """rewriteStreamObject (AOF-5; 6.2 has no counters to write, AOF-DIALECT-1)."""
    out: list[bytes] = []
    if s.length:
        for node in s.nodes:
            for i in range(len(node.ms)):
                if not node.is_dead(i):
                    out.append(resp_command([b"XADD", key, id_text(node.key(i)), *node.fields_at(i)]))
    else:
        out.append(resp_command([b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]))
    setid = [b"XSETID", key, id_text(s.last_id)]
    if counters:
        setid += [b"ENTRIESADDED", b"%d" % s.entries_added, b"MAXDELETEDID", id_text(s.max_deleted)]
    out.append(resp_command(setid))
    for name in sorted(s.groups):
        g = s.groups[name]
        create = [b"XGROUP", b"CREATE", key, name, id_text(g.last_id)]
        if counters:
            create += [b"ENTRIESREAD", b"%d" % g.entries_read]
        out.append(resp_command(create))
        for c in g.consumers_in_order():
            if not len(c.pel):
                out.append(resp_command([b"XGROUP", b"CREATECONSUMER", key, name, c.name]))
                continue
            for k in c.pel:
                nack = c.pel[k]
                out.append(resp_command([b"XCLAIM", key, name, c.name, b"0", id_text(k), b"TIME", b"%d" % nack.time,
                                         b"RETRYCOUNT", b"%d" % nack.count, b"JUSTID", b"FORCE"]))
    return out


# -- wiring into the server -------------------------------------------------------------------------------------


def aof_of(core: Core) -> Aof | None:
    p = persistence_of(core)
    found = p.aof
    return found if isinstance(found, Aof) else None


def start_aof(core: Core, at_start: bool, in_exec: bool = False) -> None:
    """appendonly turned on: at start, load the AOF when there is one (AOF-4: never the RDB file, even
    without an AOF), else write a first base (6.2: create an empty file, AOF-SINGLE-1); at run time
    (CONFIG SET appendonly yes), rewrite at once, or once another child is done (AOF-SCHEDULE-1)."""
    p = persistence_of(core)
    aof = Aof(core, p)
    p.aof = aof
    core.propagation = aof.propagator
    p.hooks.append(aof.everysec)
    if aof.single and at_start:
        if aof.read_manifest():
            aof.load()
        aof.open_single()
        return
    if not at_start and (in_exec or (p.child is not None and p.child.kind != "aof")):  # AOF-SCHEDULE-1, FORK-3
        if aof.single:  # 6.2 opens (creates) its file at once; nothing goes in before the rewrite
            os.close(os.open(aof.single_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
        p.aof_rewrite_scheduled = True
        p.arm_cron()
        log.warning("AOF was enabled during a transaction. An AOF background was scheduled to start when possible."
                    if in_exec else "AOF was enabled but there is already another background operation. An AOF "
                    "background was scheduled to start when possible.")
        return
    if at_start and aof.read_manifest():  # AOF-4: the AOF, never the RDB file
        aof.load()
        if not aof.manifest.incr:
            aof.open_new_incr()
        else:
            name = aof.manifest.incr[-1][0]
            aof.fd = os.open(os.path.join(aof.dirname(), name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return
    # AOF-5: at run time Redis forks this rewrite (INFO shows it in progress; a DEBUG LOADAOF before it ends
    # finds no manifest and exits); this server writes the base in the foreground, whole at once.
    aof.start_rewrite(background=False)
    if at_start:  # AOF-INFO-1: 7.0 counts nothing for the first base it writes at start
        aof.current_size = aof.base_size = 0
        p.aof_rewrites -= 1


def stop_aof(core: Core) -> None:
    """stopAppendOnly: the file synced and closed, a rewrite in progress killed, none scheduled."""
    p = persistence_of(core)
    aof = p.aof
    if isinstance(aof, Aof):
        aof.close()
        if aof.everysec in p.hooks:
            p.hooks.remove(aof.everysec)
    if p.child is not None and p.child.kind == "aof":  # killAppendOnlyChild
        p.kill_child()
        _unlink(p.path(f"temp-rewriteaof-bg-{os.getpid()}.aof"))
    p.aof_rewrite_scheduled = False
    p.aof = None
    core.propagation = None


def check_appendonly(core: Core, in_exec: bool = False) -> None:
    """CONFIG SET appendonly took effect: start or stop the AOF to match it (``in_exec``: inside EXEC, where
    7.0 and Valkey schedule the first rewrite, FORK-3)."""
    wanted = core.config.get("appendonly", "no") == "yes"
    if wanted and aof_of(core) is None:
        start_aof(core, at_start=False, in_exec=in_exec)
    elif not wanted and aof_of(core) is not None:
        stop_aof(core)


def rewrite_now(core: Core) -> bool:
    """rewriteAppendOnlyFileBackground, from BGREWRITEAOF or the cron; False when it could not start."""
    p = persistence_of(core)
    aof = aof_of(core)
    if aof is None:  # with appendonly no, the rewrite still writes a base (7.0: in the AOF directory)
        aof = Aof(core, p)
        if not aof.single:
            aof._read_manifest()  # the manifest as it is: no old file is taken in here
        aof.start_rewrite(background=False)
        aof.close()
        return True
    return aof.start_rewrite(background=True)  # AOF-5


def bgrewriteaof_command(ctx: Context) -> Any:
    core = ctx.core
    p = persistence_of(core)
    p.reap()
    if p.child is not None and p.child.kind == "aof":
        raise ReplyError(REWRITE_IN_PROGRESS)  # FORK-1
    if p.child is not None or (ctx.client.in_multi and core.dialect.exec_schedules_children):  # FORK-2, FORK-3
        p.aof_rewrite_scheduled = True
        if core.dialect.aof_rewrite_limited:
            p.aof_rewrite_failures = 0  # AOF-LIMIT-1: asked for by hand, it may start at once
        p.arm_cron()
        return Simple(REWRITE_SCHEDULED)
    p.aof_rewrite_scheduled = False  # FORK-2: rewriteAppendOnlyFileBackground clears it
    if not rewrite_now(core):
        raise ReplyError("ERR Can't execute an AOF background rewriting. Please check the server logs for more "
                         "information.")
    return Simple(REWRITE_STARTED)


def debug_loadaof(ctx: Context) -> Any:
    core = ctx.core
    p = persistence_of(core)
    aof = aof_of(core)
    if aof is not None:
        aof.flush()
    p.empty_data()
    loader = aof if aof is not None else Aof(core, p)
    try:
        if not loader.read_manifest():
            if core.dialect.debug_loadaof_missing_error is not None:
                raise ReplyError(core.dialect.debug_loadaof_missing_error)  # LOADAOF-DIALECT-1
            # DEBUG-LOADAOF-3: 7.0 exits without a word, 6.2 after its fopen failed
            return exit_like_redis(ctx, "Fatal error: can't open the append log file for reading: No such file "
                                        "or directory" if loader.single else None)
        if not loader.load() and loader.single:
            raise ReplyError("ERR")  # LOADAOF-DIALECT-2: 6.2's empty file is no AOF to load
    except LoadError as e:
        if core.dialect.debug_loadaof_missing_error is not None:
            log.warning("DEBUG LOADAOF: %s", e)
            raise ReplyError(core.dialect.debug_loadaof_missing_error) from None
        return exit_like_redis(ctx, str(e))  # DEBUG-LOADAOF-4: a file Redis cannot load ends it too
    core.dirty = 0
    log.info("Append Only File loaded by DEBUG LOADAOF")
    return OK


def exit_like_redis(ctx: Context, line: str | None) -> Any:
    """DEBUG-LOADAOF-4: where Redis calls ``exit(1)``: the log line, then the server ends as after a kill
    (no reply, every connection closed, nothing saved; what the AOF wrote stays). `xspec serve` itself then
    exits with status 1; a node of ``--replicas`` crashes alone; a server in a thread of another program
    (tests) stops listening and leaves the program running. Only with ``enable-debug-command`` yes or local:
    otherwise (6.2's DEBUG needs no enabling) the command answers an error instead."""
    core = ctx.core
    server: Any = core.server
    if core.config.get("enable-debug-command", "no") == "no" or server is None:
        raise ReplyError(EXIT_REFUSED)
    if line is not None:
        log.warning("%s", line)
    p = persistence_of(core)
    p.finished = True  # exit(1) saves nothing
    p.kill_child()
    aof = aof_of(core)
    if aof is not None and aof.fd >= 0:
        os.close(aof.fd)  # unsynced, as the page cache keeps it for an exited process
        aof.fd = -1
    server.shutdown_asap = True  # no further command runs, the cron stops
    conn = ctx.client.conn
    transport = getattr(conn, "transport", None)
    if transport is not None:
        conn.closed_by_server = True  # type: ignore[union-attr]
        transport.abort()  # no reply
    loop = asyncio.get_running_loop()
    deployment = getattr(core.replication, "deployment", None)
    node = next((n for n in getattr(deployment, "nodes", {}).values() if n.server is server), None)
    if deployment is not None and node is not None:
        loop.call_soon(deployment.crash, node)
        return OK
    loop.call_soon(_crash_alone, server)
    if threading.current_thread() is threading.main_thread():
        loop.call_soon(_exit_process)
    return OK


def _crash_alone(server: Any) -> None:
    """A lone server ends as ``Deployment.crash`` ends a node: the listener and every connection close."""
    stop = getattr(server.core.replication, "stop", None)  # finish_replication, without importing it here
    if stop is not None:
        stop()
    if server._server is not None:
        server._server.close()
    for conn in list(server.connections):
        conn.closed_by_server = True
        if conn.transport is not None:
            conn.transport.abort()
    server.connections.clear()


def _exit_process() -> None:
    raise SystemExit(1)


def counted(p: Persistence, finished: Callable[[bool], None]) -> Callable[[bool], None]:
    """A rewrite's end handler that also counts failures in a row (AOF-LIMIT-1) and tells ``--checked``'s
    model of a failed one (``rewrite-failed``; a finished one it learns of from ``rewrite_done``)."""
    def on_exit(ok: bool) -> None:
        finished(ok)
        if p.last_aof_rewrite_ok:
            p.aof_rewrite_failures = 0
        else:
            p.aof_rewrite_failures += 1
            mirror_step(p.core, "rewrite-failed")
    return on_exit


REWRITE_LIMIT_THRESHOLD = 3
REWRITE_LIMIT_MAX_MINUTES = 60


def rewrite_limited(p: Persistence) -> bool:
    """``aofRewriteLimited`` (AOF-LIMIT-1): after three failed rewrites in a row the cron's rewrites wait,
    first 1 minute, then twice as long after each further postponement (at most 60); once the wait is
    over one rewrite may start. Asking has effects (it starts a wait and logs it), so callers ask last."""
    if not p.core.dialect.aof_rewrite_limited:
        return False
    if p.aof_rewrite_failures < REWRITE_LIMIT_THRESHOLD:
        p.rewrite_limit = (0, 0)
        return False
    delay, until = p.rewrite_limit
    now = p.core.clock.now_ms() // 1000  # the cron's reading, not a command's
    if until:
        if now < until:
            return True
        p.rewrite_limit = (delay, 0)
        return False
    delay = min(1 if delay == 0 else delay * 2, REWRITE_LIMIT_MAX_MINUTES)
    p.rewrite_limit = (delay, now + delay * 60)
    log.warning("Background AOF rewrite has repeatedly failed and triggered the limit, will retry in %d minutes",
                delay)
    return True


def scheduled_rewrite(p: Persistence) -> None:
    """The cron's part: a rewrite asked for while another child ran starts once none runs (FORK-2), unless
    failed rewrites postpone it (AOF-LIMIT-1)."""
    if p.aof_rewrite_scheduled and p.child is None and not rewrite_limited(p):
        p.aof_rewrite_scheduled = False
        mirror_step(p.core, "start-rewrite")  # --checked's model starts it too
        rewrite_now(p.core)


def auto_rewrite(p: Persistence) -> None:
    """serverCron's automatic rewrite (AOF-AUTO-1): with the AOF on and no child, once the AOF is larger
    than auto-aof-rewrite-min-size and has grown by auto-aof-rewrite-percentage over its base size."""
    aof = aof_of(p.core)
    if aof is None or p.child is not None:
        return
    config = p.core.config
    try:
        percentage = int(config.get("auto-aof-rewrite-percentage", "100"))
        min_size = int(config.get("auto-aof-rewrite-min-size", "67108864"))
    except ValueError:
        return
    if not percentage or aof.current_size <= min_size:
        return
    growth = aof.current_size * 100 // (aof.base_size or 1) - 100
    if growth >= percentage and not rewrite_limited(p):  # AOF-LIMIT-1
        log.info("Starting automatic rewriting of AOF on %d%% growth", growth)
        mirror_step(p.core, "auto-rewrite")  # --checked's model starts it too
        p.aof_rewrite_scheduled = False  # FORK-2: rewriteAppendOnlyFileBackground clears it
        aof.start_rewrite(background=True)


def start_persistence(core: Core) -> None:
    """At start: load what is on disk (the AOF when appendonly is yes, else the RDB file), and run the cron."""
    p = persistence_of(core)
    if core.config.get("appendonly", "no") == "yes":
        start_aof(core, at_start=True)
    else:
        p.load_rdb_at_start()
    p.first_hooks.append(lambda: scheduled_rewrite(p))
    p.idle_hooks.append(lambda: auto_rewrite(p))
    p.arm_cron()


def finish_persistence(core: Core) -> None:
    """prepareForShutdown: no child left, the AOF on disk, and the RDB file saved when save points are set."""
    p = core.persistence
    if not isinstance(p, Persistence) or p.finished:
        return
    p.finished = True
    p.kill_child()
    aof = aof_of(core)
    if aof is not None:
        aof.close()
    if p.save_points():
        log.info("Saving the final RDB snapshot before exiting.")
        p.save()


def add_persistence(handlers: dict[str, Any]) -> None:
    """Put the persistence commands into a handler table: SAVE, BGSAVE, LASTSAVE, BGREWRITEAOF, DEBUG
    RELOAD and LOADAOF (in front of the table's DEBUG), and CONFIG SET followed by a check of appendonly."""
    add_rdb_commands(handlers)
    handlers["bgrewriteaof"] = bgrewriteaof_command
    DEBUG_SUBCOMMANDS[b"loadaof"] = debug_loadaof
    config_set = handlers.get("config|set")
    if config_set is not None:
        def config_set_then_aof(ctx: Context) -> Any:
            reply = config_set(ctx)
            check_appendonly(ctx.core, ctx.client.in_multi and ctx.core.dialect.exec_schedules_children)
            return reply

        handlers["config|set"] = config_set_then_aof
    info = handlers.get("info")
    if info is not None:
        def info_with_persistence(ctx: Context) -> Any:
            persistence_of(ctx.core).reap()  # before any field is read: the cron's reap (FORK-2) comes whole
            return persistence_info(ctx.core, info(ctx))

        handlers["info"] = info_with_persistence


def persistence_info(core: Core, reply: Any) -> Any:
    """INFO's persistence fields from this server's state (the rest of INFO is generic.py's)."""
    if not isinstance(reply, Verbatim) or (b"rdb_bgsave_in_progress:" not in reply.text
                                           and b"total_forks:" not in reply.text):
        return reply
    p = persistence_of(core)
    p.reap()
    child = p.child
    values = {
        b"rdb_bgsave_in_progress": int(child is not None and child.kind == "rdb"),
        b"rdb_last_save_time": p.lastsave,
        b"rdb_last_bgsave_status": b"ok" if p.last_bgsave_ok else b"err",
        b"rdb_saves": p.saves,
        b"aof_enabled": int(aof_of(core) is not None),
        b"aof_rewrite_in_progress": int(child is not None and child.kind == "aof"),
        b"aof_rewrite_scheduled": int(p.aof_rewrite_scheduled),
        b"aof_rewrites": p.aof_rewrites,
        b"aof_last_bgrewrite_status": b"ok" if p.last_aof_rewrite_ok else b"err",
        b"aof_rewrites_consecutive_failures": p.aof_rewrite_failures,  # AOF-LIMIT-1
        b"total_forks": p.forks,
    }
    lines = reply.text.split(b"\r\n")
    end = None
    for i, line in enumerate(lines):
        name, sep, _ = line.partition(b":")
        if sep and name in values:
            v = values[name]
            lines[i] = name + b":" + (v if isinstance(v, bytes) else b"%d" % v)
        if line == b"# Persistence":
            end = i + 1
        elif end is not None and end == i and line:
            end = i + 1  # the section's last line so far
    aof = aof_of(core)
    if aof is not None and end is not None:  # AOF-INFO-1: what the server adds while the AOF is on
        extra = [b"aof_current_size:%d" % aof.current_size, b"aof_base_size:%d" % aof.base_size,
                 b"aof_pending_rewrite:%d" % p.aof_rewrite_scheduled, b"aof_buffer_length:0"]
        if aof.single:
            extra.append(b"aof_rewrite_buffer_length:0")  # 6.2 hands its buffer to the child as it goes
        extra += [b"aof_pending_bio_fsync:0", b"aof_delayed_fsync:0"]
        lines[end:end] = extra
    return Verbatim(reply.fmt, b"\r\n".join(lines))
