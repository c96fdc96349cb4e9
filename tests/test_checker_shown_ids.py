"""The trace/2 checker tries, for the ID an answered XADD makes from the clock, only the millisecond its
reply shows (XADD-11: the reply is that ID, so any other value fails at the reply): a forged ID is still
rejected, and now decidedly even when the command's window holds more milliseconds than the checker
would try one by one (before, such a search gave up as inconclusive)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from xspec.spec.trace_format import loads
from xspec.traces.check.checker import check_trace

T0 = 1_700_000_000_000_000  # µs
MS = T0 // 1000


def _trace(second_id: str, window_ms: int, concurrent: bool = False) -> str:
    """A one-node trace/2 with AOF on: an XADD whose window is ``window_ms`` wide answering an ID in its
    middle, then a second XADD answering ``second_id`` (sent while the first runs if ``concurrent``)."""
    config = {"save": "", "appendonly": "yes", "appendfsync": "always", "aof-use-rdb-preamble": "yes"}
    first = MS + window_ms // 2
    end = T0 + window_ms * 1000
    lines: list[dict[str, Any]] = [
        {"xspec": "trace/2", "nodes": {"a": {"server": {"name": "redis", "version": "7.0.15"},
                                             "addrs": ["127.0.0.1:7001"], "config": config}},
         "clock": "wall", "source": "written"},
        {"ev": "send", "c": 1, "node": "a", "cmd": ["XADD", "s", "*", "f", "v"], "t": T0},
    ]
    second_send = {"ev": "send", "c": 2, "node": "a", "cmd": ["XADD", "s", "*", "f", "w"],
                   "t": T0 + 10 if concurrent else end + 100}
    if concurrent:
        lines.append(second_send)
    lines.append({"ev": "recv", "c": 1, "t": end, "reply": {"bulk": f"{first}-0"}})
    if not concurrent:
        lines.append(second_send)
    lines.append({"ev": "recv", "c": 2, "t": end + 2000, "reply": {"bulk": second_id}})
    lines.append({"ev": "call", "c": 3, "node": "a", "cmd": ["XLEN", "s"], "t0": end + 3000, "t1": end + 3100,
                  "reply": {"int": 2}})
    return "\n".join(json.dumps(line) for line in lines) + "\n"


@pytest.mark.parametrize("concurrent", [False, True])
def test_the_shown_id_conforms(concurrent: bool) -> None:
    first = MS + 100
    verdict = check_trace(loads(_trace(f"{first}-1" if concurrent else f"{MS + 201}-0", 200, concurrent)))
    assert verdict.status == "conform", verdict.describe()


@pytest.mark.parametrize("window_ms", [20, 200])
def test_an_id_no_clock_reading_makes_is_rejected_at_its_reply(window_ms: int) -> None:
    """The second ID is older than the first: no execution explains it, whichever millisecond the first
    XADD read (with a 200 ms window, more than the checker tries of values no reply shows)."""
    verdict = check_trace(loads(_trace(f"{MS}-5", window_ms)))
    assert verdict.status == "diverge", verdict.describe()
    assert verdict.event == 4, verdict.describe()


def test_concurrent_xadds_whose_order_the_ids_cannot_explain_are_rejected() -> None:
    """Both XADDs run while the first is in flight; the second's ID shows a sequence that needs a third
    entry in the same millisecond."""
    first = MS + 100
    verdict = check_trace(loads(_trace(f"{first}-2", 200, concurrent=True)))
    assert verdict.status == "diverge", verdict.describe()
