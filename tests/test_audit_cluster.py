"""The audit on a real Spark standalone cluster: a master and a worker started from the installed pyspark with
``spark-class`` on 127.0.0.1, stopped by pid. Slow (about a minute of JVM start-up on two cores): ``-m slow``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.audit_support import read_tables
from xspec.traces.scenarios.runner import free_port

ROOT = Path(__file__).resolve().parent.parent


def _spark_class() -> Path:
    pyspark = pytest.importorskip("pyspark")
    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m",
           "PYSPARK_PYTHON": sys.executable}
    with open(log, "wb") as f:
        return subprocess.Popen([str(_spark_class()), *args], stdout=f, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name}: exited {proc.returncode}: {log.read_text()[-2000:]}")
        time.sleep(0.5)
    raise RuntimeError(f"{log.name}: no {text!r} after {timeout} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # the group spark-class started for this one JVM
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[str]:
    port, ui = free_port(), free_port()
    master = _start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                     "--webui-port", str(ui)], tmp_path / "master.log")
    worker = None
    try:
        _wait_for(tmp_path / "master.log", "I have been elected leader", master)
        url = f"spark://127.0.0.1:{port}"
        worker = _start(["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2", "--memory",
                         "1g", "--webui-port", str(free_port()), "--work-dir", str(tmp_path / "work"), url],
                        tmp_path / "worker.log")
        _wait_for(tmp_path / "worker.log", "Successfully registered with master", worker)
        yield url
    finally:
        if worker is not None:
            _stop(worker)
        _stop(master)


@pytest.mark.slow
def test_audit_on_a_standalone_master_and_worker(standalone: str, tmp_path: Path) -> None:
    inputs = [ROOT / "traces" / "tutorial", ROOT / "traces" / "findings" / "regressions"]
    result = subprocess.run([sys.executable, "-m", "xspec", "audit", *map(str, inputs), "--master", standalone,
                             "--out", str(tmp_path / "cluster")], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    local = subprocess.run([sys.executable, "-m", "xspec", "audit", *map(str, inputs), "--master", "none",
                            "--out", str(tmp_path / "local"), "-q"], capture_output=True, text=True, timeout=600)
    assert local.returncode == 0, local.stderr
    a, b = read_tables(tmp_path / "cluster"), read_tables(tmp_path / "local")
    for name in a:
        assert a[name].equals(b[name]), name
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_audit_of_every_bundled_trace_in_local_mode_exits_0(tmp_path: Path) -> None:
    """The done-when: ``xspec audit traces/ --out report/`` in local mode, with the README's set-up alone."""
    result = subprocess.run([sys.executable, "-m", "xspec", "audit", str(ROOT / "traces"), "--out",
                             str(tmp_path / "report")], capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "report" / "report.html").exists() and (tmp_path / "report" / "summary.json").exists()
