"""xspec's pytest plugin (xspec/pytest_plugin.py): the example suite of examples/consumer runs on it.

The example suite runs as a pytest of its own in a subprocess, in the example's
folder, with the plugin loaded by ``-p xspec.pytest_plugin`` (the entry point
does the same for an installed xspec): on ``xspec serve`` in two dialects, and
against the real Redis 7.0.15 (``--xspec-target``). Bad options, each refused in
one line, and the handles' messages are checked in-process (``pytester``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RealRedis

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "consumer"
PYTEST_USAGE_ERROR = 4


def run_example(*options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "xspec.pytest_plugin", "-q", "-rs",
                           "-W", "error::pytest.PytestUnknownMarkWarning", *options],
                          cwd=EXAMPLE, capture_output=True, text=True, timeout=300, check=False)


def counts(out: str) -> dict[str, int]:
    return {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|error)", out.splitlines()[-1])}


def test_example_suite_passes_on_xspec_serve_in_two_dialects() -> None:
    done = run_example("--xspec-dialect", "redis-7.0", "--xspec-dialect", "valkey-9.1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert counts(done.stdout) == {"passed": 10}, done.stdout  # 5 tests, each in both dialects


def test_example_suite_runs_against_a_real_server(redis: RealRedis) -> None:
    done = run_example("--xspec-target", f"redis://{redis.host}:{redis.port}", "--xspec-allow-flush")
    assert done.returncode == 0, done.stdout + done.stderr
    # the virtual-clock test and the fault test are xspec serve's alone
    assert counts(done.stdout) == {"passed": 3, "skipped": 2}, done.stdout
    assert "a real server's clock cannot be moved" in done.stdout
    assert "faults are injected by xspec serve" in done.stdout


def test_a_target_holding_keys_is_refused_without_allow_flush(redis: RealRedis, pytester: pytest.Pytester) -> None:
    conn = redis.connection()
    conn.call([b"SET", b"precious", b"1"])
    conn.close()
    pytester.makepyfile("def test_nothing(xspec_server):\n    pass\n")
    done = pytester.runpytest_inprocess("-p", "xspec.pytest_plugin", "--xspec-target",
                                        f"redis://{redis.host}:{redis.port}")
    assert done.ret == PYTEST_USAGE_ERROR
    assert any("holds keys and the tests flush it: give --xspec-allow-flush" in line for line in done.errlines)


@pytest.mark.parametrize(("options", "message"), [
    (["--xspec-target", "redis://127.0.0.1:1"], "--xspec-target: cannot connect to redis://127.0.0.1:1"),
    (["--xspec-target", "http://127.0.0.1:1"], "not a redis:// or rediss:// URL"),
    (["--xspec-dialect", "redis-9.9"], "--xspec-dialect: xspec serve has no dialect 'redis-9.9'"),
    (["--xspec-target", "redis://127.0.0.1:1", "--xspec-dialect", "redis-7.0"], "do not go together"),
])
def test_bad_options_are_refused_in_one_line(options: list[str], message: str, pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(xspec_server):\n    pass\n")
    done = pytester.runpytest_inprocess("-p", "xspec.pytest_plugin", *options)
    assert done.ret == PYTEST_USAGE_ERROR, done.outlines + done.errlines
    assert any(message in line for line in done.errlines), done.errlines
    assert not any("Traceback" in line for line in done.outlines + done.errlines)


def test_handles_say_what_is_wrong(pytester: pytest.Pytester) -> None:
    """A wall-clock server refuses clock moves with the marker to use; a bad marker is a usage error;
    a trace the model cannot explain fails the test with the model's verdict."""
    pytester.makepyfile(test_handles='''
import pytest

def test_wall_clock_cannot_move(xspec_server):
    with pytest.raises(Exception, match='mark it @pytest.mark.xspec\\\\(clock="virtual"\\\\)'):
        xspec_server.clock.advance(10)

@pytest.mark.xspec(clock="virtual")
def test_virtual_clock_moves_and_resets(xspec_server):
    start = xspec_server.clock.now()
    assert xspec_server.clock.advance(1000) == start + 1000
    assert xspec_server.clock.set(5) == 5

@pytest.mark.xspec(clock="virtual")
def test_virtual_clock_starts_where_the_session_started(xspec_server):
    assert xspec_server.clock.now() > 5

@pytest.mark.xspec(clock="sundial")
def test_bad_marker(xspec_server):
    pass

def test_faults_reach_the_server(xspec_server):
    xspec_server.faults.error("LOADING", command="get")
    with pytest.raises(Exception, match="LOADING"):
        xspec_server.command("GET", "k")
    assert xspec_server.command("GET", "k") is None

def test_a_diverging_trace_fails_the_test(xspec_server, xspec_trace):
    xspec_server.command("XADD", "s", "1-1", "f", "v")
    xspec_server.faults.error("OOM", command="xlen")  # outside the model: the trace is unsupported
    with pytest.raises(Exception, match="OOM"):
        xspec_server.command("XLEN", "s")
    xspec_trace.assert_conforms()
''')
    done = pytester.runpytest_inprocess("-p", "xspec.pytest_plugin", "-p", "no:cacheprovider")
    done.assert_outcomes(passed=4, failed=1, errors=1)
    out = "\n".join(done.outlines)
    assert "@pytest.mark.xspec takes clock=wall|virtual" in out
    assert "the trace does not conform to the model (redis-7.0):\n  unsupported" in out


def test_deployment_fixture_with_failures_and_sentinel(pytester: pytest.Pytester) -> None:
    """``xspec_deployment``: a primary with replicas, the link and node handles, and a Sentinel that fails over
    when the primary crashes (reference/replication_deployment.py, reference/sentinel_server.py)."""
    pytester.makepyfile(test_deployment='''
import time
import pytest

def until(check, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except Exception:  # redis-py's Sentinel finds no master while the old one is down
            pass
        assert time.monotonic() < deadline
        time.sleep(0.05)

@pytest.mark.xspec_deployment(replicas=2)
def test_hold_flow_cut_pause(xspec_deployment):
    p = xspec_deployment.primary.client()
    r1 = xspec_deployment.node("replica-1")
    p.xadd("s", {"n": 1})
    assert p.wait(2, 5000) == 2
    r1.hold()
    p.xadd("s", {"n": 2})
    assert p.wait(2, 200) == 1 and r1.client().xlen("s") == 1
    r1.flow()
    assert p.wait(2, 5000) == 2
    r1.cut()
    p.xadd("s", {"n": 3})
    xspec_deployment.wait_synced()
    assert r1.client().xlen("s") == 3

@pytest.mark.xspec_deployment(replicas=2, sentinel=True, down_after_ms=500)
def test_sentinel_fails_over_when_the_primary_crashes(xspec_deployment):
    sentinel = xspec_deployment.sentinel_client(socket_timeout=1)
    until(lambda: len(sentinel.discover_slaves("mymaster")) == 2)
    old = sentinel.discover_master("mymaster")
    assert old[1] == xspec_deployment.primary.port
    xspec_deployment.primary.crash()
    until(lambda: sentinel.discover_master("mymaster") != old)
    new = sentinel.discover_master("mymaster")
    assert new[1] in [r.port for r in xspec_deployment.replicas]
    master = sentinel.master_for("mymaster", socket_timeout=1)
    until(lambda: master.info("replication")["role"] == "master")
    master.xadd("s", {"after": "failover"})
    assert master.xlen("s") == 1
''')
    done = pytester.runpytest_inprocess("-p", "xspec.pytest_plugin", "-p", "no:cacheprovider")
    done.assert_outcomes(passed=2)
