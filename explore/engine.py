"""Breadth-first exploration of a :class:`System`'s abstract states (spec/exploration.md).

A system is a set of processes (consumers, a producer, the clock) taking
steps against one model server. A state is ``(key, locals, ghost)``: the
server's abstract key (:mod:`.abstraction`), one program state per process,
and ghost bookkeeping the properties read (which messages were processed...).

The engine walks states breadth first, so the first path found to any state is
a shortest one. It keeps one parent edge per state for counterexamples and
every edge for the state graph (as compact tuples; :meth:`Result.graph` builds
the networkx graph), checks the model's invariants (models/invariants.py) in every
new state (:meth:`Executor.violations`: on the real server that reached it, or
the key thawed, verdicts shared by states that differ only in ages), and the
system's safety properties on the state itself. Successors are reduced to
their symmetry representatives; a successor already seen in a non-canonical
form is recognised without relabelling it again.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import networkx as nx

from xspec.explore.abstraction import Abstraction, Key, invert
from xspec.explore.execution import Executor
from xspec.models.server import Server

State = tuple[Key, tuple[Any, ...], tuple[Any, ...]]
"""(server key, one local state per process, ghost)."""

INVARIANTS = "invariants"
"""The property name under which violations of models/invariants.py are reported."""


@dataclass(frozen=True)
class Step:
    """One transition: process ``proc`` (-1 for the clock) runs ``argv``, crashes, or acts locally."""

    proc: int
    kind: str  # "command" | "tick" | "crash" | "local" | "local-crash"
    argv: tuple[bytes, ...] = ()
    text: str = ""
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.proc, self.kind, self.argv, self.text)))

    def __hash__(self) -> int:  # steps are dictionary keys once per transition: hash them once
        return self._hash

    def describe(self, names: tuple[str, ...]) -> str:
        who = "clock" if self.proc < 0 else names[self.proc]
        if self.kind == "command":
            return f"{who}: " + " ".join(a.decode("utf-8", "backslashreplace") for a in self.argv)
        return f"{who}: {self.text or self.kind}"


Successor = tuple[Step, State, "Server | None"]
"""A raw (not yet canonical) successor: the step, the state it leads to, and the live server that
reached it when the model ran (None when the memo answered)."""


class System(Protocol):
    """What the engine explores."""

    abstraction: Abstraction
    executor: Executor
    process_names: tuple[str, ...]
    safety_properties: tuple[str, ...]
    tick_ms: int

    def setup(self) -> list[tuple[int, tuple[bytes, ...]]]:
        """Commands (process, argv) run on the empty server before exploring."""
        ...

    def initial(self) -> tuple[State, Server]: ...

    def successors(self, state: State, skip: tuple[bool, ...]) -> Iterable[Successor]: ...

    def safety(self, state: State) -> Iterator[tuple[str, str]]: ...


@dataclass
class Violation:
    prop: str
    state: int
    message: str


@dataclass
class Result:
    """What an exploration found, and the graph it walked.

    The statistics of EXPLORE-3: distinct states, transitions (every step taken,
    also those to known states), depth, wall and CPU time; ``complete`` is False
    when ``max_states`` stopped the walk early.
    """

    states: list[State]
    parent: list[int]
    via: list[int]  # index into ``steps`` of the edge that discovered each state
    perm: list[tuple[int, ...] | None]  # relabelling applied to that edge's target
    depth: list[int]
    steps: list[Step]
    edges: list[tuple[int, int, int]]
    transitions: int
    seconds: float  # wall clock
    cpu_seconds: float  # this process's CPU time: the figure that does not depend on a busy machine
    violations: dict[str, Violation] = field(default_factory=dict)
    complete: bool = True

    @property
    def max_depth(self) -> int:
        return max(self.depth) if self.depth else 0

    def rate(self) -> float:
        """Distinct states per CPU second (EXPLORE-3)."""
        return len(self.states) / self.cpu_seconds if self.cpu_seconds > 0 else float("inf")

    def path(self, target: int) -> list[tuple[Step, tuple[int, ...] | None]]:
        """The steps from the initial state to ``target`` with each step's relabelling, first step first."""
        out = []
        i = target
        while self.parent[i] >= 0:
            out.append((self.steps[self.via[i]], self.perm[i]))
            i = self.parent[i]
        out.reverse()
        return out

    def graph(self, names: tuple[str, ...], labels: Sequence[str] | None = None) -> nx.MultiDiGraph:
        """The state graph: node ``i`` is state ``i`` (its BFS depth, its label: ``labels[i]``, by default
        ``i (depth d)``; the properties violated there), one edge per transition (EXPLORE-4)."""
        g = nx.MultiDiGraph()
        violated: dict[int, list[str]] = {}
        for prop, v in self.violations.items():
            violated.setdefault(v.state, []).append(prop)
        for i, d in enumerate(self.depth):
            g.add_node(i, depth=d, label=labels[i] if labels is not None else f"{i} (depth {d})")
            if i in violated:
                g.nodes[i]["violates"] = "; ".join(violated[i])
        step_labels = [s.describe(names) for s in self.steps]
        for src, dst, label in self.edges:
            g.add_edge(src, dst, step=step_labels[label])
        return g


