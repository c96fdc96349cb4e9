"""The audit's outputs for readers: ``summary.json`` and ``report.html`` (spec/audit.md, "Output").

The report is one self-contained HTML file: its plots are SVG drawn by matplotlib and written
inline (no script, no network), and each anomaly links to a section that lists the events
proving it, read back from the events table.
"""

from __future__ import annotations

import html
import io
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from xspec.audit.ledger import ANOMALY_KINDS
from xspec.spec.resp import arg_to_json

MAX_ANOMALIES_SHOWN = 500
MAX_GROUPS_PLOTTED = 8
STATUSES = ("conform", "diverge", "unsupported", "inconclusive")


def text_of(data: bytes | None) -> Any:
    """A key, group or consumer name as a trace writes an argument: text, or ``{"b64": ...}``."""
    return None if data is None else arg_to_json(data)


def label(data: bytes | None) -> str:
    v = text_of(data)
    return v if isinstance(v, str) else json.dumps(v)


def summary(files: int, tables: dict[str, pa.Table]) -> dict[str, Any]:
    """The ``summary.json`` object."""
    verdicts = tables["verdicts"].to_pylist()
    counts = dict.fromkeys(STATUSES, 0)
    for v in verdicts:
        if v["status"] in counts:
            counts[v["status"]] += 1
    anomalies = [{"kind": a["kind"], "trace": a["trace"], "key": text_of(a["key"]), "group": text_of(a["group"]),
                  "id": a["id"], "consumers": [text_of(c) for c in a["consumers"]], "events": a["events"]}
                 for a in tables["anomalies"].to_pylist()]
    return {
        "traces": files,
        "events": sum(v["events"] for v in verdicts if v["status"] in counts),
        "conformance": counts,
        "errors": [{"trace": v["trace"], "message": v["message"]} for v in verdicts if v["status"] not in counts],
        "unmet": [{"trace": v["trace"], "status": v["status"], "expected": v["expected"],
                   "expected_event": v["expected_event"], "event": v["event"]}
                  for v in verdicts if not v["met"]],
        "anomalies": anomalies,
        "anomaly_counts": dict(sorted(Counter(a["kind"] for a in anomalies).items())),
        "ledger_rows": tables["ledger"].num_rows,
        "quarantined": tables["quarantine"].to_pylist(),
    }


def exit_status(s: dict[str, Any], fail_on_anomaly: bool) -> int:
    """0 when every trace met its expectation and every file could be read; 1 otherwise (or on anomalies)."""
    if s["unmet"] or s["errors"] or s["quarantined"]:
        return 1
    if fail_on_anomaly and s["anomalies"]:
        return 1
    return 0


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


def _pending_changes(cols: list[dict[str, Any]]) -> dict[str, list[tuple[int, int]]]:
    """Per group, (time, +1) when an entry became pending and (time, -1) when it stopped."""
    changes: dict[str, list[tuple[int, int]]] = {}
    for r in cols:
        pend = [d for d in (r["deliveries"] or []) if d["time"] is not None]
        if not pend:
            continue
        acked = [a["time"] for a in (r["acks"] or []) if a["included"] and a["time"] is not None]
        ends = [t for t in (min(acked) if acked else None, r["removed_time"]) if t is not None]
        end = min(ends) if ends else (r["end_time"] if r["state"] == "pending" else None)
        name = f"{Path(r['trace']).name}: {label(r['key'])}/{label(r['group'])}"
        changes.setdefault(name, []).append((pend[0]["time"], 1))
        if end is not None:
            changes[name].append((end, -1))
    return changes


