"""The replication corpus's scenarios: what the harness does to a deployment, one trace each.

A scenario drives a fresh :class:`~xspec.traces.cluster.harness.Cluster`
(every node empty, a primary with no replicas) with recorded clients and the
harness's verbs. It never asserts on replies: the recorded replies are the
expectations. Tags come from spec/anomalies.md; every trace is also tagged
``replication`` and with its topic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from xspec.traces.cluster.harness import Client, Cluster, HarnessError

ScenarioFn = Callable[[Cluster], None]


@dataclass(frozen=True)
class ClusterScenario:
    topic: str
    name: str
    title: str
    run: ScenarioFn
    nodes: tuple[str, ...] = ("a", "b")
    tags: tuple[str, ...] = ()
    config: dict[str, str] = field(default_factory=dict)
    node_config: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return f"{self.topic}/{self.name}.jsonl"

    @property
    def all_tags(self) -> list[str]:
        return list(dict.fromkeys(["replication", self.topic, *self.tags]))


SCENARIOS: list[ClusterScenario] = []


def scenario(topic: str, title: str, *, nodes: int = 2, tags: tuple[str, ...] = (),
             config: dict[str, str] | None = None, node_config: dict[str, dict[str, str]] | None = None,
             name: str | None = None) -> Callable[[ScenarioFn], ScenarioFn]:
    """Register ``fn`` as ``<topic>/<fn name with dashes>``, on ``nodes`` nodes named a, b, c."""
    def register(fn: ScenarioFn) -> ScenarioFn:
        SCENARIOS.append(ClusterScenario(topic, name or fn.__name__.replace("_", "-"), title, fn,
                                         ("a", "b", "c")[:nodes], tuple(tags), dict(config or {}),
                                         dict(node_config or {})))
        return fn
    return register


# -- helpers -------------------------------------------------------------------


def pair(h: Cluster) -> tuple[Client, Client]:
    """b replicates a; a client on each."""
    h.replicaof("b", "a")
    return h.client("a"), h.client("b")


def group_with(h: Cluster, p: Client, n: int = 3) -> None:
    """Stream s with entries 1-1 … n-1 and group g at 0."""
    for i in range(1, n + 1):
        p.call("XADD", "s", f"{i}-1", "f", f"v{i}")
    p.call("XGROUP", "CREATE", "s", "g", "0")


def read_all(c: Client, *, group: bool = True) -> None:
    """What a node serves about stream s and group g."""
    c.call("XRANGE", "s", "-", "+")
    if group:
        c.call("XPENDING", "s", "g")
        c.call("XPENDING", "s", "g", "-", "+", "10")
        c.call("XINFO", "GROUPS", "s")
        c.call("XINFO", "CONSUMERS", "s", "g")


def partition_and_promote(h: Cluster, *read: str) -> None:
    """Once ``b`` has everything ``a`` sent, hold their link (a partition), promote ``b`` and run
    ``read`` on it: what the promoted replica serves."""
    h.settle("b")
    h.hold("a", "b")
    split_and_promote(h)
    h.client("b").call(*read)


def crash_restart_and_read(h: Cluster) -> None:
    """Kill -9 the primary ``a``, restart it, let its replica ``b`` resynchronise, and read what each
    then holds: the stream and the group on ``a``, the stream on ``b``."""
    h.crash("a")
    h.restart("a")
    h.settle("b")
    read_all(h.client("a"))
    h.client("b").call("XRANGE", "s", "-", "+")


def wait_persisted(h: Cluster, node: str, timeout: float = 10.0) -> None:
    """Wait until no BGSAVE or AOF rewrite is running on ``node`` (asked unrecorded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        from xspec.traces.cluster.harness import _info
        info = _info(h.nodes[node].port, "persistence")
        if info.get("rdb_bgsave_in_progress") == "0" and info.get("aof_rewrite_in_progress") == "0" \
                and info.get("aof_rewrite_scheduled") == "0":
            return
        time.sleep(0.02)
    raise HarnessError(f"node {node}: a save or rewrite still runs after {timeout} s")


def demote_old_primary(h: Cluster, old: str, new: str) -> None:
    """Point the old primary at the new one (recorded) and wait for its resynchronisation."""
    h.replicaof(old, new)


# -- every replicated stream command, and what the replica then serves ----------

REPLICATED: list[tuple[str, str, list[list[str]]]] = [
    ("xadd-explicit", "XADD with explicit IDs", [["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "2-5", "f", "w"]]),
    ("xadd-auto", "XADD * is propagated with the ID it made", [["XADD", "s", "*", "f", "v"], ["XADD", "s", "*", "g", "w"]]),
    ("xadd-maxlen", "XADD MAXLEN trims on the replica too",
     [["XADD", "s", f"{i}-1", "f", "v"] for i in range(1, 5)] + [["XADD", "s", "MAXLEN", "2", "9-1", "f", "v"]]),
    ("xadd-maxlen-approx", "XADD MAXLEN ~ is propagated as what it did",
     [["XADD", "s", "MAXLEN", "~", "2", f"{i}-1", "f", "v"] for i in range(1, 6)]),
    ("xadd-minid", "XADD MINID trims by ID", [["XADD", "s", f"{i}-1", "f", "v"] for i in range(1, 4)]
     + [["XADD", "s", "MINID", "3", "4-1", "f", "v"]]),
    ("xadd-nomkstream", "XADD NOMKSTREAM on a missing key propagates nothing",
     [["XADD", "s", "NOMKSTREAM", "*", "f", "v"], ["XADD", "t", "1-1", "f", "v"]]),
    ("xdel", "XDEL removes entries on the replica", [["XADD", "s", f"{i}-1", "f", "v"] for i in range(1, 4)]
     + [["XDEL", "s", "2-1", "9-9"]]),
    ("xtrim-maxlen", "XTRIM MAXLEN", [["XADD", "s", f"{i}-1", "f", "v"] for i in range(1, 5)]
     + [["XTRIM", "s", "MAXLEN", "1"]]),
    ("xtrim-minid", "XTRIM MINID", [["XADD", "s", f"{i}-1", "f", "v"] for i in range(1, 5)]
     + [["XTRIM", "s", "MINID", "3"]]),
    ("xsetid", "XSETID moves the last ID", [["XADD", "s", "1-1", "f", "v"], ["XSETID", "s", "5-0"],
                                             ["XADD", "s", "*", "f", "v"]]),
    ("xgroup-create", "XGROUP CREATE, at $ and at an ID, MKSTREAM",
     [["XADD", "s", "1-1", "f", "v"], ["XGROUP", "CREATE", "s", "g", "$"], ["XGROUP", "CREATE", "s", "h", "0"],
      ["XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"]]),
    ("xgroup-setid", "XGROUP SETID", [["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "2-1", "f", "v"],
                                      ["XGROUP", "CREATE", "s", "g", "$"], ["XGROUP", "SETID", "s", "g", "1-1"]]),
    ("xgroup-destroy", "XGROUP DESTROY", [["XADD", "s", "1-1", "f", "v"], ["XGROUP", "CREATE", "s", "g", "0"],
                                          ["XGROUP", "CREATE", "s", "h", "0"], ["XGROUP", "DESTROY", "s", "h"]]),
    ("xgroup-createconsumer", "XGROUP CREATECONSUMER and DELCONSUMER",
     [["XADD", "s", "1-1", "f", "v"], ["XGROUP", "CREATE", "s", "g", "0"],
      ["XGROUP", "CREATECONSUMER", "s", "g", "alice"], ["XGROUP", "CREATECONSUMER", "s", "g", "bob"],
      ["XGROUP", "DELCONSUMER", "s", "g", "bob"]]),
    ("xreadgroup-new", "XREADGROUP > is propagated as XCLAIMs and the group's last ID",
     [["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "2-1", "f", "v"], ["XGROUP", "CREATE", "s", "g", "0"],
      ["XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">"],
      ["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"]]),
    ("xreadgroup-noack", "XREADGROUP NOACK moves the last ID without pending entries",
     [["XADD", "s", "1-1", "f", "v"], ["XGROUP", "CREATE", "s", "g", "0"],
      ["XREADGROUP", "GROUP", "g", "alice", "NOACK", "STREAMS", "s", ">"]]),
    ("xack", "XACK removes pending entries on the replica",
     [["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "2-1", "f", "v"], ["XGROUP", "CREATE", "s", "g", "0"],
      ["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"], ["XACK", "s", "g", "1-1", "7-7"]]),
    ("xclaim", "XCLAIM, with JUSTID and FORCE",
     [["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "2-1", "f", "v"], ["XADD", "s", "3-1", "f", "v"],
      ["XGROUP", "CREATE", "s", "g", "0"], ["XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"],
      ["XCLAIM", "s", "g", "bob", "0", "1-1"], ["XCLAIM", "s", "g", "bob", "0", "2-1", "JUSTID"],
      ["XCLAIM", "s", "g", "carol", "0", "3-1", "FORCE"]]),
    ("xautoclaim", "XAUTOCLAIM, and the deleted entries it drops",
     [["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "2-1", "f", "v"], ["XGROUP", "CREATE", "s", "g", "0"],
      ["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"], ["XDEL", "s", "1-1"],
      ["XAUTOCLAIM", "s", "g", "bob", "0", "0"]]),
    ("del-and-recreate", "DEL of a stream, then a new one under the same key",
     [["XADD", "s", "5-1", "f", "v"], ["XGROUP", "CREATE", "s", "g", "0"], ["DEL", "s"],
      ["XADD", "s", "1-1", "f", "w"]]),
    ("multi-exec", "A MULTI/EXEC of stream commands reaches the replica as one unit",
     [["MULTI"], ["XADD", "s", "1-1", "f", "v"], ["XGROUP", "CREATE", "s", "g", "0"],
      ["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"], ["XACK", "s", "g", "1-1"], ["EXEC"]]),
]


def _replicated(commands: list[list[str]]) -> ScenarioFn:
    def run(h: Cluster) -> None:
        p, r = pair(h)
        for cmd in commands:
            p.call(*cmd)
        h.settle("b")
        read_all(r, group=False)
        r.call("XINFO", "STREAM", "s", "FULL")
        r.call("XLEN", "s")
    return run


for _name, _title, _commands in REPLICATED:
    scenario("replicated", _title, name=_name, tags=("replica-reads",))(_replicated(_commands))


@scenario("replicated", "Two replicas apply the same stream", nodes=3, tags=("replica-reads",))
def two_replicas(h: Cluster) -> None:
    h.replicaof("b", "a")
    h.replicaof("c", "a")
    p = h.client("a")
    group_with(h, p, 2)
    p.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    h.settle("b", "c")
    for node in ("b", "c"):
        read_all(h.client(node))


# -- reads on replicas, writes refused ------------------------------------------


@scenario("replica-reads", "XREAD, XRANGE, XPENDING and XINFO served by a replica from its own state",
          tags=("replica-reads",))
def replica_serves_reads(h: Cluster) -> None:
    p, r = pair(h)
    group_with(h, p)
    p.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    h.settle("b")
    r.call("XREAD", "COUNT", "2", "STREAMS", "s", "0")
    r.call("XREVRANGE", "s", "+", "-", "COUNT", "2")
    read_all(r)
    r.call("XINFO", "STREAM", "s")
    r.call("XPENDING", "s", "g", "IDLE", "0", "-", "+", "5", "alice")


@scenario("replica-reads", "A replica serves stale data while its link is held", tags=("replica-reads",))
def replica_stale_read(h: Cluster) -> None:
    p, r = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    h.hold("a", "b")
    p.call("XADD", "s", "2-1", "f", "v")
    r.call("XRANGE", "s", "-", "+")
    h.flow("a", "b")
    h.settle("b")
    r.call("XRANGE", "s", "-", "+")


@scenario("replica-readonly", "Every stream write, and each group command that writes, is refused on a replica",
          tags=("replica-readonly",))
def writes_refused(h: Cluster) -> None:
    p, r = pair(h)
    group_with(h, p, 2)
    p.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    h.settle("b")
    for cmd in (["XADD", "s", "*", "f", "v"], ["XDEL", "s", "1-1"], ["XTRIM", "s", "MAXLEN", "0"],
                ["XSETID", "s", "9-9"], ["XGROUP", "CREATE", "s", "h", "0"], ["XGROUP", "SETID", "s", "g", "0"],
                ["XGROUP", "CREATECONSUMER", "s", "g", "x"], ["XGROUP", "DELCONSUMER", "s", "g", "alice"],
                ["XGROUP", "DESTROY", "s", "g"], ["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"],
                ["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"], ["XACK", "s", "g", "1-1"],
                ["XCLAIM", "s", "g", "bob", "0", "1-1"], ["XAUTOCLAIM", "s", "g", "bob", "0", "0"], ["DEL", "s"]):
        r.call(*cmd)
    read_all(r)


@scenario("replica-readonly", "A MULTI with a write on a replica is refused at EXEC", tags=("replica-readonly",))
def multi_on_replica(h: Cluster) -> None:
    p, r = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    r.call("MULTI")
    r.call("XRANGE", "s", "-", "+")
    r.call("XADD", "s", "*", "f", "v")
    r.call("EXEC")


@scenario("replica-readonly", "A writable replica (replica-read-only no) takes a write that its primary then overwrites",
          node_config={"b": {"replica-read-only": "no"}}, tags=("replica-readonly",))
def writable_replica(h: Cluster) -> None:
    p, r = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    r.call("XADD", "s", "5-1", "f", "local")
    p.call("XADD", "s", "3-1", "f", "v")
    h.settle("b")
    r.call("XRANGE", "s", "-", "+")
    p.call("XRANGE", "s", "-", "+")


@scenario("replica-readonly", "CONFIG SET replica-read-only no, then yes again", tags=("replica-readonly",))
def config_set_read_only(h: Cluster) -> None:
    p, r = pair(h)
    r.call("CONFIG", "SET", "replica-read-only", "no")
    r.call("XADD", "s", "1-1", "f", "v")
    r.call("CONFIG", "SET", "replica-read-only", "yes")
    r.call("XADD", "s", "2-1", "f", "v")
    r.call("XRANGE", "s", "-", "+")


# -- blocked readers on replicas --------------------------------------------------


@scenario("replica-blocking", "A blocked XREAD on a replica is woken by a replicated XADD", tags=("replica-blocking",))
def blocked_xread_woken(h: Cluster) -> None:
    p, r = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    if not r.is_waiting():
        raise HarnessError("the XREAD did not block")
    p.call("XADD", "s", "2-1", "f", "v")
    r.recv()


@scenario("replica-blocking", "A blocked XREAD on a replica waits while the link is held, and is served on flow",
          tags=("replica-blocking",))
def blocked_xread_held(h: Cluster) -> None:
    p, r = pair(h)
    h.hold("a", "b")
    r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    if not r.is_waiting():
        raise HarnessError("the XREAD did not block")
    p.call("XADD", "s", "1-1", "f", "v")
    r.is_waiting(0.1)
    h.flow("a", "b")
    r.recv()


@scenario("replica-blocking", "A blocked XREAD on a replica times out", tags=("replica-blocking",))
def blocked_xread_timeout(h: Cluster) -> None:
    p, r = pair(h)
    r.call("XREAD", "BLOCK", "100", "STREAMS", "s", "$")
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    r.call("XREAD", "BLOCK", "100", "STREAMS", "s", "0")


@scenario("replica-blocking", "Two blocked XREADs on a replica, one woken by a replicated MULTI",
          tags=("replica-blocking",))
def blocked_two_readers(h: Cluster) -> None:
    p, r = pair(h)
    r2 = h.client("b")
    r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    r2.send("XREAD", "BLOCK", "0", "STREAMS", "t", "$")
    if not (r.is_waiting() and r2.is_waiting()):
        raise HarnessError("the XREADs did not block")
    p.call("MULTI")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("XADD", "s", "2-1", "f", "v")
    p.call("EXEC")
    r.recv()
    p.call("XADD", "t", "1-1", "f", "v")
    r2.recv()


@scenario("replica-blocking", "A blocked XREADGROUP on the primary, served by XADD, reaches the replica",
          tags=("replica-blocking", "wait"))
def blocked_xreadgroup_primary(h: Cluster) -> None:
    p, r = pair(h)
    p.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = h.client("a")
    reader.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    if not reader.is_waiting():
        raise HarnessError("the XREADGROUP did not block")
    p.call("XADD", "s", "1-1", "f", "v")
    reader.recv()
    reader.call("WAIT", "1", "1000")
    h.settle("b")
    read_all(r)


@scenario("replica-blocking", "A blocked XREADGROUP on a replica is refused at once", tags=("replica-blocking",
                                                                                            "replica-readonly"))
def blocked_xreadgroup_replica(h: Cluster) -> None:
    p, r = pair(h)
    p.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    h.settle("b")
    r.call("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "100", "STREAMS", "s", ">")


# -- WAIT -----------------------------------------------------------------------------


@scenario("wait", "WAIT met by one replica", tags=("wait",))
def wait_met(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAIT", "1", "2000")
    p.call("WAIT", "0", "0")


@scenario("wait", "WAIT 2 met by two replicas, WAIT 3 times out", nodes=3, tags=("wait",))
def wait_two(h: Cluster) -> None:
    h.replicaof("b", "a")
    h.replicaof("c", "a")
    p = h.client("a")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAIT", "2", "2000")
    p.call("WAIT", "3", "200")


@scenario("wait", "WAIT times out while the link is held", tags=("wait", "wait-insufficient"))
def wait_timeout_held(h: Cluster) -> None:
    p, _ = pair(h)
    h.hold("a", "b")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAIT", "1", "200")
    h.flow("a", "b")
    p.call("WAIT", "1", "2000")


@scenario("wait", "WAIT times out while the replica is paused", tags=("wait", "pause"))
def wait_timeout_paused(h: Cluster) -> None:
    p, r = pair(h)
    h.pause("b")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAIT", "1", "200")
    h.resume("b")
    p.call("WAIT", "1", "2000")
    r.call("XLEN", "s")


@scenario("wait", "WAIT inside MULTI does not block", tags=("wait",))
def wait_in_multi(h: Cluster) -> None:
    p, _ = pair(h)
    h.hold("a", "b")
    p.call("MULTI")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAIT", "1", "1000")
    p.call("EXEC")
    h.flow("a", "b")


@scenario("wait", "WAIT with no replica, and WAIT on a replica", tags=("wait",))
def wait_without_replicas(h: Cluster) -> None:
    p = h.client("a")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAIT", "1", "100")
    p.call("WAIT", "0", "100")
    h.replicaof("b", "a")
    r = h.client("b")
    r.call("WAIT", "0", "100")
    r.call("WAIT", "1", "100")


@scenario("wait", "WAIT after a read-only command and after a client's XREADGROUP", tags=("wait",))
def wait_after_reads(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("WAIT", "1", "1000")
    reader = h.client("a")
    reader.call("XRANGE", "s", "-", "+")
    reader.call("WAIT", "1", "1000")
    reader.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    reader.call("WAIT", "1", "1000")
    reader.call("WAIT", "1", "0")


# -- min-replicas-to-write ----------------------------------------------------------------


@scenario("min-replicas", "min-replicas-to-write 1 without replicas refuses writes (NOREPLICAS)",
          config={"min-replicas-to-write": "1"}, tags=("min-replicas",))
def min_replicas_none(h: Cluster) -> None:
    p = h.client("a")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    p.call("XRANGE", "s", "-", "+")
    h.replicaof("b", "a")
    h.wait_acked("b")
    p.call("XADD", "s", "1-1", "f", "v")


@scenario("min-replicas", "min-replicas-max-lag exceeded while the link is held: group writes refused too",
          config={"min-replicas-to-write": "1", "min-replicas-max-lag": "1"}, tags=("min-replicas",))
def min_replicas_lag(h: Cluster) -> None:
    h.replicaof("b", "a")
    h.wait_acked("b")
    p = h.client("a")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("XGROUP", "CREATE", "s", "g", "0")
    h.hold("a", "b")
    time.sleep(2.5)
    p.call("XADD", "s", "2-1", "f", "v")
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    p.call("XACK", "s", "g", "1-1")
    p.call("XRANGE", "s", "-", "+")
    h.flow("a", "b")
    h.wait_acked("b")
    p.call("XADD", "s", "2-1", "f", "v")


@scenario("min-replicas", "CONFIG SET min-replicas-to-write 2 with one replica", tags=("min-replicas",))
def min_replicas_config_set(h: Cluster) -> None:
    p, _ = pair(h)
    h.wait_acked("b")
    p.call("CONFIG", "SET", "min-replicas-to-write", "2")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("CONFIG", "SET", "min-replicas-to-write", "1")
    p.call("XADD", "s", "1-1", "f", "v")


# -- resynchronisation -------------------------------------------------------------------


@scenario("resync", "A cut link resynchronises partially from the backlog", tags=("partial-resync",))
def partial_after_cut(h: Cluster) -> None:
    p, r = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    h.hold("a", "b")
    p.call("XADD", "s", "2-1", "f", "v")
    h.cut("a", "b")
    h.flow("a", "b")
    h.settle("b")
    r.call("XRANGE", "s", "-", "+")
    h.client("b").call("ROLE")


@scenario("resync", "More writes than repl-backlog-size while the link is cut, then the replica reconnects "
          "(6.2: full resync; 7.0 and Valkey keep the shared replication buffer and continue)",
          config={"repl-backlog-size": "16384"}, tags=("full-resync", "partial-resync"))
def backlog_overflow_reconnect(h: Cluster) -> None:
    p, r = pair(h)
    h.hold("a", "b")
    h.cut("a", "b")
    payload = "x" * 1000
    for i in range(1, 25):
        p.call("XADD", "s", f"{i}-1", "f", payload)
    h.flow("a", "b")
    h.settle("b")
    r.call("XLEN", "s")


@scenario("resync", "REPLICAOF the same primary again is a no-op; another REPLICAOF resynchronises",
          nodes=3, tags=("partial-resync", "full-resync"))
def replicaof_again(h: Cluster) -> None:
    h.replicaof("b", "a")
    r = h.client("b")
    p = h.client("a")
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    host, port = h.addr("a")
    r.call("REPLICAOF", host, str(port))
    h.client("c").call("XADD", "s", "9-1", "f", "other")
    h.replicaof("b", "c")
    r.call("XRANGE", "s", "-", "+")


@scenario("resync", "After a promotion the other replica continues partially from the new primary", nodes=3,
          tags=("partial-resync", "failover"))
def partial_after_promotion(h: Cluster) -> None:
    h.replicaof("b", "a")
    h.replicaof("c", "a")
    p = h.client("a")
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b", "c")
    h.promote("b")
    h.replicaof("c", "b")
    h.client("b").call("XADD", "s", "2-1", "f", "v")
    h.settle("c")
    h.client("c").call("XRANGE", "s", "-", "+")
    h.client("b").call("INFO", "replication")


@scenario("resync", "An old primary that took no writes rejoins the promoted replica partially",
          tags=("partial-resync", "old-primary-rejoins", "failover"))
def old_primary_rejoins_partially(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    h.promote("b")
    h.replicaof("a", "b")
    h.client("b").call("XADD", "s", "2-1", "f", "v")
    h.settle("a")
    h.client("a").call("XRANGE", "s", "-", "+")


@scenario("resync", "An old primary that took writes after the split rejoins with a full resync and loses them",
          tags=("full-resync", "old-primary-rejoins", "failover", "acked-add-lost"))
def old_primary_rejoins_full(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    h.hold("a", "b")
    h.promote("b")
    p.call("XADD", "s", "2-1", "f", "written on the old primary")
    h.client("b").call("XADD", "s", "3-1", "f", "written on the new primary")
    h.flow("a", "b")
    h.replicaof("a", "b")
    h.client("a").call("XRANGE", "s", "-", "+")


@scenario("resync", "INFO replication and ROLE on a primary and its replica", tags=("replica-reads",))
def info_and_role(h: Cluster) -> None:
    p, r = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    for c in (p, r):
        c.call("ROLE")
        c.call("INFO", "replication")


# -- crashes, restarts and persistence ------------------------------------------------------


@scenario("persistence", "A primary without persistence restarts empty and wipes its replica",
          tags=("crash-restart", "no-persistence", "full-resync"))
def no_persistence_wipes_replica(h: Cluster) -> None:
    p, r = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    h.crash("a")
    r.call("XLEN", "s")
    h.restart("a")
    h.settle("b")
    h.client("b").call("XLEN", "s")
    h.client("a").call("XLEN", "s")


@scenario("persistence", "SAVE, more writes, crash: the restart loads the snapshot",
          tags=("crash-restart", "rdb"))
def rdb_save_then_crash(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    p.call("SAVE")
    p.call("XADD", "s", "2-1", "f", "v")
    p.call("XACK", "s", "g", "1-1")
    crash_restart_and_read(h)


@scenario("persistence", "BGSAVE, then a crash: the restart loads what BGSAVE wrote", tags=("crash-restart", "rdb"))
def rdb_bgsave_then_crash(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("BGSAVE")
    wait_persisted(h, "a")
    p.call("XADD", "s", "2-1", "f", "v")
    h.crash("a")
    h.restart("a")
    h.settle("b")
    h.client("a").call("XRANGE", "s", "-", "+")
    h.client("b").call("XRANGE", "s", "-", "+")


@scenario("persistence", "A save point fires, then a crash", config={"save": "1 1"}, tags=("crash-restart", "rdb"))
def rdb_save_point(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("XGROUP", "CREATE", "s", "g", "0")
    time.sleep(2.2)
    wait_persisted(h, "a")
    crash_restart_and_read(h)


@scenario("persistence", "AOF appendfsync always: every acknowledged write survives kill -9",
          config={"appendonly": "yes", "appendfsync": "always"}, tags=("crash-restart", "aof"))
def aof_always(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 2)
    p.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    p.call("XACK", "s", "g", "1-1")
    p.call("XADD", "s", "3-1", "f", "v")
    crash_restart_and_read(h)


@scenario("persistence", "AOF appendfsync everysec: writes older than two seconds survive kill -9",
          config={"appendonly": "yes", "appendfsync": "everysec"}, tags=("crash-restart", "aof"))
def aof_everysec(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 2)
    time.sleep(2.2)
    p.call("XADD", "s", "3-1", "f", "recent")
    crash_restart_and_read(h)


def _aof_rewrite_restart(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 3)
    p.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    p.call("XDEL", "s", "3-1")
    p.call("XSETID", "s", "9-9")
    p.call("XGROUP", "CREATECONSUMER", "s", "g", "bob")
    p.call("BGREWRITEAOF")
    wait_persisted(h, "a")
    p.call("XACK", "s", "g", "1-1")
    h.crash("a")
    h.restart("a")
    h.settle("b")
    c = h.client("a")
    read_all(c)
    c.call("XINFO", "STREAM", "s", "FULL")
    h.client("b").call("XRANGE", "s", "-", "+")


scenario("persistence", "BGREWRITEAOF without the RDB preamble, more writes, restart: the rewritten stream and group",
         config={"appendonly": "yes", "appendfsync": "always", "aof-use-rdb-preamble": "no"},
         tags=("crash-restart", "aof", "aof-rewrite"), name="aof-rewrite-restart")(_aof_rewrite_restart)
scenario("persistence", "BGREWRITEAOF with the RDB preamble, more writes, restart",
         config={"appendonly": "yes", "appendfsync": "always", "aof-use-rdb-preamble": "yes"},
         tags=("crash-restart", "aof", "aof-rewrite", "rdb"), name="aof-rewrite-preamble-restart")(_aof_rewrite_restart)


@scenario("persistence", "A pending entry whose payload was deleted, after BGREWRITEAOF (no RDB preamble) and a restart",
          config={"appendonly": "yes", "appendfsync": "always", "aof-use-rdb-preamble": "no"},
          tags=("crash-restart", "aof", "aof-rewrite", "pending-dropped-on-reload", "deleted-while-pending"))
def aof_rewrite_drops_deleted_pending(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 2)
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    p.call("XDEL", "s", "1-1")
    p.call("XPENDING", "s", "g")
    p.call("BGREWRITEAOF")
    wait_persisted(h, "a")
    crash_restart_and_read(h)


@scenario("persistence", "A replica restarted from its synchronisation's RDB holds that snapshot, then resynchronises",
          tags=("crash-restart", "rdb", "partial-resync"))
def replica_restarts_from_sync_rdb(h: Cluster) -> None:
    p = h.client("a")
    p.call("XADD", "s", "1-1", "f", "in the snapshot")
    h.replicaof("b", "a")
    p.call("XADD", "s", "2-1", "f", "in the stream")
    h.settle("b")
    h.crash("b")
    p.call("XADD", "s", "3-1", "f", "while the replica is down")
    h.restart("b")
    c = h.client("b")
    c.call("XRANGE", "s", "-", "+")
    c.call("ROLE")
    h.replicaof("b", "a", client=c)
    c.call("XRANGE", "s", "-", "+")


@scenario("persistence", "A replica with AOF restarts as a primary holding what it had applied",
          node_config={"b": {"appendonly": "yes", "appendfsync": "always"}}, tags=("crash-restart", "aof"))
def replica_aof_restart(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 2)
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    h.settle("b")
    h.crash("b")
    h.restart("b")
    read_all(h.client("b"))


@scenario("persistence", "The primary crashes and restarts from AOF; its replica resynchronises",
          node_config={"a": {"appendonly": "yes", "appendfsync": "always"}}, tags=("crash-restart", "aof",
                                                                                   "full-resync"))
def primary_aof_restart_replica_resyncs(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    h.crash("a")
    h.restart("a")
    h.settle("b")
    h.client("a").call("XADD", "s", "2-1", "f", "v")
    h.settle("b")
    h.client("b").call("XRANGE", "s", "-", "+")


@scenario("persistence", "A paused primary: its replica serves reads, then the link recovers", tags=("pause",))
def paused_primary(h: Cluster) -> None:
    p, r = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    h.pause("a")
    r.call("XRANGE", "s", "-", "+")
    h.resume("a")
    p.call("XADD", "s", "2-1", "f", "v")
    h.settle("b")
    r.call("XLEN", "s")


# -- failover: the anomalies -----------------------------------------------------------------


def split_and_promote(h: Cluster) -> None:
    """Hold a→b (a partition), promote b, and repoint a at b (the last failover wins)."""
    h.promote("b")
    h.flow("a", "b")
    h.replicaof("a", "b")


@scenario("failover", "An acknowledged XADD is lost when the replica is promoted",
          tags=("failover", "acked-add-lost", "lost", "wait-insufficient"))
def acked_xadd_lost(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    h.hold("a", "b")
    p.call("XADD", "s", "2-1", "f", "acknowledged, never replicated")
    split_and_promote(h)
    h.client("b").call("XRANGE", "s", "-", "+")
    h.client("a").call("XRANGE", "s", "-", "+")


@scenario("failover", "WAIT counted the replica, which is then promoted: nothing is lost",
          tags=("failover", "wait", "wait-prevents-loss"))
def wait_prevents_loss(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAIT", "1", "2000")
    h.hold("a", "b")
    split_and_promote(h)
    h.client("b").call("XRANGE", "s", "-", "+")


@scenario("failover", "WAIT timed out (0 replicas): the promotion loses the XADD",
          tags=("failover", "wait", "wait-insufficient", "acked-add-lost"))
def wait_timed_out_then_lost(h: Cluster) -> None:
    p, _ = pair(h)
    h.hold("a", "b")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAIT", "1", "200")
    split_and_promote(h)
    h.client("b").call("XRANGE", "s", "-", "+")


@scenario("failover", "WAIT 1 met by one replica, another replica is promoted: the XADD is lost", nodes=3,
          tags=("failover", "wait", "wait-insufficient", "acked-add-lost"))
def wait_met_by_the_other_replica(h: Cluster) -> None:
    h.replicaof("b", "a")
    h.replicaof("c", "a")
    p = h.client("a")
    h.hold("a", "b")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAIT", "1", "2000")
    h.promote("b")
    h.flow("a", "b")
    h.replicaof("c", "b")
    h.replicaof("a", "b")
    h.client("b").call("XRANGE", "s", "-", "+")
    h.client("c").call("XRANGE", "s", "-", "+")


@scenario("failover", "An XACKed entry is pending again after the promotion",
          tags=("failover", "acked-pending-again", "redelivered-after-ack"))
def acked_pending_again(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 2)
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    h.settle("b")
    h.hold("a", "b")
    p.call("XACK", "s", "g", "1-1", "2-1")
    split_and_promote(h)
    c = h.client("b")
    c.call("XPENDING", "s", "g", "-", "+", "10")
    c.call("XAUTOCLAIM", "s", "g", "bob", "0", "0")


@scenario("failover", "The group's last-delivered-id goes back, so > delivers the same entries again",
          tags=("failover", "last-delivered-regressed", "two-owners", "double-processing"))
def last_delivered_regressed(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 2)
    h.settle("b")
    h.hold("a", "b")
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    p.call("XINFO", "GROUPS", "s")
    p.call("XACK", "s", "g", "1-1", "2-1")
    split_and_promote(h)
    c = h.client("b")
    c.call("XINFO", "GROUPS", "s")
    c.call("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")


@scenario("failover", "Two consumers own one entry: alice read it on the old primary, bob on the new one",
          tags=("failover", "two-owners", "double-processing"))
def two_owners(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 1)
    h.settle("b")
    h.hold("a", "b")
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    split_and_promote(h)
    c = h.client("b")
    c.call("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    c.call("XPENDING", "s", "g", "-", "+", "10")


@scenario("failover", "Two owners with NOACK: the entry is delivered twice",
          tags=("failover", "two-owners", "double-processing"))
def two_owners_noack(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 1)
    h.settle("b")
    h.hold("a", "b")
    p.call("XREADGROUP", "GROUP", "g", "alice", "NOACK", "STREAMS", "s", ">")
    split_and_promote(h)
    h.client("b").call("XREADGROUP", "GROUP", "g", "bob", "NOACK", "STREAMS", "s", ">")


@scenario("failover", "History reads bump the delivery count only on the primary; after promotion it is lower",
          tags=("failover", "delivery-count-regressed", "wait"))
def delivery_count_regressed(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 1)
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    p.call("WAIT", "1", "2000")
    p.call("XPENDING", "s", "g", "-", "+", "10")
    partition_and_promote(h, "XPENDING", "s", "g", "-", "+", "10")


@scenario("failover", "Consumers created by XREADGROUPs that got nothing vanish on promotion",
          tags=("failover", "consumer-vanished", "wait"))
def consumer_vanished(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("XGROUP", "CREATE", "s", "g", "$")
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    p.call("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    p.call("XREADGROUP", "GROUP", "g", "carol", "BLOCK", "10", "STREAMS", "s", ">")
    p.call("XINFO", "CONSUMERS", "s", "g")
    p.call("WAIT", "1", "2000")
    partition_and_promote(h, "XINFO", "CONSUMERS", "s", "g")


@scenario("failover", "XCLAIM that claims nothing: its consumer on the primary and on the promoted replica",
          tags=("failover", "consumer-vanished"))
def consumer_vanished_xclaim(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 1)
    p.call("XCLAIM", "s", "g", "carol", "0", "1-1")
    p.call("XINFO", "CONSUMERS", "s", "g")
    partition_and_promote(h, "XINFO", "CONSUMERS", "s", "g")


@scenario("failover", "A deleted entry comes back after the promotion",
          tags=("failover", "deleted-entry-returned"))
def deleted_entry_returned(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 2)
    h.settle("b")
    h.hold("a", "b")
    p.call("XDEL", "s", "1-1")
    p.call("XTRIM", "s", "MAXLEN", "0")
    split_and_promote(h)
    h.client("b").call("XRANGE", "s", "-", "+")


@scenario("failover", "An ID issued twice after promotion; a stale XACK acknowledges the new entry",
          tags=("failover", "id-reissued", "id-reuse", "stale-ack", "acked-add-lost"))
def id_reissued_stale_ack(h: Cluster) -> None:
    p, _ = pair(h)
    # An ID far in the future makes * give last-ID + 1 on both primaries, whatever their clocks say.
    p.call("XADD", "s", "99999999999999-0", "f", "v")
    p.call("XGROUP", "CREATE", "s", "g", "$")
    h.settle("b")
    h.hold("a", "b")
    p.call("XADD", "s", "*", "job", "old")
    alice = h.client("a")
    alice.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    split_and_promote(h)
    b = h.client("b")
    b.call("XADD", "s", "*", "job", "new")
    b.call("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    stale = h.client("b")
    stale.call("XACK", "s", "g", "99999999999999-1")
    b.call("XPENDING", "s", "g")
    b.call("XACK", "s", "g", "99999999999999-1")


@scenario("failover", "entries-read and lag on the replica after reads by the primary",
          tags=("lag-diverged", "replica-reads"))
def lag_on_replica(h: Cluster) -> None:
    p, r = pair(h)
    group_with(h, p, 3)
    p.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    p.call("XINFO", "GROUPS", "s")
    h.settle("b")
    r.call("XINFO", "GROUPS", "s")


@scenario("failover", "Pending entries' delivery times on the replica come from the primary's clock",
          tags=("replica-reads",))
def delivery_time_from_primary(h: Cluster) -> None:
    p, r = pair(h)
    group_with(h, p, 1)
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    h.settle("b")
    time.sleep(0.05)
    p.call("XPENDING", "s", "g", "-", "+", "10")
    r.call("XPENDING", "s", "g", "-", "+", "10")
    r.call("XINFO", "STREAM", "s", "FULL")


@scenario("failover", "Promotion of a synchronised replica keeps the group; the old primary follows",
          tags=("failover", "partial-resync"))
def clean_promotion(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 2)
    p.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    h.settle("b")
    h.promote("b")
    h.replicaof("a", "b")
    c = h.client("b")
    read_all(c)
    c.call("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    h.settle("a")
    read_all(h.client("a"))


@scenario("failover", "The primary crashes without persistence; the replica is promoted and keeps everything",
          tags=("failover", "crash-restart", "no-persistence"))
def primary_crash_promote(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 2)
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    h.settle("b")
    h.crash("a")
    h.promote("b")
    h.restart("a")
    h.replicaof("a", "b")
    read_all(h.client("a"))


# -- the FAILOVER command ---------------------------------------------------------------------


def wait_role(h: Cluster, node: str, role: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while h.info(node).get("role") != role:
        if time.monotonic() > deadline:
            raise HarnessError(f"node {node} did not become {role}")
        time.sleep(0.02)


@scenario("failover-command", "FAILOVER to the only replica: the roles swap, nothing is lost",
          tags=("failover-command", "wait-prevents-loss"))
def failover_command(h: Cluster) -> None:
    p, _ = pair(h)
    group_with(h, p, 2)
    p.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    p.call("FAILOVER")
    wait_role(h, "b", "master")
    wait_role(h, "a", "slave")
    h.settle("a")
    c = h.client("b")
    read_all(c)
    c.call("XADD", "s", "3-1", "f", "v")
    h.settle("a")
    a = h.client("a")
    a.call("XRANGE", "s", "-", "+")
    a.call("XADD", "s", "4-1", "f", "v")


@scenario("failover-command", "FAILOVER TO one of two replicas; the other follows the new primary", nodes=3,
          tags=("failover-command",))
def failover_to(h: Cluster) -> None:
    h.replicaof("b", "a")
    h.replicaof("c", "a")
    p = h.client("a")
    p.call("XADD", "s", "1-1", "f", "v")
    host, port = h.addr("c")
    p.call("FAILOVER", "TO", host, str(port))
    wait_role(h, "c", "master")
    wait_role(h, "a", "slave")
    h.replicaof("b", "c")
    h.client("c").call("XADD", "s", "2-1", "f", "v")
    h.settle("a", "b")
    h.client("b").call("XRANGE", "s", "-", "+")


@scenario("failover-command", "FAILOVER TIMEOUT while the link is held: it is aborted and the primary stays",
          tags=("failover-command",))
def failover_timeout(h: Cluster) -> None:
    p, _ = pair(h)
    h.hold("a", "b")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("FAILOVER", "TIMEOUT", "300")
    w = h.client("a")
    w.send("XADD", "s", "2-1", "f", "v")
    time.sleep(0.6)
    w.recv()
    h.flow("a", "b")
    h.settle("b")
    h.client("a").call("ROLE")


@scenario("failover-command", "FAILOVER ABORT, FAILOVER errors, and FAILOVER on a replica",
          tags=("failover-command",))
def failover_abort(h: Cluster) -> None:
    p, r = pair(h)
    p.call("FAILOVER", "ABORT")
    p.call("FAILOVER", "FORCE")
    p.call("FAILOVER", "TO", "127.0.0.1", "1")
    r.call("FAILOVER")
    h.hold("a", "b")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("FAILOVER", "TIMEOUT", "5000")
    p2 = h.client("a")
    p2.call("ROLE")
    p2.call("FAILOVER", "ABORT")
    h.flow("a", "b")
    h.settle("b")
    p2.call("ROLE")


@scenario("failover-command", "FAILOVER TO … TIMEOUT … FORCE with a held link: the replica is promoted anyway",
          tags=("failover-command", "acked-add-lost"))
def failover_force(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    h.settle("b")
    h.hold("a", "b")
    p.call("XADD", "s", "2-1", "f", "lost when forced")
    host, port = h.addr("b")
    p.call("FAILOVER", "TO", host, str(port), "TIMEOUT", "300", "FORCE")
    time.sleep(0.5)
    h.flow("a", "b")
    wait_role(h, "b", "master")
    wait_role(h, "a", "slave")
    h.settle("a")
    h.client("b").call("XRANGE", "s", "-", "+")
    h.client("a").call("XRANGE", "s", "-", "+")


def find(name: str) -> ClusterScenario:
    for s in SCENARIOS:
        if f"{s.topic}/{s.name}" == name or s.name == name:
            return s
    raise KeyError(name)
