"""Shutdown of the reference server (``xspec serve``) and of the children that xspec starts.

Every scenario runs a real ``python -m xspec serve`` subprocess, puts it in a state
(idle, thousands of idle connections, clients blocked with BLOCK 0, half-closed
connections, a slow reader, a pipelined flood, the virtual clock), sends SIGTERM
or SIGINT and asserts: the process is gone within ``BOUND`` seconds, with status 0
(as redis-server, checked below against the real binary), and its ``--trace`` is
well formed (complete JSON lines, a ``close`` for every ``connect``).

The orphan tests start a parent process that holds a
:class:`~xspec.traces.harness.servers.ReferenceProcess` (or an ``embedded:`` target),
end the parent in various ways and assert that the child is gone (by pid) and
its port free.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import redis_binary, start_redis
from xspec.spec.trace_format import Close, Connect, load

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux: /proc, PR_SET_PDEATHSIG")

BOUND = 1.0  # seconds from the signal to the process being gone
ORPHAN_BOUND = 2.0  # seconds from the parent's death to the child being gone


def command(*args: str | bytes) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else a.encode()
        out.append(b"$%d\r\n%b\r\n" % (len(b), b))
    return b"".join(out)


@dataclass
class Served:
    """A ``python -m xspec serve`` child, its port, its stderr file and its trace file."""

    proc: subprocess.Popen[bytes]
    port: int
    stderr: Path
    trace: Path | None
    sockets: list[socket.socket] = field(default_factory=list)

    def connect(self) -> socket.socket:
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        self.sockets.append(s)
        return s

    def call(self, *args: str | bytes) -> bytes:
        """One command on a fresh connection; the first chunk of its reply."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(command(*args))
            return s.recv(65536)

    def info_field(self, name: str) -> int:
        for line in self.call("INFO", "clients").decode().splitlines():
            if line.startswith(name + ":"):
                return int(line.split(":", 1)[1])
        raise AssertionError(f"INFO clients has no {name}")

    def wait_for(self, name: str, value: int) -> None:
        """Until INFO clients shows ``name`` >= ``value`` (it counts the asking connection too)."""
        deadline = time.monotonic() + 10
        while self.info_field(name) < value:
            assert time.monotonic() < deadline, f"the server never reached {name} {value}"
            time.sleep(0.02)

    def log(self) -> str:
        return self.stderr.read_text(errors="replace")


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """Start ``xspec serve --port 0 [options]`` (with ``--trace`` unless ``trace=False``); killed by pid after."""
    started: list[Served] = []

    def start(*options: str, trace: bool = True, env: dict[str, str] | None = None) -> Served:
        n = len(started)
        trace_path = tmp_path / f"trace-{n}.jsonl" if trace else None
        stderr = tmp_path / f"stderr-{n}.txt"
        argv = [sys.executable, "-m", "xspec", "serve", "--port", "0", *options]
        if trace_path is not None:
            argv += ["--trace", str(trace_path)]
        with open(stderr, "wb") as err:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                    env=env)
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()  # "xspec serve: listening on 127.0.0.1:PORT (...)"
        served = Served(proc, int(line.split("127.0.0.1:")[1].split()[0]) if line else 0, stderr, trace_path)
        started.append(served)
        return served

    yield start
    for served in started:
        for s in served.sockets:
            s.close()
        if served.proc.poll() is None:
            served.proc.kill()
        served.proc.wait()
        if served.proc.stdout is not None:
            served.proc.stdout.close()


def stop_with(served: Served, sig: int = signal.SIGTERM) -> tuple[int, float]:
    """Send ``sig``; the exit status and how long the process took to be gone (killed past BOUND + 4 s)."""
    started = time.monotonic()
    os.kill(served.proc.pid, sig)
    try:
        status = served.proc.wait(timeout=BOUND + 4)
    except subprocess.TimeoutExpired:
        served.proc.kill()
        served.proc.wait()
        pytest.fail(f"the server ignored signal {sig} for {BOUND + 4} s")
    return status, time.monotonic() - started


