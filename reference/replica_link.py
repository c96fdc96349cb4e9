"""Replication in the reference server, the replica's side: the link to the primary (REPL-5 .. REPL-12).

A :class:`ReplicaLink` runs as a task on the server's loop while the node
follows a primary (REPLICAOF host port, or the ``replicaof`` setting at start).
It connects, shakes hands as Redis 7.0's ``syncWithMaster`` does (``PING``,
``AUTH`` with ``masterauth``, ``REPLCONF listening-port``, ``REPLCONF capa eof
capa psync2``), asks ``PSYNC <cached id> <offset+1>`` (``PSYNC ? -1`` with no
cached master) and then:

* on ``+FULLRESYNC <id> <offset>`` reads the snapshot, in either of the forms a
  primary sends (``$<length>`` then the file, or diskless ``$EOF:<mark>`` ...
  ``<mark>``), empties the databases, loads it, takes the primary's ID and
  offset, clears its secondary ID, gets a new backlog and disconnects its own
  replicas (REPL-5);
* on ``+CONTINUE [<id>]`` keeps its data; a new ID shifts its own (REPL-7).

Then it applies the stream: each command runs on the core as the *master
client* (obeyed: no reply, no READONLY, REPL-10/REPL-12; a blocked reader is
served by a replicated write as by a local one), the offset moves by the
command's bytes (a transaction's at its EXEC, REPL-2), and the bytes applied
go verbatim to this node's backlog and its own replicas (REPL-12). It answers
``REPLCONF GETACK`` with the offset before it and acknowledges once a second
(WAIT-3). A dropped link caches the master and reconnects a second later
(REPL-7), trying a partial resynchronisation.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

from xspec.reference.aof import aof_of, obeyed, parse_command
from xspec.reference.core import Client, Core
from xspec.reference.persistence import LoadError, keeps_sync_file, persistence_of, write_atomically
from xspec.reference.protocol import parse_fast
from xspec.reference.waitaof import fsynced_offset, has_waitaof
from xspec.reference.xcommands import xadd_obeyed
from xspec.spec import rdb
from xspec.spec import rdb_file as rf

log = logging.getLogger("xspec.serve")

READ_SIZE = 1 << 16
_XADD_WORDS = frozenset({b"XADD", b"xadd", b"Xadd"})  # as primaries send it: as their clients wrote it
RECONNECT_SECONDS = 1.0  # replicationCron's period: a lost link is tried again a second later


class LinkError(Exception):
    """The primary answered something the handshake cannot go on with, or closed the link."""


def replicaof_setting(core: Core) -> tuple[str, int] | None:
    """The ``replicaof`` (or ``slaveof``) setting given at start, as (host, port)."""
    words = (core.config.get("replicaof") or core.config.get("slaveof") or "").split()
    if len(words) != 2 or not words[1].isdigit():
        return None
    return words[0], int(words[1])


def _canonical_size(argv: list[bytes]) -> int:
    """The bytes of a command written canonically (what :func:`parse_fast` reads)."""
    return len(b"*%d\r\n" % len(argv)) + sum(len(b"$%d\r\n\r\n" % len(a)) + len(a) for a in argv)


def _command(*argv: bytes) -> bytes:
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


class ReplicaLink:
    """The link of a replica to its primary, and the master client that applies its stream."""

    def __init__(self, rep: Any, host: str, port: int) -> None:
        self.rep = rep  # reference.replication.Replication (which imports this module)
        self.core = rep.core
        self.host = host
        self.port = port
        self.state = "connect"  # ROLE's words: connect, connecting, sync, connected (REPL-14)
        self.task: asyncio.Task[None] | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.client: Client | None = None  # the master client, while connected
        self.applied = -1  # reploff: the stream applied (-1 until connected)
        self.read_offset = -1  # read_reploff: the stream read
        self.unparsed = b""  # read, not yet a whole command
        self.uncounted = bytearray()  # run, not yet counted (inside MULTI until EXEC)
        # repl_transfer_lastio / the master client's lastinteraction: the last read, in ms on the server's
        # clock (REPL-17 counts repl-timeout on it, a virtual clock included)
        self.last_io = self.core.clock.now_ms()
        self.down_since = 0.0  # 0: never connected
        self.sync_total = 0
        self.sync_read = 0
        self.closed = False
        self.held = False  # XSPEC.LINK HOLD: nothing read from the primary for now
        self.resumed: asyncio.Event | None = None
        self.failover = False  # FAILOVER-5: the first PSYNC says FAILOVER (the target takes over)
        self.node_entries = 100  # stream-node-max-entries and -bytes, read by _short_way
        self.node_bytes = 4096

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.run())

    def close(self) -> None:
        """The link ends for good (REPLICAOF elsewhere, NO ONE, shutdown); a connected master is cached."""
        if self.closed:
            return
        self.closed = True
        self.lost()
        if self.task is not None:
            self.task.cancel()

    def cut(self) -> None:
        """Drop the connection now (a crash of the link): the master is cached (ROLE and INFO say the link
        is down from here on) and the link comes back."""
        if self.writer is not None:
            self.lost()

    async def run(self) -> None:
        while not self.closed:
            try:
                await self.session()
            except asyncio.CancelledError:
                raise
            except (OSError, EOFError, LinkError, LoadError, rf.RdbFileError, rdb.UnmodelledType, ValueError) as e:
                if not self.closed:
                    log.warning("replication link to %s:%d: %s", self.host, self.port, e or type(e).__name__)
            if self.closed:
                return
            self.lost()
            await asyncio.sleep(RECONNECT_SECONDS)

    def lost(self) -> None:
        """freeClient(master): cache it (its ID and the offset applied) for the next PSYNC (REPL-7)."""
        rep = self.rep
        if self.state == "connected":
            rep.cached = (rep.replid, self.applied)
            self.down_since = time.monotonic()
        if self.client is not None:
            c, self.client = self.client, None
            self.core.disconnect(c, "server")
        if self.writer is not None:
            self.writer.transport.abort()
            self.writer = None
        self.state = "connect"
        self.applied = self.read_offset = -1
        self.unparsed = b""
        self.uncounted = bytearray()

    # -- the handshake ----------------------------------------------------------------------------
    async def session(self) -> None:
        self.state = "connecting"
        reader, writer = await asyncio.open_connection(self.host, self.port)
        self.writer = writer
        self.last_io = self.core.clock.now_ms()  # repl_transfer_lastio: the handshake's time counts from here
        cfg = self.core.config

        async def ask(*argv: bytes) -> bytes:
            writer.write(_command(*argv))
            return await self._line(reader)

        pong = await ask(b"PING")
        if pong[:1] == b"-" and not pong.startswith((b"-NOAUTH", b"-NOPERM", b"-ERR operation not permitted")):
            raise LinkError(f"error reply to PING from master: {pong.decode('latin-1')}")
        if cfg.get("masterauth"):
            user = cfg.get("masteruser") or ""
            auth = (b"AUTH", user.encode(), cfg["masterauth"].encode()) if user else (
                b"AUTH", cfg["masterauth"].encode())
            reply = await ask(*auth)
            if reply[:1] == b"-":
                raise LinkError(f"unable to AUTH to MASTER: {reply.decode('latin-1')}")
        port = cfg.get("replica-announce-port", "0")
        if port in ("", "0"):
            port = cfg.get("port", "0")
        await ask(b"REPLCONF", b"listening-port", port.encode())  # errors are ignored, as Redis does
        if cfg.get("replica-announce-ip"):
            await ask(b"REPLCONF", b"ip-address", cfg["replica-announce-ip"].encode())
        await ask(b"REPLCONF", b"capa", b"eof", b"capa", b"psync2")
        rep = self.rep
        cached = rep.cached
        if cached is not None:
            reply = await ask(b"PSYNC", cached[0].encode(), b"%d" % (cached[1] + 1),
                              *((b"FAILOVER",) if self.failover else ()))
        else:
            reply = await ask(b"PSYNC", b"?", b"-1")
        if self.failover:  # FAILOVER-5, FAILOVER-7: the target's answer ends the failover
            self.failover = False
            rep.end_failover(abort=reply[:1] == b"-")
            if reply[:1] == b"-":
                return
        rest = b""
        diskless = False
        if reply.startswith(b"+FULLRESYNC"):
            words = reply.split()
            if len(words) < 3:
                raise LinkError(f"bad +FULLRESYNC reply: {reply.decode('latin-1')}")
            replid, offset = words[1].decode("latin-1"), int(words[2])
            self.state = "sync"
            if self.core.dialect.full_sync_forgets_cached_master:
                rep.cached = None  # REPL-DIALECT-6
            data, rest, diskless = await self._payload(reader)
            self._load(data, replid, offset)
        elif reply.startswith(b"+CONTINUE"):
            words = reply.split()
            self._continue(words[1].decode("latin-1") if len(words) > 1 else None)
        else:
            raise LinkError(f"unexpected reply to PSYNC from master: {reply.decode('latin-1')}")
        self.state = "connected"
        self.last_io = self.core.clock.now_ms()
        self.read_offset = self.applied = rep.offset
        if rest:
            self._received(rest)
        if diskless:  # the first ACK puts a diskless replica online; otherwise the cron's ACK comes first
            self.send_ack()
        await self._stream(reader)

    async def _line(self, reader: asyncio.StreamReader) -> bytes:
        while True:
            line = await reader.readline()
            if not line:
                raise EOFError("the master closed the connection")
            self.last_io = self.core.clock.now_ms()
            line = line.rstrip(b"\r\n")
            if line:  # a bare newline is the primary's keep-alive
                return line

    async def _payload(self, reader: asyncio.StreamReader) -> tuple[bytes, bytes, bool]:
        """The snapshot, what came after its end mark to apply as the stream, and whether it was diskless."""
        header = await self._line(reader)
        if not header.startswith(b"$"):
            raise LinkError(f"bad protocol from MASTER, the first byte is not '$': {header[:40]!r}")
        if header.startswith(b"$EOF:"):
            mark = header[5:]
            if len(mark) != 40:
                raise LinkError("bad EOF mark from MASTER")
            buf = bytearray()
            while True:
                chunk = await reader.read(READ_SIZE)
                if not chunk:
                    raise EOFError("the master closed the connection during the transfer")
                buf += chunk
                self.sync_read = len(buf)
                end = buf.find(mark, max(len(buf) - len(chunk) - 40, 0))
                if end >= 0:
                    return bytes(buf[:end]), bytes(buf[end + 40:]), True
        size = int(header[1:])
        self.sync_total = size
        data = await reader.readexactly(size)
        self.sync_read = size
        return data, b"", False

    def _load(self, data: bytes, replid: str, offset: int) -> None:
        """readSyncBulkPayload: the snapshot replaces the data; the primary's ID and offset (REPL-5)."""
        rep = self.rep
        core = self.core
        rep.cached = None
        rep.disconnect_replicas()  # replicationAttachToNewMaster
        p = persistence_of(core)
        if keeps_sync_file(core.config):  # RDB-6: the snapshot is read into a file, which stays
            write_atomically(p.path(f"temp-{os.getpid()}.sync.rdb"), p.rdb_path(), [data])
        p.empty_data()
        propagation, core.propagation = core.propagation, None
        try:
            f = p.load_rdb(data)
        finally:
            core.propagation = propagation
        stream_db = f.aux_value(b"repl-stream-db")
        rep.adopt(replid, offset)
        self._attach_client(int(stream_db) if stream_db is not None and stream_db.isdigit() else 0)
        if core.ready_keys:
            core.handle_ready()
        aof = aof_of(core)
        if aof is not None:
            aof.start_rewrite(background=True)  # restartAOFAfterSYNC
        log.info("MASTER <-> REPLICA sync: Finished with success")

    def _continue(self, new_id: str | None) -> None:
        """slaveTryPartialResynchronization's +CONTINUE: the data stays; a new ID shifts ours (REPL-7)."""
        rep = self.rep
        cached = rep.cached
        db = 0
        if new_id is not None and new_id != rep.replid:
            rep.replid2 = rep.replid
            rep.second_offset = rep.offset + 1
            rep.replid = new_id
            rep.disconnect_replicas()
        if cached is not None:
            rep.set_offset(cached[1])
        rep.cached = None
        rep.ensure_backlog()
        self._attach_client(db)

    def _attach_client(self, db: int) -> None:
        c = self.core.connect(None, f"{self.host}:{self.port}")
        c.kind = "master"
        c.authenticated = True
        c.db = db
        self.client = c

    # -- the stream ---------------------------------------------------------------------------------
    async def _stream(self, reader: asyncio.StreamReader) -> None:
        while True:
            data = await reader.read(READ_SIZE)
            if not data:
                raise EOFError("the master closed the connection")
            while self.held and self.resumed is not None:  # XSPEC.LINK HOLD: applied once it flows
                await self.resumed.wait()
            if self.client is None:  # cut meanwhile: what was read before is dropped with the connection
                raise EOFError("the link was cut")
            self.last_io = self.core.clock.now_ms()
            self._received(data)

    def _received(self, data: bytes) -> None:
        self.read_offset += len(data)
        buf = self.unparsed + data if self.unparsed else data
        c = self.client
        assert c is not None
        pos = self._apply_canonical(buf, c)
        if pos < 0:  # a command ended the link
            return
        core = self.core
        while pos < len(buf):  # what the quick reading left: parsed exactly, as an AOF is
            start = pos
            if buf[pos:pos + 1] == b"\n":  # a keep-alive newline
                pos += 1
            else:
                try:
                    parsed = parse_command(buf, pos)
                except LoadError as e:
                    raise LinkError(f"protocol error from MASTER: {e}") from None
                if parsed is None:
                    break
                argv, pos = parsed
                core.execute(c, obeyed(argv))
                if self.client is not c:  # the command ended the link
                    return
            self._count(c, buf[start:pos])
        self.unparsed = buf[pos:]

    def _apply_canonical(self, buf: bytes, c: Client) -> int:
        """Run the commands at the start of ``buf`` written as primaries write them (a count line, then
        a length line and the bytes of each argument: :func:`parse_fast`); the bytes they took, or -1 when
        one ended the link. The rest (a keep-alive, what parse_fast leaves, a cut command) is left.

        The XADDs with an explicit ID that a primary propagates are applied the short way
        (:func:`xadd_obeyed`) while nothing but the data would see them (:meth:`_short_way`); they are
        counted as the core counts a command (calls, time, the dirty counter) in one step per run of them,
        and so is their part of the offset (a GETACK, which runs the general way, answers the offset
        before it)."""
        cmds: list[list[bytes]] = []
        end = parse_fast(buf, cmds)  # the canonical commands at the start, as a client's are read
        core = self.core
        execute = core.execute
        short = self._short_way(c)
        xadds = 0  # applied the short way, not yet counted
        since = time.perf_counter_ns()
        done = 0  # buf[:pos] holds cmds[:done]: the byte position is found when needed
        pos = 0
        accounted = 0  # buf[:accounted] is in the offset applied, but for the XADDs applied since
        unfed = 0  # buf[unfed:pos] is counted, not yet fed: the backlog and replicas get it in one piece
        for k, argv in enumerate(cmds):
            if short is not None and argv[0] in _XADD_WORDS and xadd_obeyed(short, argv, self.node_entries,
                                                                             self.node_bytes):
                xadds += 1
                continue
            start = pos = pos + sum(map(_canonical_size, cmds[done:k]))
            if xadds:
                self.applied += start - accounted
                self._count_xadds(c, xadds, time.perf_counter_ns() - since)
                xadds = 0
            pos += _canonical_size(argv)
            done = k + 1
            execute(c, obeyed(argv))
            if self.client is not c:
                if start > unfed:
                    self.rep.feed_bytes(buf[unfed:start])
                return -1
            if c.in_multi or self.uncounted:
                if start > unfed:
                    self.rep.feed_bytes(buf[unfed:start])
                self._count(c, buf[start:pos])
                unfed = pos
            else:
                self.applied += pos - start  # per command: a GETACK answers the offset before it
            accounted = pos
            short = self._short_way(c)
            since = time.perf_counter_ns()
        pos = end
        if xadds:
            self.applied += pos - accounted
            self._count_xadds(c, xadds, time.perf_counter_ns() - since)
        if pos > unfed:
            self.rep.feed_bytes(buf[unfed:pos])
        return pos

    def _short_way(self, c: Client) -> Any:
        """The database the master client's XADDs may be applied to the short way, or None while anything
        but the data would see them: an observer (--checked, --trace), an AOF or a 6.2 offset to feed,
        keyspace events, WATCH, tracking, blocked clients, a pause or an injected fault, a transaction."""
        core = self.core
        tracking = core.tracking
        if (core.observer is not None or core.propagation is not None or core.notify_events or core.watchers
                or core.blocking or core.ready_keys or core.pause_until or core.error_faults or tracking.table
                or tracking.prefixes or tracking.owed or c.in_multi or self.uncounted or not c.authenticated):
            return None
        self.node_entries = core.int_setting("stream-node-max-entries")
        self.node_bytes = core.int_setting("stream-node-max-bytes")
        return core.dbs[c.db]

    def _count_xadds(self, c: Client, n: int, ns: int) -> None:
        """What the core counts for ``n`` XADDs run ``ns`` nanoseconds: INFO's commands processed, XADD's
        calls and time (STATS-2), the dirty counter (STATS-6), the client's last command (CONN-5)."""
        core = self.core
        core.stat_commands += n
        stat = core.command_stats.get("xadd")
        if stat is None:
            stat = core.command_stats["xadd"] = [0, 0, 0, 0]
        stat[0] += n
        stat[1] += ns // 1000
        core.dirty += n
        c.last_cmd = "xadd"
        c.woff = core.repl_offset

    def _count(self, c: Client, chunk: bytes) -> None:
        """The bytes of a command run (REPL-2: a transaction's count at its EXEC, all at once): the
        offset moves, and they go verbatim to this node's backlog and replicas (REPL-12)."""
        if c.in_multi:
            self.uncounted += chunk
            return
        if self.uncounted:
            chunk = bytes(self.uncounted) + chunk
            self.uncounted.clear()
        self.applied += len(chunk)
        self.rep.feed_bytes(chunk)

    def send_ack(self) -> None:
        """replicationSendAck: ``REPLCONF ACK <offset applied>`` (WAIT-3)."""
        if self.writer is not None and self.state == "connected" and not self.held:
            fsynced = fsynced_offset(self.rep) if has_waitaof(self.core) else -1
            if fsynced != -1:  # WAITAOF-2: a replica with an AOF tells its fsynced offset
                self.writer.write(_command(b"REPLCONF", b"ACK", b"%d" % self.applied, b"FACK", b"%d" % fsynced))
            else:
                self.writer.write(_command(b"REPLCONF", b"ACK", b"%d" % self.applied))

    def tick(self) -> None:
        """The cron's part: drop a link silent for longer than ``repl-timeout`` (REPL-17), else acknowledge
        once a second."""
        if self.timed_out():
            return
        self.send_ack()

    def timed_out(self) -> bool:
        """replicationCron on a replica (REPL-17): a handshake, a transfer or a connected link that read
        nothing (no data, no PING, no keep-alive newline) for more than ``repl-timeout`` seconds, counted in
        whole seconds of the server's clock, is dropped, and the link connects again (a connected one asks
        PSYNC from its cached master). A held link (XSPEC.LINK HOLD) and a paused node wait without counting."""
        if self.held or self.rep.paused or self.writer is None or self.state not in ("connecting", "sync",
                                                                                      "connected"):
            return False
        timeout = self.rep._config_int("repl-timeout", 60)
        if self.core.clock.now_ms() // 1000 - self.last_io // 1000 <= timeout:  # REPL-17: time(NULL) - lastio
            return False
        if self.state == "connected":
            log.warning("MASTER timeout: no data nor PING received...")
        elif self.state == "sync":
            log.warning("Timeout receiving bulk data from MASTER... If the problem persists try to set the "
                        "'repl-timeout' parameter in redis.conf to a larger value.")
        else:
            log.warning("Timeout connecting to the MASTER...")
        self.lost()  # the reader sees the end of the connection, and run() connects again (REPL-17)
        return True

    # -- XSPEC.LINK -----------------------------------------------------------------------------
    def hold(self) -> None:
        """Read nothing more from the primary and acknowledge nothing until :meth:`flow`."""
        self.held = True
        self.resumed = asyncio.Event()

    def flow(self) -> None:
        self.held = False
        if self.resumed is not None:
            self.resumed.set()
        self.send_ack()

    def io_seconds_ago(self) -> int:
        return max(self.core.clock.now_ms() // 1000 - self.last_io // 1000, 0)

    def down_seconds(self) -> int:
        return int(time.monotonic() - self.down_since) if self.down_since else -1


def link_of(core: Core) -> Any:
    rep = core.replication
    return getattr(rep, "link", None)
