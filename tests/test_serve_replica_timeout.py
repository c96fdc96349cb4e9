"""A replica's ``repl-timeout`` in `xspec serve` against real Redis 7.0.15: a replica that hears nothing
from its primary (no data, no PING) for longer drops the link and connects again, as ``replicationCron``
does; a primary that PINGs often enough keeps it up."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
import redis

from tests.test_serve_replication import Real, client, follow, link_up, wait_until
from xspec.reference.server import ServerThread


@pytest.fixture()
def deployment(real_binary: str) -> Iterator[tuple[Real, list[redis.Redis]]]:
    """A real 7.0.15 primary, and a real and an xspec replica of it with ``repl-timeout 2``."""
    primary, real_replica = Real(real_binary), Real(real_binary)
    try:
        with ServerThread() as ours:
            replicas = [real_replica.r, client(ours)]
            for r in replicas:
                r.config_set("repl-timeout", 2)
                follow(r, primary.port)
            yield primary, replicas
    finally:
        os.kill(primary.proc.pid, signal.SIGCONT)
        primary.stop()
        real_replica.stop()


def test_a_replica_drops_a_silent_primary_and_resyncs_partially(deployment: tuple[Real, list[redis.Redis]]) -> None:
    """Primary stopped (SIGSTOP): both replicas drop the link after repl-timeout; once it runs again both
    continue with a partial resynchronisation."""
    primary, replicas = deployment
    primary.r.config_set("repl-ping-replica-period", 60)
    time.sleep(1.5)  # the primary's first cron PINGs (REPL-13); the next one is 60 s away
    written = time.monotonic()
    primary.r.set("k", "1")
    wait_until(lambda: all(r.get("k") == b"1" for r in replicas), what="the write on both replicas")
    os.kill(primary.proc.pid, signal.SIGSTOP)
    stopped = time.monotonic()
    dropped: dict[int, float] = {}
    while len(dropped) < len(replicas) and time.monotonic() - stopped < 8:
        for i, r in enumerate(replicas):
            if i not in dropped and not link_up(r):
                dropped[i] = time.monotonic()
        time.sleep(0.05)
    # REPL-17: more than repl-timeout (2) whole seconds of the clock after the last read, which came after
    # the write and before the stop; the cron looks once a second (the real replica, then ours)
    assert len(dropped) == 2, dropped
    assert all(at - written > 2.0 and at - stopped < 4.5 for at in dropped.values()), (written, stopped, dropped)
    os.kill(primary.proc.pid, signal.SIGCONT)
    for r in replicas:
        wait_until(lambda r=r: link_up(r), timeout=10, what="the link back")
    assert primary.r.info("stats")["sync_partial_ok"] == 2
    assert primary.r.info("stats")["sync_full"] == 2
    primary.r.set("k", "2")
    wait_until(lambda: all(r.get("k") == b"2" for r in replicas), what="the stream again")


@pytest.mark.slow  # the default suite keeps the other cases (issue 18's time)
def test_pings_keep_a_quiet_link_up(deployment: tuple[Real, list[redis.Redis]]) -> None:
    """A primary that writes nothing but PINGs every second keeps its replicas' links past repl-timeout."""
    primary, replicas = deployment
    primary.r.config_set("repl-ping-replica-period", 1)
    time.sleep(4)
    assert [link_up(r) for r in replicas] == [True, True]
    assert primary.r.info("stats")["sync_partial_ok"] == 0


@pytest.mark.slow  # the default suite keeps the other cases (issue 18's time)
def test_a_replica_drops_a_paused_xspec_primary() -> None:
    """The same with an xspec primary paused by XSPEC.NODE PAUSE: the replica drops the link after
    repl-timeout, and once the primary resumes it continues from the backlog."""
    from xspec.reference.replication_deployment import DeploymentThread
    with DeploymentThread(1) as d:
        p = redis.Redis(port=d.port("primary"))
        r = redis.Redis(port=d.port("replica-1"))
        wait_until(lambda: link_up(r), what="the link")
        r.config_set("repl-timeout", 1)
        p.set("k", "1")
        wait_until(lambda: r.get("k") == b"1", what="the write on the replica")
        r.execute_command("XSPEC.NODE", "PAUSE", "primary")
        started = time.monotonic()
        wait_until(lambda: not link_up(r), timeout=6, what="the link to drop")
        assert time.monotonic() - started >= 0.9
        r.execute_command("XSPEC.NODE", "RESUME", "primary")
        wait_until(lambda: link_up(r), timeout=10, what="the link back")
        assert p.info("stats")["sync_partial_ok"] == 1


def test_a_replica_counts_repl_timeout_on_its_virtual_clock() -> None:
    """REPL-17 on the server's clock: an xspec replica with a virtual clock keeps a silent link while its
    clock stands still, and drops it (then continues from the backlog) once XSPEC.CLOCK moves it past
    repl-timeout; the primary's PINGs are 60 s apart."""
    with ServerThread(config={"repl-diskless-sync-delay": "0"}) as a, ServerThread(clock="virtual") as b:
        primary, replica = client(a), client(b)
        primary.config_set("repl-ping-replica-period", 60)
        replica.config_set("repl-timeout", 5)
        follow(replica, a.port)
        primary.set("k", "1")
        wait_until(lambda: replica.get("k") == b"1", what="the write on the replica")
        time.sleep(1.5)  # the primary's first cron PINGs (REPL-13); the next one is 60 s away
        replica.execute_command("XSPEC.CLOCK", "ADVANCE", 4000)
        time.sleep(2.2)  # two crons: 4 s of its clock are not more than 5
        assert link_up(replica)
        replica.execute_command("XSPEC.CLOCK", "ADVANCE", 2000)
        wait_until(lambda: not link_up(replica), timeout=3, what="the link to drop")
        wait_until(lambda: link_up(replica), timeout=5, what="the link back")
        assert primary.info("stats")["sync_partial_ok"] == 1
        primary.set("k", "2")
        wait_until(lambda: replica.get("k") == b"2", what="the stream again")
