"""Liveness on the explored state graph under weak fairness (spec/exploration.md, EXPLORE-LIVE-1, EXPLORE-LIVE-2).

"Eventually G" fails exactly when some fair infinite run stays in states where
G does not hold (G is stable in the properties checked: once a message is
done, it stays done). The state space is finite, so such a run ends in a
strongly connected component of the graph restricted to the not-G states.

Weak fairness: a process that is enabled in every state of a run's suffix
takes a step in it (a process is enabled when it has a step other than a
crash; the clock counts as a process). A component ``C`` holds a fair run
staying in ``C`` if and only if every process enabled in all states of ``C``
has a step inside ``C``: the run that goes round every edge of ``C`` forever
is then fair, and otherwise no run confined to ``C`` is. A not-G state with
no step at all is a violation too (a finite maximal run).

Crashes are bounded per process, so no crash lies on a cycle. A poison pill's
crash (``local-crash``) is not one of them: it is the program's processing step.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx

from xspec.explore.engine import Result, Step

CRASH_KINDS = ("crash",)


@dataclass
class Lasso:
    """A counterexample to "eventually G": a path to a state, then a cycle back to it (empty: a dead end)."""

    stem: list[tuple[int, int, int]]  # (source, target, step id) edges from the initial state
    cycle: list[tuple[int, int, int]]
    anchor: int  # the state the stem reaches and the cycle returns to

    def steps(self, result: Result) -> list[tuple[Step, tuple[int, ...] | None]]:
        return [(result.steps[label], None) for _, _, label in self.stem + self.cycle]


def enabled_processes(result: Result) -> list[frozenset[int]]:
    """Per state, the processes (-1: the clock) that have a step other than a crash (EXPLORE-LIVE-1)."""
    enabled: list[set[int]] = [set() for _ in result.states]
    for src, _, label in result.edges:
        step = result.steps[label]
        if step.kind not in CRASH_KINDS:
            enabled[src].add(step.proc)
    return [frozenset(e) for e in enabled]


def find_violation(result: Result, bad: Callable[[int], bool],
                   enabled: list[frozenset[int]] | None = None) -> Lasso | None:
    """A fair run that stays in ``bad`` states forever, as a lasso; None when "eventually not bad" holds.

    EXPLORE-LIVE-2: a strongly connected component of the ``bad`` states in which
    every process enabled throughout takes a step, or a ``bad`` state with no step;
    the lasso reaches the shallowest such state by a shortest path.
    """
    if enabled is None:
        enabled = enabled_processes(result)
    is_bad = [bad(i) for i in range(len(result.states))]
    inside = nx.DiGraph()
    inside.add_nodes_from(i for i, b in enumerate(is_bad) if b)
    labels: dict[tuple[int, int], list[int]] = {}
    for src, dst, label in result.edges:
        if is_bad[src] and is_bad[dst]:
            inside.add_edge(src, dst)
            labels.setdefault((src, dst), []).append(label)
    has_step = [False] * len(result.states)
    for src, _, _ in result.edges:
        has_step[src] = True
    candidates: list[tuple[int, list[tuple[int, int, int]]]] = [
        (i, []) for i, b in enumerate(is_bad) if b and not has_step[i]]
    for component in nx.strongly_connected_components(inside):
        members = set(component)
        edges = [(s, d, label) for s in members for d in inside.successors(s) if d in members
                 for label in labels[(s, d)]]
        if not edges:
            continue
        stepping = {result.steps[label].proc for _, _, label in edges
                    if result.steps[label].kind not in CRASH_KINDS}
        always = frozenset.intersection(*(enabled[i] for i in members))
        if always <= stepping:
            anchor = min(members, key=lambda i: (result.depth[i], i))
            candidates.append((anchor, _fair_cycle(result, anchor, members, edges, enabled)))
    if not candidates:
        return None
    anchor, cycle = min(candidates, key=lambda c: (result.depth[c[0]], len(c[1])))
    return Lasso(_stem(result, anchor), cycle, anchor)


def _stem(result: Result, target: int) -> list[tuple[int, int, int]]:
    out = []
    i = target
    while result.parent[i] >= 0:
        out.append((result.parent[i], i, result.via[i]))
        i = result.parent[i]
    out.reverse()
    return out


def _fair_cycle(result: Result, anchor: int, members: set[int], edges: list[tuple[int, int, int]],
                enabled: list[frozenset[int]]) -> list[tuple[int, int, int]]:
    """A fair cycle from ``anchor`` inside the component (the component must hold one; EXPLORE-LIVE-2).

    Starting from nothing, while some process is enabled in every state the cycle
    visits but takes no step in it, the cycle makes a detour: to one of that
    process's steps inside the component, or, when it has none there, to a state
    of the component where it is disabled. Detours only add steps and states,
    so this ends, and the cycle closed back at ``anchor`` is fair.
    """
    succ: dict[int, list[tuple[int, int, int]]] = {}
    for e in edges:
        succ.setdefault(e[0], []).append(e)
    cycle: list[tuple[int, int, int]] = []
    here = anchor
    while True:
        visited = {anchor} | {e[1] for e in cycle}
        always = frozenset.intersection(*(enabled[i] for i in visited))
        stepping = {result.steps[e[2]].proc for e in cycle if result.steps[e[2]].kind not in CRASH_KINDS}
        missing = sorted(always - stepping)
        if not missing:
            break
        proc = missing[0]
        via = [e for e in edges if result.steps[e[2]].proc == proc and result.steps[e[2]].kind not in CRASH_KINDS]
        if via:
            path = _path(succ, here, {e[0] for e in via})
            cycle.extend(path)
            here = path[-1][1] if path else here
            step = next(e for e in via if e[0] == here)
            cycle.append(step)
            here = step[1]
        else:
            path = _path(succ, here, {i for i in members if proc not in enabled[i]})
            cycle.extend(path)
            here = path[-1][1] if path else here
    if here != anchor or not cycle:
        cycle.extend(_path(succ, here, {anchor}, nonempty=not cycle))
    return cycle


def _path(succ: dict[int, list[tuple[int, int, int]]], start: int, goals: set[int],
          nonempty: bool = False) -> list[tuple[int, int, int]]:
    """Shortest edge path from ``start`` to a state of ``goals`` (empty if ``start`` is one, unless ``nonempty``)."""
    if start in goals and not nonempty:
        return []
    previous: dict[int, tuple[int, int, int]] = {}
    queue = deque([start])
    seen = {start} if not nonempty else set()
    while queue:
        node = queue.popleft()
        for e in succ.get(node, []):
            nxt = e[1]
            if nxt in seen:
                continue
            seen.add(nxt)
            previous[nxt] = e
            if nxt in goals:
                path = [e]
                while path[-1][0] != start:
                    path.append(previous[path[-1][0]])
                path.reverse()
                return path
            queue.append(nxt)
    raise AssertionError("no path inside a strongly connected component")
