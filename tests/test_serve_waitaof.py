"""WAITAOF in `xspec serve` against the real servers that have it: Redis 7.4.1, 7.2 and Valkey 9.1.2
(spec/rules/replication.md, WAITAOF-1 .. WAITAOF-3).

The same steps run on a real primary with a real replica and on an xspec primary with an xspec replica of
the same dialect; every reply (errors included) must be the same.
"""

from __future__ import annotations

import tempfile
import threading
import time
from typing import Any

import pytest
import redis

from tests.replication_support import NO_SYNC_DELAY, wait_until
from tests.support import first_by_default
from xspec.reference.server import ServerThread
from xspec.traces.scenarios.runner import start_redis, stop_process

DIALECTS = ("redis-7.4", "redis-7.2", "valkey-9.1")


def answer(r: redis.Redis, *argv: Any) -> Any:
    """The reply, or the error's text."""
    try:
        return r.execute_command(*argv)
    except redis.ResponseError as e:
        return f"error: {e}"


def steps(primary: redis.Redis, replica: redis.Redis, replica_port: int, primary_port: int) -> list[Any]:
    """WAITAOF's errors, counts per appendfsync policy, in MULTI, and with a replica's FACK."""
    out: list[Any] = []
    primary.set("k", "v")
    out += [answer(primary, "WAITAOF", *args) for args in (
        ("1", "0", "0"),  # WAITAOF-3: numlocal without appendonly
        ("2", "0", "0"), ("x", "0", "0"), ("0", "-1", "0"), ("0", "x", "0"), ("0", "0", "-1"), ("0", "0", "x"),
        ("0", "0", "0"), ("0", "1", "100"))]  # no AOF anywhere: [0, 0], after the timeout
    out.append(answer(redis.Redis(port=primary.connection_pool.connection_kwargs["port"]), "WAITAOF", "0", "0",
                      "0"))  # a new client's WAIT offset is 0: every count is met
    replica.replicaof("127.0.0.1", primary_port)
    wait_until(lambda: replica.info("replication").get("master_link_status") == "up", what="the link")
    out.append(answer(replica, "WAITAOF", "0", "0", "0"))  # WAITAOF-3: on a replica
    primary.config_set("appendonly", "yes")
    wait_until(lambda: primary.info("persistence").get("aof_rewrite_in_progress") == 0
               and primary.info("persistence").get("aof_rewrite_scheduled") == 0, what="the AOF rewrite")
    time.sleep(0.2)
    primary.config_set("appendfsync", "always")
    primary.set("k", "1")
    out.append(answer(primary, "WAITAOF", "1", "0", "0"))  # WAITAOF-1: synced before the reply
    out.append(answer(primary, "WAITAOF", "1", "1", "200"))  # the replica has no AOF: timeout, [1, 0]
    pipe = primary.pipeline(transaction=True)
    pipe.set("k", "2")
    pipe.execute_command("WAITAOF", "1", "1", "0")
    out.append(pipe.execute())  # WAITAOF-1: inside MULTI it answers at once
    pipe = primary.pipeline(transaction=False)
    pipe.set("k", "2")
    pipe.execute_command("WAITAOF", "1", "0", "2000")
    out.append(pipe.execute())  # the same loop turn: it waits for the fsync before the replies
    blocked = redis.Redis(port=primary.connection_pool.connection_kwargs["port"])
    result: list[Any] = []
    blocked.set("k", "3")  # its WAIT offset moves past what the replica (without an AOF) acknowledged
    waiter = threading.Thread(target=lambda: result.append(answer(blocked, "WAITAOF", "1", "1", "5000")))
    waiter.start()
    wait_until(lambda: primary.info("clients")["blocked_clients"] == 1, what="WAITAOF to block")
    primary.config_set("appendonly", "no")  # WAITAOF-3: the waiting client gets the error
    waiter.join()
    out.append(result)
    primary.config_set("appendonly", "yes")
    wait_until(lambda: primary.info("persistence").get("aof_rewrite_in_progress") == 0
               and primary.info("persistence").get("aof_rewrite_scheduled") == 0, what="the AOF rewrite")
    time.sleep(0.2)
    primary.config_set("appendfsync", "no")
    primary.set("k", "3")
    out.append(answer(primary, "WAITAOF", "1", "0", "300"))  # `no`: the local count never moves
    primary.config_set("appendfsync", "everysec")
    primary.set("k", "4")
    out.append(answer(primary, "WAITAOF", "1", "0", "3000"))  # everysec: within about a second
    replica.config_set("appendonly", "yes")
    wait_until(lambda: replica.info("persistence").get("aof_rewrite_in_progress") == 0
               and replica.info("persistence").get("aof_rewrite_scheduled") == 0, what="the replica's rewrite")
    primary.set("k", "5")
    out.append(answer(primary, "WAITAOF", "1", "1", "5000"))  # WAITAOF-2: the replica's FACK counts
    out.append(answer(primary, "WAITAOF", "0", "2", "100"))  # one replica only: [1, 1] at the timeout
    primary.config_set("appendonly", "no")
    out.append(answer(primary, "WAITAOF", "1", "0", "0"))
    out.append(answer(primary, "WAITAOF", "0", "1", "3000"))  # the replica's AOF still counts
    replica.replicaof("no", "one")
    return out


