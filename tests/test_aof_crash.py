"""kill -9 of `xspec serve` under load, with the AOF on (reference/aof.py), judged by the model.

A separate server process takes XADDs from several writers while consumers read with XREADGROUP and
acknowledge with XACK; at a random moment it is killed with SIGKILL and started again on the same
folder, and a client reads the stream, the pending entries and the group back. Everything the
clients sent and read, the kill (``crash``) and the new start (``restart``) are recorded as one
trace/2, and the model judges it (trace format rule 10): the recovered state must be one the
node's persistence can keep. Under ``appendfsync always`` that means every write acknowledged to a
client is there after the restart; under ``everysec``, every write acknowledged more than two
seconds and a cron period before the kill (AOF-8), and of the later ones a prefix. Besides the
model's verdict the test counts the losses itself (each
XADD's entry, each acknowledged XACK, each delivery still pending unless acknowledged since, the
group's last-delivered-id not behind what was delivered), so a failure names what was lost.

Each trace holds one kill (a trace starts from an empty server, as the format says), half of them
after a BGREWRITEAOF (finished, or still running when the kill comes). The default suite runs 20
kills under ``always``, counted by the test, and the model judges short traces of two writers and a
consumer: under ``always`` and ``everysec`` each must conform; a recovered state missing an
acknowledged entry is rejected, and under ``everysec`` one missing the newest entry is accepted
but not one missing an older entry, nor the newest when the kill came three seconds later. The
slow tests do the same with three writers and two consumers, ``always`` and ``everysec`` by turns
(the search may give up on a trace, but must decide most forged ones), and the slow campaign
makes 500 kills, each trace judged, and reports what was lost.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from xspec.spec import trace_format
from xspec.spec.resp import Array, Bulk, Int, NullArray, Reply, Simple
from xspec.spec.trace_format import Call, Crash, Event, Header, NodeSpec, Recv, Restart, Send, Trace
from xspec.traces.check import checker, multinode
from xspec.traces.check.checker import check_trace
from xspec.traces.record.client import RespConnection, now_us
from xspec.traces.scenarios.runner import free_port

NODE = "a"
# One kill per trace: the model's search over a trace that goes on loading under load after a
# reload grows fast with each further crash (every backtrack past a restart replays the AOF).
KILLS_PER_TRACE = 1

# A process that has imported the server, and forks a fresh server process for each line on its stdin
# (``port folder appendfsync``), printing its pid: each server is a separate process that SIGKILL stops,
# started in milliseconds rather than the seconds a new interpreter takes.
_ZYGOTE = """
import os, signal, sys
from xspec.reference.server import ReferenceServer, run_server
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # killed servers are reaped at once
for line in sys.stdin:
    port, folder, fsync = line.split()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the server reaps its own BGSAVE children
        sys.stdin.close()
        os.setsid()
        run_server(ReferenceServer(port=int(port), config={"dir": folder, "save": "", "appendonly": "yes",
                                                           "appendfsync": fsync,
                                                           "aof-use-rdb-preamble": "yes"}))
        os._exit(0)
    print(pid, flush=True)
"""


class Zygote:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)

    def spawn(self, port: int, folder: Path, fsync: str) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{port} {folder} {fsync}\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(10)


class Gone(Exception):
    """The client's server was killed: what it reads now is not recorded (the trace has the crash)."""


@dataclass
class Acknowledged:
    """What clients were told, each with the time they were told it (trace µs), as the trace records it."""

    added: list[tuple[bytes, int]] = field(default_factory=list)
    delivered: list[tuple[bytes, int]] = field(default_factory=list)
    acked: list[tuple[bytes, int]] = field(default_factory=list)
    acking: set[bytes] = field(default_factory=set)  # XACKs sent, answered or not (one may be in flight)
    total_added: int = 0
    total_delivered: int = 0
    total_acked: int = 0


