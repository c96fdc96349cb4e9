"""The model's persistence children (spec/rules/replication.md FORK-1, FORK-2, FORK-3), judged against real servers.

One script holds children with ``rdb-key-save-delay`` (set where no trace records it: the model holds no
such setting, it changes only how long a child runs): a BGSAVE with a BGREWRITEAOF scheduled behind it,
then the rewrite with a BGSAVE SCHEDULE behind it, SAVE while the rewrite runs, and BGSAVE and
BGREWRITEAOF run by EXEC with no child; INFO persistence is polled throughout, and ENV-INFO judges its
child fields exactly. It runs on `xspec serve --checked` (the model beside the server: no divergence, and
the recorded ``--trace`` conforms offline, where the one-server checker takes the cron's steps itself)
and on the real 7.0.15, 6.2.14 and Valkey 9.1.2 recorded as trace/2 (the deployment's checker takes
them); a forged answer diverges at its event.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import checked_run, first_by_default
from xspec.commands.serve import model_checker
from xspec.models.clock import ManualClock
from xspec.models.server import Server
from xspec.reference.server import ServerThread
from xspec.spec import trace_format
from xspec.spec.dialect import REDIS_62, REDIS_70, VALKEY_91, Dialect
from xspec.spec.resp import Array, Bulk, Error, Reply, Simple, Verbatim
from xspec.traces.check.checker import check_trace
from xspec.traces.record.client import RespConnection

SCHEDULED = Simple("Background append only file rewriting scheduled")
BGSAVE_STARTED = Simple("Background saving started")
BGSAVE_SCHEDULED = Simple("Background saving scheduled")
SAVE_IN_PROGRESS = Error("ERR Background save already in progress")
REWRITE_IN_PROGRESS = Error("ERR Background append only file rewriting already in progress")
CHILD_ACTIVE = Error("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in "
                     "order to schedule a BGSAVE whenever possible.")
DIALECTS = {"redis-7.0": REDIS_70, "redis-6.2": REDIS_62, "valkey-9.1": VALKEY_91}
REAL = {"redis-7.0": "redis-7.0.15", "redis-6.2": "redis-6.2.14", "valkey-9.1": "valkey-9.1.2"}
Call = Callable[..., Reply]
Flags = tuple[int, int, int]


def info_fields(reply: Reply) -> dict[bytes, bytes]:
    """An INFO reply's ``name:value`` lines."""
    text = reply.value if isinstance(reply, Bulk) else reply.text if isinstance(reply, Verbatim) else None
    assert isinstance(text, bytes), reply
    return dict(line.split(b":", 1) for line in text.split(b"\r\n") if b":" in line)


def flags(reply: Reply) -> Flags:
    """INFO persistence's child fields: rdb_bgsave_in_progress, aof_rewrite_in_progress, aof_rewrite_scheduled."""
    fields = info_fields(reply)
    return (int(fields[b"rdb_bgsave_in_progress"]), int(fields[b"aof_rewrite_in_progress"]),
            int(fields[b"aof_rewrite_scheduled"]))


def until(call: Call, done: Callable[[Flags], bool]) -> Flags:
    for _ in range(200):
        now = flags(call("INFO", "persistence"))
        if done(now):
            return now
        time.sleep(0.04)  # a few polls a child: each is an event the checkers place the cron's steps around
    raise AssertionError("the children never got there")


def script(call: Call, set_delay: Callable[[int], None]) -> list[Any]:
    """What the script answers, in order (the INFO polls left out but their last flags)."""
    for i in range(5):
        call("SET", f"k{i}", "v")
    set_delay(80000)  # 80 ms a key: each child runs 0.4 s
    out: list[Any] = [call("BGSAVE"), call("BGREWRITEAOF"), flags(call("INFO", "persistence")),
                      call("BGREWRITEAOF"), call("BGSAVE"), call("BGSAVE", "SCHEDULE"), call("SAVE")]
    out.append(until(call, lambda f: f[1] == 1))  # the scheduled rewrite started after the BGSAVE was reaped
    out += [call("BGREWRITEAOF"), call("BGSAVE"), call("BGSAVE", "SCHEDULE"), call("SAVE")]
    out.append(until(call, lambda f: f[0] == 1))  # the scheduled BGSAVE started in the tick reaping the rewrite
    set_delay(0)
    out.append(until(call, lambda f: f == (0, 0, 0)))
    out += [call("MULTI"), call("BGSAVE"), call("BGREWRITEAOF"), call("EXEC")]
    out.append(until(call, lambda f: f == (0, 0, 0)))
    return out