def real_steps(dialect: str) -> list[Any]:
    from tests.real_servers import dialect_binary
    binary = dialect_binary(dialect)[0]
    procs = []
    try:
        ports = []
        for _ in range(2):
            proc, port = start_redis(binary, tempfile.mkdtemp(prefix="xspec-waitaof-"))
            procs.append(proc)
            ports.append(port)
            redis.Redis(port=port).config_set("repl-diskless-sync-delay", 0)
        return steps(redis.Redis(port=ports[0]), redis.Redis(port=ports[1]), ports[1], ports[0])
    finally:
        for proc in procs:
            stop_process(proc)


def xspec_steps(dialect: str) -> list[Any]:
    with ServerThread(dialect=dialect, config={**NO_SYNC_DELAY, "dir": tempfile.mkdtemp(prefix="xspec-waitaof-")}) \
            as a, ServerThread(dialect=dialect, config={
                **NO_SYNC_DELAY, "dir": tempfile.mkdtemp(prefix="xspec-waitaof-")}) as b:
        return steps(redis.Redis(port=a.port), redis.Redis(port=b.port), b.port, a.port)


@pytest.mark.parametrize("dialect", first_by_default(*DIALECTS))
def test_waitaof_as_the_real_server(dialect: str) -> None:
    """WAITAOF-1 .. WAITAOF-3: the same replies from xspec serve as from the dialect's real server."""
    expected = real_steps(dialect)
    assert xspec_steps(dialect) == expected


def fack_steps(primary: redis.Redis, replica: redis.Redis, primary_port: int) -> list[Any]:
    """A replica with an AOF: its FACK counts on its primary (WAITAOF-2)."""
    replica.config_set("appendonly", "yes")
    replica.replicaof("127.0.0.1", primary_port)
    wait_until(lambda: replica.info("replication").get("master_link_status") == "up", what="the link")
    primary.set("k", "1")
    out = [answer(primary, "WAITAOF", "0", "1", "5000")]
    replica.replicaof("no", "one")
    return out


@pytest.mark.slow  # the default suite keeps the other cases (issue 18's time)
def test_fack_between_real_and_xspec_nodes() -> None:
    """WAITAOF-2 on the wire: a real 7.4.1 primary counts an xspec replica's FACK, and an xspec primary a
    real replica's."""
    from tests.real_servers import dialect_binary
    binary = dialect_binary("redis-7.4")[0]
    proc, port = start_redis(binary, tempfile.mkdtemp(prefix="xspec-waitaof-"))
    try:
        real = redis.Redis(port=port)
        with ServerThread(dialect="redis-7.4", config={
                **NO_SYNC_DELAY, "dir": tempfile.mkdtemp(prefix="xspec-waitaof-")}) as a:
            ours = redis.Redis(port=a.port)
            assert fack_steps(real, ours, port) == [[0, 1]]
            ours.config_set("appendonly", "no")  # the primary of the second half has no AOF
            assert fack_steps(ours, real, a.port) == [[0, 1]]
    finally:
        stop_process(proc)


def test_waitaof_is_unknown_before_7_2() -> None:
    """WAITAOF-1: 7.0's table has no WAITAOF."""
    with ServerThread(config=NO_SYNC_DELAY) as a:
        with pytest.raises(redis.ResponseError, match="unknown command 'WAITAOF'"):
            redis.Redis(port=a.port).execute_command("WAITAOF", "0", "0", "0")
