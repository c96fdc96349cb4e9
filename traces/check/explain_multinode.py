"""``xspec explain`` for trace/2: the execution the checker found, step by step, with every node's
state (role, replication ID, offset, backlog, streams and groups) and every link (phase, what it
holds, the acknowledged offset) after each step.

The witness of :mod:`xspec.traces.check.multinode` is replayed on a fresh deployment: client
commands on their nodes with the clock readings the checker chose, the internal steps it placed
(``apply b``, ``ack b``, ``fork a``...), and the harness's events where the trace has them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, TextIO

from xspec.models.replication import Deployment
from xspec.models.state import Stream
from xspec.spec.resp import Reply, show
from xspec.spec.trace_format import Crash, Link, Pause, ReplAck, ReplCmd, ReplSync, Restart, Resume, Trace
from xspec.traces.check import checker
from xspec.traces.check.multinode import node_dialects
from xspec.traces.check.witness import ReadingsClock, WitnessStep


@dataclass
class NodeStep:
    """One step of the replayed execution and the state after it."""

    what: str
    reply: Reply | None = None
    served: list[tuple[int, Reply]] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


def node_lines(d: Deployment) -> list[str]:
    """Each node's replication state and data, one line each."""
    out = []
    for name, node in sorted(d.nodes.items()):
        if not node.up:
            out.append(f"{name}: down")
            continue
        role = "primary" if node.master is None else f"replica of {node.master[0]}:{node.master[1]}"
        backlog = "none" if node.backlog is None else f"{node.backlog.first}+{node.backlog.histlen}"
        data = []
        for dbi, db in enumerate(node.server.dbs):
            for key, v in sorted(db.items()):
                if isinstance(v, Stream):
                    groups = ", ".join(
                        f"{g.name.decode('latin-1')}: last {g.last_id} pel {len(g.pel)}"
                        + "".join(f" {c.name.decode('latin-1')}={len(c.pel)}" for c in g.consumers.values())
                        for g in v.groups.values())
                    data.append(f"{'' if dbi == 0 else f'db{dbi}:'}{key.decode('latin-1')} len {v.length} "
                                f"last {v.last_id}" + (f" [{groups}]" if groups else ""))
        paused = " (paused)" if node.paused else ""
        out.append(f"{name}{paused}: {role}, replid {node.replid[:8]} offset {node.offset} backlog {backlog}"
                   + (f"; {'; '.join(data)}" if data else ""))
    return out


def link_lines(d: Deployment) -> list[str]:
    return [f"{link.primary}→{link.replica}: {link.phase}{' held' if link.held else ''}, "
            f"{len(link.pending)} to apply, acked {link.ack}" for _, link in sorted(d.links.items())]


def replay(trace: Trace, steps: tuple[WitnessStep, ...], dialect: str | None = None) -> list[NodeStep]:
    """Run the witness's steps on a fresh deployment; the state after each."""
    dialects = node_dialects(trace, dialect)
    specs = {name: {"dialect": dialects[name], "addrs": list(s.addrs), "config": dict(s.config),
                    "skew_ms": s.skew_ms or 0} for name, s in trace.header.node_specs().items()}
    first = next((r for s in steps for r in s.readings), 0)
    clock = ReadingsClock(first)
    d = Deployment(specs, clock)
    client_nodes = trace.client_nodes()
    choices: deque[int] = deque()
    for node in d.nodes.values():
        node.server.chooser = lambda n: choices.popleft() if choices else 0
    out: list[NodeStep] = []
    for step in steps:
        clock.load(step.readings)
        choices.extend(step.model_choices)
        result = NodeStep("")
        if step.kind == "command":
            assert step.argv is not None
            where = client_nodes[step.client]
            o = d.execute(where, step.client, step.argv)
            result = NodeStep(f"{where} c{step.client}: {' '.join(a.decode('latin-1') for a in step.argv)}",
                              o.reply, list(o.served))
        elif step.kind == "timeout":
            where = client_nodes[step.client]
            clock.now_ms()
            result = NodeStep(f"{where} c{step.client}: timed out", d.nodes[where].server.timeout(step.client))
        elif step.kind == "close":
            server = d.nodes[client_nodes[step.client]].server
            server.close(step.client)
            result = NodeStep(f"c{step.client} closed")
        elif isinstance(step.client, str) and step.client.startswith("event "):
            result = NodeStep(_harness(d, trace, int(step.client.split()[1]), step.model_choices))
        elif isinstance(step.client, str):
            kind, name = step.client.split()
            o = d.step(kind, name)
            result = NodeStep(f"{name}: {kind}", None, list(o.served))
        else:
            d.nodes[client_nodes[step.client]].server.client(step.client)
            result = NodeStep(f"c{step.client} connected")
        result.nodes = node_lines(d)
        result.links = link_lines(d)
        out.append(result)
    return out


def _harness(d: Deployment, trace: Trace, p: int, choices: tuple[int, ...]) -> str:
    e: Any = trace.events[p]
    if isinstance(e, Crash):
        d.crash(e.node)
        return f"{e.node} crashed"
    if isinstance(e, Restart):
        keep = choices[0] if choices and choices[0] >= 0 else None
        d.restart(e.node, keep)
        return f"{e.node} restarted" + ("" if keep is None else f" with {keep} AOF units after the base")
    if isinstance(e, Pause):
        d.pause(e.node)
        return f"{e.node} paused"
    if isinstance(e, Resume):
        d.resume(e.node)
        return f"{e.node} resumed"
    if isinstance(e, Link):
        d.set_link(e.primary, e.replica, e.state)
        return f"link {e.primary}→{e.replica} {e.state}"
    if isinstance(e, ReplAck):
        link = d.links.get(e.replica)
        if link is not None:
            link.ack = max(link.ack, e.ack)
            d._serve_waiting(d.nodes[e.primary])
        return f"{e.replica} acknowledges {e.ack}"
    if isinstance(e, ReplCmd):
        return f"repl {e.primary}→{e.replica}: {' '.join(a.decode('latin-1') for a in e.cmd)}"
    if isinstance(e, ReplSync):
        return f"repl {e.primary}→{e.replica}: {e.sync} resynchronisation" + (
            "" if e.offset is None else f" at offset {e.offset}")
    return f"event {p + 1}: {type(e).__name__}"


def explain_multinode_trace(trace: Trace, out: TextIO, dialect: str | None = None) -> checker.Verdict:
    """Print the checker's execution of a trace/2 with every node's state after each step."""
    verdict = checker.check_trace(trace, dialect)
    title = trace.header.title or trace.path
    out.write(f"{title}\n{trace.path} · {len(trace.header.node_specs())} nodes · {trace.header.clock} clock\n")
    witness = verdict.witness
    if witness is None or not witness.steps:
        out.write(f"\nverdict: {verdict.describe()}\n")
        return verdict
    for n, step in enumerate(replay(trace, witness.steps, dialect), 1):
        out.write(f"\n{n}. {step.what}\n")
        if step.reply is not None:
            out.write(f"   → {show(step.reply)}\n")
        for cid, reply in step.served:
            out.write(f"   serves c{cid} → {show(reply)}\n")
        for line in step.nodes + step.links:
            out.write(f"   {line}\n")
    out.write(f"\nverdict: {verdict.describe()}\n")
    return verdict
