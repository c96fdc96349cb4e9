"""CONFIG SET appendonly yes while a BGSAVE's child runs (spec/rules/replication.md AOF-SCHEDULE-1), and the
testing knobs CONFIG SET takes at run time (spec/rules/server.md CONFIG-DIALECT-3).

``startAppendOnly`` does not fork a second child: it schedules the AOF's first rewrite, which the cron starts
once the BGSAVE's child is reaped; until then nothing goes into the AOF (the rewrite's base holds it). Run
on the real Redis 7.0.15, 6.2.14 and Valkey 9.1.2 and on ``xspec serve --checked`` in the same dialect: the
same INFO fields at each moment, the same data after DEBUG LOADAOF, and no divergence from the model.
``rdb-key-save-delay`` is set with CONFIG SET on both sides (7.0 and Valkey hide it from patterns).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_py

from tests.support import assert_no_divergence, first_by_default, start_real, stop_all
from xspec.commands.serve import model_checker
from xspec.reference.server import ServerThread
from xspec.traces.scenarios.runner import stop_process

DIALECTS = ["redis-7.0", "redis-6.2", "valkey-9.1"]
FIELDS = ("rdb_bgsave_in_progress", "aof_enabled", "aof_rewrite_in_progress", "aof_rewrite_scheduled")


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[[str, str], redis_py.Redis]]:
    """``start(kind, dialect)``: the real server (``real``) or ``xspec serve --checked`` (``ours``)."""
    stops: list[Callable[[], None]] = []
    config = {"save": "", "appendonly": "no", "appendfsync": "always", "enable-debug-command": "yes"}

    def make(kind: str, dialect: str) -> redis_py.Redis:
        folder = tmp_path / kind
        folder.mkdir()
        if kind == "real":
            proc, port = start_real(dialect, folder, config if dialect != "redis-6.2" else
                                    {k: v for k, v in config.items() if k != "enable-debug-command"})
            stops.append(lambda: stop_process(proc))
            return redis_py.Redis(port=port, socket_timeout=20)
        st = ServerThread(dialect=dialect, config={"dir": str(folder), **config}, checker=model_checker)
        st.__enter__()
        stops.append(st.__exit__)
        stops.append(lambda: assert_no_divergence(st))
        return redis_py.Redis(port=st.port, socket_timeout=20)

    yield make
    stop_all(stops)


def _fields(r: redis_py.Redis) -> tuple[int, ...]:
    info = r.info("persistence")
    return tuple(int(info[f]) for f in FIELDS)


def _until(r: redis_py.Redis, wanted: Callable[[tuple[int, ...]], bool]) -> tuple[int, ...]:
    for _ in range(1000):
        got = _fields(r)
        if wanted(got):
            return got
        time.sleep(0.01)
    raise AssertionError(f"INFO never showed what was awaited; last {got}")


def scheduled_script(r: redis_py.Redis) -> list[Any]:
    """BGSAVE held 0.6 s, then appendonly turned on: the rewrite waits for the child, then runs; a write
    before and after it; what DEBUG LOADAOF gives back."""
    for i in range(12):
        r.set(f"k{i}", "v")
    out: list[Any] = [r.config_set("rdb-key-save-delay", "50000")]  # the BGSAVE's child: 12 keys, 50 ms each
    out.append(r.bgsave())
    r.config_set("rdb-key-save-delay", "0")  # the child took its own copy at the fork; the rewrite is quick
    out.append(r.config_set("appendonly", "yes"))
    out.append(_fields(r))  # AOF-SCHEDULE-1: the rewrite scheduled, none running
    out.append(r.set("during", "1"))  # held in no file yet: the rewrite's base will hold it
    out.append(_until(r, lambda f: not f[0] and not f[3] and not f[2]))  # the child reaped, the rewrite done
    out.append(r.set("after", "2"))
    out.append(r.execute_command("DEBUG", "LOADAOF"))
    out.append(sorted(r.keys()))
    out.append(r.execute_command("BGREWRITEAOF"))
    _until(r, lambda f: not f[2])
    return out


@pytest.mark.parametrize("dialect", first_by_default(*DIALECTS))
def test_appendonly_yes_during_a_bgsave_schedules_the_rewrite(start, dialect: str) -> None:
    real, ours = (scheduled_script(start(kind, dialect)) for kind in ("real", "ours"))
    assert real[3] == (1, 1, 0, 1)  # AOF-SCHEDULE-1, measured
    assert ours == real


KNOBS: tuple[tuple[str, ...], ...] = (
    ("CONFIG", "SET", "rdb-key-save-delay", "abc"), ("CONFIG", "SET", "rdb-key-save-delay", "-5"),
    ("CONFIG", "GET", "rdb-key-save-delay"), ("CONFIG", "SET", "key-load-delay", "99999999999"),
    ("CONFIG", "SET", "key-load-delay", "12"), ("CONFIG", "GET", "key-load-delay"),
    ("CONFIG", "SET", "watchdog-period", "0"), ("CONFIG", "GET", "use-exit-on-panic"),
    ("CONFIG", "GET", "loading-process-events-interval-bytes"), ("CONFIG", "GET", "*delay*"),
    ("CONFIG", "SET", "appendonly", "maybe"), ("CONFIG", "SET", "rdb-key-save-delay", "100000"))


def knobs_script(r: redis_py.Redis) -> list[Any]:
    """The knobs' replies, then a BGSAVE of 5 keys held 0.1 s a key by the delay set at run time."""
    out: list[Any] = []
    for args in KNOBS:
        try:
            reply = r.execute_command(*args)
        except redis_py.ResponseError as e:
            reply = f"ERR {e}"
        out.append(sorted(reply.items()) if isinstance(reply, dict) else reply)
    for i in range(5):
        r.set(f"k{i}", "v")
    began = time.monotonic()
    r.bgsave()
    while r.info("persistence")["rdb_bgsave_in_progress"]:
        time.sleep(0.02)
    out.append(time.monotonic() - began >= 0.45)  # 5 keys, 0.1 s each
    return out


