"""Checking one large trace in independent parts (P-compositionality; spec/audit.md, "The split").

The model's state is a product: each stream key's value, groups, PELs and blocked-client queue
depend only on the commands that name that key, plus per-connection state (protocol, MULTI)
and one global clock whose readings never decrease. :func:`plan_split` groups the keys into
components (keys named by one command, one MULTI/EXEC, or one client that ever blocks are
joined), refuses traces that use anything whose keys it does not know, and gives each
component the events of its keys plus a copy of each of its clients' connection events
(connect, close, and keyless commands such as PING or HELLO).

:func:`check_split` checks every part alone. A verdict other than conform in any part, or a
part past its search bound, sends the whole trace to the whole-trace checker, so divergences
(their event and allowed replies) are exactly the whole trace's. When every part conforms, a
virtual-clock trace conforms (its execution is the file's order); a wall-clock trace conforms
when the parts' witnesses merge into one execution of the whole trace: an order that keeps every
part's order, real-time order, each client's order and the clock readings non-decreasing, with
each shared connection event at one point. The merge is greedy; when it finds no order, the
whole trace is checked. The split never changes a verdict: it only skips work it can prove.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from xspec.audit.commands import command_keys, op_name
from xspec.audit.json_text import loads
from xspec.spec.trace_format import Recv, Trace
from xspec.traces.check.checker import Verdict, check_trace
from xspec.traces.check.witness import Witness

MAX_PARTS = 64
"""Components beyond this many are packed together (a part may hold several components)."""

CONNECTION_COMMANDS = frozenset({"PING", "ECHO", "HELLO", "QUIT", "CLIENT SETNAME", "CLIENT GETNAME", "CLIENT ID",
                                 "XINFO HELP", "XGROUP HELP", "COMMAND COUNT"})
"""Keyless commands that read or change only their own connection: copied into each part of the client."""

INFINITY = 1 << 62


@dataclass
class Part:
    """The events of one part: indexes into the whole trace's events, in file order."""

    events: list[int]

    def trace(self, whole: Trace) -> Trace:
        return Trace(whole.header, [whole.events[i] for i in self.events], whole.path)


class _Keys:
    """Union-find over keys."""

    def __init__(self) -> None:
        self.parent: dict[bytes, bytes] = {}

    def find(self, k: bytes) -> bytes:
        p = self.parent.setdefault(k, k)
        while p != k:
            self.parent[k] = self.parent.setdefault(p, p)
            k, p = p, self.parent[p]
        return k

    def union(self, keys: Sequence[bytes]) -> None:
        if not keys:
            return
        root = self.find(keys[0])
        for k in keys[1:]:
            other = self.find(k)
            if other != root:
                self.parent[other] = root


PLAN = pa.schema([("trace", pa.string()), ("events", pa.int64()), ("part", pa.int32()), ("size", pa.int64()),
                  ("file", pa.string()), ("reason", pa.string())])
"""The split's plan of each big trace: a row per part (its number of events, and the Parquet file that lists every
part's events and lines), or one row (``part`` -1) saying why the trace is checked whole."""

PART_RESULTS = pa.schema([("trace", pa.string()), ("part", pa.int32()), ("status", pa.string()),
                          ("steps", pa.string())])
"""A part's verdict, and the Parquet file of its witness steps (null without a witness)."""

SPLIT_TRACES = pa.schema([("trace", pa.string()), ("events", pa.int64()), ("parts", pa.int32()),
                          ("reason", pa.string()), ("statuses", pa.list_(pa.string())),
                          ("steps", pa.list_(pa.string()))])
"""What deciding a split trace's verdict reads: its parts' results in part order (or why it was not split)."""


def _blocks(cmd: list[bytes]) -> bool:
    return cmd[0].upper() in (b"XREAD", b"XREADGROUP") and any(a.upper() == b"BLOCK" for a in cmd[1:])


PlanEvent = tuple[str, "int | None", "list[bytes] | None"]
"""What planning reads of an event: its kind as the events table's ``ev`` names it (``call``, ``send``, ``recv``,
``connect``, ``close``, ``note``...), its client and its command (None for a recv: it answers its client's oldest
send)."""


def plan_events_of(trace: Trace) -> list[PlanEvent]:
    """The planning view of a loaded trace's events (the events table's ``ev``, ``client`` and ``cmd``)."""
    return [(type(e).__name__.lower(), getattr(e, "c", None), None if isinstance(e, Recv) else getattr(e, "cmd", None))
            for e in trace.events]


