"""REPL-20: a second replica asking during a disk-based sync's child joins it, as real servers do.

A real primary with ``repl-diskless-sync no`` slowed by ``rdb-key-save-delay`` forks for its first
replica; a second replica asking meanwhile gets the same ``+FULLRESYNC``, a copy of the stream kept
since the fork and the same file: one fork (``total_forks``), two full syncs, and a SELECT before the
next command (the primary's offset moves by 23 bytes more than the command's). Real recordings conform
to the model and a model that forks again for the second replica does not explain them; ``xspec serve``
answers as the real servers.
"""

from __future__ import annotations

import contextlib
import functools
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.replication_support import wait_for_transfer, wait_until
from tests.support import first_by_default, start_real, stop_all
from xspec.models.replication import Deployment
from xspec.reference.server import ServerThread
from xspec.spec.resp import Bulk
from xspec.spec.trace_format import Call, Trace
from xspec.traces.check.checker import check_trace
from xspec.traces.cluster.harness import Cluster
from xspec.traces.cluster.nodes import find_server
from xspec.traces.scenarios.runner import stop_process

KEYS = 10
DELAY_US = 150_000  # a key: the child runs KEYS * DELAY_US = 1.5 s


def _record(label: str) -> Trace:
    try:
        kind = find_server(label)
    except Exception as e:  # noqa: BLE001 - a missing binary skips the dialect
        pytest.skip(f"{label}: {e}")
    cluster = Cluster(kind, ("a", "b", "c"), config={"repl-diskless-sync": "no"},
                      node_config={"a": {"rdb-key-save-delay": str(DELAY_US)}},
                      title="a second replica joins a disk-based sync's child", tags=("replication", "full-resync"))
    with cluster:
        p = cluster.client("a")
        for i in range(KEYS):
            p.call("SET", f"k{i}", str(i))
        cluster.replicaof("b", "a", settle=False)
        wait_for_transfer(cluster, "b")
        p.call("SET", "between", "1")
        cluster.replicaof("c", "a", settle=False)
        wait_for_transfer(cluster, "c")
        p.call("INFO", "replication")
        p.call("SET", "after", "1")
        p.call("INFO", "replication")
        cluster.settle("b", "c")
        for node in ("b", "c"):
            cluster.client(node).call("MGET", "between", "after")
        p.call("INFO", "replication")
        trace = cluster.trace()
        assert not cluster.problems, cluster.problems
    return trace


def _primary_offsets(trace: Trace) -> list[int]:
    """``master_repl_offset`` of each INFO replication the primary answered."""
    texts = [e.reply.value for e in trace.events if isinstance(e, Call) and isinstance(e.reply, Bulk)]
    return [int(m.group(1)) for text in texts
            if b"role:master" in text and (m := re.search(rb"\r\nmaster_repl_offset:(\d+)", text))]


@pytest.fixture(scope="module", params=first_by_default("redis-7.0.15", "redis-6.2.14", "valkey-9.1.2"))
def recorded(request: pytest.FixtureRequest) -> Trace:
    return _record(request.param)


def test_the_real_join_conforms(recorded: Trace) -> None:
    during, after = _primary_offsets(recorded)[:2]
    assert after - during == 23 + len(b"*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n1\r\n"), "no SELECT after the join"
    verdict = check_trace(recorded)
    assert verdict.status == "conform", verdict


def test_a_model_that_forks_again_diverges(recorded: Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Deployment, "_waiting_for_disk_child", lambda self, primary: None)
    assert check_trace(recorded).status == "diverge"


# -- xspec serve against the real servers ---------------------------------------------------------------
def _info(r: redis.Redis, section: str) -> dict[str, Any]:
    return r.info(section)  # type: ignore[no-any-return]