def assert_stopped_cleanly(served: Served, sig: int = signal.SIGTERM) -> None:
    status, took = stop_with(served, sig)
    log = served.log()
    assert status == 0, log
    assert took <= BOUND, f"shutdown took {took:.2f} s"
    assert f"Received {signal.Signals(sig).name} scheduling shutdown..." in log
    if served.trace is not None:
        assert_trace_well_formed(served.trace)


def assert_trace_well_formed(path: Path) -> None:
    """Every line complete JSON, the file a valid trace, a ``close`` for every ``connect``."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), "the trace ends inside a line"
    for number, line in enumerate(data.splitlines(), 1):
        try:
            json.loads(line)
        except ValueError:
            pytest.fail(f"{path}:{number} is not complete JSON: {line[:200]!r}")
    trace = load(path)
    connected = {e.c for e in trace.events if isinstance(e, Connect)}
    closed = [e.c for e in trace.events if isinstance(e, Close)]
    assert len(closed) == len(set(closed)), "a connection closed twice"
    assert set(closed) == connected, f"no close for {sorted(connected - set(closed))[:10]}"


# -- the states a SIGTERM can find the server in --------------------------------------------------

def test_idle_server_stops_on_sigterm_with_status_0_and_redis_log_line(serve: Callable[..., Served]) -> None:
    served = serve()
    served.call("XADD", "s", "*", "f", "v")
    assert_stopped_cleanly(served)
    assert "bye bye" in served.log()


def test_thousands_of_idle_connections(serve: Callable[..., Served]) -> None:
    served = serve()
    for _ in range(2000):
        served.connect()
    served.wait_for("connected_clients", 2001)
    assert_stopped_cleanly(served)


def test_clients_blocked_forever_in_xread_and_xreadgroup(serve: Callable[..., Served]) -> None:
    served = serve()
    assert served.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == b"+OK\r\n"
    for i in range(20):
        served.connect().sendall(command("XREAD", "BLOCK", "0", "STREAMS", f"k{i}", "$"))
        served.connect().sendall(command("XREADGROUP", "GROUP", "g", f"c{i}", "BLOCK", "0", "STREAMS", "s", ">"))
    served.wait_for("blocked_clients", 40)
    assert_stopped_cleanly(served)


def test_half_closed_connections(serve: Callable[..., Served]) -> None:
    served = serve()
    assert served.call("SET", "big", "x" * 200_000) == b"+OK\r\n"
    for i in range(20):
        s = served.connect()
        # Blocked, then the client's side of the connection shut; and one that never reads its replies.
        s.sendall(command("XREAD", "BLOCK", "0", "STREAMS", f"k{i}", "$") if i else command("GET", "big") * 100)
        s.shutdown(socket.SHUT_WR)
    time.sleep(0.3)
    assert_stopped_cleanly(served)


def test_slow_reader_with_a_full_output_buffer(serve: Callable[..., Served]) -> None:
    served = serve()
    assert served.call("SET", "big", "x" * 100_000) == b"+OK\r\n"
    s = served.connect()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(command("GET", "big") * 300)  # 30 MB of replies, never read
    s.sendall(command("XREAD", "BLOCK", "0", "STREAMS", "s", "$"))
    time.sleep(0.3)
    assert_stopped_cleanly(served)


@dataclass
class Flood:
    """One connection pipelining XADDs as fast as the server takes them, its replies drained."""

    sock: socket.socket
    received: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def send(self) -> None:
        batch = command("XADD", "s", "*", "field", "value") * 2000
        try:
            for _ in range(500):  # bounded: at most a million commands
                if self.stop.is_set():
                    return
                self.sock.sendall(batch)
        except OSError:
            pass

    def drain(self) -> None:
        try:
            while not self.stop.is_set():
                data = self.sock.recv(1 << 20)
                if not data:
                    return
                self.received += len(data)
        except OSError:
            pass


@pytest.mark.parametrize(("sig", "trace"), [(signal.SIGTERM, True), (signal.SIGTERM, False), (signal.SIGINT, True)])
def test_pipelined_flood_in_progress(serve: Callable[..., Served], sig: int, trace: bool) -> None:
    served = serve(trace=trace)
    flood = Flood(served.connect())
    threads = [threading.Thread(target=flood.send, daemon=True), threading.Thread(target=flood.drain, daemon=True)]
    with ExitStack() as stack:
        for t in threads:
            t.start()
            stack.callback(t.join, 5)
        stack.callback(flood.stop.set)
        deadline = time.monotonic() + 10
        while not flood.received:  # the server answers
            assert time.monotonic() < deadline, "the flood never got going"
            time.sleep(0.01)
        time.sleep(0.5)  # and megabytes of requests wait in the kernel's buffers
        assert_stopped_cleanly(served, sig)


def test_virtual_clock_with_blocked_clients_and_timeouts(serve: Callable[..., Served]) -> None:
    served = serve("--clock", "virtual")
    for i in range(10):
        served.connect().sendall(command("XREAD", "BLOCK", str(1000 * (i + 1)), "STREAMS", "s", "$"))
    served.wait_for("blocked_clients", 10)
    assert served.call("XSPEC.CLOCK", "ADVANCE", "3500").startswith(b":")
    assert served.info_field("blocked_clients") == 7
    assert_stopped_cleanly(served)
    assert served.trace is not None and load(served.trace).header.clock == "virtual"


def test_a_second_signal_during_shutdown_exits_at_once_with_status_1(serve: Callable[..., Served]) -> None:
    served = serve("--enable-debug-command", "yes")
    for _ in range(5):
        served.connect().sendall(command("XREAD", "BLOCK", "0", "STREAMS", "s", "$"))
    served.wait_for("blocked_clients", 5)
    # A command that runs for seconds holds the shutdown the first signal starts (the handler runs
    # at once, the shutdown waits for the command), so the second signal surely lands inside it,
    # however slowly a loaded machine schedules the process.
    served.connect().sendall(command("DEBUG", "SLEEP", "5"))
    time.sleep(0.2)
    os.kill(served.proc.pid, signal.SIGINT)
    time.sleep(0.3)
    assert served.proc.poll() is None, served.log()  # still shutting down
    status, took = stop_with(served, signal.SIGTERM)
    assert (status, took <= BOUND) == (1, True), (took, served.log())
    assert "You insist... exiting now." in served.log()


def test_a_command_that_does_not_end_is_cut_short_by_the_shutdown_deadline(serve: Callable[..., Served]) -> None:
    from xspec.reference.server import SHUTDOWN_DEADLINE_SECONDS

    served = serve("--enable-debug-command", "yes")
    served.connect().sendall(command("DEBUG", "SLEEP", "60"))  # the whole server sleeps
    time.sleep(0.2)
    started = time.monotonic()
    os.kill(served.proc.pid, signal.SIGTERM)
    try:
        status = served.proc.wait(timeout=SHUTDOWN_DEADLINE_SECONDS + 4)
    except subprocess.TimeoutExpired:
        pytest.fail("the server slept on through SIGTERM")
    took = time.monotonic() - started
    assert status == -signal.SIGALRM, served.log()
    assert SHUTDOWN_DEADLINE_SECONDS - 0.5 <= took <= SHUTDOWN_DEADLINE_SECONDS + BOUND


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_exit_status_and_log_line_are_redis_s(serve: Callable[..., Served], tmp_path: Path, sig: int) -> None:
    binary = redis_binary()
    if binary is None:
        pytest.skip("no redis-server 7.0 on this machine")
    redis, port = start_redis(binary, str(tmp_path))
    try:
        redis.send_signal(sig)
        redis_status = redis.wait(timeout=10)
    finally:
        if redis.poll() is None:
            redis.kill()
            redis.wait()
    served = serve(trace=False)  # and no --trace
    assert_stopped_cleanly(served, sig)
    assert redis_status == 0
    line = f"Received {signal.Signals(sig).name} scheduling shutdown..."
    assert line in (tmp_path / f"redis-{port}.log").read_text()


def test_server_whose_parent_is_already_gone_stops_at_start(serve: Callable[..., Served]) -> None:
    # The parent died before the server could watch it: its pid names no process any more.
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()
    served = serve(trace=False, env={**os.environ, "XSPEC_SERVE_PARENT_PID": str(gone.pid)})
    try:
        status = served.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("the server outlived the parent it was told to watch")
    assert status == 0
    assert f"parent process {gone.pid} is gone" in served.log()


def test_server_watching_a_process_further_up_lives_as_long_as_it(serve: Callable[..., Served]) -> None:
    # As behind a launcher: the pid given is alive but not the server's parent.
    ancestor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        served = serve(trace=False, env={**os.environ, "XSPEC_SERVE_PARENT_PID": str(ancestor.pid)})
        time.sleep(1.0)
        assert served.call("PING") == b"+PONG\r\n"
    finally:
        ancestor.kill()
        ancestor.wait()
    killed = time.monotonic()
    try:
        assert served.proc.wait(timeout=10) == 0
    except subprocess.TimeoutExpired:
        pytest.fail("the server outlived the process it was told to watch")
    assert time.monotonic() - killed <= 0.5 + BOUND  # PARENT_POLL_SECONDS, then the shutdown


# -- no orphans ---------------------------------------------------------------------------------------

PARENT = """
import gc, sys, threading, time
from xspec.traces.harness.servers import ReferenceProcess
how = sys.argv[1]
if how == "embedded":
    from xspec.traces.harness.targets import parse_target
    target = parse_target("embedded:")
    child = target.process
