"""The append-only file in Redis 7.0's multi-part form: ``appendonly``, ``appendfsync``, BGREWRITEAOF, DEBUG LOADAOF.

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
"""

from __future__ import annotations

import logging
import os
from typing import Any

from xspec.reference.api import ReplyError
from xspec.reference.core import Context, Core
from xspec.reference.persistence import (
    DEBUG_SUBCOMMANDS,
    Child,
    LoadError,
    Persistence,
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
        self.last_fsync = core.now_ms()
        self.loading = False
        self.propagator = Propagator(self.feed, core.dialect.stream_counters)

    # -- names ----------------------------------------------------------------------------------------------

    def dirname(self) -> str:
        return self.persistence.path(self.core.config.get("appenddirname") or "appendonlydir")

    def filename(self) -> str:
        return self.core.config.get("appendfilename") or "appendonly.aof"

    def manifest_path(self) -> str:
        return os.path.join(self.dirname(), f"{self.filename()}.manifest")

    def write_manifest(self) -> None:
        write_atomically(os.path.join(self.dirname(), f"temp-{self.filename()}.manifest"), self.manifest_path(),
                         [self.manifest.text()])

    # -- appending --------------------------------------------------------------------------------------------

    def feed(self, ops: list[tuple[int, list[bytes]]]) -> None:
        """feedAppendOnlyFile for one call's commands (AOF-1): SELECT where the database changes."""
        if self.loading or self.fd < 0:
            return
        out = []
        for dbid, argv in ops:
            if dbid >= 0 and dbid != self.selected_db:
                out.append(resp_command([b"SELECT", b"%d" % dbid]))
                self.selected_db = dbid
            out.append(resp_command(argv))
        data = b"".join(out)
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]
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

    def start_rewrite(self, background: bool) -> bool:
        """rewriteAppendOnlyFileBackground: new incr file now, the base from a child (or at once)."""
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
        try:
            pid = os.fork()
        except OSError as e:
            log.warning("Can't rewrite append only file in background: fork: %s", e)
            return False
        if pid == 0:  # the child writes the temporary file; the parent names it the base when it is done
            code = 1
            try:
                write_synced(temp, self.base_chunks())
                code = 0
            finally:
                os._exit(code)

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

        p.child = Child(pid, "aof", self.core.dirty, finished)
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
        for n in old:  # aof-disable-auto-gc no: the history files go at once
            try:
                os.unlink(os.path.join(self.dirname(), n))
            except OSError:
                pass

    # -- loading ---------------------------------------------------------------------------------------------

    def read_manifest(self) -> bool:
        """aofLoadManifestFromDisk: False when there is no manifest."""
        try:
            with open(self.manifest_path(), encoding="utf-8", errors="surrogateescape") as fh:
                text = fh.read()
        except FileNotFoundError:
            return False
        except OSError as e:
            raise LoadError(f"cannot read the AOF manifest {self.manifest_path()!r}: {e.strerror}") from e
        self.manifest = Manifest.parse(text)
        return True

    def load(self) -> None:
        """loadAppendOnlyFiles: the base, then each incremental file, into the (empty) databases."""
        m = self.manifest
        files: list[tuple[str, bool]] = []
        if m.base is not None:
            files.append((m.base[0], True))
        files += [(name, False) for name, _ in m.incr]
        self.loading = True
        propagation, self.core.propagation = self.core.propagation, None  # the AOF client propagates nothing
        observer, self.core.observer = self.core.observer, None  # and is no client of a trace or a checker
        try:
            for n, (name, is_base) in enumerate(files):
                path = os.path.join(self.dirname(), name)
                try:
                    with open(path, "rb") as fh:
                        data = fh.read()
                except FileNotFoundError:
                    if is_base or n == len(files) - 1:
                        raise LoadError(f"The AOF file {name} doesn't exist") from None
                    continue
                last = n == len(files) - 1
                self.load_file(name, data, last)
        finally:
            self.loading = False
            self.core.propagation = propagation
            self.core.observer = observer

    def load_file(self, name: str, data: bytes, last: bool) -> None:
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
        try:
            while pos < len(data):
                parsed = parse_command(data, pos)
                if parsed is None:
                    if not last or self.core.config.get("aof-load-truncated", "yes") != "yes":
                        raise LoadError(f"Unexpected end of file reading the append only file {name}. You can: "
                                        f"1) Make a backup of your AOF file, then use ./redis-check-aof --fix "
                                        f"<filename.manifest>. 2) Alternatively you can set the "
                                        f"'aof-load-truncated' configuration option to yes and restart the server.")
                    log.warning("!!! Warning: short read while loading the AOF file %s!!! "
                                "AOF loaded anyway because aof-load-truncated is enabled", name)
                    self.truncate(name, pos)
                    break
                argv, end = parsed
                if not argv or argv[0][:1] == b"#":  # an annotation (aof-timestamp-enabled)
                    pos = end
                    continue
                pos = end
                self.core.execute(client, obeyed(argv))
        finally:
            self.core.disconnect(client, "server")

    def truncate(self, name: str, size: int) -> None:
        try:
            os.truncate(os.path.join(self.dirname(), name), size)
        except OSError as e:
            log.warning("Error truncating the AOF file %s: %s", name, e)


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


