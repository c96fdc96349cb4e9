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
  gets a full resynchronisation and loses them.

Steps no client causes are methods the caller (a test, the conformance
checker) invokes when it decides they happen: :meth:`Deployment.connect`
(the replica's handshake and PSYNC), :meth:`Deployment.fork` (the snapshot
of a full sync), :meth:`Deployment.load` (the replica loads it),
:meth:`Deployment.apply` (the replica applies one command of the stream),
:meth:`Deployment.ack` (``REPLCONF ACK``), :meth:`Deployment.ping` (the
primary's PING every ``repl-ping-replica-period``). :meth:`Deployment.steps`
lists those possible now. Faults: :meth:`crash`, :meth:`restart`,
:meth:`pause`, :meth:`resume`, :meth:`set_link`.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from xspec.models.clock import Clock, Duration, Instant, ManualClock
from xspec.models.persistence import AppendOnlyFile, Snapshot, load_snapshot, render, rewrite_commands, take_snapshot
from xspec.models.server import BLOCKED, Call, CommandError, Outcome, Server, command
from xspec.models.state import Client
from xspec.spec import commands as table
from xspec.spec.config import CONFIG_DEFAULTS
from xspec.spec.dialect import REDIS_70, Dialect
from xspec.spec.errors import TIMEOUT_NEGATIVE, TIMEOUT_NOT_INTEGER
from xspec.spec.ids import c_string, parse_ll
from xspec.spec.resp import OK, Array, Bulk, Error, Int, Reply, Simple, Verbatim

MASTER_CLIENT = -1
"""The client id of a replica's connection from its primary (``server.master``)."""
AOF_CLIENT = -2
"""The client id that replays an AOF on restart."""

READONLY_ERROR = "READONLY You can't write against a read only replica."
NOREPLICAS_ERROR = "NOREPLICAS Not enough good replicas to write."
UNBLOCKED_ROLE_CHANGE = ("UNBLOCKED force unblock from blocking operation, instance state changed "
                         "(master -> replica?)")
WAIT_ON_REPLICA = ("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a "
                   "replica is configured to be writable (which is not the default) writes to replicas are just "
                   "local and are not propagated.")
REPLICAOF_FROM_REPLICA = "ERR Command is not valid when client is a replica."
ALREADY_CONNECTED = "OK Already connected to specified master"
NO_REPLID = "0" * 40

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

    def add(self, end: int, argv: list[bytes], size: int) -> None:
        self.units.append((end, argv))
        n = resp_length(argv)
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
                tuple(tuple(b) for b in self.blocks))