class CrashRecorder:
    """One trace/2 of one node: concurrent clients' sends and receives, the kills and the restarts.

    Each event is appended under one lock with its time read under that lock, so the events are
    in the order of their times. After a crash the node's old connections record nothing more:
    a reply still read from a dead server's socket is one the trace's ``crash`` already covers.
    """

    def __init__(self, policy: str) -> None:
        self.lock = threading.Lock()
        self.events: list[Event] = []
        self.generation = 0  # the server process's number; a client belongs to one
        self.clients = 0
        self.port = 0
        self.config = {"save": "", "appendonly": "yes", "appendfsync": policy, "aof-use-rdb-preamble": "yes"}
        self.seen = Acknowledged()
        self.kill_at: tuple[int, int] | None = None  # (events, pid): a client kills once the trace holds that many
        self.down = False
        self.killed_at = 0

    def client(self) -> RecordedClient:
        with self.lock:
            self.clients += 1
            return RecordedClient(self, self.clients, self.generation, self.port)

    def crash(self, pid: int) -> int:
        """SIGKILL, and the ``crash`` event as soon as the process has exited. The lock is held
        meanwhile, so no client records anything in between; replies the dead server had written
        and a client reads afterwards are not recorded (the trace leaves those commands
        unanswered, which the model may take as executed or not)."""
        with self.lock:
            if not self.down:
                self.kill_locked(pid)
        return self.killed_at

    def kill_locked(self, pid: int) -> None:
        """The kill and its ``crash`` event, with the lock held."""
        self.kill_at = None
        _kill(pid)
        self.generation += 1
        self.down = True
        self.killed_at = now_us()
        self.events.append(Crash(NODE, t=self.killed_at))

    def kill_if_due(self) -> None:
        """With the lock held, after an event: the kill, when the trace has reached ``kill_at``'s size."""
        if self.kill_at is not None and len(self.events) >= self.kill_at[0]:
            self.kill_locked(self.kill_at[1])

    def restart(self, zygote: Zygote, folder: Path) -> int:
        port = free_port()
        with self.lock:
            self.port = port
            self.down = False
            self.events.append(Restart(NODE, t=now_us()))
        pid = zygote.spawn(port, folder, self.config["appendfsync"])
        _wait_ready(port)
        return pid

    def trace(self, title: str) -> Trace:
        # slack 0: the server reads the recorder's clock (the same host's time of day)
        header = Header(clock="wall", slack_ms=0, title=title, source="recorded", tags=["crash", "aof"],
                        nodes={NODE: NodeSpec("redis", "7.0.15", [f"127.0.0.1:{self.port}"], dict(self.config))})
        return Trace(header, list(self.events))


class RecordedClient:
    """One connection of the trace (its own ``c``), used by one thread."""

    def __init__(self, rec: CrashRecorder, c: int, generation: int, port: int) -> None:
        self.rec = rec
        self.c = c
        self.generation = generation
        self.conn = RespConnection("127.0.0.1", port)

    def send(self, *args: bytes) -> None:
        argv = list(args)
        with self.rec.lock:
            if self.rec.generation != self.generation:
                raise Gone
            self.rec.events.append(Send(self.c, argv, t=now_us(), node=NODE))
            self.conn.send(argv)
            self.rec.kill_if_due()

    def recv(self, then: Callable[[Reply, int], None] | None = None) -> Reply:
        """The next reply, recorded; ``then(reply, t)`` runs under the recorder's lock."""
        reply = self.conn.recv(10)
        with self.rec.lock:
            if self.rec.generation != self.generation:
                raise Gone
            t = now_us()
            self.rec.events.append(Recv(self.c, reply, t=t))
            if then is not None:
                then(reply, t)
            self.rec.kill_if_due()
        return reply

    def call(self, *args: bytes) -> Reply:
        """A command with nothing else going on (the recorder's other clients are idle)."""
        argv = list(args)
        t0 = now_us()
        reply = self.conn.call(argv)
        t1 = now_us()
        with self.rec.lock:
            self.rec.events.append(Call(self.c, argv, reply, t0=t0, t1=t1, node=NODE))
        return reply

    def close(self) -> None:
        self.conn.close()