def plan_split(trace: Trace) -> list[Part] | str:
    """The parts of ``trace``, or why it is not split (then it is checked whole)."""
    return plan_events(plan_events_of(trace))


def plan_events(events: Sequence[PlanEvent]) -> list[Part] | str:
    """The parts of a trace/1 trace given by its events' (kind, client, command), or why it is not split: the same
    plan from a loaded trace (:func:`plan_split`) and from the events table (the Spark job plans there)."""
    keys = _Keys()
    owner: list[list[bytes] | None] = [None] * len(events)  # event -> the keys it belongs with
    shared: list[int] = []  # connection events, copied into each part of their client
    client_keys: dict[int, list[bytes]] = {}
    blocking: set[int] = set()
    outstanding: dict[int, list[int]] = {}  # client -> its sends without a recv yet
    multi: dict[int, list[int]] = {}  # client -> events of its open MULTI
    for i, (kind, c, cmd) in enumerate(events):
        if kind == "note":
            continue
        if kind in ("connect", "close"):
            shared.append(i)
            if kind == "close":
                outstanding.pop(c, None)  # type: ignore[arg-type]
            continue
        if kind == "recv":
            queue = outstanding.get(c)  # type: ignore[arg-type]
            if not queue:
                return "a reply that answers no command"
            owner[i] = owner[queue.pop(0)]
            if owner[i] is None:
                shared.append(i)
            continue
        if kind not in ("call", "send"):
            return f"a {kind} event"
        if cmd is None:
            return "raw protocol bytes"
        assert c is not None
        name = op_name(cmd) or ""
        in_multi = multi.get(c)
        if name == "MULTI" or in_multi is not None:
            group = multi.setdefault(c, [])
            group.append(i)
            if name in ("EXEC", "DISCARD"):
                del multi[c]
                unit: list[bytes] = []
                for j in group:
                    jcmd = events[j][2] or []
                    k = command_keys(jcmd)
                    jn = op_name(jcmd)
                    if k is None and jn not in ("MULTI", "EXEC", "DISCARD") and jn not in CONNECTION_COMMANDS:
                        return f"uses {jn}, whose keys the split does not know"
                    unit += k or []
                if not unit:
                    return "a MULTI/EXEC that names no key"
                keys.union(unit)
                for j in group:
                    owner[j] = unit
                client_keys.setdefault(c, []).extend(unit)
            if kind == "send":
                outstanding.setdefault(c, []).append(i)
            continue
        if name in CONNECTION_COMMANDS:
            shared.append(i)
        else:
            k = command_keys(cmd)
            if k is None:
                return f"uses {name}, whose keys the split does not know"
            if not k:
                return f"uses {name}, which names no key"
            keys.union(k)
            owner[i] = k
            client_keys.setdefault(c, []).extend(k)
            if _blocks(cmd):
                blocking.add(c)
        if kind == "send":
            outstanding.setdefault(c, []).append(i)
    if multi:
        return "a MULTI without EXEC"
    for c in blocking:  # a blocked client executes nothing else until it is served: keep it in one part
        keys.union(client_keys.get(c, []))
    roots = sorted({keys.find(k) for k in keys.parent})
    if len(roots) < 2:
        return "one part"
    sizes: dict[bytes, int] = dict.fromkeys(roots, 0)
    for o in owner:
        if o:
            sizes[keys.find(o[0])] += 1
    # pack the components into at most MAX_PARTS parts, biggest first into the smallest part
    heap = [(0, n) for n in range(min(MAX_PARTS, len(roots)))]
    part_of: dict[bytes, int] = {}
    for root in sorted(roots, key=lambda r: -sizes[r]):
        size, n = heapq.heappop(heap)
        part_of[root] = n
        heapq.heappush(heap, (size + sizes[root], n))
    count = len(heap)
    members: list[list[int]] = [[] for _ in range(count)]
    client_parts: dict[int, set[int]] = {}
    for i, o in enumerate(owner):
        if o:
            p = part_of[keys.find(o[0])]
            members[p].append(i)
            client_parts.setdefault(events[i][1], set()).add(p)  # type: ignore[arg-type]
    for i in shared:
        for p in client_parts.get(events[i][1], {0}):  # type: ignore[arg-type]
            members[p].append(i)
    return [Part(sorted(m)) for m in members if m]


@dataclass
class _Step:
    ident: tuple[str, int]
    inv: int
    resp: int
    client: int
    readings: tuple[int, ...]


