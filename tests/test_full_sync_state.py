"""REPL-19: a full sync whose RDB child is still running, as real servers show it and the model judges it.

A real primary slowed by ``rdb-key-save-delay`` keeps its replication child for about two seconds;
during it the replica's INFO shows the transfer (``master_sync_*``), the primary's INFO shows the
replica ``wait_bgsave`` and ``rdb_bgsave_in_progress:1``, and BGSAVE (also SCHEDULE) is refused while
BGREWRITEAOF is scheduled. The recording conforms; a forged field diverges. On the model, the steps
come in Redis's order: a disk-based file loads only after the child was reaped and the file sent, and
the stream kept since the fork is applied only after the reap.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.replication_support import wait_for_transfer
from xspec.spec.trace_format import Call, Recv, Trace
from xspec.traces.check.checker import check_trace
from xspec.traces.cluster.harness import Cluster
from xspec.traces.cluster.nodes import find_server

KEYS = 10
DELAY_US = 150_000  # a key: the child runs KEYS * DELAY_US = 1.5 s


def _record(label: str, diskless: str) -> Trace:
    try:
        kind = find_server(label)
    except Exception as e:  # noqa: BLE001 - a missing binary skips the dialect
        pytest.skip(f"{label}: {e}")
    cluster = Cluster(kind, ("a", "b"), config={"repl-diskless-sync": diskless},
                      node_config={"a": {"rdb-key-save-delay": str(DELAY_US)}},
                      title="a full sync while its child runs", tags=("replication", "full-resync"))
    with cluster:
        p, r = cluster.client("a"), cluster.client("b")
        for i in range(KEYS):
            p.call("SET", f"k{i}", str(i))
        cluster.replicaof("b", "a", settle=False)
        wait_for_transfer(cluster, "b")
        r.call("INFO", "replication")
        p.call("INFO", "replication")
        p.call("INFO", "persistence")
        p.call("BGSAVE")
        p.call("BGSAVE", "SCHEDULE")
        p.call("BGREWRITEAOF")
        p.call("SET", "during", "1")
        cluster.settle("b")
        r.call("GET", "during")
        r.call("INFO", "replication")
        trace = cluster.trace()
        assert not cluster.problems, cluster.problems
    return trace


def _replies(trace: Trace, needle: str) -> list[int]:
    return [i for i, e in enumerate(trace.events) if isinstance(e, (Call, Recv)) and needle in repr(e.reply)]


@pytest.fixture(scope="module")
def recorded() -> Trace:
    return _record("redis-7.0.15", "yes")


def test_the_real_full_sync_with_its_child_running_conforms(recorded: Trace) -> None:
    assert _replies(recorded, "master_sync_perc:-0.00"), "the replica's transfer was not seen"
    assert _replies(recorded, "state=wait_bgsave"), "the primary's waiting replica was not seen"
    assert _replies(recorded, "rdb_bgsave_in_progress:1")
    assert _replies(recorded, "Background save already in progress")
    verdict = check_trace(recorded)
    assert verdict.status == "conform", verdict


@pytest.mark.parametrize(("real", "forged"), [
    ("master_sync_perc:-0.00", "master_sync_perc:-0"),
    ("state=wait_bgsave", "state=send_bulk"),
    ("rdb_bgsave_in_progress:1", "rdb_bgsave_in_progress:0"),
])
def test_a_forged_field_diverges(recorded: Trace, real: str, forged: str) -> None:
    at = _replies(recorded, real)[0]
    event = recorded.events[at]
    assert isinstance(event, (Call, Recv))
    text = repr(event.reply)
    reply = event.reply
    # the reply is a bulk or verbatim string: rebuild it with the field forged
    field = "value" if hasattr(reply, "value") else "text"
    body: bytes = getattr(reply, field)
    assert real.encode() in body, text
    forged_reply = dataclasses.replace(reply, **{field: body.replace(real.encode(), forged.encode(), 1)})
    events = list(recorded.events)
    events[at] = dataclasses.replace(event, reply=forged_reply)
    verdict = check_trace(dataclasses.replace(recorded, events=events))
    assert verdict.status == "diverge", verdict


def test_a_disk_based_sync_conforms() -> None:
    trace = _record("redis-7.0.15", "no")
    assert _replies(trace, "state=wait_bgsave") and _replies(trace, "master_sync_perc:-0.00")
    verdict = check_trace(trace)
    assert verdict.status == "conform", verdict


@pytest.mark.parametrize("label", ["redis-6.2.14", "valkey-9.1.2"])
def test_other_dialects_conform(label: str) -> None:
    """6.2 (disk-based, its default) shows offset 1 during the transfer (REPL-DIALECT-6)."""
    trace = _record(label, "no" if label == "redis-6.2.14" else "yes")
    if label == "redis-6.2.14":
        assert _replies(trace, r"master_sync_in_progress:1\r\nslave_read_repl_offset:1\r\n")  # repr's escapes
    assert _replies(trace, "rdb_bgsave_in_progress:1")
    verdict = check_trace(trace)
    assert verdict.status == "conform", verdict


# -- the order of a full sync's steps in the model (REPL-19) ------------------------------------------
def _deployment(diskless: str) -> tuple[Any, Any]:
    from xspec.models.clock import ManualClock
    from xspec.models.replication import Deployment

    d = Deployment({"a": {"addrs": ["127.0.0.1:7001"], "config": {"repl-diskless-sync": diskless}},
                    "b": {"addrs": ["127.0.0.1:7002"]}}, ManualClock(1_700_000_000_000))

    def run(node: str, *args: str) -> Any:
        return d.execute(node, {"a": 1, "b": 2}[node], [a.encode() for a in args]).reply

    run("a", "SET", "k", "1")
    run("b", "REPLICAOF", "127.0.0.1", "7001")
    d.step("connect", "b")
    d.step("fork", "a")
    run("a", "SET", "during", "1")  # kept for the replica until the child is reaped
    return d, run


def _info(run: Any, node: str, section: str) -> str:
    return str(run(node, "INFO", section).value.decode())


def _kinds(d: Any) -> set[str]:
    return {kind for kind, _ in d.steps()}


def test_a_disk_based_file_loads_after_the_child_and_the_transfer() -> None:
    d, run = _deployment("no")
    assert "load" not in _kinds(d) and "fork" not in _kinds(d)
    assert "rdb_bgsave_in_progress:1" in _info(run, "a", "persistence")
    assert "state=wait_bgsave" in _info(run, "a", "replication")
    d.step("bgsave-done", "a")
    assert "state=send_bulk" in _info(run, "a", "replication")
    assert "load" not in _kinds(d) and "bulk-sent" in _kinds(d)
    d.step("bulk-sent", "a")
    assert "state=online" in _info(run, "a", "replication")
    d.step("load", "b")
    assert run("b", "GET", "k") == run("a", "GET", "k") and run("b", "GET", "during") == run("b", "GET", "nothing")
    while "apply" in _kinds(d):  # SELECT, then the SET
        d.step("apply", "b")
    assert run("b", "GET", "during") == run("a", "GET", "during")


def test_a_diskless_replica_may_load_before_the_reap_but_applies_after_it() -> None:
    d, run = _deployment("yes")
    assert "load" in _kinds(d)
    d.step("load", "b")
    assert "master_link_status:up" in _info(run, "b", "replication")
    assert "apply" not in _kinds(d)
    assert "state=wait_bgsave" in _info(run, "a", "replication")
    d.step("bgsave-done", "a")
    assert "state=online" in _info(run, "a", "replication") and "bulk-sent" not in _kinds(d)
    while "apply" in _kinds(d):  # SELECT, then the SET
        d.step("apply", "b")
    assert run("b", "GET", "during") == run("a", "GET", "during")


def test_a_sync_child_stopped_by_flushall_fails_its_replicas_sync() -> None:
    d, run = _deployment("no")
    run("a", "FLUSHALL")  # FLUSH-6 signals the child; the cron reaps it as failed for its replicas
    d.step("bgsave-done", "a")
    assert "b" not in d.links and "connect" in _kinds(d)  # the replica asks again
    d.step("connect", "b")
    d.step("fork", "a")
    assert d.links["b"].phase == "transfer"
