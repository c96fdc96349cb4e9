"""Failed AOF rewrites postpone the cron's next ones on 7.0 and Valkey, not on 6.2 (spec/rules/replication.md
AOF-LIMIT-1), on the real servers and on `xspec serve --checked`.

The automatic rewrite (AOF-AUTO-1) is made due while ``rdb-key-save-delay`` holds every child; its child is
killed with SIGKILL three times (the cron starts the next at once). Then 7.0.15 and Valkey 9.1.2 log the
limit and start none, while 6.2.14 goes on; a BGREWRITEAOF still starts a rewrite. Both sides answer the
same failure counts, and the model beside our server agrees with every answer (it counts the failures the
server tells it of: its ``rewrite-failed`` step).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_py

from tests.support import assert_no_divergence, first_by_default, start_real, stop_all
from xspec.commands.serve import model_checker
from xspec.reference.persistence import persistence_of
from xspec.reference.server import ServerThread
from xspec.traces.scenarios.runner import stop_process

LIMIT_LINE = "Background AOF rewrite has repeatedly failed and triggered the limit, will retry in 1 minutes"


class Target:
    """One server: a client, a setter of parameters no client sets here, its rewrite child's pid, its log."""

    def __init__(self, r: redis_py.Redis, set_config: Callable[[str, str], None],
                 child: Callable[[], int | None], log: Callable[[], str]) -> None:
        self.r, self.set_config, self.child, self.log = r, set_config, child, log


@pytest.fixture
def start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[str, str], Target]]:
    stops: list[Callable[[], None]] = []
    config = {"appendonly": "yes", "appendfsync": "always", "save": "", "auto-aof-rewrite-percentage": "0"}

    def make(kind: str, dialect: str) -> Target:
        folder = tmp_path / kind
        folder.mkdir()
        if kind == "real":
            proc, port = start_real(dialect, folder, config)
            stops.append(lambda: stop_process(proc))
            r = redis_py.Redis(port=port)

            def real_child() -> int | None:
                out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
                return int(out[0]) if out else None

            def set_config(name: str, value: str) -> None:
                r.config_set(name, value)

            return Target(r, set_config, real_child,
                          lambda: (folder / f"redis-{port}.log").read_text())
        st = ServerThread(dialect=dialect, config={"dir": str(folder), **config}, checker=model_checker)
        st.__enter__()
        stops.append(st.__exit__)
        stops.append(lambda: assert_no_divergence(st))

        def our_child() -> int | None:
            child = st.call(lambda: persistence_of(st.core).child)
            return None if child is None or child.kind != "aof" else int(child.pid)

        caplog.set_level(logging.INFO, logger="xspec.serve")
        return Target(redis_py.Redis(port=st.port), lambda n, v: st.call(st.core.config.__setitem__, n, v),
                      our_child, lambda: caplog.text)

    yield make
    stop_all(stops)


def _wait(target: Target, running: bool, tries: int = 300) -> bool:
    for _ in range(tries):
        info = target.r.info("persistence")
        if bool(info["aof_rewrite_in_progress"]) == running and (running or target.child() is None):
            return True
        time.sleep(0.01)
    return False


def _reaped(target: Target, pid: int) -> None:
    """The killed child is reaped (a zombie is still listed until then); the cron may have started the next."""
    for _ in range(500):
        if target.child() != pid:
            return
        time.sleep(0.01)
    raise AssertionError("the killed child was never reaped")


def failures_script(target: Target) -> list[Any]:
    """Three automatic rewrites killed; whether the cron starts a fourth; a BGREWRITEAOF by hand."""
    for i in range(5):
        target.r.set(f"k{i}", "v" * 50)
    target.set_config("rdb-key-save-delay", "1000000")  # a second a key: no child ends by itself
    target.set_config("auto-aof-rewrite-min-size", "100")
    target.set_config("auto-aof-rewrite-percentage", "10")
    out: list[Any] = []
    for _ in range(3):
        assert _wait(target, True), "no automatic rewrite started"
        pid = target.child()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        _reaped(target, pid)
        out.append(target.r.info("persistence").get("aof_rewrites_consecutive_failures"))
    out.append(_wait(target, True, 60))  # 6.2 has started the next (a tick: 0.1 s); 7.0 and Valkey wait a minute
    out.append(LIMIT_LINE in target.log())
    if not out[-2]:
        out.append(target.r.execute_command("BGREWRITEAOF"))  # not limited: started (redis-py's True)
    target.set_config("auto-aof-rewrite-percentage", "0")
    pid = target.child()
    if pid is not None:
        os.kill(pid, signal.SIGKILL)  # the last one ends too
        _reaped(target, pid)
    return out


@pytest.mark.parametrize("dialect", first_by_default("redis-7.0", "redis-6.2", "valkey-9.1"))
def test_failed_rewrites_postpone_the_crons_as_the_real_server_does(start, dialect: str) -> None:
    real, ours = (failures_script(start(kind, dialect)) for kind in ("real", "ours"))
    assert ours == real
    if dialect == "redis-6.2":
        assert real == [None, None, None, True, False]  # no counter, no limit
    else:
        assert real == [1, 2, 3, False, True, True]