def expected(dialect: Dialect) -> list[Any]:
    """FORK-1..3 as measured on the real servers (tests/test_aof_auto_rewrite.py compares them with ours)."""
    queued = Simple("QUEUED")
    in_exec = Array((BGSAVE_SCHEDULED, SCHEDULED)) if dialect.exec_schedules_children \
        else Array((BGSAVE_STARTED, SCHEDULED))  # FORK-3
    return [BGSAVE_STARTED, SCHEDULED, (1, 0, 1), SCHEDULED, SAVE_IN_PROGRESS, SAVE_IN_PROGRESS, SAVE_IN_PROGRESS,
            (0, 1, 0), REWRITE_IN_PROGRESS, CHILD_ACTIVE, BGSAVE_SCHEDULED, Simple("OK"),
            (1, 0, 0), (0, 0, 0), Simple("OK"), queued, queued, in_exec, (0, 0, 0)]


# -- the model alone ----------------------------------------------------------------------------------


def _model(dialect: Dialect) -> Server:
    server = Server(dialect, clock=ManualClock(), config={"appendonly": "yes", "save": ""})
    server.connect(client_id=1)
    return server


def _run(server: Server, *argv: str) -> Reply | None:
    return server.execute(1, [a.encode() for a in argv]).reply


@pytest.mark.parametrize("name", list(DIALECTS))
def test_the_models_children_wait_for_each_other(name: str) -> None:
    """FORK-1, FORK-2: the model's own steps, in the cron's order."""
    server = _model(DIALECTS[name])
    assert _run(server, "BGSAVE") == BGSAVE_STARTED
    assert _run(server, "BGREWRITEAOF") == SCHEDULED  # FORK-2
    assert flags(_run(server, "INFO", "persistence")) == (1, 0, 1)  # type: ignore[arg-type]
    assert _run(server, "BGSAVE", "SCHEDULE") == SAVE_IN_PROGRESS  # FORK-1
    assert _run(server, "BGSAVE", "NOW") == Error("ERR syntax error")
    assert not server.persistence_step("start-rewrite")  # not while the BGSAVE's child runs
    assert server.persistence_step("bgsave-done")
    assert flags(_run(server, "INFO", "persistence")) == (0, 0, 1)  # reaped; the rewrite starts the next tick
    assert server.persistence_step("start-rewrite")
    assert _run(server, "BGSAVE") == CHILD_ACTIVE  # FORK-2
    assert _run(server, "BGSAVE", "SCHEDULE") == BGSAVE_SCHEDULED
    assert _run(server, "SAVE") == Simple("OK")  # FORK-1
    assert not server.persistence_step("start-bgsave")
    assert server.aof_rewrite_done()  # AOF-7's step; the same tick starts the scheduled BGSAVE (FORK-2)
    assert flags(_run(server, "INFO", "persistence")) == (1, 0, 0)
    assert server.persistence_step("bgsave-done") and not server.persistence_step("bgsave-done")


