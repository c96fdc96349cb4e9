"""Failover counterexamples run on real servers (spec/exploration.md, EXPLORE-REPRO-1 .. EXPLORE-REPRO-4).

The default suite runs the `coordinated-1r` counterexamples (the FAILOVER command), the shortest `async`
one, a walk that acknowledges writes with WAIT, and a walk of a configuration where every property holds,
each on Redis 7.0.15; ``-m slow`` runs every counterexample of every replication configuration, also on
Redis 6.2.14 and Valkey 9.1.2.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.test_explore_failover import PINNED
from xspec.cli import main
from xspec.explore.failover import NAMED, PROPERTIES, FailoverSystem
from xspec.explore.failover_report import FailoverReport, check_failover
from xspec.explore.failover_trace import model_trace
from xspec.explore.reproduce import (
    LIBFAKETIME,
    RealObserver,
    ReproduceError,
    Reproduction,
    judge_recording,
    reproduce,
    server_kind,
)
from xspec.spec.resp import Array, Bulk, Int
from xspec.spec.trace_format import Call, Note, dump, dumps, load, loads
from xspec.traces.check.checker import check_trace
from xspec.traces.check.multinode import check_multinode
from xspec.traces.cluster.nodes import find_server

needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None and not Path("/usr/bin/redis-server").exists(),
                                 reason="no redis-server 7.0.15")

_REPORTS: dict[str, FailoverReport] = {}


def report_of(name: str) -> FailoverReport:
    if name not in _REPORTS:
        _REPORTS[name] = check_failover(NAMED[name])
    return _REPORTS[name]


def conforms(r: Reproduction, tmp_path: Path) -> None:
    """The recording is a trace/2 that the model explains (and that survives a round trip through its file)."""
    path = tmp_path / f"{r.prop}.jsonl"
    dump(r.trace, path)
    verdict = check_multinode(load(path))
    assert verdict.status == "conform", verdict


def follow(system: FailoverSystem, wanted: list[str]) -> list[tuple[int, Any]]:
    """The path that takes, at each state, the step whose description starts with the next of ``wanted``."""
    s = system.initial()
    out = []
    for text in wanted:
        for sid, nxt in system.expand(s):
            if system.steps[sid].describe(system.process_names).startswith(text):
                out.append((sid, nxt))
                s = nxt
                break
        else:
            raise AssertionError(f"no step {text!r}")
    return out


@needs_redis
def test_an_acknowledged_xadd_is_lost_on_redis_7_0(tmp_path: Path) -> None:
    system = FailoverSystem(NAMED["async-1r"])
    steps = follow(system, ["producer: XADD", "env: the primary crashes", "env: replica 1: REPLICAOF NO ONE"])
    r = reproduce(system, steps, "acked-add-durable", find_server("redis-7.0.15"))
    assert r.violated == {"acked-add-durable": 3}
    conforms(r, tmp_path)


@needs_redis
def test_wait_acknowledges_what_the_path_says(tmp_path: Path) -> None:
    """WAIT 1 replies 1 where the path applies the write's mark and 0 where it times out, so the writes the real
    servers acknowledged are the path's; then a promotion keeps every acknowledged write."""
    system = FailoverSystem(NAMED["wait-1r"])
    steps = follow(system, [
        "producer: XADD", "env: replica 1 applies", "env: replica 1 applies",  # the XADD, then WAIT 1 -> 1
        "c1: XREADGROUP GROUP g c1 COUNT 1 STREAMS s >", "c1: XACK", "c1: WAIT",  # the XACK's WAIT times out
        "producer: XADD", "producer: WAIT",  # the second XADD's WAIT times out too
        "env: replica 1 applies", "env: replica 1 applies",  # the read's XCLAIM, the XACK
        "env: the link to replica 1 is cut", "env: replica 1: REPLICAOF NO ONE", "monitor: XPENDING"])
    state = steps[-1][1]
    assert state[6][1] == 1 << 1 and state[6][2] == 0  # the path: entry 1's XADD acknowledged, no XACK
    r = reproduce(system, steps, "acked-add-durable", find_server("redis-7.0.15"))
    assert r.differences == [], r.log
    assert "acked-add-durable" not in r.violated and "acked-never-redelivered" not in r.violated
    waits = [line for line in r.log if " WAIT " in line]
    assert [w.rsplit("Int(value=", 1)[1][0] for w in waits] == ["1", "0", "0"], waits
    conforms(r, tmp_path)


