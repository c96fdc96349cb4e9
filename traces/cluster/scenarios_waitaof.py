"""WAITAOF scenarios (Redis 7.2+, Valkey): what a primary's and its replicas' AOF fsyncs let WAITAOF count.

Kept apart from :mod:`xspec.traces.cluster.scenarios`, whose corpus every server records: 7.0 and 6.2
have no WAITAOF. :data:`SCENARIOS_WAITAOF` is recorded for the servers that have it, e.g.
``record_corpus(kind, out, SCENARIOS_WAITAOF)``. Rules: spec/rules/replication.md, WAITAOF-1 .. WAITAOF-3.
"""

from __future__ import annotations

from collections.abc import Callable

from xspec.traces.cluster.harness import Cluster
from xspec.traces.cluster.scenarios import ClusterScenario, ScenarioFn, pair

SCENARIOS_WAITAOF: list[ClusterScenario] = []

_ALWAYS = {"appendonly": "yes", "appendfsync": "always"}


def waitaof_scenario(title: str, *, nodes: int = 2, config: dict[str, str] | None = None,
                     node_config: dict[str, dict[str, str]] | None = None) -> Callable[[ScenarioFn], ScenarioFn]:
    """Add ``fn`` to :data:`SCENARIOS_WAITAOF` as ``waitaof/<fn name with dashes>``."""
    def register(fn: ScenarioFn) -> ScenarioFn:
        SCENARIOS_WAITAOF.append(ClusterScenario("waitaof", fn.__name__.replace("_", "-"), title, fn,
                                                 ("a", "b", "c")[:nodes], ("wait",), dict(config or {}),
                                                 dict(node_config or {})))
        return fn
    return register


@waitaof_scenario("WAITAOF on a lone primary (its own fsync), then with a replica that has an AOF", config=_ALWAYS)
def waitaof_local_then_replica(h: Cluster) -> None:
    p = h.client("a")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAITAOF", "1", "0", "0")
    p.call("WAITAOF", "0", "1", "100")
    p.call("WAITAOF", "2", "0", "0")
    h.replicaof("b", "a")
    p.call("XADD", "s", "2-1", "f", "v")
    p.call("WAITAOF", "1", "1", "2000")
    p.call("WAIT", "1", "0")
    h.client("b").call("WAITAOF", "0", "0", "0")


@waitaof_scenario("A replica without an AOF sends no FACK: WAIT counts it, WAITAOF does not",
                  config=_ALWAYS, node_config={"b": {"appendonly": "no"}})
def waitaof_replica_without_aof(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAIT", "1", "2000")
    p.call("WAITAOF", "0", "1", "200")
    p.call("WAITAOF", "1", "0", "0")


@waitaof_scenario("WAITAOF times out while the link is held, and is met once it flows", config=_ALWAYS)
def waitaof_held(h: Cluster) -> None:
    p, _ = pair(h)
    h.hold("a", "b")
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAITAOF", "0", "1", "200")
    h.flow("a", "b")
    p.call("WAITAOF", "0", "1", "2000")


@waitaof_scenario("WAITAOF under appendfsync everysec waits for the background fsync",
                  config={"appendonly": "yes", "appendfsync": "everysec"})
def waitaof_everysec(h: Cluster) -> None:
    p, _ = pair(h)
    p.call("XADD", "s", "1-1", "f", "v")
    p.call("WAITAOF", "1", "1", "3000")
    p.call("MULTI")
    p.call("WAITAOF", "1", "2", "0")
    p.call("EXEC")
