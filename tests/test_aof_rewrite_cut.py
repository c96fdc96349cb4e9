"""AOF-7 on a real Redis 7.0.15: a BGREWRITEAOF cut by ``kill -9`` leaves the old base in the manifest.

7.0 opens a new incremental file when a rewrite starts and switches the manifest to the new base
only when the rewrite's child has finished. ``rdb-key-save-delay`` holds the child (microseconds
per key written), so the server is killed while the rewrite runs: the restart replays the old base
and both incremental files, and a group created and read by commands has ``entries-read`` and
``lag`` nil. A second BGREWRITEAOF while the first runs is refused. The recorded trace/2 conforms
to the model; the same trace claiming the rewritten counters after the restart is rejected there.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

from xspec.spec.resp import Array, Bulk, Error, Int, NullBulk, Reply, Simple
from xspec.spec.trace_format import Call, Trace
from xspec.traces.check.checker import check_trace
from xspec.traces.cluster.harness import Cluster
from xspec.traces.cluster.nodes import ServerKind
from xspec.traces.record.client import RespConnection

IN_PROGRESS = "ERR Background append only file rewriting already in progress"


@pytest.fixture(scope="module")
def recorded(cluster_redis70: ServerKind) -> Trace:
    config = {"appendonly": "yes", "appendfsync": "always", "aof-use-rdb-preamble": "yes"}
    with Cluster(cluster_redis70, ("a",), config=config, title="BGREWRITEAOF cut by kill -9 (AOF-7)") as h:
        c = h.client("a")
        c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        for i in range(1, 6):
            c.call("XADD", "s", f"1-{i}", "f", "v")
        c.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
        _hold_the_child(h)
        assert c.call("BGREWRITEAOF") == Simple("Background append only file rewriting started")
        assert c.call("BGREWRITEAOF") == Error(IN_PROGRESS)
        for i in range(6, 9):
            c.call("XADD", "s", f"1-{i}", "f", "v")
        c.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
        assert b"aof_rewrite_in_progress:1" in _bulk(c.call("INFO", "persistence"))
        h.crash("a")
        h.restart("a")
        after = h.client("a")
        groups = after.call("XINFO", "GROUPS", "s")
        assert isinstance(groups, Array)
        fields = groups.items[0].items  # type: ignore[union-attr]
        assert fields[9] == NullBulk() and fields[11] == NullBulk(), fields  # entries-read, lag
        trace = h.trace()
    return trace


def _hold_the_child(h: Cluster) -> None:
    """``rdb-key-save-delay``: the rewrite's child sleeps 5 s on each key it writes. Set on a
    connection the trace does not record: the model holds no such setting, and it changes only
    how long the child runs, which the trace shows by the rewrite still running at the kill."""
    conn = RespConnection("127.0.0.1", h.nodes["a"].port)
    try:
        assert conn.call([b"CONFIG", b"SET", b"rdb-key-save-delay", b"5000000"]) == Simple("OK")
    finally:
        conn.close()


def _bulk(r: Reply) -> bytes:
    assert isinstance(r, Bulk) and r.value is not None, r
    return r.value


def test_a_cut_rewrite_reloads_the_old_base_and_both_incremental_files(recorded: Trace) -> None:
    started = time.monotonic()
    verdict = check_trace(recorded)
    assert verdict.status == "conform", verdict.describe()
    assert time.monotonic() - started < 60


def test_the_rewritten_counters_after_a_cut_rewrite_are_rejected(recorded: Trace) -> None:
    events = list(recorded.events)
    last = max(i for i, e in enumerate(events) if isinstance(e, Call) and tuple(e.cmd[:2]) == (b"XINFO", b"GROUPS"))
    e = events[last]
    assert isinstance(e, Call) and isinstance(e.reply, Array)
    group = e.reply.items[0]
    assert isinstance(group, Array)
    items = list(group.items)
    items[9], items[11] = Int(4), Int(4)  # what the finished rewrite's base would give
    events[last] = dataclasses.replace(e, reply=Array((Array(tuple(items)),)))
    verdict = check_trace(Trace(recorded.header, events, recorded.path))
    assert verdict.status == "diverge" and verdict.event == last + 1, verdict.describe()
