"""``xspec explain`` for trace/2: the execution the checker found, step by step, with every node's
state (role, replication ID, offset, backlog, streams and groups) and every link (phase, what it
holds, the acknowledged offset) after each step.

The witness of :mod:`xspec.traces.check.multinode` is replayed on a fresh deployment: client
commands on their nodes with the clock readings the checker chose, the internal steps it placed
(``apply b``, ``ack b``, ``fork a``...), and the harness's events where the trace has them.
Each step also says where it happened for a time-space diagram (its node, the node an arrow
goes to, a fault's mark) and keeps the deployment's state as rows (:func:`deployment_rows`:
a ``nodes`` and a ``links`` table, and every up node's :mod:`~xspec.traces.check.state_tables`
rows keyed by node), which ``xspec view`` embeds.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from xspec.models.replication import Deployment, Node
from xspec.models.state import Stream
from xspec.spec.resp import Reply, show
from xspec.spec.rule_index import RuleIndex, load_index
from xspec.spec.trace_format import Crash, Link, Pause, ReplAck, ReplCmd, ReplSync, Restart, Resume, Trace
from xspec.traces.check import checker
from xspec.traces.check.multinode import node_dialects
from xspec.traces.check.state_tables import Snapshot, state_rows
from xspec.traces.check.witness import ReadingsClock, RuleTracer, WitnessStep, rule_filter

NODE_TABLES: dict[str, tuple[str, ...]] = {
    "nodes": ("state", "role", "replid", "offset", "backlog"),
    "links": ("phase", "held", "to-apply", "acked"),
}
"""The deployment's own tables: per node its process state (up, paused, down), role, replication
ID, ``master_repl_offset`` and backlog (``first+length`` bytes); per link (keyed primary,
replica) its phase, whether the harness holds it, the commands sent and not yet applied, and the
offset the replica acknowledged."""
NODE_KEY_COLUMNS: dict[str, tuple[str, ...]] = {"nodes": ("node",), "links": ("primary", "replica")}
NODE_TITLES = {"nodes": "Nodes (replication)", "links": "Replication links"}

ARROW_TO_PRIMARY = frozenset({"connect", "ack", "getack"})
"""Internal steps of a replica that send to its primary (the others it receives: ``apply``, ``load``)."""


@dataclass
class NodeStep:
    """One step of the replayed execution and the state after it.

    ``kind`` is the witness step's (``command``, ``timeout``, ``close``, ``connect``), ``internal``
    for a step of the servers themselves (``apply``, ``ack``, ``fork``...: ``what`` names it) or
    ``harness`` for an event of the harness (``mark``: crash, restart, pause, resume, link, repl).
    ``node`` is where it happened; ``to`` the other end of an arrow (a replication link's step),
    ``event`` the trace event it ran (index into ``trace.events``), ``now`` the clock after it.
    """

    what: str
    reply: Reply | None = None
    served: list[tuple[int, Reply]] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    kind: str = ""
    node: str | None = None
    client: int | None = None
    argv: list[bytes] | None = None
    blocked: bool = False
    to: str | None = None
    mark: str | None = None
    event: int | None = None
    now: int | None = None
    state: Snapshot = field(default_factory=dict)
    rules: list[str] = field(default_factory=list)  # with ``replay(rules=True)``: the rules its model lines cite


def node_name_of(d: Deployment, address: tuple[str, int] | None) -> str | None:
    """The node listening on ``address`` (a ``REPLICAOF host port``), or None."""
    if address is None:
        return None
    for name, node in d.nodes.items():
        if tuple(address) in {tuple(a) for a in node.addrs}:
            return name
    return None


def _role(d: Deployment, node: Node) -> str:
    if node.master is None:
        return "primary"
    name = node_name_of(d, node.master)
    return f"replica of {name}" if name is not None else f"replica of {node.master[0]}:{node.master[1]}"


def deployment_rows(d: Deployment) -> Snapshot:
    """The deployment's state as rows: ``("nodes", name)``, ``("links", primary, replica)``, and each up
    node's state rows with the node's name after the table's (``("pending", "a", 0, key, group, id)``)."""
    rows: Snapshot = {}
    for name, node in sorted(d.nodes.items()):
        state = "down" if not node.up else "paused" if node.paused else "up"
        backlog = None if node.backlog is None else f"{node.backlog.first}+{node.backlog.histlen}"
        rows[("nodes", name)] = (state, _role(d, node), node.replid, node.offset, backlog)
        if node.up:
            for row, values in state_rows(node.server).items():
                rows[(row[0], name, *row[1:])] = values
    for _, link in sorted(d.links.items()):
        rows[("links", link.primary, link.replica)] = (link.phase, link.held, len(link.pending), link.ack)
    return rows


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


def _step_rules(index: RuleIndex, argv: list[bytes] | None, dialect: str) -> Callable[[str], bool]:
    """Which cited rules are about a step: its command's (for a command) and those of no command."""
    families: set[str] = set()
    if argv:
        name = argv[0].decode("utf-8", "backslashreplace").upper()
        families = {*index.families.get(name, frozenset()), name}
    return rule_filter(index, families, dialect)


def replay(trace: Trace, steps: tuple[WitnessStep, ...], dialect: str | None = None,
           rules: bool = False) -> list[NodeStep]:
    """Run the witness's steps on a fresh deployment; the state after each (and with ``rules``, the
    rules cited by the model lines each step ran that are about it, :class:`RuleTracer`)."""
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
    index = load_index() if rules else None
    out: list[NodeStep] = []
    for step in steps:
        clock.load(step.readings)
        choices.extend(step.model_choices)
        tracer = RuleTracer(index) if index is not None else None
        with tracer if tracer is not None else contextlib.nullcontext():
            result = _run_step(d, trace, step, clock, client_nodes)
        if tracer is not None and index is not None:
            node_name = result.node or next(iter(dialects))
            keep = _step_rules(index, result.argv if result.kind == "command" else None, dialects[node_name].name)
            result.rules = [r for r in tracer.checked if keep(r)]
        result.nodes = node_lines(d)
        result.links = link_lines(d)
        result.state = deployment_rows(d)
        result.now = clock.ms
        out.append(result)
    return out


def _run_step(d: Deployment, trace: Trace, step: WitnessStep, clock: ReadingsClock,
              client_nodes: dict[int, str]) -> NodeStep:
    """Run one witness step on the deployment; what it was and did (the state is added by the caller)."""
    result: NodeStep
    if step.kind == "command":
        assert step.argv is not None
        where = client_nodes[step.client]
        o = d.execute(where, step.client, step.argv)
        result = NodeStep(f"{where} c{step.client}: {' '.join(a.decode('latin-1') for a in step.argv)}",
                          o.reply, list(o.served), kind="command", node=where, client=step.client,
                          argv=step.argv, blocked=o.blocked, event=step.event)
    elif step.kind == "timeout":
        where = client_nodes[step.client]
        clock.now_ms()
        result = NodeStep(f"{where} c{step.client}: timed out", d.nodes[where].server.timeout(step.client),
                          kind="timeout", node=where, client=step.client, argv=step.argv,
                          event=step.reply_event)
    elif step.kind == "close":
        server = d.nodes[client_nodes[step.client]].server
        server.close(step.client)
        result = NodeStep(f"c{step.client} closed", kind="close", node=client_nodes[step.client],
                          client=step.client, event=step.event)
    elif isinstance(step.client, str) and step.client.startswith("event "):
        p = int(step.client.split()[1])
        result = NodeStep(_harness(d, trace, p, step.model_choices), kind="harness", event=p)
        result.node, result.to, result.mark = harness_place(trace.events[p])
    elif isinstance(step.client, str):
        kind, name = step.client.split()
        link = d.links.get(name)
        primary = link.primary if link is not None else node_name_of(d, d.nodes[name].master)
        o = d.step(kind, name)
        result = NodeStep(f"{name}: {kind}", None, list(o.served), kind="internal", node=name, mark=kind)
        if primary is not None and kind in ARROW_TO_PRIMARY:
            result.to = primary
        elif primary is not None and kind in ("apply", "load"):
            result.node, result.to = primary, name
    else:
        d.nodes[client_nodes[step.client]].server.client(step.client)
        result = NodeStep(f"c{step.client} connected", kind="connect", node=client_nodes[step.client],
                          client=step.client, event=step.event)
    return result


def harness_place(e: Any) -> tuple[str | None, str | None, str | None]:
    """(node, the node an arrow goes to, mark) of a harness event on a time-space diagram (all None
    for an event of a client)."""
    if isinstance(e, (Crash, Restart, Pause, Resume)):
        return e.node, None, type(e).__name__.lower()
    if isinstance(e, Link):
        return e.primary, e.replica, f"link {e.state}"
    if isinstance(e, ReplAck):
        return e.replica, e.primary, "repl ack"
    if isinstance(e, ReplCmd):
        return e.primary, e.replica, "repl"
    if isinstance(e, ReplSync):
        return e.primary, e.replica, f"repl {e.sync} sync"
    return None, None, None


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


@dataclass
class MultiExplanation:
    """A trace/2 trace, the checker's verdict on it and its witness replayed (empty without one)."""

    trace: Trace
    verdict: checker.Verdict
    steps: list[NodeStep]


def explain_multinode(trace: Trace, dialect: str | None = None, rules: bool = False) -> MultiExplanation:
    """Check a trace/2 trace and replay the checker's witness: the steps with the state after each
    (and the rules of each, with ``rules``)."""
    verdict = checker.check_trace(trace, dialect)
    witness = verdict.witness
    steps = [] if witness is None or not witness.steps else replay(trace, witness.steps, dialect, rules)
    return MultiExplanation(trace, verdict, steps)


def explain_multinode_trace(trace: Trace, out: TextIO, dialect: str | None = None) -> checker.Verdict:
    """Print the checker's execution of a trace/2 with every node's state after each step."""
    e = explain_multinode(trace, dialect)
    verdict = e.verdict
    title = trace.header.title or trace.path
    out.write(f"{title}\n{trace.path} · {len(trace.header.node_specs())} nodes · {trace.header.clock} clock\n")
    if not e.steps:
        out.write(f"\nverdict: {verdict.describe()}\n")
        return verdict
    for n, step in enumerate(e.steps, 1):
        out.write(f"\n{n}. {step.what}\n")
        if step.reply is not None:
            out.write(f"   → {show(step.reply)}\n")
        for cid, reply in step.served:
            out.write(f"   serves c{cid} → {show(reply)}\n")
        for line in step.nodes + step.links:
            out.write(f"   {line}\n")
    out.write(f"\nverdict: {verdict.describe()}\n")
    return verdict
