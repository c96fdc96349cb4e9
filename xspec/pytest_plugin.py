"""pytest plugin: test a client library against ``xspec serve`` (or a real server), and check what it sent.

Registered as the ``pytest11`` entry point ``xspec.pytest_plugin`` (or load it
with ``-p xspec.pytest_plugin``). Fixtures:

``xspec_server``
    A server for this test, empty when the test starts: :class:`XspecServer`
    (``host``, ``port``, ``url``, ``dialect``, ``client()`` for a redis-py
    client, ``command()`` for a raw one). By default one ``xspec serve``
    process per dialect and clock kind serves the whole session and is reset
    between tests (other clients dropped, every database flushed, faults
    cleared, stream settings restored, a virtual clock set back to the
    session's start); ``@pytest.mark.xspec(fresh=True)`` or
    ``--xspec-fresh`` gives each test its own process.
    ``@pytest.mark.xspec(clock="virtual")`` runs the test on a server whose
    clock moves only when the test says: ``xspec_server.clock.advance(ms)``,
    ``.set(ms)``, ``.now()``. ``xspec_server.faults`` injects the server's
    faults (``error``, ``delay``, ``close``, ``restart``, ``clear``;
    ``XSPEC.FAULT`` in reference/faults.py).
``xspec_dialect``
    The dialect the test runs in. ``--xspec-dialect`` (repeatable) runs every
    test that uses ``xspec_server`` once per dialect (default ``redis-7.0``).
``xspec_trace``
    The trace of everything the test's connections sent and received
    (spec/trace-format.md), recorded by ``xspec serve --trace`` (the test gets
    a fresh, traced server), or by the recording proxy in front of a real
    target. ``xspec_trace.trace()`` ends the recording and returns it;
    ``xspec_trace.assert_conforms()`` checks it against the model and fails
    the test with the first event the model cannot explain.

``xspec_deployment``
    A fresh primary and replicas of ``xspec serve`` in this process
    (:class:`XspecDeployment`: ``primary``, ``replicas``, ``node(name)``;
    each node has ``client()``, ``crash()``, ``restart()``, ``pause()``,
    ``resume()``, and a replica ``hold()``, ``flow()``, ``cut()`` of its link,
    the XSPEC.NODE / XSPEC.LINK verbs of ``xspec serve --replicas``), synced
    when the test starts; ``@pytest.mark.xspec_deployment(replicas=N,
    sentinel=True, down_after_ms=ms)`` adds an ``xspec sentinel`` monitoring
    the primary as ``mymaster`` (``sentinel_client()``: redis-py's Sentinel).

``--xspec-target redis://[user:password@]host:port`` runs the same tests
against a real server instead (flushed between tests; one that holds keys is
refused without ``--xspec-allow-flush``). Tests that move the virtual clock or
inject faults are skipped there.

Deployments other than one server (replicas and failover) fit in as another
:class:`Deployment` chosen by the marker's arguments, and assertions on a
trace other than conformance (no delivery anomaly) as another method of
:class:`XspecTrace` built on :meth:`XspecTrace.assert_check`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from xspec.spec.resp import Array, Bulk, Error, Int, Map, Null, NullArray, NullBulk, Reply, Set, Simple
from xspec.traces.record.client import RespConnection

# Every pytest run in an environment with xspec installed loads this module (the entry point): what it
# imports at the top must stay light. The model, the reference server and the tools load when used.
if TYPE_CHECKING:
    from xspec.spec.trace_format import Trace
    from xspec.traces.check.checker import Verdict
    from xspec.traces.harness.targets import Endpoint
    from xspec.traces.record.proxy import BackgroundProxy

DEFAULT_DIALECT = "redis-7.0"
CLOCKS = ("wall", "virtual")
_LISTENING = re.compile(r"listening on (\S+):(\d+) ")


class XspecError(Exception):
    """A server of the plugin's could not be started or reset (the message says why)."""


# -- servers ----------------------------------------------------------------------------------------------------

class Deployment(Protocol):
    """What a test's servers are: one ``xspec serve``, one real server (a replicated deployment later)."""

    endpoint: Address
    dialect: str
    clock_kind: str  # "wall", "virtual", or "real" (a real server's own clock)
    reference: bool  # xspec serve: XSPEC.CLOCK and XSPEC.FAULT work

    def reset(self) -> None: ...
    def stop(self) -> None: ...


@dataclass(frozen=True)
class Address:
    """Where a server listens, and how to log in (a URL's parts)."""

    host: str
    port: int
    username: str | None = None
    password: str | None = None
    db: int = 0


