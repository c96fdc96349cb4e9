"""The reference server beside Redis 7.0.15 and fakeredis, measured in one run.

    python benchmarks/server.py [--requests 200000] [--runs 5] [--xadd-only | --group-only] [--only NAME,...]
                                [--skip-fakeredis] [--types [--compiled-site DIR]] [--durability]

Starts, each on a free loopback port, a real redis-server 7.0.15, fakeredis's
``TcpFakeServer`` (Redis 7.0 mode, in a subprocess of its own) and the
reference server (``python -m xspec serve``), then drives every one with the
same load:

* redis-benchmark: XADD pipelined (``-P 16``), XADD not pipelined with 50
  clients, ``XRANGE s - + COUNT 10`` and ``XPENDING s g`` on a stream of 10^4
  entries that a group has all read;
* a consumer-group workload of our own: 32 consumers in two generator
  processes, each looping XREADGROUP COUNT 10 then XACK of the IDs it got,
  over a pre-filled stream; the figure is commands per second (on 2 cores the
  generator shares the machine with the server, as redis-benchmark does);
* memory: RSS growth of the server process while 10^6 entries with two short
  fields are added (pipelined), per entry;
* wake-up latency: a client blocked in XREADGROUP BLOCK 0 woken by another
  client's XADD, measured from sending the XADD to reading the woken reply;
  p50 and p99 over many rounds.

The redis-benchmark figures swing widely between runs on a shared machine
(Redis's pipelined XADD from 465k to 826k/s; fakeredis's XRANGE from 0.5k to
6.5k/s), and the ratios are what count: all servers run at once and each
redis-benchmark figure (the XADDs, then XRANGE and XPENDING) is measured
``--runs`` times per server (default 5), the servers taking turns (Redis,
reference, fakeredis, Redis, ...), so a quiet or busy spell falls on all of
them alike. The figure reported is the median of a server's runs, printed with
their range, and the ratios are of the medians. The server's CPU time per
command in those runs (from /proc) is reported too, with its ratio: it moves far
less than the rate when other processes share the cores (where the rate ratio
flatters the slower server, Redis being held back by the scheduler more than by
its own work). The consumer-group workload and the wake-up latency are measured
once per server, one server after the other (the workload's server CPU per
command is reported too); ``--group-only`` measures the consumer-group workload
alone, ``--runs`` times per server with the servers taking turns, and reports
the medians.

The reference server runs as this Python environment has it installed: pure
Python by default, or with its hot modules compiled by mypyc after
``XSPEC_MYPYC=1 pip install --no-build-isolation -c constraints.txt -e .``
(setup.py); the first line printed says which. Remove ``reference/*.so`` (or
reinstall without the variable) to go back.

``--types`` measures the other data types instead (SET, GET, LPUSH, LPOP, HSET, ZADD, PUBLISH and
EVALSHA from 50 clients, the servers taking turns; targets >= 0.6x Redis and >= 10x fakeredis;
LPOP pops a list filled before each run, and the load average is printed per command), then, unless
``--user-calls 0``, each server driven by one redis-py client as a test suite drives it (fakeredis
in process, as its users run it), with the client's and the server's CPU per call. With
``--compiled-site DIR`` (a folder holding the unzipped ``XSPEC_MYPYC=1`` wheel) the compiled build runs
too, as the peer ``xspec-compiled``, in the same turns, and both builds get their ratios;
``--durability`` measures persistence and replication against Redis (benchmarks/server_durability.py
says what).

It prints each figure and the ratios reference/Redis and reference/fakeredis.
Targets: >= 0.30x Redis on pipelined XADD, >= 0.6x not pipelined,
>= 20x fakeredis on all of them, <= 200 bytes per entry, p99 wake-up <= 2 ms.
No assertion is made; the figures are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xspec.spec.resp import Parser, Reply, encode_command
from xspec.traces.harness.servers import find_redis_server

ROOT = Path(__file__).resolve().parent.parent
INVOKED_FROM = Path.cwd()  # where relative paths given on the command line start (main runs in ROOT)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(encode_command([b"PING"]))
                if s.recv(64):
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server on port {port} did not answer PING within {timeout:.0f} s")


@dataclass
class Peer:
    """One server under test: how it is started and what was measured on it."""

    name: str
    argv: list[str]
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    workdir: Path | None = None  # its working directory while it runs: where its RDB and AOF files go
    results: dict[str, float] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # set in its environment (the compiled build's path)


# fakeredis's TCP server leaves Nagle's algorithm on: its replies then wait for the client's delayed
# ACK, and it serves about 500 requests/s while its CPU idles (20x below what it can do). Redis and
# the reference server set TCP_NODELAY on every connection, and so does this peer, to be compared fairly.
FAKEREDIS_MAIN = """
import socket
import sys
from fakeredis import TcpFakeServer

