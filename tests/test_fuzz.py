"""The differential fuzzer (traces/fuzz/fuzzer.py, traces/fuzz/strategies.py): generation, checking, shrinking,
findings on disk, the report, the command line, and campaigns against the model and a real Redis."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from tests.conftest import RealRedis
from xspec.commands.fuzz import fuzz_command
from xspec.spec.resp import Bulk, Int, Simple
from xspec.spec.trace_format import Call, load
from xspec.traces.check.checker import check_trace
from xspec.traces.check.report import expectation, meets
from xspec.traces.fuzz.fuzzer import (
    Signature,
    check_run,
    compare_runs,
    ddmin,
    reply_difference,
    run_campaign,
)
from xspec.traces.fuzz.generate import Step
from xspec.traces.fuzz.strategies import FUZZ_PROFILES, Case, cases
from xspec.traces.harness.targets import parse_target


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(length=60))
def test_generated_cases_stay_within_their_length(case: Case) -> None:
    assert 1 <= len(case.steps) <= 60
    assert case.profile in FUZZ_PROFILES
    assert all(step.argv or step.pause > 0 for step in case.steps)


def test_campaign_covers_the_stream_api_and_the_model_conforms() -> None:
    """Against the model itself nothing may diverge, and the campaign exercises the whole API."""
    result = run_campaign(["model:redis-7.0"], steps=4000, seed=3)
    assert result.ok, result.report()
    assert set(result.statuses) == {"conform"}
    exercised = set(result.coverage)
    for command in ("XADD", "XRANGE", "XREVRANGE", "XDEL", "XTRIM", "XSETID", "XLEN", "XREAD", "XREADGROUP",
                    "XACK", "XPENDING", "XCLAIM", "XAUTOCLAIM", "XGROUP CREATE", "XGROUP SETID",
                    "XGROUP DESTROY", "XGROUP CREATECONSUMER", "XGROUP DELCONSUMER", "XINFO STREAM",
                    "XINFO GROUPS", "XINFO CONSUMERS", "MULTI", "EXEC", "HELLO"):
        assert command in exercised, f"{command} never generated"


def test_same_seed_same_run() -> None:
    first = run_campaign(["model:redis-7.0+mutant:lag-off-by-one"], steps=3000, seed=5, profiles=["lag"])
    second = run_campaign(["model:redis-7.0+mutant:lag-off-by-one"], steps=3000, seed=5, profiles=["lag"])
    assert (first.cases, first.steps, first.statuses) == (second.cases, second.steps, second.statuses)
    assert [f.steps for f in first.findings] == [f.steps for f in second.findings]
    assert first.findings, "the mutant should have been found"


def test_findings_are_written_and_replay_as_divergences(tmp_path: Path) -> None:
    result = run_campaign(["model:redis-7.0+mutant:xack-counts-unknown-ids"], steps=5000, seed=1,
                          profiles=["groups"], out=tmp_path, max_findings=1)
    [finding] = result.divergences
    assert finding.signature.command == "XACK"
    assert any(rule.startswith("XACK-") for rule in finding.rules), finding.rules
    assert finding.path is not None and finding.path.exists()
    trace = load(finding.path)
    assert trace.header.expect is not None and trace.header.expect["verdict"] == "diverge"
    verdict = check_trace(trace)
    assert meets(verdict, *expectation(trace, "auto")), verdict.describe()
    report = (tmp_path / "report.md").read_text()
    assert "## XACK" in report and finding.path.name in report
    summary = json.loads((tmp_path / "report.json").read_text())
    assert summary["ok"] is False and summary["findings"][0]["command"] == "XACK"


def test_ddmin_finds_a_minimal_failing_subsequence() -> None:
    steps = [Step(1, (b"XADD", b"s", b"%d-0" % i, b"f", b"v")) for i in range(1, 20)]
    needed = {steps[3], steps[11]}

    def fails(candidate: list[Step]) -> bool:
        return needed <= set(candidate)

    assert ddmin(steps, fails, budget=500) == [steps[3], steps[11]]


def test_simpler_steps_are_tried() -> None:
    """After dropping steps, ddmin makes them plainer: client 1, not pipelined, fewer arguments."""
    step = Step(3, (b"XLEN", b"s", b"extra"), pipelined=True)

    def fails(candidate: list[Step]) -> bool:
        return len(candidate) == 1 and candidate[0].argv[0] == b"XLEN"

    assert ddmin([step], fails, budget=100) == [Step(1, (b"XLEN",))]


def test_known_divergences_are_looked_past() -> None:
    """A trace that first diverges where a known divergence is still checked for what comes after."""
    target = parse_target("model:redis-7.0")
    run = target.run_steps([Step(1, (b"XADD", b"s", b"1-0", b"f", b"v")), Step(1, (b"XLEN", b"s"))])
    add, length = run.trace.events
    assert isinstance(add, Call) and isinstance(length, Call)
    run.trace.events[:] = [replace(add, reply=Simple("1-0")), replace(length, reply=Int(2))]
    first = check_run(target, None, run)
    assert first.signature is not None and first.signature.command == "XADD"
    behind = check_run(target, None, run, frozenset({first.signature}))
    assert behind.signature is not None and behind.signature.command == "XLEN"
    assert behind.masked == (first.signature,) and behind.first_event == 1


def test_reply_difference_names_the_place() -> None:
    from xspec.spec.resp import Array, Map
    got = Map(((Bulk(b"length"), Int(2)), (Bulk(b"lag"), Int(1))))
    allowed = Map(((Bulk(b"length"), Int(2)), (Bulk(b"lag"), Int(0))))
    assert reply_difference(got, allowed) == "lag/value"
    assert reply_difference(Array((Bulk(b"a"),)), Array((Bulk(b"a"), Bulk(b"b")))) == "length"
    assert reply_difference(Simple("1-0"), Bulk(b"1-0")) == "Simple instead of Bulk"


def test_cli_reports_and_exits_with_the_verdict(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(fuzz_command, ["--target", "model:redis-7.0", "--steps", "500", "--out", str(tmp_path / "a")])
    assert ok.exit_code == 0, ok.output
    assert "divergences: 0" in ok.output
    bad = runner.invoke(fuzz_command, ["--target", "model:redis-7.0+mutant:xadd-auto-seq-starts-at-one",
                                       "--steps", "3000", "--out", str(tmp_path / "b")])
    assert bad.exit_code == 1, bad.output
    assert "## XADD" in bad.output and list((tmp_path / "b").glob("*.jsonl"))
    wrong = runner.invoke(fuzz_command, ["--target", "nonsense", "--steps", "10"])
    assert wrong.exit_code != 0 and "not a target URL" in wrong.output


FINDINGS = sorted((Path(__file__).parent.parent / "traces" / "findings").rglob("*.jsonl"))


@pytest.mark.parametrize("path", FINDINGS, ids=[p.name for p in FINDINGS])
def test_findings_still_diverge_where_they_did(path: Path) -> None:
    """Every divergence ever found stays a regression trace: it must still diverge at its event."""
    trace = load(path)
    verdict = check_trace(trace)
    assert meets(verdict, *expectation(trace, "auto")), verdict.describe()


@pytest.mark.redis
def test_real_redis_conforms(redis: RealRedis) -> None:
    """A short campaign against Redis 7.0.15: every recorded trace conforms."""
    result = run_campaign([f"redis://{redis.host}:{redis.port}"], steps=1500, seed=11, allow_flush=True)
    assert result.ok, result.report()
    assert result.statuses["conform"] == result.cases


@pytest.mark.redis
def test_two_live_targets_are_compared(redis: RealRedis) -> None:
    """The same server twice: the cross comparison must see no difference (clock values are normalised)."""
    url = f"redis://{redis.host}:{redis.port}"
    a = parse_target(url, allow_flush=True)
    b = parse_target(url + "/0", allow_flush=True)
    try:
        steps = [Step(1, (b"XADD", b"s", b"*", b"f", b"v")), Step(1, (b"XGROUP", b"CREATE", b"s", b"g", b"0")),
                 Step(1, (b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"s", b">")),
                 Step(1, (b"XPENDING", b"s", b"g", b"-", b"+", b"10")), Step(1, (b"XINFO", b"CONSUMERS", b"s", b"g"))]
        assert compare_runs(a.run_steps(steps), b.run_steps(steps), (a.url, b.url)) is None
        other = steps[:-1] + [Step(1, (b"XLEN", b"s"))]
        difference = compare_runs(a.run_steps(steps), b.run_steps(other), (a.url, b.url))
        assert difference == Signature(f"{a.url} vs {b.url}", "XINFO CONSUMERS", "replies differ",
                                       "Array instead of Int")
    finally:
        a.close()
        b.close()


@pytest.mark.slow
def test_long_campaign_against_real_redis(redis: RealRedis, tmp_path: Path) -> None:
    result = run_campaign([f"redis://{redis.host}:{redis.port}"], steps=30_000, seed=99, allow_flush=True,
                          out=tmp_path)
    assert result.ok, result.report()