def _value(reply: Reply) -> Any:
    """A reply as Python values: bytes, int, str for a status, None for a null, lists and dicts."""
    if isinstance(reply, Bulk | Int):
        return reply.value
    if isinstance(reply, Simple):
        return reply.text
    if isinstance(reply, Array | Set):
        return [_value(r) for r in reply.items]
    if isinstance(reply, Map):
        return {_value(k): _value(v) for k, v in reply.pairs}
    if isinstance(reply, NullBulk | NullArray | Null):
        return None
    return reply


def _connect(endpoint: Address) -> RespConnection:
    """A control connection (not traced through a proxy), logged in as the URL says."""
    conn = RespConnection(endpoint.host, endpoint.port)
    if endpoint.password is not None:
        who = [endpoint.username.encode()] if endpoint.username else []
        reply = conn.call([b"AUTH", *who, endpoint.password.encode()])
        if isinstance(reply, Error):
            conn.close()
            raise XspecError(f"AUTH refused by {endpoint.host}:{endpoint.port}: {reply.text}")
    if endpoint.db:
        conn.call([b"SELECT", str(endpoint.db).encode()])
    return conn


def _reset(endpoint: Address, extra: Callable[[RespConnection], None] | None = None) -> None:
    """Drop every other client, empty every database, restore the stream settings."""
    from xspec.traces.scenarios.runner import DEFAULT_STREAM_CONFIG
    conn = _connect(endpoint)
    try:
        for argv in ([b"CLIENT", b"KILL", b"TYPE", b"normal", b"SKIPME", b"yes"], [b"FLUSHALL"],
                     *([b"CONFIG", b"SET", k.encode(), v.encode()] for k, v in DEFAULT_STREAM_CONFIG.items())):
            reply = conn.call(list(argv))
            if isinstance(reply, Error):
                raise XspecError(f"{b' '.join(argv).decode()} on {endpoint.host}:{endpoint.port}: {reply.text}")
        if extra is not None:
            extra(conn)
    finally:
        conn.close()


