"""``xspec serve --replicas N``: a primary and N replicas in one process, and the failures a test puts
between two commands (spec/trace-format.md version 2's harness events).

A :class:`Deployment` runs its nodes (``primary``, ``replica-1`` .. ``replica-N``, each a
:class:`~xspec.reference.server.ReferenceServer` with its own core, port and data folder) on one
event loop. At start each replica is told ``REPLICAOF <primary>`` as a client would tell it (so a
``--trace`` shows it as the call it is). Every node answers the admin commands, named after the
trace format's events:

* ``XSPEC.LINK HOLD | FLOW | CUT <replica>``: the replica's link to its primary holds what passes
  (the replica reads and acknowledges nothing: bytes wait in the socket, delivered later in order),
  flows again, or is cut (the replica caches its master and reconnects a second later);
* ``XSPEC.NODE CRASH | RESTART | PAUSE | RESUME <node>``: the node stops at once, as after SIGKILL
  (connections closed, nothing saved at exit; what its AOF wrote stays, as the page cache keeps it
  for a killed process); starts again on the same port with its start-up settings, loading what its
  persistence kept (a replica is told REPLICAOF its primary again); stops reading from every
  connection and link, and runs none of its timers (crons, active expiry, saves, the AOF's fsync
  and rewrites, replication, blocked clients' timeouts), as after SIGSTOP (NODE-PAUSE-1); reads
  again and runs the timers that came due meanwhile.

The nodes start with ``repl-diskless-sync-delay 0`` unless the config given says otherwise: a
replica is in sync as soon as it asks, not 5 s later (Redis's default wait for more replicas).

``<node>`` is a node's name or its ``host:port``. With ``--trace`` every node's traffic goes into
one trace/2 file (:class:`DeploymentTrace`): clients' events carry their node, the replication
links' own connections (the handshake, PSYNC, the stream, acknowledgements) are left out (the
format's ``repl`` events are optional), and the admin commands are written as the ``link``,
``crash``, ``restart``, ``pause`` and ``resume`` events they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Any

from xspec.reference.api import ReplyError
from xspec.reference.core import Client, Core
from xspec.reference.faults import PausableTimers
from xspec.reference.replication import finish_replication, replication_of
from xspec.reference.server import ReferenceServer
from xspec.reference.trace import TraceWriter, json_line, now_us
from xspec.spec.trace_format import (
    Call,
    Close,
    Connect,
    Crash,
    Event,
    Header,
    Link,
    NodeSpec,
    Note,
    Pause,
    Push,
    Recv,
    Restart,
    Resume,
    Send,
    event_to_json,
)

PRIMARY = "primary"
# Settings a trace/2 node's config names (spec/trace-format.md), as the node started with them.
TRACED_CONFIG = ("save", "appendonly", "appendfsync", "aof-use-rdb-preamble")


def replica_name(i: int) -> str:
    return f"replica-{i}"


class Node:
    """One server of the deployment: its name, start-up settings, and the server while it runs."""

    def __init__(self, name: str, host: str, port: int, options: dict[str, Any]) -> None:
        self.name = name
        self.host = host
        self.port = port
        self.options = options  # ReferenceServer's keyword arguments at start (and restart)
        self.server: ReferenceServer | None = None
        self.primary: Node | None = None  # the node it is told to follow at start
        self.paused = False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def core(self) -> Core:
        assert self.server is not None
        return self.server.core


class Deployment:
    """A primary and its replicas on one event loop."""

    def __init__(self, replicas: int, host: str = "127.0.0.1", port: int = 0, *, trace: str | None = None,
                 data_dir: str | None = None, **options: Any) -> None:
        names = [PRIMARY, *(replica_name(i) for i in range(1, replicas + 1))]
        self.nodes: dict[str, Node] = {}
        # each node has its own data folder (RDB-6: a replica keeps its full sync's file); without one
        # given, in a temporary folder removed at stop, so no node loads a file it did not write
        self.temp_dir = tempfile.mkdtemp(prefix="xspec-deployment-") if data_dir is None else None
        data_dir = self.temp_dir if data_dir is None else data_dir
        for n, name in enumerate(names):
            config = dict(options.pop("config", None) or {}) if n == 0 else dict(self.nodes[PRIMARY].options["config"])
            config.setdefault("repl-diskless-sync-delay", "0")  # a test's replicas sync at once
            if data_dir is not None:
                folder = os.path.join(data_dir, name)
                os.makedirs(folder, exist_ok=True)
                config["dir"] = folder
            node_port = port + n if port else 0
            self.nodes[name] = Node(name, host, node_port, {**options, "config": config})
        for name in names[1:]:
            self.nodes[name].primary = self.nodes[PRIMARY]
        self.trace_path = trace
        self.trace: DeploymentTrace | None = None

    # -- start and stop ----------------------------------------------------------------------------
    async def start(self) -> None:
        """Every node listening; the trace open; each replica told to follow the primary."""
        for node in self.nodes.values():
            await self._start_node(node)
        if self.trace_path is not None:
            self.trace = DeploymentTrace(self.trace_path, self)
            for node in self.nodes.values():
                self.trace.watch(node)
        for node in self.nodes.values():
            self._follow(node)

    async def _start_node(self, node: Node) -> None:
        server = ReferenceServer(node.host, node.port, **node.options)
        await server.start()
        if server.core.timer_factory is not None:  # NODE-PAUSE-1: a paused node's timers wait
            server.core.timer_factory = PausableTimers(server.core.timer_factory, lambda: server.paused)
            rep = replication_of(server.core)
            if rep.cron is not None:  # set at start, before the timers could be held: set again, held
                rep.cron.cancel()
                rep.cron = None
                rep.start()
        node.port = server.port
        node.server = server
        replication_of(server.core).deployment = self

    def _follow(self, node: Node) -> None:
        """REPLICAOF <its primary> from a client of its own (the trace shows it as a call)."""
        if node.primary is None or node.server is None:
            return
        core = node.core
        c = core.connect(None, "127.0.0.1:0")
        core.execute(c, [b"REPLICAOF", node.primary.host.encode(), b"%d" % node.primary.port])
        core.disconnect(c)

    def stop(self) -> None:
        for node in self.nodes.values():
            if node.server is not None:
                node.server.stop()
        if self.trace is not None:
            self.trace.finish()
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    async def serve_until_stopped(self) -> None:
        while any(n.server is not None and not n.server.shutdown_asap for n in self.nodes.values()):
            await asyncio.sleep(0.1)

    # -- the admin verbs ---------------------------------------------------------------------------
    def has_node(self, word: str) -> bool:
        return word in self.nodes or any(n.address == word for n in self.nodes.values())

    def find(self, word: str) -> Node:
        node = self.nodes.get(word)
        if node is None:
            node = next((n for n in self.nodes.values() if n.address == word), None)
        if node is None:
            raise ReplyError(f"ERR no node {word!r} in this deployment (nodes: {', '.join(self.nodes)})")
        return node

    def node_verb(self, verb: str, node: Node) -> None:
        if verb == "CRASH":
            if node.server is None:
                raise ReplyError(f"ERR {node.name} is not running")
            self._record(Crash(node=node.name, t=now_us()))
            self.crash(node)
        elif verb == "RESTART":
            if node.server is not None:
                raise ReplyError(f"ERR {node.name} is running: XSPEC.NODE CRASH it first")
            self._record(Restart(node=node.name, t=now_us()))
            asyncio.get_running_loop().create_task(self.restart(node))
        elif verb == "PAUSE":
            if node.server is None or node.paused:
                raise ReplyError(f"ERR {node.name} is not running or already paused")
            self._record(Pause(node=node.name, t=now_us()))
            self.pause(node, True)
        else:
            if not node.paused:
                raise ReplyError(f"ERR {node.name} is not paused")
            self._record(Resume(node=node.name, t=now_us()))
            self.pause(node, False)

    def link_verb(self, verb: str, node: Node) -> None:
        if node.server is None or node.primary is None:
            raise ReplyError(f"ERR {node.name} is no running replica of this deployment")
        link = replication_of(node.core).link
        if link is None:
            raise ReplyError(f"ERR {node.name} has no replication link now")
        state = {"HOLD": "held", "FLOW": "flowing", "CUT": "cut"}[verb]
        self._record(Link(primary=node.primary.name, replica=node.name, state=state, t=now_us()))
        if verb == "HOLD":
            link.hold()
        elif verb == "FLOW":
            link.flow()
        else:
            link.cut()

    def _record(self, e: Event) -> None:
        if self.trace is not None:
            self.trace.write(e)

    def crash(self, node: Node) -> None:
        """As SIGKILL: the listener and every connection close at once; nothing is saved at exit.

        The links that touch the node drop at once on both ends (trace/2's crash), not when each
        side's socket next reports it: its replicas' links are lost, its primary forgets it.
        """
        server = node.server
        assert server is not None
        own_link = replication_of(server.core).link
        writer = getattr(own_link, "writer", None)
        sock = writer.get_extra_info("sockname") if writer is not None else None
        own_address = f"{sock[0]}:{sock[1]}" if isinstance(sock, tuple) else None
        for other in self.nodes.values():
            if other is node or other.server is None:
                continue
            rep = replication_of(other.core)
            if rep.link is not None and rep.master is not None and f"{rep.master[0]}:{rep.master[1]}" == node.address:
                rep.link.lost()  # its primary is gone
            for r in list(rep.replicas):
                if own_address is not None and r.client.addr == own_address:
                    other.core.disconnect(r.client, "server")  # the crashed replica's connection
                    if r.client.conn is not None:
                        r.client.conn.close_now()
        server.shutdown_asap = True  # the persistence cron stops with it
        if server._server is not None:
            server._server.close()
        finish_replication(server.core)
        p = server.core.persistence
        aof = getattr(p, "aof", None)
        if aof is not None and aof.fd >= 0:
            os.close(aof.fd)  # what it wrote stays in the page cache, as for a killed process
            aof.fd = -1
        for conn in list(server.connections):
            conn.closed_by_server = True  # the trace's crash: every close is by the server
            if conn.transport is not None:
                conn.transport.abort()
        server.connections.clear()
        node.server = None
        node.paused = False

    async def restart(self, node: Node) -> None:
        await self._start_node(node)
        if self.trace is not None:
            self.trace.watch(node)
        self._follow(node)

    def pause(self, node: Node, paused: bool) -> None:
        server = node.server
        assert server is not None
        node.paused = paused
        server.paused = paused
        for conn in list(server.connections):
            if conn.transport is not None and not conn.transport.is_closing():
                if paused:
                    conn.transport.pause_reading()
                else:
                    conn.transport.resume_reading()
                    held, conn.paused_input = conn.paused_input, []
                    if held:
                        conn.data_received(b"".join(held))
        timers = server.core.timer_factory
        if not paused and isinstance(timers, PausableTimers):
            timers.resume()
        rep = replication_of(server.core)
        rep.paused = paused
        if rep.link is not None:
            if paused:
                rep.link.hold()
            else:
                rep.link.flow()

    def addresses(self) -> list[tuple[str, str]]:
        return [(n.name, n.address) for n in self.nodes.values()]


# -- the trace -----------------------------------------------------------------------------------------


class NodeWriter(TraceWriter):
    """One node's trace events, handed to the deployment's trace rather than written."""

    def __init__(self, core: Core, node: str, trace: DeploymentTrace) -> None:
        super().__init__(core, None)
        self.keep = False
        self.node = node
        self.trace = trace

    def add(self, e: Event) -> None:
        self.trace.add(self.node, self.core, e)


class DeploymentTrace:
    """Every node's traffic as one trace/2 file, clients numbered across the deployment."""

    def __init__(self, path: str, deployment: Deployment) -> None:
        self.deployment = deployment
        with contextlib.suppress(FileExistsError):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.file: IO[str] | None = open(path, "w", encoding="utf-8")  # noqa: SIM115 - open while serving
        first = next(iter(deployment.nodes.values()))
        dialect = first.core.dialect
        nodes = {n.name: NodeSpec(dialect.server, dialect.version, [n.address],
                                  {k: n.core.config.get(k, "") for k in TRACED_CONFIG
                                   if k in n.core.config and (k in ("save", "appendonly")
                                                              or n.core.config.get("appendonly") == "yes")})
                 for n in deployment.nodes.values()}
        header = Header(clock="virtual" if first.core.clock.virtual else "wall", title="xspec serve --replicas",
                        source="recorded", tags=["xspec-serve"], nodes=nodes)
        self.file.write(json_line(header.to_json_v2(), (", ", ": ")))
        self.ids: dict[tuple[str, int], int] = {}
        self.hidden: set[tuple[str, int]] = set()
        self.connects: dict[tuple[str, int], Connect] = {}
        self.next_id = 1

    def watch(self, node: Node) -> None:
        """Record ``node``'s server (at start, and again after a restart: a new server, new client ids)."""
        self.hidden = {k for k in self.hidden if k[0] != node.name}
        self.connects = {k: v for k, v in self.connects.items() if k[0] != node.name}
        self.ids = {k: v for k, v in self.ids.items() if k[0] != node.name}
        node.core.observer = NodeWriter(node.core, node.name, self)  # type: ignore[assignment]

    def write(self, e: Event) -> None:
        if self.file is not None:
            self.file.write(json_line(event_to_json(e)))
            self.file.flush()

    def _link_addresses(self) -> set[str]:
        """The local addresses of the replicas' links to their primaries (their connections are not clients')."""
        out = set()
        for n in self.deployment.nodes.values():
            if n.server is None:
                continue
            link = replication_of(n.core).link
            writer = getattr(link, "writer", None)
            if writer is not None:
                sock = writer.get_extra_info("sockname")
                if isinstance(sock, tuple):
                    out.add(f"{sock[0]}:{sock[1]}")
        return out

    def _is_link(self, c: Client | None) -> bool:
        return c is None or c.kind in ("master", "replica") or c.addr in self._link_addresses()

    def add(self, node: str, core: Core, e: Event) -> None:
        if isinstance(e, Note):
            self.write(e)
            return
        cid = getattr(e, "c", None)
        if cid is None:
            self.write(e)
            return
        key = (node, cid)
        if key in self.hidden:
            return
        if isinstance(e, Connect):
            self.connects[key] = e
            return
        if key not in self.ids:
            if isinstance(e, Call | Send) and self._is_link(core.clients.get(cid)):
                self.hidden.add(key)
                self.connects.pop(key, None)
                return
            self.ids[key] = self.next_id
            self.next_id += 1
            connect = self.connects.pop(key, None)
            if connect is not None:
                self.write(dataclasses.replace(connect, c=self.ids[key], node=node))
        c = self.ids[key]
        if isinstance(e, Call | Send):
            self.write(dataclasses.replace(e, c=c, node=node))
        elif isinstance(e, Recv | Close):
            self.write(dataclasses.replace(e, c=c))
            if isinstance(e, Close):
                del self.ids[key]
        elif isinstance(e, Push):
            self.write(dataclasses.replace(e, c=c))

    def finish(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def run_deployment(deployment: Deployment, ready: Any = None) -> None:
    """Run every node until SIGTERM/SIGINT; ``ready`` (if given) is called with the nodes' addresses."""
    import signal

    from xspec.reference.server import new_event_loop
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    stopping = asyncio.Event()

    def on_signal() -> None:
        stopping.set()

    async def serve() -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, on_signal)
        await deployment.start()
        if ready is not None:
            ready(deployment.addresses())
        await stopping.wait()
        deployment.stop()
        await asyncio.sleep(0)

    try:
        loop.run_until_complete(serve())
    finally:
        loop.close()


class DeploymentThread:
    """A deployment running in a background thread of this process (tests, the pytest plugin).

    ``with DeploymentThread(2) as d: d.port("replica-1")``; :meth:`call` runs a function on its loop.
    """

    def __init__(self, replicas: int, **options: Any) -> None:
        import threading

        from xspec.reference.server import new_event_loop
        self.deployment = Deployment(replicas, **options)
        self.loop = new_event_loop()
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._run, name="xspec-deployment", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            self._stop = asyncio.Event()
            try:
                await self.deployment.start()
            except BaseException as e:  # handed to the starting thread
                self._error = e
                return
            finally:
                self._started.set()
            await self._stop.wait()
            self.deployment.stop()
            await asyncio.sleep(0)

        try:
            self.loop.run_until_complete(main())
        finally:
            self.loop.close()

    def port(self, node: str) -> int:
        return self.deployment.nodes[node].port

    def addresses(self) -> list[tuple[str, str]]:
        return self.deployment.addresses()

    def call(self, fn: Any, *args: Any) -> Any:
        async def run() -> Any:
            return fn(*args)
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def __enter__(self) -> DeploymentThread:
        self.thread.start()
        if not self._started.wait(20):
            raise RuntimeError("the deployment did not start")
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc: object) -> None:
        stop = self._stop
        if stop is not None:
            self.loop.call_soon_threadsafe(stop.set)
        self.thread.join(10)
