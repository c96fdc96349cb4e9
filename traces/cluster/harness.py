"""Recording a deployment of real servers as one trace/2: clients, faults and replication links.

:class:`Cluster` starts one server per node on loopback (each from its own
config file and data folder in a temporary directory) and a proxy in front
of each node. Every node announces its proxy's port (``replica-announce-port``)
and replicas are pointed at proxies, so every replication connection, also
the ones a failover makes, passes through the harness: the proxy records
what passes as ``repl`` events (the PSYNC answer, the stream's commands, the
acknowledgements) and can hold, release and cut the link. Clients
(:meth:`Cluster.client`) talk to a node directly and are recorded as in
trace/1, each event with its node. The harness's verbs carry the format's
event names: :meth:`~Cluster.hold`, :meth:`~Cluster.flow`, :meth:`~Cluster.cut`,
:meth:`~Cluster.crash`, :meth:`~Cluster.restart`, :meth:`~Cluster.pause`,
:meth:`~Cluster.resume`.

A hold outlives a cut: after :meth:`~Cluster.cut` of a held link, the
replica's reconnection stops at its ``REPLCONF listening-port`` until
:meth:`~Cluster.flow`, which is how a partition is recorded.

What the harness itself asks the servers (readiness PINGs, ``INFO
replication`` to know when a replica has caught up) is not part of the
trace: it changes nothing a trace can observe beyond the host-measuring
fields rule 5 lists.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from xspec.spec.resp import Bulk, Reply
from xspec.spec.trace_format import (
    Call,
    Close,
    Crash,
    Event,
    Header,
    Link,
    NodeSpec,
    Note,
    Pause,
    Recv,
    ReplAck,
    ReplCmd,
    ReplSync,
    Restart,
    Resume,
    Send,
    Trace,
)
from xspec.traces.cluster.nodes import BASE_CONFIG, HOST, NodeProcess, ServerKind, free_port
from xspec.traces.cluster.replstream import PrimaryToReplica, ReplicaToPrimary, StreamError, Unit
from xspec.traces.record.client import ConnectionClosed, RespConnection, now_us
from xspec.traces.record.recorder import Arg, to_argv


class HarnessError(RuntimeError):
    """The deployment did not reach the state a scenario waits for."""


# ---------------------------------------------------------------------------
# Proxied replication connections


class _LinkConnection:
    """One replication connection through a node's proxy: replica socket, primary socket, two readers."""

    def __init__(self, cluster: Cluster, primary: str, down: socket.socket, up: socket.socket) -> None:
        self.cluster = cluster
        self.primary = primary
        self.replica: str | None = None  # known from the replica's REPLCONF listening-port
        self.down = down  # to the replica
        self.up = up  # to the primary
        self.closed = False
        self.from_primary: deque[Unit] = deque()
        self.from_replica: deque[Unit] = deque()
        self.parsers = (PrimaryToReplica(), ReplicaToPrimary())

    def start(self) -> None:
        for src, direction in ((self.up, 0), (self.down, 1)):
            threading.Thread(target=self._read, args=(src, direction), daemon=True,
                             name=f"xspec-link-{self.primary}-{direction}").start()

    def _read(self, src: socket.socket, direction: int) -> None:
        cluster = self.cluster
        while True:
            try:
                data = src.recv(1 << 16)
            except OSError:
                data = b""
            with cluster.cond:
                if self.closed:
                    return
                if not data:
                    self._drop(by_server=True)
                    return
                try:
                    units = self.parsers[direction].feed(data)
                except StreamError as e:
                    cluster.problems.append(f"link {self.primary}→{self.replica}: {e}")
                    self._drop(by_server=True)
                    return
                (self.from_primary if direction == 0 else self.from_replica).extend(units)
                cluster._drain(self)

    def _drop(self, *, by_server: bool) -> None:
        """Close both sides (under the cluster's lock); a cut the servers made is recorded."""
        self.closed = True
        self.from_primary.clear()
        self.from_replica.clear()
        for s in (self.up, self.down):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        cluster = self.cluster
        if cluster.connections.get((self.primary, self.replica or "")) is self:
            del cluster.connections[(self.primary, self.replica or "")]
        if by_server and self.replica is not None and not cluster.finished \
                and not ({self.primary, self.replica} & cluster.crashed):
            cluster._append(Link(self.primary, self.replica, "cut", "server", t=now_us()))
        cluster.cond.notify_all()


