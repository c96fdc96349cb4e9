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
from xspec.spec.trace_format import dump, load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.report import (
    BaselineError,
    RootCause,
    diagnose,
    difference_class,
    group_by_root_cause,
    load_baseline,
)
from xspec.traces.job.checkjob import Divergence, Report, group_report, run_check, write_report
from xspec.viewer.pages import write_page_of_file

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


def _grouped(report: Report, folder: Path, baseline: list[RootCause] | None = None) -> list:
    """The report grouped, with the viewer's pages, and written in its four forms (as ``xspec check`` does)."""
    groups = group_report(report, folder, baseline or [], write_page_of_file)
    write_report(report, folder)
    return groups


def test_groups_forms_and_views(tmp_path: Path) -> None:
    report = _report(tmp_path)
    groups = _grouped(report, tmp_path / "r")
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
    first = _grouped(report, tmp_path / "r")
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps([g["key"] for g in json.loads((tmp_path / "r" / "report.json").read_text())["groups"]]))
    groups = _grouped(report, tmp_path / "r2", load_baseline(baseline))
    assert all(g.known for g in groups) and report.passed
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


def test_every_caller_of_the_job_gets_the_grouped_report(tmp_path: Path) -> None:
    """``run_check`` itself writes the grouped forms (no viewer needed; pages only with a page writer)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(3):  # one root cause, three traces: one group
        trace = load(FAKEREDIS / "binary-key-utf8-error.jsonl")
        # Recorded from redis 7.0.15, it says, and expected to conform: a corpus divergence.
        trace.header.expect, trace.header.server_name, trace.header.server_version = None, "redis", "7.0.15"
        dump(trace, corpus / f"utf8-{n}.jsonl")
    report = run_check("model:redis-7.0", None, 5, tmp_path / "r", corpora=[corpus])
    assert len(report.divergences) == 3 and len(report.groups) == 1 and report.groups[0].view is None
    assert not report.passed and report.verdict.startswith("FAIL: 1 new root causes (3 divergences)")
    md = (tmp_path / "r" / "report.md").read_text()
    assert md.count("### 1. XCLAIM") == 1 and "trace says:   (error) ERR utf-8" in md
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [g["divergences"] for g in data["groups"]] == [3] and len(data["divergences"]) == 3
    assert data["groups"][0]["smallest"]["view"] is None
    html = (tmp_path / "r" / "report.html").read_text()
    assert html.count('class="group"') == 1
    # JUnit: the three corpus traces fail in the corpus suite; a corpus-only root cause is not counted twice.
    assert len(ET.parse(tmp_path / "r" / "junit.xml").getroot().findall(".//failure")) == 3
    with_pages = run_check("model:redis-7.0", None, 5, tmp_path / "p", corpora=[corpus], page_writer=write_page_of_file)
    assert with_pages.groups[0].view and (tmp_path / "p" / with_pages.groups[0].view).is_file()
    baseline = [with_pages.groups[0].cause]
    known = run_check("model:redis-7.0", None, 5, tmp_path / "k", corpora=[corpus], baseline=baseline)
    assert known.groups[0].known and not known.passed  # the corpus traces still fail: they are the model's


def test_findings_that_did_not_happen_again_are_listed_and_do_not_fail(tmp_path: Path) -> None:
    """A campaign's finding its reruns no longer show is reported (markdown and HTML) and the check passes."""
    from xspec.traces.job.checkjob import UNREPRODUCED, to_html, to_markdown

    seen = Divergence("fuzz", "XREADGROUP", "reply differs", str(tmp_path / "flaky.jsonl"))
    report = Report("redis://fork", "a fork", "redis-7.0", "now", unreproduced=[seen])
    assert report.passed and report.verdict.startswith("PASS")
    markdown, page = to_markdown(report), to_html(report)
    assert "## Divergences that did not happen again" in markdown and "XREADGROUP: reply differs" in markdown
    assert UNREPRODUCED in markdown and 'id="unreproduced"' in page and "flaky.jsonl" in page
    assert "did not happen again" not in to_markdown(Report("redis://fork", "a fork", "redis-7.0", "now"))
