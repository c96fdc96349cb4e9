"""Trace/2 files without ``repl`` events, as a recorder that sees only its clients and its own actions
writes them (trace format, rule 8): the checker must find where the replication steps happened.

Every recorded corpus trace, stripped of its ``repl`` events, must still conform, and every negative
trace must still be rejected at its changed event, within the checker's time bound. The default suite
checks a sample of each dialect's corpus and of the negative corpus; the whole of them is the slow
test (and ``scripts/check-without-repl``, which prints the times).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from xspec.spec.trace_format import load
from xspec.traces.check.checker import check_trace
from xspec.traces.check.multinode import without_repl

ROOT = Path(__file__).resolve().parent.parent / "traces" / "replication"
DIALECT_CORPORA = ["redis-7.0.15", "redis-6.2.14", "valkey-9.1.2", "redis-7.2.4", "redis-7.4.1", "valkey-8.1.8"]
SAMPLE_EVERY = 8  # the default suite checks every eighth trace of each corpus (11 per dialect)

CPU_LIMIT_S = 10.0
"""A bound that catches a search blowing up; the target (2 s a trace) is what the script measures."""
SLOW_TOPICS = ("/failover/", "/failover-command/", "/persistence/", "/replica-blocking/", "wait-after-reads",
               "replica-serves-reads")
"""Negative traces of these topics take up to a few seconds each without repl events: slow test only."""


def _corpus(name: str) -> list[Path]:
    return sorted((ROOT / name).rglob("*.jsonl"))


def _negatives() -> list[Path]:
    return sorted((ROOT / "negative").rglob("*.jsonl"))


def _check(path: Path) -> None:
    trace = without_repl(load(path))
    expect = trace.header.expect or {}
    began = time.process_time()
    verdict = check_trace(trace)
    spent = time.process_time() - began
    relative = path.relative_to(ROOT).as_posix()
    if expect.get("verdict") == "diverge":
        assert verdict.status == "diverge" and verdict.event == expect["event"], verdict.describe()
    else:
        assert verdict.status == "conform", verdict.describe()
    assert spent < CPU_LIMIT_S, f"{relative}: {spent:.2f} s"


def _ids(paths: list[Path]) -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in paths]


SAMPLE = [p for name in DIALECT_CORPORA for p in _corpus(name)[::SAMPLE_EVERY]]
# the negative traces of the quick topics (among them one that only the rule "a hold outlives a cut"
# rejects: the replica may not reconnect, and lag behind, before the link flows again)
HOLD_OUTLIVES_CUT = ROOT / "negative" / "redis-6.2.14" / "resync" / "backlog-overflow-reconnect.jsonl"
NEGATIVE_SAMPLE = sorted({*(p for p in _negatives() if not any(t in p.as_posix() for t in SLOW_TOPICS)),
                          HOLD_OUTLIVES_CUT})


@pytest.mark.parametrize("path", SAMPLE, ids=_ids(SAMPLE))
def test_a_stripped_corpus_trace_conforms(path: Path) -> None:
    _check(path)


@pytest.mark.parametrize("path", NEGATIVE_SAMPLE, ids=_ids(NEGATIVE_SAMPLE))
def test_a_stripped_negative_trace_is_rejected_at_its_event(path: Path) -> None:
    _check(path)


ALL = [p for name in [*DIALECT_CORPORA, "lessons", "waitaof"] for p in _corpus(name)] + _negatives()


@pytest.mark.slow
@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_every_stripped_trace_keeps_its_verdict(path: Path) -> None:
    _check(path)


def test_without_repl_renumbers_the_expected_event() -> None:
    path = _negatives()[0]
    trace = load(path)
    stripped = without_repl(trace)
    assert not any(type(e).__name__.startswith("Repl") for e in stripped.events)
    assert trace.header.expect and stripped.header.expect
    event = trace.header.expect["event"]
    assert stripped.events[stripped.header.expect["event"] - 1] is trace.events[event - 1]
