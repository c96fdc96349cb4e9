"""Recording the replication corpus: each scenario on fresh servers, one trace/2 file each, and a README."""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from xspec.spec.trace_format import Trace, dump, load
from xspec.traces.cluster.harness import Cluster
from xspec.traces.cluster.nodes import ServerKind
from xspec.traces.cluster.scenarios import SCENARIOS, ClusterScenario


@dataclass
class Recorded:
    scenario: ClusterScenario
    path: Path | None
    seconds: float
    error: str | None = None


def record(scenario: ClusterScenario, kind: ServerKind) -> Trace:
    """Run one scenario on fresh servers of ``kind`` and return its trace (servers stopped afterwards)."""
    cluster = Cluster(kind, scenario.nodes, config=scenario.config, node_config=scenario.node_config,
                      title=scenario.title, tags=scenario.all_tags)
    with cluster:
        scenario.run(cluster)
        trace = cluster.trace()
        if cluster.problems:
            raise RuntimeError("; ".join(cluster.problems))
    return trace


def select(pattern: str | None) -> list[ClusterScenario]:
    """The scenarios whose ``topic/name`` matches the glob (or contains the text) ``pattern``."""
    return [s for s in SCENARIOS if pattern is None or fnmatch.fnmatch(f"{s.topic}/{s.name}", pattern)
            or pattern in f"{s.topic}/{s.name}"]


def record_corpus(kind: ServerKind, out: Path, scenarios: Iterable[ClusterScenario],
                  progress: Callable[[Recorded], None] | None = None) -> list[Recorded]:
    """Record each scenario into ``out/<topic>/<name>.jsonl``; a failing scenario is reported, not written."""
    results = []
    for scenario in scenarios:
        start = time.monotonic()
        try:
            trace = record(scenario, kind)
            path = out / scenario.path
            dump(trace, path)
            load(path)  # what was written reads back under every rule of the format
            result = Recorded(scenario, path, time.monotonic() - start)
        except Exception as e:  # noqa: BLE001 - one scenario's failure is reported and the rest go on
            result = Recorded(scenario, None, time.monotonic() - start, f"{type(e).__name__}: {e}")
        results.append(result)
        if progress is not None:
            progress(result)
    return results


def readme(kind: ServerKind, scenarios: list[ClusterScenario]) -> str:
    """The corpus README: how it was recorded and every scenario with its tags."""
    lines = [
        f"# Replication corpus: {kind.name.capitalize()} {kind.version}",
        "",
        f"Every trace here is a `trace/2` recorded from real {kind.name}-server {kind.version} processes on",
        "loopback by the harness in `traces/cluster/` (scenarios in `traces/cluster/scenarios.py`). Re-record with",
        "",
        f"    xspec record-cluster --server {kind.label} --out traces/replication/{kind.label}",
        "",
        "Each scenario starts fresh servers (one primary and one or two replicas, named a, b, c; each from its",
        "own config file naming every persistence and replication setting, `repl-diskless-sync-delay 0`, data in",
        "a temporary folder), makes the replicas with recorded `REPLICAOF` commands through the harness's",
        "proxies, and records every client command, every fault (crash = kill -9, restart, pause = SIGSTOP,",
        "resume = SIGCONT), every change of a link (held, flowing, cut) and everything that passed on each",
        "replication link (`repl` events: the PSYNC answer, the stream's commands, the acknowledgements).",
        "Replies depending on the host (INFO figures, CLIENT ID) and on real time (`*` IDs, idle and delivery",
        "times, replication IDs, ports) differ between recordings; everything else is reproducible.",
        "",
        "Trace tags name anomalies as `spec/anomalies.md` does.",
        "",
        "| trace | what it shows | tags |",
        "| --- | --- | --- |",
    ]
    for s in scenarios:
        tags = ", ".join(f"`{t}`" for t in s.all_tags if t != "replication")
        lines.append(f"| `{s.path}` | {s.title} | {tags} |")
    return "\n".join(lines) + "\n"
