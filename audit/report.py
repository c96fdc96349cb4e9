"""The audit's outputs for readers: ``summary.json`` and ``report.html`` (spec/audit.md, "Output").

Both are built from the Parquet tables the job wrote, read in Arrow batches: the plots are
aggregated column by column over every ledger row and every anomaly, ``summary.json`` lists every
anomaly but is written one batch at a time, and only the anomalies the report shows become Python
rows, so the driver's memory does not grow with the number of anomalies or ledger rows.

The report is one self-contained HTML file: its plots are SVG drawn by matplotlib and written
inline (no script, no network), and each anomaly it lists links to a section that lists the
events proving it, read back from the events table.
"""

from __future__ import annotations

import html
import io
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from xspec.audit.ledger import ANOMALY_KINDS
from xspec.spec.resp import arg_to_json

MAX_ANOMALIES_SHOWN = 500
MAX_GROUPS_PLOTTED = 8
STATUSES = ("conform", "diverge", "unsupported", "inconclusive")
BATCH_ROWS = 65_536
"""Rows read from a table at a time."""


def text_of(data: bytes | None) -> Any:
    """A key, group or consumer name as a trace writes an argument: text, or ``{"b64": ...}``."""
    return None if data is None else arg_to_json(data)


def label(data: bytes | None) -> str:
    v = text_of(data)
    return v if isinstance(v, str) else json.dumps(v)


def table_files(folder: Path) -> list[Path]:
    """The Parquet files of a table folder, in name order (not the hidden or partial ones Spark or a task leaves)."""
    if not folder.is_dir():
        return []
    return [p for p in sorted(folder.glob("*.parquet")) if not p.name.startswith(("_", "."))]


def table_batches(folder: Path, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    """A table's record batches, file by file, in order."""
    for path in table_files(folder):
        yield from pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS, columns=columns)


def table_rows(folder: Path) -> int:
    """A table's number of rows, from the files' footers."""
    return sum(pq.ParquetFile(p).metadata.num_rows for p in table_files(folder))


def _names(column: pa.Array, cache: dict[bytes | None, Any]) -> list[Any]:
    """Binary names as ``summary.json`` writes them (names repeat: each is converted once)."""
    out = []
    for v in column.to_pylist():
        got = cache.get(v, cache)
        if got is cache:
            got = cache[v] = text_of(v)
        out.append(got)
    return out