def plots(ledger: pa.Table, anomalies: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(title, inline SVG) for each plot of the report."""
    import numpy as np
    cols = ledger.select(["trace", "key", "group", "added_time", "deliveries", "acks", "removed_time", "state",
                          "end_time"]).to_pylist()
    lat = [(r["deliveries"][0]["time"] - r["added_time"]) / 1000 for r in cols
           if r["deliveries"] and r["added_time"] is not None and r["deliveries"][0]["time"] is not None]

    def latency(ax: Any) -> bool:
        return bool(lat) and ax.hist(np.array(lat), bins=40, color="#4C78A8") is not None and _labelled(
            ax, "ms", "entries")

    changes = _pending_changes(cols)

    def pending(ax: Any) -> bool:
        biggest = sorted(changes, key=lambda n: -len(changes[n]))[:MAX_GROUPS_PLOTTED]
        for name in biggest:
            steps = sorted(changes[name])
            xs = np.array([(t - steps[0][0]) / 1e6 for t, _ in steps])
            ax.step(xs, np.cumsum([d for _, d in steps]), where="post", label=name[:60])
        if biggest:
            ax.legend(fontsize=7, loc="upper right")
        return bool(biggest) and _labelled(ax, "seconds since the group's first delivery", "pending")

    per = Counter(len(r["deliveries"] or []) for r in cols)

    def deliveries(ax: Any) -> bool:
        counts = sorted(per)
        return bool(per) and ax.bar([str(x) for x in counts], [per[x] for x in counts],
                                    color="#72B7B2") is not None and _labelled(ax, "deliveries", "entries")

    kinds = Counter(a["kind"] for a in anomalies)
    names = [k for k in ANOMALY_KINDS if k in kinds] + sorted(set(kinds) - set(ANOMALY_KINDS))

    def by_trace(ax: Any) -> bool:
        ax.tick_params(axis="y", labelsize=7)
        return _ranked(ax, [(Path(t).name, n) for t, n in Counter(a["trace"] for a in anomalies).most_common(20)],
                       "#F58518")

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


def write_html(path: Path, s: dict[str, Any], tables: dict[str, pa.Table], events_dir: Path) -> None:
    """Write ``report.html``."""
    anomalies = tables["anomalies"].to_pylist()
    shown = anomalies[:MAX_ANOMALIES_SHOWN]
    wanted: dict[str, set[int]] = {}
    for a in shown:
        wanted.setdefault(a["trace"], set()).update(a["events"])
    events = _events_of(events_dir, wanted)
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>xspec audit</title>"
             f"<style>{_STYLE}</style></head><body><h1>xspec audit</h1>"]
    c = s["conformance"]
    parts.append(f"<p>{s['traces']} traces, {s['events']} events: {c['conform']} conform, {c['diverge']} diverge, "
                 f"{c['unsupported']} unsupported, {c['inconclusive']} inconclusive; {len(s['unmet'])} not as "
                 f"expected; {len(s['quarantined'])} malformed lines; {s['ledger_rows']} ledger rows; "
                 f"{len(anomalies)} anomalies.</p>")
    for title, svg in plots(tables["ledger"], anomalies):
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
    if anomalies:
        parts.append(f"<p>Each anomaly links to its trace's page in <code>{VIEW_FOLDER}/</code> beside this report, "
                     f"at the line of an event: write the pages with <code>xspec view TRACE --out "
                     f"{VIEW_FOLDER}/PATH.html</code> (PATH: the trace's path without <code>.jsonl</code>).</p>")
    if anomalies:
        parts.append("<table><tr><th>#</th><th>kind</th><th>trace</th><th>key</th><th>group</th><th>id</th>"
                     "<th>consumers</th><th>events</th></tr>")
        for n, a in enumerate(shown):
            parts.append(f"<tr><td><a href='#a{n}'>{n + 1}</a></td><td>{e(a['kind'])}</td><td>{e(a['trace'])}</td>"
                         f"<td>{e(label(a['key']))}</td><td>{e(label(a['group']))}</td><td>{e(a['id'])}</td>"
                         f"<td>{e(', '.join(label(x) for x in a['consumers']))}</td>"
                         f"<td>{', '.join(str(x) for x in a['events'])}</td></tr>")
        parts.append("</table>")
        if len(anomalies) > len(shown):
            parts.append(f"<p>Showing the first {len(shown)} of {len(anomalies)} (all are in anomalies/ and "
                         f"summary.json).</p>")
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
