"""The persistence cron of `xspec serve` against the real servers: INFO persistence's AOF fields (AOF-INFO-1),
the automatic AOF rewrite (AOF-AUTO-1), BGSAVE and BGREWRITEAOF while the other's child runs (FORK-1..3),
DEBUG LOADAOF where Redis exits (DEBUG-LOADAOF-4), and a paused node's timers (NODE-PAUSE-1).

Each differential test runs the same steps on the real binary (7.0.15, 6.2.14, Valkey 9.1.2) and on `xspec
serve` under the same dialect and compares what they answer.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_py

from tests.replication_support import wait_until
from tests.support import first_by_default, start_real
from xspec.reference.aof import EXIT_REFUSED, aof_of
from xspec.reference.persistence import persistence_of
from xspec.reference.replication import replication_of
from xspec.reference.replication_deployment import DeploymentThread
from xspec.reference.server import ServerThread
from xspec.spec.resp import Simple
from xspec.traces.record.client import RespConnection
from xspec.traces.scenarios.runner import free_port, stop_process

Setter = Callable[[str, str], None]


def _wait_ping(r: redis_py.Redis, proc: subprocess.Popen[bytes] | None = None) -> None:
    for _ in range(400):
        try:
            r.ping()
            return
        except redis_py.ConnectionError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError("the server exited") from None
            time.sleep(0.02)
    raise RuntimeError("the server did not answer")


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Callable[..., tuple[redis_py.Redis, Setter]]]:
    """``pair(kind, dialect, **config)``: the real server of the dialect, or `xspec serve` under it, with
    that config; also a setter of parameters our server has no CONFIG SET for (``rdb-key-save-delay``)."""
    stops: list[Callable[[], None]] = []

    def start(kind: str, dialect: str, **config: str) -> tuple[redis_py.Redis, Setter]:
        folder = tmp_path / f"{kind}-{len(stops)}"
        folder.mkdir()
        if kind == "real":
            proc, port = start_real(dialect, folder, config)
            stops.append(lambda: stop_process(proc))
            r = redis_py.Redis(port=port)
            return r, lambda name, value: r.config_set(name, value) and None
        st = ServerThread(dialect=dialect, enable_debug="yes", config={"dir": str(folder), **config})
        st.__enter__()
        stops.append(st.__exit__)
        r = redis_py.Redis(port=st.port)
        return r, lambda name, value: st.call(st.core.config.__setitem__, name, value)

    yield start
    for stop in stops:
        stop()


def persistence_fields(r: redis_py.Redis) -> list[str]:
    conn = RespConnection("127.0.0.1", r.connection_pool.connection_kwargs["port"])
    conn.send([b"INFO", b"persistence"])
    reply = conn.recv()
    conn.close()
    text = getattr(reply, "value", reply)
    assert isinstance(text, bytes)
    return [line.split(b":")[0].decode() for line in text.split(b"\r\n")[1:] if b":" in line]


@pytest.mark.parametrize("dialect", first_by_default("redis-7.0", "redis-6.2", "valkey-9.1"))
def test_info_persistence_has_the_aof_fields_the_real_server_has(pair, dialect: str) -> None:
    """AOF-INFO-1: with the AOF on, the size fields end the section (6.2 with its rewrite buffer's)."""
    for appendonly in ("yes", "no"):
        real, _ = pair("real", dialect, appendonly=appendonly, appendfsync="always", save="")
        ours, _ = pair("ours", dialect, appendonly=appendonly, appendfsync="always", save="")
        assert persistence_fields(ours) == persistence_fields(real)
        real.set("k", "v")
        ours.set("k", "v")
        fields = ("aof_enabled", "aof_rewrites", "aof_current_size", "aof_base_size", "aof_pending_rewrite",
                  "aof_rewrite_scheduled", "aof_buffer_length", "aof_rewrite_buffer_length")
        values = [{f: s.info("persistence").get(f) for f in fields} for s in (real, ours)]
        assert values[1] == values[0]
        if appendonly == "yes":
            assert values[0]["aof_current_size"] > 0


def _grow(r: redis_py.Redis, batch: int) -> tuple[int, int, int]:
    """Ten SETs as one transaction (one unit: the cron never sees half of it), then until no rewrite is
    due by AOF-AUTO-1's measure (min size 1000, 50%) and none runs."""
    with r.pipeline(transaction=True) as p:
        for i in range(10):
            p.set(f"key{batch}-{i}", "x" * 20)
        p.execute()
    deadline = time.monotonic() + 10
    while True:
        info = r.info("persistence")
        current, base = info["aof_current_size"], info["aof_base_size"]
        due = current > 1000 and current * 100 // (base or 1) - 100 >= 50
        if not due and not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return current, base, info.get("aof_rewrites", -1)
        assert time.monotonic() < deadline, f"no rewrite at {current} over {base}"
        time.sleep(0.02)


@pytest.mark.parametrize("dialect", first_by_default("redis-7.0", "redis-6.2", "valkey-9.1"))
def test_the_aof_is_rewritten_when_it_has_grown_as_the_real_server_does(pair, dialect: str) -> None:
    """AOF-AUTO-1: past auto-aof-rewrite-min-size and auto-aof-rewrite-percentage over the base size, the
    cron rewrites; the sizes (a rewrite of commands: the same bytes on both) follow step by step."""
    # appendfsync always: everysec may hold a write (and its size) while a background fsync runs (AOF-3)
    config = {"appendonly": "yes", "appendfsync": "always", "save": "", "aof-use-rdb-preamble": "no",
              "auto-aof-rewrite-min-size": "1000", "auto-aof-rewrite-percentage": "50"}
    runs = []
    for kind in ("real", "ours"):
        r, _ = pair(kind, dialect, **config)
        runs.append([_grow(r, n) for n in range(6)])
    assert runs[1] == runs[0], runs
    assert len({base for _, base, _ in runs[0]}) >= 3  # it did rewrite, more than once


def _flags(r: redis_py.Redis) -> tuple[int, int, int, int]:
    i = r.info("persistence")
    return i["rdb_bgsave_in_progress"], i["aof_rewrite_in_progress"], i["aof_rewrite_scheduled"], \
        i["aof_pending_rewrite"]


def _reply(r: redis_py.Redis, *argv: str) -> Any:
    """The reply as sent (redis-py would turn a status into True)."""
    conn = RespConnection("127.0.0.1", r.connection_pool.connection_kwargs["port"])
    conn.send([a.encode() for a in argv])
    reply = conn.recv()
    conn.close()
    return reply


def _until(r: redis_py.Redis, flag: int) -> tuple[int, int, int, int]:
    for _ in range(500):
        now = _flags(r)
        if now[flag]:
            return now
        time.sleep(0.01)
    raise AssertionError(f"flag {flag} never came")


def fork_script(r: redis_py.Redis, set_delay: Setter) -> list[Any]:
    """BGSAVE with BGREWRITEAOF scheduled behind it, then the rewrite with BGSAVE scheduled behind it."""
    for i in range(5):
        r.set(f"k{i}", "v")
    set_delay("rdb-key-save-delay", "80000")  # 80 ms a key: each child takes 0.4 s
    out: list[Any] = [_reply(r, "BGSAVE"), _reply(r, "BGREWRITEAOF"), _flags(r), _reply(r, "BGREWRITEAOF"),
                      _reply(r, "BGSAVE"), _reply(r, "BGSAVE", "SCHEDULE")]
    out += [_until(r, 1), _reply(r, "BGREWRITEAOF"), _reply(r, "BGSAVE"), _reply(r, "BGSAVE", "SCHEDULE")]
    out += [_until(r, 0)]
    set_delay("rdb-key-save-delay", "0")
    for _ in range(300):
        if _flags(r) == (0, 0, 0, 0):
            break
        time.sleep(0.01)
    conn = RespConnection("127.0.0.1", r.connection_pool.connection_kwargs["port"])
    for argv in ([b"MULTI"], [b"BGSAVE"], [b"BGREWRITEAOF"], [b"EXEC"]):  # run by EXEC with no child
        conn.send(argv)
        out.append(conn.recv())
    conn.close()
    return [*out, _flags(r)]


@pytest.mark.parametrize("dialect", first_by_default("redis-7.0", "redis-6.2", "valkey-9.1"))
def test_bgsave_and_bgrewriteaof_wait_for_each_other_as_the_real_server(pair, dialect: str) -> None:
    """FORK-1, FORK-2, FORK-3, measured on 7.0.15 and 6.2.14."""
    config = {"appendonly": "yes", "save": "", "auto-aof-rewrite-percentage": "0"}
    scripts = [fork_script(*pair(kind, dialect, **config)) for kind in ("real", "ours")]
    assert scripts[1] == scripts[0]
    assert scripts[0][1] == Simple("Background append only file rewriting scheduled")


def assert_no_reply(port: int, *argv: bytes) -> None:
    """The command gets no reply: the connection closes (a raw one: redis-py would retry for seconds)."""
    conn = RespConnection("127.0.0.1", port)
    conn.send(list(argv))
    with pytest.raises((OSError, EOFError, ConnectionError)):
        conn.recv()
    conn.close()


def refused(port: int) -> bool:
    try:
        RespConnection("127.0.0.1", port).close()
    except OSError:
        return True
    return False


def _serve(tmp_path: Path, dialect: str, *options: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "xspec", "serve", "--port", str(port), "--dialect", dialect,
                             "--dir", str(tmp_path), *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_ping(redis_py.Redis(port=port), proc)
    return proc, port


@pytest.mark.parametrize(("dialect", "line"), [
    ("redis-7.0", None), ("redis-6.2", "Fatal error: can't open the append log file for reading: No such file")])
def test_debug_loadaof_without_an_aof_exits_as_redis_does(tmp_path: Path, dialect: str, line: str | None) -> None:
    """DEBUG-LOADAOF-3/4: no reply, status 1, 6.2's log line (tests/test_debug_loadaof.py: the real ones)."""
    proc, port = _serve(tmp_path, dialect, "--enable-debug-command", "yes")
    redis_py.Redis(port=port).set("k", "v")
    assert_no_reply(port, b"DEBUG", b"LOADAOF")
    assert proc.wait(20) == 1
    err = proc.stderr.read().decode() if proc.stderr is not None else ""
    assert "Traceback" not in err
    if line is not None:
        assert line in err


def test_debug_loadaof_exit_is_refused_unless_debug_is_enabled(tmp_path: Path) -> None:
    """DEBUG-LOADAOF-4: 6.2's DEBUG needs no enabling; without --enable-debug-command the server stays."""
    with ServerThread(dialect="redis-6.2", config={"dir": str(tmp_path)}) as st:
        r = redis_py.Redis(port=st.port)
        with pytest.raises(redis_py.ResponseError, match="only with --enable-debug-command yes"):
            r.execute_command("DEBUG", "LOADAOF")
        assert EXIT_REFUSED.startswith("ERR ") and r.ping()


def test_a_server_in_a_thread_stops_listening_and_the_program_goes_on(tmp_path: Path) -> None:
    st = ServerThread(dialect="redis-7.0", enable_debug="yes", config={"dir": str(tmp_path)})
    st.__enter__()
    assert_no_reply(st.port, b"DEBUG", b"LOADAOF")
    wait_until(lambda: st.server.shutdown_asap and not st.server.connections, what="the server's end")
    assert refused(st.port) and st.thread.is_alive()
    st.__exit__()


def test_a_paused_node_runs_none_of_its_timers(tmp_path: Path) -> None:
    """NODE-PAUSE-1: while XSPEC.NODE PAUSE holds the primary, no key expires actively, no save point saves,
    the AOF is not fsynced, no automatic rewrite starts and the replication cron does not tick; on RESUME
    what came due runs."""
    config = {"appendonly": "yes", "appendfsync": "everysec", "save": "1 1", "auto-aof-rewrite-min-size": "1",
              "auto-aof-rewrite-percentage": "1"}
    with DeploymentThread(1, data_dir=str(tmp_path), config=config) as d:
        p = redis_py.Redis(port=d.port("primary"))
        replica = redis_py.Redis(port=d.port("replica-1"))
        wait_until(lambda: replica.info("replication")["master_link_status"] == "up", what="the link")
        node = d.deployment.nodes["primary"]
        core = node.core
        time.sleep(1.2)  # the save point's second and a rewrite of what the start wrote
        wait_until(lambda: not persistence_of(core).child, what="the children's end")
        pers, aof, rep = persistence_of(core), aof_of(core), replication_of(core)
        assert aof is not None
        with p.pipeline(transaction=False) as pipe:  # one read: no timer runs between the write and the pause
            pipe.set("short", "v", px=300)
            pipe.execute_command("XSPEC.NODE", "PAUSE", "primary")
            pipe.execute()
        before = (pers.saves, pers.aof_rewrites, rep.cron_seconds, aof.last_fsync)
        time.sleep(2.2)
        assert b"short" in core.dbs[0]  # expired, not deleted: no active expiry
        assert (pers.saves, pers.aof_rewrites, rep.cron_seconds, aof.last_fsync) == before
        assert aof.unsynced  # no everysec fsync
        replica.execute_command("XSPEC.NODE", "RESUME", "primary")
        wait_until(lambda: b"short" not in core.dbs[0] and not aof.unsynced, what="the timers after RESUME")
        wait_until(lambda: rep.cron_seconds > before[2] and pers.saves > before[0], what="the crons after RESUME")


def test_debug_loadaof_of_a_bad_file_exits_with_redis_s_line(tmp_path: Path) -> None:
    """DEBUG-LOADAOF-4: a file Redis 7.0.15 cannot load ends it too, with its log line (measured)."""
    proc, port = _serve(tmp_path, "redis-7.0", "--enable-debug-command", "yes", "--appendonly", "yes")
    r = redis_py.Redis(port=port)
    r.set("k", "v")
    with open(tmp_path / "appendonlydir" / "appendonly.aof.1.incr.aof", "ab") as fh:
        fh.write(b"garbage\r\n")
    assert_no_reply(port, b"DEBUG", b"LOADAOF")
    assert proc.wait(20) == 1
    err = proc.stderr.read().decode() if proc.stderr is not None else ""
    assert ("Bad file format reading the append only file appendonly.aof.1.incr.aof: make a backup of your AOF "
            "file, then use ./redis-check-aof --fix <filename.manifest>") in err


def test_a_node_of_a_deployment_crashes_alone(tmp_path: Path) -> None:
    """DEBUG-LOADAOF-4 under --replicas: the node that exits crashes (as XSPEC.NODE CRASH), the rest go on."""
    with DeploymentThread(1, data_dir=str(tmp_path), enable_debug="yes") as d:
        p = redis_py.Redis(port=d.port("primary"))
        replica = redis_py.Redis(port=d.port("replica-1"))
        wait_until(lambda: replica.info("replication")["master_link_status"] == "up", what="the link")
        assert_no_reply(d.port("replica-1"), b"DEBUG", b"LOADAOF")
        wait_until(lambda: d.deployment.nodes["replica-1"].server is None, what="the crash")
        assert p.ping()
        p.execute_command("XSPEC.NODE", "RESTART", "replica-1")
        replica = redis_py.Redis(port=d.port("replica-1"))
        wait_until(lambda: replica.info("replication")["master_link_status"] == "up", what="the restart")


def _flushall_session(r: redis_py.Redis, set_param: Setter, folder: Path, child: bool) -> dict[str, Any]:
    """20 keys, a BGSAVE child held by ``rdb-key-save-delay`` or none, then FLUSHALL with a save point set:
    the counter, the file, LASTSAVE and the child, at once and once the child is reaped."""
    for i in range(20):
        r.set(f"k{i}", i)
    dump = folder / "dump.rdb"
    if child:
        set_param("rdb-key-save-delay", "200000")  # 20 keys: 4 s
        r.bgsave()
    time.sleep(1.1)  # LASTSAVE is in seconds
    lastsave = r.lastsave()
    set_param("rdb-key-save-delay", "0")
    r.flushall()
    info = r.info("persistence")
    # (the killed child is reaped by the next cron tick, or by our INFO, which stands for one)
    out: dict[str, Any] = {"at once": (info["rdb_changes_since_last_save"], info.get("rdb_saves"), dump.exists(),
                                       r.lastsave() != lastsave)}
    info = wait_until(lambda: (i := r.info("persistence"))["rdb_bgsave_in_progress"] == 0 and i, what="the reap")
    out["reaped"] = (info["rdb_last_bgsave_status"], info.get("rdb_saves"), info["rdb_changes_since_last_save"])
    r.set("x", 1)
    r.flushdb()  # FLUSHDB saves nothing
    out["flushdb"] = (r.info("persistence")["rdb_changes_since_last_save"], r.lastsave())
    return out


@pytest.mark.parametrize("child", [False, True], ids=["no-child", "child"])
@pytest.mark.parametrize("dialect", first_by_default("redis-7.0", "redis-6.2", "valkey-9.1"))
def test_flushall_kills_the_bgsave_child_and_saves_as_redis_does(pair, tmp_path: Path, dialect: str,
                                                                 child: bool) -> None:
    """FLUSH-6: with a save point set FLUSHALL saves the emptied data at once (7.0 and Valkey zero the
    counter, 6.2 keeps it) and stops a BGSAVE's child, which the cron then reaps as no failure."""
    got = []
    for kind in ("real", "ours"):
        r, set_param = pair(kind, dialect)
        r.config_set("save", "3600 1")  # (6.2 reads no --save with the two words in one argument)
        folder = Path(r.config_get("dir")["dir"])
        session = _flushall_session(r, set_param, folder, child)
        session["flushdb"] = (session["flushdb"][0], session["flushdb"][1] - r.lastsave())  # LASTSAVE unmoved
        got.append(session)
    real, ours = got
    keeps = dialect == "redis-6.2"
    assert real["at once"][0] == (41 if keeps else 0)
    assert real["at once"][2:] == (True, True)
    assert real["reaped"][0] == "ok"
    assert ours == real
