"""AOF-3 under ``appendfsync no`` on a real Redis 7.0.15: a killed process loses no acknowledged write.

Redis writes its AOF buffer to the file before it writes the replies (``beforeSleep``); ``no`` only
leaves the fsync to the OS, and the page cache outlives a ``kill -9``. The test kills the server
right after the last reply, several times, restarts it and reads: everything acknowledged is
there. The recorded trace/2 conforms, and the same trace with one acknowledged write missing after
a restart is rejected at the read that shows it (rule 10: under ``no`` a crash keeps every
acknowledged write, as under ``always``).
"""

from __future__ import annotations

import dataclasses

import pytest

from xspec.spec.resp import Array, Bulk, Int
from xspec.spec.trace_format import Call, Restart, Trace
from xspec.traces.check.checker import check_trace
from xspec.traces.cluster.harness import Cluster
from xspec.traces.cluster.nodes import ServerKind

ROUNDS = 4
WRITES = 25


@pytest.fixture(scope="module")
def recorded(cluster_redis70: ServerKind) -> Trace:
    return record(cluster_redis70, ROUNDS, WRITES)


def record(kind: ServerKind, rounds: int, writes: int) -> Trace:
    """``rounds`` times: ``writes`` XADDs, an XDEL and a group's XGROUP SETID, kill -9 right after
    the last reply, restart, read. (No deliveries: reloading their delivery times from the AOF
    makes the checker try exact times, which makes a rejection slow.)"""
    config = {"appendonly": "yes", "appendfsync": "no", "aof-use-rdb-preamble": "yes"}
    with Cluster(kind, ("a",), config=config, title="appendfsync no: kill -9 loses nothing acknowledged") as h:
        for r in range(rounds):
            c = h.client("a")
            if r == 0:
                c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
            for i in range(1, writes + 1):
                assert c.call("XADD", "s", f"{r + 1}-{i}", "f", "v") == Bulk(b"%d-%d" % (r + 1, i))
            c.call("XDEL", "s", f"{r + 1}-1")
            c.call("XGROUP", "SETID", "s", "g", f"{r + 1}-2")
            h.crash("a")  # at once: the last replies were read just now
            h.restart("a")
            after = h.client("a")
            assert after.call("XLEN", "s") == Int((r + 1) * (writes - 1))
            groups = after.call("XINFO", "GROUPS", "s")
            assert isinstance(groups, Array) and Bulk(b"%d-2" % (r + 1)) in groups.items[0].items  # type: ignore[union-attr]
        trace = h.trace()
    return trace


def test_kill_9_under_appendfsync_no_keeps_every_acknowledged_write(recorded: Trace) -> None:
    assert sum(1 for e in recorded.events if isinstance(e, Restart)) == ROUNDS
    verdict = check_trace(recorded)
    assert verdict.status == "conform", verdict.describe()


def test_a_restart_that_lost_an_acknowledged_write_is_rejected(recorded: Trace) -> None:
    events = list(recorded.events)
    last = max(i for i, e in enumerate(events) if isinstance(e, Call) and e.cmd[0] == b"XLEN")
    e = events[last]
    assert isinstance(e, Call) and isinstance(e.reply, Int)
    events[last] = dataclasses.replace(e, reply=Int(e.reply.value - 1))
    verdict = check_trace(Trace(recorded.header, events, recorded.path))
    assert verdict.status == "diverge" and verdict.event == last + 1, verdict.describe()
