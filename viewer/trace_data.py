"""The data of a trace page: the model's state at every step of the checker's witness, as rows.

The states are computed here, in Python, by ``xspec explain``'s replay
(:func:`xspec.traces.check.explain.explain`): the checker's witness is run again on a
fresh model and the state is snapshotted after every step. The page's script only
draws what this module embeds; it applies each step's row differences to move
between steps and never evaluates a command.

The data is one JSON object (:func:`trace_page_data`):

* ``lanes``: one lane per client, each on a ``node`` (``nodes`` lists them; a single-server
  trace has one node, ``server``). A trace/2 trace of several nodes (``format`` ``trace/2``,
  :func:`multinode_page_data`) has one lane per node instead: its steps carry their node
  (``nd``), the node an arrow goes to (``to``: a replication step, a ``repl`` or ``link``
  event), a mark (``m``: crash, restart, pause, resume, link, repl, apply, ack...) and what
  happened (``w``); ``down`` lists the steps during which a node was paused or down; the
  state adds a ``nodes`` table (role, replication ID, offset, backlog) and a ``links`` table
  (phase, held, commands not yet applied, acknowledged offset), and every other table is
  keyed by node first. A step's ``ch`` are the rules its model lines cited (about it); the
  attribution of each change to its rules (``ru``, per row) that a single-server page has is not made.
* ``tables``: per state table its title and columns (key columns first); ``time`` lists
  the columns that hold absolute times (shown relative to the step's clock).
* ``steps``: per step its kind, client (lane), trace line, clock (ms since the first
  reading), command and reply text, the trace's reply when it differs, whether it blocked,
  the blocked clients it served, the rules that changed state or decided an error
  (``rules``) and every other rule whose lines ran (``checked``), as indexes into
  ``rules``, the notes before it, and ``diff``: the rows it added, removed or changed.
* ``diff`` rows are ``[row id, "+"|"-"|"~", cells after, cells before, changed column
  indexes, rule indexes]``: enough to go forwards and backwards.
* ``divergence``: for a trace no execution explains, the event, what the trace says and
  what the model allows there.
* ``rules``: the ids referred to, ``rule_text`` their text from the rule index.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xspec.spec import trace_format as tf
from xspec.spec.resp import show
from xspec.spec.rule_index import load_index
from xspec.spec.trace_format import Call, Send, Trace
from xspec.traces.check.explain import Change, Explanation, Step, explain
from xspec.traces.check.explain_multinode import (
    NODE_KEY_COLUMNS,
    NODE_TABLES,
    NODE_TITLES,
    MultiExplanation,
    NodeStep,
    explain_multinode,
    harness_place,
)
from xspec.traces.check.state_tables import KEY_COLUMNS, TABLES, TIME_COLUMNS, TITLES
from xspec.traces.check.witness import Witness

REPLY_CHARS = 4000
"""A reply longer than this is cut in the page (the length is said): a 10,000-entry XRANGE
would otherwise weigh more than the rest of the page."""

TABLE_ORDER = ("keys", "entries", "groups", "pending", "consumers", "clients")


def _text(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


def _part(v: Any) -> str:
    return _text(v) if isinstance(v, bytes) else str(v)


def row_id(row: tuple[Any, ...]) -> str:
    """``pending|orders|workers|1-0``: a state row's key as text (db 0 omitted, other dbs as ``db1:key``)."""
    table = row[0]
    if table == "clients":
        return f"clients|{row[1]}"
    db, key, *rest = row[1:]
    name = _text(key) if db == 0 else f"db{db}:{_text(key)}"
    return "|".join([table, name, *(_part(r) for r in rest)])


def _cell(column: str, value: Any, start: int) -> Any:
    if value is None:
        return None
    if column in TIME_COLUMNS:
        return int(value) - start
    if column == "fields":
        return " ".join(_text(f) if isinstance(f, bytes) else str(f) for f in value)
    if isinstance(value, bytes):
        return _text(value)
    if isinstance(value, (int, str)):
        return value
    return str(value)