@dataclass
class Link:
    """The replication connection from ``primary`` to ``replica`` as the primary's replica client keeps it.

    ``phase``: ``wait-bgsave`` (a full sync waits for its snapshot), ``transfer`` (the
    snapshot is on its way; the stream after it is buffered), ``online``.
    ``pending`` is what the primary sent and the replica has not applied, with end offsets.
    """

    primary: str
    replica: str
    phase: str = "wait-bgsave"
    held: bool = False
    pending: deque[tuple[int, list[bytes]]] = field(default_factory=deque)
    snapshot: Snapshot | None = None
    ack: int = 0  # repl_ack_off
    getacks: deque[int] = field(default_factory=deque)  # offsets before each GETACK the replica applied
    sync: tuple[str, str, int] | None = None  # ("full"|"partial", replid, offset) of the handshake
    fed: int = 0  # commands put on the link since the handshake
    applied: int = 0  # of those, applied by the replica

    def freeze(self) -> tuple[Any, ...]:
        return (self.primary, self.replica, self.phase, self.held,
                tuple((e, tuple(a)) for e, a in self.pending),
                None if self.snapshot is None else self.snapshot.freeze(), self.ack, tuple(self.getacks),
                self.sync)


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

    @property
    def is_replica(self) -> bool:
        return self.master is not None

    def freeze(self) -> tuple[Any, ...]:
        return (self.name, self.server.freeze(), self.replid, self.replid2, self.second_offset, self.offset,
                None if self.backlog is None else self.backlog.freeze(), self.master, self.cached, self.up,
                self.paused, None if self.rdb is None else self.rdb.freeze(),
                None if self.aof is None else self.aof.freeze(), tuple(sorted(self.woff.items())))


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
        self.pending_served = []
        out = server.execute(client, argv)
        if self.pending_served:  # REPL-9: readers unblocked by REPLICAOF answer after it
            out.served.extend(self.pending_served)
            self.pending_served = []
        if node.is_replica and setting(server, "replica-read-only") == "yes" and _wrote(out):
            node.writes_executed += 1  # INV-REPL-3: must never happen
        self._after(node, out, before)
        if client in server.clients:
            node.woff[client] = node.offset  # WAIT-2: c->woff after every command
        if node.getack_requested:
            node.getack_requested = False
            self._feed(node, [GETACK], clients=False)  # WAIT-3: REPLCONF GETACK before the next sleep
        return out

    def _after(self, node: Node, out: Outcome, before: int) -> None:
        """Feed what ``out`` propagated to the replicas (a primary with a backlog) and the AOF."""
        if not out.propagated:
            return
        node.dirty += 1
        self._append_aof(node, out.propagated, before)
        if node.is_replica or node.backlog is None:
            node.server.repl_db = before  # REPL-3: nothing is fed, the stream's database stays
            return
        self._feed(node, [render(a) for a in out.propagated])

    def _feed(self, node: Node, commands: list[list[bytes]], *, clients: bool = True) -> None:
        """``replicationFeedSlaves``: the commands join the stream, the backlog and every link past its snapshot."""
        if node.backlog is None:
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
            args = render(argv)
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
                if primary is not None and primary.up and not primary.paused:
                    out.append(("connect", node.name))
            if any(link.phase == "wait-bgsave" for link in self.replicas_of(node)):
                out.append(("fork", node.name))
            if not node.is_replica and int(setting(node.server, "min-replicas-to-write")) and \
                    node.good != self.good_replicas(node):
                out.append(("refresh", node.name))  # REPL-11: the cron's refreshGoodSlavesCount
            if node.dirty and setting(node.server, "save").strip():
                out.append(("bgsave", node.name))  # RDB-7: a save point's condition is met in the cron
        for link in self.links.values():
            primary, replica = self.nodes[link.primary], self.nodes[link.replica]
            if link.held or primary.paused or replica.paused or not replica.up or not primary.up:
                continue
            if link.phase == "transfer":
                out.append(("load", link.replica))
            elif link.phase == "online":
                if link.pending:
                    out.append(("apply", link.replica))
                if link.getacks:
                    out.append(("getack", link.replica))
                if link.ack < replica.offset:
                    out.append(("ack", link.replica))
        return out

    def step(self, kind: str, name: str) -> Outcome:
        """Run one internal step (see :meth:`steps`); the outcome lists the clients it served."""
        if kind == "connect":
            return self.connect(name)
        if kind == "fork":
            return self.fork(name)
        if kind == "load":
            return self.load(name)
        if kind == "apply":
            return self.apply(name)
        if kind == "ack":
            return self.ack(name)
        if kind == "getack":
            return self.ack(name, getack=True)
        if kind == "ping":
            return self.ping(name)
        if kind == "refresh":
            self.nodes[name].good = self.good_replicas(self.nodes[name])
            return Outcome(None)
        if kind == "bgsave":
            self.save(self.nodes[name])
            return Outcome(None)
        raise ValueError(f"unknown step {kind}")

    def connect(self, name: str) -> Outcome:
        """The replica's handshake and ``PSYNC`` (REPL-5, REPL-6, REPL-7)."""
        replica = self.nodes[name]
        primary = self.primary_of(replica)
        assert primary is not None and name not in self.links
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
                replica.backlog = Backlog(replica.offset + 1)
            replica.server.client(MASTER_CLIENT)
            return Outcome(None)
        # REPL-5: a full resynchronisation
        link.phase = "wait-bgsave"
        if primary.backlog is None and len(self.replicas_of(primary)) == 1:
            # REPL-3: the first replica creates the backlog, under a new ID
            primary.replid, primary.replid2, primary.second_offset = self._new_replid(), NO_REPLID, -1
            primary.backlog = Backlog(primary.offset + 1)
        return Outcome(None)

    @staticmethod
    def _partial_ok(primary: Node, replid: str, psync_offset: int) -> bool:
        """``masterTryPartialResynchronization``'s test (REPL-6)."""
        if replid != primary.replid and (replid != primary.replid2 or psync_offset > primary.second_offset):
            return False
        b = primary.backlog
        return b is not None and b.first <= psync_offset <= b.first + b.histlen

    def fork(self, name: str) -> Outcome:
        """The primary's snapshot for the replicas waiting for one (``+FULLRESYNC replid offset``, REPL-5)."""
        primary = self.nodes[name]
        snap = take_snapshot(primary.server.dbs, self._rdb_version(primary), primary.replid, primary.offset)
        for link in self.replicas_of(primary):
            if link.phase == "wait-bgsave":
                link.phase = "transfer"
                link.snapshot = snap
                link.sync = ("full", primary.replid, primary.offset)
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
        replica.backlog = Backlog(snap.offset + 1)
        replica.cached = None
        if setting(replica.server, "repl-diskless-load") == "disabled" and \
                setting(replica.server, "rdb-del-sync-files") == "no":
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
        return self._serve_waiting(self.nodes[link.primary])

    def ping(self, name: str) -> Outcome:
        """The primary's PING every ``repl-ping-replica-period`` seconds (REPL-13)."""
        self._feed(self.nodes[name], [PING], clients=False)
        return Outcome(None)

    def _serve_waiting(self, primary: Node) -> Outcome:
        """``processClientsWaitingReplicas``: WAITs whose count is reached now answer (WAIT-1)."""
        out = Outcome(None)
        server = primary.server
        for c in list(server.clients.values()):
            b = c.blocked
            if b is None or not isinstance(b.payload, WaitPayload):
                continue
            count = self.acked(primary, b.payload.offset)
            b.timeout_reply = Int(count)  # WAIT-4: a timeout answers the count at that moment
            if count >= b.payload.replicas:
                server._unblock(c)
                out.served.append((c.id, Int(count)))
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
                    node.backlog = Backlog(node.offset + 1)
            return out
        was_primary = node.master is None
        self._drop_link(node.name)
        node.master = target
        server = node.server
        for c in list(server.clients.values()):  # REPL-9: disconnectAllBlockedClients
            if c.blocked is not None and c.id != calling:
                server._unblock(c)
                out.served.append((c.id, Error(UNBLOCKED_ROLE_CHANGE)))
        self._disconnect_replicas(node)
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
            keep = len(node.aof.units) if aof_keep is None else aof_keep
            node.aof.units = node.aof.units[:keep]
            node.aof.synced = min(node.aof.synced, keep)
            self._load_aof(node)
        elif node.rdb is not None:
            server.dbs[:] = load_snapshot(node.rdb)
            if node.rdb.replid is not None and node.rdb.offset >= 0:
                # RDB-5: a primary keeps the file's history as its secondary ID
                node.replid2, node.second_offset = node.rdb.replid, node.rdb.offset + 1
                node.offset = node.rdb.offset
                node.backlog = Backlog(node.offset + 1)
        elif setting(server, "appendonly") == "yes":
            node.aof = AppendOnlyFile()

    def _load_aof(self, node: Node) -> None:
        aof = node.aof
        assert aof is not None
        server = node.server
        if isinstance(aof.base, Snapshot):
            server.dbs[:] = load_snapshot(aof.base)  # AOF-2: the RDB preamble
            units: list[tuple[int, tuple[bytes, ...]]] = []
        else:
            units = [(db, tuple(render(argv))) for db, argv in aof.base or []]
        for unit in aof.units:
            units.extend(unit)
        server.client(AOF_CLIENT)
        db = 0
        for dbi, argv in units:
            if dbi != db:
                server.execute(AOF_CLIENT, [b"SELECT", b"%d" % dbi])
                db = dbi
            server.execute(AOF_CLIENT, list(argv))
        server.close(AOF_CLIENT)
        server.repl_db = -1

    def _rdb_version(self, node: Node) -> int:
        return RDB_VERSION.get(node.server.dialect.name, 11)

    def save(self, node: Node) -> None:
        """SAVE / BGSAVE: the RDB file as of now, with the replication info 7.0 records (RDB-1, RDB-5)."""
        replid: str | None = None
        offset, stream_db = -1, -1
        primary = self.primary_of(node) if node.is_replica else None
        if node.is_replica and (node.name in self.links or node.cached is not None):
            replid, offset = node.replid, node.offset
            stream_db = 0 if primary is None else max(primary.server.repl_db, 0)
        elif not node.is_replica and node.backlog is not None:
            replid, offset, stream_db = node.replid, node.offset, max(node.server.repl_db, 0)
        node.rdb = take_snapshot(node.server.dbs, self._rdb_version(node), replid, offset, stream_db)
        node.dirty = 0

    def rewrite_aof(self, node: Node) -> None:
        """BGREWRITEAOF: a new base from the data now, the appended units start again (AOF-5)."""
        if node.aof is None:
            node.aof = AppendOnlyFile()
        if setting(node.server, "aof-use-rdb-preamble") == "yes":
            node.aof.base = take_snapshot(node.server.dbs, self._rdb_version(node))
        else:
            node.aof.base = rewrite_commands(node.server.dbs)
        node.aof.units = []
        node.aof.synced = 0

    # -- canonical state -------------------------------------------------------------------
    def freeze(self) -> tuple[Any, ...]:
        """Every node, link, backlog and persisted file, canonically (for explorers and tests)."""
        return (tuple(n.freeze() for _, n in sorted(self.nodes.items())),
                tuple(link.freeze() for _, link in sorted(self.links.items())))


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