class _Proxy:
    """The proxy in front of one node: accepts replicas' connections and forwards them to the node."""

    def __init__(self, cluster: Cluster, node: str, port: int) -> None:
        self.cluster = cluster
        self.node = node
        self.port = port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((HOST, port))
        self.listener.listen(16)
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True, name=f"xspec-proxy-{node}").start()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            target = self.cluster.nodes[self.node]
            try:
                up = socket.create_connection((HOST, target.port), timeout=2)
            except OSError:
                down.close()  # the node is down: the replica retries by itself
                continue
            for s in (up, down):
                s.settimeout(None)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _LinkConnection(self.cluster, self.node, down, up).start()

    def stop(self) -> None:
        self.stopped = True
        try:
            self.listener.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------
# Recorded clients


class Client:
    """One recorded connection to one node (``c`` in the trace)."""

    def __init__(self, cluster: Cluster, c: int, node: str) -> None:
        self.cluster = cluster
        self.c = c
        self.node = node
        self.conn: RespConnection | None = None
        self.outstanding = 0
        self.early: list[Reply] = []
        self.closed = False

    def _connection(self) -> RespConnection:
        if self.closed:
            raise HarnessError(f"client {self.c} of node {self.node} is closed")
        if self.conn is None:
            self.conn = RespConnection(HOST, self.cluster.nodes[self.node].port)
        return self.conn

    def call(self, *args: Arg) -> Reply:
        """Send a command and read its reply: a ``call``, or a ``send`` and ``recv`` when events of the node
        or its links happened in between (a ``call`` promises none did)."""
        if self.outstanding:
            raise HarnessError(f"client {self.c} has replies outstanding; use send/recv")
        conn = self._connection()
        argv = to_argv(args)
        cluster = self.cluster
        with cluster.cond:
            mark = len(cluster.events)
            t0 = now_us()
            conn.send(argv)
        try:
            reply = conn.recv(cluster.reply_timeout)
        except ConnectionClosed:
            with cluster.cond:
                cluster.events.insert(mark, Send(self.c, argv, t=t0, node=self.node))
                self._closed_by_server()
            raise
        with cluster.cond:
            t1 = now_us()  # taken under the lock, so the file's order is the order of the times
            if any(cluster._touches(e, self.node) for e in cluster.events[mark:]):
                cluster.events.insert(mark, Send(self.c, argv, t=t0, node=self.node))
                cluster._append(Recv(self.c, reply, t=t1))
            else:
                cluster._append(Call(self.c, argv, reply, t0, t1, node=self.node))
        return reply

    def send(self, *args: Arg) -> None:
        """Send a command whose reply :meth:`recv` reads later."""
        conn = self._connection()
        argv = to_argv(args)
        with self.cluster.cond:
            t = now_us()
            conn.send(argv)
            self.cluster._append(Send(self.c, argv, t=t, node=self.node))
        self.outstanding += 1

    def recv(self, timeout: float | None = None) -> Reply:
        """The reply to this client's oldest outstanding :meth:`send`."""
        self.outstanding -= 1
        if self.early:
            return self.early.pop(0)  # recorded when it arrived
        assert self.conn is not None
        try:
            reply = self.conn.recv(timeout or self.cluster.reply_timeout)
        except ConnectionClosed:
            with self.cluster.cond:
                self._closed_by_server()
            raise
        self._received(reply)
        return reply

    def _received(self, reply: Reply) -> None:
        with self.cluster.cond:
            self.cluster._append(Recv(self.c, reply, t=now_us()))

    def is_waiting(self, wait: float = 0.1) -> bool:
        """True if no reply arrives within ``wait`` seconds (the command is blocked).

        A reply that did arrive is recorded now and returned by the next :meth:`recv`.
        """
        if self.early:
            return False
        assert self.conn is not None
        r = self.conn.poll(wait)
        if r is None:
            return True
        self._received(r)
        self.early.append(r)
        return False

    def close(self) -> None:
        """The client closes its connection."""
        if self.closed:
            return
        with self.cluster.cond:
            self.cluster._append(Close(self.c, "client", t=now_us()))
            self.closed = True
        if self.conn is not None:
            self.conn.close()

    def _closed_by_server(self) -> None:
        if not self.closed:
            self.closed = True
            self.cluster._append(Close(self.c, "server", t=now_us()))


# ---------------------------------------------------------------------------
# The deployment


