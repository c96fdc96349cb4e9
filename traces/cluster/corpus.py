"""Recording the replication corpus: each scenario on fresh servers, one trace/2 file each, and a README."""

from __future__ import annotations

import fnmatch
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from xspec.spec.dialect import dialect_for_server
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


# ---------------------------------------------------------------------------
# The negative corpus: recorded traces with one reply changed


NEGATIVE_MANIFEST = "MANIFEST.json"
NEGATIVE_KINDS = ("wait-count", "group-after-failover", "after-failover", "after-resync", "replica", "primary")
"""Where a changed reply stands, most telling first: a WAIT's count; a consumer group's state (XINFO,
XPENDING, a read or claim by a group) after a promotion; any other reply after a promotion; on a
replica after a resynchronisation; on a replica; on the primary."""
_GROUP_COMMANDS = ("XINFO", "XPENDING", "XREADGROUP", "XCLAIM", "XAUTOCLAIM", "XACK")


@dataclass(frozen=True)
class Mutant:
    """One reply of a recorded trace changed: the trace must then diverge at exactly that event."""

    source: str  # the recorded trace, relative to the corpora folder (traces/replication)
    event: int  # the trace format's event number (line number minus 1) whose reply changed
    node: str
    kind: str  # one of NEGATIVE_KINDS
    command: str
    was: Any  # the reply as recorded (JSON form)
    now: Any  # the reply written instead
    dialect: str = "redis-7.0"  # the dialect of the recorded servers, which the expectation names


def changed_reply(reply: Any) -> Any | None:
    """A different reply of the same shape (JSON form), None when there is nothing to change: an
    integer one less (one more from 0), a string with an ``x`` added, the first such item of an array."""
    if "int" in reply:
        return {"int": reply["int"] - 1 if reply["int"] > 0 else reply["int"] + 1}
    if isinstance(reply.get("bulk"), str):
        return {"bulk": reply["bulk"] + "x"}
    for key in ("simple", "error"):
        if isinstance(reply.get(key), str):
            return {key: reply[key] + "x"}
    if "array" in reply:
        for n, item in enumerate(reply["array"]):
            new = changed_reply(item)
            if new is not None:
                return {"array": [*reply["array"][:n], new, *reply["array"][n + 1:]]}
    return None


def mutation_sites(lines: list[str]) -> list[tuple[str, int, str, str]]:
    """The replies of a trace/2 file (its JSON lines) that a negative trace may change, as
    ``(kind, event, node, command)``, most telling kind first, later events first within a kind."""
    events = [json.loads(line) for line in lines[1:]]
    nodes: dict[int, str] = {}
    pending: dict[int, list[str]] = {}
    replicas: set[str] = set()
    synced: dict[str, int] = {}
    promoted = False
    sites = []
    for i, e in enumerate(events, 1):
        ev = e.get("ev")
        if ev in ("call", "send") and "node" in e:
            nodes[e["c"]] = e["node"]
        if ev == "repl" and "sync" in e:
            synced[e["to"]] = synced.get(e["to"], 0) + 1
            replicas.add(e["to"])
        if ev == "send" and e.get("cmd"):
            pending.setdefault(e["c"], []).append(e["cmd"][0].upper())
        if ev in ("call", "send") and e.get("cmd") and [a.upper() for a in e["cmd"]] in (
                ["REPLICAOF", "NO", "ONE"], ["SLAVEOF", "NO", "ONE"]):
            promoted = True  # a promotion: what follows shows the failover
        if ev not in ("call", "recv"):
            continue
        node = nodes.get(e["c"], "")
        command = e["cmd"][0].upper() if ev == "call" else (pending.get(e["c"]) or ["?"]).pop(0)
        if changed_reply(e["reply"]) is None or command in ("REPLICAOF", "SLAVEOF", "INFO", "CLIENT"):
            continue
        if command == "WAIT":
            kind = "wait-count"
        elif promoted and command in _GROUP_COMMANDS:
            kind = "group-after-failover"
        elif promoted:
            kind = "after-failover"
        elif node in replicas and synced.get(node, 0) > 1:
            kind = "after-resync"
        elif node in replicas:
            kind = "replica"
        else:
            kind = "primary"
        sites.append((kind, i, node, command))
    sites.sort(key=lambda s: (NEGATIVE_KINDS.index(s[0]), -s[1]))
    return sites


def negative_trace(lines: list[str], m: Mutant) -> str:
    """The text of the trace ``lines`` with ``m``'s reply changed and its expectation in the header."""
    header = json.loads(lines[0])
    header["expect"] = {"verdict": "diverge", "dialect": m.dialect, "event": m.event, "node": m.node}
    header["title"] = f"{header.get('title', '')} (negative: the {m.command} reply at event {m.event} changed)"
    header["source"] = "written"
    out = [json.dumps(header)] + lines[1:]
    e = json.loads(out[m.event])
    e["reply"] = m.now
    out[m.event] = json.dumps(e, separators=(",", ":"))
    return "\n".join(out) + "\n"


def choose_negatives(sources: list[tuple[str, list[str]]], count: int,
                     rejected: Callable[[str, Mutant], bool]) -> list[Mutant]:
    """``count`` mutants, at most one per source trace (``(name, lines)``), the kinds kept even: for
    each source the sites of the kind chosen least so far are tried first, and a mutant is taken
    when ``rejected(text, mutant)`` (rejected at exactly its event, fast)."""
    chosen: list[Mutant] = []
    taken = dict.fromkeys(NEGATIVE_KINDS, 0)
    for name, lines in sources:
        if len(chosen) >= count:
            break
        events = [json.loads(line) for line in lines[1:]]
        server = next(iter(json.loads(lines[0])["nodes"].values()))["server"]
        dialect = dialect_for_server(server["name"], server["version"]).name
        sites = sorted(mutation_sites(lines), key=lambda s: (s[0] == "primary", taken[s[0]]))
        for kind, event, node, command in sites[:6]:
            was = events[event - 1]["reply"]
            m = Mutant(name, event, node, kind, command, was, changed_reply(was), dialect)
            if rejected(negative_trace(lines, m), m):
                chosen.append(m)
                taken[kind] += 1
                break
    return chosen


def write_negative_corpus(corpora: Path, mutants: list[Mutant]) -> None:
    """``corpora/negative/<source>`` for each mutant, and the manifest naming each one's event."""
    out = corpora / "negative"
    for m in mutants:
        lines = (corpora / m.source).read_text(encoding="utf-8").splitlines()
        target = out / m.source
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(negative_trace(lines, m), encoding="utf-8")
    manifest = [{"trace": m.source, **{k: v for k, v in asdict(m).items() if k != "source"}} for m in mutants]
    (out / NEGATIVE_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
