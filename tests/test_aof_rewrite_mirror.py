"""The end of `xspec serve`'s BGREWRITEAOF mirrored into `--checked`'s model, and found by the offline checker (AOF-7).

The model's rewrite runs until its own internal step (``rewrite``, Redis's backgroundRewriteDoneHandler):
before it, a second BGREWRITEAOF is refused and a load replays the old files. Under ``--checked`` the
server tells the model when its rewrite finished (reference/aof.py ``rewrite_done`` → the observer's
``aof_rewrite_done``); a trace recorded with ``--trace`` holds no such event, so the checker takes the
step itself where a client can tell (another BGREWRITEAOF, INFO).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
import redis as redis_py

from tests.support import checked_run
from xspec.commands.serve import model_checker
from xspec.reference.server import ServerThread
from xspec.reference.trace import CheckedRun
from xspec.spec import trace_format
from xspec.spec.resp import Error
from xspec.traces.check.checker import check_trace


def _wait_rewritten(r: redis_py.Redis) -> None:
    for _ in range(500):
        if not r.info("persistence")["aof_rewrite_in_progress"]:
            return
        time.sleep(0.01)
    raise AssertionError("the rewrite did not finish")


def _two_rewrites(tmp_path: Path, appendonly: str) -> tuple[int, Path]:
    """Two BGREWRITEAOF, each waited for, under --checked and --trace: the divergences and the trace."""
    config = {"dir": str(tmp_path), "appendonly": appendonly, "save": ""}
    trace = tmp_path / "t.jsonl"
    with ServerThread(dialect="redis-7.0", config=config, checker=model_checker, trace=str(trace)) as st:
        r = redis_py.Redis(port=st.port)
        r.xadd("s", {"f": "v"}, id="1-1")
        for _ in range(2):
            assert r.bgrewriteaof()
            _wait_rewritten(r)
            r.xadd("s", {"f": "w"})
        r.close()
        checker = checked_run(st)
        return checker.divergences, trace


@pytest.mark.parametrize("appendonly", ["yes", "no"])
def test_checked_model_finishes_its_rewrite_with_the_server(tmp_path: Path, appendonly: str) -> None:
    """``yes``: the forked child's end, reaped by the cron or a command; ``no``: a rewrite done at once
    inside BGREWRITEAOF, which the model finishes after running the command."""
    divergences, trace = _two_rewrites(tmp_path, appendonly)
    assert divergences == 0
    verdict = check_trace(trace_format.load(trace), rules=True)
    assert verdict.status == "conform", verdict.describe()
    assert verdict.witness is not None
    # each before the INFO that shows it finished (ENV-INFO judges aof_rewrite_in_progress, FORK-1)
    assert [s.kind for s in verdict.witness.steps].count("rewrite") == 2


def test_without_the_mirror_the_model_still_rewrites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above can fail: a model never told refuses the second BGREWRITEAOF."""
    monkeypatch.setattr(CheckedRun, "aof_rewrite_done", lambda self: None)
    divergences, _ = _two_rewrites(tmp_path, "yes")
    assert divergences >= 1


def test_a_rewrite_refused_before_any_ran_diverges(tmp_path: Path) -> None:
    """The checker takes the step only after a rewrite started: a first BGREWRITEAOF cannot be refused."""
    _, path = _two_rewrites(tmp_path, "yes")
    trace = trace_format.load(path)
    events = list(trace.events)
    at = next(i for i, e in enumerate(events) if getattr(e, "cmd", None) == [b"BGREWRITEAOF"])
    reply_at = next(i for i in range(at, len(events)) if getattr(events[i], "reply", None) is not None)
    refused = Error("ERR Background append only file rewriting already in progress")
    events[reply_at] = dataclasses.replace(events[reply_at], reply=refused)  # type: ignore[type-var]
    verdict = check_trace(trace_format.Trace(trace.header, events, trace.path))
    assert verdict.status == "diverge" and verdict.event == reply_at + 1, verdict.describe()