@pytest.mark.parametrize("name", list(DIALECTS))
def test_the_model_schedules_in_exec_as_the_dialect_does(name: str) -> None:
    """FORK-3: 7.0 and Valkey schedule both; 6.2 starts the BGSAVE, then schedules the rewrite behind it."""
    dialect = DIALECTS[name]
    server = _model(dialect)
    for argv in (["MULTI"], ["BGSAVE"], ["BGREWRITEAOF"]):
        _run(server, *argv)
    assert _run(server, "EXEC") == expected(dialect)[17]
    # the one order the cron can take them in: the rewrite first (a tick starts a scheduled rewrite before
    # it looks at a scheduled BGSAVE), whose reaping tick starts the BGSAVE (FORK-2)
    steps = ["start-rewrite", "rewrite", "bgsave-done"] if dialect.exec_schedules_children \
        else ["bgsave-done", "start-rewrite", "rewrite"]
    assert not server.persistence_step("start-bgsave")
    for kind in steps:
        assert server.persistence_step(kind) if kind != "rewrite" else server.aof_rewrite_done(), kind
    assert flags(_run(server, "INFO", "persistence")) == (0, 0, 0)  # type: ignore[arg-type]


# -- xspec serve --checked ----------------------------------------------------------------------------


def _checked_run(tmp_path: Path, name: str) -> tuple[list[Any], int, Path]:
    config = {"dir": str(tmp_path), "appendonly": "yes", "save": "", "auto-aof-rewrite-percentage": "0"}
    trace = tmp_path / "t.jsonl"
    with ServerThread(dialect=name, config=config, checker=model_checker, trace=str(trace)) as st:
        conn = RespConnection("127.0.0.1", st.port)

        def call(*argv: str) -> Reply:
            return conn.call([a.encode() for a in argv])

        def set_delay(us: int) -> None:
            st.call(st.core.config.__setitem__, "rdb-key-save-delay", str(us))

        out = script(call, set_delay)
        conn.close()
        checker = checked_run(st)
        return out, checker.divergences, trace


def _forged(trace: trace_format.Trace, argv: list[bytes], nth: int, reply: Reply) -> tuple[trace_format.Trace, int]:
    """The trace with the reply of the ``nth`` command ``argv`` replaced; and that event's number."""
    events = list(trace.events)
    at = [i for i, e in enumerate(events) if getattr(e, "cmd", None) == argv][nth]
    assert getattr(events[at], "reply", None) is not None
    events[at] = dataclasses.replace(events[at], reply=reply)  # type: ignore[type-var]
    return trace_format.Trace(trace.header, events, trace.path), at + 1


@pytest.mark.parametrize("name", first_by_default(*DIALECTS))
def test_checked_serve_and_its_trace_agree_with_the_model(tmp_path: Path, name: str) -> None:
    """`--checked`: the model takes each of the server's cron steps when the server does, and agrees with
    every answer (INFO's child fields included); the recorded trace conforms offline, and EXEC answered as
    the other dialects answer it diverges there."""
    out, divergences, path = _checked_run(tmp_path, name)
    assert out == expected(DIALECTS[name])
    assert divergences == 0
    trace = trace_format.load(path)
    verdict = check_trace(trace)
    assert verdict.status == "conform", verdict.describe()
    other = REDIS_62 if DIALECTS[name].exec_schedules_children else REDIS_70
    forged, event = _forged(trace, [b"EXEC"], 0, expected(other)[17])  # FORK-3: the other dialect's answer
    verdict = check_trace(forged)
    assert verdict.status == "diverge" and verdict.event == event, verdict.describe()


# -- the real servers, recorded ---------------------------------------------------------------------


def _record(name: str) -> trace_format.Trace:
    from xspec.traces.cluster.harness import Cluster
    from xspec.traces.cluster.nodes import find_server
    try:
        kind = find_server(REAL[name])
    except FileNotFoundError as e:
        pytest.skip(str(e))
    config = {"appendonly": "yes", "appendfsync": "always", "save": "", "auto-aof-rewrite-percentage": "0"}
    with Cluster(kind, ("a",), config=config, title="BGSAVE and BGREWRITEAOF waiting for each other (FORK-1..3)") \
            as h:
        c = h.client("a")
        side = RespConnection("127.0.0.1", h.nodes["a"].port)  # not recorded

        def set_delay(us: int) -> None:
            assert side.call([b"CONFIG", b"SET", b"rdb-key-save-delay", str(us).encode()]) == Simple("OK")

        out = script(lambda *argv: c.call(*argv), set_delay)
        side.close()
        assert out == expected(DIALECTS[name])
        return h.trace()


