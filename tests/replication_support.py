"""What the tests of `xspec serve`'s replication share: waiting for a condition, a replica's link
state, and a real redis-server 7.0.15 of a test module's own (started on a free port, stopped by pid)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from typing import Any

import redis

from xspec.traces.scenarios.runner import start_redis, stop_process

NO_SYNC_DELAY = {"repl-diskless-sync-delay": "0"}


def wait_until(check: Callable[[], Any], timeout: float = 10.0, what: str = "condition", every: float = 0.05) -> Any:
    """``check()``'s first true value, polled every ``every`` seconds; fails the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


def wait_for_transfer(cluster: Any, replica: str) -> None:
    """Wait until ``replica`` of a recording ``Cluster`` is in its full sync's transfer (REPL-19)."""
    wait_until(lambda: cluster.info(replica).get("master_sync_in_progress") == "1", timeout=10, every=0.02,
               what=f"{replica}'s transfer")


def link_up(r: redis.Redis) -> bool:
    """Whether the replica ``r`` says its link to its primary is up."""
    return bool(r.info("replication").get("master_link_status") == "up")


class Real:
    """A real redis-server 7.0.15 started for a test module, with no diskless-sync delay; stopped by pid."""

    def __init__(self, binary: str, prefix: str = "xspec-repl-") -> None:
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.proc, self.port = start_redis(binary, self.dir)
        self.r = redis.Redis(port=self.port)
        self.r.config_set("repl-diskless-sync-delay", 0)

    def stop(self) -> None:
        stop_process(self.proc)

