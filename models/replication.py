"""Several model servers replicating to each other (spec/rules/replication.md: REPL-*, WAIT-*, RDB-*, AOF-*).

A :class:`Deployment` is a set of :class:`Node` s, each a model
:class:`~xspec.models.server.Server` with its own clock, clients, persistence
and replication state, and the replication links between them, as Redis
7.0's ``replication.c`` keeps them:

* every node has a replication ID, a secondary ID valid up to
  ``second_repl_offset``, and ``master_repl_offset``, the bytes of the
  replication stream (the RESP rendering of what the model propagates,
  SELECT and MULTI/EXEC included, PINGs and ``REPLCONF GETACK``) it produced
  or applied (REPL-1, REPL-2);
* a primary feeds its stream only once it has a backlog, which is created,
  with a new replication ID, when the first replica attaches (REPL-3);
* a replica asks ``PSYNC <replid> <offset+1>``; the primary continues from
  its backlog when the ID is its own, or its secondary one up to
  ``second_repl_offset``, and the offset is inside the backlog; otherwise it
  takes a snapshot and the replica replaces its data with it (REPL-5, REPL-6);
* ``REPLICAOF NO ONE`` shifts the IDs (REPL-8); ``REPLICAOF host port``
  turns a primary into a replica that tries to continue its own history
  (REPL-9): an old primary that took writes after its replica's promotion
  gets a full resynchronisation and loses them;
* ``FAILOVER`` pauses writes (postponed commands run again when the pause
  ends), hands over once the target acknowledged the whole stream (or at a
  FORCE timeout) and sends it ``PSYNC ... FAILOVER`` (FAILOVER-*);
  ``WAITAOF`` counts fsynced offsets, local and acknowledged by FACK (WAITAOF-*).

What differs between servers (6.2's ring backlog, 7.2+'s WAIT offsets,
Valkey's INFO fields, ...) is read from the node's dialect (REPL-DIALECT-*).

Steps no client causes are methods the caller (a test, the conformance
checker) invokes when it decides they happen: :meth:`Deployment.connect`
(the replica's handshake and PSYNC), :meth:`Deployment.fork` (the snapshot
of a full sync), :meth:`Deployment.load` (the replica loads it),
:meth:`Deployment.failover_cron` (a FAILOVER's deadline), :meth:`Deployment.fsync` (the AOF's fsync),
:meth:`Deployment.apply` (the replica applies one command of the stream),
:meth:`Deployment.ack` (``REPLCONF ACK``), :meth:`Deployment.ping` (the
primary's PING every ``repl-ping-replica-period``). :meth:`Deployment.steps`
lists those possible now. Faults: :meth:`crash`, :meth:`restart`,
:meth:`pause`, :meth:`resume`, :meth:`set_link`.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xspec.models.clock import Clock, Duration, Instant, ManualClock
from xspec.models.persistence import (
    AppendOnlyFile,
    Snapshot,
    load_snapshot,
    render,
    replayable,
    rewrite_commands,
    take_snapshot,
)
from xspec.models.server import BLOCKED, FLUSHALL_SAVE, PERSISTENCE_HOOKS, Call, CommandError, Outcome, Server, command
from xspec.models.state import BlockState, Client
from xspec.spec import commands as table
from xspec.spec.config import CONFIG_DEFAULTS
from xspec.spec.dialect import REDIS_70, Dialect
from xspec.spec.errors import TIMEOUT_NEGATIVE, TIMEOUT_NOT_INTEGER
from xspec.spec.ids import c_string, parse_ll
from xspec.spec.resp import OK, Array, Bulk, Error, Int, NullArray, Reply, Simple, Verbatim

MASTER_CLIENT = -1
"""The client id of a replica's connection from its primary (``server.master``)."""
AOF_CLIENT = -2
"""The client id that replays an AOF on restart."""

READONLY_ERROR = "READONLY You can't write against a read only replica."
NOREPLICAS_ERROR = "NOREPLICAS Not enough good replicas to write."
UNBLOCKED_ROLE_CHANGE = ("UNBLOCKED force unblock from blocking operation, instance state changed "
                         "(master -> replica?)")
REPLICAOF_FROM_REPLICA = "ERR Command is not valid when client is a replica."
ALREADY_CONNECTED = "OK Already connected to specified master"
NO_REPLID = "0" * 40
WAITAOF_NO_AOF = "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."

REPLICATION_DIALECTS = frozenset({"redis-6.2", "redis-7.0", "redis-7.2", "redis-7.4", "valkey-8.1", "valkey-9.1"})
"""The dialects whose replication, failover and persistence the deployment models (rule 6: a trace/2
with a node of another dialect is ``unsupported``)."""

RDB_VERSION = {"redis-6.2": 9, "redis-7.0": 10}
"""The RDB version each dialect writes (RDB-3); 11 for later ones."""


def resp_length(argv: list[bytes]) -> int:
    """The bytes of ``argv`` as a RESP array of bulk strings: what it adds to an offset (REPL-2)."""
    n = len(b"*%d\r\n" % len(argv))
    for a in argv:
        n += len(b"$%d\r\n" % len(a)) + len(a) + 2
    return n


PING = [b"ping"]  # shared.ping: 7.0 sends it in lower case
GETACK = [b"REPLCONF", b"GETACK", b"*"]


class SkewedClock:
    """A node's clock: the deployment's clock plus a fixed skew (rule 7's ``skew_ms``)."""

    def __init__(self, base: Clock, skew_ms: int) -> None:
        self.base = base
        self.skew = Duration(skew_ms)

    def now_ms(self) -> Instant:
        return self.base.now_ms() + self.skew


BLOCK_HEADER = 40
"""``sizeof(replBufBlock)``: what each block of the replication buffer spends before its data."""


def _usable(n: int) -> int:
    """jemalloc's usable size of an allocation of ``n`` bytes (its size class), for n > 16 KiB."""
    size = 16384
    while True:
        step = size // 4
        for k in range(1, 5):
            if size + k * step >= n:
                return size + k * step
        size *= 2


