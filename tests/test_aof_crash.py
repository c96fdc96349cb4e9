"""kill -9 of `xspec serve` under load, with the AOF on (reference/aof.py).

A separate server process takes XADDs from several writers while consumers read with XREADGROUP and
acknowledge with XACK; at a random moment it is killed with SIGKILL and started again on the same
folder. Under ``appendfsync always`` every write acknowledged to a client is there after the restart:
each XADD's entry, each acknowledged XACK (its entry out of the PEL), each delivery (its entry still
pending, unless it was acknowledged since), and the group's last-delivered-id is not behind what was
delivered. Under ``everysec`` (the slow campaign) what was acknowledged up to two seconds before the
kill is there. The default suite runs 20 kills under ``always``; the slow campaign 500, both policies.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis as redis_py
from redis.backoff import NoBackoff
from redis.retry import Retry

from xspec.traces.scenarios.runner import free_port

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
        run_server(ReferenceServer(port=int(port), config={"dir": folder, "appendonly": "yes",
                                                           "appendfsync": fsync}))
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


@dataclass
class Acknowledged:
    """What clients were told, each with the time they were told it (monotonic seconds)."""

    added: list[tuple[bytes, float]] = field(default_factory=list)
    delivered: list[tuple[bytes, float]] = field(default_factory=list)
    acked: list[tuple[bytes, float]] = field(default_factory=list)
    acking: set[bytes] = field(default_factory=set)  # XACKs sent, answered or not (one may be in flight)
    total_added: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _start(zygote: Zygote, folder: Path, fsync: str) -> tuple[int, redis_py.Redis]:
    port = free_port()
    pid = zygote.spawn(port, folder, fsync)
    client = redis_py.Redis(port=port)
    for _ in range(400):
        try:
            client.ping()
            return pid, client
        except redis_py.ConnectionError:
            time.sleep(0.01)
    raise RuntimeError("the server did not answer")


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    for _ in range(500):  # the zygote reaps it; wait until the pid is gone
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def _client(port: int) -> redis_py.Redis:
    """A client that gives up at the first connection error (the server was killed): no retries."""
    return redis_py.Redis(port=port, retry=Retry(NoBackoff(), 0), socket_timeout=10)


def _writer(port: int, seen: Acknowledged, stop: threading.Event) -> None:
    r = _client(port)
    try:
        while not stop.is_set():
            new = r.xadd("s", {"w": "x" * random.randrange(1, 40)})
            with seen.lock:
                seen.added.append((new, time.monotonic()))
                seen.total_added += 1
    except (redis_py.ConnectionError, redis_py.ResponseError, OSError):
        pass


def _consumer(port: int, name: str, seen: Acknowledged, stop: threading.Event) -> None:
    r = _client(port)
    try:
        while not stop.is_set():
            got = r.xreadgroup("g", name, {"s": ">"}, count=5)
            ids = [e[0] for _, entries in got for e in entries]
            now = time.monotonic()
            with seen.lock:
                seen.delivered += ((i, now) for i in ids)
            if ids and random.random() < 0.7:
                with seen.lock:
                    seen.acking.update(ids)
                r.xack("s", "g", *ids)
                now = time.monotonic()
                with seen.lock:
                    seen.acked += ((i, now) for i in ids)
    except (redis_py.ConnectionError, redis_py.ResponseError, OSError):
        pass


def _key(i: bytes) -> tuple[int, int]:
    ms, _, seq = i.partition(b"-")
    return int(ms), int(seq)


def _check(r: redis_py.Redis, seen: Acknowledged, durable_before: float) -> list[str]:
    """What was acknowledged before ``durable_before`` and is missing after the restart."""
    present = {e[0] for e in r.xrange("s")}
    pending = {p["message_id"] for p in r.xpending_range("s", "g", "-", "+", 10**6)}
    (group,) = r.xinfo_groups("s")
    lost = [f"entry {i!r}" for i, t in seen.added if t < durable_before and i not in present]
    acked = {i for i, t in seen.acked if t < durable_before}
    lost += [f"ack of {i!r}" for i in acked if i in pending]
    lost += [f"delivery of {i!r}" for i, t in seen.delivered
             if t < durable_before and i not in pending and i not in seen.acking]
    delivered = [i for i, t in seen.delivered if t < durable_before]
    if delivered and _key(group["last-delivered-id"]) < max(map(_key, delivered)):
        lost.append(f"last-delivered-id {group['last-delivered-id']!r} behind {max(delivered, key=_key)!r}")
    return lost


def campaign(folder: Path, kills: int, policies: tuple[str, ...]) -> tuple[int, list[str]]:
    """Run ``kills`` rounds of load then SIGKILL; returns (kills made, what was lost)."""
    seen = Acknowledged()
    lost: list[str] = []
    zygote = Zygote()
    pid, r = _start(zygote, folder, policies[0])
    r.xgroup_create("s", "g", id="$", mkstream=True)
    made = 0
    try:
        for n in range(kills):
            policy = policies[n % len(policies)]
            stop = threading.Event()
            port = r.connection_pool.connection_kwargs["port"]
            threads = [threading.Thread(target=_writer, args=(port, seen, stop)) for _ in range(3)]
            threads += [threading.Thread(target=_consumer, args=(port, f"c{k}", seen, stop)) for k in range(2)]
            for t in threads:
                t.start()
            time.sleep(random.uniform(0.05, 0.3))
            killed_at = time.monotonic()
            _kill(pid)
            made += 1
            stop.set()
            for t in threads:
                t.join(10)
            pid, r = _start(zygote, folder, policies[(n + 1) % len(policies)])
            window = 0.0 if policy == "always" else 2.0
            lost += [f"kill {made} ({policy}): {what}" for what in _check(r, seen, killed_at - window)]
            r.xtrim("s", maxlen=200)  # keeps the AOF and the checks small
            if made % 10 == 0:  # a new base now and then, finished; half-way between, one the kill may cut
                r.bgrewriteaof()
                for _ in range(500):
                    if not r.info("persistence")["aof_rewrite_in_progress"]:
                        break
                    time.sleep(0.01)
            elif made % 10 == 5:
                r.bgrewriteaof()
            with seen.lock:
                present = {e[0] for e in r.xrange("s")}
                seen.added = [(i, t) for i, t in seen.added if i in present]
    finally:
        _kill(pid)
        zygote.close()
    print(f"{made} kills; {seen.total_added} XADDs, {len(seen.delivered)} deliveries, {len(seen.acked)} XACKed "
          f"entries acknowledged; {len(lost)} lost")
    return made, lost


def test_kill_9_under_appendfsync_always_loses_nothing_acknowledged(tmp_path: Path) -> None:
    made, lost = campaign(tmp_path, 20, ("always",))
    assert made == 20
    assert not lost, "\n".join(lost[:20])


@pytest.mark.slow
def test_kill_9_campaign_of_500_both_policies(tmp_path: Path) -> None:
    made, lost = campaign(tmp_path, 500, ("always", "everysec"))
    print(f"{made} kills, {len(lost)} losses")
    assert made == 500
    assert not lost, "\n".join(lost[:20])
