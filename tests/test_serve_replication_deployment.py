"""``xspec serve --replicas N``: the deployment, its admin verbs (XSPEC.LINK, XSPEC.NODE) and its trace/2."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.replication_support import wait_until
from xspec.reference.replication_deployment import DeploymentThread
from xspec.spec.trace_format import load
from xspec.traces.check.checker import check_trace


def up(r: redis.Redis) -> bool:
    return bool(r.info("replication")["master_link_status"] == "up")


def test_admin_verbs_and_the_deployment_trace_conforms(tmp_path: Path) -> None:
    trace = tmp_path / "deployment.jsonl"
    with DeploymentThread(2, trace=str(trace)) as d:
        p = redis.Redis(port=d.port("primary"))
        r1 = redis.Redis(port=d.port("replica-1"))
        r2 = redis.Redis(port=d.port("replica-2"))
        wait_until(lambda: up(r1) and up(r2), what="both links")
        p.xadd("s", {"n": 1}, id="1-0")
        assert p.wait(2, 5000) == 2
        assert r1.xrange("s") == [(b"1-0", {b"n": b"1"})]
        # HOLD: the replica applies and acknowledges nothing until FLOW
        p.execute_command("XSPEC.LINK", "HOLD", "replica-1")
        p.xadd("s", {"n": 2}, id="2-0")
        assert p.wait(2, 200) == 1
        assert r1.xlen("s") == 1 and r2.xlen("s") == 2
        p.execute_command("XSPEC.LINK", "FLOW", "replica-1")
        assert p.wait(2, 5000) == 2 and r1.xlen("s") == 2
        # CUT: the replica reconnects and continues from the backlog
        r1.execute_command("XSPEC.LINK", "CUT", "replica-1")
        p.xadd("s", {"n": 3}, id="3-0")
        wait_until(lambda: up(r1) and r1.xlen("s") == 3, what="the cut link to come back")
        assert p.info("stats")["sync_partial_ok"] >= 1
        # CRASH and RESTART: a replica comes back empty (no persistence) and resynchronises in full
        p.execute_command("XSPEC.NODE", "CRASH", "replica-2")
        with pytest.raises(redis.ConnectionError):
            r2.ping()
        p.xadd("s", {"n": 4}, id="4-0")
        p.execute_command("XSPEC.NODE", "RESTART", f"127.0.0.1:{d.port('replica-2')}")
        r2 = redis.Redis(port=d.port("replica-2"))
        wait_until(lambda: up(r2) and r2.xlen("s") == 4, what="the restarted replica")
        # PAUSE and RESUME: a paused replica neither answers nor acknowledges
        p.execute_command("XSPEC.NODE", "PAUSE", "replica-1")
        p.xadd("s", {"n": 5}, id="5-0")
        assert p.wait(2, 300) == 1
        answered: list[Any] = []
        reader = threading.Thread(target=lambda: answered.append(redis.Redis(port=d.port("replica-1")).xlen("s")))
        reader.start()
        time.sleep(0.2)
        assert not answered
        p.execute_command("XSPEC.NODE", "RESUME", "replica-1")
        reader.join(5)
        assert answered and answered[0] in (4, 5)
        assert p.wait(2, 5000) == 2
        assert r1.xlen("s") == 5
        # Wrong names and verbs: one error line each
        with pytest.raises(redis.ResponseError, match="no node 'replica-9'"):
            p.execute_command("XSPEC.NODE", "CRASH", "replica-9")
        with pytest.raises(redis.ResponseError, match="XSPEC.NODE CRASH"):
            p.execute_command("XSPEC.NODE", "EXPLODE", "replica-1")
        with pytest.raises(redis.ResponseError, match="no running replica"):
            p.execute_command("XSPEC.LINK", "HOLD", "primary")
    verdict = check_trace(load(trace))
    assert verdict.status == "conform", verdict
    kinds = [line.split('"ev":"')[1].split('"')[0] for line in trace.read_text().splitlines()[1:]]
    for kind in ("link", "crash", "restart", "pause", "resume"):
        assert kind in kinds


def test_cli_starts_a_primary_and_replicas(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "xspec", "serve", "--port", "0", "--replicas", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert lines[0].startswith("xspec serve: listening on 127.0.0.1:") and "(primary," in lines[0]
        assert lines[1].startswith("xspec serve: replica-1 on 127.0.0.1:")
        replica_port = int(lines[1].split("127.0.0.1:")[1].split()[0])
        replica = redis.Redis(port=replica_port)
        wait_until(lambda: up(replica), what="the replica's link")
        assert replica.role()[0] == b"slave"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


@pytest.mark.parametrize("args, text", [
    (["--replicas", "1", "--checked"], "--replicas runs neither with --checked"),
    (["--replicaof", "nowhere"], "--replicaof wants HOST:PORT"),
])
def test_cli_refuses_bad_replication_options(args: list[str], text: str) -> None:
    done = subprocess.run([sys.executable, "-m", "xspec", "serve", "--port", "0", *args],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"xspec serve: {done.stderr.strip().split('xspec serve: ')[1]}"]
    assert text in done.stderr and "Traceback" not in done.stderr


def test_a_restarted_primary_continues_from_its_rdb(tmp_path: Path) -> None:
    """RDB-5: SAVE records the replication ID and offset; the primary restarted from that file keeps the ID as
    its secondary one, so its replica, at exactly that offset, continues (+CONTINUE) instead of a full sync."""
    trace = tmp_path / "restart.jsonl"
    with DeploymentThread(1, trace=str(trace), data_dir=str(tmp_path)) as d:
        p = redis.Redis(port=d.port("primary"))
        r = redis.Redis(port=d.port("replica-1"))
        wait_until(lambda: up(r), what="the link")
        p.xadd("s", {"n": 1}, id="1-0")
        p.xgroup_create("s", "g", "0")
        p.xreadgroup("g", "c", {"s": ">"})
        assert p.wait(1, 5000) == 1
        old_id = p.info("replication")["master_replid"]
        assert p.save()
        r.execute_command("XSPEC.NODE", "CRASH", "primary")
        wait_until(lambda: not up(r), what="the replica to see the crash")
        r.execute_command("XSPEC.NODE", "RESTART", "primary")
        p = redis.Redis(port=d.port("primary"))
        wait_until(lambda: up(r), what="the link to the restarted primary")
        info = p.info("replication")
        assert info["master_replid2"] == old_id and info["master_replid"] != old_id
        assert p.info("stats")["sync_partial_ok"] == 1 and p.info("stats")["sync_full"] == 0
        p.xadd("s", {"n": 2}, id="2-0")
        assert p.wait(1, 5000) == 1
        assert r.xlen("s") == 2 and r.xpending("s", "g")["pending"] == 1
    verdict = check_trace(load(trace))
    assert verdict.status == "conform", verdict
