"""The append-only file of `xspec serve` (reference/aof.py, reference/propagation.py) against Redis 7.0.15.

A workload of stream commands (trims with ``~``, consumer groups, NOACK, claims, acknowledgements,
transactions, several databases) and of the other types runs on `xspec serve` with ``appendonly yes``
and a BGREWRITEAOF in the middle: DEBUG LOADAOF gives the same data back, ``redis-check-aof`` accepts the
directory, and Redis 7.0.15 started on a copy of it serves the same data; the AOF directory Redis writes
for the same workload loads into `xspec serve` as the same data. A cut tail is truncated as Redis does
(``aof-load-truncated``), or refused in one line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_py

from tests.support import aof_commands, keyspace_state
from xspec.reference.server import ServerThread
from xspec.traces.harness.servers import find_redis_server
from xspec.traces.scenarios.runner import free_port, stop_process

# Loading sets the consumers' seen-times, and lays the entries out in nodes of the loading server's size.
_TIMES = {"seen-time", "active-time", "inactive", "time_since_delivered", "idle", "radix-tree-keys",
          "radix-tree-nodes"}


def state(r: redis_py.Redis) -> dict[str, Any]:
    """Databases 0 and 3 as commands show them; consumers' seen-times left out (loading sets them)."""
    return keyspace_state(r, (0, 3), ignored=frozenset(_TIMES))


def without_times(st: dict[str, Any]) -> dict[str, Any]:
    """A state with the PEL's delivery times left out: two servers' clocks differ."""
    out = {}
    for name, value in st.items():
        if isinstance(value, list) and len(value) == 2 and isinstance(value[0], dict) and "groups" in value[0]:
            info = dict(value[0])
            info["groups"] = [{**g, "pending": [[p[0], p[1], p[3]] for p in g["pending"]],
                               "consumers": [{**c, "pending": [[p[0], p[2]] for p in c["pending"]]}
                                             for c in g["consumers"]]} for g in info["groups"]]
            value = [info, value[1]]
        out[name] = value
    return out


def workload(r: redis_py.Redis, rewrite_at: int = 60) -> None:
    r.config_set("stream-node-max-entries", 10)
    for i in range(120):
        r.xadd("s", {"f": str(i), "n": "x" * (i % 9)}, id=f"{1000 + i // 3}-*", maxlen=50, approximate=True)
        if i == rewrite_at:
            r.bgrewriteaof()
    r.xadd("s", {"m": "1"}, id="2000-*", minid="0-1", approximate=True, limit=5)
    r.xtrim("s", maxlen=40, approximate=True)
    r.xgroup_create("s", "g", id="0")
    r.xreadgroup("g", "alice", {"s": ">"}, count=5)
    r.xreadgroup("g", "bob", {"s": ">"}, count=3, noack=True)
    r.xreadgroup("g", "alice", {"s": "0"})  # history: delivery counts move
    first = r.xpending_range("s", "g", "-", "+", 1)[0]["message_id"]
    r.xclaim("s", "g", "carol", 0, [first])
    r.xautoclaim("s", "g", "dave", 0, "0-0", count=2)
    r.xack("s", "g", r.xpending_range("s", "g", "-", "+", 1)[0]["message_id"])
    r.xdel("s", r.xrange("s", count=1)[0][0])
    r.xgroup_createconsumer("s", "g", "idle")
    r.xgroup_create("s", "g2", id="$", entries_read=3)
    pipe = r.pipeline(transaction=True)
    pipe.xadd("s", {"in": "multi"}, id="5000-0")
    pipe.set("k", "v")
    pipe.execute()
    r.xadd("empty", {"a": "b"}, id="7-7")
    r.xdel("empty", "7-7")
    r.rpush("l", *range(10))
    r.lpop("l")
    r.sadd("set", "a", "b", 3)
    r.execute_command("SELECT", 3)
    r.set("in3", "x")
    r.xadd("s3", {"a": "1"}, id="1-*")
    r.execute_command("SELECT", 0)


