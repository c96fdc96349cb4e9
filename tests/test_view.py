"""``xspec view`` without a browser: the page's data against the model, the CLI's answers to bad input,
and the explorer's ``--view`` page and DOT labels."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from xspec.cli import main
from xspec.spec.trace_format import load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.explain import explain
from xspec.viewer.html import render_page
from xspec.viewer.trace_data import row_cells, row_id, trace_page_data

CLAIM = CORPUS_DIR / "tutorial" / "4-claim-too-early.jsonl"
BLOCKING = CORPUS_DIR / "redis-7.0.15" / "blocking" / "fifo-same-group.jsonl"


def page_data(html: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="xspec-data">(.*?)</script>', html, re.S)
    assert found is not None
    return json.loads(found.group(1))


@pytest.mark.parametrize("path", [CLAIM, BLOCKING], ids=["claim", "blocking"])
def test_the_diffs_replayed_give_the_models_state_after_every_step(path: Path) -> None:
    """Applying each step's diff to the previous state gives the model's state after that step
    (the page's script does exactly this), and undoing it gives the state before."""
    e = explain(load(path))
    data = trace_page_data(load(path))
    start = e.start or 0
    state: dict[str, Any] = {}
    assert len(data["steps"]) == len(e.steps)
    for step, item in zip(e.steps, data["steps"], strict=True):
        before = dict(state)
        for rid, kind, after, _, _, _ in item["d"]:
            if kind == "-":
                del state[rid]
            else:
                state[rid] = after
        assert state == {row_id(r): row_cells(r, v, start) for r, v in step.state.items()}
        for rid, kind, _, old, _, _ in reversed(item["d"]):
            if kind == "+":
                del state[rid]
            else:
                state[rid] = old
        assert state == before
        for rid, kind, after, _, _, _ in item["d"]:
            if kind == "-":
                del state[rid]
            else:
                state[rid] = after


def test_blocking_is_a_span_from_block_to_serve() -> None:
    data = trace_page_data(load(BLOCKING))
    assert data["spans"], "a blocked client is drawn as a span"
    for client, start, end in data["spans"]:
        assert data["steps"][start].get("b") == 1 and data["steps"][start]["c"] == client
        assert end >= len(data["steps"]) or any(s[0] == client for s in data["steps"][end].get("sv", [])) or \
            data["steps"][end]["k"] == "timeout"


def test_the_page_is_self_contained_and_its_data_cannot_close_the_script() -> None:
    data = trace_page_data(load(CLAIM))
    data["title"] = "</script><script>alert(1)</script>"
    html = render_page(data, "trace.js")
    assert "</script><script>alert" not in html and page_data(html)["title"] == data["title"]
    assert not re.search(r"(src|href)\s*=\s*[\"']?https?:", html)
    assert "<link" not in html and "@import" not in html


def test_view_writes_a_page_and_exits_by_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["view", str(CLAIM)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "4-claim-too-early.html").stat().st_size > 10_000
    finding = CORPUS_DIR / "findings" / "fakeredis-2.40.0" / "binary-key-utf8-error.jsonl"
    result = CliRunner().invoke(main, ["view", str(finding), "--out", "d.html"])
    assert result.exit_code == 1 and "diverge" in result.output
    divergence = page_data((tmp_path / "d.html").read_text())["divergence"]
    assert divergence["says"] == "(error) ERR utf-8" and "NOGROUP" in divergence["allows"][0]


def test_view_tutorial_writes_every_lesson_and_an_index(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["view", "--tutorial", str(tmp_path / "t")])
    assert result.exit_code == 0, result.output
    index = (tmp_path / "t" / "index.html").read_text()
    for lesson in sorted((CORPUS_DIR / "tutorial").glob("*.jsonl")):
        page = lesson.with_suffix(".html").name
        assert (tmp_path / "t" / page).is_file() and (tmp_path / "t" / "recorded" / page).is_file()
        assert f'href="{page}"' in index
    for lesson in sorted((CORPUS_DIR / "replication" / "lessons").glob("*.jsonl")):  # the failover chapter
        page = "failover/" + lesson.with_suffix(".html").name
        assert (tmp_path / "t" / page).is_file() and f'href="{page}"' in index
    # spec/tutorial.md's chapters link the pages --tutorial writes (run as `--tutorial tutorial-pages`).
    tutorial = (Path(__file__).resolve().parent.parent / "spec" / "tutorial.md").read_text()
    linked = re.findall(r"\]\(\.\./tutorial-pages/([\w-]+\.html)\)", tutorial)
    assert len(linked) == 6 and all((tmp_path / "t" / name).is_file() for name in linked)


@pytest.mark.parametrize("args, message", [
    (["view"], "give a TRACE or DIR"),
    (["view", "no-such.jsonl"], "no such file or folder"),
    (["view", "bad.jsonl"], "bad.jsonl:1"),
    (["view", str(CLAIM), "--out", "/proc/no/x.html"], "cannot write"),
    (["view", str(CLAIM), "--out", "."], "is a folder"),
    (["view", "empty"], "no trace files"),
    (["view", str(CLAIM), "--dialect", "redis-1.0"], "redis-1.0"),
    (["view", str(CLAIM), "--tutorial", "t"], "give a TRACE or DIR"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str],
                                         message: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.jsonl").write_text('{"x": 1}\n')
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_explore_view_and_dot_label_states_by_what_matters(tmp_path: Path) -> None:
    page, dot = tmp_path / "g.html", tmp_path / "g.dot"
    result = CliRunner().invoke(main, ["explore", "--protocol", "short-min-idle", "--no-explain", "--view", str(page),
                                       "--dot", str(dot)])
    assert result.exit_code == 0, result.output
    data = page_data(page.read_text())
    assert data["whole"] and len(data["nodes"]) == data["states"]
    violating = [n for n in data["nodes"] if n["violates"]]
    assert violating and "no duplicate without a crash" in violating[0]["violates"][0]
    # The shortest trace: parents back to the initial state, each with the step that reached it.
    by_id = {n["id"]: n for n in data["nodes"]}
    path, node = [], violating[0]
    while node["parent"] >= 0:
        path.append(node["via"])
        node = by_id[node["parent"]]
    assert node["id"] == 0 and any("XAUTOCLAIM" in step for step in path)
    text = dot.read_text()
    assert "PEL 1-0→c1×1" in text and "color=red" in text and "(depth 0)" in text


def test_explore_view_refuses_an_unwritable_page() -> None:
    result = CliRunner().invoke(main, ["explore", "--protocol", "short-min-idle", "--view", "/proc/no/g.html"])
    assert result.exit_code == 2 and "cannot write" in result.output


def test_open_hands_the_page_to_the_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import webbrowser
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    result = CliRunner().invoke(main, ["view", str(CLAIM), "--out", str(tmp_path / "p.html"), "--open"])
    assert result.exit_code == 0 and opened == [(tmp_path / "p.html").resolve().as_uri()]
    monkeypatch.setattr(webbrowser, "open", lambda url: False)
    result = CliRunner().invoke(main, ["view", str(CLAIM), "--out", str(tmp_path / "p.html"), "--open"])
    assert result.exit_code == 0 and "no browser to open" in result.output


# -- trace/2: a lane per node --------------------------------------------------------------------------

REPLICATION = CORPUS_DIR / "replication"
LESSON = REPLICATION / "lessons" / "consumer-group-across-failover.jsonl"
CRASH = REPLICATION / "redis-7.0.15" / "failover" / "primary-crash-promote.jsonl"
LOST = REPLICATION / "redis-7.0.15" / "failover" / "acked-xadd-lost.jsonl"


def lost_write_claimed(tmp_path: Path) -> Path:
    """acked-xadd-lost with the old primary's last XRANGE edited to still show the lost entry: a divergence."""
    from xspec.spec.resp import Array, Bulk
    from xspec.spec.trace_format import Call, dump

    trace = load(LOST)
    event = 17  # line 19: node a's XRANGE after it resynchronised from b
    call = trace.events[event]
    assert isinstance(call, Call) and call.node == "a" and call.cmd[0] == b"XRANGE"
    assert isinstance(call.reply, Array)
    lost = Array([Bulk(b"2-1"), Array([Bulk(b"f"), Bulk(b"acknowledged, never replicated")])])
    call.reply = Array([*call.reply.items, lost])
    out = tmp_path / "claimed.jsonl"
    dump(trace, out)
    return out


@pytest.mark.parametrize("path", [LESSON, CRASH, REPLICATION / "lessons" / "ack-lost-on-promotion.jsonl"],
                         ids=["lesson", "crash", "wait"])
def test_trace2_diffs_replayed_give_every_nodes_state_from_the_model(path: Path) -> None:
    """The page's lanes are the nodes; applying the diffs gives the deployment's state the multi-node
    model reaches along the checker's witness, after every step (nodes, links and each node's streams)."""
    from xspec.traces.check.explain_multinode import explain_multinode
    from xspec.viewer.trace_data import node_row_cells, node_row_id

    e = explain_multinode(load(path))
    data = trace_page_data(load(path))
    assert data["format"] == "trace/2" and [lane["id"] for lane in data["lanes"]] == sorted(load(path).header.nodes or {})
    assert data["verdict"]["status"] == "conform" and len(data["steps"]) == len(e.steps) > 10
    start = min(s.now for s in e.steps if s.now is not None)
    state: dict[str, Any] = {}
    for step, item in zip(e.steps, data["steps"], strict=True):
        for rid, kind, after, *_ in item["d"]:
            if kind == "-":
                del state[rid]
            else:
                state[rid] = after
        assert state == {node_row_id(r): node_row_cells(r, v, start) for r, v in step.state.items()}
    kinds = {s.get("m") for s in data["steps"]}
    assert {"repl", "apply", "ack"} & kinds
    repl = [s for s in data["steps"] if s.get("m") == "repl"]
    assert repl and all(s["nd"] != s["to"] for s in repl)


def test_trace2_faults_are_marked_and_a_crashed_node_is_down() -> None:
    data = trace_page_data(load(CRASH))
    crash = [n for n, s in enumerate(data["steps"]) if s.get("m") == "crash"]
    assert crash, [s.get("m") for s in data["steps"]]
    node = data["steps"][crash[0]]["nd"]
    assert any(d[0] == node and d[1] == crash[0] and d[3] == "down" for d in data["down"]), data["down"]
    after = {d[0]: d[2] for d in data["steps"][crash[0]]["d"]}
    assert after[f"nodes|{node}"][0] == "down"


def test_trace2_divergence_points_at_its_node_and_event(tmp_path: Path) -> None:
    data = trace_page_data(load(lost_write_claimed(tmp_path)))
    d = data["divergence"]
    assert data["verdict"]["status"] == "diverge" and d["event"] == 18 and d["line"] == 19
    assert d["node"] == "a" and d["client"] == 7 and d["cmd"] == "XRANGE s - +"
    assert "acknowledged, never replicated" in d["says"]
    assert d["allows"] and all("never replicated" not in a for a in d["allows"])


def test_view_of_a_trace2_folder_and_a_trace2_without_an_execution(tmp_path: Path) -> None:
    from xspec.traces.check.checker import Verdict
    from xspec.traces.check.explain_multinode import MultiExplanation
    from xspec.viewer.trace_data import multinode_page_data

    result = CliRunner().invoke(main, ["view", str(REPLICATION / "lessons"), "--out", str(tmp_path / "l")])
    assert result.exit_code == 0, result.output
    assert {p.name for p in (tmp_path / "l").iterdir()} >= {"index.html", "consumer-group-across-failover.html"}
    # A trace the checker found no execution for (unsupported, inconclusive): its events in the file's order,
    # on their nodes' lanes, with the replication arrows, and no states.
    trace = load(LOST)
    data = multinode_page_data(MultiExplanation(trace, Verdict("unsupported", 0, message="out of scope"), []))
    assert data["verdict"]["status"] == "unsupported" and len(data["steps"]) == len(trace.events)
    assert all(s["d"] == [] for s in data["steps"]) and "no states" in data["note"]
    repl = [s for s in data["steps"] if s.get("m") == "repl"]
    assert repl and all((s["nd"], s["to"]) == ("a", "b") for s in repl[:3]) and repl[0]["w"].startswith("repl a→b: ")


def test_from_audit_writes_the_pages_report_html_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``xspec view --from-audit OUT`` writes each anomaly's trace where the audit's report links it."""
    from xspec.audit.report import view_link

    monkeypatch.chdir(CORPUS_DIR.parent)
    trace = "traces/replication/redis-7.0.15/failover/two-owners.jsonl"
    out = tmp_path / "audit"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps({"anomalies": [
        {"kind": "two-owners", "trace": trace, "key": "s", "group": "g"},
        {"kind": "acked-pending-again", "trace": trace, "key": "s", "group": "g"}]}))
    result = CliRunner().invoke(main, ["view", "--from-audit", str(out)])
    assert result.exit_code == 0, result.output
    page = out / view_link(trace, 24).split("#")[0]
    assert page == out / "view" / "traces/replication/redis-7.0.15/failover/two-owners.html" and page.is_file()
    assert page_data(page.read_text())["format"] == "trace/2"


@pytest.mark.parametrize("summary, message", [
    (None, "summary.json"),
    ("{", "not an audit summary"),
    ('{"anomalies": [{"kind": "x"}]}', "not an audit summary"),
])
def test_from_audit_bad_folders_are_one_line(tmp_path: Path, summary: str | None, message: str) -> None:
    if summary is not None:
        (tmp_path / "summary.json").write_text(summary)
    result = CliRunner().invoke(main, ["view", "--from-audit", str(tmp_path)])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output, result.output


def test_from_audit_with_a_trace_that_is_gone(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"anomalies": [{"kind": "x", "trace": str(tmp_path / "gone.jsonl")}]}))
    result = CliRunner().invoke(main, ["view", "--from-audit", str(tmp_path)])
    assert result.exit_code == 1 and "gone.jsonl" in result.output and "Traceback" not in result.output


def test_column_widths_cover_every_value_a_step_shows() -> None:
    """The fixed column widths the page draws its tables with: wide enough for every key part and
    value of every step (a value wider than WIDE characters is cut, its text in the cell's title)."""
    from xspec.viewer.trace_data import WIDE

    data = trace_page_data(load(CLAIM))
    last_t = max(s["t"] or 0 for s in data["steps"])
    for t in data["tables"].values():
        assert len(t["widths"]) == len(t["keys"]) + len(t["columns"])
        for i in t["time"]:  # shown relative to the step's clock: "in 1234 ms"
            assert t["widths"][len(t["keys"]) + i] > len(str(last_t)) + 5
    seen = 0
    for s in data["steps"]:
        for rid, _, after, before, _, _ in s["d"]:
            name, *key = rid.split("|")
            t = data["tables"][name]
            nk = len(t["keys"])
            shown = list(enumerate(key)) + [(nk + i, str(v)) for cells in (after, before) if cells
                                            for i, v in enumerate(cells) if v is not None and i not in t["time"]]
            for column, text in shown:
                width = t["widths"][column]
                assert len(text) < width or width >= WIDE, (rid, text, width)
                seen += 1
    assert seen > 50