class NoDelayFakeServer(TcpFakeServer):
    def get_request(self):
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr

server = NoDelayFakeServer(("127.0.0.1", int(sys.argv[1])), server_type="redis", server_version=(7, 0))
server.daemon_threads = True
server.serve_forever()
"""


def peers(skip_fakeredis: bool, compiled_site: Path | None = None) -> list[Peer]:
    redis_server = find_redis_server("7.0") or "/usr/bin/redis-server"
    out = [
        Peer("redis-7.0.15", [redis_server, "--bind", "127.0.0.1", "--port", "{port}", "--save", "",
                              "--appendonly", "no", "--protected-mode", "no"]),
        Peer("xspec-serve", [sys.executable, "-m", "xspec", "serve", "--host", "127.0.0.1",
                             "--port", "{port}"]),
    ]
    if compiled_site is not None:  # --compiled-site: the mypyc build beside this environment's own
        out.append(Peer(COMPILED_PEER, out[1].argv, env={"PYTHONPATH": str(compiled_site)}))
    if not skip_fakeredis:
        out.append(Peer("fakeredis", [sys.executable, "-c", FAKEREDIS_MAIN, "{port}"]))
    return out


COMPILED_PEER = "xspec-compiled"
OURS = ("xspec-serve", COMPILED_PEER)  # the reference server's peers, each compared with the others


def compiled_site_error(site: Path) -> str | None:
    """Why ``site`` is not a folder holding the compiled build's ``xspec`` package (None: it is)."""
    if not (site / "xspec" / "reference").is_dir():
        return f"--compiled-site {site}: no xspec/reference folder there (unzip the XSPEC_MYPYC=1 wheel into it)"
    if not any((site / "xspec" / "reference").glob("connection*.so")):
        return f"--compiled-site {site}: xspec/reference/connection is not compiled there (an XSPEC_MYPYC=1 wheel?)"
    return None


@contextlib.contextmanager
def running(peer: Peer) -> Iterator[Peer]:
    peer.port = free_port()
    argv = [a.replace("{port}", str(peer.port)) for a in peer.argv]
    with tempfile.TemporaryDirectory() as tmp:
        peer.workdir = Path(tmp)
        peer.proc = subprocess.Popen(argv, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env={**os.environ, **peer.env} if peer.env else None)
        try:
            wait_ready(peer.port, peer.proc)
            yield peer
        finally:
            peer.proc.terminate()
            try:
                peer.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                peer.proc.kill()
                peer.proc.wait()