def _wait_ready(port: int) -> None:
    """PING until the server answers (the harness's own question: not in the trace)."""
    for _ in range(400):
        try:
            conn = RespConnection("127.0.0.1", port, timeout=2)
        except OSError:
            time.sleep(0.01)
            continue
        try:
            if conn.call([b"PING"]) == Simple("PONG"):
                return
        finally:
            conn.close()
        time.sleep(0.01)
    raise RuntimeError("the server did not answer")


def _info_field(port: int, name: bytes) -> bytes:
    conn = RespConnection("127.0.0.1", port)
    try:
        reply = conn.call([b"INFO", b"persistence"])
    finally:
        conn.close()
    assert isinstance(reply, Bulk)
    for line in reply.value.splitlines():
        if line.startswith(name + b":"):
            return line.partition(b":")[2]
    return b""


def _kill(pid: int) -> None:
    """SIGKILL ``pid`` and return as soon as it has exited (a pidfd becomes readable then)."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        os.kill(pid, signal.SIGKILL)
        select.select([pidfd], [], [], 10)
    except ProcessLookupError:
        pass
    finally:
        os.close(pidfd)


def _writer(rec: CrashRecorder, stop: threading.Event) -> None:
    seen = rec.seen

    def added(reply: Reply, t: int) -> None:
        assert isinstance(reply, Bulk), reply
        seen.added.append((reply.value, t))
        seen.total_added += 1

    try:
        r = rec.client()
        while not stop.is_set():
            r.send(b"XADD", b"s", b"*", b"w", b"x" * random.randrange(1, 40))
            r.recv(added)
    except (Gone, OSError):
        pass


def _consumer(rec: CrashRecorder, name: bytes, stop: threading.Event) -> None:
    seen = rec.seen
    ids: list[bytes] = []

    def delivered(reply: Reply, t: int) -> None:
        ids[:] = [] if isinstance(reply, NullArray) else [e.items[0].value for e in _entries(reply)]  # type: ignore[union-attr]
        seen.delivered += ((i, t) for i in ids)
        seen.total_delivered += len(ids)

    def acked(reply: Reply, t: int) -> None:
        assert isinstance(reply, Int), reply
        seen.acked += ((i, t) for i in ids)
        seen.total_acked += len(ids)

    try:
        r = rec.client()
        while not stop.is_set():
            r.send(b"XREADGROUP", b"GROUP", b"g", name, b"COUNT", b"5", b"STREAMS", b"s", b">")
            r.recv(delivered)
            if ids and random.random() < 0.7:
                with rec.lock:
                    seen.acking.update(ids)
                r.send(b"XACK", b"s", b"g", *ids)
                r.recv(acked)
    except (Gone, OSError):
        pass


def _entries(reply: Reply) -> list[Array]:
    """The entries of an XREADGROUP or XRANGE reply."""
    assert isinstance(reply, Array), reply
    if reply.items and isinstance(reply.items[0], Array) and isinstance(reply.items[0].items[0], Bulk) \
            and len(reply.items[0].items) == 2 and isinstance(reply.items[0].items[1], Array) \
            and reply.items[0].items[0].value == b"s":
        return list(reply.items[0].items[1].items)  # type: ignore[arg-type]
    return list(reply.items)  # type: ignore[arg-type]


def _key(i: bytes) -> tuple[int, int]:
    ms, _, seq = i.partition(b"-")
    return int(ms), int(seq)


def _check(r: RecordedClient, seen: Acknowledged, durable_before: int, killed_at: int) -> tuple[list[str], list[str]]:
    """What was acknowledged before ``durable_before`` (trace µs) and is missing after the restart,
    and what was acknowledged after it (but before the kill at ``killed_at``) and is missing.

    The reads are part of the trace: the model judges them too."""
    present = {e.items[0].value for e in _entries(r.call(b"XRANGE", b"s", b"-", b"+"))}  # type: ignore[union-attr]
    pel = r.call(b"XPENDING", b"s", b"g", b"-", b"+", b"1000000")
    assert isinstance(pel, Array), pel
    pending = {p.items[0].value for p in pel.items}  # type: ignore[union-attr]
    groups = r.call(b"XINFO", b"GROUPS", b"s")
    assert isinstance(groups, Array) and len(groups.items) == 1, groups
    fields = groups.items[0].items  # type: ignore[union-attr]
    last_delivered = next(fields[k + 1].value for k in range(0, len(fields), 2)
                          if fields[k].value == b"last-delivered-id")

    def missing(since: int, until: int) -> list[str]:
        lost = [f"entry {i!r}" for i, t in seen.added if since <= t < until and i not in present]
        acked = {i for i, t in seen.acked if since <= t < until}
        lost += [f"ack of {i!r}" for i in acked if i in pending]
        lost += [f"delivery of {i!r}" for i, t in seen.delivered
                 if since <= t < until and i not in pending and i not in seen.acking]
        delivered = [i for i, t in seen.delivered if t < until]
        if delivered and _key(last_delivered) < max(map(_key, delivered)):
            lost.append(f"last-delivered-id {last_delivered!r} behind {max(delivered, key=_key)!r}")
        return lost

    older = missing(0, durable_before)
    return older, [what for what in missing(durable_before, killed_at + 1) if what not in older]


def record_kills(folder: Path, kills: int, policy: str, zygote: Zygote, rewrite: str = "",
                 load: tuple[float, float] = (0.05, 0.3), clients: tuple[int, int] = (3, 2),
                 events: tuple[int, int] | None = None, allowed: list[str] | None = None) -> tuple[Trace, list[str]]:
    """``kills`` rounds of load (``load`` seconds, uniformly) then SIGKILL on one data folder, as one
    trace; returns it and what was lost. ``rewrite`` is ``finished`` (a BGREWRITEAOF done before the
    load: the file has a base with an RDB preamble), ``running`` (one started as the load starts,
    which the kill may cut) or empty; ``clients``: how many writers and consumers; ``events``: kill
    once the trace holds that many events (uniformly; at most ``load``'s longest time), not after a
    time (a trace of a known size however fast the server runs). Besides the trace, returns what was
    lost that the policy keeps; what was lost that it may lose (``everysec``'s last two seconds) is
    added to ``allowed``."""
    rec = CrashRecorder(policy)
    lost: list[str] = []
    allowed = [] if allowed is None else allowed
    seen = rec.seen
    rec.port = free_port()
    pid = zygote.spawn(rec.port, folder, policy)
    _wait_ready(rec.port)
    admin = rec.client()
    admin.call(b"XGROUP", b"CREATE", b"s", b"g", b"$", b"MKSTREAM")
    if rewrite:
        for _ in range(5):
            admin.call(b"XADD", b"s", b"*", b"w", b"before the rewrite")
        admin.call(b"XREADGROUP", b"GROUP", b"g", b"c0", b"COUNT", b"2", b"STREAMS", b"s", b">")
        admin.call(b"BGREWRITEAOF")
        while rewrite == "finished" and _info_field(rec.port, b"aof_rewrite_in_progress") != b"0":
            time.sleep(0.01)
    try:
        for n in range(1, kills + 1):
            stop = threading.Event()
            threads = [threading.Thread(target=_writer, args=(rec, stop)) for _ in range(clients[0])]
            threads += [threading.Thread(target=_consumer, args=(rec, b"c%d" % k, stop)) for k in range(clients[1])]
            for t in threads:
                t.start()
            if events is None:
                time.sleep(random.uniform(*load))
            else:
                with rec.lock:  # a client kills at exactly that size (this thread may be slow to wake)
                    rec.kill_at = (len(rec.events) + random.randint(*events), pid)
                deadline = time.monotonic() + load[1]
                while not rec.down and time.monotonic() < deadline:
                    time.sleep(0.0005)
            killed_at = rec.crash(pid)
            stop.set()
            for t in threads:
                t.join(10)
            pid = rec.restart(zygote, folder)
            admin = rec.client()
            window = 0 if policy == "always" else 2_000_000
            older, recent = _check(admin, seen, killed_at - window, killed_at)
            lost += [f"kill {n} ({policy}): {what}" for what in older]
            allowed += [f"kill {n} ({policy}): {what}" for what in recent]
            admin.call(b"XTRIM", b"s", b"MAXLEN", b"200")  # keeps the AOF and the checks small
            if n % 10 == 0:  # a new base now and then, finished; half-way between, one the kill may cut
                admin.call(b"BGREWRITEAOF")
                for _ in range(500):
                    if _info_field(rec.port, b"aof_rewrite_in_progress") == b"0":
                        break
                    time.sleep(0.01)
            elif n % 10 == 5:
                admin.call(b"BGREWRITEAOF")
            present = {e.items[0].value for e in _entries(admin.call(b"XRANGE", b"s", b"-", b"+"))}  # type: ignore[union-attr]
            with rec.lock:
                seen.added = [(i, t) for i, t in seen.added if i in present]
    finally:
        _kill(pid)
    return rec.trace(f"kill -9 of xspec serve under load, appendfsync {policy}: {kills} kills"), lost


@dataclass
class Campaign:
    kills: int = 0
    added: int = 0
    delivered: int = 0
    acked: int = 0
    events: int = 0
    check_seconds: float = 0.0
    lost: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)  # lost within what the policy may lose
    verdicts: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    traces: list[Trace] = field(default_factory=list)


def campaign(folder: Path, kills: int, policies: tuple[str, ...],
             load: tuple[float, float] = (0.05, 0.3), judge: bool = True,
             clients: tuple[int, int] = (3, 2), events: tuple[int, int] | None = None,
             progress: Callable[[str], None] | None = None) -> Campaign:
    """``kills`` kills in traces of :data:`KILLS_PER_TRACE`, the policies taking turns by trace, a
    rewrite before the load in one trace of two (finished or running, by turns); each trace judged
    by the model unless ``judge`` is false; ``clients`` writers and consumers; ``events``: see
    :func:`record_kills`; ``progress`` is told each trace's outcome."""
    out = Campaign()
    zygote = Zygote()
    try:
        for k, start in enumerate(range(0, kills, KILLS_PER_TRACE)):
            policy = policies[k % len(policies)]
            part = folder / f"part{k}"
            part.mkdir()
            rewrite = ("", "finished", "", "running")[k % 4]
            trace, lost = record_kills(part, min(KILLS_PER_TRACE, kills - start), policy, zygote, rewrite, load,
                                       clients, events, out.allowed)
            out.kills += sum(1 for e in trace.events if isinstance(e, Crash))
            replies = [e.reply for e in trace.events if isinstance(e, Recv)]  # the loaded clients' only
            out.added += sum(1 for r in replies if isinstance(r, Bulk))  # XADD's
            out.delivered += sum(len(_entries(r)) for r in replies if isinstance(r, Array))  # XREADGROUP's
            out.acked += sum(1 for r in replies if isinstance(r, Int))  # XACK's
            out.lost += lost
            out.events += len(trace.events)
            if not judge:
                continue
            began = time.process_time()
            verdict = check_trace(trace)
            out.check_seconds += time.process_time() - began
            out.statuses.append(verdict.status)
            if verdict.status != "conform":
                out.verdicts.append(f"trace {k} ({policy}): {verdict.describe()}\n{_packed(trace)}")
            out.traces.append(trace)
            if progress is not None:
                progress(f"trace {k} ({policy}, {len(trace.events)} events): {verdict.status}; lost {lost}; "
                         + _report(out))
    finally:
        zygote.close()
    return out


def _packed(trace: Trace) -> str:
    """The trace in one line a failure message can carry (a recording is not reproducible): unpack
    with ``zlib.decompress(base64.b64decode(text))`` and ``trace_format.loads``."""
    return "trace (zlib, base64): " + base64.b64encode(zlib.compress(trace_format.dumps(trace).encode(), 9)).decode()


def _report(c: Campaign) -> str:
    statuses = ", ".join(f"{s} {c.statuses.count(s)}" for s in ("conform", "diverge", "inconclusive")
                         if s in c.statuses)
    return (f"{c.kills} kills; {c.events} events ({c.added} XADDs, {c.delivered} deliveries and {c.acked} XACKs "
            f"acknowledged); checked in {c.check_seconds:.1f} s CPU; "
            f"{len(c.lost)} lost, {len(c.allowed)} more within the policy's window; {len(c.verdicts)} traces not conforming ({statuses or 'not judged'})")


@pytest.fixture(scope="module")
def always(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    """The default suite's 20 kills under load from three writers and two consumers, counted by the
    test (the model's verdicts on such traces can take minutes: see the judged fixtures)."""
    return campaign(tmp_path_factory.mktemp("crash"), 20, ("always",), load=(0.03, 0.1), judge=False)


@pytest.fixture(scope="module")
def judged_few(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    """Four short traces of two writers and a consumer, judged by the model in the default suite (a
    second or so each: few commands are in flight at the kill)."""
    return campaign(tmp_path_factory.mktemp("judged-few"), 4, ("always",), load=(0.02, 2.0), clients=(2, 1),
                    events=(20, 45))


@pytest.fixture(scope="module")
def everysec_few(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    """Three short traces of two writers and a consumer under ``appendfsync everysec``, judged: the
    server writes the AOF before each reply, so nothing is lost, which the model allows (AOF-8)."""
    return campaign(tmp_path_factory.mktemp("everysec-few"), 3, ("everysec",), load=(0.02, 2.0), clients=(2, 1),
                    events=(10, 25))


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    """Two short traces of one writer and one consumer: the rejection test's, whose search for a
    divergence must rule out every execution."""
    return campaign(tmp_path_factory.mktemp("pair"), 2, ("always",), load=(0.02, 2.0), clients=(1, 1),
                    events=(20, 40))


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    """Six short traces of three writers and two consumers, ``always`` and ``everysec`` by turns: more
    commands in flight at each kill."""
    return campaign(tmp_path_factory.mktemp("judged"), 6, ("always", "everysec"), load=(0.02, 2.0),
                    events=(15, 40))


def test_kill_9_under_appendfsync_always_loses_nothing_acknowledged(always: Campaign) -> None:
    print(_report(always))
    assert always.kills == 20
    assert not always.lost, "\n".join(always.lost[:20])


def _conform(c: Campaign, *, decided: bool = True) -> None:
    """Nothing lost, and the model accepts every recovered state; with ``decided`` false a trace the
    search gives up on (inconclusive) passes if most are decided, a rejected one (diverge) never does."""
    print(_report(c), c.statuses)
    assert c.kills == len(c.statuses)
    assert not c.lost, "\n".join(c.lost[:20])
    if decided:
        assert not c.verdicts, "\n".join(c.verdicts)
    else:
        assert "diverge" not in c.statuses, "\n".join(c.verdicts)
        assert 2 * c.statuses.count("conform") > len(c.statuses), "\n".join(c.verdicts)


def _without_unanswered_xadds(trace: Trace) -> tuple[list[Event], int, set[bytes]] | None:
    """The trace up to its first read after the restart (an XRANGE), without the XADDs that never got
    a reply and without their entries in that read; the read's index and the IDs clients were told.

    An XADD whose reply the kill lost may have taken any ID the clock allowed: the checker tries
    those later replies show (the read's), then the least, so with one in the trace it cannot rule out
    every execution (it says ``inconclusive``, not ``diverge``). None when the trace has no such read
    or a consumer read an entry of an unanswered XADD."""
    events = list(trace.events)
    first_restart = next(i for i, e in enumerate(events) if isinstance(e, Restart))
    found = next(((i, e) for i, e in enumerate(events) if i > first_restart and isinstance(e, Call)
                  and e.cmd[0] == b"XRANGE"), None)
    if found is None:
        return None
    at, read = found
    unanswered: set[int] = set()  # the sends no reply answered
    for i, e in enumerate(events[:first_restart]):
        if isinstance(e, Send):
            unanswered.add(i)
        elif isinstance(e, Recv):
            unanswered.remove(min(i for i in unanswered if events[i].c == e.c))  # type: ignore[union-attr]
    told = {r.value for e in events[:first_restart] if isinstance(e, Recv | Call)
            for r in (e.reply,) if isinstance(r, Bulk)}
    dropped = {i for i in unanswered if events[i].cmd[0] == b"XADD"}  # type: ignore[union-attr]
    assert isinstance(read.reply, Array)
    kept = [x for x in read.reply.items if x.items[0].value in told]  # type: ignore[union-attr]
    for e in events[:first_restart]:
        if isinstance(e, Recv) and isinstance(e.reply, Array) and any(
                x.items[0].value not in told for x in _entries(e.reply)):  # type: ignore[union-attr]
            return None  # a consumer was given an entry of an XADD left unanswered
    out = [dataclasses.replace(read, reply=Array(tuple(kept))) if i == at else e
           for i, e in enumerate(events[:at + 1]) if i not in dropped]
    return out, at - len(dropped), told


def _rejected(c: Campaign, *, majority: bool = False) -> None:
    """The model's judgement can fail: drop one entry the writers were told about from the first
    read after a restart, and the trace diverges at that read (without the XADDs the kill left
    unanswered, see :func:`_without_unanswered_xadds`; the same trace without the drop is never
    rejected). A forged trace is never accepted; the search may give up on one (inconclusive), but
    it must decide one (the shortest traces first), or with ``majority`` most of them."""
    statuses: list[str] = []
    for trace in sorted(c.traces, key=lambda t: len(t.events)):
        cut = _without_unanswered_xadds(trace)
        if cut is None or trace.header.node_specs()[NODE].config["appendfsync"] != "always":
            continue  # everysec may lose the newest entry (AOF-8): test_everysec_may_lose_only_...
        events, at, _ = cut
        read = events[at]
        assert isinstance(read, Call) and isinstance(read.reply, Array)
        if not read.reply.items:
            continue
        control = check_trace(Trace(trace.header, events, trace.path))
        assert control.status != "diverge", control.describe()
        if control.status != "conform":
            # the cut itself is undecided: a dropped XADD the kill left unanswered may show only in a
            # later ID's sequence number, which then nothing in the cut explains
            continue
        kept = list(read.reply.items)
        del kept[-1]  # the newest entry a writer was told about
        events[at] = dataclasses.replace(read, reply=Array(tuple(kept)))
        verdict = check_trace(Trace(trace.header, events, trace.path))
        assert verdict.status != "conform", verdict.describe()
        if verdict.status == "diverge":
            assert verdict.event == at + 1, verdict.describe()
            if not majority:
                return
        statuses.append(verdict.status)
    print("forged recovered states:", statuses)
    if not majority:
        pytest.fail("no trace read back an acknowledged entry where the search decides")
    assert statuses and 2 * statuses.count("diverge") > len(statuses), \
        f"the search decided {statuses.count('diverge')} of {len(statuses)} forged traces"


def test_recovered_states_of_few_clients_conform_to_the_model(judged_few: Campaign) -> None:
    _conform(judged_few)


def test_a_recovered_state_missing_an_acknowledged_entry_is_rejected(pair: Campaign) -> None:
    _rejected(pair)


def test_recovered_states_under_everysec_conform_to_the_model(everysec_few: Campaign) -> None:
    _conform(everysec_few)


def _later(events: list[Event], start: int, us: int) -> list[Event]:
    """``events`` with every time from ``start`` on ``us`` later: the kill, the restart and the reads
    after it come that much later after the last acknowledgements."""
    def moved(e: Event) -> Event:
        changes = {k: getattr(e, k) + us for k in ("t", "t0", "t1") if getattr(e, k, None) is not None}
        return dataclasses.replace(e, **changes)  # type: ignore[type-var]
    return events[:start] + [moved(e) for e in events[start:]]


def _read_judged(trace: Trace, events: list[Event], at: int, kept: list[Reply], keep_as: Path) -> str:
    """The model's verdict on ``events`` with the read at ``at`` answering ``kept``; a divergence
    must be at that read (else the trace is written to ``keep_as``, for a look)."""
    read = events[at]
    assert isinstance(read, Call)
    events = [dataclasses.replace(read, reply=Array(tuple(kept))) if i == at else e for i, e in enumerate(events)]
    checked = Trace(trace.header, events, trace.path)
    verdict = check_trace(checked)
    if verdict.status == "diverge" and verdict.event != at + 1:
        trace_format.dump(checked, keep_as)
        pytest.fail(f"a divergence before the read (event {at + 1}), in {keep_as}: {verdict.describe()}")
    return verdict.status


def test_everysec_may_lose_only_the_writes_of_its_last_two_seconds(everysec_few: Campaign, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """AOF-8, judged by the model on a recorded ``everysec`` trace (cut at the first read after the
    restart, without the XADDs the kill left unanswered): the read may lack the newest acknowledged
    entry (acknowledged milliseconds before the kill), but not an older one while it shows the newest
    (only a suffix is lost); with the kill three seconds after the last acknowledgement (the times
    from the kill on moved), it may lack neither. The search gives up early here (a small budget keeps
    the test quick), and a trace where it gives up on one of these gives way to the next."""
    monkeypatch.setattr(checker, "STEP_BUDGET_BASE", 20_000)
    monkeypatch.setattr(multinode, "RESTART_STEP_BUDGET", 0)
    for trace in sorted(everysec_few.traces, key=lambda t: len(t.events)):
        cut = _without_unanswered_xadds(trace)
        if cut is None:
            continue
        events, at, _ = cut
        read = events[at]
        assert isinstance(read, Call) and isinstance(read.reply, Array)
        entries = list(read.reply.items)
        if len(entries) < 2:
            continue
        if check_trace(Trace(trace.header, events, trace.path)).status != "conform":
            # the cut itself is not explained: a dropped XADD the kill left unanswered may show only in
            # a later reply's sequence number (as in _rejected)
            continue
        crash = next(i for i, e in enumerate(events) if isinstance(e, Crash))
        late = _later(events, crash, 3_000_000)
        keep_as = tmp_path / "forged.jsonl"
        statuses = [_read_judged(trace, events, at, entries[:-1], keep_as),  # the newest lost: within the window
                    _read_judged(trace, events, at, entries[:-2] + entries[-1:], keep_as),  # not a suffix
                    _read_judged(trace, late, at, entries, keep_as),
                    _read_judged(trace, late, at, entries[:-1], keep_as)]  # acknowledged 3 s before the kill
        if "inconclusive" in statuses:
            continue
        assert statuses == ["conform", "diverge", "conform", "diverge"]
        return
    pytest.fail("no everysec trace read back two entries where the search decides")


@pytest.mark.slow
def test_recovered_states_of_more_clients_are_never_rejected(judged: Campaign) -> None:
    """With three writers the search may give up (inconclusive) at a read after the restart (the
    orders of the commands before the kill multiplied by the sets and orders of those in flight
    can exceed its budget), but on few: a rejection fails the test, and so do mostly inconclusive."""
    _conform(judged, decided=False)


@pytest.mark.slow
def test_a_recovered_state_of_more_clients_missing_an_acknowledged_entry_is_rejected(judged: Campaign) -> None:
    """At the read; the search may give up on one, but must decide most of them."""
    _rejected(judged, majority=True)


@pytest.mark.slow
def test_kill_9_campaign_of_500_both_policies(tmp_path: Path) -> None:
    """500 kills, ``always`` and ``everysec`` by turns, three writers and two consumers, each trace
    judged by the model (short traces: the kill comes within 10 to 40 events of the load's start, so
    that the search decides): nothing acknowledged lost beyond what the policy allows (the test's
    own count), no recovered state rejected; the figures go to the output (``-s``)."""
    c = campaign(tmp_path, 500, ("always", "everysec"), load=(0.02, 2.0), events=(10, 40),
                 progress=functools.partial(print, flush=True))
    print(_report(c))
    assert c.kills == 500
    assert not c.lost, "\n".join(c.lost[:20])
    assert "diverge" not in c.statuses, "\n".join(v for v in c.verdicts if "diverge" in v)
