"""Trace/2 files as another recorder following the contract could write them (../shared/TRACE-FORMAT.md).

The corpus traces are rewritten the ways the format leaves open, and each must keep its verdict
(a negative one, its event): nodes named otherwise and listed in another order in the header (a
JSON object's order means nothing), every ``call`` written as a ``send`` and its ``recv`` (what a
pipelining recorder writes), and no ``repl`` events (a recorder without a proxy). The default suite
takes a sample; the slow test takes every trace/2 of the corpora.

The checker takes the replicas' own steps one replica after the other; their clock readings are
not ordered by that (:meth:`xspec.traces.check.symbolic.Zone.join`): with the header's order
reversed, the first replica's XCLAIM seen-time reads the clock before the second's, which is what
``replicated/two-replicas`` needs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from xspec.spec.trace_format import Trace, loads
from xspec.traces.check.checker import check_trace
from xspec.traces.check.multinode import without_repl
from xspec.traces.check.symbolic import Zone

ROOT = Path(__file__).resolve().parent.parent / "traces" / "replication"
NAMES = {"a": "primary-1", "b": "replica.one", "c": "r2"}


def _rename(lines: list[dict[str, Any]]) -> None:
    """Each node gets another name, and the header lists the nodes in reverse order."""
    header = lines[0]
    header["nodes"] = {NAMES.get(k, k): v for k, v in reversed(list(header["nodes"].items()))}
    expect = header.get("expect")
    if isinstance(expect, dict) and expect.get("node") in NAMES:
        expect["node"] = NAMES[expect["node"]]
    for e in lines[1:]:
        for key in ("node", "from", "to"):
            if e.get(key) in NAMES:
                e[key] = NAMES[e[key]]


def _split_calls(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every ``call`` as a ``send`` and its ``recv``; the expected event follows its reply."""
    out = [lines[0]]
    moved: dict[int, int] = {}
    for i, e in enumerate(lines[1:], 1):
        if e.get("ev") == "call" and "t0" in e:
            out.append({"ev": "send", "c": e["c"], "node": e["node"], "cmd": e["cmd"], "t": e["t0"]})
            out.append({"ev": "recv", "c": e["c"], "t": e["t1"], "reply": e["reply"]})
        else:
            out.append(e)
        moved[i] = len(out) - 1
    expect = out[0].get("expect")
    if isinstance(expect, dict) and isinstance(expect.get("event"), int):
        expect["event"] = moved[expect["event"]]
    return out


def rewritten(path: Path, *, strip: bool) -> Trace:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    _rename(lines)
    lines = _split_calls(lines)
    trace = loads("\n".join(json.dumps(line) for line in lines) + "\n", str(path))
    return without_repl(trace) if strip else trace


def _check(path: Path, strip: bool) -> None:
    trace = rewritten(path, strip=strip)
    expect = trace.header.expect or {}
    verdict = check_trace(trace)
    if expect.get("verdict") == "diverge":
        assert verdict.status == "diverge" and verdict.event == expect["event"], verdict.describe()
    else:
        assert verdict.status == "conform", verdict.describe()


SAMPLE = [ROOT / f"{server}/{name}.jsonl" for server in ("redis-7.0.15", "redis-6.2.14", "valkey-9.1.2")
          for name in ("replicated/two-replicas", "failover/two-owners", "failover/acked-pending-again",
                       "persistence/aof-everysec")] + \
    [ROOT / "negative/redis-7.0.15/replicated/multi-exec.jsonl"]
ALL = sorted(ROOT.rglob("*.jsonl"))  # every one a trace/2


def _ids(paths: list[Path]) -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in paths]


@pytest.mark.parametrize("strip", [True, False], ids=["without-repl", "with-repl"])
@pytest.mark.parametrize("path", [p for p in SAMPLE if p.exists()], ids=_ids([p for p in SAMPLE if p.exists()]))
def test_a_rewritten_corpus_trace_keeps_its_verdict(path: Path, strip: bool) -> None:
    _check(path, strip)


@pytest.mark.slow
@pytest.mark.parametrize("strip", [True, False], ids=["without-repl", "with-repl"])
@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_every_rewritten_trace_keeps_its_verdict(path: Path, strip: bool) -> None:
    _check(path, strip)


def test_a_branch_of_the_clock_is_not_ordered_against_the_other_until_they_join() -> None:
    zone = Zone()
    start = zone.new_reading(0, 10)
    first = zone.new_reading(0, 1000)  # one replica's step: after start
    mark = zone.mark()
    zone.branch_from = start
    second = zone.new_reading(0, 1000)  # another replica's, taken next in the search
    assert zone.decide_le(start, second, 0) is True
    assert zone.decide_le(second, first, -1) is None  # it may have read the clock first
    zone.join([first, second])
    later = zone.new_reading(0, 1000)
    assert zone.decide_le(first, later, 0) is True and zone.decide_le(second, later, 0) is True
    zone.undo(mark)
    assert zone.unchained == [] and len(zone.lo) == second
    assert zone.decide_le(first, zone.new_reading(0, 1000), 0) is True  # chained again