def summary_rows(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """An ANOMALIES batch as the rows of ``summary.json``'s ``anomalies``."""
    cache: dict[bytes | None, Any] = {}
    consumers = batch.column("consumers")
    flat = _names(pc.list_flatten(consumers), cache)
    offsets = pc.fill_null(pc.list_value_length(consumers), 0).to_numpy().cumsum().tolist()
    kinds, traces = batch.column("kind").to_pylist(), batch.column("trace").to_pylist()
    keys, groups = _names(batch.column("key"), cache), _names(batch.column("group"), cache)
    ids, events = batch.column("id").to_pylist(), batch.column("events").to_pylist()
    rows = []
    start = 0
    for i, end in enumerate(offsets):
        rows.append({"kind": kinds[i], "trace": traces[i], "key": keys[i], "group": groups[i], "id": ids[i],
                     "consumers": flat[start:end], "events": events[i]})
        start = end
    return rows


class AnomalyRows(Sequence[dict[str, Any]]):
    """The anomalies of an audit as ``summary.json`` lists them, read from the anomalies table (Parquet) a batch at
    a time whenever they are iterated: however many there are, they are never all Python objects at once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.rows = table_rows(folder)

    def __len__(self) -> int:
        return self.rows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch in table_batches(self.folder):
            yield from summary_rows(batch)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self.rows
        if not 0 <= index < self.rows:
            raise IndexError(index)
        return next(r for n, r in enumerate(self) if n == index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"AnomalyRows({str(self.folder)!r}, {self.rows} rows)"


def _value_counts(column: pa.Array, into: Counter[Any]) -> None:
    for item in pc.value_counts(column).to_pylist():
        into[item["values"]] += item["counts"]


def summary(files: int, out: Path) -> dict[str, Any]:
    """The ``summary.json`` object of the audit written under ``out``; its ``anomalies`` is an
    :class:`AnomalyRows` over ``out/anomalies`` (read when iterated)."""
    verdicts = pq.read_table(out / "verdicts").to_pylist()
    counts = dict.fromkeys(STATUSES, 0)
    for v in verdicts:
        if v["status"] in counts:
            counts[v["status"]] += 1
    kinds: Counter[str] = Counter()
    for batch in table_batches(out / "anomalies", ["kind"]):
        _value_counts(batch.column("kind"), kinds)
    return {
        "traces": files,
        "events": sum(v["events"] for v in verdicts if v["status"] in counts),
        "conformance": counts,
        "errors": [{"trace": v["trace"], "message": v["message"]} for v in verdicts if v["status"] not in counts],
        "unmet": [{"trace": v["trace"], "status": v["status"], "expected": v["expected"],
                   "expected_event": v["expected_event"], "event": v["event"]}
                  for v in verdicts if not v["met"]],
        "anomalies": AnomalyRows(out / "anomalies"),
        "anomaly_counts": dict(sorted(kinds.items())),
        "ledger_rows": table_rows(out / "ledger"),
        "quarantined": pq.read_table(out / "quarantine").to_pylist(),
    }


def _indented(value: Any, depth: int) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False).replace("\n", "\n" + " " * depth)


def write_summary(path: Path, s: dict[str, Any]) -> None:
    """Write ``summary.json`` (indented by one space; each anomaly on a line of its own), streaming the anomalies."""
    with path.open("w", encoding="utf-8") as f:
        _write_summary(f, s)


def _write_summary(f: IO[str], s: dict[str, Any]) -> None:
    f.write("{")
    for n, (name, value) in enumerate(s.items()):
        f.write(("," if n else "") + f"\n {json.dumps(name)}: ")
        if name == "anomalies":
            _write_anomalies(f, value)
        else:
            f.write(_indented(value, 1))
    f.write("\n}\n")


def _write_anomalies(f: IO[str], anomalies: Sequence[dict[str, Any]]) -> None:
    """The anomalies as a JSON list, one per line, written a batch at a time."""
    chunks = (summary_rows(b) for b in table_batches(anomalies.folder)) if isinstance(anomalies, AnomalyRows) \
        else [anomalies]
    sep = "[\n  "
    for rows in chunks:
        for r in rows:
            f.write(sep + json.dumps(r, ensure_ascii=False))
            sep = ",\n  "
    f.write("[]" if sep.startswith("[") else "\n ]")


def exit_status(s: dict[str, Any], fail_on_anomaly: bool) -> int:
    """0 when every trace met its expectation and every file could be read; 1 otherwise (or on anomalies)."""
    if s["unmet"] or s["errors"] or s["quarantined"]:
        return 1
    if fail_on_anomaly and len(s["anomalies"]):
        return 1
    return 0


# ---------------------------------------------------------------------------------------------
# What the plots show, aggregated over the tables a batch at a time

LEDGER_PLOTTED = ["trace", "key", "group", "added_time", "deliveries", "acks", "removed_time", "state", "end_time"]

GroupName = tuple[str, "bytes | None", "bytes | None"]
"""A consumer group of a trace: (trace, key, group)."""

NONE = -(1 << 62)
"""No time (in the int64 arrays of :func:`pending_spans`)."""


def _first_per_row(parents: np.ndarray, values: np.ndarray, rows: int, lowest: bool) -> np.ndarray:
    """Per row, the first value (``lowest``: the smallest) of the row's (parent, value) pairs; -1 << 62 for none."""
    out = np.full(rows, NONE, dtype=np.int64)
    if len(parents):
        order = np.lexsort((values, parents)) if lowest else np.argsort(parents, kind="stable")
        p, v = parents[order], values[order]
        first = np.ones(len(p), dtype=bool)
        first[1:] = p[1:] != p[:-1]
        out[p[first]] = v[first]
    return out



def _flat_times(column: pa.ChunkedArray | pa.Array, keep: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(row index, time) of every item of a list<struct> column that has a time (and its field ``keep`` true)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    flat = pc.list_flatten(column)
    parents = pc.list_parent_indices(column)
    times = pc.struct_field(flat, "time")
    mask = pc.is_valid(times)
    if keep is not None:
        mask = pc.and_(mask, pc.fill_null(pc.struct_field(flat, keep), False))
    return (parents.filter(mask).to_numpy(zero_copy_only=False).astype(np.int64),
            times.filter(mask).to_numpy(zero_copy_only=False).astype(np.int64))


def pending_spans(batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray]:
    """Per ledger row, (when E first became pending, when it stopped) as ``_pending_changes`` reads a row: the first
    delivery's time; the earliest XACK that included it or its removal, else the trace's end while still pending.
    ``NONE`` where there is none."""
    rows = batch.num_rows
    start = _first_per_row(*_flat_times(batch.column("deliveries")), rows, lowest=False)
    acked = _first_per_row(*_flat_times(batch.column("acks"), "included"), rows, lowest=True)
    removed = pc.fill_null(batch.column("removed_time"), NONE).to_numpy(zero_copy_only=False)
    pending_end = pc.if_else(pc.fill_null(pc.equal(batch.column("state"), "pending"), False),
                             pc.fill_null(batch.column("end_time"), NONE), NONE).to_numpy(zero_copy_only=False)
    both = np.where(acked == NONE, removed, np.where(removed == NONE, acked, np.minimum(acked, removed)))
    end = np.where(both == NONE, pending_end, both)
    return start, np.where(start == NONE, NONE, end)


class PlotData:
    """What the report plots, gathered over every ledger row and anomaly."""

    def __init__(self) -> None:
        self.latency: list[np.ndarray] = []  # ms from the XADD's reply to the first delivery
        self.deliveries = np.zeros(0, dtype=np.int64)  # entries by their number of deliveries
        self.changes: Counter[GroupName] = Counter()  # pending changes per group
        self.pending: dict[GroupName, list[tuple[int, int]]] = {}  # the plotted groups' (time, +1 or -1)
        self.kinds: Counter[str] = Counter()
        self.traces: Counter[str] = Counter()

    def add_ledger(self, batch: pa.RecordBatch) -> None:
        deliveries = batch.column("deliveries")
        count = pc.fill_null(pc.list_value_length(deliveries), 0).to_numpy(zero_copy_only=False)
        per = np.bincount(count)
        if len(per) > len(self.deliveries):
            per[: len(self.deliveries)] += self.deliveries
            self.deliveries = per
        else:
            self.deliveries[: len(per)] += per
        any_delivery = pa.array(count > 0)
        first = pc.struct_field(pc.list_element(deliveries.filter(any_delivery), 0), "time")
        lat = pc.subtract(first, batch.column("added_time").filter(any_delivery)).drop_null()
        if len(lat):
            self.latency.append(lat.to_numpy(zero_copy_only=False) / 1000)
        start, end = pending_spans(batch)
        changes = (start != NONE).astype(np.int64) + (end != NONE)
        table = pa.table({"trace": batch.column("trace"), "key": batch.column("key"), "group": batch.column("group"),
                          "n": pa.array(changes)})
        for r in table.group_by(["trace", "key", "group"], use_threads=False).aggregate([("n", "sum")]).to_pylist():
            if r["n_sum"]:
                self.changes[(r["trace"], r["key"], r["group"])] += r["n_sum"]

    def plotted_groups(self) -> list[GroupName]:
        """The groups with the most pending changes (the pending plot's lines)."""
        return sorted(self.changes, key=lambda g: (-self.changes[g], g[0], g[1] or b"", g[2] or b""))[
            :MAX_GROUPS_PLOTTED]

    def add_pending(self, batch: pa.RecordBatch, groups: list[GroupName]) -> None:
        """The changes of the plotted groups' rows in ``batch``."""
        for g in groups:
            mask = pc.equal(batch.column("trace"), g[0])
            for name, value in (("key", g[1]), ("group", g[2])):
                mask = pc.and_kleene(mask, pc.is_null(batch.column(name)) if value is None else
                                     pc.equal(batch.column(name), pa.scalar(value, pa.binary())))
            rows = batch.filter(pc.fill_null(mask, False))
            if not rows.num_rows:
                continue
            start, end = pending_spans(rows)
            steps = self.pending.setdefault(g, [])
            steps += [(int(t), 1) for t in start[start != NONE]]
            steps += [(int(t), -1) for t in end[end != NONE]]

    def add_anomalies(self, batch: pa.RecordBatch) -> None:
        _value_counts(batch.column("kind"), self.kinds)
        _value_counts(batch.column("trace"), self.traces)


def plot_data(out: Path) -> PlotData:
    """The plots' data from ``out``'s ledger and anomalies tables (the ledger read twice: once for everything, once
    for the rows of the groups plotted over time)."""
    data = PlotData()
    for batch in table_batches(out / "ledger", LEDGER_PLOTTED):
        data.add_ledger(batch)
    groups = data.plotted_groups()
    if groups:
        files = table_files(out / "ledger")
        dataset = ds.dataset([str(p) for p in files], format="parquet")
        for batch in dataset.to_batches(columns=LEDGER_PLOTTED, filter=ds.field("trace").isin(
                sorted({g[0] for g in groups})), batch_size=BATCH_ROWS):
            data.add_pending(batch, groups)
    for batch in table_batches(out / "anomalies", ["kind", "trace"]):
        data.add_anomalies(batch)
    return data


# ---------------------------------------------------------------------------------------------
# Plots


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _figure(title: str) -> tuple[Any, Any]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams["svg.fonttype"] = "none"
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    ax.set_title(title, fontsize=11)
    return fig, ax


def _empty(ax: Any, text: str = "no data") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#777")
    ax.set_xticks([])
    ax.set_yticks([])


def _chart(title: str, draw: Callable[[Any], bool], empty: str = "no data") -> tuple[str, str]:
    """(title, SVG) of one plot; ``draw`` returns False when it had nothing to draw."""
    fig, ax = _figure(title)
    if not draw(ax):
        _empty(ax, empty)
    return title, _svg(fig)


def _labelled(ax: Any, xlabel: str, ylabel: str) -> bool:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return True


def _ranked(ax: Any, counts: list[tuple[str, int]], color: str) -> bool:
    """Horizontal bars, first on top."""
    if not counts:
        return False
    ax.barh([n for n, _ in counts], [k for _, k in counts], color=color)
    ax.invert_yaxis()
    return True


def _group_label(g: GroupName) -> str:
    return f"{Path(g[0]).name}: {label(g[1])}/{label(g[2])}"


def plots(data: PlotData) -> list[tuple[str, str]]:
    """(title, inline SVG) for each plot of the report."""
    lat = np.concatenate(data.latency) if data.latency else np.zeros(0)

    def latency(ax: Any) -> bool:
        return bool(len(lat)) and ax.hist(lat, bins=40, color="#4C78A8") is not None and _labelled(
            ax, "ms", "entries")

    def pending(ax: Any) -> bool:
        shown = [g for g in data.plotted_groups() if data.pending.get(g)]
        for g in shown:
            steps = sorted(data.pending[g])
            xs = np.array([(t - steps[0][0]) / 1e6 for t, _ in steps])
            ax.step(xs, np.cumsum([d for _, d in steps]), where="post", label=_group_label(g)[:60])
        if shown:
            ax.legend(fontsize=7, loc="upper right")
        return bool(shown) and _labelled(ax, "seconds since the group's first delivery", "pending")

    per = {n: int(k) for n, k in enumerate(data.deliveries) if k}

    def deliveries(ax: Any) -> bool:
        counts = sorted(per)
        return bool(per) and ax.bar([str(x) for x in counts], [per[x] for x in counts],
                                    color="#72B7B2") is not None and _labelled(ax, "deliveries", "entries")

    kinds = data.kinds
    names = [k for k in ANOMALY_KINDS if k in kinds] + sorted(set(kinds) - set(ANOMALY_KINDS))

    def by_trace(ax: Any) -> bool:
        ax.tick_params(axis="y", labelsize=7)
        top = sorted(data.traces.items(), key=lambda tn: (-tn[1], tn[0]))[:20]
        return _ranked(ax, [(Path(t).name, n) for t, n in top], "#F58518")

    return [
        _chart("Delivery latency: XADD reply to first delivery (ms)", latency),
        _chart("Pending entries over time, per group (largest groups)", pending),
        _chart("Deliveries per entry", deliveries),
        _chart("Anomalies by kind", lambda ax: _ranked(ax, [(k, kinds[k]) for k in names], "#E45756"),
               "no anomalies"),
        _chart("Anomalies by trace (most first)", by_trace, "no anomalies"),
    ]


# ---------------------------------------------------------------------------------------------
# HTML

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;
vertical-align:top}th{background:#f3f3f3}code{font-size:12px}.plot{display:inline-block;margin:.5em}
.bad{color:#b00}.ok{color:#070}section.anomaly{margin:1em 0;padding:.3em 1em;border-left:4px solid #E45756}
"""


def _events_of(events_dir: Path, wanted: dict[str, set[int]]) -> dict[tuple[str, int], dict[str, Any]]:
    if not wanted or not events_dir.exists():
        return {}
    dataset = ds.dataset(str(events_dir), format="parquet")
    flat = {e for es in wanted.values() for e in es}
    table = dataset.to_table(columns=["trace", "event", "line", "client", "ev", "cmd", "reply_json"],
                             filter=ds.field("trace").isin(list(wanted)) & ds.field("event").isin(list(flat)))
    return {(r["trace"], r["event"]): r for r in table.to_pylist() if r["event"] in wanted[r["trace"]]}


VIEW_FOLDER = "view"
"""Where report.html expects the ``xspec view`` pages, relative to itself."""


def view_link(trace: str, line: int | None = None) -> str:
    """The link from report.html to a trace's ``xspec view`` page, at a line of the trace file:
    ``view/<the trace's path as given, without a leading /, .jsonl or .jsonl.gz made .html>#line=<line>``."""
    page = trace.lstrip("/")
    for suffix in (".gz", ".jsonl"):
        page = page.removesuffix(suffix)
    return f"{VIEW_FOLDER}/{html.escape(page)}.html" + ("" if line is None else f"#line={line}")


def _cmd_text(cmd: list[bytes] | None) -> str:
    return " ".join(label(a) for a in cmd) if cmd else ""


def first_anomalies(folder: Path, n: int) -> list[dict[str, Any]]:
    """The first ``n`` rows of the anomalies table (its order), as Arrow's Python rows."""
    rows: list[dict[str, Any]] = []
    for batch in table_batches(folder):
        rows += batch.slice(0, n - len(rows)).to_pylist()
        if len(rows) >= n:
            break
    return rows


def write_html(path: Path, s: dict[str, Any], out: Path) -> None:
    """Write ``report.html`` from the summary and the tables under ``out``: plots over every ledger row and
    anomaly, and the first :data:`MAX_ANOMALIES_SHOWN` anomalies, each linked to its events."""
    total = len(s["anomalies"])
    shown = first_anomalies(out / "anomalies", MAX_ANOMALIES_SHOWN)
    wanted: dict[str, set[int]] = {}
    for a in shown:
        wanted.setdefault(a["trace"], set()).update(a["events"])
    events = _events_of(out / "events", wanted)
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>xspec audit</title>"
             f"<style>{_STYLE}</style></head><body><h1>xspec audit</h1>"]
    c = s["conformance"]
    parts.append(f"<p>{s['traces']} traces, {s['events']} events: {c['conform']} conform, {c['diverge']} diverge, "
                 f"{c['unsupported']} unsupported, {c['inconclusive']} inconclusive; {len(s['unmet'])} not as "
                 f"expected; {len(s['quarantined'])} malformed lines; {s['ledger_rows']} ledger rows; "
                 f"{total} anomalies.</p>")
    for title, svg in plots(plot_data(out)):
        parts.append(f"<div class='plot' title='{e(title)}'>{svg}</div>")
    if s["unmet"] or s["errors"]:
        parts.append("<h2>Traces not as expected</h2><table><tr><th>trace</th><th>verdict</th><th>expected</th></tr>")
        for u in s["unmet"]:
            at = f" at event {u['event']}" if u["event"] is not None else ""
            parts.append(f"<tr><td>{e(u['trace'])}</td><td class='bad'>{e(u['status'])}{at}</td>"
                         f"<td>{e(str(u['expected']))}</td></tr>")
        parts.append("</table>")
    if s["quarantined"]:
        parts.append("<h2>Quarantined</h2><table><tr><th>file</th><th>line</th><th>problem</th></tr>")
        parts += [f"<tr><td>{e(q['file'])}</td><td>{q['line']}</td><td>{e(q['message'])}</td></tr>"
                  for q in s["quarantined"]]
        parts.append("</table>")
    parts.append("<h2>Anomalies</h2>")
    if total:
        parts.append(f"<p>Each anomaly links to its trace's page in <code>{VIEW_FOLDER}/</code> beside this report, "
                     f"at the line of an event: write the pages with <code>xspec view TRACE --out "
                     f"{VIEW_FOLDER}/PATH.html</code> (PATH: the trace's path without <code>.jsonl</code>).</p>")
        if total > len(shown):
            parts.append(f"<p class='more'>{total} anomalies: the first {len(shown)} (by kind, trace, key, group "
                         f"and id) are listed here; all of them are in <code>anomalies/</code> beside this report "
                         f"(Parquet, as is the ledger in <code>ledger/</code>) and in <code>summary.json</code>.</p>")
        parts.append("<table><tr><th>#</th><th>kind</th><th>trace</th><th>key</th><th>group</th><th>id</th>"
                     "<th>consumers</th><th>events</th></tr>")
        for n, a in enumerate(shown):
            parts.append(f"<tr><td><a href='#a{n}'>{n + 1}</a></td><td>{e(a['kind'])}</td><td>{e(a['trace'])}</td>"
                         f"<td>{e(label(a['key']))}</td><td>{e(label(a['group']))}</td><td>{e(a['id'])}</td>"
                         f"<td>{e(', '.join(label(x) for x in a['consumers']))}</td>"
                         f"<td>{', '.join(str(x) for x in a['events'])}</td></tr>")
        parts.append("</table>")
        for n, a in enumerate(shown):
            first = next((events[(a["trace"], ev)]["line"] for ev in a["events"] if (a["trace"], ev) in events), None)
            parts.append(f"<section class='anomaly' id='a{n}'><h3>{n + 1}. {e(a['kind'])}: {e(label(a['key']))} / "
                         f"{e(label(a['group']))} / {e(a['id'])}</h3><p><code>{e(a['trace'])}</code> "
                         f"(<a class='view' href='{view_link(a['trace'], first)}'>view</a>)</p>"
                         "<table><tr><th>event</th><th>line</th><th>client</th><th>ev</th><th>command</th>"
                         "<th>reply</th></tr>")
            for ev in a["events"]:
                r = events.get((a["trace"], ev))
                if r is None:
                    continue
                parts.append(f"<tr><td>{ev}</td><td><a href='{view_link(a['trace'], r['line'])}'>{r['line']}</a>"
                             f"</td><td>{r['client']}</td><td>{e(r['ev'])}</td>"
                             f"<td><code>{e(_cmd_text(r['cmd']))}</code></td>"
                             f"<td><code>{e((r['reply_json'] or '')[:400])}</code></td></tr>")
            parts.append("</table></section>")
    else:
        parts.append("<p class='ok'>None.</p>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