@needs_redis
def test_a_walk_where_every_property_holds_violates_nothing_on_redis(tmp_path: Path) -> None:
    """A random walk of `coordinated-1r-no-history` (every property holds there) with a FAILOVER in it."""
    system = FailoverSystem(NAMED["coordinated-1r-no-history"], symmetry=False)
    rng = random.Random(7)
    s = system.initial()
    steps: list[tuple[int, Any]] = []
    promoted = False
    while len(steps) < 24:
        choices = system.expand(s)
        if not choices:
            break
        choices = [c for c in choices if system.steps[c[0]].kind != "crash"]  # FAILOVER needs its primary
        if len(steps) >= 10 and not promoted:  # then hand over: repair the link, let the replica catch up
            for kind in ("failover", "repair", "apply"):
                choices = [c for c in choices if system.steps[c[0]].kind == kind] or choices
                if system.steps[choices[0][0]].kind == kind:
                    break
        sid, s = rng.choice(choices)
        promoted = promoted or system.steps[sid].kind == "failover"
        steps.append((sid, s))
    assert promoted
    r = reproduce(system, steps, "acked-add-durable", find_server("redis-7.0.15"))
    assert r.violated == {} and r.differences == [], r.log
    conforms(r, tmp_path)


@needs_redis
def test_the_workers_poison_pill_limit_runs_on_redis(tmp_path: Path) -> None:
    """The recovery worker claims an entry delivered once, asks XPENDING (2 deliveries, above the limit of 1),
    dead-letters it under its ID and acks it; the replica applies all of it, and nothing is violated."""
    system = FailoverSystem(NAMED["async-worker"])
    steps = follow(system, [
        "producer: XADD", "c1: XREADGROUP GROUP g c1 COUNT 1 STREAMS s >", "w: XAUTOCLAIM", "w: XPENDING",
        "w: XADD dlq", "w: XACK", *["env: replica 1 applies"] * 5, "monitor: XPENDING", "monitor: XINFO"])
    r = reproduce(system, steps, "acked-add-durable", find_server("redis-7.0.15"))
    assert r.violated == {} and r.differences == [], r.log
    pending = next(line for line in r.log if line.startswith("w on a: XPENDING"))
    assert "Int(value=2)" in pending, pending
    letter = next(line for line in r.log if line.startswith("w on a: XADD dlq"))
    assert "Bulk(value=b'1700000000000-0')" in letter, letter
    conforms(r, tmp_path)


@needs_redis
def test_a_failover_lets_a_poison_pill_evade_the_limit_on_redis(tmp_path: Path) -> None:
    """EXPLORE-FAIL-11, ``limit-evaded``: the claim's XCLAIM (delivery count 2) is lost with the cut and the
    promotion, so the promoted replica's XPENDING shows the entry delivered once: at the limit, the worker
    processes it although clients received it twice."""
    system = FailoverSystem(NAMED["async-worker"])
    steps = follow(system, [
        "producer: XADD", "c1: XREADGROUP GROUP g c1 COUNT 1 STREAMS s >", "w: XAUTOCLAIM",
        *["env: replica 1 applies"] * 2, "env: the link to replica 1 is cut", "env: replica 1: REPLICAOF NO ONE",
        "w: XPENDING", "w: XACK"])
    assert steps[-2][1][5][3][3] == 0  # the compact worker processes it (no dead letter next)
    r = reproduce(system, steps, "acked-add-durable", find_server("redis-7.0.15"))
    assert r.differences == [], r.log
    claimed = next(line for line in r.log if line.startswith("w on a: XAUTOCLAIM"))
    assert "1700000000000-0" in claimed, claimed
    pending = next(line for line in r.log if line.startswith("w on b: XPENDING"))
    assert "Bulk(value=b'c1')" in pending and pending.endswith("Int(value=1))),))"), pending  # owner c1, delivered once
    conforms(r, tmp_path)


EXPLORE_CORPUS = Path(__file__).resolve().parents[1] / "traces" / "replication" / "explore"
RECORDINGS = sorted(EXPLORE_CORPUS.rglob("*.jsonl"))


@pytest.fixture(scope="module")
def _replication_scope() -> Any:
    """The checker's replication scope as the model has it (tests/test_corpus.py does the same)."""
    from tests.test_corpus import _model_decides_the_replication_scope
    with pytest.MonkeyPatch.context() as patch:
        _model_decides_the_replication_scope(patch)
        yield


