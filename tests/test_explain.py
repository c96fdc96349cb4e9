"""`xspec explain`: replaying traces with state tables and the rules behind every change,
and the tutorial's traces (spec/tutorial.md)."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from xspec.cli import main
from xspec.commands.explain import explain_command
from xspec.spec.trace_format import dumps, find_traces, load, loads
from xspec.traces import CORPUS_DIR
from xspec.traces.check.checker import check_trace
from xspec.traces.check.explain import (
    Step,
    cited_rules,
    explain,
    explain_trace,
    render_steps,
    spec_index,
)
from xspec.traces.tutorial.build import LESSONS, model_trace, recorded_trace

ROOT = Path(__file__).resolve().parent.parent
CORPUS = CORPUS_DIR / "redis-7.0.15"
TUTORIAL = CORPUS_DIR / "tutorial"


def _step(steps: list[Step], *command: str) -> Step:
    want = [c.encode() for c in command]
    found = [s for s in steps if s.command == want]
    assert found, f"no step runs {command}"
    return found[0]


def _change(step: Step, table: str, **row: str):
    found = [c for c in step.changes if c.table == table and all(c.row.get(k) == v for k, v in row.items())]
    assert len(found) == 1, (table, row, step.changes)
    return found[0]


# -- rules and state of corpus traces -------------------------------------------------------


def test_xclaim_moves_the_pel_owner_and_cites_xclaim_rules():
    e = explain(load(CORPUS / "claim" / "xclaim-ownership.jsonl"))
    assert e.order == "checker" and e.verdict.status == "conform"
    step = _step(e.steps, "XCLAIM", "s", "g", "bob", "-10", "1-0", "2-0")
    moved = _change(step, "pending", key="s", group="g", id="1-0")
    assert moved.kind == "changed"
    assert (moved.old["owner"], moved.new["owner"]) == ("alice", "bob")
    assert (moved.old["deliveries"], moved.new["deliveries"]) == (1, 2)
    assert moved.rules == ["XCLAIM-14"]
    created = _change(step, "consumers", key="s", group="g", consumer="bob")
    assert created.kind == "added" and "XCLAIM-13" in created.rules
    assert step.rules and all(r.startswith("XCLAIM-") for r in step.rules)
    owners = {row[4]: values[0] for row, values in step.state.items() if row[0] == "pending"}
    assert {str(k): v for k, v in owners.items()} == {"1-0": "bob", "2-0": "bob", "3-0": "alice"}
    # an XACK removes the entry from the PEL under XACK-3
    ack = _step(e.steps, "XACK", "s", "g", "1-0")
    gone = _change(ack, "pending", id="1-0")
    assert gone.kind == "removed" and gone.rules == ["XACK-3"]


def test_blocking_and_serving_are_steps_with_block_rules():
    e = explain(load(CORPUS / "blocking" / "fifo-same-group.jsonl"))
    first = _step(e.steps, "XREADGROUP", "GROUP", "g", "first", "BLOCK", "0", "STREAMS", "s", ">")
    assert first.blocked and first.reply is None
    assert _change(first, "clients", client=2).rules == ["BLOCK-1"]
    serving = _step(e.steps, "XADD", "s", "2-0", "f", "v")
    assert [s.client for s in serving.served] == [2] and serving.served[0].matches
    assert serving.served[0].line == 7
    unblocked = _change(serving, "clients", client=2)
    assert unblocked.kind == "removed" and unblocked.rules == ["DISPATCH-7"]
    group = _change(serving, "groups", key="s", group="g")
    assert group.column_rules["last-delivered-id"] == ["LAG-4"]


def test_the_model_choice_the_checker_made_is_replayed():
    """SWAPDB-8: the trace's server served key t first, which is not the model's default order."""
    e = explain(load(CORPUS_DIR / "findings" / "regressions" / "redis-7.0" / "swapdb-ready-key-order.jsonl"))
    swap = [s for s in e.steps if s.served][-1]
    assert swap.served[0].matches, swap.served[0]


def test_without_the_checkers_order_the_file_order_is_used_and_said(monkeypatch):
    import xspec.traces.check.explain as explain_module
    monkeypatch.setattr(explain_module, "_resolved_order", lambda trace, dialect: None)
    e = explain(load(CORPUS / "blocking" / "fifo-same-group.jsonl"))
    assert e.order == "file" and "file's order" in e.note
    serving = _step(e.steps, "XADD", "s", "2-0", "f", "v")
    assert [s.client for s in serving.served] == [2] and serving.served[0].matches
    assert serving.served[0].line == 7
    # times come from t0 rather than the checker's solution: only idle times may differ
    assert all(s.matches for s in e.steps if s.command and s.command[0] != b"XPENDING")


def test_an_error_reply_names_the_rule_that_decided_it():
    text = "\n".join([
        '{"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"}, "clock": "virtual"}',
        '{"ev":"call","c":1,"cmd":["XGROUP","CREATE","s","g","$","MKSTREAM"],"now":5,"reply":{"simple":"OK"}}',
        '{"ev":"call","c":1,"cmd":["XGROUP","CREATE","s","g","$"],"now":6,'
        '"reply":{"error":"BUSYGROUP Consumer Group name already exists"}}',
    ])
    e = explain(loads(text, "busy.jsonl"))
    busy = e.steps[1]
    assert busy.changes == [] and busy.rules == ["XGROUP-9"] and busy.matches
    assert e.steps[0].rules == ["XGROUP-8", "XGROUP-10"]


def test_lag_after_xdel_shows_the_70_bug():
    e = explain(load(TUTORIAL / "6-lag-after-xdel.jsonl"))
    deleted = _step(e.steps, "XDEL", "s", "2-0")
    lag = _change(deleted, "groups", key="s", group="g")
    assert (lag.old["lag"], lag.new["lag"]) == (4, None)
    assert "XDEL-3" in lag.rules
    last = _step(e.steps, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    group = _change(last, "groups", key="s", group="g")
    assert group.new["lag"] == 1 and group.new["last-delivered-id"] == "5-0"
    assert "LAG-4" in last.rules


def test_idle_times_are_relative_to_the_step():
    e = explain(load(TUTORIAL / "4-claim-too-early.jsonl"))
    claim = _step(e.steps, "XAUTOCLAIM", "orders", "workers", "bob", "100", "0-0", "COUNT", "10")
    moved = _change(claim, "pending", id="1-0")
    assert claim.now - moved.old["delivery-time"] == 150 and claim.now == moved.new["delivery-time"]
    assert moved.rules == ["XAUTOCLAIM-9"]
    out = io.StringIO()
    render_steps([claim], plain=True, out=out)
    assert "owner alice -> bob; idle 150 ms -> 0 ms; deliveries 1 -> 2  [XAUTOCLAIM-9]" in out.getvalue()


def test_rule_citations_are_parsed_like_the_model_writes_them():
    assert cited_rules("deliver (XREADGROUP-7, -10, -11)") == ("XREADGROUP-7", "XREADGROUP-10", "XREADGROUP-11")
    assert cited_rules("rules XREAD-1 .. XREAD-7, and UTF-8 text, XCLAIM-6") == ("XCLAIM-6",)
    assert cited_rules("XCLAIM-999 is not a rule") == ()


# -- output forms -----------------------------------------------------------------------------


def test_json_output_structure():
    r = CliRunner().invoke(explain_command, ["--json", str(TUTORIAL / "1-crash-recovered.jsonl")])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert set(doc) == {"trace", "title", "verdict", "order", "note", "steps", "rule_files"}
    assert doc["verdict"]["status"] == "conform" and doc["order"] == "checker"
    kinds = [s["kind"] for s in doc["steps"]]
    assert "close" in kinds and kinds.count("command") == 9
    history = [s for s in doc["steps"] if s["command"] and s["command"][-1] == "0"][0]
    assert history["matches"] and history["reply"] == history["trace_reply"]
    (row,) = history["state"]["pending"]
    assert row == {"key": "orders", "group": "workers", "id": "1-0", "owner": "alice",
                   "delivery-time": history["now"], "idle": 0, "deliveries": 2}
    assert set(history["state"]) == {"keys", "entries", "groups", "pending", "consumers", "clients"}
    change = [c for c in history["changes"] if c["table"] == "pending"][0]
    assert change["kind"] == "changed" and change["old"]["deliveries"] == 1
    assert change["column_rules"] == {"delivery-time": ["XREADGROUP-6"], "deliveries": ["XREADGROUP-6"]}
    assert doc["rule_files"]["XREADGROUP-6"] == "spec/rules/reads.md"


def test_plain_and_rich_renderings():
    e = explain(load(TUTORIAL / "3-noack.jsonl"))
    plain, rich = io.StringIO(), io.StringIO()
    render_steps(e.steps, plain=True, out=plain, start=e.start)
    render_steps(e.steps, plain=False, out=rich, start=e.start)
    assert "\x1b[" not in plain.getvalue() and "\x1b[" in rich.getvalue()
    for text in (plain.getvalue(), re.sub(r"\x1b\[[0-9;]*m", "", rich.getvalue())):
        assert "XREADGROUP GROUP workers alice NOACK COUNT 1 STREAMS orders >" in text
        assert "Pending entries" not in text  # NOACK: nothing is ever pending


def test_the_cli_is_plain_when_not_a_terminal():
    r = CliRunner().invoke(explain_command, [str(TUTORIAL / "2-ack-before-processing.jsonl")])
    assert r.exit_code == 0 and "\x1b[" not in r.output
    assert "- pending orders workers 1-0  [XACK-3]" in r.output
    assert r.output.rstrip().endswith("verdict: conform")


def test_a_diverging_trace_is_replayed_up_to_the_divergence(tmp_path):
    trace = load(TUTORIAL / "2-ack-before-processing.jsonl")
    lines = dumps(trace).splitlines()
    n = next(i for i, line in enumerate(lines) if '"XACK"' in line)
    lines[n] = lines[n].replace('{"int":1}', '{"int":0}')
    path = tmp_path / "wrong.jsonl"
    path.write_text("\n".join(lines) + "\n")
    r = CliRunner().invoke(explain_command, ["--plain", str(path)])
    assert r.exit_code == 1, r.output
    assert f"event {n} (line {n + 1}) is where the trace diverges" in r.output
    assert f"verdict: diverge at event {n}" in r.output
    assert "XACK" not in r.output.split("verdict:")[0].split("\n[")[-1]


@pytest.mark.parametrize("content, where", [
    ('{"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"}}\n{"ev": "call", "c": 1\n', ":2: not valid JSON"),
    ('{"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"}}\n{"ev":"call","c":1,"cmd":["PING"]}\n',
     ":2: missing field 'reply'"),
    ('{"xspec": "trace/3"}\n', ":1: not a trace/1 header"),
    ('', ":1: empty file"),
    ('{"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"}, "clock": "virtual"}\n'
     '{"ev":"call","c":1,"cmd":["PING"],"reply":{"simple":"PONG"}}\n', ":2: a call in a virtual trace needs 'now'"),
])
def test_bad_trace_files_give_file_and_line(tmp_path, content, where):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    r = CliRunner().invoke(explain_command, [str(path)])
    assert r.exit_code == 2
    assert f"{path}{where}" in r.output and "Traceback" not in r.output


def test_a_missing_file_is_reported_plainly(tmp_path):
    r = CliRunner().invoke(explain_command, [str(tmp_path / "nope.jsonl")])
    assert r.exit_code == 2 and "nope.jsonl:1: cannot read" in r.output and "Traceback" not in r.output


def test_an_unknown_dialect_is_one_line_and_a_nonzero_exit():
    r = CliRunner().invoke(main, ["explain", "--dialect", "bogus", str(TUTORIAL / "3-noack.jsonl")])
    assert r.exit_code == 2 and "Traceback" not in r.output
    errors = [line for line in r.output.splitlines() if line.strip() and not line.startswith(("Usage:", "Try '"))]
    assert len(errors) == 1 and "bogus" in errors[0] and "--dialect" in errors[0], r.output


def test_explain_reads_no_source_or_spec_file(monkeypatch):
    """Rules come from the shipped rule index, not from the model's comments or the spec's markdown."""
    import builtins

    from xspec.spec import rule_index
    trace = load(TUTORIAL / "4-claim-too-early.jsonl")
    read: list[str] = []
    original_read, original_open = Path.read_text, builtins.open

    def read_text(self, *args, **kwargs):
        read.append(str(self))
        return original_read(self, *args, **kwargs)

    def open_(file, *args, **kwargs):
        read.append(str(file))
        return original_open(file, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    monkeypatch.setattr(builtins, "open", open_)
    rule_index.load_index.cache_clear()
    try:
        e = explain(trace)
    finally:
        rule_index.load_index.cache_clear()
    assert e.order == "checker" and any(s.rules for s in e.steps)
    assert not [f for f in read if f.endswith((".py", ".md"))], read


def test_the_rule_tracer_leaves_other_tracers_in_place():
    def other(frame, event, arg):
        return None

    previous = sys.gettrace()
    sys.settrace(other)
    try:
        explain(load(TUTORIAL / "3-noack.jsonl"))
        assert sys.gettrace() is other
    finally:
        sys.settrace(previous)


# -- the tutorial ------------------------------------------------------------------------------


TUTORIAL_TRACES = find_traces([TUTORIAL])


def test_the_tutorial_has_a_model_trace_and_a_recording_per_lesson():
    names = {les.name for les in LESSONS}
    assert len(names) >= 5
    assert {p.stem for p in TUTORIAL_TRACES if p.parent == TUTORIAL} == names
    assert {p.stem for p in TUTORIAL_TRACES if p.parent.name == "recorded"} == names


@pytest.mark.parametrize("path", TUTORIAL_TRACES, ids=[str(p.relative_to(TUTORIAL)) for p in TUTORIAL_TRACES])
def test_tutorial_traces_conform(path):
    assert check_trace(load(path)).status == "conform"


@pytest.mark.parametrize("lesson", LESSONS, ids=[les.name for les in LESSONS])
def test_tutorial_replies_are_the_models(lesson):
    assert dumps(model_trace(lesson)) == (TUTORIAL / f"{lesson.name}.jsonl").read_text()


def test_tutorial_lessons_conform_when_recorded_from_redis(redis):
    for les in LESSONS:
        trace = recorded_trace(les, redis.host, redis.port, redis.version)
        verdict = check_trace(trace)
        assert verdict.status == "conform", f"{les.name}: {verdict.describe()}"


def _excerpts() -> list[tuple[str, list[str]]]:
    """The ``xspec explain`` excerpts of spec/tutorial.md: (trace path, lines shown)."""
    text = (ROOT / "spec" / "tutorial.md").read_text()
    found = []
    for block in re.findall(r"```text\n(.*?)```", text, re.S):
        lines = block.splitlines()
        m = re.match(r"\$ xspec explain --plain (\S+)", lines[0])
        if m:
            found.append((m.group(1), [line for line in lines[1:] if line.strip() and line.strip() != "..."]))
    return found


def _without_rules(line: str) -> str:
    """A line of explain output with its rule lists left out: which rule the model's comments
    credit may move as the model is edited; the tutorial's prose names the rules that matter."""
    return re.sub(r"\s*\[[A-Z][^\]]*\]", "", line)