class ServeProcess:
    """``xspec serve`` in a child process on a free loopback port (stopped by its pid)."""

    reference = True

    def __init__(self, dialect: str, clock: str, trace: Path | None = None) -> None:
        self.dialect = dialect
        self.clock_kind = clock
        self.trace_path = trace
        self.start_ms = 0
        from xspec.reference.server import PARENT_PID_ENV
        argv = [sys.executable, "-m", "xspec", "serve", "--host", "127.0.0.1", "--port", "0",
                "--dialect", dialect, "--clock", clock]
        if trace is not None:
            argv += ["--trace", str(trace)]
        env = {**os.environ, PARENT_PID_ENV: str(os.getpid()), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the first line says where it listens (or why it cannot)
        m = _LISTENING.search(line)
        if m is None:
            self.stop()
            raise XspecError(f"xspec serve --dialect {dialect} did not start: {line.strip() or 'no output'}")
        self.endpoint = Address(m.group(1), int(m.group(2)))
        if clock == "virtual":
            conn = _connect(self.endpoint)
            try:
                self.start_ms = int(_value(conn.call([b"XSPEC.CLOCK", b"GET"])))
            finally:
                conn.close()

    def reset(self) -> None:
        def restore(conn: RespConnection) -> None:
            conn.call([b"XSPEC.FAULT", b"CLEAR"])
            if self.clock_kind == "virtual":
                conn.call([b"XSPEC.CLOCK", b"SET", str(self.start_ms).encode()])
        _reset(self.endpoint, restore)

    def stop(self) -> None:
        """SIGTERM (the server then completes its trace), SIGKILL after 5 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class RealServer:
    """A server named by ``--xspec-target``: used as it is, flushed between tests."""

    reference = False
    clock_kind = "real"

    def __init__(self, url: str, allow_flush: bool) -> None:
        from xspec.traces.harness.targets import TargetError, parse_endpoint, parse_info, server_info
        try:
            self.url_endpoint: Endpoint = parse_endpoint(url)
        except TargetError as e:
            raise XspecError(str(e)) from None
        if self.url_endpoint.tls:
            raise XspecError("rediss:// targets are not supported by the pytest plugin yet")
        url_endpoint = self.url_endpoint
        self.endpoint = Address(url_endpoint.host, url_endpoint.port, url_endpoint.username, url_endpoint.password,
                                url_endpoint.db)
        try:
            conn = _connect(self.endpoint)
            try:
                info = parse_info(_value(conn.call([b"INFO", b"server"])).decode())
                keyspace = _value(conn.call([b"INFO", b"keyspace"]))
            finally:
                conn.close()
        except (OSError, AttributeError) as e:
            raise XspecError(f"cannot connect to {url}: {e}") from None
        described = server_info(info)
        from xspec.spec.dialect import UnknownDialect, dialect_for_server
        try:
            self.dialect = dialect_for_server(described.name, described.version).name
        except UnknownDialect as e:
            raise XspecError(f"{url}: {e}") from None
        if b"keys=" in keyspace and not allow_flush:
            raise XspecError(f"{url} holds keys and the tests flush it: give --xspec-allow-flush to go on")

    def reset(self) -> None:
        _reset(self.endpoint)

    def stop(self) -> None:
        """Nothing to stop: the plugin did not start it."""


# -- what a test gets -------------------------------------------------------------------------------------------

class VirtualClock:
    """The server's clock, when the test runs on ``@pytest.mark.xspec(clock="virtual")``."""

    def __init__(self, server: XspecServer) -> None:
        self._server = server

    def _require(self) -> None:
        if not self._server.deployment.reference:
            pytest.skip("a real server's clock cannot be moved (XSPEC.CLOCK is xspec serve's)")
        if self._server.deployment.clock_kind != "virtual":
            raise XspecError('this test\'s server has a wall clock: mark it @pytest.mark.xspec(clock="virtual")')

    def now(self) -> int:
        """The server's time, ms since the epoch (either clock of xspec serve)."""
        if not self._server.deployment.reference:
            pytest.skip("a real server's clock is not read through XSPEC.CLOCK")
        return int(self._server.command("XSPEC.CLOCK", "GET"))

    def set(self, ms: int) -> int:
        """Set the clock to ``ms`` (it may go backwards); blocked clients whose deadline passed time out."""
        self._require()
        return int(self._server.command("XSPEC.CLOCK", "SET", str(ms)))

    def advance(self, ms: int) -> int:
        """Move the clock by ``ms`` (may be negative); returns the new time."""
        self._require()
        return int(self._server.command("XSPEC.CLOCK", "ADVANCE", str(ms)))


class Faults:
    """``XSPEC.FAULT``: errors, delays, closed connections and restarts, injected into the server."""

    def __init__(self, server: XspecServer) -> None:
        self._server = server

    def _fault(self, *args: str) -> Any:
        if not self._server.deployment.reference:
            pytest.skip("faults are injected by xspec serve (XSPEC.FAULT), not a real server")
        return self._server.command("XSPEC.FAULT", *args)

    def error(self, kind: str, count: int = 1, command: str | None = None) -> None:
        """The next ``count`` commands (0: all until :meth:`clear`), or only ``command``'s, fail with
        Redis's error for ``kind`` (READONLY, LOADING, OOM, BUSY, MASTERDOWN, TRYAGAIN)."""
        self._fault("ERROR", kind, "COUNT", str(count), *(("COMMAND", command) if command else ()))

    def delay(self, ms: int, client_id: int | None = None) -> None:
        """Hold every reply (or client ``client_id``'s) for ``ms`` ms; 0 ends it."""
        self._fault("DELAY", str(ms), *(("CLIENT", str(client_id)) if client_id is not None else ()))

    def close(self, *client_ids: int) -> int:
        """Close those connections (none given: every one); how many were closed."""
        return int(self._fault("CLOSE", *([str(i) for i in client_ids] or ["ALL"])))

    def restart(self, keep_data: bool = False) -> None:
        """Close every connection as a restart does; the data goes too unless ``keep_data``."""
        self._fault("RESTART", "KEEP" if keep_data else "EMPTY")

    def clear(self) -> None:
        self._fault("CLEAR")


class XspecServer:
    """The server a test talks to: its address, clients, clock and faults."""

    def __init__(self, deployment: Deployment, endpoint: Address | None = None) -> None:
        self.deployment = deployment
        # the address clients use: the server's, or a recording proxy's in front of a real one
        self.endpoint = endpoint or deployment.endpoint
        self.clock = VirtualClock(self)
        self.faults = Faults(self)
        # ends the recording of a traced test and gives its trace (set by the xspec_server fixture)
        self.finish_trace: Callable[[], Trace] | None = None

    @property
    def host(self) -> str:
        return self.endpoint.host

    @property
    def port(self) -> int:
        return self.endpoint.port

    @property
    def dialect(self) -> str:
        return self.deployment.dialect

    @property
    def url(self) -> str:
        e = self.endpoint
        auth = f"{e.username or ''}:{e.password}@" if e.password is not None else ""
        return f"redis://{auth}{e.host}:{e.port}/{e.db}"

    def client(self, **options: Any) -> Any:
        """A redis-py client for this server (``redis.Redis.from_url(self.url, **options)``)."""
        try:
            import redis
        except ImportError:
            raise XspecError("xspec_server.client() needs redis-py (pip install redis)") from None
        return redis.Redis.from_url(self.url, **options)

    def command(self, *argv: str | bytes) -> Any:
        """One command on a connection of its own; the reply's value (an error reply raises XspecError)."""
        conn = _connect(self.deployment.endpoint)
        try:
            reply = conn.call([a.encode() if isinstance(a, str) else a for a in argv])
        finally:
            conn.close()
        if isinstance(reply, Error):
            raise XspecError(reply.text)
        return _value(reply)


class XspecTrace:
    """The trace of what the test sent and received, and assertions on it."""

    def __init__(self, finish: Callable[[], Trace], dialect: str) -> None:
        self._finish = finish
        self._trace: Trace | None = None
        self.dialect = dialect

    def trace(self) -> Trace:
        """The trace so far; this ends the recording (the test's server stops)."""
        if self._trace is None:
            self._trace = self._finish()
        return self._trace

    def check(self) -> Verdict:
        """The model's verdict on the trace (``xspec replay``): conform, diverge, unsupported or inconclusive."""
        from xspec.traces.check.checker import check_trace
        return check_trace(self.trace(), self.dialect)

    def assert_check(self, name: str, check: Callable[[Trace], list[str]]) -> None:
        """Fail the test with ``check``'s problems, if it finds any in the trace."""
        problems = check(self.trace())
        if problems:
            pytest.fail(f"{name}:\n" + "\n".join(f"  {p}" for p in problems), pytrace=False)

    def assert_conforms(self) -> None:
        """Fail the test unless the model explains every event of the trace."""
        def conformance(trace: Trace) -> list[str]:
            verdict = self.check()
            return [] if verdict.status == "conform" else [verdict.describe()]
        self.assert_check(f"the trace does not conform to the model ({self.dialect})", conformance)


# -- pytest hooks and fixtures ----------------------------------------------------------------------------------

def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("xspec", "xspec: client-library tests against xspec serve")
    group.addoption("--xspec-dialect", action="append", default=None, metavar="DIALECT",
                    help=f"run tests using xspec_server in this dialect (repeat to run each in several;"
                         f" default {DEFAULT_DIALECT}; see xspec serve --help)")
    group.addoption("--xspec-target", default=None, metavar="URL",
                    help="run the tests against this real server (redis://[user:password@]host:port) instead")
    group.addoption("--xspec-allow-flush", action="store_true",
                    help="with --xspec-target: go on even though the server holds keys (the tests flush it)")
    group.addoption("--xspec-fresh", action="store_true",
                    help="a fresh xspec serve process for every test (default: one per session, reset between tests)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", 'xspec(clock="wall"|"virtual", fresh=False): how xspec_server is set up for this test')
    config.addinivalue_line(
        "markers", "xspec_deployment(replicas=2, sentinel=False, down_after_ms=1000, dialect=...): xspec_deployment's"
                   " shape")
    dialects = config.getoption("--xspec-dialect", None) or []
    if dialects:
        from xspec.reference.core import SERVED_DIALECTS
        unknown = [d for d in dialects if d not in SERVED_DIALECTS]
        if unknown:
            raise pytest.UsageError(f"--xspec-dialect: xspec serve has no dialect {unknown[0]!r};"
                                    f" it serves {', '.join(SERVED_DIALECTS)}")
    target = config.getoption("--xspec-target", None)
    if target is not None:
        if config.getoption("--xspec-dialect"):
            raise pytest.UsageError("--xspec-target and --xspec-dialect do not go together:"
                                    " the target's dialect is read from its INFO")
        try:
            config.stash[_TARGET] = RealServer(target, config.getoption("--xspec-allow-flush"))
        except XspecError as e:
            raise pytest.UsageError(f"--xspec-target: {e}") from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "xspec_dialect" not in metafunc.fixturenames:
        return
    target = metafunc.config.stash.get(_TARGET, None)
    dialects = [target.dialect] if target is not None else metafunc.config.getoption("--xspec-dialect") or [
        DEFAULT_DIALECT]
    metafunc.parametrize("xspec_dialect", list(dict.fromkeys(dialects)), scope="session")


_TARGET = pytest.StashKey[RealServer]()


class _Pool:
    """The session's shared ``xspec serve`` processes, one per (dialect, clock)."""

    def __init__(self) -> None:
        self.servers: dict[tuple[str, str], ServeProcess] = {}

    def get(self, dialect: str, clock: str) -> ServeProcess:
        key = (dialect, clock)
        if key not in self.servers:
            self.servers[key] = ServeProcess(dialect, clock)
        return self.servers[key]

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.servers.clear()


@pytest.fixture(scope="session")
def _xspec_pool() -> Iterator[_Pool]:
    pool = _Pool()
    yield pool
    pool.stop()


def _settings(request: pytest.FixtureRequest) -> tuple[str, bool]:
    marker = request.node.get_closest_marker("xspec")
    options = dict(marker.kwargs) if marker is not None else {}
    clock = options.pop("clock", "wall")
    fresh = bool(options.pop("fresh", False)) or request.config.getoption("--xspec-fresh")
    if clock not in CLOCKS or options:
        pytest.fail(f"{request.node.nodeid}: @pytest.mark.xspec takes clock={'|'.join(CLOCKS)}"
                    f" and fresh=True|False; not {options or clock!r}", pytrace=False)
    return clock, fresh


@pytest.fixture
def xspec_dialect(request: pytest.FixtureRequest) -> str:
    """The dialect this test runs in (parametrised by ``--xspec-dialect``)."""
    return str(getattr(request, "param", DEFAULT_DIALECT))


@pytest.fixture
def xspec_server(request: pytest.FixtureRequest, xspec_dialect: str, _xspec_pool: _Pool,
                 tmp_path: Path) -> Iterator[XspecServer]:
    """A server for this test, empty at its start (see the module's docstring)."""
    clock, fresh = _settings(request)
    traced = "xspec_trace" in request.fixturenames
    target = request.config.stash.get(_TARGET, None)
    try:
        if target is not None:
            if clock == "virtual":
                pytest.skip("a real server's clock cannot be moved (XSPEC.CLOCK is xspec serve's)")
            target.reset()
            if not traced:
                yield XspecServer(target)
                return
            proxy = _start_proxy(target)
            server = XspecServer(target, Address("127.0.0.1", proxy.port))
            server.finish_trace = proxy.stop
            try:
                yield server
            finally:
                proxy.stop()
            return
        if fresh or traced:
            trace_file = tmp_path / "xspec-serve-trace.jsonl" if traced else None
            own = ServeProcess(xspec_dialect, clock, trace_file)
            server = XspecServer(own)
            if trace_file is not None:
                server.finish_trace = lambda: _stop_and_load(own, trace_file)
            try:
                yield server
            finally:
                own.stop()
            return
        shared = _xspec_pool.get(xspec_dialect, clock)
        shared.reset()
        yield XspecServer(shared)
    except XspecError as e:
        pytest.fail(f"xspec_server: {e}", pytrace=False)


def _start_proxy(target: RealServer) -> BackgroundProxy:
    from xspec.traces.record.proxy import BackgroundProxy, RecordingProxy
    proxy = BackgroundProxy(RecordingProxy("127.0.0.1", 0, target.url_endpoint, None))
    return proxy.__enter__()


def _stop_and_load(server: ServeProcess, path: Path) -> Trace:
    from xspec.spec.trace_format import load
    server.stop()
    return load(path)


@pytest.fixture
def xspec_trace(xspec_server: XspecServer) -> XspecTrace:
    """The trace of what this test's connections sent and received (see :class:`XspecTrace`)."""
    assert xspec_server.finish_trace is not None  # xspec_server records whenever this fixture is asked for
    return XspecTrace(xspec_server.finish_trace, xspec_server.dialect)



# -- a primary with replicas, and Sentinel ------------------------------------------------------------------------

class XspecNode:
    """One node of :class:`XspecDeployment`: its address, a client, and the failures a test puts on it."""

    def __init__(self, owner: XspecDeployment, name: str) -> None:
        self.owner = owner
        self.name = name

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def port(self) -> int:
        return int(self.owner.thread.port(self.name))

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def client(self, **options: Any) -> Any:
        """A redis-py client for this node."""
        import redis
        return redis.Redis.from_url(self.url, **options)

    def _node(self, verb: str) -> None:
        d = self.owner.thread
        d.call(lambda: d.deployment.node_verb(verb, d.deployment.find(self.name)))

    def _link(self, verb: str) -> None:
        d = self.owner.thread
        d.call(lambda: d.deployment.link_verb(verb, d.deployment.find(self.name)))

    def crash(self) -> None:
        """As SIGKILL (XSPEC.NODE CRASH): every connection closes, nothing is saved at exit."""
        self._node("CRASH")

    def restart(self) -> None:
        """Start it again on its port (XSPEC.NODE RESTART); a replica follows its primary again."""
        self._node("RESTART")

    def pause(self) -> None:
        """As SIGSTOP (XSPEC.NODE PAUSE): it reads nothing until :meth:`resume`."""
        self._node("PAUSE")

    def resume(self) -> None:
        self._node("RESUME")

    def hold(self) -> None:
        """This replica's link to its primary holds what passes (XSPEC.LINK HOLD)."""
        self._link("HOLD")

    def flow(self) -> None:
        self._link("FLOW")

    def cut(self) -> None:
        """Drop this replica's link; it reconnects a second later (XSPEC.LINK CUT)."""
        self._link("CUT")


class XspecDeployment:
    """A primary and replicas of ``xspec serve`` (one process: this one), and a Sentinel when asked for."""

    def __init__(self, thread: Any, sentinel: Any = None, master_name: str = "mymaster") -> None:
        self.thread = thread  # reference.replication_deployment.DeploymentThread
        self.primary = XspecNode(self, "primary")
        self.replicas = [XspecNode(self, name) for name in thread.deployment.nodes if name != "primary"]
        self.sentinel = sentinel  # reference.sentinel_server.SentinelServer, or None
        self.master_name = master_name

    def node(self, name: str) -> XspecNode:
        return self.primary if name == "primary" else next(r for r in self.replicas if r.name == name)

    def sentinel_client(self, **options: Any) -> Any:
        """A redis-py ``Sentinel`` over the deployment's Sentinel."""
        if self.sentinel is None:
            raise XspecError("this deployment has no Sentinel: @pytest.mark.xspec_deployment(sentinel=True)")
        from redis.sentinel import Sentinel
        return Sentinel([("127.0.0.1", self.sentinel.port)], **options)

    def wait_synced(self, timeout: float = 10.0) -> None:
        """Until every running replica's link is up and it has applied the primary's whole stream."""
        import time
        deadline = time.monotonic() + timeout
        primary = self.primary.client()
        while True:
            target = int(primary.info("replication")["master_repl_offset"])
            done = True
            for r in self.replicas:
                try:
                    info = r.client().info("replication")
                except OSError:
                    continue  # crashed: not waited for
                done = done and info.get("master_link_status") == "up" and int(info["slave_repl_offset"]) == target
            if done:
                return
            if time.monotonic() > deadline:
                raise XspecError(f"the replicas did not catch up with the primary within {timeout} s")
            time.sleep(0.05)


@pytest.fixture
def xspec_deployment(request: pytest.FixtureRequest) -> Iterator[XspecDeployment]:
    """A fresh primary with replicas (``@pytest.mark.xspec_deployment(replicas=2, sentinel=False,
    down_after_ms=1000, dialect="redis-7.0")``), the replicas synced when the test starts."""
    from xspec.reference.replication_deployment import DeploymentThread
    marker = request.node.get_closest_marker("xspec_deployment")
    options = dict(marker.kwargs) if marker is not None else {}
    replicas = int(options.pop("replicas", 2))
    with_sentinel = bool(options.pop("sentinel", False))
    down_after = int(options.pop("down_after_ms", 1000))
    dialect = str(options.pop("dialect", DEFAULT_DIALECT))
    if options or not 0 < replicas <= 16:
        pytest.fail(f"{request.node.nodeid}: @pytest.mark.xspec_deployment takes replicas=1..16, sentinel=True|False,"
                    f" down_after_ms and dialect; not {options or replicas!r}", pytrace=False)
    with DeploymentThread(replicas, dialect=dialect, config={"repl-ping-replica-period": "1"}) as thread:
        deployment = XspecDeployment(thread)
        deployment.wait_synced()
        if not with_sentinel:
            yield deployment
            return
        from xspec.reference.sentinel_server import SentinelThread
        with SentinelThread(port=0, monitors=((deployment.master_name, "127.0.0.1", deployment.primary.port, 1),),
                            down_after_ms=down_after, failover_timeout_ms=down_after * 10) as sentinel:
            deployment.sentinel = sentinel
            yield deployment