def test_the_committed_counterexamples_cover_every_violation() -> None:
    """EXPLORE-REPRO-4: every counterexample of EXPLORE-FAIL-9, recorded on Redis 7.0.15, 6.2.14 and Valkey
    9.1.2, is in traces/replication/explore/."""
    want = {f"{name}/{prop}.jsonl" for name, numbers in PINNED.items() for prop, v in numbers[3].items()
            if v != "holds"}
    assert sorted(p.name for p in EXPLORE_CORPUS.iterdir()) == ["redis-6.2.14", "redis-7.0.15", "valkey-9.1.2"]
    for folder in ("redis-7.0.15", "redis-6.2.14", "valkey-9.1.2"):
        got = {p.relative_to(EXPLORE_CORPUS / folder).as_posix() for p in (EXPLORE_CORPUS / folder).rglob("*.jsonl")}
        assert got == want, (folder, sorted(got ^ want))


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.relative_to(EXPLORE_CORPUS).as_posix() for p in RECORDINGS])
def test_every_committed_counterexample_is_judged_as_the_explorer_said(path: Path, _replication_scope: Any) -> None:
    """The recording shows its property violated at the path's last step, the step count the explorer pins,
    read from the file alone; and the checker meets the header's expectation: ``conform``, or for a frozen
    clock (EXPLORE-REPRO-5) ``diverge`` at the first ``XADD s *``."""
    trace = load(path)
    steps = sum(1 for e in trace.events if isinstance(e, Note) and e.text.startswith("step "))
    assert steps == PINNED[path.parent.name][3][path.stem]
    assert judge_recording(trace).get(path.stem) == steps
    verdict = check_trace(trace)
    expect = trace.header.expect or {"verdict": "conform"}
    assert verdict.status == expect["verdict"] and verdict.event == expect.get("event", verdict.event), \
        verdict.describe()


def test_cli_writes_model_traces_the_checker_explains(tmp_path: Path, _replication_scope: Any) -> None:
    """EXPLORE-FAIL-10: without --reproduce, --traces writes each counterexample run on the model."""
    name = "async-1r-no-history"
    r = CliRunner().invoke(main, ["explore", "--protocol", name, "--no-explain", "--traces", str(tmp_path)])
    assert r.exit_code == 0, r.output
    written = sorted(tmp_path.rglob("*.jsonl"))
    assert {p.relative_to(tmp_path).as_posix() for p in written} == {
        f"{name}/{prop}.jsonl" for prop, v in PINNED[name][3].items() if v != "holds"}
    for p in written:
        trace = load(p)
        assert check_trace(trace).status == "conform", p
        assert judge_recording(trace).get(p.stem) == PINNED[name][3][p.stem], p


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, numbers in PINNED.items() if set(numbers[3].values()) != {"holds"}])
def test_every_counterexample_run_on_the_model_is_explained_by_the_checker(name: str, _replication_scope: Any) -> None:
    """EXPLORE-FAIL-10: each counterexample run on the model, as a trace/2 file, conforms and shows its
    property violated at its last step."""
    report = report_of(name)
    for v in report.verdicts:
        if v.holds:
            continue
        trace = loads(dumps(model_trace(report.system, v.steps)))
        assert judge_recording(trace).get(v.prop) == len(v.steps), v.prop
        verdict = check_trace(trace)
        assert verdict.status == MODEL_TRACE_VERDICTS.get(f"{name}/{v.prop}", "conform"), (v.prop, verdict.describe())


MODEL_TRACE_VERDICTS = {"wait-2r/consumer-persists": "inconclusive"}
"""The model-run counterexamples whose check is not ``conform``: the checker's search gives up on the XADD's
WAIT, left blocked with two replicas when the promotion ends the run (no ``repl`` events to follow)."""


@pytest.mark.skipif(not LIBFAKETIME.exists(), reason="Debian's faketime (libfaketime) is not installed")
def test_a_clock_skew_counterexample_runs_under_faketime_on_redis_6_2(tmp_path: Path) -> None:
    """EXPLORE-REPRO-5: Redis 6.2 has no `<ms>-*`; with every node's clock frozen at T by libfaketime, `XADD s *`
    gives the old primary's ID again on the promoted replica, and the header expects the checker's divergence
    at the first `XADD s *` (the frozen millisecond is no reading of the trace's wall clock)."""
    try:
        kind = find_server("redis-6.2.14")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    report = report_of("async-1r-no-history")
    verdict = next(v for v in report.verdicts if v.prop == "no-id-reuse")
    r = reproduce(report.system, verdict.steps, "no-id-reuse", kind)
    assert r.violated.get("no-id-reuse") == len(verdict.steps) == 4, r.log
    assert "frozen" in (r.trace.header.title or "")
    path = tmp_path / "no-id-reuse.jsonl"
    dump(r.trace, path)
    expect = r.trace.header.expect
    assert expect is not None and expect["verdict"] == "diverge"
    checked = check_multinode(load(path))
    assert (checked.status, checked.event) == ("diverge", expect["event"]), checked


