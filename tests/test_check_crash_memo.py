"""The trace/2 checker's memo around a crash: a state's key holds what the node's AOF loads to, not the
file (traces/check/multinode.py ``_aof_loads``, traces/check/reload_cache.py ``LoadedStates``).

At a ``crash`` the search tries every set and order of the commands in flight (trace format rule 10).
Writes to different keys commute: their orders leave different files that load to one state, and the
search now goes on from each such state once, before the restart even reloads it. Where the order
does matter to what a restart may keep (``everysec`` keeps any prefix of the file written in the last
two seconds, AOF-8), the key holds every prefix's state, so the orders are still told apart; and a
recovered state no execution explains is still rejected.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from xspec.spec.trace_format import Trace, loads
from xspec.traces.check import checker as base
from xspec.traces.check import multinode
from xspec.traces.check.checker import Verdict

T0 = 1_700_000_000_000_000  # µs


def _header(fsync: str) -> dict[str, Any]:
    config = {"save": "", "appendonly": "yes", "appendfsync": fsync, "aof-use-rdb-preamble": "yes"}
    return {"xspec": "trace/2", "nodes": {"a": {"server": {"name": "redis", "version": "7.0.15"},
                                                "addrs": ["127.0.0.1:7001"], "config": config}},
            "clock": "wall", "source": "written"}


def _in_flight(writes: int, read: list[str | None]) -> Trace:
    """``writes`` clients each send ``SET k<i> v<i>`` and get no reply: the node is killed with all of
    them in flight and restarted (``always``), and an MGET of every key answers ``read``."""
    lines: list[dict[str, Any]] = [_header("always")]
    for i in range(1, writes + 1):
        lines.append({"ev": "send", "c": i, "node": "a", "cmd": ["SET", f"k{i}", f"v{i}"], "t": T0 + 10 * i})
    lines.append({"ev": "crash", "node": "a", "t": T0 + 5_000})
    lines.append({"ev": "restart", "node": "a", "t": T0 + 6_000})
    lines.append({"ev": "call", "c": 100, "node": "a", "cmd": ["MGET", *(f"k{i}" for i in range(1, writes + 1))],
                  "t0": T0 + 7_000, "t1": T0 + 7_100,
                  "reply": {"array": [{"null": "bulk"} if v is None else {"bulk": v} for v in read]}})
    return loads("\n".join(json.dumps(line) for line in lines) + "\n")


def _search(trace: Trace, memo: bool = True) -> tuple[Verdict, multinode._MultiSearch]:
    """The trace/2 search over the whole ``trace`` (as ``check_multinode`` runs it), with the memo's
    key or, ``memo`` false, with each AOF itself in the key."""
    kinds, at = base._operations(trace)
    for i, event in enumerate(trace.events):
        kind = multinode._HARNESS_KIND.get(type(event))
        if kind is not None:
            kinds[i] = kind
    search = multinode._MultiSearch(trace, kinds, at, multinode.node_dialects(trace))
    if not memo:
        search._aof_loads = dict  # type: ignore[method-assign]
    return search.run(), search


WRITES = 5


def test_orders_of_commuting_writes_in_flight_reload_once_per_set() -> None:
    """None of the five writes ran (the last execution the search tries: it runs what was sent first).
    Without the memo every order of every subset reaches the restart and reloads; with it each of
    the 2^5 subsets does once, whatever order made it (the whole set twice: the first execution
    keeps no state, as nothing has failed yet)."""
    trace = _in_flight(WRITES, [None] * WRITES)
    verdict, search = _search(trace)
    assert verdict.status == "conform", verdict.describe()
    reloads = search.reloads.hits + search.reloads.misses
    assert reloads <= 2 ** WRITES + 1
    plain, without = _search(trace, memo=False)
    assert plain.status == "conform", plain.describe()
    orders = sum(_arrangements(WRITES, k) for k in range(WRITES + 1))  # 326 ordered subsets
    assert without.reloads.hits + without.reloads.misses > orders // 2
    assert search.steps * 4 < without.steps


def _arrangements(n: int, k: int) -> int:
    out = 1
    for i in range(n - k + 1, n + 1):
        out *= i
    return out


def test_a_subset_of_the_writes_in_flight_conforms() -> None:
    read: list[str | None] = [f"v{i}" if i % 2 else None for i in range(1, WRITES + 1)]
    verdict, _ = _search(_in_flight(WRITES, read))
    assert verdict.status == "conform", verdict.describe()


@pytest.mark.slow  # 5 s: the default suite keeps the merging and everysec tests (issue 18's minutes)
def test_a_recovered_value_no_write_made_is_still_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forged: the read shows a value no client sent. The search must rule out every execution, which
    it does with the memo within a budget where without it the search gives up (seven writes in
    flight: 13,700 ordered subsets, 128 sets)."""
    monkeypatch.setattr(base, "STEP_BUDGET_BASE", 10_000)
    monkeypatch.setattr(multinode, "RESTART_STEP_BUDGET", 0)
    writes = 7
    read: list[str | None] = [None] * writes
    read[4] = "forged"
    trace = _in_flight(writes, read)
    verdict = base.check_trace(trace)
    assert verdict.status == "diverge", verdict.describe()
    assert verdict.event == len(trace.events), verdict.describe()
    plain, _ = _search(trace, memo=False)
    assert plain.status == "inconclusive", plain.describe()