def _steps(witness: Witness, part: Part) -> list[_Step]:
    out = []
    for s in witness.steps:
        g = part.events[s.event]
        if s.kind in ("connect", "close"):
            inv = resp = g
        else:
            inv = g
            resp = part.events[s.reply_event] if s.reply_event is not None else INFINITY
        out.append(_Step((s.kind, g), inv, resp, s.client, s.readings))
    return out


def merge(parts: list[list[_Step]]) -> bool:
    """Is there one execution of the whole trace that every part's execution is a projection of?

    Greedy: take, among the part heads that may run next, the one whose first clock reading is
    lowest. A head may run next when no step left anywhere had its reply before the head was
    sent, no earlier command of its client is left in another part, its readings are not below
    the last reading taken, and, for a connection event copied into several parts, it is the
    head of each of them. True: such an order exists; False: the greedy walk found none.
    """
    pos = [0] * len(parts)
    suffix_min: list[list[int]] = []
    for steps in parts:
        m = [INFINITY] * (len(steps) + 1)
        for j in range(len(steps) - 1, -1, -1):
            m[j] = min(m[j + 1], steps[j].resp)
        suffix_min.append(m)
    copies: dict[tuple[str, int], list[int]] = {}
    for p, steps in enumerate(parts):
        for s in steps:
            copies.setdefault(s.ident, []).append(p)
    # per part and client, the positions of that client's steps (to check client order across parts)
    by_client: list[dict[int, list[int]]] = []
    for steps in parts:
        d: dict[int, list[int]] = {}
        for j, s in enumerate(steps):
            d.setdefault(s.client, []).append(j)
        by_client.append(d)
    client_pos: list[dict[int, int]] = [dict.fromkeys(d, 0) for d in by_client]
    clock = -INFINITY
    remaining = sum(len(s) for s in parts)
    while remaining:
        best: tuple[int, int, int] | None = None
        for p, steps in enumerate(parts):
            if pos[p] >= len(steps):
                continue
            h = steps[pos[p]]
            holders = copies[h.ident]
            if any(pos[q] >= len(parts[q]) or parts[q][pos[q]].ident != h.ident for q in holders):
                continue
            if h.readings and min(h.readings) < clock:
                continue
            ok = True
            for q in range(len(parts)):
                if q in holders:
                    if suffix_min[q][pos[q] + 1] < h.inv:
                        ok = False
                        break
                    continue
                if suffix_min[q][pos[q]] < h.inv:
                    ok = False
                    break
                lst = by_client[q].get(h.client)
                if lst is not None:
                    k = client_pos[q][h.client]
                    while k < len(lst) and lst[k] < pos[q]:
                        k += 1
                    client_pos[q][h.client] = k
                    if k < len(lst) and parts[q][lst[k]].inv < h.inv:
                        ok = False
                        break
            if not ok:
                continue
            rank = (h.readings[0] if h.readings else -INFINITY, h.inv, p)
            if best is None or rank < best:
                best = rank
        if best is None:
            return False
        h = parts[best[2]][pos[best[2]]]
        for q in copies[h.ident]:
            pos[q] += 1
            remaining -= 1
        if h.readings:
            clock = max(clock, max(h.readings))
    return True


def check_split(trace: Trace, dialect: str | None = "auto",
                check: Callable[[Trace, str | None], Verdict] = check_trace) -> tuple[Verdict, int, str]:
    """(the verdict, the number of parts checked, how: ``whole``, ``split`` or ``fallback: why``)."""
    plan = plan_split(trace)
    if isinstance(plan, str):
        return check(trace, dialect), 1, f"whole: {plan}"
    verdicts = [check(p.trace(trace), dialect) for p in plan]
    return merge_verdicts(trace, dialect, plan, verdicts, check)


def merge_verdicts(trace: Trace, dialect: str | None, plan: list[Part], verdicts: list[Verdict],
                   check: Callable[[Trace, str | None], Verdict] = check_trace) -> tuple[Verdict, int, str]:
    """The whole trace's verdict from its parts' (checking the whole where the parts cannot decide)."""

    def witnesses() -> list[list[_Step]] | None:
        if any(v.witness is None for v in verdicts):
            return None
        return [_steps(v.witness, p) for p, v in zip(plan, verdicts, strict=True)]  # type: ignore[arg-type]

    why = undecided(trace.header.clock, [v.status for v in verdicts], witnesses)
    if why is None:
        return Verdict("conform", len(trace.events)), len(plan), "split"
    return check(trace, dialect), len(plan), f"fallback: {why}"


