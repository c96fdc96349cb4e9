"""``xspec check``'s report: divergences grouped by root cause, the baseline, the four forms."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from xspec.cli import main
from xspec.spec.resp import Array, Bulk, Error, Int
from xspec.spec.trace_format import load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.report import (
    BaselineError,
    RootCause,
    diagnose,
    difference_class,
    group_by_root_cause,
    load_baseline,
)
from xspec.traces.job.checkjob import Divergence, Report
from xspec.viewer import check_report

FAKEREDIS = CORPUS_DIR / "findings" / "fakeredis-2.40.0"


def test_difference_classes() -> None:
    assert difference_class(Error(b"ERR a"), [Error(b"ERR b")]) == "error text"
    assert difference_class(Int(1), [Bulk(b"1")]) == "RESP type"
    assert difference_class(Int(1), [Int(2)]) == "value"
    assert difference_class(None, [Int(2)]) == "missing reply"
    assert difference_class(Int(1), []) == "extra reply"
    assert difference_class(Array([Int(1)]), [Array([Int(2)])]) == "value"


def test_a_divergence_is_diagnosed_by_command_rule_and_class() -> None:
    d = diagnose(load(FAKEREDIS / "binary-key-utf8-error.jsonl"))
    assert d.cause.command == "XCLAIM" and d.cause.difference == "error text"
    assert d.cause.rule.startswith("XCLAIM-")
    assert d.says == "(error) ERR utf-8" and "NOGROUP" in d.allows[0]


def _report(tmp_path: Path, copies: int = 3) -> Report:
    """A report with the same fakeredis finding several times (as a campaign finds it) and two others."""
    found = tmp_path / "found"
    found.mkdir()
    divergences = []
    for n in range(copies):
        shutil.copy(FAKEREDIS / "binary-key-utf8-error.jsonl", found / f"utf8-{n}.jsonl")
        divergences.append(Divergence("fuzz", "XCLAIM", "reply differs", str(found / f"utf8-{n}.jsonl")))
    for name in ("error-code-prefix.jsonl", "hello-server-name.jsonl"):
        divergences.append(Divergence("fuzz", "?", "reply differs", str(FAKEREDIS / name)))
    report = Report("redis://fork", "a fork", "redis-7.0", "now", divergences=divergences,
                    errors=["redis://fork: connection reset"])
    return report


def test_groups_forms_and_views(tmp_path: Path) -> None:
    report = _report(tmp_path)
    groups = check_report.write_grouped_report(report, tmp_path / "r")
    assert sum(len(g.members) for g in groups) == 5 and len(groups) < 5
    utf8 = next(g for g in groups if len(g.members) == 3)
    assert utf8.view is not None and (tmp_path / "r" / utf8.view).is_file()
    md = (tmp_path / "r" / "report.md").read_text()
    assert md.index("## Errors") < md.index("## Divergences by root cause") < md.index("## Coverage")
    assert "trace says:   (error) ERR utf-8" in md and "model allows: (error) NOGROUP" in md
    html = (tmp_path / "r" / "report.html").read_text()
    assert html.index('id="errors"') < html.index('id="groups"') < html.index('id="coverage"')
    assert f'href="{utf8.view}"' in html and "trace says" in html and "model allows" in html
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [g["key"] for g in data["groups"]] == [g.cause.key() for g in groups]
    assert data["groups"][groups.index(utf8)]["divergences"] == 3 and not data["passed"]
    cases = ET.parse(tmp_path / "r" / "junit.xml").getroot().findall(".//testcase[@classname]")
    assert len([c for c in cases if c.get("classname", "").startswith("divergence.")]) == len(groups)


def test_a_baseline_accepts_known_root_causes(tmp_path: Path) -> None:
    report = _report(tmp_path)
    report.errors = []
    first = check_report.write_grouped_report(report, tmp_path / "r")
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps([g["key"] for g in json.loads((tmp_path / "r" / "report.json").read_text())["groups"]]))
    groups = check_report.write_grouped_report(report, tmp_path / "r2", load_baseline(baseline))
    assert all(g.known for g in groups) and check_report.passed(report, groups)
    assert "PASS: nothing new diverged" in (tmp_path / "r2" / "report.md").read_text()
    assert ET.parse(tmp_path / "r2" / "junit.xml").getroot().findall(".//skipped")
    partial = group_by_root_cause([(d, g.smallest) for g in first for d in g.members], [first[0].cause])
    assert [g.known for g in partial] == [False] * (len(partial) - 1) + [True]  # new groups first


@pytest.mark.parametrize("content, message", [
    ("{", "not JSON"),
    ('{"a": 1}', "a JSON list"),
    ('[["XADD", "XADD-1"]]', "item 1"),
    ('[["XADD", "XADD-1", "colour"]]', "unknown class of difference"),
])
def test_bad_baselines_are_refused(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(BaselineError, match=message):
        load_baseline(path)
    result = CliRunner().invoke(main, ["check", "--baseline", str(path), "--report", str(tmp_path / "r")])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_baseline_keys_may_be_objects(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text('[{"command": "XCLAIM", "rule": "XCLAIM-3", "difference": "error text"}]')
    assert load_baseline(path) == [RootCause("XCLAIM", "XCLAIM-3", "error text")]
    result = CliRunner().invoke(main, ["check", "--baseline", str(tmp_path / "none.json")])
    assert result.exit_code == 2 and "none.json" in result.output
