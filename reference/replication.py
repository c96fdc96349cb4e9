"""Replication in the reference server, the primary's side (spec/rules/replication.md, REPL-*, WAIT-*).

One :class:`Replication` per core (``core.replication``) holds the node's
replication ID, secondary ID and offset (REPL-1), its backlog (a bounded byte
buffer, :class:`Backlog`, REPL-3/REPL-4), the replicas attached to it and the
clients waiting in WAIT. What the commands propagate comes from
:mod:`xspec.reference.propagation` (the same ops the AOF gets); while the node
is a primary with a backlog, they are rendered as RESP (with a SELECT where the
database changes, REPL-2), appended to the backlog and written to every
replica, in order with the replies of that loop turn.

A full resynchronisation (REPL-5) answers ``+FULLRESYNC <id> <offset>`` and
the RDB snapshot of that moment, written by the persistence writer in the
dialect's RDB version, sent in the disk format (``$<length>``, then the file).
As Redis's BGSAVE for replicas (REPL-19), a forked child, counted as the
server's RDB child (FORK-1: INFO's ``rdb_bgsave_in_progress``, BGSAVE refused),
writes the snapshot (of the moment of the fork, copy-on-write) to a pipe while
the server goes on serving and keeps the stream from the snapshot's offset for
the replica (``wait_bgsave``, a newline a second on its link). The replica gets
``+FULLRESYNC`` at the fork; a diskless sync's file as soon as the child wrote
it, a disk-based one's (the child also writes the RDB file) once the cron
reaped the child; at the reap the replica is online and gets the stream kept.
Where the server cannot fork (no event loop: a core driven by a test) the
snapshot is taken at once. A diskless one
(``repl-diskless-sync yes`` and a replica with ``capa eof``) first waits
``repl-diskless-sync-delay`` seconds for more replicas, as Redis does. A partial one (REPL-6) answers
``+CONTINUE <id>`` and the backlog from the byte asked for.

The stream costs the commands little: an XADD alone in its call goes from the
propagator straight to :meth:`Replication.feed_xadd`, which encodes it (its
head once for a run of XADDs to one key) and counts it in the offset; the
XADDs of a loop turn reach the backlog and the replicas' connections in one
piece at its end (:meth:`Replication.feed_unfed`), or before anything reads
the backlog or the replicas, so that the stream keeps its order.

The replica's side (connecting, loading, applying the stream, acknowledging)
is :mod:`xspec.reference.replica_link`; REPLICAOF, ROLE, INFO replication,
WAIT and the READONLY/NOREPLICAS gate are here.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from typing import Any

from xspec.reference.api import Encoded, ReplyError
from xspec.reference.core import Client, Context, Core
from xspec.reference.propagation import XADD_ID_STARTS, Propagator
from xspec.reference.waitaof import AofWaiting, serve_aof_waiting, waitaof_command
from xspec.spec import rdb_file as rf
from xspec.spec.commands import NOT_INTEGER
from xspec.spec.errors import TIMEOUT_NEGATIVE, TIMEOUT_NOT_INTEGER
from xspec.spec.ids import c_string, string2ll
from xspec.spec.resp import OK, Array, Bulk, Error, Int, Reply, Simple, Verbatim

log = logging.getLogger("xspec.serve")

NOREPLICAS = "NOREPLICAS Not enough good replicas to write."  # REPL-11
READONLY = "READONLY You can't write against a read only replica."  # REPL-10
UNBLOCKED = ("UNBLOCKED force unblock from blocking operation, instance state changed "
             "(master -> replica?)")  # REPL-9
FROM_REPLICA = "ERR Command is not valid when client is a replica."  # REPL-9
NO_SYNC_WITHOUT_LINK = "NOMASTERLINK Can't SYNC while not connected with my master"  # REPL-16
NO_REPLID2 = "0" * 40
CRON_SECONDS = 1.0  # replicationCron's period
BLOCK_HEADER = 40  # sizeof(replBufBlock): what each 7.0 backlog block spends before its data
BACKLOG_SIZE_PARSED = "repl-backlog-size (at least 16 KiB)"  # its key among the core's parsed settings


class ReplicationPropagator(Propagator):
    """The AOF's ops, and PUBLISH, which Redis propagates to replicas only (``forceCommandPropagation``
    with PROPAGATE_REPL): a replica's subscribers get the message too.

    An XADD without options that is a call of its own goes to ``xadd_sink`` (with the ID it added), which
    feeds it the short way when it can (:meth:`Replication.feed_xadd`); what it leaves takes the general way.
    """

    def __init__(self, sink: Any, counters: bool, xadd_sink: Any, transactions_only: bool = False) -> None:
        super().__init__(sink, counters, transactions_only)
        self.xadd_sink = xadd_sink

    def after(self, name: str, dbid: int, db: dict[bytes, Any], argv: list[bytes], reply: Any, token: Any,
              changed: bool) -> None:
        if name == "xadd":
            # the reply of an XADD that added an entry is its ID: what the stream carries instead of the argument
            if (changed and self.depth == 1 and not self.pending and self.replacement is None and type(reply) is Bulk
                    and argv[2][:1] in XADD_ID_STARTS and self.xadd_sink(dbid, argv, reply.value)):
                self.depth = 0
                return
        elif name in REPLICA_ONLY:
            self.pending.append((dbid, list(argv)))
        super().after(name, dbid, db, argv, reply, token, changed)


REPLICA_ONLY = frozenset({"publish"})


def new_replid() -> str:
    """A fresh replication ID: 40 random hexadecimal characters (REPL-1)."""
    return os.urandom(20).hex()


_ARRAY_HEADERS = [b"*%d\r\n" % n for n in range(64)]
_BULK_HEADERS = [b"$%d\r\n" % n for n in range(1024)]


def resp_command(argv: list[bytes]) -> bytes:
    """One command as the stream carries it: a RESP array of bulk strings (REPL-2)."""
    try:
        out = [_ARRAY_HEADERS[len(argv)]]
        for a in argv:
            out += (_BULK_HEADERS[len(a)], a, b"\r\n")  # headers made once: this runs per write
    except IndexError:
        return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)
    return b"".join(out)


PING = resp_command([b"PING"])  # REPL-13: 14 bytes
GETACK = resp_command([b"REPLCONF", b"GETACK", b"*"])  # WAIT-3: 37 bytes


def _block_capacity(n: int) -> int:
    """The usable bytes of a backlog block asked for ``n`` bytes: the allocator's size class (jemalloc's
    classes above 16 KiB: four steps per doubling) less the block header (REPL-4)."""
    size = 16384
    while True:
        step = size // 4
        for k in range(1, 5):
            if size + k * step >= n:
                return size + k * step - BLOCK_HEADER
        size *= 2


class Backlog:
    """``server.repl_backlog``: the last bytes of the stream, and where they start (REPL-3, REPL-4).

    7.0 keeps the stream in blocks of at least 16 KiB and drops whole blocks from the front, the first
    while the history without it still exceeds ``repl-backlog-size``; 6.2 keeps exactly the last
    ``repl-backlog-size`` bytes, a ring buffer (REPL-DIALECT-2).
    """

    def __init__(self, first: int, in_blocks: bool) -> None:
        self.first = first  # repl_backlog_first_byte_offset: the offset of data[0]
        self.data = bytearray()
        self.in_blocks = in_blocks
        self.blocks: list[list[int]] = []  # [capacity, used] per block, oldest first

    @property
    def histlen(self) -> int:
        return len(self.data)

    def add(self, chunk: bytes, size: int) -> None:
        self.data += chunk
        blocks = self.blocks
        if blocks and self.in_blocks:  # the usual case: the chunk fits in the last block
            tail = blocks[-1]
            if tail[0] - tail[1] >= len(chunk):
                tail[1] += len(chunk)
                if len(self.data) - blocks[0][1] > size:
                    self.trim(size)
                return
        if not self.in_blocks:  # REPL-DIALECT-2
            extra = len(self.data) - size
            if extra > 0:
                del self.data[:extra]
                self.first += extra
            return
        n = len(chunk)
        while n > 0:
            last = self.blocks[-1] if self.blocks else None
            if last is not None and last[1] < last[0]:
                take = min(n, last[0] - last[1])
                last[1] += take
                n -= take
                continue
            self.blocks.append([_block_capacity(min(max(n, 16384), max(size // 16, 16384)) + BLOCK_HEADER), 0])
        self.trim(size)

    def trim(self, size: int) -> None:
        """Drop whole blocks from the front while the history without the first still exceeds ``size``."""
        while len(self.data) > size and len(self.blocks) > 1 and len(self.data) - self.blocks[0][1] > size:
            gone = self.blocks.pop(0)[1]
            del self.data[:gone]
            self.first += gone

    def holds(self, offset: int) -> bool:
        """Whether the stream from byte ``offset`` on is here (REPL-6)."""
        return self.first <= offset <= self.first + len(self.data)

    def since(self, offset: int) -> bytes:
        return bytes(self.data[offset - self.first:])


class Replica:
    """A replica attached to this node: its client, announced address and acknowledged offset."""

    __slots__ = ("client", "ip", "port", "state", "ack", "ack_time", "pre_psync", "fack", "buffered")

    def __init__(self, client: Client, ip: str, port: int) -> None:
        self.client = client
        self.ip = ip
        self.port = port
        self.state = "online"
        self.ack = 0
        self.ack_time = 0.0
        self.pre_psync = False  # it asked with SYNC: no +FULLRESYNC, no acknowledgements expected
        self.fack = 0  # repl_aof_off: the largest FACK of its REPLCONF ACKs (WAITAOF-2)
        # REPL-5: the stream from its snapshot's offset, kept while a child writes the snapshot (None: not kept)
        self.buffered: list[bytes] | None = None

    def send(self, data: bytes) -> None:
        conn = self.client.conn
        if conn is not None:
            conn.write([data])


class SyncChild:
    """A forked child writing a snapshot for replicas (REPL-5): its pid, the pipe it writes to, the
    snapshot's ``+FULLRESYNC`` line, what the server has read of it so far, and the replicas waiting for it."""

    __slots__ = ("pid", "fd", "head", "chunks", "replicas", "disk", "sent", "dirty")

    def __init__(self, pid: int, fd: int, head: bytes, replicas: list[Replica], disk: bool) -> None:
        self.pid = pid
        self.fd = fd  # -1 once the pipe is read to its end and closed
        self.head = head
        self.chunks: list[bytes] = []
        self.replicas = replicas
        self.disk = disk  # repl-diskless-sync no: the file goes out after the reap (REPL-19)
        self.sent = False  # the file went out to the replicas
        self.dirty = 0  # the changes counted at the fork, which a disk-based sync's file saves