def undecided(clock: str | None, statuses: Sequence[str], witnesses: Callable[[], list[list[_Step]] | None],
              ) -> str | None:
    """None when the parts' verdicts (and, on a wall clock, their merged witnesses) prove the whole trace
    conforms; else why the whole trace must be checked."""
    bad = [s for s in statuses if s != "conform"]
    if bad:
        return f"a part is {bad[0]}"
    if clock == "virtual":
        return None
    steps = witnesses()
    if steps is None:
        return "a part has no witness"
    return None if merge(steps) else "the parts' executions do not merge"


# ---------------------------------------------------------------------------------------------
# Parts checked apart (the Spark job: each part in its own task, the witnesses merged in another)

STEP = pa.struct([("kind", pa.string()), ("event", pa.int64()), ("inv", pa.int64()), ("resp", pa.int64()),
                  ("client", pa.int64()), ("readings", pa.list_(pa.int64()))])
"""A part's witness step in the whole trace's numbering (what :func:`merge` reads)."""


def part_trace(path: str, lines: Sequence[int]) -> Trace:
    """The trace of the header and the given lines (sorted) of a trace/1 file: one part, parsed by the format's own
    reader without parsing the other lines."""
    from xspec.spec import trace_format as tf
    wanted = iter(lines)
    want = next(wanted, None)
    header = None
    events = []
    with tf._open_text(Path(path)) as f:  # type: ignore[attr-defined]
        for n, text in enumerate(f, 1):
            if header is None:
                if text.strip():
                    header = tf.parse_header(loads(text), path)
                continue
            if want is None:
                break
            if n == want:
                events.append(tf.parse_event(loads(text), path, n))
                want = next(wanted, None)
    if header is None:
        raise tf.TraceError(path, 1, "empty file: a trace starts with its header line")
    return Trace(header, events, path)


def check_part(path: str, lines: Sequence[int], events: Sequence[int], dialect: str | None,
               check: Callable[[Trace, str | None], Verdict] = check_trace) -> tuple[str, pa.Array | None]:
    """(status, witness steps in the whole trace's numbering; None without a witness) of one part: the events at
    ``events`` (indexes into the whole trace), which are the file's ``lines``."""
    return check_part_trace(part_trace(path, lines), events, dialect, check)


def check_part_trace(part: Trace, events: Sequence[int], dialect: str | None,
                     check: Callable[[Trace, str | None], Verdict] = check_trace) -> tuple[str, pa.Array | None]:
    """:func:`check_part` of a part already loaded (its events are the whole trace's ``events``)."""
    verdict = check(part, dialect)
    if verdict.status != "conform" or verdict.witness is None:
        return verdict.status, None
    steps = _steps(verdict.witness, Part(list(events)))
    return verdict.status, pa.array([{"kind": s.ident[0], "event": s.ident[1], "inv": s.inv, "resp": s.resp,
                                      "client": s.client, "readings": list(s.readings)} for s in steps], STEP)


def steps_of(column: pa.Array) -> list[_Step]:
    """The steps :func:`check_part` wrote, back as :func:`merge` reads them."""
    return [_Step((s["kind"], s["event"]), s["inv"], s["resp"], s["client"], tuple(s["readings"]))
            for s in column.to_pylist()]


# ---------------------------------------------------------------------------------------------
# The Spark steps of the split: plan (and cut out each part's lines), check the parts

PART_LINES = pa.schema([("event", pa.int64()), ("line", pa.int64()), ("text", pa.string())])
"""A part's file: its events' numbers (indexes into the whole trace's events; -1 for the header) and file lines,
with the lines' text as the trace file has them (the header first)."""

PART_FLUSH_ROWS = 8_192
"""Lines a part's file gathers before writing them."""


def _file_name(trace: str) -> str:
    import hashlib
    return hashlib.sha1(trace.encode()).hexdigest()