@pytest.mark.parametrize("name", first_by_default(*DIALECTS))
def test_a_real_servers_children_conform_to_the_model(name: str) -> None:
    """The real server's trace/2 conforms (the deployment's checker takes the cron's steps); the first
    INFO forged to show no scheduled rewrite diverges there."""
    trace = _record(name)
    verdict = check_trace(trace)
    assert verdict.status == "conform", verdict.describe()
    first_info = next(e for e in trace.events if getattr(e, "cmd", None) == [b"INFO", b"persistence"])
    reply = first_info.reply  # type: ignore[union-attr]
    assert isinstance(reply, Bulk) and reply.value is not None
    shown = Bulk(reply.value.replace(b"aof_rewrite_scheduled:1", b"aof_rewrite_scheduled:0"))
    forged, event = _forged(trace, [b"INFO", b"persistence"], 0, shown)
    verdict = check_trace(forged)
    assert verdict.status == "diverge" and verdict.event == event, verdict.describe()


# -- FLUSHALL and the children (FLUSH-6) --------------------------------------------------------------


def _changes(reply: Reply) -> int:
    return int(info_fields(reply)[b"rdb_changes_since_last_save"])


@pytest.mark.parametrize("name", ["redis-7.0", "redis-6.2"])
def test_flushall_saves_and_stops_the_child_as_the_model_says(tmp_path: Path, name: str) -> None:
    """FLUSH-6 under `--checked` with a save point: FLUSHALL saves (7.0 zeroes the changes counter, 6.2 keeps
    it) and stops a running BGSAVE's child, which the cron reaps with no file written; no divergence, the
    trace conforms offline, and a counter answered as the other dialect answers it diverges there."""
    config = {"dir": str(tmp_path), "save": "3600 1"}
    trace = tmp_path / "t.jsonl"
    with ServerThread(dialect=name, config=config, checker=model_checker, trace=str(trace)) as st:
        conn = RespConnection("127.0.0.1", st.port)

        def call(*argv: str) -> Reply:
            return conn.call([a.encode() for a in argv])

        call("SAVE")  # the changes counter is known from here on, offline too
        for i in range(5):
            call("SET", f"k{i}", "v")
        call("FLUSHALL")
        first = _changes(call("INFO", "persistence"))
        for i in range(5):
            call("SET", f"k{i}", "v")
        st.call(st.core.config.__setitem__, "rdb-key-save-delay", "400000")  # 2 s
        assert call("BGSAVE") == BGSAVE_STARTED
        call("FLUSHALL")
        st.call(st.core.config.__setitem__, "rdb-key-save-delay", "0")
        assert until(call, lambda f: f == (0, 0, 0)) == (0, 0, 0)
        second = _changes(call("INFO", "persistence"))
        conn.close()
        checker = checked_run(st)
        assert checker.divergences == 0
    assert (first, second) == ((0, 0) if name == "redis-7.0" else (11, 22))
    loaded = trace_format.load(trace)
    verdict = check_trace(loaded)
    assert verdict.status == "conform", verdict.describe()
    info = [i for i, e in enumerate(loaded.events) if getattr(e, "cmd", None) == [b"INFO", b"persistence"]]
    reply = loaded.events[info[0]].reply  # type: ignore[union-attr]
    assert isinstance(reply, Bulk)
    other = b"rdb_changes_since_last_save:11" if name == "redis-7.0" else b"rdb_changes_since_last_save:0"
    forged_reply = Bulk(reply.value.replace(f"rdb_changes_since_last_save:{first}".encode(), other))
    forged, event = _forged(loaded, [b"INFO", b"persistence"], 0, forged_reply)
    verdict = check_trace(forged)
    assert verdict.status == "diverge" and verdict.event == event, verdict.describe()