def test_the_tutorial_shows_real_explain_output():
    excerpts = _excerpts()
    assert len({path for path, _ in excerpts}) >= 5
    outputs: dict[str, list[str]] = {}
    for path, lines in excerpts:
        if path not in outputs:
            out = io.StringIO()
            explain_trace(load(ROOT / path), plain=True, out=out)
            outputs[path] = [_without_rules(line) for line in out.getvalue().splitlines()]
        shown = outputs[path]
        at = 0
        for line in map(_without_rules, lines):  # every excerpt line appears in the real output, in order
            assert line in shown[at:], f"{path}: not in the explain output (in this order): {line!r}"
            at = shown.index(line, at) + 1


def test_the_tutorial_links_defined_rules():
    text = (ROOT / "spec" / "tutorial.md").read_text()
    named = set(re.findall(r"\b([A-Z][A-Z]+(?:-[A-Z]+)?-\d+)\b", text)) - {"UTF-8"}
    index = spec_index()
    assert named and all(index.defined(r) for r in named), sorted(r for r in named if not index.defined(r))
    for rule, target in re.findall(r"\[([A-Z][A-Z]+(?:-[A-Z]+)?-\d+)\]\(([^)]+)\)", text):
        assert index.files[rule] == f"spec/{target}", (rule, target)
