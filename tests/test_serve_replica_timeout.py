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
    primary.r.set("k", "1")
    wait_until(lambda: all(r.get("k") == b"1" for r in replicas), what="the write on both replicas")
    os.kill(primary.proc.pid, signal.SIGSTOP)
    started = time.monotonic()
    down = [wait_until(lambda r=r: not link_up(r), timeout=8, what="the link to drop") for r in replicas]
    assert all(down)
    assert time.monotonic() - started >= 1.5  # not before repl-timeout
    os.kill(primary.proc.pid, signal.SIGCONT)
    for r in replicas:
        wait_until(lambda r=r: link_up(r), timeout=10, what="the link back")
    assert primary.r.info("stats")["sync_partial_ok"] == 2
    assert primary.r.info("stats")["sync_full"] == 2
    primary.r.set("k", "2")
    wait_until(lambda: all(r.get("k") == b"2" for r in replicas), what="the stream again")


def test_pings_keep_a_quiet_link_up(deployment: tuple[Real, list[redis.Redis]]) -> None:
    """A primary that writes nothing but PINGs every second keeps its replicas' links past repl-timeout."""
    primary, replicas = deployment
    primary.r.config_set("repl-ping-replica-period", 1)
    time.sleep(4)
    assert [link_up(r) for r in replicas] == [True, True]
    assert primary.r.info("stats")["sync_partial_ok"] == 0


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