elif how == "thread":
    started = []
    worker = threading.Thread(target=lambda: started.append(ReferenceProcess().start()))
    worker.start()
    worker.join()
    child = started[0]
else:
    child = ReferenceProcess().start()
print(child.proc.pid, child.port, flush=True)
if how == "exit":
    sys.exit(0)
if how == "drop":
    del child
    gc.collect()
    print("dropped", flush=True)
time.sleep(60)
"""


def process_state(pid: int) -> str | None:
    """The process's state letter (``Z``: a zombie, gone but not reaped), None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(") ", 1)[1][0]


def assert_gone(pid: int, port: int, since: float) -> None:
    while process_state(pid) not in (None, "Z"):
        assert time.monotonic() - since < ORPHAN_BOUND, f"the child {pid} outlived its parent"
        time.sleep(0.02)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))


@pytest.fixture
def parent() -> Iterator[Callable[[str], tuple[subprocess.Popen[bytes], int, int]]]:
    """A parent process holding a reference server: (the parent, the child's pid, its port)."""
    started: list[tuple[subprocess.Popen[bytes], int]] = []

    def start(how: str) -> tuple[subprocess.Popen[bytes], int, int]:
        proc = subprocess.Popen([sys.executable, "-c", PARENT, how], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE)
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        assert line, "the parent did not start its child"
        child, port = int(line[0]), int(line[1])
        started.append((proc, child))
        return proc, child, port

    yield start
    for proc, child in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if process_state(child) not in (None, "Z"):
            os.kill(child, signal.SIGKILL)  # only after a failure: that pid is the child we saw started