@dataclass
class Backlog:
    """``server.repl_backlog``: the last commands of the stream with their end offsets (REPL-3, REPL-4).

    7.0 keeps the stream in blocks (``replBufBlock``) of at least 16 KiB; ``blocks`` holds each
    block's [size, used], so trimming, which drops whole blocks, happens where Redis's does.
    """

    first: int  # repl_backlog_first_byte_offset
    histlen: int = 0
    units: deque[tuple[int, list[bytes]]] = field(default_factory=deque)  # (end offset, command)
    blocks: deque[list[int]] = field(default_factory=deque)
    circular: bool = False  # REPL-DIALECT-2: 6.2's ring buffer of exactly repl-backlog-size bytes

    def add(self, end: int, argv: list[bytes], size: int) -> None:
        self.units.append((end, argv))
        n = resp_length(argv)
        if self.circular:  # REPL-DIALECT-2: the last repl-backlog-size bytes, to the byte
            self.histlen = min(self.histlen + n, size)
            self.first = end - self.histlen + 1
            while self.units and self.units[0][0] < self.first:
                self.units.popleft()
            return
        self.histlen += n
        while n > 0:  # feedReplicationBuffer
            tail = self.blocks[-1] if self.blocks else None
            if tail is not None and tail[1] < tail[0]:
                take = min(n, tail[0] - tail[1])
                tail[1] += take
                n -= take
                continue
            want = min(max(n, 16384), max(size // 16, 16384))
            self.blocks.append([_usable(want + BLOCK_HEADER) - BLOCK_HEADER, 0])
        # REPL-4 (incrementalTrimReplicationBacklog): whole blocks go, the first while the history
        # without it still exceeds the size. Redis also keeps a block a replica's output buffer
        # still needs; the model does not track output buffers.
        while self.histlen > size and len(self.blocks) > 1 and self.histlen - self.blocks[0][0] > size:
            gone = self.blocks.popleft()[0]
            self.histlen -= gone
            self.first += gone
        while self.units and self.units[0][0] < self.first:
            self.units.popleft()

    def since(self, offset: int) -> list[tuple[int, list[bytes]]]:
        """The commands after byte ``offset`` (the replica asked for ``offset + 1``)."""
        return [(end, argv) for end, argv in self.units if end > offset]

    def freeze(self) -> tuple[Any, ...]:
        return (self.first, self.histlen, tuple((e, tuple(a)) for e, a in self.units),
                tuple(tuple(b) for b in self.blocks), self.circular)


@dataclass
class Link:
    """The replication connection from ``primary`` to ``replica`` as the primary's replica client keeps it.

    ``phase``: ``wait-bgsave`` (a full sync waits for its snapshot), ``transfer`` (the
    snapshot is on its way; the stream after it is buffered), ``online``.
    ``child``: the primary's RDB child writing that snapshot still runs (the primary shows the
    replica ``wait_bgsave``, REPL-19); ``bulk``: a disk-based snapshot's file is being sent (``send_bulk``);
    ``disk``: the snapshot goes through a file, which the replica gets only after the child (REPL-19).
    ``pending`` is what the primary sent and the replica has not applied, with end offsets.
    """

    primary: str
    replica: str
    phase: str = "wait-bgsave"
    held: bool = False
    pending: deque[tuple[int, list[bytes]]] = field(default_factory=deque)
    snapshot: Snapshot | None = None
    ack: int = 0  # repl_ack_off
    fack: int = 0  # repl_aof_off: the replica's fsynced offset its last REPLCONF ACK ... FACK carried (WAITAOF-2)
    getacks: deque[int] = field(default_factory=deque)  # offsets before each GETACK the replica applied
    sync: tuple[str, str, int] | None = None  # ("full"|"partial", replid, offset) of the handshake
    fed: int = 0  # commands put on the link since the handshake
    applied: int = 0  # of those, applied by the replica
    child: bool = False
    bulk: bool = False
    disk: bool = False

    @property
    def replstate(self) -> str:
        """The replica's state as its primary's INFO shows it (REPL-19)."""
        if self.phase == "wait-bgsave" or self.child:
            return "wait_bgsave"
        return "send_bulk" if self.bulk else "online"

    def freeze(self) -> tuple[Any, ...]:
        return (self.primary, self.replica, self.phase, self.held,
                tuple((e, tuple(a)) for e, a in self.pending),
                None if self.snapshot is None else self.snapshot.freeze(), self.ack, tuple(self.getacks),
                self.sync, self.fack, self.child, self.bulk, self.disk)


@dataclass
class Node:
    """One server of a deployment and its replication and persistence state."""

    name: str
    addrs: tuple[tuple[str, int], ...]
    config: dict[str, str]  # the header's configuration, restored on restart
    server: Server
    replid: str
    replid2: str = NO_REPLID
    second_offset: int = -1
    offset: int = 0  # master_repl_offset
    backlog: Backlog | None = None
    master: tuple[str, int] | None = None  # masterhost, masterport
    cached: tuple[str, int] | None = None  # the cached master's (replid, reploff), for PSYNC
    up: bool = True
    paused: bool = False
    rdb: Snapshot | None = None
    aof: AppendOnlyFile | None = None
    woff: dict[int, int] = field(default_factory=dict)  # client -> master_repl_offset after its last command
    getack_requested: bool = False
    writes_executed: int = 0  # client writes this node executed while a read-only replica (must stay 0)
    dirty: int = 0  # changes since the last RDB save (``server.dirty``)
    good: int = 0  # repl_good_slaves_count as last refreshed (REPL-11)
    failover: Failover | None = None  # a FAILOVER in progress on this node (FAILOVER-3)
    fsynced: int = -1  # fsynced_reploff: the offset the AOF holds on disk, -1 without an AOF (WAITAOF-1)
    postponed: int = 0  # commands postponed so far while writes were paused (their order)
    # FORK-1: a BGSAVE's child runs, writing this snapshot (the data at its fork); with the changes
    # counted then (``node.dirty``, the INFO counter) that its end takes off
    bgsave_child: Snapshot | None = None
    bgsave_dirty: tuple[int, int] = (0, 0)
    bgsave_killed: bool = False  # FLUSH-6: FLUSHALL signalled the child; its reaping writes no file
    rewrite_scheduled: bool = False  # FORK-2: ``aof_rewrite_scheduled``
    bgsave_scheduled: bool = False  # FORK-2: ``rdb_bgsave_scheduled``
    rewrite_failures: int = 0  # AOF-LIMIT-1: ``aof_rewrites_consecutive_failures``
    # REPL-19: the running RDB child writes a full sync's snapshot: to a file (``disk``) or to the
    # replicas' sockets (``socket``); None: no child, or a BGSAVE's
    sync_target: str | None = None

    @property
    def is_replica(self) -> bool:
        return self.master is not None

    @property
    def failover_state(self) -> str:
        """INFO's ``master_failover_state`` (FAILOVER-3)."""
        return "no-failover" if self.failover is None else self.failover.state

    def freeze(self) -> tuple[Any, ...]:
        return (self.name, self.server.freeze(), self.replid, self.replid2, self.second_offset, self.offset,
                None if self.backlog is None else self.backlog.freeze(), self.master, self.cached, self.up,
                self.paused, None if self.rdb is None else self.rdb.freeze(),
                None if self.aof is None else self.aof.freeze(), tuple(sorted(self.woff.items())),
                None if self.failover is None else self.failover.freeze(), self.getack_requested, self.good,
                self.dirty, self.fsynced,
                (None if self.bgsave_child is None else self.bgsave_child.freeze(), self.bgsave_dirty,
                 self.bgsave_killed, self.rewrite_scheduled, self.bgsave_scheduled, self.rewrite_failures,
                 self.sync_target))


@dataclass
class Failover:
    """``server.failover_state`` and its parameters while a FAILOVER runs (FAILOVER-3 .. FAILOVER-7).

    ``state``: ``waiting-for-sync`` (writes paused until a replica acknowledged the whole
    stream, or the timeout), ``failover-in-progress`` (the node follows the target and
    sends it ``PSYNC ... FAILOVER``).
    """

    state: str
    target: tuple[str, int] | None  # the replica's announced address, once known
    end: Instant | None  # failover_end_time: the FAILOVER's clock reading + TIMEOUT
    force: bool
    # The cron found the deadline not reached yet, and nothing happened since: checking again
    # now could only find the same (keeps a search from repeating the step).
    idle: bool = False

    def freeze(self) -> tuple[Any, ...]:
        return (self.state, self.target, self.end, self.force, self.idle)


@dataclass(frozen=True)
class Postponed:
    """The payload of a client whose command waits for the end of a write pause (FAILOVER-4)."""

    seq: int


def rerun_postponed(deployment: Deployment, node: str, client: int, argv: list[bytes]) -> Outcome:
    """A postponed command runs again from the start once writes are unpaused (FAILOVER-4)."""
    return deployment.execute(node, client, argv)


class Deployment:
    """Nodes, their links and the steps between them (REPL-*)."""

    def __init__(self, nodes: dict[str, dict[str, Any]], clock: Clock | None = None) -> None:
        """``nodes``: name -> {"dialect": Dialect, "addrs": ["host:port", ...], "config": {...}, "skew_ms": n}."""
        self.clock: Clock = clock if clock is not None else ManualClock()
        self.replids = 0
        self.nodes: dict[str, Node] = {}
        self.links: dict[str, Link] = {}  # replica name -> its link
        self.specs = nodes
        self.pending_served: list[tuple[int, Reply]] = []
        for name, spec in nodes.items():
            self.nodes[name] = self._new_node(name, spec)

    # -- construction ---------------------------------------------------------------
    def _new_replid(self) -> str:
        """``changeReplicationId``: a fresh random ID; the model names them in order (REPL-1)."""
        self.replids += 1
        return hashlib.sha1(b"xspec-replid-%d" % self.replids).hexdigest()

    def _new_server(self, name: str) -> Server:
        spec = self.specs[name]
        dialect: Dialect = spec.get("dialect", REDIS_70)
        skew = int(spec.get("skew_ms", 0))
        clock: Clock = SkewedClock(self.clock, skew) if skew else self.clock
        server = Server(dialect, clock, dict(spec.get("config", {})))
        return server

    def _new_node(self, name: str, spec: dict[str, Any]) -> Node:
        addrs = tuple(_addr(a) for a in spec.get("addrs", ()))
        node = Node(name, addrs, dict(spec.get("config", {})), self._new_server(name), self._new_replid())
        node.server.node = node
        node.deployment = self  # type: ignore[attr-defined]
        if setting(node.server, "appendonly") == "yes":
            node.aof = AppendOnlyFile()
            node.fsynced = 0  # WAITAOF-1
        return node

    def node_at(self, host: str, port: int) -> Node | None:
        for node in self.nodes.values():
            if (host, port) in node.addrs or (host in ("localhost", "127.0.0.1")
                                              and (("127.0.0.1", port) in node.addrs
                                                   or ("localhost", port) in node.addrs)):
                return node
        return None

    def primary_of(self, node: Node) -> Node | None:
        return None if node.master is None else self.node_at(*node.master)

    def replicas_of(self, node: Node) -> list[Link]:
        """The primary's replica clients, in the order they attached (``server.slaves``)."""
        return [link for link in self.links.values() if link.primary == node.name]

    # -- commands ---------------------------------------------------------------------
    def execute(self, name: str, client: int, argv: list[bytes]) -> Outcome:
        """A client's command on node ``name`` (rule 7), then what it feeds to replicas and the AOF."""
        node = self.nodes[name]
        if not node.up or node.paused:
            raise RuntimeError(f"node {name} is not running")
        server = node.server
        before = server.repl_db
        offset_before = node.offset
        self.pending_served = []
        self._time_moves()
        out = server.execute(client, argv)
        if self.pending_served:  # REPL-9: readers unblocked by REPLICAOF answer after it
            out.served.extend(self.pending_served)
            self.pending_served = []
        if node.is_replica and setting(server, "replica-read-only") == "yes" and _wrote(out):
            node.writes_executed += 1  # INV-REPL-3: must never happen
        self._after(node, out, before)
        if client in server.clients and not _postponed(server.clients[client]) and (
                not server.dialect.woff_after_propagation_only or node.offset != offset_before):
            node.woff[client] = node.offset  # WAIT-2: c->woff after every command that ran; WAIT-DIALECT-1
        self._before_sleep(node, out)
        return out

    def _before_sleep(self, node: Node, out: Outcome) -> None:
        """``beforeSleep``'s replication work after a command or a step of ``node``, in its order:
        postponed clients run again once writes are unpaused, then ``REPLCONF GETACK`` for a
        WAIT (not while writes are paused), then ``updateFailoverStatus`` (FAILOVER-4, WAIT-3, FAILOVER-5)."""
        if not node.up:
            return
        self._rerun_postponed(node, out)
        if node.getack_requested and not self._writes_paused(node):
            node.getack_requested = False
            if not node.is_replica:
                self._feed(node, [GETACK], clients=False)  # WAIT-3: REPLCONF GETACK before the next sleep
        self._update_failover(node, out)
        if _aof_on(node) and setting(node.server, "appendfsync") == "always":
            node.fsynced = node.offset  # WAITAOF-1: flushAppendOnlyFile's fsync, after the waiting clients

    def _after(self, node: Node, out: Outcome, before: int) -> None:
        """Feed what ``out`` propagated to the replicas (a primary with a backlog) and the AOF."""
        if not out.propagated:
            return
        node.dirty += 1
        self._append_aof(node, out.propagated, before)
        if node.is_replica or node.backlog is None:
            node.server.repl_db = before  # REPL-3: nothing is fed, the stream's database stays
            if not node.is_replica and _aof_on(node) and node.server.dialect.offset_counts_without_backlog:
                # REPL-DIALECT-4: each op fed for the AOF adds 1 (SELECT is not an op of its own)
                node.offset += sum(1 for a in out.propagated if render(a)[0].upper() != b"SELECT")
            return
        self._feed(node, [render(a) for a in out.propagated])

    def _feed(self, node: Node, commands: list[list[bytes]], *, clients: bool = True) -> None:
        """``replicationFeedSlaves``: the commands join the stream, the backlog and every link past its snapshot."""
        if node.backlog is None:
            if node.server.dialect.offset_counts_without_backlog and not node.is_replica \
                    and not self.replicas_of(node):
                node.offset += len(commands)  # REPL-DIALECT-4
            return
        size = int(setting(node.server, "repl-backlog-size"))
        for argv in commands:
            node.offset += resp_length(argv)  # REPL-2
            node.backlog.add(node.offset, argv, size)
            for link in self.replicas_of(node):
                if link.phase != "wait-bgsave":
                    link.pending.append((node.offset, argv))
                    link.fed += 1

    def _append_aof(self, node: Node, propagated: list[list[bytes | int]], db_before: int) -> None:
        if node.aof is None:
            return
        db = max(db_before, 0)
        unit: list[tuple[int, tuple[bytes, ...]]] = []
        for argv in propagated:
            args = replayable(argv)
            if args[0].upper() == b"SELECT":
                db = int(args[1])
                continue
            if args[0].upper() in (b"MULTI", b"EXEC"):
                continue
            unit.append((db, tuple(args)))
        if unit:
            node.aof.units.append(tuple(unit))
            if setting(node.server, "appendfsync") == "always":
                node.aof.synced = len(node.aof.units)  # AOF-3: written and synced before the reply

    def refuse(self, node: Node, c: Client, spec: table.CommandSpec) -> str | None:
        """``processCommand``'s replication checks before a command runs or is queued (REPL-10, REPL-11)."""
        if c.id == MASTER_CLIENT or c.id == AOF_CLIENT:
            return None  # REPL-10: the primary's stream and the AOF are obeyed
        write = "write" in spec.flags or (spec.fullname == "exec" and any(
            "write" in (s.flags if (s := node.server.dialect.lookup(q)) is not None else ())
            for q in c.multi_queue))
        if not write:
            return None
        server = node.server
        if not node.is_replica and int(setting(server, "min-replicas-to-write")) and \
                int(setting(server, "min-replicas-max-lag")) and node.good < int(
                setting(server, "min-replicas-to-write")):
            return NOREPLICAS_ERROR  # REPL-11
        if node.is_replica and setting(server, "replica-read-only") == "yes":
            return READONLY_ERROR  # REPL-10
        return None

    # -- FAILOVER ------------------------------------------------------------------
    @staticmethod
    def _writes_paused(node: Node) -> bool:
        """``CLIENT_PAUSE_WRITE`` for a FAILOVER (``PAUSE_DURING_FAILOVER``) is in force (FAILOVER-4)."""
        return node.failover is not None

    def postpones(self, node: Node, c: Client, spec: table.CommandSpec, argv: list[bytes]) -> bool:
        """``processCommand``'s pause check, after REPL-10/REPL-11 and before MULTI queuing (FAILOVER-4).

        While writes are paused, a command that may replicate (flagged ``write`` or
        ``may_replicate``, or an EXEC whose queue holds one) blocks, is neither run nor
        queued, and runs again from the start when the pause ends.
        """
        if c.id == MASTER_CLIENT or c.id == AOF_CLIENT or not self._writes_paused(node):
            return False
        lookup = node.server.dialect.lookup
        if not (_may_replicate(spec) or (spec.fullname == "exec" and any(
                (q := lookup(queued)) is not None and _may_replicate(q) for queued in c.multi_queue))):
            return False
        node.postponed += 1
        c.blocked = BlockState(keys=[], db=c.db, deadline=None, timeout_ms=Duration(0), argv=list(argv),
                               payload=Postponed(node.postponed), serve=rerun_postponed,  # type: ignore[arg-type]
                               timeout_reply=NullArray())
        return True

    def _rerun_postponed(self, node: Node, out: Outcome) -> None:
        """``unblockPostponedClients`` then ``processUnblockedClients``: in the order they were
        postponed, each command runs again (FAILOVER-4)."""
        if self._writes_paused(node):
            return
        waiting = sorted((c.blocked.payload.seq, c.id) for c in node.server.clients.values()  # type: ignore[union-attr]
                         if _postponed(c))
        for _, cid in waiting:
            c = node.server.clients[cid]
            assert c.blocked is not None
            argv, serve = c.blocked.argv, c.blocked.serve
            node.server._unblock(c)
            # serve is rerun_postponed (wrapped by a checker to the command's time window)
            again: Outcome = serve(self, node.name, cid, argv)  # type: ignore[assignment]
            if not again.blocked and again.reply is not None:
                out.served.append((cid, again.reply))
            out.served.extend(again.served)

    def _update_failover(self, node: Node, out: Outcome, *, cron: bool = False) -> None:
        """``updateFailoverStatus`` (FAILOVER-5, FAILOVER-6): in ``beforeSleep`` and in the cron.

        The cron's call (the ``failover`` step) first checks the timeout: past it, a FORCE
        failover hands over to its target, any other is aborted. The ``beforeSleep`` call
        after a command or an acknowledgement is not given a clock reading by the checker:
        there the model checks only whether a replica caught up.
        """
        f = node.failover
        if f is None or f.state != "waiting-for-sync" or not node.up:
            return
        if cron and f.end is not None:
            if not node.server.now() >= f.end:
                f.idle = True
                return
            if f.force and f.target is not None:  # FAILOVER-6: the timeout passed, failing over anyway
                f.state = "failover-in-progress"
                self._follow(node, f.target, out)
            else:
                self._abort_failover(node)  # FAILOVER-6: "Replica never caught up before timeout"
            return
        links = self.replicas_of(node)
        if f.target is not None:
            link = next((x for x in links if _same_address(announced(self.nodes[x.replica]), f.target)), None)
        else:  # FAILOVER-5: the first replica that acknowledged the whole stream becomes the target
            link = next((x for x in links if x.ack == node.offset), None)
            if link is not None:
                f.target = announced(self.nodes[link.replica])
        if link is not None and link.ack == node.offset and f.target is not None:
            f.state = "failover-in-progress"  # FAILOVER-5: the target caught up
            self._follow(node, f.target, out)

    def _follow(self, node: Node, target: tuple[str, int], out: Outcome) -> None:
        """``replicationSetMaster`` for a FAILOVER: the node follows its target (REPL-9, FAILOVER-5)."""
        moved = self.replicaof(node, target, MASTER_CLIENT)
        out.served.extend(moved.served)

    def _abort_failover(self, node: Node) -> None:
        """``abortFailover``: a handover already under way is undone by ``replicationUnsetMaster``;
        then the state is cleared and writes unpaused; the postponed commands run in the node's
        next ``beforeSleep`` (FAILOVER-7)."""
        f = node.failover
        if f is None:
            return
        if f.state == "failover-in-progress":
            self.replicaof(node, None, MASTER_CLIENT)
        node.failover = None

    def failover_cron(self, name: str) -> Outcome:
        """The cron's ``updateFailoverStatus`` (every 100 ms while a FAILOVER runs): the timeout (FAILOVER-6)."""
        node = self.nodes[name]
        out = Outcome(None)
        self._update_failover(node, out, cron=True)
        self._before_sleep(node, out)
        return out

    def good_replicas(self, node: Node) -> int:
        """``repl_good_slaves_count``: online replicas whose link works (REPL-11).

        Redis counts those whose last ACK is at most ``min-replicas-max-lag`` seconds old,
        refreshed once a second; the model counts the online replicas whose link is not held.
        """
        return sum(1 for link in self.replicas_of(node) if link.phase == "online" and not link.held
                   and self.nodes[link.replica].up and not self.nodes[link.replica].paused)

    def acked(self, node: Node, offset: int) -> int:
        """``replicationCountAcksByOffset`` (WAIT-1)."""
        return sum(1 for link in self.replicas_of(node) if link.phase == "online" and link.ack >= offset)

    def acked_aof(self, node: Node, offset: int) -> int:
        """``replicationCountAOFAcksByOffset`` (WAITAOF-2)."""
        return sum(1 for link in self.replicas_of(node) if link.phase == "online" and link.fack >= offset)

    def _waitaof_reply(self, node: Node, w: WaitAofPayload) -> Reply | None:
        """``processClientsWaitingReplicas`` for one WAITAOF: its reply once both counts are met, else
        None (its timeout reply is refreshed: WAITAOF-3)."""
        if w.numlocal and not _aof_on(node):
            return Error(WAITAOF_NO_AOF)
        count = self.acked_aof(node, w.offset)
        local = int(node.fsynced >= w.offset)
        c = next(c for c in node.server.clients.values() if c.blocked is not None and c.blocked.payload is w)
        c.blocked.timeout_reply = Array((Int(local), Int(count)))  # type: ignore[union-attr]
        if count < w.replicas or local < w.numlocal:
            return None
        return Array((Int(local), Int(count)))

    def _aof_servable(self, node: Node) -> bool:
        return any(c.blocked is not None and isinstance(c.blocked.payload, WaitAofPayload)
                   and (c.blocked.payload.numlocal and not _aof_on(node)
                        or (self.acked_aof(node, c.blocked.payload.offset) >= c.blocked.payload.replicas
                            and int(node.fsynced >= c.blocked.payload.offset) >= c.blocked.payload.numlocal))
                   for c in node.server.clients.values())

    def _waitaof_pending(self, node: Node) -> bool:
        """A WAITAOF waits on this node or on its primary: only then does an fsync's moment matter."""
        primary = self.primary_of(node) if node.is_replica else None
        return any(c.blocked is not None and isinstance(c.blocked.payload, WaitAofPayload)
                   for n in (node, primary) if n is not None for c in n.server.clients.values())

    def fsync(self, name: str) -> Outcome:
        """The AOF's fsync (every second under ``everysec``): the node's fsynced offset catches up,
        then the clients waiting for it are served (WAITAOF-1)."""
        node = self.nodes[name]
        out = self._serve_waiting(node)
        node.fsynced = node.offset
        out.served.extend(self._serve_waiting(node).served)
        return out

    # -- internal steps ---------------------------------------------------------------
    def steps(self) -> list[tuple[str, str]]:
        """The internal steps possible now, as (kind, node): the replica for connect, load,
        apply, ack and getack; the primary for fork and ping."""
        out: list[tuple[str, str]] = []
        for node in self.nodes.values():
            if not node.up or node.paused:
                continue
            if node.is_replica and node.name not in self.links:
                primary = self.primary_of(node)
                if primary is not None and primary.up and not primary.paused and self._accepts_sync(primary, node):
                    out.append(("connect", node.name))
            if node.failover is not None and node.failover.state == "waiting-for-sync" \
                    and node.failover.end is not None and not node.failover.idle:
                out.append(("failover", node.name))  # FAILOVER-6: the cron checks the timeout
            if self.can_fork(node):
                out.append(("fork", node.name))
            if not node.is_replica and int(setting(node.server, "min-replicas-to-write")) and \
                    node.good != self.good_replicas(node):
                out.append(("refresh", node.name))  # REPL-11: the cron's refreshGoodSlavesCount
            if _aof_on(node) and (self._aof_servable(node) or node.fsynced < node.offset
                                         and self._waitaof_pending(node)):
                out.append(("fsync", node.name))  # WAITAOF-1: the AOF's fsync, then the waiting clients
            child = self.child_of(node)
            if child is None and node.dirty and setting(node.server, "save").strip():
                out.append(("bgsave", node.name))  # RDB-7: a save point's condition is met in the cron
            if child == "aof":
                out.append(("rewrite", node.name))  # AOF-7: the rewrite's child exits, its base takes over
            if any(link.bulk for link in self.replicas_of(node)):
                out.append(("bulk-sent", node.name))  # REPL-19: the file's last byte is written to the replica
            out.extend((kind, node.name) for kind in self._fork_steps(node, child))
        for link in self.links.values():
            primary, replica = self.nodes[link.primary], self.nodes[link.replica]
            if link.held or primary.paused or replica.paused or not replica.up or not primary.up:
                continue
            if link.phase == "transfer":
                if self.can_load(link):
                    out.append(("load", link.replica))
            elif link.phase == "online":
                if link.pending and not link.child:  # REPL-19: the stream is held until the child is reaped
                    out.append(("apply", link.replica))
                if link.getacks:
                    out.append(("getack", link.replica))
                if link.ack < replica.offset:
                    out.append(("ack", link.replica))
        return out

    def _time_moves(self) -> None:
        """Something happened: a FAILOVER's cron may find its deadline passed now (FAILOVER-6)."""
        for node in self.nodes.values():
            if node.failover is not None:
                node.failover.idle = False

    def step(self, kind: str, name: str) -> Outcome:
        """Run one internal step (see :meth:`steps`); the outcome lists the clients it served."""
        if kind != "failover":
            self._time_moves()
        if kind == "connect":
            return self.connect(name)
        if kind == "fork":
            return self.fork(name)
        if kind == "load":
            return self.load(name)
        if kind == "bulk-sent":
            for link in self.replicas_of(self.nodes[name]):
                link.bulk = False  # REPL-19: sendBulkToSlave's end puts the replica online
            return Outcome(None)
        if kind == "apply":
            return self.apply(name)
        if kind == "ack":
            return self.ack(name)
        if kind == "getack":
            return self.ack(name, getack=True)
        if kind == "ping":
            return self.ping(name)
        if kind == "failover":
            return self.failover_cron(name)
        if kind == "fsync":
            return self.fsync(name)
        if kind == "refresh":
            self.nodes[name].good = self.good_replicas(self.nodes[name])
            return Outcome(None)
        if kind == "bgsave":
            self.start_bgsave(self.nodes[name])  # RDB-7: the save point's BGSAVE forks (FORK-1)
            return Outcome(None)
        if kind == "rewrite":
            aof = self.nodes[name].aof
            assert aof is not None
            aof.finish_rewrite()  # AOF-7: backgroundRewriteDoneHandler
            self.nodes[name].rewrite_failures = 0  # AOF-LIMIT-1
            self._start_scheduled_bgsave(self.nodes[name])  # FORK-2: in the tick that reaped the child
            return Outcome(None)
        if kind in FORK_STEPS:
            self.fork_step(kind, self.nodes[name])
            return Outcome(None)
        raise ValueError(f"unknown step {kind}")

    def _accepts_sync(self, primary: Node, replica: Node) -> bool:
        """``syncCommand``'s refusals: no PSYNC while the primary fails over, nor from a replica
        whose own link is down (``-NOMASTERLINK``); the replica retries later (REPL-16).
        A ``PSYNC ... FAILOVER`` is answered before those checks (FAILOVER-5)."""
        if replica.failover is not None and replica.failover.state == "failover-in-progress":
            return True
        if primary.failover is not None:
            return False
        own = self.links.get(primary.name)
        return not primary.is_replica or (own is not None and own.phase == "online")

    def connect(self, name: str) -> Outcome:
        """The replica's handshake and ``PSYNC`` (REPL-5, REPL-6, REPL-7), ``PSYNC ... FAILOVER`` (FAILOVER-5)."""
        replica = self.nodes[name]
        primary = self.primary_of(replica)
        assert primary is not None and name not in self.links
        out = Outcome(None)
        handing_over = replica.failover is not None and replica.failover.state == "failover-in-progress"
        if handing_over:
            asked_id = replica.cached[0] if replica.cached is not None else "?"
            if primary.master is None or asked_id != primary.replid:
                # FAILOVER-7: "PSYNC FAILOVER can't be sent to a master." / "... replid must match my
                # replid.": the failover is aborted and the node is a primary again
                self._abort_failover(replica)
                self._before_sleep(replica, out)
                return out
            self.replicaof(primary, None, MASTER_CLIENT)  # FAILOVER-5: the target becomes a primary
        out = self._psync(replica, primary, out)
        if handing_over:
            replica.failover = None  # FAILOVER-5: +CONTINUE or +FULLRESYNC ends the failover
            self._before_sleep(replica, out)
        return out

    def _psync(self, replica: Node, primary: Node, out: Outcome) -> Outcome:
        name = replica.name
        link = Link(primary.name, name)
        self.links[name] = link
        asked = replica.cached  # PSYNC <replid> <reploff+1>, or PSYNC ? -1 without a cached master
        if asked is not None and self._partial_ok(primary, asked[0], asked[1] + 1):
            link.phase = "online"  # REPL-6: +CONTINUE <replid>
            link.sync = ("partial", primary.replid, asked[1])
            link.pending.extend(primary.backlog.since(asked[1]))  # type: ignore[union-attr]
            link.fed = len(link.pending)
            if replica.replid != primary.replid:  # REPL-7: the replica adopts the new ID
                replica.replid2, replica.second_offset = replica.replid, replica.offset + 1
                replica.replid = primary.replid
                self._disconnect_replicas(replica)
            if replica.backlog is None:
                replica.backlog = new_backlog(replica, replica.offset + 1)
            replica.server.client(MASTER_CLIENT)
            return out
        # REPL-5: a full resynchronisation
        link.phase = "wait-bgsave"
        if primary.backlog is None and len(self.replicas_of(primary)) == 1:
            # REPL-3: the first replica creates the backlog, under a new ID
            primary.replid, primary.replid2, primary.second_offset = self._new_replid(), NO_REPLID, -1
            primary.backlog = new_backlog(primary, primary.offset + 1)
        joined = self._waiting_for_disk_child(primary)
        if joined is not None:
            self._join_child(link, joined)
        return out

    def _waiting_for_disk_child(self, primary: Node) -> Link | None:
        """REPL-20: the first replica waiting for the end of a running disk-based sync child, which a new
        full sync joins (every replica of a deployment announces ``capa eof psync2``: the capabilities match)."""
        if self.child_of(primary) != "rdb" or primary.sync_target != "disk":
            return None
        return next((other for other in self.replicas_of(primary)
                     if other.phase == "transfer" and other.child), None)

    def _join_child(self, link: Link, joined: Link) -> None:
        """REPL-20: ``link`` gets ``joined``'s ``+FULLRESYNC``, snapshot and stream kept since the fork."""
        primary, replica = self.nodes[link.primary], self.nodes[link.replica]
        link.phase = "transfer"
        link.snapshot, link.sync = joined.snapshot, joined.sync
        link.child, link.bulk, link.disk = True, False, True
        link.pending = deque(joined.pending)
        link.fed = len(link.pending)
        if replica.server.dialect.full_sync_forgets_cached_master:
            replica.cached = None  # REPL-DIALECT-6: at +FULLRESYNC
        primary.server.repl_db = -1  # REPL-20: the next fed command starts with a SELECT

    @staticmethod
    def _partial_ok(primary: Node, replid: str, psync_offset: int) -> bool:
        """``masterTryPartialResynchronization``'s test (REPL-6)."""
        if replid != primary.replid and (replid != primary.replid2 or psync_offset > primary.second_offset):
            return False
        b = primary.backlog
        return b is not None and b.first <= psync_offset <= b.first + b.histlen

    def can_fork(self, node: Node) -> bool:
        """A full sync's child may start: a replica waits for one and no child runs (REPL-19, FORK-1)."""
        return self.child_of(node) is None and any(link.phase == "wait-bgsave" for link in self.replicas_of(node))

    def can_load(self, link: Link) -> bool:
        """The replica may have its whole snapshot: a disk-based one only once the child wrote the file
        and the primary sent it; a diskless one as soon as the child streamed it (REPL-19)."""
        return link.phase == "transfer" and not (link.disk and (link.child or link.bulk))

    def fork(self, name: str) -> Outcome:
        """The primary's RDB child for the replicas waiting for a snapshot; each gets ``+FULLRESYNC replid
        offset`` at the fork (REPL-5, REPL-19). The child counts as the node's RDB child (FORK-1) until the
        cron reaps it (``bgsave-done``); a disk-based one also writes the node's RDB file then."""
        primary = self.nodes[name]
        snap = take_snapshot(primary.server.dbs, self._rdb_version(primary), primary.replid, primary.offset)
        disk = setting(primary.server, "repl-diskless-sync") != "yes"
        if disk:
            self.start_bgsave(primary)  # the file rdbSaveBackground writes for the replicas
        else:
            primary.bgsave_child = snap
        primary.sync_target = "disk" if disk else "socket"
        for link in self.replicas_of(primary):
            if link.phase == "wait-bgsave":
                link.phase = "transfer"
                link.snapshot = snap
                link.sync = ("full", primary.replid, primary.offset)
                link.child, link.bulk, link.disk = True, False, disk
                replica = self.nodes[link.replica]
                if replica.server.dialect.full_sync_forgets_cached_master:
                    replica.cached = None  # REPL-DIALECT-6: at +FULLRESYNC
        primary.server.repl_db = -1  # REPL-5: the stream after a full sync starts with a SELECT
        return Outcome(None)

    def load(self, name: str) -> Outcome:
        """The replica replaces its data with the snapshot and goes online (REPL-5, RDB-6)."""
        link = self.links[name]
        replica = self.nodes[name]
        snap = link.snapshot
        assert snap is not None and link.sync is not None
        out = Outcome(None)
        self._disconnect_replicas(replica)
        server = replica.server
        for dbi, keys in enumerate(server.dbs):  # emptyData: WATCHers and blocked readers learn
            for key in list(keys):
                server.touch_watched(dbi, key)
        server.dbs[:] = load_snapshot(snap)
        for (dbi, key) in list(server.blocking):
            server.signal_deleted(dbi, key)
            server.signal_ready(dbi, key)
        if server.ready_keys:
            server._handle_ready(out)
        replica.replid, replica.replid2, replica.second_offset = snap.replid or NO_REPLID, NO_REPLID, -1
        replica.offset = snap.offset
        replica.backlog = new_backlog(replica, snap.offset + 1)
        replica.cached = None
        no_persistence = not setting(replica.server, "save").strip() and not _aof_on(replica)
        if setting(replica.server, "repl-diskless-load") == "disabled" and \
                not (setting(replica.server, "rdb-del-sync-files") == "yes" and no_persistence):
            replica.rdb = snap  # RDB-6: the synchronisation's file stays on disk
        server.close(MASTER_CLIENT)
        server.client(MASTER_CLIENT)
        link.snapshot = None
        link.phase = "online"
        return out

    def apply(self, name: str) -> Outcome:
        """The replica applies the next command of its primary's stream (REPL-2, REPL-12)."""
        link = self.links[name]
        replica = self.nodes[name]
        end, argv = link.pending.popleft()
        link.applied += 1
        server = replica.server
        head = argv[0].upper()
        master = server.client(MASTER_CLIENT)
        if head == b"PING":
            out = Outcome(None)
        elif head == b"REPLCONF":
            out = Outcome(None)
            link.getacks.append(replica.offset)  # WAIT-3: answered with the offset before the GETACK
        else:
            before = server.repl_db
            out = server.execute(MASTER_CLIENT, list(argv))
            self._append_aof(replica, out.propagated, before)
            server.repl_db = before
        if not master.in_multi:
            # REPL-2: the offset moves at command boundaries, a transaction at its EXEC
            replica.offset = end
            if replica.aof is not None and setting(server, "appendfsync") == "always":
                replica.fsynced = end  # WAITAOF-1
        if replica.backlog is not None:
            replica.backlog.add(end, argv, int(setting(server, "repl-backlog-size")))
        for sub in self.replicas_of(replica):  # REPL-12: a replica proxies the stream verbatim
            if sub.phase != "wait-bgsave":
                sub.pending.append((end, argv))
                sub.fed += 1
        out.reply = None
        return out

    def ack(self, name: str, *, getack: bool = False) -> Outcome:
        """``REPLCONF ACK <offset>`` from the replica reaches its primary (WAIT-1, WAIT-3)."""
        link = self.links[name]
        replica = self.nodes[name]
        value = link.getacks.popleft() if getack else replica.offset
        link.ack = max(link.ack, value)
        if replica.fsynced != -1:  # WAITAOF-2: a replica with an AOF adds FACK <its fsynced offset>
            link.fack = max(link.fack, replica.fsynced)
        return self._serve_waiting(self.nodes[link.primary])

    def ping(self, name: str) -> Outcome:
        """The primary's PING every ``repl-ping-replica-period`` seconds (REPL-13); none while a
        FAILOVER with a TIMEOUT has writes paused (FAILOVER-4)."""
        node = self.nodes[name]
        if node.failover is not None and node.failover.end is not None:
            return Outcome(None)
        self._feed(node, [PING], clients=False)
        return Outcome(None)

    def _serve_waiting(self, primary: Node) -> Outcome:
        """``processClientsWaitingReplicas``: WAITs whose count is reached now answer (WAIT-1)."""
        out = Outcome(None)
        server = primary.server
        for c in list(server.clients.values()):
            b = c.blocked
            if b is not None and isinstance(b.payload, WaitAofPayload):
                reply = self._waitaof_reply(primary, b.payload)
                if reply is not None:
                    server._unblock(c)
                    out.served.append((c.id, reply))
                continue
            if b is None or not isinstance(b.payload, WaitPayload):
                continue
            count = self.acked(primary, b.payload.offset)
            b.timeout_reply = Int(count)  # WAIT-4: a timeout answers the count at that moment
            if count >= b.payload.replicas:
                server._unblock(c)
                out.served.append((c.id, Int(count)))
        self._update_failover(primary, out)  # FAILOVER-5: beforeSleep after the acknowledgement
        return out

    def refresh_wait_counts(self, node: Node) -> None:
        for c in node.server.clients.values():
            b = c.blocked
            if b is not None and isinstance(b.payload, WaitPayload):
                b.timeout_reply = Int(self.acked(node, b.payload.offset))

    # -- topology -----------------------------------------------------------------------
    def _drop_link(self, replica_name: str) -> None:
        """The link goes: the replica caches its master to continue later (REPL-7)."""
        link = self.links.pop(replica_name, None)
        if link is None:
            return
        primary = self.nodes[link.primary]
        primary.good = min(primary.good, self.good_replicas(primary))  # REPL-11: freeClient refreshes
        replica = self.nodes[replica_name]
        if link.phase == "online" and replica.master is not None:
            replica.cached = (replica.replid, replica.offset)
        replica.server.close(MASTER_CLIENT)

    def _disconnect_replicas(self, node: Node) -> None:
        """``disconnectSlaves``: they reconnect and resynchronise by themselves."""
        for link in self.replicas_of(node):
            self._drop_link(link.replica)

    def replicaof(self, node: Node, target: tuple[str, int] | None, calling: int) -> Outcome:
        """``replicationSetMaster`` / ``replicationUnsetMaster`` (REPL-8, REPL-9)."""
        out = Outcome(None)
        if target is None:
            if node.master is not None:
                self._drop_link(node.name)
                node.master, node.cached = None, None
                node.replid2, node.second_offset = node.replid, node.offset + 1  # REPL-8: shiftReplicationId
                node.replid = self._new_replid()
                node.server.repl_db = -1
                if node.backlog is None:
                    node.backlog = new_backlog(node, node.offset + 1)
                self._disconnect_replicas(node)  # REPL-8: they learn the new ID when they reconnect
            return out
        was_primary = node.master is None
        self._drop_link(node.name)
        node.master = target
        server = node.server
        for c in list(server.clients.values()):  # REPL-9: disconnectAllBlockedClients
            if c.blocked is not None and c.id != calling and not _postponed(c):
                server._unblock(c)
                out.served.append((c.id, Error(UNBLOCKED_ROLE_CHANGE)))
        if server.dialect.replicaof_disconnects_replicas:
            self._disconnect_replicas(node)  # REPL-DIALECT-1: 6.2 disconnects them at once
        if was_primary:
            node.cached = (node.replid, node.offset)  # REPL-9: replicationCacheMasterUsingMyself
        return out

    # -- faults -------------------------------------------------------------------------
    def set_link(self, primary: str, replica: str, state: str) -> None:
        """The proxy holds the link, lets it flow, or it is cut (rule 8)."""
        link = self.links.get(replica)
        if link is None or link.primary != primary:
            return
        if state == "held":
            link.held = True
        elif state == "flowing":
            link.held = False
        elif state == "cut":
            self._drop_link(replica)
        else:
            raise ValueError(f"unknown link state {state}")

    def pause(self, name: str) -> None:
        self.nodes[name].paused = True

    def resume(self, name: str) -> None:
        self.nodes[name].paused = False

    def crash(self, name: str) -> list[int]:
        """SIGKILL: the node's clients and links go; its files stay (rule 10). Returns the closed clients."""
        node = self.nodes[name]
        closed = [c for c in node.server.clients if c >= 0]
        for link in list(self.links.values()):
            if link.primary == name:
                self._drop_link(link.replica)
        self.links.pop(name, None)
        node.up = False
        node.paused = False
        return closed

    def restart(self, name: str, aof_keep: int | None = None) -> None:
        """The node starts again with its header's config and loads what its persistence kept (RDB-2, AOF-4).

        ``aof_keep``: how many AOF units after the base survived the crash (rule 10, AOF-3); default
        all of them.
        """
        old = self.nodes[name]
        node = Node(name, old.addrs, old.config, self._new_server(name), self._new_replid(),
                    rdb=old.rdb, aof=old.aof)
        node.server.node = node
        node.deployment = self  # type: ignore[attr-defined]
        self.nodes[name] = node
        server = node.server
        if node.aof is not None:  # AOF-4: the AOF wins over the RDB
            node.aof.rewriting = None  # AOF-7: the killed rewrite's child dies with it
            keep = len(node.aof.units) if aof_keep is None else aof_keep
            node.aof.units = node.aof.units[:keep]
            node.aof.synced = min(node.aof.synced, keep)
            self._load_aof(node)
        elif node.rdb is not None:
            server.dbs[:] = load_snapshot(node.rdb)
            if node.rdb.replid is not None and node.rdb.offset >= 0 and server.dialect.rdb_replication_on_primary:
                # RDB-5: a primary keeps the file's history as its secondary ID
                node.replid2, node.second_offset = node.rdb.replid, node.rdb.offset + 1
                node.offset = node.rdb.offset
                node.backlog = new_backlog(node, node.offset + 1)
        elif setting(server, "appendonly") == "yes":
            node.aof = AppendOnlyFile()
        if node.aof is not None:
            node.fsynced = 0  # WAITAOF-1: the AOF on disk holds everything up to the start

    def _load_aof(self, node: Node) -> None:
        aof = node.aof
        assert aof is not None
        server = node.server
        preamble, units, _ = aof_load(aof)
        # A checker may load through its cache of the loads it has done before (traces/check/reload_cache.py).
        replay: Callable[[Server, Snapshot | None, AofUnits], None] = getattr(self, "aof_replayer", None) \
            or replay_aof
        replay(server, preamble, units)
        server.repl_db = -1

    def _rdb_version(self, node: Node) -> int:
        return RDB_VERSION.get(node.server.dialect.name, 11)

    def save(self, node: Node) -> None:
        """SAVE: the RDB file as of now (RDB-1); the changes counter is zero (STATS-4)."""
        node.rdb = self._snapshot(node)
        node.dirty = 0
        node.server.stats.saved()

    def _snapshot(self, node: Node) -> Snapshot:
        """The RDB file of this moment, with the replication info 7.0 records (RDB-1, RDB-5)."""
        replid: str | None = None
        offset, stream_db = -1, -1
        primary = self.primary_of(node) if node.is_replica else None
        if node.is_replica and (node.name in self.links or node.cached is not None):
            replid, offset = node.replid, node.offset
            stream_db = 0 if primary is None else max(primary.server.repl_db, 0)
        elif not node.is_replica and node.backlog is not None:
            replid, offset, stream_db = node.replid, node.offset, max(node.server.repl_db, 0)
        return take_snapshot(node.server.dbs, self._rdb_version(node), replid, offset, stream_db)

    # -- children: BGSAVE's and the rewrite's (FORK-1 .. FORK-3) ------------------------------------
    @staticmethod
    def child_of(node: Node) -> str | None:
        """FORK-1: the one child a node runs: ``rdb`` (a BGSAVE's), ``aof`` (a rewrite's) or None."""
        if node.bgsave_child is not None:
            return "rdb"
        if node.aof is not None and node.aof.rewriting is not None:
            return "aof"
        return None

    def _fork_steps(self, node: Node, child: str | None) -> list[str]:
        """The cron's steps about children possible now (see :data:`FORK_STEPS`)."""
        out = []
        if child == "rdb":
            out.append("bgsave-done")  # FORK-2: BGSAVE's child exits and the cron reaps it
        elif child is None and node.rewrite_scheduled:
            out.append("start-rewrite")  # FORK-2: a tick with no child starts the scheduled rewrite first
        elif child is None and node.bgsave_scheduled:
            out.append("start-bgsave")  # FORK-2, FORK-3: the tick's end starts the scheduled BGSAVE
        return out

    def fork_step(self, kind: str, node: Node) -> None:
        """One of :data:`FORK_STEPS` (``auto-rewrite``: AOF-AUTO-1's rewrite, which a checker is told of)."""
        if kind == "bgsave-done":  # FORK-2: backgroundSaveDoneHandler, then the tick's end
            assert node.bgsave_child is not None
            target, node.sync_target = node.sync_target, None
            for link in self.replicas_of(node):
                if link.child and node.bgsave_killed:
                    self._drop_link(link.replica)  # REPL-19: a child FLUSHALL stopped fails its replicas' sync
                elif link.child:  # REPL-19: updateSlavesWaitingBgsave
                    link.child, link.bulk = False, link.disk and link.phase == "transfer"
            if target == "socket":  # REPL-19: a diskless sync's child writes no file
                node.bgsave_child, node.bgsave_killed = None, False
            elif node.bgsave_killed:  # FLUSH-6: a child FLUSHALL stopped leaves the file and the counters alone
                node.bgsave_child, node.bgsave_killed = None, False
            else:
                node.rdb, node.bgsave_child = node.bgsave_child, None  # RDB-1: the file replaces the old one
                dirty, counted = node.bgsave_dirty
                node.dirty = max(node.dirty - dirty, 0)
                stats = node.server.stats
                stats.dirty = max(stats.dirty - counted, 0)  # STATS-4: the changes made since the fork remain
            self._start_scheduled_bgsave(node)
        elif kind in ("start-rewrite", "auto-rewrite"):  # FORK-2, AOF-AUTO-1
            assert self.child_of(node) is None
            self.rewrite_aof(node, finished=False)
            node.rewrite_scheduled = False
        elif kind == "rewrite-failed":  # AOF-LIMIT-1: the child failed; the files stay as they are (AOF-7)
            assert node.aof is not None and node.aof.rewriting is not None
            node.aof.rewriting = None
            node.rewrite_failures += 1
            self._start_scheduled_bgsave(node)  # FORK-2: in the tick that reaped the child
        elif kind == "start-bgsave":  # FORK-2, FORK-3
            assert self.child_of(node) is None
            self._start_scheduled_bgsave(node)
        else:
            raise ValueError(f"unknown step {kind}")

    def _start_scheduled_bgsave(self, node: Node) -> None:
        """serverCron's end: a BGSAVE scheduled while a child ran (or by EXEC) starts once none runs (FORK-2)."""
        if node.bgsave_scheduled and self.child_of(node) is None:
            node.bgsave_scheduled = False
            self.start_bgsave(node)

    def start_bgsave(self, node: Node) -> None:
        """``rdbSaveBackground``: the child writes the snapshot of this moment (RDB-1); the file is
        the node's once the cron reaps the child (``bgsave-done``, FORK-2); a kill ends the child
        with it, so a restart finds the old file unless that step came first."""
        assert self.child_of(node) is None  # FORK-1
        node.bgsave_child = self._snapshot(node)
        node.bgsave_dirty = (node.dirty, node.server.stats.dirty)

    def rewrite_aof(self, node: Node, *, finished: bool = True) -> None:
        """A rewrite: a new base from the data now, the appended units start again (AOF-5). It
        takes effect at once when ``finished``, else at the ``rewrite`` step (AOF-7)."""
        if node.aof is None:
            node.aof = AppendOnlyFile()
        if setting(node.server, "aof-use-rdb-preamble") == "yes":
            base: Any = take_snapshot(node.server.dbs, self._rdb_version(node))
        else:
            base = rewrite_commands(node.server.dbs, node.server.dialect.stream_counters)
        node.aof.start_rewrite(base)  # AOF-7: the files so far stay, a new incremental file starts
        if finished:
            node.aof.finish_rewrite()

    # -- canonical state -------------------------------------------------------------------
    def freeze(self) -> tuple[Any, ...]:
        """Every node, link, backlog and persisted file, canonically (for explorers and tests)."""
        return (tuple(n.freeze() for _, n in sorted(self.nodes.items())),
                tuple(link.freeze() for _, link in sorted(self.links.items())))


MAY_REPLICATE = frozenset({"eval", "evalsha", "fcall", "pfcount", "publish", "spublish"})
"""7.0's commands flagged ``may_replicate`` (the model's table does not carry that flag)."""


def _may_replicate(spec: table.CommandSpec) -> bool:
    return "write" in spec.flags or spec.fullname in MAY_REPLICATE


def _aof_on(node: Node) -> bool:
    """``appendonly yes``: the node keeps an AOF (a lone server checked as trace/1 keeps no AOF model,
    but its fsynced offset is still tracked for WAITAOF-1)."""
    return node.aof is not None or setting(node.server, "appendonly") == "yes"


def everysec_loss_ms(node: Node) -> int:
    """How long after its reply an acknowledged write may still be only in the process's AOF buffer
    under ``appendfsync everysec``, so that a kill loses it (AOF-8): two seconds of postponement
    counted on the cached second, then up to one cron period (1000/``hz`` ms) before the retry."""
    hz = setting(node.server, "hz")
    return 2000 + 1000 // max(1, int(hz) if hz.isdigit() else 10)  # AOF-8


def _postponed(c: Client) -> bool:
    return c.blocked is not None and isinstance(c.blocked.payload, Postponed)


def new_backlog(node: Node, first: int) -> Backlog:
    """``createReplicationBacklog`` of the node's dialect (REPL-3, REPL-4, REPL-DIALECT-2)."""
    return Backlog(first, circular=not node.server.dialect.backlog_in_blocks)


def setting(server: Server, name: str) -> str:
    """A configuration value: what CONFIG SET or the header set, else Redis's default."""
    value = server.config.get(name)
    return CONFIG_DEFAULTS.get(name, "") if value is None else value


def _wrote(out: Outcome) -> bool:
    """The command changed data: it propagated something other than SELECT, MULTI, EXEC."""
    return any(not isinstance(a[0], bytes) or a[0].upper() not in (b"SELECT", b"MULTI", b"EXEC")
               for a in out.propagated)


def announced(node: Node) -> tuple[str, int]:
    """The address a replica announces to its primary (REPL-14): ``replica-announce-ip``/``-port``
    when set, else its peer address and listening port."""
    ip = setting(node.server, "replica-announce-ip")
    port = int(setting(node.server, "replica-announce-port") or 0)
    first = node.addrs[0] if node.addrs else ("127.0.0.1", 0)
    return ip or first[0], port or first[1]


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def _data(server: Server) -> Any:
    """The frozen databases, for the invariant that a replica's data is its primary's at some point."""
    return tuple(tuple(sorted((k, _value(v)) for k, v in db.items())) for db in server.dbs)


def _value(v: Any) -> Any:
    from xspec.models.state import Stream
    if isinstance(v, Stream):
        return ("stream", tuple(v.entries.items()), v.last_id,
                tuple((g.name, g.last_id, tuple(g.pel)) for g in v.groups.values()))
    return v


# -- loading an AOF ----------------------------------------------------------------------
AofUnits = list[tuple[int, tuple[Any, ...]]]
"""An AOF's commands as a load runs them: (database, argv)."""


def aof_load(aof: AppendOnlyFile) -> tuple[Snapshot | None, AofUnits, list[int]]:
    """What loading ``aof`` replays (AOF-4): its RDB preamble (AOF-2) or None, the commands after it
    (the base's, then the units of the older files a rewrite not finished left, AOF-7, then the
    units), and how many of those commands come before each of ``aof.units`` and after the last."""
    base = aof.base
    preamble = base if isinstance(base, Snapshot) else None
    commands: AofUnits = [] if isinstance(base, Snapshot) else [(db, replayable(argv)) for db, argv in base or []]
    for unit in aof.history:
        commands.extend(unit)
    boundaries = [len(commands)]
    for unit in aof.units:
        commands.extend(unit)
        boundaries.append(len(commands))
    return preamble, commands, boundaries


def replay_aof(server: Server, preamble: Snapshot | None, units: AofUnits, start: int = 0,
               at_unit: Callable[[int], None] | None = None) -> None:
    """Load an AOF into ``server`` (AOF-4): the RDB ``preamble`` (AOF-2), then ``units[start:]`` run
    by the AOF's client, whose database is where ``units[start - 1]`` left it. ``at_unit(i)`` is
    called before the ``i``-th unit runs (a checker keeps or puts back the data there)."""
    if preamble is not None:
        server.dbs[:] = load_snapshot(preamble)
    server.client(AOF_CLIENT)
    db = units[start - 1][0] if start else 0
    if db:
        server.execute(AOF_CLIENT, [b"SELECT", b"%d" % db])
    for i in range(start, len(units)):
        if at_unit is not None:
            at_unit(i)
        dbi, argv = units[i]
        if dbi != db:
            server.execute(AOF_CLIENT, [b"SELECT", b"%d" % dbi])
            db = dbi
        server.execute(AOF_CLIENT, list(argv))
    server.close(AOF_CLIENT)


# -- the node a command runs on ----------------------------------------------------------
def node_of(server: Server) -> Node:
    """The deployment node of ``server``; a server on its own is a deployment of one node."""
    node: Node | None = getattr(server, "node", None)
    if node is None:
        deployment = Deployment.__new__(Deployment)
        deployment.clock = server.clock
        deployment.replids = 0
        deployment.links = {}
        deployment.pending_served = []
        deployment.specs = {"self": {"dialect": server.dialect, "config": dict(server.config)}}
        node = Node("self", (), dict(server.config), server, deployment._new_replid())
        if setting(server, "appendonly") == "yes":
            node.fsynced = 0  # WAITAOF-1
        deployment.nodes = {"self": node}
        node.deployment = deployment  # type: ignore[attr-defined]
        server.node = node
    return node


def deployment_of(node: Node) -> Deployment:
    return node.deployment  # type: ignore[attr-defined, no-any-return]


# -- commands ------------------------------------------------------------------------------
@dataclass(frozen=True)
class WaitPayload:
    """What a blocked WAIT waits for."""

    offset: int
    replicas: int


@dataclass(frozen=True)
class WaitAofPayload:
    """What a blocked WAITAOF waits for (WAITAOF-1)."""

    offset: int
    numlocal: int
    replicas: int


@command("waitaof")
def waitaof(call: Call) -> Reply:
    """WAITAOF numlocal numreplicas timeout (7.2+, WAITAOF-1 .. WAITAOF-3)."""
    node = node_of(call.server)
    deployment = deployment_of(node)
    numlocal = parse_ll(call.argv[1])
    if numlocal is None:
        raise CommandError(table.NOT_INTEGER)
    if not 0 <= numlocal <= 1:
        raise CommandError("ERR value is out of range, value must between 0 and 1")
    replicas = parse_ll(call.argv[2])
    if replicas is None or replicas < 0:  # WAITAOF-1: one error for both (getPositiveLongFromObjectOrReply)
        raise CommandError("ERR value is out of range, must be positive")
    t = parse_ll(call.argv[3])
    if t is None:
        raise CommandError(TIMEOUT_NOT_INTEGER)
    if t < 0:
        raise CommandError(TIMEOUT_NEGATIVE)
    if node.master is not None:  # WAITAOF-3
        raise CommandError("ERR WAITAOF cannot be used with replica instances. Please also note that writes to "
                           "replicas are just local and are not propagated.")
    if numlocal and not _aof_on(node):
        raise CommandError(WAITAOF_NO_AOF)
    offset = node.woff.get(call.client.id, 0)
    count = deployment.acked_aof(node, offset)
    local = int(node.fsynced >= offset)
    if (count >= replicas and local >= numlocal) or call.in_exec:  # WAITAOF-1
        return Array((Int(local), Int(count)))
    node.getack_requested = True  # WAIT-3: the replicas are asked for an ACK (with its FACK)
    return call.block([], Duration(t), WaitAofPayload(offset, numlocal, replicas), _never_served,  # type: ignore[return-value]
                      Array((Int(local), Int(count))))


@command("replicaof")
@command("slaveof")
def replicaof(call: Call) -> Reply:
    node = node_of(call.server)
    deployment = deployment_of(node)
    if node.failover is not None:
        raise CommandError("ERR REPLICAOF not allowed while failing over.")  # FAILOVER-3
    host = c_string(call.argv[1]).decode("latin-1")
    if host.lower() == "no" and c_string(call.argv[2]).lower() == b"one":
        if node.master is not None:  # REPL-8
            deployment.replicaof(node, None, call.client.id)
        return OK
    if call.client.id == MASTER_CLIENT:  # REPL-9: a replica's link cannot run it
        raise CommandError(REPLICAOF_FROM_REPLICA)
    port = parse_ll(call.argv[2])
    if port is None:
        raise CommandError(table.NOT_INTEGER)
    if node.master == (host, port):  # REPL-9
        return Simple(ALREADY_CONNECTED)
    out = deployment.replicaof(node, (host, port), call.client.id)
    deployment.pending_served = out.served
    return OK


@command("role")
def role(call: Call) -> Reply:
    """ROLE (REPL-14)."""
    node = node_of(call.server)
    deployment = deployment_of(node)
    if node.master is None:
        replicas = []
        for link in deployment.replicas_of(node):
            r = deployment.nodes[link.replica]
            host, port = announced(r)
            replicas.append(Array((Bulk(host.encode()), Bulk(b"%d" % port), Bulk(b"%d" % link.ack))))
        return Array((Bulk(b"master"), Int(node.offset), Array(tuple(replicas))))
    host, port = node.master
    own = deployment.links.get(node.name)
    if own is None:
        state, offset = "connect", -1
    elif own.phase == "online":
        state, offset = "connected", node.offset
    else:
        state, offset = "sync", -1
    return Array((Bulk(b"slave"), Bulk(host.encode("latin-1")), Int(port), Bulk(state.encode()), Int(offset)))


@command("wait")
def wait(call: Call) -> Reply:
    """WAIT numreplicas timeout (WAIT-1 .. WAIT-5)."""
    node = node_of(call.server)
    deployment = deployment_of(node)
    if node.master is not None:  # WAIT-5, WAIT-DIALECT-2
        raise CommandError(call.server.dialect.wait_on_replica_error)
    replicas = parse_ll(call.argv[1])
    if replicas is None:
        raise CommandError(table.NOT_INTEGER)
    t = parse_ll(call.argv[2])
    if t is None:
        raise CommandError(TIMEOUT_NOT_INTEGER)
    if t < 0:
        raise CommandError(TIMEOUT_NEGATIVE)
    offset = node.woff.get(call.client.id, 0)
    count = deployment.acked(node, offset)
    if count >= replicas or call.in_exec:  # WAIT-1, WAIT-4: inside MULTI it answers at once
        return Int(count)
    node.getack_requested = True  # WAIT-3
    return call.block([], Duration(t), WaitPayload(offset, replicas), _never_served, Int(count))  # type: ignore[return-value]


def _never_served(call: Call, key: bytes) -> Reply | None:
    return None


@command("failover")
def failover(call: Call) -> Reply:
    """FAILOVER [TO host port] [TIMEOUT ms] [FORCE] [ABORT]: 7.0's checks in its order, then the
    coordinated handover (FAILOVER-1 .. FAILOVER-7)."""
    node = node_of(call.server)
    deployment = deployment_of(node)
    argv = call.argv
    if len(argv) == 2 and c_string(argv[1]).lower() == b"abort":
        if node.failover is None:
            raise CommandError("ERR No failover in progress.")  # FAILOVER-2
        deployment._abort_failover(node)  # FAILOVER-7: postponed writes run after the reply
        return OK
    timeout = 0
    host: bytes | None = None
    port = 0
    force = False
    j = 1
    while j < len(argv):  # FAILOVER-1: the options, each once
        opt = c_string(argv[j]).lower()
        if opt == b"timeout" and j + 1 < len(argv) and timeout == 0:
            value = parse_ll(argv[j + 1])
            if value is None:
                raise CommandError(table.NOT_INTEGER)
            if value <= 0:
                raise CommandError("ERR FAILOVER timeout must be greater than 0")
            timeout = value
            j += 2
        elif opt == b"to" and j + 2 < len(argv) and host is None:
            number = parse_ll(argv[j + 2])
            if number is None:
                raise CommandError(table.NOT_INTEGER)
            host, port = argv[j + 1], number
            j += 3
        elif opt == b"force" and not force:
            force = True
            j += 1
        else:
            raise CommandError(table.SYNTAX)
    if node.failover is not None:
        raise CommandError("ERR FAILOVER already in progress.")  # FAILOVER-1
    if node.master is not None:
        raise CommandError("ERR FAILOVER is not valid when server is a replica.")  # FAILOVER-1
    links = deployment.replicas_of(node)
    if not links:
        raise CommandError("ERR FAILOVER requires connected replicas.")  # FAILOVER-1
    if force and (not timeout or host is None):
        raise CommandError("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
    target: tuple[str, int] | None = None
    if host is not None:
        target = (host.decode("latin-1"), port)
        found = next((link for link in links if _same_address(announced(deployment.nodes[link.replica]), target)),
                     None)
        if found is None:
            raise CommandError("ERR FAILOVER target HOST and PORT is not a replica.")
        if found.phase != "online":
            raise CommandError("ERR FAILOVER target replica is not online.")
    # FAILOVER-3: the deadline is this command's clock reading plus the timeout; writes pause
    end = call.now() + Duration(timeout) if timeout else None
    node.failover = Failover("waiting-for-sync", target, end, force)
    return OK


def _same_address(announced_addr: tuple[str, int], target: tuple[str, int]) -> bool:
    """``findReplica``: the host compared without case, the port exactly."""
    return announced_addr[0].lower() == target[0].lower() and announced_addr[1] == target[1]


SAVE_IN_PROGRESS = "ERR Background save already in progress"
REWRITE_IN_PROGRESS = "ERR Background append only file rewriting already in progress"
CHILD_ACTIVE = ("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in "
                "order to schedule a BGSAVE whenever possible.")
FORK_STEPS = ("bgsave-done", "start-rewrite", "start-bgsave", "auto-rewrite", "rewrite-failed")
"""The cron's steps about children besides AOF-7's ``rewrite`` and RDB-7's ``bgsave``: a BGSAVE's child
reaped, a scheduled rewrite or BGSAVE started (FORK-2), AOF-AUTO-1's rewrite and a rewrite's child that
failed (AOF-LIMIT-1). The last two are never offered by :meth:`Deployment.steps`, which knows no file
sizes and takes every child to succeed: ``xspec serve --checked`` tells the model of them."""


@command("save")
def save(call: Call) -> Reply:
    node = node_of(call.server)
    deployment = deployment_of(node)
    if deployment.child_of(node) == "rdb":
        raise CommandError(SAVE_IN_PROGRESS)  # FORK-1
    deployment.save(node)  # RDB-1; FORK-1: also while a rewrite's child runs
    return OK


@command("bgsave")
def bgsave(call: Call) -> Reply:
    schedule = False
    if len(call.argv) > 1:
        if len(call.argv) == 2 and c_string(call.argv[1]).lower() == b"schedule":
            schedule = True
        else:
            raise CommandError(table.SYNTAX)
    node = node_of(call.server)
    deployment = deployment_of(node)
    child = deployment.child_of(node)
    if child == "rdb":
        raise CommandError(SAVE_IN_PROGRESS)  # FORK-1
    in_exec = call.in_exec and call.server.dialect.exec_schedules_children  # FORK-3
    if child is not None or in_exec:
        if schedule or in_exec:
            node.bgsave_scheduled = True  # FORK-2: the cron starts it once no child runs
            return Simple("Background saving scheduled")
        raise CommandError(CHILD_ACTIVE)  # FORK-2
    deployment.start_bgsave(node)  # RDB-1: the fork's moment is the snapshot's
    return Simple("Background saving started")


@command("bgrewriteaof")
def bgrewriteaof(call: Call) -> Reply:
    node = node_of(call.server)
    deployment = deployment_of(node)
    child = deployment.child_of(node)
    if child == "aof":
        raise CommandError(REWRITE_IN_PROGRESS)  # FORK-1, AOF-7
    if child is not None or (call.in_exec and call.server.dialect.exec_schedules_children):  # FORK-2, FORK-3
        node.rewrite_scheduled = True
        if call.server.dialect.aof_rewrite_limited:
            node.rewrite_failures = 0  # AOF-LIMIT-1: asked for by hand, it may start at once
        return Simple("Background append only file rewriting scheduled")
    deployment.rewrite_aof(node, finished=False)  # AOF-5, AOF-7: done at the rewrite step
    node.rewrite_scheduled = False  # FORK-2: rewriteAppendOnlyFileBackground clears it
    return Simple("Background append only file rewriting started")


def persistence_step(server: Server, kind: str) -> bool:
    """``Server.persistence_step``: the deployment's step ``kind`` about children on the server's node
    (``bgsave-done``, ``start-rewrite``, ``start-bgsave``: FORK-2), or a save point's BGSAVE (RDB-7) or
    AOF-AUTO-1's rewrite, which need only no child running (the model of a server on its own counts no
    changes for save points, nor file sizes); False when the model cannot take it now."""
    node = node_of(server)
    deployment = deployment_of(node)
    if kind in ("bgsave", "auto-rewrite"):
        if deployment.child_of(node) is not None:
            return False
        if kind == "bgsave":
            deployment.start_bgsave(node)  # RDB-7
        else:
            deployment.fork_step(kind, node)  # AOF-AUTO-1
        return True
    if kind in SYNC_FORKS:
        # REPL-19: the server forked a full sync's child for replicas this model does not hold
        # (a server checked on its own): it counts as the RDB child until ``bgsave-done``
        if deployment.child_of(node) is not None:
            return False
        if kind == "sync-fork-disk":
            deployment.start_bgsave(node)
        else:
            node.bgsave_child = deployment._snapshot(node)
        node.sync_target = SYNC_FORKS[kind]
        return True
    if kind == "rewrite-failed":
        if deployment.child_of(node) != "aof":
            return False
        deployment.fork_step(kind, node)  # AOF-LIMIT-1
        return True
    if (kind, node.name) not in deployment.steps():
        return False
    deployment.step(kind, node.name)
    return True


SYNC_FORKS = {"sync-fork-disk": "disk", "sync-fork-socket": "socket"}
"""``persistence_step``'s kinds for a full sync's fork on a server checked on its own (REPL-19)."""

PERSISTENCE_HOOKS["step"] = persistence_step


def flushall_save(server: Server) -> None:
    """``flushAllDataAndResetRDB`` after FLUSHALL emptied the data (FLUSH-6).

    A BGSAVE's child is signalled to stop: it stays until the cron reaps it (``bgsave-done``) and
    writes no file. With save points set the empty data set is saved at once (the RDB file of a
    node, which only a node's restart reads); 7.0 and Valkey leave the changes counter at zero,
    6.2 keeps it. An unknown counter stays unknown (a trace/1 need not name ``save``).
    """
    node: Node | None = getattr(server, "node", None)
    if node is not None and node.bgsave_child is not None:
        node.bgsave_killed = True
    if not setting(server, "save").split():
        return
    if node is not None:
        node.rdb = deployment_of(node)._snapshot(node)
    if not server.dialect.flushall_save_keeps_changes:
        if node is not None:
            node.dirty = 0  # the command's own propagation counts one after it, a harmless extra save point step
        if server.stats.dirty_known:
            server.stats.saved()


FLUSHALL_SAVE.append(flushall_save)


def child_values(server: Server) -> dict[str, str]:
    """INFO persistence's fields about children (FORK-1, FORK-2): which one runs, whether a rewrite waits."""
    node = server.node
    if node is None:
        return {}
    child = Deployment.child_of(node)
    return {"rdb_bgsave_in_progress": str(int(child == "rdb")), "aof_rewrite_in_progress": str(int(child == "aof")),
            "aof_rewrite_scheduled": str(int(node.rewrite_scheduled)),
            "aof_rewrites_consecutive_failures": str(node.rewrite_failures)}  # AOF-LIMIT-1


def info_replication(server: Server) -> str:
    """The ``# Replication`` section of INFO, every field (REPL-15)."""
    node = node_of(server)
    deployment = deployment_of(node)
    lines = ["# Replication", f"role:{'slave' if node.is_replica else 'master'}"]
    cfg = server.config
    if node.master is not None:
        link = deployment.links.get(node.name)
        online = link is not None and link.phase == "online"
        lines += [f"master_host:{node.master[0]}", f"master_port:{node.master[1]}",
                  f"master_link_status:{'up' if online else 'down'}",
                  f"master_last_io_seconds_ago:{0 if online else -1}",
                  f"master_sync_in_progress:{1 if link is not None and link.phase == 'transfer' else 0}"]
        off = node.offset if (online or node.cached is not None) else 1
        lines += [f"slave_read_repl_offset:{off}", f"slave_repl_offset:{off}"]
        if server.dialect.info_replication_dual_channel:  # REPL-DIALECT-5
            lines += ["replicas_repl_buffer_size:0", "replicas_repl_buffer_peak:0"]
        if link is not None and link.phase == "transfer":
            # REPL-19: the transfer's progress as the replica measures it; before the file's length
            # arrives the size is unknown (-1); the byte counts and the time measure the host
            lines += ["master_sync_total_bytes:-1", "master_sync_read_bytes:0", "master_sync_left_bytes:-1",
                      "master_sync_perc:-0.00", "master_sync_last_io_seconds_ago:0"]
        if not online:
            lines.append("master_link_down_since_seconds:-1")
        lines += [f"slave_priority:{cfg.get('replica-priority', '100')}",
                  f"slave_read_only:{1 if cfg.get('replica-read-only', 'yes') == 'yes' else 0}",
                  f"replica_announced:{1 if cfg.get('replica-announced', 'yes') == 'yes' else 0}"]
    links = deployment.replicas_of(node)
    lines.append(f"connected_slaves:{len(links)}")
    if int(setting(server, "min-replicas-to-write")) and int(setting(server, "min-replicas-max-lag")):
        lines.append(f"min_slaves_good_slaves:{node.good}")
    for i, link in enumerate(links):
        r = deployment.nodes[link.replica]
        host, port = announced(r)
        state = link.replstate  # REPL-19
        kind = ",type=replica" if server.dialect.info_replication_dual_channel else ""  # REPL-DIALECT-5
        lines.append(f"slave{i}:ip={host},port={port},state={state},offset={link.ack},lag=0{kind}")
    backlog = node.backlog
    if server.dialect.info_replication_dual_channel:
        lines.append("replicas_waiting_psync:0")  # REPL-DIALECT-5: no dual-channel sync in the model
    lines += [f"master_failover_state:{node.failover_state}", f"master_replid:{node.replid}",
              f"master_replid2:{node.replid2}", f"master_repl_offset:{node.offset}",
              f"second_repl_offset:{node.second_offset}", f"repl_backlog_active:{int(backlog is not None)}",
              f"repl_backlog_size:{cfg.get('repl-backlog-size', '1048576')}",
              f"repl_backlog_first_byte_offset:{backlog.first if backlog else 0}",
              f"repl_backlog_histlen:{backlog.histlen if backlog else 0}"]
    return "".join(line + "\r\n" for line in lines)


def info_reply(text: str) -> Reply:
    return Verbatim("txt", text.encode("latin-1"))


__all__ = ["AOF_CLIENT", "BLOCKED", "Deployment", "Link", "MASTER_CLIENT", "Node", "node_of", "resp_length"]
