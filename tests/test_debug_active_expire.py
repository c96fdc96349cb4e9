"""DEBUG SET-ACTIVE-EXPIRE stops and restarts the active expiry cycle (spec/rules/debug.md DEBUG-2).

Real Redis 7.0.15 beside ``xspec serve``: with the cycle stopped a key past its time stays stored
(DBSIZE counts it, ``expired_keys`` does not move) until the cycle is started again or a command
reads it; the argument is read with C's ``atoi``. The model's active expiry step obeys it too.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from xspec.models import ManualClock, Server
from xspec.reference.server import ServerThread
from xspec.spec.ids import c_atoi
from xspec.spec.resp import OK
from xspec.traces.scenarios.runner import start_redis, stop_process

T0 = 1_700_000_000_000


@pytest.mark.parametrize(("arg", "value"), [(b"0", 0), (b"1", 1), (b" -2x", -2), (b"+7", 7), (b"abc", 0),
                                            (b"", 0), (b"3\x009", 3), (b"\t12", 12)])
def test_c_atoi(arg: bytes, value: int) -> None:
    assert c_atoi(arg) == value


def _session(port: int) -> dict[str, Any]:
    """Keys a few ms from their time, the cycle stopped, started with a word atoi reads as 0, then
    with ``1``: what DBSIZE and ``expired_keys`` say at each stage."""
    r = redis.Redis(port=port, socket_timeout=5)
    out: dict[str, Any] = {}
    try:
        r.flushall()
        before = r.info("stats")["expired_keys"]
        out["stop"] = r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        r.set("a", "v", px=20)
        r.set("b", "v", px=20)
        time.sleep(0.4)  # four of the cron's ticks at hz 10
        out["stopped"] = (r.dbsize(), r.info("stats")["expired_keys"] - before)
        out["word"] = r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "yes")
        time.sleep(0.4)
        out["after a word"] = (r.dbsize(), r.info("stats")["expired_keys"] - before)
        out["read"] = (r.get("a"), r.dbsize(), r.info("stats")["expired_keys"] - before)  # lazy expiry goes on
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        deadline = time.monotonic() + 5
        while r.dbsize() and time.monotonic() < deadline:
            time.sleep(0.05)
        out["started"] = (r.dbsize(), r.info("stats")["expired_keys"] - before)
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        r.close()
    return out


@pytest.fixture(scope="module")
def real_port(real_binary: str) -> Iterator[int]:
    with tempfile.TemporaryDirectory(prefix="xspec-active-expire-") as workdir:
        proc, port = start_redis(real_binary, workdir, ("--enable-debug-command", "yes"))
        try:
            yield port
        finally:
            stop_process(proc)


def test_xspec_serve_stops_the_cycle_as_redis(real_port: int) -> None:
    real = _session(real_port)
    assert real == {"stop": b"OK", "stopped": (2, 0), "word": b"OK", "after a word": (2, 0),
                    "read": (None, 1, 1), "started": (0, 2)}
    with ServerThread(config={"enable-debug-command": "yes"}) as st:
        assert _session(st.port) == real


def test_the_models_cycle_deletes_nothing_while_stopped() -> None:
    clock = ManualClock(T0)
    server = Server(clock=clock, config={"enable-debug-command": "yes"})
    client = server.connect()

    def run(*args: str) -> Any:
        return server.execute(client, [a.encode() for a in args])

    run("SET", "k", "v", "PX", "10")
    assert run("DEBUG", "SET-ACTIVE-EXPIRE", "0").reply == OK
    clock.ms += 100
    server.active_expire(0, b"k")  # DEBUG-2: the step deletes nothing
    assert b"k" in server.dbs[0]
    run("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    server.active_expire(0, b"k")
    assert b"k" not in server.dbs[0]
