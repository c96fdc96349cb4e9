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
    (["view", str(CORPUS_DIR / "replication" / "redis-6.2.14" / "failover" / "acked-pending-again.jsonl")], "trace/2"),
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