class Conn:
    """A minimal blocking RESP client that pipelines."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.parser = Parser()

    def send(self, *cmds: list[bytes]) -> None:
        self.sock.sendall(b"".join(encode_command(c) for c in cmds))

    def read(self) -> Reply:
        while True:
            r = self.parser.get()
            if r is not None:
                return r
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("server closed the connection")
            self.parser.feed(data)

    def call(self, *argv: bytes) -> Reply:
        self.send(list(argv))
        return self.read()

    def pipeline(self, cmds: list[list[bytes]], chunk: int = 1000) -> None:
        for i in range(0, len(cmds), chunk):
            part = cmds[i:i + chunk]
            self.send(*part)
            for _ in part:
                self.read()

    def close(self) -> None:
        self.sock.close()


class MeasurementFailed(Exception):
    """One figure could not be measured on one peer; the run goes on without it."""


def measure(results: dict[str, float], name: str, port: int, requests: int, *args: str) -> None:
    """Store one redis-benchmark figure, or say why it is missing (a slow peer must not end the whole run)."""
    try:
        results[name] = redis_benchmark(port, requests, *args)
    except MeasurementFailed as e:
        print(f"  {name}: not measured: {e}", flush=True)


def redis_benchmark(port: int, requests: int, *args: str) -> float:
    """Requests per second redis-benchmark reports for one command line."""
    cmd = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-n", str(requests), "--csv", *args]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired as e:
        raise MeasurementFailed(f"{' '.join(args)}: redis-benchmark did not finish in {e.timeout:.0f} s") from None
    if run.returncode != 0:
        said = (run.stderr.strip() or run.stdout.strip()).splitlines()[-3:]
        raise MeasurementFailed(f"{' '.join(args)}: redis-benchmark exited with {run.returncode}: {' / '.join(said)}")
    out = run.stdout
    # --csv: a header line, then "name","rps",... per test
    for line in out.strip().splitlines()[1:]:
        cells = [c.strip('"') for c in line.split(",")]
        return float(cells[1])
    raise RuntimeError(f"no figure in redis-benchmark output: {out!r}")


def prepare_group_stream(port: int, entries: int) -> None:
    c = Conn(port)
    c.call(b"FLUSHALL")
    c.pipeline([[b"XADD", b"s", b"*", b"f", b"v%d" % i] for i in range(entries)])
    c.call(b"XGROUP", b"CREATE", b"s", b"g", b"0")
    c.call(b"XREADGROUP", b"GROUP", b"g", b"c0", b"STREAMS", b"s", b">")
    c.close()


def _consumers(port: int, names: list[bytes], start: float, stop: float, counter: Any, ended: Any) -> None:
    """One generator process: consumers ``names``, one connection each, in lockstep.

    Each round sends every consumer's XREADGROUP COUNT 10, reads the replies,
    then sends each one's XACK of what it got and reads those: every consumer
    still waits for its read before acking, but the client-side cost of a
    round is shared, so the generator saturates the server rather than
    itself. hiredis parses the replies; each process is its own interpreter.
    """
    import hiredis

    conns = []
    for _ in names:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conns.append((sock, hiredis.Reader()))

    def read(sock: socket.socket, reader: Any) -> Any:
        while True:
            r = reader.gets()
            if r is not False:
                return r
            reader.feed(sock.recv(1 << 16))

    reads = [encode_command([b"XREADGROUP", b"GROUP", b"g", n, b"COUNT", b"10", b"STREAMS", b"w", b">"])
             for n in names]
    time.sleep(max(0.0, start - time.monotonic()))
    done = 0
    while time.monotonic() < stop:
        for (sock, _), cmd in zip(conns, reads, strict=True):
            sock.sendall(cmd)
        acks = []
        for sock, reader in conns:
            r = read(sock, reader)
            done += 1
            if r:
                acks.append((sock, reader, [e[0] for e in r[0][1]]))
        if not acks:
            break
        for sock, _, ids in acks:
            sock.sendall(encode_command([b"XACK", b"w", b"g", *ids]))
        for sock, reader, _ in acks:
            read(sock, reader)
            done += 1
    for sock, _ in conns:
        sock.close()
    with counter.get_lock():
        counter.value += done
        ended.value = max(ended.value, time.monotonic())


def consumer_group_workload(port: int, processes: int, per_process: int, seconds: float, entries: int,
                            cpu: list[float] | None = None, pid: int | None = None) -> float:
    """Commands per second of consumers doing XREADGROUP COUNT 10, then XACK of the IDs they got.

    The run ends after ``seconds`` or when the ``entries`` pre-filled are all
    consumed, whichever comes first; the rate is over the time actually run.
    With ``pid`` (the server's process), the server's CPU time per command of
    the run (microseconds, from /proc; the pre-filling is left out) is appended
    to ``cpu``.
    """
    import multiprocessing

    c = Conn(port)
    c.call(b"FLUSHALL")
    c.pipeline([[b"XADD", b"w", b"*", b"f", b"v%d" % i] for i in range(entries)])
    c.call(b"XGROUP", b"CREATE", b"w", b"g", b"0")
    c.close()
    ctx = multiprocessing.get_context("spawn")
    counter = ctx.Value("q", 0)
    ended = ctx.Value("d", 0.0)
    # Spawned interpreters take a while to start: give them a common start line.
    start = time.monotonic() + 1.5
    stop = start + seconds
    procs = [ctx.Process(target=_consumers,
                         args=(port, [b"c%d-%d" % (p, n) for n in range(per_process)], start, stop, counter, ended))
             for p in range(processes)]
    before = cpu_seconds(pid) if pid is not None else 0.0
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        raise RuntimeError("a load-generator process failed (see its traceback above)")
    if pid is not None and cpu is not None and counter.value:
        cpu.append((cpu_seconds(pid) - before) / counter.value * 1e6)
    return float(counter.value) / (ended.value - start)


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def memory_per_entry(peer: Peer, entries: int) -> float:
    assert peer.proc is not None
    c = Conn(peer.port)
    c.call(b"FLUSHALL")
    before = rss_bytes(peer.proc.pid)
    c.pipeline([[b"XADD", b"m", b"*", b"name", b"v%d" % i, b"n", b"%d" % (i % 1000)]
                for i in range(entries)], chunk=2000)
    after = rss_bytes(peer.proc.pid)
    c.call(b"FLUSHALL")
    c.close()
    return (after - before) / entries


def wakeup_latency_ms(port: int, rounds: int) -> tuple[float, float]:
    """p50 and p99 of XADD-to-woken-reply for a blocked XREADGROUP."""
    waiter, writer = Conn(port), Conn(port)
    writer.call(b"FLUSHALL")
    writer.call(b"XGROUP", b"CREATE", b"b", b"g", b"$", b"MKSTREAM")
    samples = []
    for _ in range(rounds):
        waiter.send([b"XREADGROUP", b"GROUP", b"g", b"c", b"BLOCK", b"0", b"STREAMS", b"b", b">"])
        time.sleep(0.001)  # let the read arrive and block before the write
        t0 = time.perf_counter()
        writer.send([b"XADD", b"b", b"*", b"f", b"v"])
        waiter.read()
        samples.append((time.perf_counter() - t0) * 1000)
        writer.read()
    waiter.close()
    writer.close()
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def reference_build() -> str:
    """Which build of the reference server this environment runs: compiled (mypyc) or pure Python."""
    import xspec.reference.streams as streams

    if Path(streams.__file__ or "").suffix in (".so", ".pyd"):
        return "compiled with mypyc (setup.py, XSPEC_MYPYC=1)"
    return "pure Python (see the docstring for the compiled build)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=200_000, help="requests per redis-benchmark test")
    ap.add_argument("--entries", type=int, default=1_000_000, help="entries for the memory figure")
    ap.add_argument("--seconds", type=float, default=5.0, help="duration of the consumer-group workload")
    ap.add_argument("--rounds", type=int, default=2000, help="wake-up latency samples")
    ap.add_argument("--runs", "--xadd-runs", dest="runs", type=int, default=5,
                    help="runs of each redis-benchmark figure per server, servers taking turns; the median is "
                         "reported")
    ap.add_argument("--xadd-only", action="store_true", help="measure the two XADD figures only")
    ap.add_argument("--group-only", action="store_true",
                    help="measure the consumer-group workload only, --runs times per server, servers taking turns")
    ap.add_argument("--skip-fakeredis", action="store_true")
    ap.add_argument("--only", help="comma-separated peer names to run (the ratios need xspec-serve)")
    ap.add_argument("--types", action="store_true",
                    help="measure the other data types' commands only (SET, GET, LPUSH, LPOP, HSET, ZADD, PUBLISH, "
                         "EVALSHA from 50 clients), servers taking turns")
    ap.add_argument("--compiled-site", type=Path,
                    help="with --types or --durability: also run the mypyc build found in this folder (an "
                         "XSPEC_MYPYC=1 wheel unzipped there) as the peer xspec-compiled, beside this environment's "
                         "own build")
    ap.add_argument("--user-calls", type=int, default=5000,
                    help="with --types: calls per command from one redis-py client (fakeredis in process), "
                         "0 to leave this part out")
    ap.add_argument("--durability", action="store_true",
                    help="measure persistence and replication only (benchmarks/server_durability.py): appendfsync "
                         "always, RDB size, XADD with a replica attached, full sync of --entries entries")
    args = ap.parse_args()
    if args.user_calls < 0:
        ap.error("--user-calls must be 0 or more")
    if args.compiled_site is not None:
        if not args.types and not args.durability:
            ap.error("--compiled-site goes with --types or --durability")
        args.compiled_site = (INVOKED_FROM / args.compiled_site).resolve()
        why = compiled_site_error(args.compiled_site)
        if why is not None:
            ap.error(why)
    if shutil.which("redis-benchmark") is None:
        print("error: redis-benchmark not found (apt-get install redis-tools)", file=sys.stderr)
        return 2
    print(f"xspec-serve: {reference_build()}", flush=True)
    if args.durability:
        import server_durability

        return server_durability.run(args)
    table = peers(args.skip_fakeredis, args.compiled_site)
    if args.only:
        table = [p for p in table if p.name in args.only.split(",")]
    with contextlib.ExitStack() as stack:
        for peer in table:
            stack.enter_context(running(peer))
            if args.group_only or args.types:
                continue
            # Memory first, on the fresh process: a Python server keeps freed
            # memory in its arenas, so RSS would not grow after earlier loads.
            if peer.name != "fakeredis" and not args.xadd_only:
                peer.results["bytes/entry"] = memory_per_entry(peer, args.entries)
        if args.group_only:
            interleaved_group_workload(table, args.seconds, args.runs)
            report(table)
            return 0
        if args.types:
            for peer in table:
                load_type_script(peer.port)
            interleaved(table, args.requests, args.runs, TYPE_LOADS)
            report(table, tuple(TYPE_LOADS))
            if args.user_calls:
                user_view(table, args.user_calls)
            return 0
        interleaved(table, args.requests, args.runs, XADD_LOADS)
        if not args.xadd_only:
            for peer in table:
                prepare_group_stream(peer.port, 10_000)
            interleaved(table, args.requests, args.runs, READ_LOADS)
        for peer in [] if args.xadd_only else table:
            print(f"== {peer.name}", flush=True)
            measure_the_rest(peer, args)
            for k, v in peer.results.items():
                print(f"  {k:18} {v:14.1f}", flush=True)
    report(table)
    return 0


# metric -> (key emptied before each run, so that every run does the same work; redis-benchmark arguments)
XADD_LOADS: dict[str, tuple[str | None, list[str]]] = {
    "xadd -P 16": ("p", ["-P", "16", "XADD", "p", "*", "f", "v"]),
    "xadd -c 50": ("q", ["-c", "50", "XADD", "q", "*", "f", "v"]),
}
# Reads of the stream prepare_group_stream made: nothing to empty.
READ_LOADS: dict[str, tuple[str | None, list[str]]] = {
    "xrange count 10": (None, ["XRANGE", "s", "-", "+", "COUNT", "10"]),
    "xpending": (None, ["XPENDING", "s", "g"]),
}
# The script EVALSHA runs: one write, as the frameworks' scripts mostly are.
TYPE_SCRIPT = b"return redis.call('INCR', KEYS[1])"
# The other data types, from 50 clients (issue 19's figures; the target is >= 0.6x Redis, >= 10x fakeredis).
TYPE_LOADS: dict[str, tuple[str | None, list[str]]] = {
    "set -c 50": (None, ["-c", "50", "SET", "k", "v"]),
    "get -c 50": (None, ["-c", "50", "GET", "k"]),
    "lpush -c 50": ("l", ["-c", "50", "LPUSH", "l", "v"]),
    "lpop -c 50": ("l", ["-c", "50", "LPOP", "l"]),
    "hset -c 50": ("h", ["-c", "50", "-r", "100000", "HSET", "h", "f__rand_int__", "v"]),
    "zadd -c 50": ("z", ["-c", "50", "-r", "100000", "ZADD", "z", "__rand_int__", "m__rand_int__"]),
    "publish -c 50": (None, ["-c", "50", "PUBLISH", "chan", "message"]),
    "evalsha -c 50": ("n", ["-c", "50", "EVALSHA", hashlib.sha1(TYPE_SCRIPT).hexdigest(), "1", "n"]),
}


# Filled (pipelined) before each run of a metric, so that every run does the same real work: LPOP then
# pops as many elements as it sends requests (without it, a run after the first pops an empty list).
PREFILL: dict[str, list[bytes]] = {"lpop -c 50": [b"RPUSH", b"l", b"v"]}
# After each run: a command whose integer reply must be 0 for the run to have done real work throughout.
AFTERWARDS: dict[str, list[bytes]] = {"lpop -c 50": [b"LLEN", b"l"]}


# One redis-py client calling the types' commands one after another, as a test suite does: run in a
# process of its own against a server (``tcp PORT SERVER_PID``), or against fakeredis in process
# (``fake``: ``FakeRedis()``, the way fakeredis is used). Prints, per command, the CPU microseconds
# per call of this process (the client's work, or all of it in process) and of the server process.
USER_MAIN = """
import json, random, sys, time
from pathlib import Path
import redis
mode, calls = sys.argv[1], int(sys.argv[2])
script = sys.argv[3].encode()
if mode == "fake":
    import fakeredis
    r, pid = fakeredis.FakeRedis(version=(7, 0)), None
else:
    r, pid = redis.Redis(host="127.0.0.1", port=int(sys.argv[4])), int(sys.argv[5])

def server_cpu():
    if pid is None:
        return 0.0
    # nanoseconds, from each thread's schedstat: this server's threads live as long as it does
    return sum(int((t / "schedstat").read_text().split()[0]) for t in Path(f"/proc/{pid}/task").iterdir()) / 1e9

sha = r.script_load(script)
rand = random.Random(1)
calls_of = {
    "set": lambda i: r.set("k", "v"), "get": lambda i: r.get("k"), "lpush": lambda i: r.lpush("l", "v"),
    "lpop": lambda i: r.lpop("l"), "hset": lambda i: r.hset("h", "f%d" % rand.randrange(100000), "v"),
    "zadd": lambda i: r.zadd("z", {"m%d" % rand.randrange(100000): rand.randrange(100000)}),
    "publish": lambda i: r.publish("chan", "message"), "evalsha": lambda i: r.evalsha(sha, 1, "n"),
}
out = {}
for name, call in calls_of.items():
    call(0)
    t0, s0 = time.process_time(), server_cpu()
    for i in range(calls):
        call(i)
    out[name] = ((time.process_time() - t0) / calls * 1e6, (server_cpu() - s0) / calls * 1e6)
print(json.dumps(out))
"""


def user_view(table: list[Peer], calls: int) -> None:
    """Each peer driven by one redis-py client, unpipelined (fakeredis in process, as its users run it):
    CPU microseconds per call, the client's and the server's, printed with the ratios."""
    import json

    seen: dict[str, dict[str, list[float]]] = {}
    for peer in table:
        assert peer.proc is not None
        argv = ["fake"] if peer.name == "fakeredis" else ["tcp"]
        tail = [] if peer.name == "fakeredis" else [str(peer.port), str(peer.proc.pid)]
        run = subprocess.run([sys.executable, "-c", USER_MAIN, *argv, str(calls), TYPE_SCRIPT.decode(), *tail],
                             capture_output=True, text=True, timeout=900)
        if run.returncode != 0:
            print(f"  {peer.name}: the redis-py client failed: {run.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        seen[peer.name] = json.loads(run.stdout)
    print(f"\none redis-py client, unpipelined, {calls} calls per command (CPU us per call: client + server; "
          "fakeredis in process: all of it); load average (1 min) " f"{os.getloadavg()[0]:.1f}")
    for metric in seen.get("xspec-serve", {}):
        row = f"  {metric:8}"
        for name, figures in seen.items():
            client, server = figures[metric]
            row += f"  {name}: {client:6.1f} + {server:5.1f}" if name != "fakeredis" else f"  {name}: {client:6.1f}"
        for build in OURS:
            total = sum(seen[build][metric]) if build in seen else 0.0
            for name in ("redis-7.0.15", "fakeredis"):
                if name in seen and total:
                    row += f"  ({name} / {build}, totals: {sum(seen[name][metric]) / total:4.2f}x)"
        print(row, flush=True)


def load_type_script(port: int) -> None:
    """SCRIPT LOAD the script TYPE_LOADS's EVALSHA runs (a server without scripting answers an error,
    and its EVALSHA figure is then reported as not measured)."""
    c = Conn(port)
    c.call(b"SCRIPT", b"LOAD", TYPE_SCRIPT)
    c.close()


def requests_for(peer: Peer, requests: int) -> int:
    """fakeredis is ~100x slower: it gets fewer requests so the run ends."""
    return requests if peer.name != "fakeredis" else max(requests // 50, 2000)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def interleaved(table: list[Peer], requests: int, runs: int,
                loads: dict[str, tuple[str | None, list[str]]]) -> None:
    """Each redis-benchmark figure of ``loads`` ``runs`` times per server, the servers taking turns;
    the median is kept.

    Beside the rate, the server's CPU time per command is recorded (``... cpu us``): unlike
    the rate it hardly moves when other processes share the cores, so its ratio is the
    steadier one on a busy machine.
    """
    for metric, (key, options) in loads.items():
        figures: dict[str, list[float]] = {p.name: [] for p in table}
        cpu: dict[str, list[float]] = {p.name: [] for p in table}
        load: list[float] = []
        for _ in range(runs):
            for peer in table:
                assert peer.proc is not None
                n = requests_for(peer, requests)
                if key is not None:
                    c = Conn(peer.port)
                    c.call(b"DEL", key.encode())
                    if metric in PREFILL:
                        c.pipeline([PREFILL[metric]] * n)
                    c.close()
                got: dict[str, float] = {}
                load.append(os.getloadavg()[0])
                before = cpu_seconds(peer.proc.pid)
                measure(got, metric, peer.port, n, *options)
                used = cpu_seconds(peer.proc.pid) - before
                if metric in AFTERWARDS:
                    c = Conn(peer.port)
                    left = c.call(*AFTERWARDS[metric])
                    c.close()
                    if getattr(left, "value", None) != 0:
                        print(f"  {peer.name} {metric}: {left!r} after the run, not 0: the run did less work",
                              flush=True)
                if metric in got:
                    figures[peer.name].append(got[metric])
                    cpu[peer.name].append(used / n * 1e6)
        keep_medians(table, metric, figures, cpu)
        print(f"{'':14} {metric}: load average (1 min) {min(load):.1f} .. {max(load):.1f} on "
              f"{os.cpu_count()} cores", flush=True)


def keep_medians(table: list[Peer], metric: str, figures: dict[str, list[float]],
                 cpu: dict[str, list[float]]) -> None:
    """Record and print each server's median rate of ``metric`` over its runs, and its median CPU per command."""
    for peer in table:
        rates = figures[peer.name]
        if not rates:
            continue
        peer.results[metric] = statistics.median(rates)
        if cpu[peer.name]:
            peer.results[metric + " cpu us"] = statistics.median(cpu[peer.name])
        print(f"{peer.name:14} {metric}: median {peer.results[metric]:.0f}/s of {len(rates)} runs "
              f"({min(rates):.0f} .. {max(rates):.0f}), server CPU "
              f"{peer.results.get(metric + ' cpu us', 0.0):.2f} us/command", flush=True)