def write_dot(graph: nx.MultiDiGraph, path: str) -> None:
    """The graph in Graphviz DOT, written directly: no pydot needed (EXPLORE-4)."""
    def quote(text: object) -> str:
        return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'

    with open(path, "w", encoding="utf-8") as f:
        f.write("digraph explored {\n")
        for node, data in graph.nodes(data=True):
            label = quote(data.get("label", f"{node} (depth {data['depth']})")).replace("\n", "\\n")
            marks = f", color=red, penwidth=2, xlabel={quote('violates ' + data['violates'])}" if "violates" in data else ""
            f.write(f"  {node} [label={label}{marks}];\n")
        for src, dst, data in graph.edges(data=True):
            f.write(f"  {src} -> {dst} [label={quote(data['step'])}];\n")
        f.write("}\n")


def concrete_steps(path: list[tuple[Step, tuple[int, ...] | None]], processes: int,
                   initial_perm: tuple[int, ...] | None) -> tuple[list[tuple[Step, dict[int, int]]], dict[int, int]]:
    """A path's steps, each with the concrete identity of the processes it names.

    States are stored relabelled; ``mapping[label]`` says which concrete
    process a label of the current state stands for. Returns each step with
    the mapping in force when it is taken, and the mapping at the path's end.
    """
    n = processes
    mapping = {label: label for label in range(n)}
    if initial_perm is not None:
        inv = invert(initial_perm)
        mapping = {label: inv[label] for label in range(n)}
    out = []
    for step, perm in path:
        out.append((step, dict(mapping)))
        if perm is not None:
            mapping = {perm[label]: proc for label, proc in mapping.items()}
    return out, mapping


Progress = Callable[[int, int, int], None]
"""Told (states found, depth reached, transitions) every :data:`PROGRESS_EVERY` states expanded."""
PROGRESS_EVERY = 1024


def explore(system: System, *, max_states: int | None = None, keep_edges: bool = True,
            check_invariants: bool = True, progress: Progress | None = None) -> tuple[Result, tuple[int, ...] | None]:
    """Walk every reachable state of ``system`` breadth first; returns the result and the initial relabelling.

    Breadth first, so the first path found to a state is a shortest one, and a
    property is reported at the first state found that violates it (EXPLORE-1).
    """
    # The walk allocates millions of small tuples and keeps most of them: the cyclic
    # garbage collector would rescan the growing heap again and again for nothing, and
    # once more at the first collection after the walk. What the walk built is moved out
    # of its reach for good (``gc.freeze``).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _explore(system, max_states, keep_edges, check_invariants, progress)
    finally:
        gc.freeze()
        if gc_was_enabled:
            gc.enable()


def _explore(system: System, max_states: int | None, keep_edges: bool, check_invariants: bool,
             progress: Progress | None) -> tuple[Result, tuple[int, ...] | None]:
    abstraction = system.abstraction
    started = time.perf_counter()
    cpu_started = time.process_time()
    (key, local, ghost), server = system.initial()
    ckey, clocal, perm0 = abstraction.canonical(key, local)
    first: State = (ckey, clocal, ghost)
    index: dict[State, int] = {first: 0}
    relabelled: dict[State, tuple[int, tuple[int, ...] | None]] = {}  # non-canonical states seen: their class
    states: list[State] = [first]
    parent = [-1]
    via = [-1]
    perms: list[tuple[int, ...] | None] = [None]
    depth = [0]
    step_ids: dict[Step, int] = {}
    steps: list[Step] = []
    edges: list[tuple[int, int, int]] = []
    found: dict[str, Violation] = {}
    transitions = 0

    def check(i: int, state: State, live: Server | None) -> None:
        # EXPLORE-2: every new state's invariants and safety properties; only the first
        # violation of each is kept, the one nearest the initial state (EXPLORE-1).
        if check_invariants:
            broken = system.executor.violations(state[0], live)
            if broken and INVARIANTS not in found:
                found[INVARIANTS] = Violation(INVARIANTS, i, "; ".join(broken))
        for prop, message in system.safety(state):
            if prop not in found:
                found[prop] = Violation(prop, i, message)

    check(0, first, server)
    complete = True
    head = 0
    j: int | None  # the successor's state number; None while it is a new state
    while head < len(states):
        i = head
        head += 1
        if progress is not None and head % PROGRESS_EVERY == 0:
            progress(len(states), depth[i], transitions)
        state = states[i]
        skip = abstraction.ties(state[0], state[1])
        d = depth[i] + 1
        for step, raw, live in system.successors(state, skip):
            transitions += 1
            if raw is state:  # a step that changed nothing
                j, perm = i, None
            elif (j := index.get(raw)) is not None:  # already a known representative: the common case
                perm = None
            elif (known := relabelled.get(raw)) is not None:
                j, perm = known
            else:
                key, local, ghost = raw
                ckey, clocal, perm = abstraction.canonical(key, local)
                target: State = (ckey, clocal, ghost)
                j = index.get(target)
                if j is not None and perm is not None:
                    relabelled[raw] = (j, perm)
            if j is None:
                if max_states is not None and len(states) >= max_states:
                    complete = False  # EXPLORE-3: the bound stops the walk, which says it is incomplete
                    continue
                j = len(states)
                index[target] = j
                if perm is not None:
                    relabelled[raw] = (j, perm)
                states.append(target)
                sid = step_ids.get(step)
                if sid is None:
                    sid = step_ids[step] = len(steps)
                    steps.append(step)
                parent.append(i)
                via.append(sid)
                perms.append(perm)
                depth.append(d)
                check(j, target, live)
            if keep_edges:
                sid = step_ids.get(step)
                if sid is None:
                    sid = step_ids[step] = len(steps)
                    steps.append(step)
                edges.append((i, j, sid))
    result = Result(states, parent, via, perms, depth, steps, edges, transitions,
                    time.perf_counter() - started, time.process_time() - cpu_started, found, complete)
    return result, perm0