@pytest.mark.parametrize("how", ["plain", "embedded"])
def test_child_goes_when_its_parent_is_sigkilled(parent: Callable[[str], tuple[subprocess.Popen[bytes], int, int]],
                                                  how: str) -> None:
    proc, child, port = parent(how)
    killed = time.monotonic()
    proc.kill()
    proc.wait()
    assert_gone(child, port, killed)


def test_child_goes_when_its_parent_exits_without_stopping_it(
        parent: Callable[[str], tuple[subprocess.Popen[bytes], int, int]]) -> None:
    proc, child, port = parent("exit")
    assert proc.wait(timeout=10) == 0
    assert_gone(child, port, time.monotonic())


def test_child_goes_when_its_reference_process_is_dropped(
        parent: Callable[[str], tuple[subprocess.Popen[bytes], int, int]]) -> None:
    proc, child, port = parent("drop")
    assert proc.stdout is not None and proc.stdout.readline() == b"dropped\n"
    assert proc.poll() is None
    assert_gone(child, port, time.monotonic())


def test_child_started_from_a_thread_outlives_the_thread_not_the_parent(
        parent: Callable[[str], tuple[subprocess.Popen[bytes], int, int]]) -> None:
    proc, child, port = parent("thread")  # the thread that started the child has ended
    time.sleep(0.5)
    assert process_state(child) not in (None, "Z"), "the child went with the thread that started it"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(command("PING"))
        assert s.recv(16) == b"+PONG\r\n"
    killed = time.monotonic()
    proc.kill()
    proc.wait()
    assert_gone(child, port, killed)