def group_fill(peer: Peer) -> int:
    """Entries pre-filled for the group workload: more than any server consumes in the run's seconds."""
    return 1_000_000 if peer.name != "fakeredis" else 20_000


def group_workload(peer: Peer, seconds: float, cpu: list[float]) -> float:
    """One run of the consumer-group workload on ``peer``; its server CPU per command goes to ``cpu``."""
    assert peer.proc is not None
    return consumer_group_workload(peer.port, 2, 16, seconds, group_fill(peer), cpu, peer.proc.pid)


def interleaved_group_workload(table: list[Peer], seconds: float, runs: int) -> None:
    """The consumer-group workload ``runs`` times per server, the servers taking turns; medians kept."""
    figures: dict[str, list[float]] = {p.name: [] for p in table}
    cpu: dict[str, list[float]] = {p.name: [] for p in table}
    for _ in range(runs):
        for peer in table:
            figures[peer.name].append(group_workload(peer, seconds, cpu[peer.name]))
    keep_medians(table, "xreadgroup+xack", figures, cpu)


def measure_the_rest(peer: Peer, args: argparse.Namespace) -> None:
    """The figures measured once per server: the group workload, wake-up latency."""
    cpu: list[float] = []
    peer.results["xreadgroup+xack"] = group_workload(peer, args.seconds, cpu)
    if cpu:
        peer.results["xreadgroup+xack cpu us"] = cpu[0]
    if peer.name != "fakeredis":
        p50, p99 = wakeup_latency_ms(peer.port, args.rounds)
        peer.results["wake p50 ms"] = p50
        peer.results["wake p99 ms"] = p99