def test_the_observer_reads_the_properties_from_replies() -> None:
    """EXPLORE-REPRO-3: the properties are judged from the real replies alone."""
    o = RealObserver(wait_regime=False)

    def entry(n: int, k: int) -> Array:
        return Array((Bulk(b"1-%d" % n), Array((Bulk(b"p"), Bulk(b"%d" % k)))))

    o.reply("producer", (b"XADD", b"s", b"1-*", b"p", b"1"), Bulk(b"1-0"))
    o.probe(Array((entry(0, 1),)))
    o.reply("c1", (b"XREADGROUP", b"GROUP", b"g", b"c1", b"COUNT", b"1", b"STREAMS", b"s", b">"),
            Array((Array((Bulk(b"s"), Array((entry(0, 1),)))),)))
    o.reply("c1", (b"XACK", b"s", b"g", b"1-0"), Int(1))
    assert o.violated == {}
    o.probe(Array(()))
    assert o.violated == {"acked-add-durable": 0}
    o.reply("producer", (b"XADD", b"s", b"1-*", b"p", b"2"), Bulk(b"1-0"))
    o.reply("c2", (b"XREADGROUP", b"GROUP", b"g", b"c2", b"COUNT", b"1", b"STREAMS", b"s", b">"),
            Array((Array((Bulk(b"s"), Array((entry(0, 1),)))),)))
    assert set(o.violated) == {"acked-add-durable", "no-id-reuse", "single-owner", "last-delivered-monotone",
                               "acked-never-redelivered"}
    assert set(o.violated) <= set(PROPERTIES)


def test_bad_targets_get_one_line(tmp_path: Path) -> None:
    with pytest.raises(ReproduceError, match="neither a known server"):
        server_kind("redis-1.0")
    text = tmp_path / "not-a-server"
    text.write_text("#!/bin/sh\necho hello\n")
    text.chmod(0o755)
    with pytest.raises(ReproduceError, match="not a Redis or Valkey server"):
        server_kind(str(text))
    runner = CliRunner()
    for args, message in (
        (["--protocol", "async-1r", "--reproduce", "redis-1.0"], "neither a known server"),
        (["--protocol", "async-1r", "--reproduce", str(text)], "not a Redis or Valkey server"),
        (["--config", "tiny", "--reproduce", "redis-7.0.15"], "--reproduce runs the replication"),
        (["--protocol", "seed-consumer", "--reproduce", "redis-7.0.15"], "is not a replication configuration"),
    ):
        result = runner.invoke(main, ["explore", *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output and "Traceback" not in result.output, result.output


@needs_redis
def test_cli_reproduces_and_writes_the_recordings(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["explore", "--protocol", "coordinated-1r", "--reproduce", "redis-7.0.15",
                                       "--no-explain", "--traces", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "reproduced on redis-7.0.15: coordinated-1r consumer-persists violated at step" in result.output
    assert sorted(p.name for p in (tmp_path / "coordinated-1r").iterdir()) == [
        "consumer-persists.jsonl", "delivery-count-monotone.jsonl"]
    assert "reproduced on redis-7.0.15: coordinated-1r delivery-count-monotone violated at step" in result.output
    for path in (tmp_path / "coordinated-1r").iterdir():  # the model explains what the real servers did
        trace = load(path)
        assert any(isinstance(e, Call) and e.cmd[0] == b"FAILOVER" for e in trace.events)
        verdict = check_multinode(trace)
        assert verdict.status == "conform", (path.name, verdict)
    explained = CliRunner().invoke(main, ["explain", str(tmp_path / "coordinated-1r" / "consumer-persists.jsonl")])
    assert explained.exit_code == 0, explained.output
    assert "XINFO CONSUMERS" in explained.output


SERVERS = ["redis-7.0.15", "redis-6.2.14", "valkey-9.1.2"]


@pytest.mark.slow
@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("name", list(NAMED))
def test_every_counterexample_happens_on_real_servers(name: str, server: str, tmp_path: Path) -> None:
    try:
        kind = find_server(server)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    report = report_of(name)
    for verdict in report.verdicts:
        if verdict.holds:
            continue
        r = reproduce(report.system, verdict.steps, verdict.prop, kind)
        if verdict.prop == "no-id-reuse" and server == "redis-6.2.14" and not LIBFAKETIME.exists():
            # No `<ms>-*` before 7.0 and no libfaketime: `*` reads the real clock, which has moved on.
            assert not r.reproduced, r.log
            continue
        assert r.reproduced, (verdict.prop, r.log)
        assert r.violated[verdict.prop] == len(verdict.steps)
        assert r.differences == [], r.differences
        if server == "redis-7.0.15":
            conforms(r, tmp_path)
