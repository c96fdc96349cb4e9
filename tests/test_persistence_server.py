"""SAVE, BGSAVE, LASTSAVE, save points, loading at start and DEBUG RELOAD in `xspec serve` (reference/persistence.py).

The replies are compared with Redis 7.0.15's for the same commands; BGSAVE is checked to be a snapshot
of the moment it was asked for while the server goes on taking writes; the bad inputs of `xspec serve`
(a file it cannot load, a folder that does not exist) give one line and a nonzero exit.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis as redis_py

from tests.support import wait_for_ping
from xspec.reference.server import ServerThread
from xspec.spec import rdb_file
from xspec.traces.harness.servers import find_redis_server
from xspec.traces.scenarios.runner import free_port, stop_process

SCRIPT: list[tuple[Any, ...]] = [
    ("BGSAVE", "SCHEDULE", "EXTRA"),
    ("BGSAVE", "NOW"),
    ("SAVE", "EXTRA"),
    ("LASTSAVE", "EXTRA"),
    ("DEBUG", "RELOAD", "BOGUS"),
    ("XADD", "s", "1-1", "a", "b"),
    ("SAVE",),
    ("DEBUG", "RELOAD"),
    ("DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"),
    ("XLEN", "s"),
    ("DBSIZE",),
]


def _replies(port: int) -> list[Any]:
    r = redis_py.Redis(port=port)
    out: list[Any] = []
    for cmd in SCRIPT:
        try:
            out.append(r.execute_command(*cmd))
        except redis_py.ResponseError as e:
            out.append(("error", str(e)))
    return out


def test_the_commands_answer_as_redis_does(tmp_path: Path) -> None:
    binary = find_redis_server("7.0")
    if binary is None:
        pytest.skip("redis-server 7.0 is not installed")
    (tmp_path / "real").mkdir()
    (tmp_path / "ours").mkdir()
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path / "real"), "--enable-debug-command", "yes",
                             "--logfile", str(tmp_path / "real" / "log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_ping(port)
        theirs = _replies(port)
    finally:
        stop_process(proc)
    with ServerThread(config={"dir": str(tmp_path / "ours")}, enable_debug="yes") as st:
        ours = _replies(st.port)
    assert ours == theirs
    # both files hold the same stream
    real = rdb_file.read_rdb((tmp_path / "real" / "dump.rdb").read_bytes(), 10)
    mine = rdb_file.read_rdb((tmp_path / "ours" / "dump.rdb").read_bytes(), 10)
    assert real.dbs == mine.dbs


def test_bgsave_is_a_snapshot_of_its_moment_and_lastsave_moves(tmp_path: Path) -> None:
    with ServerThread(config={"dir": str(tmp_path)}) as st:
        r = redis_py.Redis(port=st.port)
        for i in range(2000):
            r.xadd("s", {"f": "x" * 50}, id=f"{i + 1}-1")
        before = r.lastsave()
        assert r.info("persistence")["rdb_changes_since_last_save"] == 2000
        assert r.bgsave()
        r.xadd("s", {"after": "fork"}, id="99999-1")  # served while the child writes
        try:
            r.bgsave()  # the child may be gone already
        except redis_py.ResponseError as e:
            assert str(e) == "Background save already in progress"
        for _ in range(200):
            if not r.info("persistence")["rdb_bgsave_in_progress"]:
                break
            time.sleep(0.02)
        info = r.info("persistence")
        assert info["rdb_last_bgsave_status"] == "ok" and info["rdb_saves"] >= 1
        assert info["rdb_changes_since_last_save"] == 1  # the XADD after the fork is not in the file
        assert r.lastsave() >= before
    f = rdb_file.read_rdb((tmp_path / "dump.rdb").read_bytes(), 10)
    (key,) = f.dbs[0]
    assert key.value.length == 2000  # type: ignore[union-attr]


def test_a_save_point_saves_and_the_file_loads_at_start(tmp_path: Path) -> None:
    with ServerThread(config={"dir": str(tmp_path), "save": "1 2"}, clock="virtual") as st:
        r = redis_py.Redis(port=st.port)
        r.xadd("s", {"a": "1"}, id="1-1")
        r.xgroup_create("s", "g", id="0")
        r.xreadgroup("g", "alice", {"s": ">"})
        r.execute_command("XSPEC.CLOCK", "ADVANCE", 2000)  # the save point: 2 changes, more than 1 s
        for _ in range(100):
            if (tmp_path / "dump.rdb").exists() and not r.info("persistence")["rdb_bgsave_in_progress"]:
                break
            time.sleep(0.05)
        assert (tmp_path / "dump.rdb").exists()
        expected = r.xinfo_stream("s", full=True)
    with ServerThread(config={"dir": str(tmp_path)}, clock="virtual") as st:
        assert redis_py.Redis(port=st.port).xinfo_stream("s", full=True) == expected


def _serve(*options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xspec", "serve", "--port", "0", *options],
                          capture_output=True, text=True, timeout=60)


def test_a_file_that_cannot_load_stops_the_server_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "dump.rdb").write_bytes(b"REDIS0010\xfe\x00garbage")
    done = _serve("--dir", str(tmp_path))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot load the RDB file" in lines[0], done.stderr
    (tmp_path / "dump.rdb").write_bytes(rdb_file.write_rdb(rdb_file.RdbFile(12)))
    done = _serve("--dir", str(tmp_path))  # 7.0 reads versions up to 10
    assert done.returncode == 1 and "Can't handle RDB format version 12" in done.stderr
    assert done.stderr.count("\n") == 1


def test_a_missing_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    done = _serve("--dir", str(tmp_path / "missing"))
    assert done.returncode == 2 and "does not exist" in done.stderr and "Traceback" not in done.stderr


def test_save_into_a_folder_that_is_gone_fails_as_redis_does(tmp_path: Path) -> None:
    folder = tmp_path / "gone"
    folder.mkdir()
    with ServerThread(config={"dir": str(folder)}) as st:
        r = redis_py.Redis(port=st.port)
        folder.rmdir()
        with pytest.raises(redis_py.ResponseError, match="^ERR$|^$"):
            r.save()
        assert r.info("persistence")["rdb_changes_since_last_save"] == 0


def test_sigterm_saves_when_save_points_are_set_and_the_file_loads_again(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "xspec", "serve", "--port", str(port), "--dir", str(tmp_path),
                             "--save", "3600 1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    r = redis_py.Redis(port=port)
    for _ in range(400):
        try:
            r.ping()
            break
        except redis_py.ConnectionError:
            time.sleep(0.05)
    r.xadd("s", {"a": "b"}, id="1-1")
    proc.terminate()
    assert proc.wait(30) == 0
    with ServerThread(config={"dir": str(tmp_path)}) as st:
        assert redis_py.Redis(port=st.port).xrange("s") == [(b"1-1", {b"a": b"b"})]