class Waiting:
    """A client blocked in WAIT: how many replicas it wants, at which offset (WAIT-1, WAIT-2)."""

    __slots__ = ("client", "wanted", "offset")

    def __init__(self, client: Client, wanted: int, offset: int) -> None:
        self.client = client
        self.wanted = wanted
        self.offset = offset


class Failover:
    """A FAILOVER in progress: its target (None: the first replica to catch up), deadline and FORCE."""

    __slots__ = ("state", "target", "deadline", "force")

    def __init__(self, target: tuple[str, int] | None, deadline: int | None, force: bool) -> None:
        self.state = "waiting-for-sync"  # then failover-in-progress (master_failover_state)
        self.target = target
        self.deadline = deadline
        self.force = force


class Replication:
    """The replication state of one core."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.replid = new_replid()  # REPL-1
        self.replid2 = NO_REPLID2
        self.second_offset = -1
        self.offset = 0  # master_repl_offset
        self._backlog: Backlog | None = None  # the backlog and replicas properties: see feed_xadd
        self._replicas: list[Replica] = []
        self.unfed: list[bytes] = []  # stream bytes counted in the offset, not yet in the backlog nor sent
        self.announced: dict[int, tuple[str, int]] = {}  # client id -> REPLCONF ip-address / listening-port
        self.selected_db = -1  # server.slaveseldb: the database the stream last selected
        self.waiting: list[Waiting] = []
        self.aof_waiting: list[AofWaiting] = []  # clients blocked in WAITAOF (WAITAOF-1)
        self.aof_poll: Any = None  # the timer that looks at them again
        self.fsynced = -1  # fsynced_reploff (WAITAOF-1), kept by reference.waitaof.fsynced_offset
        self.getack_due = False
        self.cron_seconds = 0  # the cron's count of seconds (REPL-13 counts from it)
        self.cron: Any = None
        self.good = 0  # repl_good_slaves_count (REPL-11)
        self.master: tuple[str, int] | None = None  # masterhost/masterport: set on a replica
        self.link: Any = None  # reference.replica_link.ReplicaLink while a replica
        # The master to ask PSYNC of: (replid, offset applied), REPL-6/REPL-7/REPL-9.
        self.cached: tuple[str, int] | None = None
        self.propagator = ReplicationPropagator(self.feed_ops, core.dialect.stream_counters, self.feed_xadd,
                                                core.dialect.wraps_transactions_only)
        self.stopped = False
        self.failover: Failover | None = None  # FAILOVER in progress (FAILOVER-3 .. FAILOVER-7)
        self.deployment: Any = None  # reference.replication_deployment.Deployment of xspec serve --replicas
        self.paused = False  # XSPEC.NODE PAUSE: the cron sends nothing
        self.sync_full = 0  # INFO stats: sync_full, sync_partial_ok, sync_partial_err
        # REPL-5: replicas waiting for a diskless snapshot (repl-diskless-sync-delay) and its timer
        self.sync_waiting: list[Replica] = []
        self.sync_timer: Any = None
        # the capabilities each client announced with REPLCONF capa (eof: it may get a diskless snapshot,
        # REPL-5; a replica joins another's child only with all of that one's, REPL-20)
        self.capabilities: dict[int, frozenset[bytes]] = {}
        self.sync_partial_ok = 0
        self.sync_partial_err = 0
        self.sync_children: list[SyncChild] = []  # REPL-5: snapshots being written by forked children
        self.after_child: list[Replica] = []  # REPL-19: replicas waiting for another child to end first
        # feed_xadd's last encoded head: (key, command name as sent, argument count, its RESP bytes)
        self.xadd_head: tuple[bytes, bytes, int, bytes] = (b"", b"", 0, b"")
        self.unfed_now = False  # no event loop: feed_xadd's bytes go out at once, not at the turn's end

    # -- the stream ------------------------------------------------------------------------------
    @property
    def backlog(self) -> Backlog | None:
        """The backlog, holding every byte of the stream counted so far (:meth:`feed_unfed` first)."""
        if self.unfed:
            self.feed_unfed()
        return self._backlog

    @backlog.setter
    def backlog(self, backlog: Backlog | None) -> None:
        if self.unfed:
            self.feed_unfed()
        self._backlog = backlog

    @property
    def replicas(self) -> list[Replica]:
        """The replicas attached, each sent every byte of the stream counted so far (:meth:`feed_unfed`
        first: a replica attached from here on starts after them)."""
        if self.unfed:
            self.feed_unfed()
        return self._replicas

    @replicas.setter
    def replicas(self, replicas: list[Replica]) -> None:
        if self.unfed:
            self.feed_unfed()
        self._replicas = replicas

    @property
    def is_replica(self) -> bool:
        return self.master is not None

    def feed_ops(self, ops: list[tuple[int, list[bytes]]]) -> None:
        """The propagation sink: the AOF gets the ops, and the replicas while this node is a primary
        with a backlog (REPL-2, REPL-3)."""
        persistence = self.core.persistence
        aof = None
        if persistence is not None and persistence.aof is not None:
            from xspec.reference.aof import aof_of
            aof = aof_of(self.core)
        if aof is not None:
            kept = [op for op in ops if c_string(op[1][0]).decode("latin-1").lower() not in REPLICA_ONLY]
            if any(dbid >= 0 for dbid, _ in kept):  # not a MULTI/EXEC left empty
                aof.feed(kept)
        if self.master is not None or self.backlog is None:
            if self.core.dialect.offset_counts_without_backlog and self.backlog is None:
                self.set_offset(self.offset + len(ops))  # REPL-DIALECT-4
            return
        if len(ops) == 1 and ops[0][0] == self.selected_db:  # one command in the database selected
            self.feed_bytes(resp_command(ops[0][1]))
            return
        out = []
        for dbid, argv in ops:
            if dbid >= 0 and dbid != self.selected_db:
                out.append(resp_command([b"SELECT", b"%d" % dbid]))
                self.selected_db = dbid
            out.append(resp_command(argv))
        self.feed_bytes(b"".join(out))

    def feed_xadd(self, dbid: int, argv: list[bytes], new_id: bytes) -> bool:
        """:meth:`feed_ops` of an XADD without options, its ID argument rewritten to ``new_id`` (the ID it
        added), the short way when that is all there is to do: no AOF, this node a primary with a backlog,
        the database already selected; False (nothing done) otherwise. The command's head (its count, name
        and key) is encoded once for a run of XADDs to one key; its pieces wait in ``unfed``, joined once a
        turn (:meth:`feed_unfed`)."""
        persistence = self.core.persistence
        if self._backlog is None or dbid != self.selected_db or self.master is not None or (
                persistence is not None and persistence.aof is not None):
            return False
        unfed = self.unfed
        n = len(argv)
        head = self.xadd_head
        headers = _BULK_HEADERS
        try:
            if head[0] != argv[1] or head[1] != argv[0] or head[2] != n:
                head = self.xadd_head = (argv[1], argv[0], n, b"".join((
                    _ARRAY_HEADERS[n], headers[len(argv[0])], argv[0], b"\r\n", headers[len(argv[1])],
                    argv[1], b"\r\n")))
            out = [head[3], headers[len(new_id)], new_id, b"\r\n"]
            for a in argv[3:]:
                out += (headers[len(a)], a, b"\r\n")
        except IndexError:  # a long argument: the general way
            return False
        offset = self.offset = self.offset + sum(map(len, out))
        if not unfed:
            self._feed_later()
        unfed += out
        self.core.repl_offset = offset
        if self.unfed_now:
            self.unfed_now = False
            self.feed_unfed()
        return True

    def _feed_later(self) -> None:
        """The first XADD of a turn counted: :meth:`feed_unfed` runs at its end (at once without a loop)."""
        try:
            asyncio.get_running_loop().call_soon(self.feed_unfed)
        except RuntimeError:  # no loop (a core driven directly)
            self.unfed_now = True

    def feed_unfed(self) -> None:
        """The XADDs :meth:`feed_xadd` counted go to the backlog and the online replicas, in one piece: at
        the end of the loop turn, or before anything reads the backlog or the replicas (the two
        properties), so that every byte reaches them in the stream's order, as if fed at once."""
        unfed = self.unfed
        if not unfed:
            return
        data = b"".join(unfed)  # the parts of the XADDs counted
        self.unfed = []
        backlog = self._backlog
        if backlog is not None:
            backlog.add(data, self.backlog_size())
        for r in self._replicas:
            if r.state == "online":
                r.send(data)
            elif r.buffered is not None:  # REPL-5: its snapshot is being written
                r.buffered.append(data)

    def feed_bytes(self, data: bytes) -> None:
        """Bytes of the stream: the offset moves, the backlog keeps them, every replica gets them."""
        backlog = self.backlog
        if backlog is None:
            return
        offset = self.offset = self.offset + len(data)
        self.core.repl_offset = offset
        backlog.add(data, self.backlog_size())
        for r in self.replicas:
            if r.state == "online":  # one waiting for its snapshot gets the stream from the snapshot's offset
                r.send(data)
            elif r.buffered is not None:
                r.buffered.append(data)

    def set_offset(self, offset: int) -> None:
        self.offset = offset
        self.core.repl_offset = offset

    def backlog_size(self) -> int:
        """``repl-backlog-size``, parsed once per CONFIG SET (the core clears its parsed settings then)."""
        parsed = self.core.config_ints
        try:
            return parsed[BACKLOG_SIZE_PARSED]
        except KeyError:
            try:
                size = max(int(self.core.config.get("repl-backlog-size", "1048576")), 16384)
            except ValueError:
                size = 1048576
            parsed[BACKLOG_SIZE_PARSED] = size
            return size

    def refresh(self) -> None:
        """Whose propagator the core runs, and whether writes pass the gate (REPL-10, REPL-11)."""
        from xspec.reference.aof import aof_of
        core = self.core
        if self.backlog is not None and self.master is None or core.dialect.offset_counts_without_backlog:
            core.propagation = self.propagator
        else:
            aof = aof_of(core)
            core.propagation = aof.propagator if aof is not None else None
        core.write_gate = self.gate if self.master is not None or self.min_replicas() else None

    # -- the write gate ----------------------------------------------------------------------------
    def min_replicas(self) -> int:
        cfg = self.core.config
        try:
            wanted = int(cfg.get("min-replicas-to-write", "0"))
            lag = int(cfg.get("min-replicas-max-lag", "10"))
        except ValueError:
            return 0
        return wanted if wanted > 0 and lag > 0 else 0

    def gate(self, c: Client, spec: Any) -> str | None:
        """processCommand's NOREPLICAS and READONLY checks for a client's command (REPL-10, REPL-11)."""
        if c.kind == "master":  # the primary's stream is obeyed
            return None
        writes = "write" in spec.flags or (spec.fullname == "exec" and any(
            "write" in (s.flags if s is not None else ()) for s in map(self.core.lookup, c.multi_queue)))
        if not writes:
            return None
        if self.master is None and self.min_replicas() and self.good < self.min_replicas():  # REPL-11
            return NOREPLICAS
        if self.master is not None and self.core.config.get("replica-read-only", "yes") == "yes":  # REPL-10
            return READONLY
        return None

    def count_good(self) -> None:
        """refreshGoodSlavesCount: online replicas that acknowledged within min-replicas-max-lag."""
        try:
            lag = int(self.core.config.get("min-replicas-max-lag", "10"))
        except ValueError:
            lag = 10
        now = self.core.clock.now_ms() / 1000
        self.good = sum(1 for r in self.replicas if r.state == "online" and now - r.ack_time <= lag)

    # -- the cron --------------------------------------------------------------------------------------
    def start(self) -> None:
        if self.cron is None and self.core.timer_factory is not None:
            self.cron = self.core.timer_factory(CRON_SECONDS, self.tick)

    def tick(self) -> None:
        """replicationCron: PING the replicas every repl-ping-replica-period seconds (REPL-13), a replica
        acknowledges (WAIT-3) and reconnects, the good-replica count is refreshed (REPL-11)."""
        self.cron = None
        if self.stopped:
            return
        try:
            period = max(int(self.core.config.get("repl-ping-replica-period", "10")), 1)
        except ValueError:
            period = 10
        if self.master is None and self.replicas and self.cron_seconds % period == 0 and not self.paused:
            self.feed_bytes(PING)
        if not self.paused:
            self.drop_timed_out()
        self.cron_seconds += 1
        # a child's replicas until their file goes out (a newline after it would be read as the
        # stream's first byte: a diskless file goes out before the reap)
        presync = [r for child in self.sync_children if not child.sent for r in child.replicas]
        waiting = self.sync_waiting + self.after_child + presync
        for r in waiting:  # replicationCron: a newline a second keeps a waiting replica's link alive
            if r.client.conn is not None:
                r.client.conn.write([b"\n"])
        if self.link is not None:
            self.link.tick()
        self.check_failover(cron=True)
        self.count_good()
        self.start()

    def drop_timed_out(self) -> None:
        """replicationCron (REPL-17): an online replica that acknowledged nothing for more than ``repl-timeout``
        seconds (whole seconds of the server's clock) is disconnected; one that asked with the old SYNC is
        never expected to acknowledge."""
        timeout = self._config_int("repl-timeout", 60)
        now = self.core.clock.now_ms() // 1000
        for r in list(self.replicas):
            conn = r.client.conn
            if r.state == "online" and not r.pre_psync and now - int(r.ack_time) > timeout and conn is not None:
                log.warning("Disconnecting timedout replica (streaming sync): %s:%d", r.ip, r.port)
                conn.close_now()

    # -- replicas -------------------------------------------------------------------------------------
    def attach(self, c: Client, state: str = "online") -> Replica:
        ip, port = self.announced.get(c.id, ("", 0))
        if not ip:
            ip = c.addr.rsplit(":", 1)[0].strip("[]")
        r = Replica(c, ip, port)
        r.state = state
        r.ack_time = self.core.clock.now_ms() / 1000
        c.kind = "replica"
        self.replicas.append(r)
        self.start()
        return r

    def client_gone(self, c: Client) -> None:
        """A connection closed: a replica's goes from the list, a waiting client's WAIT is forgotten."""
        self.announced.pop(c.id, None)
        self.capabilities.pop(c.id, None)
        before = len(self.replicas)
        self.replicas = [r for r in self.replicas if r.client is not c]
        self.waiting = [w for w in self.waiting if w.client is not c]
        self.aof_waiting = [w for w in self.aof_waiting if w.client is not c]
        if len(self.replicas) != before:
            self.count_good()
            self.serve_waiting()
            serve_aof_waiting(self)

    def disconnect_replicas(self) -> None:
        """disconnectSlaves: every replica's connection closes (it reconnects and asks PSYNC again)."""
        replicas, self.replicas = self.replicas, []
        for r in replicas:
            if r.client.conn is not None:
                r.client.conn.close_now()
        self.serve_waiting()

    def full_sync(self, c: Client, pre_psync: bool = False) -> Encoded:
        """REPL-5: ``+FULLRESYNC``, then the snapshot of this moment in the dialect's RDB version; a
        replica that asked with the old SYNC (``pre_psync``) gets the snapshot alone.

        A diskless sync (``repl-diskless-sync yes``, a replica that announced ``capa eof``) waits
        ``repl-diskless-sync-delay`` seconds from the first replica that asked, so that others asking
        meanwhile share the snapshot (``repl-diskless-sync-max-replicas`` of them start it at once);
        the waiting replicas get ``+FULLRESYNC`` when it starts, with its offset, and a newline a
        second until then."""
        self.ensure_first_backlog()
        head = self.join_disk_child(c, pre_psync)
        if head is not None:
            return Encoded([] if pre_psync else [head])
        delay = self.diskless_delay(c)
        if delay > 0 and self.core.timer_factory is not None:
            waiting = self.attach(c, "wait_bgsave")
            waiting.pre_psync = pre_psync
            self.sync_waiting.append(waiting)
            wanted = self._config_int("repl-diskless-sync-max-replicas", 0)
            if wanted > 0 and len(self.sync_waiting) >= wanted:
                asyncio.get_running_loop().call_soon(self.start_waiting_sync)
            elif self.sync_timer is None:
                self.sync_timer = self.core.timer_factory(delay, self.start_waiting_sync)
            return Encoded([])
        replica = self.attach(c, "wait_bgsave")
        replica.pre_psync = pre_psync
        if self.fork_sync([replica]):
            return Encoded([])
        replica.state = "online"
        payload = self.sync_payload()
        return Encoded(payload[1:] if pre_psync else payload)

    def join_disk_child(self, c: Client, pre_psync: bool) -> bytes | None:
        """REPL-20: ``c`` joins the running disk-based sync child whose first replica still waits for its
        end, when ``c`` has all that replica's capabilities: a copy of the stream kept since the fork, the
        file after the reap. Returns the child's ``+FULLRESYNC`` line; None (nothing changed) when there
        is no such child."""
        waiting = next(((child, r) for child in self.sync_children if child.disk and not child.sent
                        for r in child.replicas if r in self._replicas and r.state == "wait_bgsave"), None)
        if waiting is None:
            return None
        child, other = waiting
        theirs = self.capabilities.get(other.client.id, frozenset())
        if not theirs <= self.capabilities.get(c.id, frozenset()):
            log.info("Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC")
            return None
        replica = self.attach(c, "wait_bgsave")
        replica.pre_psync = pre_psync
        replica.buffered = list(other.buffered or [])
        child.replicas.append(replica)
        self.selected_db = -1  # REPL-20: replicationSetupSlaveForFullResync: the next fed command starts with a SELECT
        log.info("Waiting for end of BGSAVE for SYNC")
        return child.head

    def diskless_delay(self, c: Client) -> int:
        """The seconds a full sync for ``c`` waits: ``repl-diskless-sync-delay`` when the sync is diskless."""
        if self.core.config.get("repl-diskless-sync", "no") != "yes" or b"eof" not in self.capabilities.get(c.id, ()):
            return 0
        return self._config_int("repl-diskless-sync-delay", 0)

    def _config_int(self, name: str, default: int) -> int:
        try:
            return int(self.core.config.get(name, str(default)))
        except ValueError:
            return default

    def start_waiting_sync(self) -> None:
        """The delay is over (or enough replicas wait): one snapshot for every replica still waiting."""
        if self.sync_timer is not None:
            self.sync_timer.cancel()
            self.sync_timer = None
        waiting, self.sync_waiting = [r for r in self.sync_waiting if r in self.replicas], []
        if not waiting or self.stopped:
            return
        if self.fork_sync(waiting):
            return
        payload = self.sync_payload()
        now = self.core.clock.now_ms() / 1000
        for r in waiting:
            r.state = "online"
            r.ack_time = now
            if r.client.conn is not None:
                r.client.conn.write(payload[1:] if r.pre_psync else list(payload))
        self.count_good()

    def fork_sync(self, replicas: list[Replica]) -> bool:
        """REPL-5 in a forked child, as Redis's BGSAVE for replicas: the child writes the snapshot of the
        moment of the fork to a pipe and leaves; meanwhile the server serves and keeps the stream for
        ``replicas``, which get ``+FULLRESYNC`` at once, the file and that stream once the child is done
        (:meth:`end_sync`; until then, as while a diskless sync waits, a newline a second). False (nothing
        done) where the server cannot fork. The child is the server's RDB child (REPL-19, FORK-1); while
        another child runs the replicas wait (``wait_bgsave``, no ``+FULLRESYNC`` yet) and the fork
        comes once the cron reaped it."""
        from xspec.reference.persistence import Child, close_inherited_descriptors, mirror_step, persistence_of
        persistence = persistence_of(self.core)
        if not persistence.can_fork():
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        self.ensure_first_backlog()
        persistence.reap()
        if persistence.child is not None:  # REPL-19: updateSlavesWaitingBgsave forks once it is reaped
            for r in replicas:
                r.state = "wait_bgsave"
                if r not in self.after_child:
                    self.after_child.append(r)
            if self.fork_after_child not in persistence.hooks:
                persistence.hooks.append(self.fork_after_child)
            persistence.arm_cron()
            return True
        if self.unfed:  # the bytes counted before the snapshot are in it, not in the replicas' buffers
            self.feed_unfed()
        head = b"+FULLRESYNC %s %d\r\n" % (self.replid.encode(), self.offset)
        disk = self.core.config.get("repl-diskless-sync", "no") != "yes"
        dirty = self.core.dirty
        read_fd, write_fd = os.pipe()
        try:
            pid = persistence.fork()
        except OSError as e:
            os.close(read_fd)
            os.close(write_fd)
            log.warning("Can't save in background: fork: %s", e)
            return False
        if pid == 0:  # the child: the snapshot of the moment of the fork, then leave
            code = 1
            try:
                close_inherited_descriptors(keep=write_fd)  # read_fd among them
                persistence.child_delay()
                with os.fdopen(write_fd, "wb") as pipe:  # a buffered writer: it writes each chunk whole
                    for chunk in self.snapshot_chunks():
                        pipe.write(chunk)
                if disk:  # REPL-19: a disk-based sync's snapshot is the RDB file too
                    persistence.write_rdb(persistence.rdb_path())
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        log.info("Starting BGSAVE for SYNC with target: replicas sockets (pid %d)", pid)
        self.selected_db = -1  # REPL-5: the next fed command starts with a SELECT
        for r in replicas:
            r.state = "wait_bgsave"
            r.buffered = []
            if not r.pre_psync and r.client.conn is not None:
                r.client.conn.write([head])  # REPL-19: replicationSetupSlaveForFullResync, at the fork
        child = SyncChild(pid, read_fd, head, replicas, disk)
        child.dirty = dirty
        self.sync_children.append(child)
        loop.add_reader(read_fd, self.read_sync, child)
        persistence.child = Child(pid, "rdb", dirty, lambda ok: self.end_sync(child, ok))
        persistence.arm_cron()
        mirror_step(self.core, "sync-fork-disk" if disk else "sync-fork-socket")  # REPL-19: --checked's model
        return True

    def fork_after_child(self) -> None:
        """The cron, while replicas wait for another child to end: the sync's child once none runs."""
        from xspec.reference.persistence import persistence_of
        persistence = persistence_of(self.core)
        if persistence.child is not None or self.stopped:
            return
        persistence.hooks.remove(self.fork_after_child)
        waiting, self.after_child = [r for r in self.after_child if r in self._replicas], []
        if waiting and not self.fork_sync(waiting):
            for r in waiting:
                if r.client.conn is not None:
                    r.client.conn.close_now()

    def read_sync(self, child: SyncChild) -> None:
        """The child's pipe is readable: what it wrote so far, or at its end :meth:`end_sync`."""
        try:
            data = os.read(child.fd, 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            child.chunks.append(data)
            return
        self.close_pipe(child)
        if not child.disk:  # REPL-19: a diskless file reaches the replicas as the child writes it
            self.send_file(child)

    def close_pipe(self, child: SyncChild) -> None:
        """The child's pipe is no longer watched nor open."""
        if child.fd < 0:
            return
        try:
            asyncio.get_running_loop().remove_reader(child.fd)
        except RuntimeError:
            pass
        os.close(child.fd)
        child.fd = -1

    def close_sync(self, child: SyncChild) -> None:
        """The child's pipe is closed, and the child no longer counted."""
        self.close_pipe(child)
        if child in self.sync_children:
            self.sync_children.remove(child)

    def drain(self, child: SyncChild) -> None:
        """The child exited: what is left in its pipe (the write end is closed, so this ends)."""
        if child.fd < 0:
            return
        os.set_blocking(child.fd, True)
        while True:
            try:
                data = os.read(child.fd, 1 << 20)
            except OSError:
                break
            if not data:
                break
            child.chunks.append(data)

    def send_file(self, child: SyncChild) -> None:
        """``$<length>`` and the file to each replica still attached (``+FULLRESYNC`` went at the fork)."""
        if child.sent:
            return
        child.sent = True
        data = b"".join(child.chunks)
        child.chunks = []
        for r in child.replicas:
            conn = r.client.conn
            if r in self._replicas and conn is not None:
                conn.write([b"$%d\r\n" % len(data), data])

    def end_sync(self, child: SyncChild, ok: bool) -> None:
        """The cron reaped the child (REPL-19): each replica still attached gets the file if it has not
        yet, then the stream kept since the fork, and is online; after a failed child, their links
        close (Redis drops the replicas waiting for a failed BGSAVE)."""
        from xspec.reference.persistence import mirror_step, persistence_of
        self.drain(child)
        self.close_sync(child)
        if ok:
            self.send_file(child)
            if child.disk:
                persistence_of(self.core).saved(child.dirty)
        mirror_step(self.core, "bgsave-done")  # FORK-2: --checked's model reaps its child too
        now = self.core.clock.now_ms() / 1000
        for r in child.replicas:
            buffered, r.buffered = r.buffered or [], None
            conn = r.client.conn
            if r not in self._replicas or conn is None:
                continue
            if not ok:
                conn.close_now()
                continue
            r.state = "online"
            r.ack_time = now
            if buffered:
                conn.write(buffered)
        if ok:
            log.info("Background RDB transfer terminated with success")
        else:
            log.warning("Background transfer error")
        self.count_good()

    def kill_sync_children(self) -> None:
        """At shutdown: the children writing snapshots are killed and reaped."""
        from xspec.reference.persistence import persistence_of
        persistence = persistence_of(self.core)
        for child in list(self.sync_children):
            self.close_sync(child)
            if persistence.child is not None and persistence.child.pid == child.pid:
                persistence.child = None
            try:
                os.kill(child.pid, 9)
                os.waitpid(child.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass

    def sync_payload(self) -> list[bytes]:
        """``+FULLRESYNC <id> <offset>`` and the snapshot of this moment, as ``$<length>`` and the file."""
        self.ensure_first_backlog()
        data = self.snapshot()
        self.selected_db = -1  # REPL-5: the next fed command starts with a SELECT
        return [b"+FULLRESYNC %s %d\r\n" % (self.replid.encode(), self.offset), b"$%d\r\n" % len(data), data]

    def ensure_first_backlog(self) -> None:
        """REPL-3: the first backlog, made when a replica asks for a full sync, comes with a new ID."""
        if self.backlog is None:
            self.replid = new_replid()
            self.replid2, self.second_offset = NO_REPLID2, -1
            self.backlog = Backlog(self.offset + 1, self.core.dialect.backlog_in_blocks)
            self.refresh()

    def snapshot(self) -> bytes:
        return b"".join(self.snapshot_chunks())

    def snapshot_chunks(self) -> Iterable[bytes]:
        """The RDB file of this moment for replicas, piece by piece (REPL-5, RDB-5's aux fields)."""
        from xspec.reference.persistence import persistence_of
        core = self.core
        f = persistence_of(core).snapshot()
        dialect = core.dialect
        f.aux = rf.standard_aux(f.version, dialect.server_name, dialect.version, core.now_ms() // 1000, 0, False,
                                (max(self.selected_db, 0), self.replid, self.offset))
        return rf.write_chunks(f, core.config.get("rdbchecksum", "yes") == "yes")

    def partial_ok(self, replid: str, offset: int) -> bool:
        """REPL-6: the ID is ours (or our secondary one up to where it holds) and the backlog has the byte."""
        if replid != self.replid and (replid != self.replid2 or offset > self.second_offset):
            return False
        return self.backlog is not None and self.backlog.holds(offset)

    # -- WAIT ----------------------------------------------------------------------------------------------
    def acked(self, offset: int) -> int:
        return sum(1 for r in self.replicas if r.state == "online" and r.ack >= offset)

    def serve_waiting(self) -> None:
        """Clients in WAIT whose count is reached get it; the others' timeout reply is the count now (WAIT-4)."""
        if not self.waiting:
            return
        core = self.core
        still: list[Waiting] = []
        for w in self.waiting:
            c = w.client
            b = c.blocked
            if b is None or c.id not in core.clients:
                continue
            n = self.acked(w.offset)
            if n >= w.wanted:
                core.unblock(c)
                core._deliver(c, Int(n), timed_out=False)
            else:
                b.timeout_reply = Int(n)
                still.append(w)
        self.waiting = still

    def ask_acks(self) -> None:
        """WAIT-3: one ``REPLCONF GETACK *`` before the loop next sleeps."""
        if self.getack_due:
            return
        self.getack_due = True

        def send() -> None:
            self.getack_due = False
            if self.master is None and self.backlog is not None:
                self.feed_bytes(GETACK)

        asyncio.get_running_loop().call_soon(send)

    # -- becoming a replica or a primary -------------------------------------------------------------
    def unblock_all(self) -> None:
        """disconnectAllBlockedClients: every blocked client gets UNBLOCKED (REPL-9)."""
        core = self.core
        for c in list(core.clients.values()):
            if c.blocked is not None:
                core.unblock(c)
                core._deliver(c, Error(UNBLOCKED), timed_out=False)
        self.waiting = []
        self.aof_waiting = []

    def follow(self, host: str, port: int, failover: bool = False) -> None:
        """REPLICAOF host port (REPL-9); ``failover``: the handover of FAILOVER-5."""
        from xspec.reference.replica_link import ReplicaLink
        if self.core.dialect.replicaof_disconnects_replicas:  # REPL-DIALECT-1
            self.disconnect_replicas()
        self.unblock_all()
        if self.master is None:
            self.cached = (self.replid, self.offset)  # replicationCacheMasterUsingMyself
        elif self.link is not None:
            self.link.close()
        self.master = (host, port)
        self.link = ReplicaLink(self, host, port)
        self.link.failover = failover
        self.refresh()
        self.link.start()
        self.start()

    def promote(self) -> None:
        """REPLICAOF NO ONE on a replica (REPL-8): the ID shifts, data, offset and backlog stay."""
        if self.link is not None:
            self.link.close()
            self.link = None
        self.master = None
        self.cached = None
        self.shift_id()
        self.disconnect_replicas()  # 7.0's replicationUnsetMaster
        self.selected_db = -1
        self.refresh()

    def adopt(self, replid: str, offset: int) -> None:
        """A full synchronisation was loaded: the primary's ID and offset, no secondary ID, a new
        backlog from there (REPL-5, replicationAttachToNewMaster)."""
        self.replid, self.replid2, self.second_offset = replid, NO_REPLID2, -1
        self.set_offset(offset)
        self.backlog = Backlog(offset + 1, self.core.dialect.backlog_in_blocks)

    def ensure_backlog(self) -> None:
        """A partial resynchronisation continues: a node without a backlog gets one (REPL-3)."""
        if self.backlog is None:
            self.backlog = Backlog(self.offset + 1, self.core.dialect.backlog_in_blocks)

    def rdb_info(self) -> tuple[int, str, int] | None:
        """rdbPopulateSaveInfo: what an RDB file records of replication (RDB-5): a primary with a backlog,
        or a replica, writes (stream db, ID, offset); any other node nothing."""
        if self.master is None:
            return (max(self.selected_db, 0), self.replid, self.offset) if self.backlog is not None else None
        link = self.link
        client = link.client if link is not None else None
        if client is None and self.cached is None:
            return None
        return (client.db if client is not None else 0, self.replid, self.offset)

    def restore_from_rdb(self, replid: bytes | None, offset: bytes | None, as_replica: bool) -> None:
        """loadDataFromDisk (RDB-5): a replica takes the file's ID and offset as its cached master; a
        primary keeps the file's ID as its secondary one (up to offset + 1) and continues from that
        offset with an empty backlog there. 6.2 restores them only on a replica (REPL-DIALECT-3)."""
        if replid is None or offset is None or not offset.lstrip(b"-").isdigit():
            return
        rid, off = replid.decode("latin-1"), int(offset)
        if as_replica:
            self.replid = rid
            self.set_offset(off)
            self.cached = (rid, off)
        elif self.core.dialect.rdb_replication_on_primary:
            self.replid2, self.second_offset = rid, off + 1
            self.set_offset(off)
            self.backlog = Backlog(off + 1, self.core.dialect.backlog_in_blocks)

    def shift_id(self) -> None:
        """shiftReplicationId: the ID becomes the secondary one, valid up to the offset + 1; a new ID."""
        self.replid2 = self.replid
        self.second_offset = self.offset + 1
        self.replid = new_replid()

    def stop(self) -> None:
        self.feed_unfed()
        self.stopped = True
        self.kill_sync_children()
        if self.sync_timer is not None:
            self.sync_timer.cancel()
            self.sync_timer = None
        if self.link is not None:
            self.link.close()
        if self.cron is not None:
            self.cron.cancel()
            self.cron = None
        if self.aof_poll is not None:
            self.aof_poll.cancel()
            self.aof_poll = None

    # -- FAILOVER ---------------------------------------------------------------------------------------
    def start_failover(self, target: tuple[str, int] | None, timeout: int | None, force: bool) -> None:
        """FAILOVER-3: writes pause until the handover ends."""
        core = self.core
        self.failover = Failover(target, core.now_ms() + timeout if timeout else None, force)
        core.pause(core.now_ms() + 10 ** 12, False)
        self.check_failover()

    def check_failover(self, cron: bool = False) -> None:
        """FAILOVER-5, FAILOVER-6: hand over once the target acknowledged the whole stream; the deadline."""
        f = self.failover
        if f is None or f.state != "waiting-for-sync":
            return
        if cron and f.deadline is not None and self.core.now_ms() >= f.deadline:  # FAILOVER-6
            if f.force and f.target is not None:
                self.hand_over(f.target)
            else:
                self.end_failover(abort=True)
            return
        for r in self.replicas:
            if (f.target is None or (r.ip.lower(), r.port) == (f.target[0].lower(), f.target[1])) and \
                    r.state == "online" and r.ack == self.offset:
                self.hand_over((r.ip, r.port))
                return

    def hand_over(self, target: tuple[str, int]) -> None:
        """FAILOVER-5: follow the target, which takes over on ``PSYNC <id> <offset+1> FAILOVER``."""
        f = self.failover
        assert f is not None
        f.state = "failover-in-progress"
        f.target = target
        self.follow(*target, failover=True)

    def end_failover(self, abort: bool) -> None:
        """The handover ended (the target answered) or was aborted (FAILOVER-7): writes go on."""
        f, self.failover = self.failover, None
        if f is None:
            return
        if abort and f.state == "failover-in-progress":
            self.promote()
        self.core.unpause()

    # -- INFO --------------------------------------------------------------------------------------
    def info_section(self) -> str:
        """INFO's ``# Replication`` section (REPL-15)."""
        core = self.core
        cfg = core.config
        dual = core.dialect.info_replication_dual_channel
        lines = ["# Replication", f"role:{'slave' if self.master is not None else 'master'}"]
        if self.master is not None:
            link = self.link
            up = link is not None and link.state == "connected"
            lines += [f"master_host:{self.master[0]}", f"master_port:{self.master[1]}",
                      f"master_link_status:{'up' if up else 'down'}",
                      f"master_last_io_seconds_ago:{link.io_seconds_ago() if up and link is not None else -1}",
                      f"master_sync_in_progress:{int(link is not None and link.state == 'sync')}"]
            read = link.read_offset if link is not None and link.read_offset >= 0 else self.offset
            applied = link.applied if link is not None and link.applied >= 0 else self.offset
            if link is not None and link.applied < 0 and self.cached is None:
                read = applied = 1  # no master yet: Redis prints 1 here
            lines += [f"slave_read_repl_offset:{read}", f"slave_repl_offset:{applied}"]
            if dual:  # REPL-DIALECT-5
                lines += ["replicas_repl_buffer_size:0", "replicas_repl_buffer_peak:0"]
            if link is not None and link.state == "sync":
                lines += [f"master_sync_total_bytes:{link.sync_total}", f"master_sync_read_bytes:{link.sync_read}",
                          f"master_sync_left_bytes:{max(link.sync_total - link.sync_read, 0)}",
                          "master_sync_perc:0.00", "master_sync_last_io_seconds_ago:0"]
            if not up:
                lines.append(f"master_link_down_since_seconds:{link.down_seconds() if link is not None else -1}")
            lines += [f"slave_priority:{cfg.get('replica-priority', '100')}",
                      f"slave_read_only:{int(cfg.get('replica-read-only', 'yes') == 'yes')}",
                      f"replica_announced:{int(cfg.get('replica-announced', 'yes') == 'yes')}"]
        lines.append(f"connected_slaves:{len(self.replicas)}")
        if self.min_replicas():
            lines.append(f"min_slaves_good_slaves:{self.good}")
        now = core.clock.now_ms() / 1000
        for i, r in enumerate(self.replicas):
            kind = ",type=replica" if dual else ""
            lines.append(f"slave{i}:ip={r.ip},port={r.port},state={r.state},offset={r.ack},"
                         f"lag={max(int(now - r.ack_time), 0)}{kind}")
        if dual:
            lines.append("replicas_waiting_psync:0")
        b = self.backlog
        lines += [f"master_failover_state:{self.failover.state if self.failover else 'no-failover'}",
                  f"master_replid:{self.replid}",
                  f"master_replid2:{self.replid2}", f"master_repl_offset:{self.offset}",
                  f"second_repl_offset:{self.second_offset}", f"repl_backlog_active:{int(b is not None)}",
                  f"repl_backlog_size:{cfg.get('repl-backlog-size', '1048576')}",
                  f"repl_backlog_first_byte_offset:{b.first if b is not None else 0}",
                  f"repl_backlog_histlen:{b.histlen if b is not None else 0}"]
        return "".join(line + "\r\n" for line in lines)


def replication_of(core: Core) -> Replication:
    found = core.replication
    if not isinstance(found, Replication):
        found = core.replication = Replication(core)
        core.repl_offset = found.offset
    return found


# -- commands ----------------------------------------------------------------------------------------------


def _text(arg: bytes) -> str:
    return c_string(arg).decode("latin-1")


def replconf_command(ctx: Context) -> Any:
    """REPLCONF listening-port / ip-address / capa / ack / getack / rdb-only (replconfCommand)."""
    argv = ctx.argv
    rep = replication_of(ctx.core)
    c = ctx.client
    if len(argv) % 2 == 0:
        raise ReplyError("ERR syntax error")
    for j in range(1, len(argv), 2):
        option = _text(argv[j]).lower()
        value = argv[j + 1]
        if option == "listening-port":
            try:
                port = int(value)
            except ValueError:
                raise ReplyError(NOT_INTEGER) from None
            ip = rep.announced.get(c.id, ("", 0))[0]
            rep.announced[c.id] = (ip, port)
        elif option == "ip-address":
            port = rep.announced.get(c.id, ("", 0))[1]
            rep.announced[c.id] = (_text(value), port)
        elif option == "capa":
            capability = c_string(value).lower()
            if capability in (b"eof", b"psync2"):
                rep.capabilities[c.id] = rep.capabilities.get(c.id, frozenset()) | {capability}
        elif option in ("rdb-only", "rdb-filter-only", "fack"):
            continue
        elif option == "ack":
            for r in rep.replicas:
                if r.client is c:
                    try:
                        offset = int(value)
                    except ValueError:
                        return Encoded([])
                    r.ack = max(r.ack, offset)
                    r.ack_time = ctx.core.clock.now_ms() / 1000
                    if len(argv) > j + 3 and _text(argv[j + 2]).lower() == "fack":  # WAITAOF-2
                        fack = string2ll(argv[j + 3])
                        if fack is not None:
                            r.fack = max(r.fack, fack)
                    rep.serve_waiting()
                    serve_aof_waiting(rep)
                    rep.check_failover()
            return Encoded([])  # REPLCONF ACK has no reply
        elif option == "getack":
            if rep.link is not None:
                rep.link.send_ack()  # WAIT-3: the offset before this GETACK
            return Encoded([])
        else:
            raise ReplyError(f"ERR Unrecognized REPLCONF option: {_text(argv[j])}")
    return OK


def psync_command(ctx: Context) -> Any:
    """PSYNC replid offset (and SYNC): a partial resynchronisation when possible, else a full one."""
    rep = replication_of(ctx.core)
    c = ctx.client
    if any(r.client is c for r in rep.replicas):
        return Encoded([])  # a replica asks once
    argv = ctx.argv
    if len(argv) == 4 and _text(argv[3]).lower() == "failover":  # FAILOVER-5: the target takes over
        if rep.master is None:
            raise ReplyError("ERR PSYNC FAILOVER can't be sent to a master.")
        if _text(argv[1]) != rep.replid:
            raise ReplyError("ERR PSYNC FAILOVER replid must match my replid.")
        rep.promote()
    if rep.failover is not None:
        raise ReplyError("NOMASTERLINK Can't SYNC while failing over")  # REPL-16
    if rep.master is not None and (rep.link is None or rep.link.state != "connected"):
        raise ReplyError(NO_SYNC_WITHOUT_LINK)  # REPL-16
    if _text(argv[0]).lower() == "psync":
        try:
            offset = int(argv[2])
        except ValueError:
            offset = -1
        replid = _text(argv[1])
        if rep.partial_ok(replid, offset):  # REPL-6
            assert rep.backlog is not None
            rep.attach(c)
            rep.sync_partial_ok += 1
            return Encoded([b"+CONTINUE %s\r\n" % rep.replid.encode(), rep.backlog.since(offset)])
        if replid != "?":
            rep.sync_partial_err += 1
    rep.sync_full += 1
    return rep.full_sync(c, pre_psync=_text(argv[0]).lower() == "sync")


def replicaof_command(ctx: Context) -> Reply:
    """REPLICAOF host port | NO ONE (REPL-8, REPL-9)."""
    core = ctx.core
    rep = replication_of(core)
    argv = ctx.argv
    if ctx.client.kind == "master":
        raise ReplyError(FROM_REPLICA)
    if rep.failover is not None:
        raise ReplyError("ERR REPLICAOF not allowed while failing over.")  # FAILOVER-3
    if _text(argv[1]).lower() == "no" and _text(argv[2]).lower() == "one":
        if rep.master is not None:
            rep.promote()
            log.info("MASTER MODE enabled (user request from 'id=%d')", ctx.client.id)
        return OK
    try:
        port = int(argv[2])
    except ValueError:
        raise ReplyError(NOT_INTEGER) from None
    host = _text(argv[1])
    if rep.master is not None and rep.master[0].lower() == host.lower() and rep.master[1] == port:
        return Simple("OK Already connected to specified master")
    rep.follow(host, port)
    return OK


def role_command(ctx: Context) -> Reply:
    """ROLE (REPL-14)."""
    rep = replication_of(ctx.core)
    if rep.master is None:
        return Array((Bulk(b"master"), Int(rep.offset), Array(tuple(
            Array((Bulk(r.ip.encode()), Bulk(b"%d" % r.port), Bulk(b"%d" % r.ack)))
            for r in rep.replicas if r.state == "online"))))
    link = rep.link
    state = link.state if link is not None else "connect"
    applied = link.applied if link is not None and link.state == "connected" else -1
    return Array((Bulk(b"slave"), Bulk(rep.master[0].encode()), Int(rep.master[1]), Bulk(state.encode()),
                  Int(applied)))


def wait_command(ctx: Context) -> Any:
    """WAIT numreplicas timeout (WAIT-1 .. WAIT-5)."""
    core = ctx.core
    rep = replication_of(core)
    if rep.master is not None:
        raise ReplyError(core.dialect.wait_on_replica_error)  # WAIT-5, WAIT-DIALECT-2
    wanted = string2ll(ctx.argv[1])
    if wanted is None:
        raise ReplyError(NOT_INTEGER)
    timeout = string2ll(ctx.argv[2])
    if timeout is None:
        raise ReplyError(TIMEOUT_NOT_INTEGER)
    if timeout < 0:
        raise ReplyError(TIMEOUT_NEGATIVE)
    c = ctx.client
    offset = c.woff  # WAIT-2
    n = rep.acked(offset)
    if not ctx.can_block or n >= wanted:  # WAIT-4, WAIT-1
        return Int(n)
    blocked = ctx.block([], timeout, lambda _ctx, _key: None, Int(n))
    rep.waiting.append(Waiting(c, wanted, offset))
    rep.ask_acks()  # WAIT-3
    return blocked


def waitaof_handler(ctx: Context) -> Reply:
    """WAITAOF numlocal numreplicas timeout (WAITAOF-1 .. WAITAOF-3, reference.waitaof)."""
    return waitaof_command(ctx, replication_of(ctx.core))


def xspec_link_command(ctx: Context) -> Reply:
    """XSPEC.LINK HOLD | FLOW | CUT [<host:port>]: a failure of a replication link between two commands.

    Without an address it acts on this node's link to its primary: HOLD stops reading the stream and
    acknowledging (what the primary sends waits in the socket), FLOW lets it go on, CUT drops the
    connection (the replica caches its master and reconnects a second later, REPL-7). With the address
    a replica announced (ROLE's), sent to the primary, CUT closes that replica's connection.
    """
    rep = replication_of(ctx.core)
    argv = ctx.argv
    verb = _text(argv[1]).upper()
    if verb not in ("HOLD", "FLOW", "CUT") or len(argv) > 3:
        raise ReplyError("ERR unknown subcommand or wrong number of arguments for XSPEC.LINK. "
                         "Try XSPEC.LINK HOLD | FLOW | CUT [host:port].")
    deployment = rep.deployment
    if len(argv) == 3 and deployment is not None and deployment.has_node(_text(argv[2])):
        deployment.link_verb(verb, deployment.find(_text(argv[2])))  # a node of xspec serve --replicas
        return OK
    if len(argv) == 3:
        address = _text(argv[2])
        found = [r for r in rep.replicas if f"{r.ip}:{r.port}" == address]
        if not found:
            raise ReplyError(f"ERR no replica {address} is attached to this node")
        if verb != "CUT":
            raise ReplyError("ERR XSPEC.LINK HOLD and FLOW are sent to the replica (its link to its primary)")
        for r in found:
            if r.client.conn is not None:
                r.client.conn.close_now()
        return OK
    link = rep.link
    if link is None:
        raise ReplyError("ERR this node is no replica: XSPEC.LINK without an address acts on a replica's link")
    if verb == "HOLD":
        link.hold()
    elif verb == "FLOW":
        link.flow()
    else:
        link.cut()
    return OK


def failover_command(ctx: Context) -> Reply:
    """FAILOVER [TO host port [FORCE]] [TIMEOUT ms] | ABORT (FAILOVER-1 .. FAILOVER-3, FAILOVER-7)."""
    rep = replication_of(ctx.core)
    argv = ctx.argv
    target: tuple[str, int] | None = None
    timeout: int | None = None
    force = abort = False
    seen: set[str] = set()
    j = 1
    while j < len(argv):
        word = _text(argv[j]).lower()
        if word in seen:
            raise ReplyError("ERR syntax error")
        seen.add(word)
        if word == "to" and j + 2 < len(argv):
            port = string2ll(argv[j + 2])
            if port is None:
                raise ReplyError(NOT_INTEGER)
            target = (_text(argv[j + 1]), port)
            j += 3
        elif word == "timeout" and j + 1 < len(argv):
            ms = string2ll(argv[j + 1])
            if ms is None:
                raise ReplyError(NOT_INTEGER)
            if ms <= 0:
                raise ReplyError("ERR FAILOVER timeout must be greater than 0")
            timeout = ms
            j += 2
        elif word == "force":
            force = True
            j += 1
        elif word == "abort" and len(argv) == 2:
            abort = True
            j += 1
        else:
            raise ReplyError("ERR syntax error")
    if abort:  # FAILOVER-2, FAILOVER-7
        if rep.failover is None:
            raise ReplyError("ERR No failover in progress.")
        rep.end_failover(abort=True)
        return OK
    if rep.failover is not None:
        raise ReplyError("ERR FAILOVER already in progress.")
    if rep.master is not None:
        raise ReplyError("ERR FAILOVER is not valid when server is a replica.")
    if not rep.replicas:
        raise ReplyError("ERR FAILOVER requires connected replicas.")
    if force and (timeout is None or target is None):
        raise ReplyError("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
    if target is not None:
        found = [r for r in rep.replicas if (r.ip.lower(), r.port) == (target[0].lower(), target[1])]
        if not found:
            raise ReplyError("ERR FAILOVER target HOST and PORT is not a replica.")
        if found[0].state != "online":
            raise ReplyError("ERR FAILOVER target replica is not online.")
    rep.start_failover(target, timeout, force)
    return OK


def xspec_node_command(ctx: Context) -> Reply:
    """XSPEC.NODE CRASH | RESTART | PAUSE | RESUME <node>: a failure of a node of ``xspec serve --replicas``
    (``reference.replication_deployment``), by name or host:port."""
    argv = ctx.argv
    verb = _text(argv[1]).upper()
    if verb not in ("CRASH", "RESTART", "PAUSE", "RESUME") or len(argv) != 3:
        raise ReplyError("ERR unknown subcommand or wrong number of arguments for XSPEC.NODE. "
                         "Try XSPEC.NODE CRASH | RESTART | PAUSE | RESUME <node>.")
    deployment = replication_of(ctx.core).deployment
    if deployment is None:
        raise ReplyError("ERR XSPEC.NODE needs a deployment: start xspec serve with --replicas N")
    deployment.node_verb(verb, deployment.find(_text(argv[2])))
    return OK


def config_rewrite_command(ctx: Context) -> Reply:
    """CONFIG REWRITE: this server reads no config file, as Redis started without one answers."""
    raise ReplyError("ERR The server is running without a config file")


def add_replication(handlers: dict[str, Any]) -> None:
    """Put the replication commands into a handler table, INFO's replication section from this node's
    state, and CONFIG SET followed by a look at what it changed (appendonly, min-replicas-*)."""
    handlers.update({"replconf": replconf_command, "psync": psync_command, "sync": psync_command,
                     "replicaof": replicaof_command, "slaveof": replicaof_command, "role": role_command,
                     "wait": wait_command, "waitaof": waitaof_handler, "xspec.link": xspec_link_command,
                     "xspec.node": xspec_node_command, "config|rewrite": config_rewrite_command,
                     "failover": failover_command})
    info = handlers.get("info")
    if info is not None:
        def info_with_replication(ctx: Context) -> Any:
            return replication_info(ctx.core, info(ctx))

        handlers["info"] = info_with_replication
    config_set = handlers.get("config|set")
    if config_set is not None:
        def config_set_then_replication(ctx: Context) -> Any:
            reply = config_set(ctx)
            if isinstance(ctx.core.replication, Replication):
                ctx.core.replication.refresh()
            return reply

        handlers["config|set"] = config_set_then_replication


def replication_info(core: Core, reply: Any) -> Any:
    """INFO's text with its ``# Replication`` section from :meth:`Replication.info_section`."""
    if not isinstance(reply, Verbatim):
        return reply
    text = reply.text
    rep = replication_of(core)
    start = text.find(b"# Replication\r\n")
    if start >= 0:
        end = text.find(b"\r\n\r\n", start)
        rest = text[end + 2:] if end >= 0 else b""
        text = text[:start] + rep.info_section().encode() + rest
    for name, value in ((b"sync_full", rep.sync_full), (b"sync_partial_ok", rep.sync_partial_ok),
                        (b"sync_partial_err", rep.sync_partial_err)):
        text = text.replace(b"\r\n%s:0\r\n" % name, b"\r\n%s:%d\r\n" % (name, value), 1)
    return Verbatim(reply.fmt, text)


def start_replication(core: Core, replicaof: tuple[str, int] | None = None) -> Replication:
    """At start: the node's replication state; with ``replicaof`` (the ``replicaof`` setting) it follows
    that primary."""
    rep = replication_of(core)
    loaded = getattr(core.persistence, "loaded_replication", None)
    if loaded is not None:
        rep.restore_from_rdb(loaded[0], loaded[1], as_replica=replicaof is not None)
    rep.refresh()
    rep.start()
    if replicaof is not None:
        rep.follow(*replicaof)
    return rep


def finish_replication(core: Core) -> None:
    if isinstance(core.replication, Replication):
        core.replication.stop()


__all__ = ["Backlog", "Replication", "add_replication", "finish_replication", "replication_of",
           "start_replication"]