def _write_part_lines(path: str, plan: list[Part], lines: pa.Array, out: str) -> list[str]:
    """Read the trace file once and write each part's lines (the header first) to a file of its own in ``out``;
    returns the files, in part order. ``lines``: each event's line in the file."""
    import os

    import numpy as np
    import pyarrow.parquet as pq

    from xspec.spec import trace_format as tf
    line_of = lines.to_numpy(zero_copy_only=False)
    parts = np.concatenate([np.full(len(p.events), k, dtype=np.int64) for k, p in enumerate(plan)])
    events = np.concatenate([np.asarray(p.events, dtype=np.int64) for p in plan])
    at = line_of[events]
    order = np.lexsort((parts, at))  # by line, then part: a connection event is copied into several parts
    at, parts, events = at[order].tolist(), parts[order].tolist(), events[order].tolist()
    files = [os.path.join(out, f"{_file_name(path)}-{k}.parquet") for k in range(len(plan))]
    writers = [pq.ParquetWriter(f, PART_LINES) for f in files]
    held: list[list[tuple[int, int, str]]] = [[] for _ in plan]

    def flush(k: int) -> None:
        rows = held[k]
        writers[k].write_table(pa.table({"event": [r[0] for r in rows], "line": [r[1] for r in rows],
                                         "text": [r[2] for r in rows]}, schema=PART_LINES))
        held[k] = []

    j = 0
    header = False
    with tf._open_text(Path(path)) as f:  # type: ignore[attr-defined]
        for n, text in enumerate(f, 1):
            if not header:
                if text.strip():
                    header = True
                    for k in range(len(plan)):
                        held[k].append((-1, n, text))
                continue
            if j >= len(at):
                break
            while j < len(at) and at[j] == n:
                k = parts[j]
                held[k].append((events[j], n, text))
                if len(held[k]) >= PART_FLUSH_ROWS:
                    flush(k)
                j += 1
    for k in range(len(plan)):
        if held[k]:
            flush(k)
        writers[k].close()
    return files


def plan_parts(paths: Iterator[pa.RecordBatch], events_dir: str, out: str) -> Iterator[pa.RecordBatch]:
    """Batches of a ``path`` column (trace/1 traces of the events table) in, PLAN batches out (a Spark task): each
    trace's parts, planned from its rows of the events table (:func:`plan_events`, the very plan the in-process
    split makes from the loaded trace); the trace file is then read once and each part's lines are written to a
    file of its own (:data:`PART_LINES`), so a part's check reads only its lines."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from xspec.audit.schema import EVENTS
    events = ds.dataset(events_dir, format="parquet", schema=EVENTS)
    for batch in paths:
        for path in batch.column("path").to_pylist():
            table = events.to_table(columns=["event", "line", "ev", "client", "cmd"],
                                    filter=(ds.field("trace") == path) & (ds.field("ev") != "header"))
            table = table.sort_by("event")
            n = table.num_rows
            plan = plan_events(list(zip(table.column("ev").to_pylist(), table.column("client").to_pylist(),
                                        table.column("cmd").to_pylist(), strict=True)))
            if isinstance(plan, str):
                yield pa.RecordBatch.from_pylist([{"trace": path, "events": n, "part": -1, "size": n,
                                                   "reason": plan}], PLAN)
                continue
            files = _write_part_lines(path, plan, pc.cast(table.column("line"), pa.int64()).combine_chunks(), out)
            yield pa.RecordBatch.from_pylist([{"trace": path, "events": n, "part": k, "size": len(p.events),
                                               "file": files[k]} for k, p in enumerate(plan)], PLAN)


def lines_trace(path: str, lines: pa.Table) -> Trace:
    """The trace of a part's file (:data:`PART_LINES`), parsed by the format's own reader with the lines' numbers."""
    from xspec.spec import trace_format as tf
    numbers, texts = lines.column("line").to_pylist(), lines.column("text").to_pylist()
    header = tf.parse_header(loads(texts[0]), path)
    return Trace(header, [tf.parse_event(loads(t), path, n) for n, t in zip(numbers[1:], texts[1:], strict=True)],
                 path)


def check_parts(parts: Iterator[pa.RecordBatch], dialect: str, out: str) -> Iterator[pa.RecordBatch]:
    """PLAN batches (one row per part; a task gets several) in, PART_RESULTS batches out (a Spark task): each part
    checked on its own, read from its file of lines; the witness steps of a conforming part are written to
    ``out``."""
    import os

    import pyarrow.parquet as pq

    for batch in parts:
        rows = []
        for r in batch.to_pylist():
            lines = pq.read_table(r["file"])
            events = lines.column("event").to_pylist()[1:]
            try:
                status, steps = check_part_trace(lines_trace(r["trace"], lines), events, dialect)
            except Exception:  # an unknown dialect, a defect: the whole trace is checked as in process
                status, steps = "error", None
            file = None
            if steps is not None:
                file = os.path.join(out, f"{_file_name(r['trace'])}-{r['part']}.steps.parquet")
                pq.write_table(pa.table({"step": steps}, schema=pa.schema([("step", STEP)])), file)
            rows.append({"trace": r["trace"], "part": r["part"], "status": status, "steps": file})
        if rows:
            yield pa.RecordBatch.from_pylist(rows, PART_RESULTS)