def _everysec(read: list[str | None]) -> Trace:
    """Three clients' writes run while all are in flight (``INCR x`` sent first, then ``SET y 1`` and
    ``SET z 1``), all answered, ``SET y`` first; under ``everysec`` the kill follows at once, and an
    MGET of x, y and z answers ``read``."""
    lines: list[dict[str, Any]] = [
        _header("everysec"),
        {"ev": "send", "c": 1, "node": "a", "cmd": ["INCR", "x"], "t": T0},
        {"ev": "send", "c": 2, "node": "a", "cmd": ["SET", "y", "1"], "t": T0 + 10},
        {"ev": "send", "c": 3, "node": "a", "cmd": ["SET", "z", "1"], "t": T0 + 20},
        {"ev": "recv", "c": 2, "t": T0 + 500, "reply": {"simple": "OK"}},
        {"ev": "recv", "c": 1, "t": T0 + 600, "reply": {"int": 1}},
        {"ev": "recv", "c": 3, "t": T0 + 700, "reply": {"simple": "OK"}},
        {"ev": "crash", "node": "a", "t": T0 + 5_000},
        {"ev": "restart", "node": "a", "t": T0 + 6_000},
        {"ev": "call", "c": 4, "node": "a", "cmd": ["MGET", "x", "y", "z"], "t0": T0 + 7_000, "t1": T0 + 7_100,
         "reply": {"array": [{"null": "bulk"} if v is None else {"bulk": v} for v in read]}},
    ]
    return loads("\n".join(json.dumps(line) for line in lines) + "\n")


@pytest.mark.parametrize(("read", "status"), [
    (["1", "1", "1"], "conform"),
    ([None, None, None], "conform"),
    (["1", None, "1"], "conform"),  # the file's order INCR, SET z, SET y, cut after two writes
    ([None, "1", None], "conform"),  # only an order with SET y first explains it, cut after it
    (["2", "1", "1"], "diverge"),
])
def test_everysec_tells_apart_orders_that_load_to_one_state_but_keep_other_prefixes(
        read: list[str | None], status: str) -> None:
    """Every order of the three writes loads to {x: 1, y: 1, z: 1}, but a crash under ``everysec``
    may cut the file after any write: the key holds each prefix's state, so the orders the search
    tries after the first failures (INCR, SET z, SET y is kept once tried; SET y, INCR, SET z comes
    later) are not merged."""
    verdict, _ = _search(_everysec(read))
    assert verdict.status == status, verdict.describe()