@pytest.mark.parametrize("dialect", first_by_default(*DIALECTS))
def test_testing_knobs_are_set_at_run_time(tmp_path: Path, dialect: str) -> None:
    """CONFIG-DIALECT-3: 7.0 and Valkey find the knobs by exact name only; a delay set at run time holds
    the next child."""
    folder = tmp_path / "real"
    folder.mkdir()
    proc, port = start_real(dialect, folder, {})
    try:
        real = knobs_script(redis_py.Redis(port=port, socket_timeout=20))
    finally:
        stop_process(proc)
    with ServerThread(dialect=dialect, config={"dir": str(tmp_path), "save": ""}, checker=model_checker) as st:
        ours = knobs_script(redis_py.Redis(port=st.port, socket_timeout=20))
        assert_no_divergence(st)
    assert real[-1] is True
    assert ours == real


@pytest.mark.parametrize("dialect", first_by_default("redis-7.0", "redis-6.2", "valkey-9.1"))
def test_saving_reads_no_clock_in_the_command(tmp_path: Path, dialect: str, caplog: pytest.LogCaptureFixture) -> None:
    """The file's ctime is no reading of SAVE, DEBUG RELOAD or CONFIG SET appendonly yes, and DEBUG RELOAD's
    load reads the clock afresh beside Valkey's per-command snapshot, on both sides: a wall-clock
    ``--checked`` server warns of no difference in readings."""
    caplog.set_level(logging.WARNING, logger="xspec.serve")
    config = {"dir": str(tmp_path), "save": "", "enable-debug-command": "yes"}
    with ServerThread(dialect=dialect, config=config, checker=model_checker) as st:
        r = redis_py.Redis(port=st.port, socket_timeout=20)
        r.set("a", "1")
        assert r.save() and r.execute_command("DEBUG", "RELOAD") == b"OK" and r.config_set("appendonly", "yes")
        assert r.get("a") == b"1"
    assert_no_divergence(st)
    assert "clock readings differ" not in caplog.text