def _join(ports: tuple[int, int, int]) -> dict[str, Any]:
    """The join as a client sees it, the host's measures left out."""
    a, b, c = (redis.Redis(port=port, socket_timeout=10) for port in ports)
    out: dict[str, Any] = {}
    try:
        a.config_set("repl-diskless-sync", "no")
        a.config_set("rdb-key-save-delay", str(DELAY_US))
        for i in range(KEYS):
            a.set(f"k{i}", i)
        b.replicaof("127.0.0.1", ports[0])
        wait_until(lambda: _info(b, "replication").get("master_sync_in_progress") == 1, timeout=10,
                   what="the first replica's transfer")
        a.set("between", 1)
        c.replicaof("127.0.0.1", ports[0])
        wait_until(lambda: _info(c, "replication").get("master_sync_in_progress") == 1, timeout=10,
                   what="the second replica's transfer")
        during = _info(a, "replication")
        out["states during"] = [during[f"slave{i}"]["state"] for i in range(2)]
        out["bgsave during"] = _info(a, "persistence")["rdb_bgsave_in_progress"]
        a.set("after", 1)
        out["SELECT and SET"] = _info(a, "replication")["master_repl_offset"] - during["master_repl_offset"]
        for r in (b, c):
            wait_until(lambda r=r: _info(r, "replication").get("master_link_status") == "up", timeout=20,  # type: ignore[misc]
                       what="the replica's sync")
            wait_until(lambda r=r: r.get("after") is not None, timeout=10, what="the stream after the sync")  # type: ignore[misc]
        out["replicas' data"] = [(r.dbsize(), r.mget("between", "after")) for r in (b, c)]
        stats = _info(a, "stats")
        out["total_forks, sync_full"] = (stats["total_forks"], stats["sync_full"])
    finally:
        for r in (b, c):
            r.replicaof("no", "one")
        for r in (a, b, c):
            r.close()
    return out


@pytest.mark.parametrize("dialect", first_by_default("redis-6.2", "redis-7.0", "valkey-9.1"))
def test_xspec_serve_joins_as_the_real_server(dialect: str, tmp_path: Path) -> None:
    servers: list[tuple[subprocess.Popen[bytes], int]] = []
    try:
        for i in range(3):
            (tmp_path / f"n{i}").mkdir()
            servers.append(start_real(dialect, tmp_path / f"n{i}", {}))
        theirs = _join((servers[0][1], servers[1][1], servers[2][1]))
    finally:
        stop_all([functools.partial(stop_process, proc) for proc, _ in servers])
    with contextlib.ExitStack() as stack:
        nodes = [stack.enter_context(ServerThread(dialect=dialect)) for _ in range(3)]
        ours = _join((nodes[0].port, nodes[1].port, nodes[2].port))
    assert theirs["total_forks, sync_full"] == (1, 2) and theirs["SELECT and SET"] == 23 + 31
    assert ours == theirs


def test_a_replica_without_the_first_ones_capabilities_waits() -> None:
    """SYNC (no capabilities) does not join a child whose replica announced ``capa eof psync2``: a second
    child follows the first (real 7.0.15, the same steps by hand: ``total_forks`` 1, then 2)."""
    with ServerThread() as primary:
        a = redis.Redis(port=primary.port, socket_timeout=10)
        a.config_set("repl-diskless-sync", "no")
        a.config_set("rdb-key-save-delay", str(DELAY_US))
        for i in range(KEYS):
            a.set(f"k{i}", i)
        with ServerThread() as first:
            b = redis.Redis(port=first.port, socket_timeout=10)
            b.replicaof("127.0.0.1", primary.port)
            wait_until(lambda: _info(b, "replication").get("master_sync_in_progress") == 1, timeout=10,
                       what="the first replica's transfer")
            old = redis.Redis(port=primary.port, socket_timeout=10)
            conn = old.connection_pool.get_connection()
            conn.send_command("SYNC")
            time.sleep(0.2)
            assert _info(a, "stats")["total_forks"] == 1
            wait_until(lambda: _info(a, "stats")["total_forks"] == 2, timeout=20, what="the second child")
            b.replicaof("no", "one")
            conn.disconnect()
            for r in (a, b, old):
                r.close()

