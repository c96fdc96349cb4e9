"""The whole bundled corpus replays clean against the model, as `xspec check` reports it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from xspec.cli import main
from xspec.spec.trace_format import find_traces, load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.checker import check_trace
from xspec.traces.check.report import expected_status

CORPUS = find_traces([CORPUS_DIR / "redis-7.0.15"])


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 150


@pytest.mark.parametrize("path", CORPUS, ids=[str(p.relative_to(CORPUS_DIR)) for p in CORPUS])
def test_trace_meets_its_expectation(path):
    trace = load(path)
    verdict = check_trace(trace)
    assert verdict.status == expected_status(trace.header.expect), verdict.describe()


def test_xspec_check_replays_every_bundled_corpus(tmp_path):
    r = CliRunner().invoke(main, ["check", "-q", "--target", "model:redis-7.0", "--report", str(tmp_path)])
    assert r.exit_code == 0, r.output
    report = json.loads((tmp_path / "report.json").read_text())
    bundled = find_traces([CORPUS_DIR])  # every corpus: 7.0.15's and the other dialects'
    assert len(report["corpus"]) == len(bundled)
    assert all(row["met"] for row in report["corpus"]), [r for r in report["corpus"] if not r["met"]]
    assert report["passed"] and not report["divergences"]
    # Only what the model does not cover yet may be unsupported: the replication of 6.2 and Valkey,
    # and FAILOVER's handover on 7.0 (the five failover-command traces).
    unsupported = sorted(row["path"] for row in report["corpus"] if row["status"] == "unsupported")
    assert all(t.startswith(("replication/redis-6.2.14/", "replication/valkey-9.1.2/",
                             "replication/redis-7.0.15/failover-command/")) for t in unsupported), unsupported
    assert sum(t.startswith("replication/redis-7.0.15/") for t in unsupported) == 5, unsupported
    assert {"report.md", "report.html", "report.json", "junit.xml"} <= {p.name for p in tmp_path.iterdir()}