def row_cells(row: tuple[Any, ...], values: tuple[Any, ...], start: int) -> list[Any]:
    """The value cells of a state row, as the page shows them (times in ms since ``start``)."""
    return [_cell(c, v, start) for c, v in zip(TABLES[row[0]], values, strict=True)]


def command_text(argv: Sequence[bytes] | None) -> str:
    if not argv:
        return ""
    return " ".join(_quote(_text(a)) for a in argv)


def _quote(s: str) -> str:
    if s and all(ch.isalnum() or ch in "-_.:$>*+()=~#@/" for ch in s):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _cut(s: str) -> str:
    if len(s) <= REPLY_CHARS:
        return s
    return s[:REPLY_CHARS] + f" … ({len(s)} characters in all)"


class _Rules:
    """Rule ids interned as indexes into one list, with their text."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.at: dict[str, int] = {}

    def __call__(self, rules: Sequence[str]) -> list[int]:
        out = []
        for r in rules:
            i = self.at.get(r)
            if i is None:
                i = self.at[r] = len(self.ids)
                self.ids.append(r)
            out.append(i)
        return out

    def texts(self) -> dict[str, dict[str, str]]:
        index = load_index()
        out = {}
        for r in self.ids:
            rule = index.rules.get(r)
            if rule is not None:
                out[r] = {"title": rule.title, "text": rule.text, "at": rule.defined_at}
        return out


def _diff(before: dict[tuple[Any, ...], tuple[Any, ...]], after: dict[tuple[Any, ...], tuple[Any, ...]],
          step: Step, start: int, rules: _Rules) -> list[list[Any]]:
    """The rows a step added, removed or changed, each with the rules behind it (from explain's changes)."""
    by_row: dict[tuple[str, str], Change] = {}
    for c in step.changes:
        by_row[(c.table, "|".join(str(v) for v in c.row.values()))] = c
    out: list[list[Any]] = []
    moved = [r for r, v in after.items() if before.get(r) != v] + [r for r in before if r not in after]
    for row in sorted(moved, key=repr):
        old, new = before.get(row), after.get(row)
        rid = row_id(row)
        table, _, rest = rid.partition("|")
        change = by_row.get((table, rest))
        if old is None:
            assert new is not None
            out.append([rid, "+", row_cells(row, new, start), None, [], rules(change.rules if change else [])])
        elif new is None:
            out.append([rid, "-", None, row_cells(row, old, start), [], rules(change.rules if change else [])])
        else:
            columns = TABLES[row[0]]
            changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
            per_column = change.column_rules if change else {}
            why: list[str] = []
            for i in changed:
                for r in per_column.get(columns[i], []):
                    if r not in why:
                        why.append(r)
            out.append([rid, "~", row_cells(row, new, start), row_cells(row, old, start), changed, rules(why)])
    return out


def explanation_data(e: Explanation, dialect: str | None = None) -> dict[str, Any]:
    """The page data of an explanation of a trace under ``dialect`` (None: its header's; see the module docstring)."""
    trace = e.trace
    start = e.start or 0
    rules = _Rules()
    lanes: list[int] = []
    steps: list[dict[str, Any]] = []
    before: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    blocked_at: dict[int, int] = {}  # client -> index of the step where it blocked
    spans: list[list[int]] = []  # [client, from step, to step]
    for n, s in enumerate(e.steps):
        if s.client not in lanes:
            lanes.append(s.client)
        item: dict[str, Any] = {"k": s.kind, "c": s.client, "l": s.line,
                                "t": None if s.now is None else s.now - start}
        if s.command is not None:
            item["cmd"] = command_text(s.command)
        if s.blocked:
            item["b"] = 1
            blocked_at[s.client] = n
        elif s.reply is not None:
            item["r"] = _cut(show(s.reply))
        if s.kind == "timeout" and s.client in blocked_at:
            spans.append([s.client, blocked_at.pop(s.client), n])
        if not s.matches and s.expected is not None:
            item["x"] = _cut(show(s.expected))
        if s.served:
            item["sv"] = []
            for sv in s.served:
                if sv.client not in lanes:
                    lanes.append(sv.client)
                entry: list[Any] = [sv.client, _cut(show(sv.reply)), sv.line]
                if not sv.matches and sv.expected is not None:
                    entry.append(_cut(show(sv.expected)))
                item["sv"].append(entry)
                if sv.client in blocked_at:
                    spans.append([sv.client, blocked_at.pop(sv.client), n])
        if s.rules:
            item["ru"] = rules(s.rules)
        others = [r for r in s.checked if r not in s.rules]
        if others:
            item["ch"] = rules(others)
        if s.notes:
            item["n"] = s.notes
        item["d"] = _diff(before, s.state, s, start, rules)
        before = s.state
        steps.append(item)
    for client, n in blocked_at.items():  # still blocked when the trace ends
        spans.append([client, n, len(steps)])
    data: dict[str, Any] = {
        "kind": "trace",
        "title": trace.header.title or Path(trace.path).name,
        "path": trace.path,
        "server": f"{trace.header.server_name} {trace.header.server_version}",
        "clock": trace.header.clock,
        "format": "trace/1",
        "note": e.note,
        "verdict": {"status": e.verdict.status, "event": e.verdict.event, "message": e.verdict.message,
                    "text": e.verdict.describe()},
        "nodes": [{"id": "server", "label": f"{trace.header.server_name} {trace.header.server_version}"}],
        "lanes": [{"id": c, "node": "server", "label": f"client {c}"} for c in lanes],
        "links": [],
        "tables": {t: {"title": TITLES[t], "keys": list(KEY_COLUMNS[t]),
                       "columns": [TIME_COLUMNS.get(c, c) for c in TABLES[t]],
                       "time": [i for i, c in enumerate(TABLES[t]) if c in TIME_COLUMNS]} for t in TABLE_ORDER},
        "steps": steps,
        "spans": spans,
        "divergence": _divergence(e, rules, dialect),
    }
    data["rules"] = rules.ids
    data["rule_text"] = rules.texts()
    add_column_widths(data)
    return data


def _divergence(e: Explanation, rules: _Rules, dialect: str | None) -> dict[str, Any] | None:
    v = e.verdict
    if v.status == "conform":
        return None
    d = v.witness.divergence if v.witness is not None else None
    event = v.event
    argv = d.argv if d is not None else None
    if argv is None and event is not None and 0 < event <= len(e.trace.events):
        ev = e.trace.events[event - 1]
        if isinstance(ev, (Call, Send)):
            argv = ev.cmd
    client = None
    if event is not None and 0 < event <= len(e.trace.events):
        client = getattr(e.trace.events[event - 1], "c", None)
    says = None if d is None or d.got is None else show(d.got)
    if says is None and v.got is not None:
        says = show(v.got)
    allows = list(d.allowed_text or [show(a) for a in d.allowed]) if d is not None else list(
        v.allowed_text or [show(a) for a in v.allowed])
    where, rule = "", ""
    if v.status == "diverge":
        from xspec.traces.check.report import diagnose
        from xspec.traces.fuzz.fuzzer import reply_difference  # hypothesis: imported only for a divergence

        diagnosis = diagnose(e.trace, dialect, v)
        rule = diagnosis.cause.rule
        if diagnosis.got is not None and diagnosis.allowed_reply is not None:
            where = reply_difference(diagnosis.got, diagnosis.allowed_reply)
    return {"status": v.status, "event": event, "line": None if event is None else event + 1, "client": client,
            "cmd": command_text(argv), "message": v.message, "says": says, "allows": allows, "where": where,
            "rules": rules([rule] if rule else [])}


def trace_page_data(trace: Trace, dialect: str | None = None, witness: Witness | None = None) -> dict[str, Any]:
    """Replay ``trace`` on the model along the checker's witness (or ``witness``, an execution known
    to explain it) and return the page data; a trace/2 trace of several nodes gets
    :func:`multinode_page_data`."""
    if is_multinode(trace):
        return multinode_page_data(explain_multinode(trace, dialect, rules=True))
    return explanation_data(explain(trace, dialect, witness), dialect)


def is_multinode(trace: Trace) -> bool:
    return trace.header.nodes is not None and len(trace.header.nodes) > 1


# ---------------------------------------------------------------------------------------------
# trace/2: a lane per node


def node_row_id(row: tuple[Any, ...]) -> str:
    """``nodes|a``, ``links|a|b``, ``clients|a|3``, ``pending|a|orders|workers|1-0``."""
    table = row[0]
    if table in NODE_TABLES or table == "clients":
        return "|".join(str(r) for r in row)
    return f"{table}|{row[1]}|" + row_id((table, *row[2:])).partition("|")[2]


def node_row_cells(row: tuple[Any, ...], values: tuple[Any, ...], start: int) -> list[Any]:
    if row[0] in NODE_TABLES:
        return [("yes" if v else "no") if isinstance(v, bool) else v for v in values]
    return row_cells(row, values, start)


def _plain_diff(before: dict[tuple[Any, ...], tuple[Any, ...]], after: dict[tuple[Any, ...], tuple[Any, ...]],
                start: int) -> list[list[Any]]:
    """The rows a step added, removed or changed (no rules: the multi-node replay does not trace them)."""
    out: list[list[Any]] = []
    moved = [r for r, v in after.items() if before.get(r) != v] + [r for r in before if r not in after]
    for row in sorted(moved, key=repr):
        old, new = before.get(row), after.get(row)
        rid = node_row_id(row)
        if old is None:
            assert new is not None
            out.append([rid, "+", node_row_cells(row, new, start), None, [], []])
        elif new is None:
            out.append([rid, "-", None, node_row_cells(row, old, start), [], []])
        else:
            changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
            out.append([rid, "~", node_row_cells(row, new, start), node_row_cells(row, old, start), changed, []])
    return out


def _node_tables() -> dict[str, Any]:
    tables: dict[str, Any] = {t: {"title": NODE_TITLES[t], "keys": list(NODE_KEY_COLUMNS[t]), "columns": list(c),
                                  "time": []} for t, c in NODE_TABLES.items()}
    for t in TABLE_ORDER:
        tables[t] = {"title": TITLES[t], "keys": ["node", *KEY_COLUMNS[t]],
                     "columns": [TIME_COLUMNS.get(c, c) for c in TABLES[t]],
                     "time": [i for i, c in enumerate(TABLES[t]) if c in TIME_COLUMNS]}
    return tables


def event_node(trace: Trace, index: int) -> tuple[str | None, int | None]:
    """(node, client) of the event at ``index`` (0-based): a client's node, or the node a harness event is about."""
    e: Any = trace.events[index]
    if isinstance(e, (Call, Send, tf.Connect)):
        return e.node, e.c
    if isinstance(e, (tf.Recv, tf.Close, tf.Push)):
        return trace.client_nodes().get(e.c), e.c
    if isinstance(e, (tf.Crash, tf.Restart, tf.Pause, tf.Resume)):
        return e.node, None
    if isinstance(e, tf.ReplAck):
        return e.replica, None
    if isinstance(e, (tf.Link, tf.ReplCmd, tf.ReplSync)):
        return e.primary, None
    return None, None


def _node_step(s: NodeStep, start: int, rules: _Rules) -> dict[str, Any]:
    item: dict[str, Any] = {"k": s.kind, "nd": s.node, "c": s.client,
                            "l": None if s.event is None else s.event + 2,
                            "t": None if s.now is None else s.now - start, "w": s.what}
    if s.argv is not None and s.kind == "command":
        item["cmd"] = command_text(s.argv)
    if s.blocked:
        item["b"] = 1
    elif s.reply is not None:
        item["r"] = _cut(show(s.reply))
    if s.served:
        item["sv"] = [[cid, _cut(show(reply)), None] for cid, reply in s.served]
    if s.to is not None:
        item["to"] = s.to
    if s.mark is not None:
        item["m"] = s.mark
    if s.rules:
        item["ch"] = rules(s.rules)  # checked: which of them changed what is not traced here
    return item


def _file_order_steps(trace: Trace) -> list[dict[str, Any]]:
    """The trace's events as steps, in the file's order, without states (for a trace no execution was found for)."""
    out = []
    for p, e in enumerate(trace.events):
        node, client = event_node(trace, p)
        item: dict[str, Any] = {"k": "event", "nd": node, "c": client, "l": p + 2, "t": None,
                                "w": event_text(e), "d": []}
        if isinstance(e, (Call, Send)) and e.cmd is not None:
            item["k"], item["cmd"] = "command", command_text(e.cmd)
        if isinstance(e, (Call, tf.Recv)):
            item["r"] = _cut(show(e.reply))
        _, to, mark = harness_place(e)
        item.update({k: v for k, v in (("to", to), ("m", mark)) if v is not None})
        out.append(item)
    return out


def event_text(e: Any) -> str:
    """What a trace/2 event says, in a few words (for a trace shown without its execution)."""
    if isinstance(e, (Call, Send)):
        return f"c{e.c}: " + (command_text(e.cmd) if e.cmd is not None else "(raw bytes)")
    if isinstance(e, tf.Recv):
        return f"c{e.c} receives"
    if isinstance(e, (tf.Crash, tf.Restart, tf.Pause, tf.Resume)):
        return f"{e.node}: {type(e).__name__.lower()}"
    if isinstance(e, tf.Link):
        return f"link {e.primary}→{e.replica}: {e.state}" + (" (by the server)" if e.by == "server" else "")
    if isinstance(e, tf.ReplCmd):
        return f"repl {e.primary}→{e.replica}: {command_text(e.cmd)}"
    if isinstance(e, tf.ReplSync):
        return f"repl {e.primary}→{e.replica}: {e.sync} sync" + ("" if e.offset is None else f" at offset {e.offset}")
    if isinstance(e, tf.ReplAck):
        return f"{e.replica}: ack {e.ack}"
    return type(e).__name__.lower()


def multinode_page_data(e: MultiExplanation) -> dict[str, Any]:
    """The page data of a trace/2 trace of several nodes (see the module docstring)."""
    trace, verdict = e.trace, e.verdict
    specs = trace.header.node_specs()
    times = [s.now for s in e.steps if s.now is not None]
    start = min(times) if times else 0
    steps: list[dict[str, Any]] = []
    before: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    spans: list[list[Any]] = []
    blocked_at: dict[int, tuple[str | None, int]] = {}
    down: list[list[Any]] = []
    down_since: dict[str, tuple[int, str]] = {}
    rules = _Rules()
    for n, s in enumerate(e.steps):
        item = _node_step(s, start, rules)
        item["d"] = _plain_diff(before, s.state, start)
        before = s.state
        if s.blocked and s.client is not None:
            blocked_at[s.client] = (s.node, n)
        for cid in [*([s.client] if s.kind == "timeout" and s.client is not None else []),
                    *(cid for cid, _ in s.served)]:
            if cid in blocked_at:
                node, at = blocked_at.pop(cid)
                spans.append([node, at, n, cid])
        for name in specs:
            row = s.state.get(("nodes", name))
            now = "up" if row is None else row[0]
            was = down_since.get(name)
            if was is not None and was[1] != now:
                down.append([name, was[0], n, was[1]])
                del down_since[name]
            if now != "up" and name not in down_since:
                down_since[name] = (n, now)
        steps.append(item)
    for cid, (node, at) in blocked_at.items():
        spans.append([node, at, len(steps), cid])
    for name, (at, what) in down_since.items():
        down.append([name, at, len(steps), what])
    note = "order, clock readings and internal steps as the conformance checker explained the trace"
    if not e.steps:
        steps = _file_order_steps(trace)
        note = f"no execution of the model to replay ({verdict.status}): the events in the file's order, no states"
    elif verdict.status == "diverge" and verdict.event is not None:
        note += (f"; replayed up to event {verdict.event - 1} (line {verdict.event}); event {verdict.event} "
                 f"(line {verdict.event + 1}) is where the trace diverges")
    data: dict[str, Any] = {
        "kind": "trace",
        "title": trace.header.title or Path(trace.path).name,
        "path": trace.path,
        "server": " · ".join(f"{name}: {n.server_name} {n.server_version}" for name, n in specs.items()),
        "clock": trace.header.clock,
        "format": "trace/2",
        "note": note,
        "verdict": {"status": verdict.status, "event": verdict.event, "message": verdict.message,
                    "text": verdict.describe()},
        "nodes": [{"id": name, "label": f"{n.server_name} {n.server_version}"} for name, n in specs.items()],
        "lanes": [{"id": name, "node": name, "label": f"node {name}"} for name in specs],
        "links": [],
        "tables": _node_tables(),
        "steps": steps,
        "spans": spans,
        "down": down,
        "divergence": _node_divergence(e),
    }
    data["rules"] = rules.ids
    data["rule_text"] = rules.texts()
    add_column_widths(data)
    return data


WIDE = 48
"""Characters: a wider column is cut in the page (each longer value's whole text in its cell's title)."""


def add_column_widths(data: dict[str, Any]) -> None:
    """Give every table its column widths in characters (``widths``: key columns, then value
    columns), measured over every value a step of ``data`` shows: the page draws its tables with
    these fixed widths, so a changed value lays out its row alone and no column moves between steps."""
    last_t = max((s.get("t") or 0 for s in data["steps"]), default=0)
    heads: dict[str, list[int]] = {}
    values: dict[str, list[int]] = {}
    for name, t in data["tables"].items():
        heads[name] = [len(c) for c in [*t["keys"], *t["columns"]]]
        values[name] = [0] * len(t["keys"]) + [
            len(str(last_t)) + 6 if i in t["time"] else 3 for i in range(len(t["columns"]))]  # "in 1234 ms", "nil"
    was: dict[str, set[int]] = {name: set() for name in heads}  # the columns a step changes
    for s in data["steps"]:
        for rid, _, after, before, changed, *_ in s.get("d", ()):
            name, *key = rid.split("|")
            t, w = data["tables"][name], values[name]
            nk = len(t["keys"])
            was[name].update(nk + i for i in changed)
            for i, part in enumerate(key[:nk]):
                w[i] = max(w[i], len(part))
            for cells in (after, before):
                for i, v in enumerate(cells or ()):
                    if i not in t["time"]:
                        w[nk + i] = max(w[nk + i], 5 if v is None else len(str(v)))
    for name, t in data["tables"].items():
        # room for the header and the widest value (with "was " before an old value, drawn under the
        # new one, in a column a step changes); before the first key, an added or removed row's mark
        t["widths"] = [min(max(head, value + (4 if i in was[name] else 0)) + 1, WIDE) + (2 if i == 0 else 0)
                       for i, (head, value) in enumerate(zip(heads[name], values[name], strict=True))]


def _node_divergence(e: MultiExplanation) -> dict[str, Any] | None:
    v = e.verdict
    if v.status == "conform":
        return None
    d = v.witness.divergence if v.witness is not None else None
    event = v.event
    node = client = None
    argv = d.argv if d is not None else None
    if event is not None and 0 < event <= len(e.trace.events):
        node, client = event_node(e.trace, event - 1)
        ev = e.trace.events[event - 1]
        if argv is None and isinstance(ev, (Call, Send)):
            argv = ev.cmd
    says = None if d is None or d.got is None else show(d.got)
    if says is None and v.got is not None:
        says = show(v.got)
    allows = list(d.allowed_text or [show(a) for a in d.allowed]) if d is not None else list(
        v.allowed_text or [show(a) for a in v.allowed])
    return {"status": v.status, "event": event, "line": None if event is None else event + 1, "client": client,
            "node": node, "cmd": command_text(argv), "message": v.message, "says": says, "allows": allows,
            "where": "", "rules": []}


__all__ = ["add_column_widths", "event_node", "explanation_data", "is_multinode", "multinode_page_data", "node_row_id", "row_cells",
           "row_id", "trace_page_data"]