def _info(port: int, section: str = "replication") -> dict[str, str]:
    """INFO ``section`` of the server on ``port``, asked on a connection of the harness's own."""
    conn = RespConnection(HOST, port, timeout=5)
    try:
        reply = conn.call([b"INFO", section.encode()])
    finally:
        conn.close()
    if not isinstance(reply, Bulk):
        return {}
    text = reply.value.decode("utf-8", "replace")
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


class Cluster:
    """Real servers on loopback behind the harness's proxies, recorded as one trace/2."""

    def __init__(self, kind: ServerKind, nodes: Sequence[str] = ("a", "b"), *,
                 config: dict[str, str] | None = None, node_config: dict[str, dict[str, str]] | None = None,
                 title: str | None = None, tags: Sequence[str] = (), reply_timeout: float = 10.0) -> None:
        self.kind = kind
        self.names = list(nodes)
        self.common_config = {**BASE_CONFIG, **(config or {})}
        self.node_config = node_config or {}
        self.title = title
        self.tags = list(tags)
        self.reply_timeout = reply_timeout
        self.cond = threading.Condition()
        self.events: list[Event] = []
        self.nodes: dict[str, NodeProcess] = {}
        self.proxies: dict[str, _Proxy] = {}
        self.connections: dict[tuple[str, str], _LinkConnection] = {}
        self.held: set[tuple[str, str]] = set()
        # Stepped links (:meth:`step_link`): stream commands pass only as many as :meth:`release` allows.
        self.stepped: dict[tuple[str, str], int] = {}
        self.acks_open: set[tuple[str, str]] = set()
        self.passed_bytes: dict[tuple[str, str], int] = {}
        self.step_multi: set[tuple[str, str]] = set()  # stepped links inside a released MULTI
        self.crashed: set[str] = set()
        self.clients: list[Client] = []
        self.problems: list[str] = []
        self.finished = False
        self.workdir: Path | None = None

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> Cluster:
        self.workdir = Path(tempfile.mkdtemp(prefix="xspec-cluster-"))
        try:
            for name in self.names:
                proxy = self._proxy(name)
                config = {**self.common_config, **self.node_config.get(name, {}),
                          "replica-announce-port": str(proxy.port)}
                node = NodeProcess(name, self.kind, self.workdir / name, self._free_node_port(), proxy.port,
                                   config)
                self.nodes[name] = node
                node.start()
        except BaseException:
            self.stop()
            raise
        return self

    def _proxy(self, name: str) -> _Proxy:
        for _ in range(5):
            try:
                proxy = _Proxy(self, name, free_port())
            except OSError:
                continue
            self.proxies[name] = proxy
            return proxy
        raise HarnessError("no free port for a proxy")

    def _free_node_port(self) -> int:
        taken = {p.port for p in self.proxies.values()} | {n.port for n in self.nodes.values()}
        while True:
            port = free_port()
            if port not in taken:
                return port

    def stop(self) -> None:
        """Stop every server this harness started (by pid), its proxies, and remove the data folders."""
        with self.cond:
            self.finished = True
        for client in self.clients:
            if client.conn is not None:
                client.conn.close()
        for node in self.nodes.values():
            node.kill()  # by pid; nothing of a run is kept, so no graceful shutdown (it waits for replicas)
            node.proc = None
        for proxy in self.proxies.values():
            proxy.stop()
        with self.cond:
            for conn in list(self.connections.values()):
                conn._drop(by_server=False)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the trace -------------------------------------------------------------
    def header(self) -> Header:
        nodes = {name: NodeSpec(self.kind.name, self.kind.version,
                                [f"{HOST}:{node.port}", f"{HOST}:{node.announce_port}"], dict(node.config))
                 for name, node in self.nodes.items()}
        return Header(clock="wall", title=self.title, source="recorded", tags=self.tags or None, nodes=nodes)

    def trace(self) -> Trace:
        with self.cond:
            return Trace(self.header(), list(self.events))

    def _append(self, e: Event) -> None:
        if not self.finished:
            self.events.append(e)

    @staticmethod
    def _touches(e: Event, node: str) -> bool:
        if isinstance(e, (Link, ReplCmd, ReplSync, ReplAck)):
            return node in (e.primary, e.replica)
        if isinstance(e, (Crash, Restart, Pause, Resume)):
            return e.node == node
        return False

    def note(self, text: str) -> None:
        with self.cond:
            self._append(Note(text))

    # -- clients ---------------------------------------------------------------
    def client(self, node: str) -> Client:
        """A new recorded connection to ``node`` (opened at its first command)."""
        if node not in self.nodes:
            raise HarnessError(f"no node {node!r}")
        client = Client(self, len(self.clients) + 1, node)
        self.clients.append(client)
        return client

    def addr(self, node: str) -> tuple[str, int]:
        """The address replicas use to reach ``node``: its proxy."""
        return HOST, self.nodes[node].announce_port

    # -- topology (recorded as client commands) --------------------------------
    def replicaof(self, replica: str, primary: str, *, client: Client | None = None, settle: bool = True) -> Reply:
        """``REPLICAOF <primary's proxy>`` on ``replica``; then wait until it has synchronised."""
        host, port = self.addr(primary)
        reply = (client or self.client(replica)).call("REPLICAOF", host, port)
        if settle:
            self.settle(replica)
        return reply

    def promote(self, node: str, *, client: Client | None = None) -> Reply:
        """``REPLICAOF NO ONE`` on ``node``; then wait until the proxy has seen its link close."""
        reply = (client or self.client(node)).call("REPLICAOF", "NO", "ONE")
        self.wait_unlinked(node)
        return reply

    def wait_unlinked(self, replica: str, timeout: float = 5.0) -> None:
        """Wait until no replication connection to ``replica`` passes through the proxies."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while any(r == replica for _, r in self.connections):
                if not self.cond.wait(max(0.0, deadline - time.monotonic())):
                    raise HarnessError(f"node {replica}'s replication link did not close within {timeout} s")

    # -- the link verbs --------------------------------------------------------
    def hold(self, primary: str, replica: str) -> None:
        """The proxy stops passing bytes between ``primary`` and ``replica`` (both ways) until :meth:`flow`."""
        with self.cond:
            if (primary, replica) in self.held:
                raise HarnessError(f"link {primary}→{replica} is held already")
            self.held.add((primary, replica))
            self._append(Link(primary, replica, "held", "harness", t=now_us()))

    def flow(self, primary: str, replica: str) -> None:
        """The held bytes pass, in order, and the link flows again."""
        with self.cond:
            if (primary, replica) not in self.held:
                raise HarnessError(f"link {primary}→{replica} is not held")
            self.held.discard((primary, replica))
            self._append(Link(primary, replica, "flowing", "harness", t=now_us()))
            conn = self.connections.get((primary, replica))
            if conn is not None:
                self._drain(conn)

    def cut(self, primary: str, replica: str) -> None:
        """Close the replication connection (what was held is lost); the replica reconnects by itself."""
        with self.cond:
            conn = self.connections.get((primary, replica))
            if conn is None:
                raise HarnessError(f"no replication connection {primary}→{replica} to cut")
            self._append(Link(primary, replica, "cut", "harness", t=now_us()))
            conn._drop(by_server=False)

    def _drain(self, conn: _LinkConnection) -> None:
        """Forward what ``conn`` has read, unless its link is held (under the lock)."""
        while not conn.closed:
            if conn.replica is not None and (conn.primary, conn.replica) in self.held:
                return
            if conn.replica is not None and (conn.primary, conn.replica) in self.stepped:
                if not self._step_unit(conn):
                    return
                continue
            if conn.from_replica:
                unit, dst, upward = conn.from_replica.popleft(), conn.up, True
            elif conn.from_primary:
                unit, dst, upward = conn.from_primary.popleft(), conn.down, False
            else:
                return
            event = self._observe(conn, unit, upward)
            if conn.replica is not None and (conn.primary, conn.replica) in self.held:
                # Identified by this very unit, on a held link: it waits.
                conn.from_replica.appendleft(unit)
                return
            if event is not None:
                self._append(event)
            try:
                dst.sendall(unit.data)
            except OSError:
                conn._drop(by_server=True)
                return

    # -- stepped links: one replicated command at a time (xspec explore --reproduce) --
    GATED = (b"XADD", b"XCLAIM", b"XACK", b"XAUTOCLAIM", b"XDEL", b"XTRIM", b"XGROUP", b"DEL")

    def step_link(self, primary: str, replica: str, *, stepped: bool = True) -> None:
        """Make the link step (``stepped``) or flow again: while it steps, the handshake, PINGs, SELECT and
        REPLCONF pass as they come, but a stream write (:data:`GATED`, or a whole MULTI ... EXEC) waits for
        :meth:`release`, and the replica's acknowledgements wait for :meth:`open_acks`. Nothing is
        recorded for the mode itself: the ``repl`` events show when each command passed."""
        with self.cond:
            key = (primary, replica)
            if stepped:
                self.stepped.setdefault(key, 0)
            else:
                self.stepped.pop(key, None)
                self.acks_open.discard(key)
            conn = self.connections.get(key)
            if conn is not None:
                self._drain(conn)

    def release(self, primary: str, replica: str, commands: int = 1, timeout: float = 5.0) -> int:
        """Let ``commands`` more stream writes pass on a stepped link; wait until they have passed and
        return the bytes of replication stream passed to the replica so far (its offset's growth)."""
        key = (primary, replica)
        deadline = time.monotonic() + timeout
        with self.cond:
            if key not in self.stepped:
                raise HarnessError(f"link {primary}→{replica} is not stepped")
            self.stepped[key] += commands
            while self.stepped.get(key, 0) > 0:
                conn = self.connections.get(key)
                if conn is not None:
                    self._drain(conn)
                if self.stepped.get(key, 0) <= 0:
                    break
                if not self.cond.wait(max(0.0, min(0.05, deadline - time.monotonic()))) \
                        and time.monotonic() > deadline:
                    raise HarnessError(f"link {primary}→{replica}: no stream write to release within {timeout} s")
            return self.passed_bytes.get(key, 0)

    def open_acks(self, primary: str, replica: str, open_: bool = True) -> None:
        """On a stepped link, let the replica's acknowledgements pass (``open_``) or wait again."""
        with self.cond:
            key = (primary, replica)
            (self.acks_open.add if open_ else self.acks_open.discard)(key)
            conn = self.connections.get(key)
            if conn is not None:
                self._drain(conn)

    def _step_unit(self, conn: _LinkConnection) -> bool:
        """Forward one unit of a stepped link if it may pass (under the lock); False when nothing may."""
        key = (conn.primary, conn.replica or "")
        if conn.from_replica:
            unit = conn.from_replica[0]
            argv = unit.argv
            is_ack = argv is not None and len(argv) >= 2 and argv[0].upper() == b"REPLCONF" \
                and argv[1].lower() == b"ack"
            if not is_ack or key in self.acks_open:
                conn.from_replica.popleft()
                return self._forward(conn, unit, conn.up, True)
        if conn.from_primary:
            unit = conn.from_primary[0]
            head = unit.argv[0].upper() if unit.kind == "command" and unit.argv else b""
            # A MULTI ... EXEC block (one command's propagation) is one write: released as a whole.
            if (head in self.GATED or head == b"MULTI") and key not in self.step_multi:
                if self.stepped[key] <= 0:
                    return False
                self.stepped[key] -= 1
                self.cond.notify_all()
            if head == b"MULTI":
                self.step_multi.add(key)
            elif head == b"EXEC":
                self.step_multi.discard(key)
            conn.from_primary.popleft()
            if unit.kind == "command":
                self.passed_bytes[key] = self.passed_bytes.get(key, 0) + len(unit.data)
            return self._forward(conn, unit, conn.down, False)
        return False

    def _forward(self, conn: _LinkConnection, unit: Unit, dst: socket.socket, upward: bool) -> bool:
        event = self._observe(conn, unit, upward)
        if event is not None:
            self._append(event)
        try:
            dst.sendall(unit.data)
        except OSError:
            conn._drop(by_server=True)
            return False
        return True

    def _observe(self, conn: _LinkConnection, unit: Unit, upward: bool) -> Event | None:
        """The repl event a unit is, if any; the replica is named by its REPLCONF listening-port."""
        argv = unit.argv
        if upward:
            if argv is None or len(argv) < 3 or argv[0].upper() != b"REPLCONF":
                return None
            sub = argv[1].lower()
            if sub == b"listening-port" and conn.replica is None:
                port = int(argv[2])
                replica = next((n for n, node in self.nodes.items() if node.announce_port == port), None)
                if replica is not None:
                    conn.replica = replica
                    old = self.connections.get((conn.primary, replica))
                    if old is not None and old is not conn:
                        old._drop(by_server=True)
                    self.connections[(conn.primary, replica)] = conn
                return None
            if sub == b"ack" and conn.replica is not None:
                fack = int(argv[4]) if len(argv) >= 5 and argv[3].lower() == b"fack" else None
                return ReplAck(conn.primary, conn.replica, int(argv[2]), fack, t=now_us())
            return None
        if conn.replica is None:
            return None
        if unit.kind == "line" and unit.text is not None:
            words = unit.text.split()
            if words[0] == "+FULLRESYNC" and len(words) == 3:
                return ReplSync(conn.primary, conn.replica, "full", words[1], int(words[2]), t=now_us())
            if words[0] == "+CONTINUE" and len(words) == 2:
                return ReplSync(conn.primary, conn.replica, "partial", words[1], t=now_us())
            return None
        if unit.kind == "command" and argv:
            return ReplCmd(conn.primary, conn.replica, list(argv), t=now_us())
        return None

    # -- faults ----------------------------------------------------------------
    def crash(self, node: str) -> None:
        """kill -9: its clients' connections close (recorded), its links drop."""
        with self.cond:
            self.crashed.add(node)
            # The proxies drop the node's links now: nothing the other side still sends is
            # recorded as passing to (or from) a node that is gone (rule 10: its links drop).
            for conn in list(self.connections.values()):
                if node in (conn.primary, conn.replica):
                    conn._drop(by_server=False)
        self.nodes[node].kill()
        with self.cond:
            t = now_us()
            self._append(Crash(node, t=t))
            for client in self.clients:
                if client.node == node and not client.closed and client.conn is not None:
                    client.closed = True
                    client.conn.close()
                    self._append(Close(client.c, "server", t=t))

    def restart(self, node: str) -> None:
        """Start the node again with its config file and data folder; wait until it has loaded."""
        with self.cond:
            self._append(Restart(node, t=now_us()))
        self.nodes[node].start()
        with self.cond:
            self.crashed.discard(node)

    def pause(self, node: str) -> None:
        """SIGSTOP."""
        self.nodes[node].pause()
        with self.cond:
            self._append(Pause(node, t=now_us()))

    def resume(self, node: str) -> None:
        """SIGCONT."""
        with self.cond:
            self._append(Resume(node, t=now_us()))
        self.nodes[node].resume()

    # -- waiting (the harness's own questions, not in the trace) ---------------
    def info(self, node: str) -> dict[str, str]:
        return _info(self.nodes[node].port)

    def primary_of(self, replica: str) -> str | None:
        info = self.info(replica)
        if info.get("role") != "slave":
            return None
        port = int(info.get("master_port", "0"))
        return next((n for n, node in self.nodes.items() if port in (node.port, node.announce_port)), None)

    def settle(self, *replicas: str, timeout: float = 15.0) -> None:
        """Wait until each replica's link is up and it has applied everything its primary has written."""
        for replica in replicas or [n for n in self.names if n not in self.crashed]:
            deadline = time.monotonic() + timeout
            while True:
                info = self.info(replica)
                if info.get("role") != "slave":
                    if replicas:
                        raise HarnessError(f"node {replica} is not a replica")
                    break
                primary = self.primary_of(replica)
                if primary is not None and info.get("master_link_status") == "up":
                    want = int(self.info(primary).get("master_repl_offset", "0"))
                    if int(info.get("slave_repl_offset", "-1")) >= want:
                        break
                if time.monotonic() > deadline:
                    raise HarnessError(f"replica {replica} did not catch up within {timeout} s: {info}")
                time.sleep(0.01)

    def wait_acked(self, replica: str, timeout: float = 5.0) -> None:
        """Wait until the replica's latest acknowledgement covers its primary's offset (acks come each second)."""
        primary = self.primary_of(replica)
        if primary is None:
            raise HarnessError(f"node {replica} is not a replica")
        want = int(self.info(primary).get("master_repl_offset", "0"))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.cond:
                acks = [e.ack for e in self.events if isinstance(e, ReplAck)
                        and e.primary == primary and e.replica == replica]
            if acks and acks[-1] >= want:
                return
            time.sleep(0.02)
        raise HarnessError(f"replica {replica} did not acknowledge offset {want} within {timeout} s")

    def wait_link_down(self, replica: str, timeout: float = 5.0) -> None:
        """Wait until the replica sees its link down (after a cut or a crash of its primary)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.info(replica).get("master_link_status") != "up":
                return
            time.sleep(0.01)
        raise HarnessError(f"replica {replica}'s link did not go down within {timeout} s")
