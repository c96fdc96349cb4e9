"""Whole RDB files (spec/rdb_file.py, reference/persistence.py) against the real servers.

Each dialect's real server saves a data set of streams (nodes, tombstones, groups, PELs, consumers),
strings, lists and sets: the file reads back and writes again byte for byte, `xspec serve` in that
dialect loads it and saves the same values. Redis 7.0.15 loads the file `xspec serve` writes and
serves the same data (XINFO STREAM FULL, XPENDING), `redis-check-rdb` accepts it, and random streams
go round both servers unchanged (hypothesis).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_py
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.real_servers import SERVER_FIXTURES, RealRedis
from tests.support import keyspace_state
from xspec.reference.server import ServerThread
from xspec.spec import rdb, rdb_file
from xspec.traces.harness.servers import find_redis_server
from xspec.traces.scenarios.runner import free_port, stop_process


def fill(r: redis_py.Redis, groups_with_entries_read: bool = True) -> None:
    """A data set touching every part of a stream value, and one key of each other type."""
    for i in range(300):
        fields = {"f": str(i), "g" * (i % 3): "x" * (i % 40)} if i % 7 else {"other": "y" * 30, "n": i}
        r.xadd("s", fields, id=f"{1000 + i}-{i % 5}")
    r.xdel("s", "1005-0", "1299-4", "1100-0")
    r.xgroup_create("s", "g", id="0")
    r.xreadgroup("g", "c1", {"s": ">"}, count=10)
    r.xreadgroup("g", "c2", {"s": ">"}, count=5)
    r.xack("s", "g", "1001-1")
    r.xgroup_create("s", "g2", id="$")
    r.xgroup_createconsumer("s", "g2", "idle")
    r.xadd("empty", {"a": "b"}, id="5-5")
    r.xtrim("empty", maxlen=0)
    r.set("k", "v" * 100)
    r.set("n", 12345)
    r.rpush("l", *range(50))
    r.sadd("set", "x", "y")
    r.sadd("iset", 1, 2, 3)
    r.execute_command("SELECT", 5)
    r.set("in5", "1")
    r.execute_command("SELECT", 0)


def state(r: redis_py.Redis) -> dict[str, Any]:
    """Every key of databases 0 and 5 as the commands show it: streams by XINFO STREAM FULL, XPENDING
    of each group (without idle times) and XRANGE."""
    return keyspace_state(r, (0, 5), ranges=True, ignored=frozenset({"time_since_delivered"}))


def values_by_key(f: rdb_file.RdbFile) -> dict[tuple[int, bytes], bytes]:
    fmt = rdb.rdb_format(f.version)
    return {(db, k.key): rdb.encode_value(k.value, fmt) for db, keys in f.dbs.items() for k in keys}


def _dir_of(r: redis_py.Redis) -> str:
    return str(r.config_get("dir")["dir"])


# -- every dialect's real file -------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", sorted(SERVER_FIXTURES))
def test_a_real_servers_file_reads_writes_and_loads(dialect: str, request: pytest.FixtureRequest,
                                                    tmp_path: Path) -> None:
    real: RealRedis = request.getfixturevalue(SERVER_FIXTURES[dialect])
    real.reset()
    r = redis_py.Redis(port=real.port)
    fill(r)
    theirs = state(r)
    r.save()
    data = (Path(_dir_of(r)) / "dump.rdb").read_bytes()
    real.reset()
    version = rdb_file.file_version(data)
    f = rdb_file.read_rdb(data, version)
    assert rdb_file.write_rdb(f) == data  # byte for byte, aux fields and CRC included
    assert f.aux_value(b"aof-preamble" if version < 10 else b"aof-base") == b"0"
    shutil.copy(Path(_dir_of(r)) / "dump.rdb", tmp_path / "dump.rdb")
    with ServerThread(dialect=dialect, config={"dir": str(tmp_path)}) as served:
        ours = redis_py.Redis(port=served.port)
        assert state(ours) == theirs
        ours.save()
    mine = rdb_file.read_rdb((tmp_path / "dump.rdb").read_bytes(), version)
    assert mine.version == version
    # repl-stream-db, repl-id and repl-offset are written only by a server with replication state: the session's
    # real servers have had the tests' replication taps; ours has it when it restored them from the real file
    # (7.0+ keep the backlog of a primary loaded from an RDB, RDB-5), not in 6.2.
    replication = {b"repl-stream-db", b"repl-id", b"repl-offset"}
    assert [k for k, _ in mine.aux if k not in replication] == [k for k, _ in f.aux if k not in replication]
    ours_repl = [k for k, _ in mine.aux if k in replication]
    assert ours_repl in ([], [k for k, _ in f.aux if k in replication])
    assert values_by_key(mine) == values_by_key(f)  # each value written as the real server writes it


# -- Redis 7.0.15 and xspec serve, both ways -------------------------------------------------------------


class DebugRedis:
    """A redis-server 7.0.15 with DEBUG enabled, in its own folder: it loads a file by DEBUG RELOAD NOSAVE."""

    def __init__(self, binary: str, workdir: str) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", workdir, "--enable-debug-command", "yes", "--logfile", os.path.join(workdir, "log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis_py.Redis(port=self.port)
        for _ in range(200):
            try:
                self.client.ping()
                break
            except redis_py.ConnectionError:
                import time
                time.sleep(0.05)

    def load(self, data: bytes) -> None:
        Path(self.workdir, "dump.rdb").write_bytes(data)
        assert self.client.execute_command("DEBUG", "RELOAD", "NOSAVE") == b"OK"

    def saved(self) -> bytes:
        self.client.save()
        return Path(self.workdir, "dump.rdb").read_bytes()


@pytest.fixture(scope="module")
def redis70() -> Iterator[DebugRedis]:
    binary = find_redis_server("7.0")
    if binary is None:
        pytest.skip("redis-server 7.0 is not installed")
    with tempfile.TemporaryDirectory(prefix="xspec-rdb-") as workdir:
        server = DebugRedis(binary, workdir)
        try:
            yield server
        finally:
            stop_process(server.proc)


@pytest.fixture(scope="module")
def served70() -> Iterator[tuple[ServerThread, str]]:
    with tempfile.TemporaryDirectory(prefix="xspec-serve-rdb-") as workdir:
        with ServerThread(config={"dir": workdir}, enable_debug="yes", clock="virtual") as st:
            yield st, workdir


def test_redis_loads_what_xspec_serve_saves_and_redis_check_rdb_accepts_it(
        redis70: DebugRedis, served70: tuple[ServerThread, str]) -> None:
    st, workdir = served70
    ours = redis_py.Redis(port=st.port)
    ours.flushall()
    fill(ours)
    expected = state(ours)
    ours.save()
    data = Path(workdir, "dump.rdb").read_bytes()
    check = shutil.which("redis-check-rdb") or "/usr/bin/redis-check-rdb"
    if os.path.exists(check):
        done = subprocess.run([check, os.path.join(workdir, "dump.rdb")], capture_output=True, text=True)
        assert done.returncode == 0 and "RDB looks OK" in done.stdout, done.stdout
    redis70.load(data)
    assert state(redis70.client) == expected
    # and back: the file Redis writes loads into xspec serve as the same data
    Path(workdir, "dump.rdb").write_bytes(redis70.saved())
    assert ours.execute_command("DEBUG", "RELOAD", "NOSAVE") == b"OK"
    assert state(ours) == expected


_field = st.binary(min_size=0, max_size=12) | st.sampled_from([b"f", b"v", b"123", b"-7", b"x" * 30])
_ops = st.lists(st.one_of(
    st.tuples(st.just("xadd"), st.lists(_field, min_size=2, max_size=6).filter(lambda x: len(x) % 2 == 0)),
    st.tuples(st.just("xdel"), st.integers(0, 40)),
    st.tuples(st.just("trim"), st.integers(0, 30)),
    st.tuples(st.just("group"), st.sampled_from([b"g1", b"g2", b"g3"])),
    st.tuples(st.just("read"), st.tuples(st.sampled_from([b"g1", b"g2"]), st.sampled_from([b"a", b"b", b"c"]),
                                         st.integers(1, 5))),
    st.tuples(st.just("ack"), st.integers(0, 40)),
    st.tuples(st.just("claim"), st.tuples(st.sampled_from([b"a", b"b", b"z"]), st.integers(0, 40))),
    st.tuples(st.just("tick"), st.integers(1, 5000)),
), max_size=40)


def _apply(r: redis_py.Redis, ops: list[tuple[str, Any]], node_entries: int) -> None:
    r.flushall()
    r.config_set("stream-node-max-entries", node_entries)
    r.xadd("s", {"first": "1"}, id="1-1")
    for kind, arg in ops:
        ids = [e[0] for e in r.xrange("s")]
        try:
            if kind == "xadd":
                r.execute_command("XADD", "s", "*", *arg)
            elif kind == "xdel" and ids:
                r.xdel("s", ids[arg % len(ids)])
            elif kind == "trim":
                r.xtrim("s", maxlen=arg, approximate=False)
            elif kind == "group":
                r.xgroup_create("s", arg, id="0")
            elif kind == "read":
                r.xreadgroup(arg[0], arg[1], {"s": ">"}, count=arg[2])
            elif kind == "ack" and ids:
                r.xack("s", "g1", ids[arg % len(ids)])
            elif kind == "claim" and ids:
                r.xclaim("s", "g1", arg[0], 0, [ids[arg[1] % len(ids)]])
            elif kind == "tick":
                r.execute_command("XSPEC.CLOCK", "ADVANCE", arg)
        except redis_py.ResponseError:
            pass


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops, node_entries=st.sampled_from([2, 3, 100]))
def test_random_streams_round_trip_through_redis(redis70: DebugRedis, served70: tuple[ServerThread, str],
                                                 ops: list[tuple[str, Any]], node_entries: int) -> None:
    st_, workdir = served70
    ours = redis_py.Redis(port=st_.port)
    _apply(ours, ops, node_entries)
    expected = state(ours)
    ours.save()
    data = Path(workdir, "dump.rdb").read_bytes()
    redis70.load(data)
    assert state(redis70.client) == expected
    again = redis70.saved()
    assert values_by_key(rdb_file.read_rdb(again, 10)) == values_by_key(rdb_file.read_rdb(data, 10))
    Path(workdir, "dump.rdb").write_bytes(again)
    assert ours.execute_command("DEBUG", "RELOAD", "NOSAVE") == b"OK"
    assert state(ours) == expected


# -- what loading refuses ------------------------------------------------------------------------------


def test_loading_refuses_what_redis_refuses() -> None:
    good = rdb_file.write_rdb(rdb_file.RdbFile(10, [], [], {0: [rdb_file.RdbKey(b"k", b"v")]}))
    with pytest.raises(rdb_file.RdbFileError, match="Wrong signature"):
        rdb_file.read_rdb(b"RODIS0010" + good[9:], 10)
    with pytest.raises(rdb_file.RdbFileError, match="Can't handle RDB format version 11"):
        rdb_file.read_rdb(rdb_file.write_rdb(rdb_file.RdbFile(11)), 10)
    with pytest.raises(rdb_file.RdbFileError, match="Can't handle RDB format version 12"):
        rdb_file.read_rdb(rdb_file.write_rdb(rdb_file.RdbFile(12)), 80)  # Valkey 9 leaves 12..79 to Redis
    with pytest.raises(rdb_file.RdbFileError, match="checksum"):
        rdb_file.read_rdb(good[:-1] + bytes([good[-1] ^ 1]), 10)
    with pytest.raises(rdb_file.RdbFileError, match="Short read"):
        rdb_file.read_rdb(good[:-12], 10)
    assert rdb_file.read_rdb(good[:-8] + bytes(8), 10).dbs[0][0].key == b"k"  # a zero CRC is not checked
    old = rdb_file.read_rdb(rdb_file.write_rdb(rdb_file.RdbFile(9, [], [], {0: [rdb_file.RdbKey(b"k", b"v")]})), 12)
    assert old.version == 9  # older versions load
    expiring = rdb_file.RdbFile(10, [], [], {0: [rdb_file.RdbKey(b"gone", b"v", 1000), rdb_file.RdbKey(b"k", b"v")]})
    loaded = rdb_file.read_rdb(rdb_file.write_rdb(expiring), 10, now_ms=2000)
    assert [k.key for k in loaded.dbs[0]] == [b"k"] and loaded.skipped_expired == 1