def _wait_ping(port: int, proc: subprocess.Popen[bytes] | None = None) -> redis_py.Redis:
    client = redis_py.Redis(port=port)
    for _ in range(400):
        try:
            client.ping()
            return client
        except (redis_py.ConnectionError, redis_py.ResponseError):
            if proc is not None and proc.poll() is not None:
                raise RuntimeError("the server exited") from None
            time.sleep(0.05)
    raise RuntimeError("the server did not answer")


class RealRedis:
    """A redis-server 7.0.15 with the AOF on, in ``folder``."""

    def __init__(self, folder: Path, *extra: str) -> None:
        binary = find_redis_server("7.0")
        if binary is None:
            pytest.skip("redis-server 7.0 is not installed")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
             "--dir", str(folder), "--enable-debug-command", "yes", "--logfile", str(folder / "redis.log"), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = _wait_ping(self.port, self.proc)

    def __enter__(self) -> redis_py.Redis:
        return self.client

    def __exit__(self, *exc: object) -> None:
        stop_process(self.proc)


def _rewrite_done(r: redis_py.Redis) -> None:
    for _ in range(200):
        info = r.info("persistence")
        if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
            return
        time.sleep(0.02)


@pytest.fixture(params=["yes", "no"], ids=["rdb-preamble", "commands"])
def written_by_xspec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """An AOF directory `xspec serve` wrote for the workload (fsync always), and the data it holds."""
    folder = tmp_path / "xspec"
    folder.mkdir()
    config = {"dir": str(folder), "appendonly": "yes", "appendfsync": "always",
              "aof-use-rdb-preamble": request.param}
    with ServerThread(config=config, enable_debug="yes") as st:
        r = redis_py.Redis(port=st.port)
        workload(r)
        _rewrite_done(r)
        assert r.execute_command("DEBUG", "LOADAOF") == b"OK"
        expected = state(r)
    yield folder, expected


def test_redis_loads_the_aof_xspec_serve_writes(written_by_xspec: tuple[Path, dict[str, Any]],
                                                 tmp_path: Path) -> None:
    folder, expected = written_by_xspec
    aofdir = folder / "appendonlydir"
    manifest = (aofdir / "appendonly.aof.manifest").read_text()
    assert manifest.splitlines()[0].startswith("file appendonly.aof.2.base.")  # the rewrite replaced base 1
    assert len(list(aofdir.iterdir())) == 3  # base, incr, manifest: the older files are gone
    check = shutil.which("redis-check-aof") or "/usr/bin/redis-check-aof"
    if os.path.exists(check):
        done = subprocess.run([check, str(aofdir / "appendonly.aof.manifest")], capture_output=True, text=True)
        assert done.returncode == 0 and "is valid" in done.stdout, done.stdout + done.stderr
    copy = tmp_path / "redis"
    shutil.copytree(folder, copy)
    with RealRedis(copy) as r:
        assert state(r) == expected


def test_xspec_serve_loads_the_aof_redis_writes(tmp_path: Path) -> None:
    folder = tmp_path / "redis"
    folder.mkdir()
    with RealRedis(folder, "--appendfsync", "always") as r:
        workload(r)
        _rewrite_done(r)
        r.set("after", "rewrite")
        assert r.execute_command("DEBUG", "LOADAOF") == b"OK"
        expected = state(r)
    copy = tmp_path / "xspec"
    shutil.copytree(folder, copy)
    with ServerThread(config={"dir": str(copy), "appendonly": "yes"}) as st:
        assert state(redis_py.Redis(port=st.port)) == expected


