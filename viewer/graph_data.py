"""The data of a state-graph page (``xspec explore ... --view``): the explored graph, laid out here.

Up to :data:`MAX_STATES` states the whole graph is shown; beyond, the shortest path to each
violation and the states one step from it. The layout is computed in Python: a layer per
breadth-first depth (networkx's multipartite layout gives the layers), states ordered
within a layer by the mean position of their parents, which keeps paths from crossing much.
Each state carries its label (:mod:`xspec.explore.labels`), its full state as the trace
page's rows, its processes' program states, and its parent with the step that reached it,
so the page shows the shortest trace to any state by following parents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx

from xspec.explore.abstraction import BASE_MS, Abstraction
from xspec.explore.engine import Result
from xspec.explore.labels import process_summary, server_summary
from xspec.traces.check.state_tables import KEY_COLUMNS, TABLES, TIME_COLUMNS, TITLES, state_rows
from xspec.viewer.trace_data import TABLE_ORDER, row_cells, row_id

MAX_STATES = 2000
X_GAP, Y_GAP, MARGIN = 46, 70, 30


def chosen_states(result: Result, limit: int = MAX_STATES) -> tuple[list[int], bool]:
    """The states to draw, and whether that is the whole graph."""
    n = len(result.states)
    if n <= limit:
        return list(range(n)), True
    keep: set[int] = {0}
    for v in result.violations.values():
        i = v.state
        while i >= 0:
            keep.add(i)
            i = result.parent[i]
    near: set[int] = set()
    for src, dst, _ in result.edges:
        if src in keep:
            near.add(dst)
        if dst in keep:
            near.add(src)
    keep |= set(sorted(near)[: max(0, limit - len(keep))])
    return sorted(keep), False


def layout(nodes: list[int], depth: Sequence[int], parent: Sequence[int]) -> dict[int, tuple[float, float]]:
    """Positions: a row per depth (networkx's multipartite layout), ordered by the parents' positions."""
    g = nx.Graph()
    for i in nodes:
        g.add_node(i, layer=depth[i])
    raw = nx.multipartite_layout(g, subset_key="layer", align="horizontal") if nodes else {}
    layers: dict[int, list[int]] = {}
    for i in nodes:
        layers.setdefault(depth[i], []).append(i)
    pos: dict[int, tuple[float, float]] = {}
    order: dict[int, float] = {}
    for d in sorted(layers):
        members = layers[d]
        members.sort(key=lambda i: (order.get(parent[i], 0.0), float(raw[i][0])))
        for rank, i in enumerate(members):
            order[i] = rank - len(members) / 2
    widest = max((len(m) for m in layers.values()), default=1)
    for d, members in layers.items():
        offset = (widest - len(members)) / 2
        for rank, i in enumerate(sorted(members, key=lambda j: order[j])):
            pos[i] = (MARGIN + (offset + rank) * X_GAP, MARGIN + d * Y_GAP)
    return pos


def graph_page_data(title: str, result: Result, abstraction: Abstraction, names: Sequence[str],
                    messages: dict[str, str] | None = None) -> dict[str, Any]:
    """The page data of an explored graph (see the module docstring)."""
    nodes, whole = chosen_states(result)
    pos = layout(nodes, result.depth, result.parent)
    violated: dict[int, list[str]] = {}
    for prop, v in result.violations.items():
        violated.setdefault(v.state, []).append(f"{prop}: {v.message}" if v.message else prop)
    step_text = [s.describe(tuple(names)) for s in result.steps]
    shown = set(nodes)
    out_nodes = []
    for i in nodes:
        state = result.states[i]
        server = abstraction.thaw(state[0])
        rows = state_rows(server)
        summary = server_summary(server)
        out_nodes.append({
            "id": i, "x": round(pos[i][0], 1), "y": round(pos[i][1], 1), "depth": result.depth[i],
            "label": summary + process_summary(state, names),
            "parent": result.parent[i], "via": step_text[result.via[i]] if result.parent[i] >= 0 else None,
            "violates": violated.get(i, []),
            "rows": [[row_id(r), row_cells(r, v, BASE_MS)] for r, v in rows.items()],
            "locals": [f"{n}: {loc!r}" for n, loc in zip(names, state[1], strict=False)],
        })
    edges = sorted({(s, d) for s, d, _ in result.edges if s in shown and d in shown and s != d})
    width = max((p[0] for p in pos.values()), default=0) + 2 * MARGIN
    height = max((p[1] for p in pos.values()), default=0) + 2 * MARGIN
    return {
        "kind": "graph", "title": title, "states": len(result.states), "transitions": result.transitions,
        "complete": result.complete, "whole": whole, "shown": len(nodes), "width": width, "height": height,
        "nodes": out_nodes, "edges": [list(e) for e in edges],
        "properties": messages or {},
        "tables": {t: {"title": TITLES[t], "keys": list(KEY_COLUMNS[t]),
                       "columns": [TIME_COLUMNS.get(c, c) for c in TABLES[t]],
                       "time": [k for k, c in enumerate(TABLES[t]) if c in TIME_COLUMNS]} for t in TABLE_ORDER},
    }


__all__ = ["MAX_STATES", "chosen_states", "graph_page_data", "layout"]