@command("replicaof")
@command("slaveof")
def replicaof(call: Call) -> Reply:
    node = node_of(call.server)
    deployment = deployment_of(node)
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
    if node.master is not None:  # WAIT-5
        raise CommandError(WAIT_ON_REPLICA)
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
    """FAILOVER [TO host port] [TIMEOUT ms] [FORCE] [ABORT]: 7.0's checks, in its order (FAILOVER-1, FAILOVER-2).

    The handover itself (writes paused until the target caught up, then ``PSYNC FAILOVER``)
    is not modelled: the model says so where Redis would start it.
    """
    node = node_of(call.server)
    deployment = deployment_of(node)
    argv = call.argv
    if len(argv) == 2 and c_string(argv[1]).lower() == b"abort":
        raise CommandError("ERR No failover in progress.")  # FAILOVER-2
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
    if node.master is not None:
        raise CommandError("ERR FAILOVER is not valid when server is a replica.")  # FAILOVER-1
    links = deployment.replicas_of(node)
    if not links:
        raise CommandError("ERR FAILOVER requires connected replicas.")  # FAILOVER-1
    if force and (not timeout or host is None):
        raise CommandError("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
    if host is not None:
        target = next((link for link in links if announced(deployment.nodes[link.replica])
                       == (host.decode("latin-1"), port)), None)
        if target is None:
            raise CommandError("ERR FAILOVER target HOST and PORT is not a replica.")
        if target.phase != "online":
            raise CommandError("ERR FAILOVER target replica is not online.")
    raise CommandError("ERR xspec model: FAILOVER is not modelled")


@command("save")
def save(call: Call) -> Reply:
    node = node_of(call.server)
    deployment_of(node).save(node)  # RDB-1
    return OK


@command("bgsave")
def bgsave(call: Call) -> Reply:
    node = node_of(call.server)
    deployment_of(node).save(node)  # RDB-1: the fork's moment is the snapshot's
    return Simple("Background saving started")


@command("bgrewriteaof")
def bgrewriteaof(call: Call) -> Reply:
    node = node_of(call.server)
    deployment_of(node).rewrite_aof(node)  # AOF-5
    return Simple("Background append only file rewriting started")


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
        state = {"wait-bgsave": "wait_bgsave", "transfer": "send_bulk", "online": "online"}[link.phase]
        lines.append(f"slave{i}:ip={host},port={port},state={state},offset={link.ack},lag=0")
    backlog = node.backlog
    lines += ["master_failover_state:no-failover", f"master_replid:{node.replid}",
              f"master_replid2:{node.replid2}", f"master_repl_offset:{node.offset}",
              f"second_repl_offset:{node.second_offset}", f"repl_backlog_active:{int(backlog is not None)}",
              f"repl_backlog_size:{cfg.get('repl-backlog-size', '1048576')}",
              f"repl_backlog_first_byte_offset:{backlog.first if backlog else 0}",
              f"repl_backlog_histlen:{backlog.histlen if backlog else 0}"]
    return "".join(line + "\r\n" for line in lines)


def info_reply(text: str) -> Reply:
    return Verbatim("txt", text.encode("latin-1"))


__all__ = ["AOF_CLIENT", "BLOCKED", "Deployment", "Link", "MASTER_CLIENT", "Node", "node_of", "resp_length"]