def start_aof(core: Core, at_start: bool) -> None:
    """appendonly turned on: at start, load the AOF when there is one (AOF-4: never the RDB file, even
    without an AOF), else write a first base; at run time (CONFIG SET appendonly yes), rewrite at once."""
    p = persistence_of(core)
    aof = Aof(core, p)
    p.aof = aof
    core.propagation = aof.propagator
    p.hooks.append(aof.everysec)
    if at_start and aof.read_manifest():  # AOF-4: the AOF, never the RDB file
        aof.load()
        if not aof.manifest.incr:
            aof.open_new_incr()
        else:
            name = aof.manifest.incr[-1][0]
            aof.fd = os.open(os.path.join(aof.dirname(), name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return
    aof.start_rewrite(background=False)


def stop_aof(core: Core) -> None:
    p = persistence_of(core)
    aof = p.aof
    if isinstance(aof, Aof):
        aof.close()
        if aof.everysec in p.hooks:
            p.hooks.remove(aof.everysec)
    p.aof = None
    core.propagation = None


def check_appendonly(core: Core) -> None:
    """CONFIG SET appendonly took effect: start or stop the AOF to match it."""
    wanted = core.config.get("appendonly", "no") == "yes"
    if wanted and aof_of(core) is None:
        start_aof(core, at_start=False)
    elif not wanted and aof_of(core) is not None:
        stop_aof(core)


def bgrewriteaof_command(ctx: Context) -> Any:
    core = ctx.core
    p = persistence_of(core)
    p.reap()
    if p.child is not None and p.child.kind == "aof":
        raise ReplyError(REWRITE_IN_PROGRESS)
    if p.child is not None:
        p.aof_rewrite_scheduled = True
        p.arm_cron()
        return Simple("Background append only file rewriting scheduled")
    aof = aof_of(core)
    if aof is None:  # with appendonly no, the rewrite still writes a base in the AOF directory
        aof = Aof(core, p)
        aof.read_manifest()
        aof.start_rewrite(background=False)
        aof.close()
        return Simple("Background append only file rewriting started")
    if not aof.start_rewrite(background=True):  # AOF-5
        raise ReplyError("ERR Can't execute an AOF background rewriting. Please check the server logs for more "
                         "information.")
    return Simple("Background append only file rewriting started")


def debug_loadaof(ctx: Context) -> Any:
    core = ctx.core
    p = persistence_of(core)
    aof = aof_of(core)
    if aof is not None:
        aof.flush()
    p.empty_data()
    loader = aof if aof is not None else Aof(core, p)
    try:
        if loader.read_manifest():
            loader.load()
        elif aof is None and core.dialect.debug_loadaof_missing_error is not None:
            raise ReplyError(core.dialect.debug_loadaof_missing_error)  # LOADAOF-DIALECT-1
    except LoadError as e:
        log.warning("DEBUG LOADAOF: %s", e)
        raise ReplyError(f"ERR {e}") from None
    core.dirty = 0
    log.info("Append Only File loaded by DEBUG LOADAOF")
    return OK


def scheduled_rewrite(p: Persistence) -> None:
    """The cron's part: a rewrite asked for while another child ran starts once it is gone."""
    if p.aof_rewrite_scheduled and p.child is None:
        p.aof_rewrite_scheduled = False
        aof = aof_of(p.core)
        if aof is not None:
            aof.start_rewrite(background=True)


def start_persistence(core: Core) -> None:
    """At start: load what is on disk (the AOF when appendonly is yes, else the RDB file), and run the cron."""
    p = persistence_of(core)
    if core.config.get("appendonly", "no") == "yes":
        start_aof(core, at_start=True)
    else:
        p.load_rdb_at_start()
    p.hooks.append(lambda: scheduled_rewrite(p))
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
            check_appendonly(ctx.core)
            return reply

        handlers["config|set"] = config_set_then_aof
    info = handlers.get("info")
    if info is not None:
        def info_with_persistence(ctx: Context) -> Any:
            return persistence_info(ctx.core, info(ctx))

        handlers["info"] = info_with_persistence


def persistence_info(core: Core, reply: Any) -> Any:
    """INFO's persistence fields from this server's state (the rest of INFO is generic.py's)."""
    if not isinstance(reply, Verbatim) or b"rdb_bgsave_in_progress:" not in reply.text:
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
    }
    lines = reply.text.split(b"\r\n")
    for i, line in enumerate(lines):
        name, sep, _ = line.partition(b":")
        if sep and name in values:
            v = values[name]
            lines[i] = name + b":" + (v if isinstance(v, bytes) else b"%d" % v)
    return Verbatim(reply.fmt, b"\r\n".join(lines))