def test_the_same_workload_reloads_to_the_same_data_on_both(tmp_path: Path) -> None:
    """What each server propagates, as its own DEBUG LOADAOF shows it (a read of a consumer's history
    is not propagated by 7.0: its delivery counts go back on both)."""
    (tmp_path / "redis").mkdir()
    with RealRedis(tmp_path / "redis", "--aof-use-rdb-preamble", "no") as r:
        workload(r, rewrite_at=1000)
        assert r.execute_command("DEBUG", "LOADAOF") == b"OK"
        theirs = without_times(state(r))
    config = {"dir": str(tmp_path), "appendonly": "yes", "aof-use-rdb-preamble": "no"}
    with ServerThread(config=config, enable_debug="yes") as st:
        ours = redis_py.Redis(port=st.port)
        workload(ours, rewrite_at=1000)
        assert ours.execute_command("DEBUG", "LOADAOF") == b"OK"
        assert without_times(state(ours)) == theirs


def _wait_blocked(r: redis_py.Redis) -> None:
    for _ in range(200):
        if r.info("clients")["blocked_clients"]:
            return
        time.sleep(0.01)


def blocking_workload(r: redis_py.Redis) -> None:
    """Claims of deleted entries, XGROUP SETID, XSETID, blocked XREADGROUPs (NOACK or not) and a blocked
    BLPOP served by later writes, DELCONSUMER, DESTROY."""
    port = r.connection_pool.connection_kwargs["port"]
    for n in (1, 2, 3):
        r.xadd("t", {"a": str(n)}, id=f"{n}-1")
    r.xgroup_create("t", "g", id="0")
    r.xreadgroup("g", "x", {"t": ">"}, count=2)
    r.xdel("t", "1-1")
    r.xclaim("t", "g", "y", 0, ["1-1", "2-1"])  # 1-1 deleted: its NACK leaves the PEL
    r.xreadgroup("g", "x", {"t": ">"})
    r.xdel("t", "3-1")
    r.xautoclaim("t", "g", "z", 0, "0-0")
    r.xgroup_setid("t", "g", "1-1", entries_read=1)
    r.execute_command("XSETID", "t", "9-9", "ENTRIESADDED", 10, "MAXDELETEDID", "2-2")

    def blocked(noack: bool) -> None:
        redis_py.Redis(port=port).xreadgroup("g", f"blocked{noack}", {"t": ">"}, block=5000, noack=noack)

    for noack in (True, False):
        r.xgroup_setid("t", "g", "$")
        reader = threading.Thread(target=blocked, args=(noack,))
        reader.start()
        _wait_blocked(r)
        r.xadd("t", {"n": str(noack)}, id=f"{20 - noack}-1")
        reader.join()
    popper = threading.Thread(target=lambda: redis_py.Redis(port=port).blpop(["l1", "l2"], 5))
    popper.start()
    _wait_blocked(r)
    r.rpush("l2", "v")
    popper.join()
    r.xgroup_delconsumer("t", "g", "z")
    r.xgroup_destroy("t", "g")


def test_the_aof_holds_what_redis_writes_for_the_same_commands(tmp_path: Path) -> None:
    """AOF-1: the incremental file holds, command for command, what Redis 7.0.15's holds (XADD's IDs,
    trims made exact, XREADGROUP as XCLAIMs / XGROUP SETID / CREATECONSUMER, claims, MULTI/EXEC units)."""
    (tmp_path / "redis").mkdir()
    with RealRedis(tmp_path / "redis") as r:
        workload(r, rewrite_at=1000)
        blocking_workload(r)
    with ServerThread(config={"dir": str(tmp_path), "appendonly": "yes"}) as st:
        workload(redis_py.Redis(port=st.port), rewrite_at=1000)
        blocking_workload(redis_py.Redis(port=st.port))
    name = "appendonly.aof.1.incr.aof"
    assert aof_commands(tmp_path / "appendonlydir" / name) == aof_commands(tmp_path / "redis" / "appendonlydir" / name)