STREAM_METRICS = ("xadd -P 16", "xadd -c 50", "xrange count 10", "xpending", "xreadgroup+xack")


def report_ratios(ours: str, by: dict[str, dict[str, float]], metrics: tuple[str, ...]) -> None:
    """The ratios of the figures of ``ours`` (a build of the reference server) to the other servers'."""
    ref = by[ours]
    print(f"\nratios ({ours} / peer; throughput: higher is better)")
    for metric in metrics:
        if metric not in ref:
            continue
        row = f"  {metric:18}"
        for other in ("redis-7.0.15", "fakeredis"):
            if other in by and by[other].get(metric) and metric in ref:
                row += f"  vs {other}: {ref[metric] / by[other][metric]:6.2f}x"
        print(row)
        cpu = metric + " cpu us"
        if cpu in ref:
            row = f"  {'  by CPU/command':18}"  # the other server's CPU per command over ours
            for other in ("redis-7.0.15", "fakeredis"):
                if other in by and cpu in by[other] and ref[cpu]:
                    row += f"  vs {other}: {by[other][cpu] / ref[cpu]:6.2f}x"
            print(row)


def report(table: list[Peer], metrics: tuple[str, ...] = STREAM_METRICS) -> None:
    """The ratios of the reference server's figures to the other servers'."""
    by = {p.name: p.results for p in table}
    if "xspec-serve" not in by:
        return
    for ours in OURS:
        if ours in by:
            report_ratios(ours, by, metrics)
    ref = by["xspec-serve"]
    redis = by.get("redis-7.0.15", {})
    if "bytes/entry" not in ref:
        return
    print(f"  {'bytes/entry':18}  xspec-serve {ref.get('bytes/entry', 0):.0f}  redis {redis.get('bytes/entry', 0):.0f}"
          "  (target <= 200)")
    print(f"  {'wake p99 ms':18}  xspec-serve {ref.get('wake p99 ms', 0):.2f}  redis {redis.get('wake p99 ms', 0):.2f}"
          "  (target <= 2 ms)")


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
