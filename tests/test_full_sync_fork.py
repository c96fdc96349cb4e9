"""A full synchronisation does not stop the primary (REPL-5): `xspec serve` writes the snapshot in a forked
child, as Redis 7.0.15 does, so the primary answers commands while a slow snapshot is written, and the
writes made meanwhile reach the replica after the snapshot. Both kinds of primary, each with an xspec
replica; ``rdb-key-save-delay`` (microseconds a key, in the child) makes the snapshot take seconds."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.replication_support import Real, link_up, wait_until
from xspec.reference.server import ServerThread

KEYS = 1000
DELAY_US = 3000  # a key: the snapshot takes about 3 s
ENTRIES = 2000


@pytest.fixture(params=["redis-7.0.15", "xspec"])
def primary(request: pytest.FixtureRequest, real_binary: str) -> Iterator[Any]:
    """A primary of either kind (``.port``) with an xspec replica not yet linked (``.replica``), and
    ``.save_delay(us)`` setting its ``rdb-key-save-delay`` (our server has no CONFIG SET for it)."""
    real = Real(real_binary) if request.param == "redis-7.0.15" else None
    with ServerThread() as ours, ServerThread() as replica:
        port = real.port if real is not None else ours.port
        r = redis.Redis(port=port)
        r.config_set("repl-diskless-sync-delay", 0)
        r.port = port  # type: ignore[attr-defined]
        r.replica = redis.Redis(port=replica.port)  # type: ignore[attr-defined]
        if real is not None:
            r.save_delay = lambda us: r.config_set("rdb-key-save-delay", us)  # type: ignore[attr-defined]
        else:
            r.save_delay = lambda us: ours.call(ours.core.config.__setitem__,  # type: ignore[attr-defined]
                                                "rdb-key-save-delay", str(us))
        try:
            yield r
        finally:
            if real is not None:
                real.stop()


def replica_state(primary: redis.Redis) -> str:
    info = primary.info("replication")
    return str(info["slave0"]["state"]) if info["connected_slaves"] else ""


def test_the_primary_serves_while_the_snapshot_is_written(primary: Any) -> None:
    """While the child writes the snapshot (the replica ``wait_bgsave`` on the primary, its link down), PING,
    XADD and INCR are answered at once; the replica then holds the snapshot and those writes, equal to the
    primary, and is online."""
    pipe = primary.pipeline(transaction=False)
    for i in range(KEYS):
        pipe.set(f"k{i}", i)
    for i in range(ENTRIES):
        pipe.xadd("s", {"f": i})
    pipe.execute()
    primary.save_delay(DELAY_US)
    replica = primary.replica
    started = time.monotonic()
    replica.replicaof("127.0.0.1", primary.port)
    wait_until(lambda: replica_state(primary) == "wait_bgsave", what="the replica waiting for its snapshot")
    slowest = 0.0
    answered = 0
    while not link_up(replica) and time.monotonic() - started < 2.0:
        asked = time.monotonic()
        assert primary.ping()
        primary.xadd("s", {"during": answered})
        primary.incr("counter")
        slowest = max(slowest, time.monotonic() - asked)
        answered += 1
        time.sleep(0.05)
    assert answered >= 5 and not link_up(replica), "the sync ended before the primary was asked anything"
    assert replica_state(primary) == "wait_bgsave"
    assert slowest < 1.0, f"the primary took {slowest:.2f} s to answer during the sync"
    wait_until(lambda: link_up(replica), timeout=60, what="the replica in sync")
    assert time.monotonic() - started > 2.5  # the snapshot's delay was spent in the child
    primary.save_delay(0)
    wait_until(lambda: replica_state(primary) == "online", what="the replica online")
    wait_until(lambda: replica.info("replication")["slave_repl_offset"]
               == primary.info("replication")["master_repl_offset"], what="the stream applied")
    assert replica.xrange("s") == primary.xrange("s")
    assert len(replica.xrange("s")) == ENTRIES + answered
    assert replica.get("counter") == str(answered).encode()
    assert replica.dbsize() == primary.dbsize() == KEYS + 2
    assert replica.mget([f"k{i}" for i in range(KEYS)]) == primary.mget([f"k{i}" for i in range(KEYS)])