def test_appendonly_turned_on_at_run_time_writes_a_base_then_the_commands(tmp_path: Path) -> None:
    with ServerThread(config={"dir": str(tmp_path)}, enable_debug="yes") as st:
        r = redis_py.Redis(port=st.port)
        r.xadd("s", {"a": "1"}, id="1-1")
        assert r.info("persistence")["aof_enabled"] == 0
        r.config_set("appendonly", "yes")
        assert r.info("persistence")["aof_enabled"] == 1
        r.xadd("s", {"a": "2"})
        expected = state(r)
        assert r.execute_command("DEBUG", "LOADAOF") == b"OK"
        assert state(r) == expected
        names = sorted(os.listdir(tmp_path / "appendonlydir"))
        assert names == ["appendonly.aof.1.base.rdb", "appendonly.aof.1.incr.aof", "appendonly.aof.manifest"]
        incr = (tmp_path / "appendonlydir" / "appendonly.aof.1.incr.aof").read_bytes()
        assert incr.lower().startswith(b"*2\r\n$6\r\nselect\r\n$1\r\n0\r\n*5\r\n$4\r\nxadd\r\n$1\r\ns\r\n")
        assert b"*" not in incr.lower().split(b"xadd")[1].split(b"\r\n")[4]  # the ID is the one added
        r.config_set("appendonly", "no")
        assert r.info("persistence")["aof_enabled"] == 0


def _serve(folder: Path, *options: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "xspec", "serve", "--port", "0", "--dir", str(folder),
                             *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_cut_tail_is_truncated_or_refused_in_one_line(tmp_path: Path) -> None:
    with ServerThread(config={"dir": str(tmp_path), "appendonly": "yes"}) as st:
        r = redis_py.Redis(port=st.port)
        r.xadd("s", {"a": "1"}, id="1-1")
        r.xadd("s", {"a": "2"}, id="2-1")
    incr = tmp_path / "appendonlydir" / "appendonly.aof.1.incr.aof"
    whole = incr.read_bytes()
    incr.write_bytes(whole[:-7])  # the second XADD cut short
    proc = _serve(tmp_path, "--appendonly", "yes", "--aof-load-truncated", "no")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and "Unexpected end of file" in lines[0] and "Traceback" not in lines[0], lines
    with ServerThread(config={"dir": str(tmp_path), "appendonly": "yes"}) as st:
        r = redis_py.Redis(port=st.port)
        assert [e[0] for e in r.xrange("s")] == [b"1-1"]  # aof-load-truncated yes: up to the last whole command
        r.xadd("s", {"a": "3"}, id="3-1")
    assert incr.read_bytes().lower().count(b"xadd") == 2  # the cut command was dropped from the file


def test_with_appendonly_the_rdb_file_is_not_loaded_even_without_an_aof(tmp_path: Path) -> None:
    """AOF-4, as 7.0.15 does: a dump.rdb beside no AOF directory is ignored; a first base is written."""
    with ServerThread(config={"dir": str(tmp_path)}) as st:
        r = redis_py.Redis(port=st.port)
        r.set("k", "v")
        r.save()
    with ServerThread(config={"dir": str(tmp_path), "appendonly": "yes"}) as st:
        assert redis_py.Redis(port=st.port).dbsize() == 0
    assert sorted(os.listdir(tmp_path / "appendonlydir")) == [
        "appendonly.aof.1.base.rdb", "appendonly.aof.1.incr.aof", "appendonly.aof.manifest"]


def test_appendfsync_always_writes_before_the_reply(tmp_path: Path) -> None:
    with ServerThread(config={"dir": str(tmp_path), "appendonly": "yes", "appendfsync": "always"}) as st:
        r = redis_py.Redis(port=st.port)
        r.xadd("s", {"a": "1"}, id="1-1")
        assert b"1-1" in (tmp_path / "appendonlydir" / "appendonly.aof.1.incr.aof").read_bytes()
        assert r.bgrewriteaof() is True
        _rewrite_done(r)
        r.xadd("s", {"a": "2"}, id="2-1")
        assert b"2-1" in (tmp_path / "appendonlydir" / "appendonly.aof.2.incr.aof").read_bytes()
