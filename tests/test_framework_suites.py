"""Stream frameworks' own Redis test suites, run unchanged against real Redis 7.0.15 and `xspec serve`, compared
test by test (issue 19 §3; scripts/run-framework-suite).

walrus 0.9.8 ships its suite in its PyPI sdist, so the default suite runs the whole of it from the registry
against the session's real 7.0.15 and a fresh `xspec serve --dialect redis-7.0` (about 20 s). faststream,
taskiq-redis and BullMQ for Python keep their tests only in their repositories (their sdists have none): their full
runs, and walrus's in a network namespace of its own, are `slow` and need checkouts named in
``$XSPEC_FRAMEWORK_CHECKOUTS``. A run that cannot reach the package registry skips, saying so; any other
failure to run fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.real_servers import RealRedis

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "run-framework-suite"
EXIT_REGISTRY_UNREACHABLE = 3
WALRUS = "walrus-0.9.8"
WALRUS_TESTS = 131  # every test in walrus 0.9.8's suite passes on real 7.0.15
FROM_REPOSITORIES = ("faststream-0.7.4", "taskiq-redis-1.2.2", "bullmq-py-3.0.4")


def _run(*args: str, timeout: float = 1500, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def _outcomes(done: subprocess.CompletedProcess[str], out: Path) -> dict[str, dict[str, str]]:
    """Both servers' outcome per test id; skips only when the registry could not be reached."""
    if done.returncode == EXIT_REGISTRY_UNREACHABLE:
        pytest.skip(done.stderr.strip())
    assert out.exists(), done.stdout + done.stderr
    outcomes: dict[str, dict[str, str]] = json.loads(out.read_text())["outcomes"]
    return outcomes


def _differences(outcomes: dict[str, dict[str, str]]) -> list[str]:
    real, xspec = outcomes["redis"], outcomes["xspec"]
    return [f"{t}: real {real.get(t, 'not run')}, xspec serve {xspec.get(t, 'not run')}"
            for t in sorted(set(real) | set(xspec)) if real.get(t) != xspec.get(t)]


def test_walrus_suite_from_pypi_gives_each_test_the_real_servers_outcome(redis_server: RealRedis,
                                                                         tmp_path: Path) -> None:
    out = tmp_path / "walrus.json"
    try:
        done = _run("--suite", WALRUS, "--from-pypi", "--real-at", f"{redis_server.host}:{redis_server.port}",
                    "--json", str(out))
    finally:
        redis_server.reset()  # the suite leaves its scripts loaded
    outcomes = _outcomes(done, out)
    assert len(outcomes["redis"]) == WALRUS_TESTS and set(outcomes["redis"].values()) == {"passed"}, done.stdout
    assert _differences(outcomes) == [], done.stdout
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tests from walrus 0.9.8's PyPI sdist; licence /" in done.stdout  # its LICENSE goes with the tests


@pytest.mark.parametrize(("args", "says"), [
    (["--suite", "faststream-0.7.4", "--from-pypi"], "ships none of its Redis tests: give --suite-dir"),
    (["--suite", "bullmq-py-3.0.4", "--from-pypi"], "ships none of its Redis tests"),
    (["--suite", WALRUS, "--from-pypi", "--suite-dir", "/"], "not both"),
    (["--suite", WALRUS, "--suite-dir", str(ROOT / "spec")], "is not an unpacked walrus 0.9.8 sdist"),
    (["--suite", WALRUS, "--real-at", "localhost"], "is not HOST:PORT"),
    (["--suite", WALRUS, "--xspec-at", "127.0.0.1:99999"], "is not HOST:PORT"),
    (["--suite", WALRUS, "--real-at", "127.0.0.1:1", "--census", "/tmp/x.json"], "--census records"),
    (["--suite", WALRUS, "--real-at", "127.0.0.1:1", "--target", "xspec"], "does not run on it"),
    (["--suite", WALRUS, "--outcomes", "/nonexistent/dir/out.json"], "cannot write"),
])
def test_bad_input_gets_one_line_and_status_2(args: list[str], says: str) -> None:
    done = _run(*args, timeout=60)
    assert done.returncode == 2, done
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_suite_that_always_connects_to_6379_refuses_a_given_address(tmp_path: Path) -> None:
    checkout = tmp_path / "faststream"
    for rel in ("tests", "LICENSE", "pyproject.toml"):
        (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
        (checkout / rel).mkdir() if rel == "tests" else (checkout / rel).write_text("")
    done = _run("--suite", "faststream-0.7.4", "--suite-dir", str(checkout), "--real-at", "127.0.0.1:1", timeout=60)
    assert done.returncode == 2 and "always connects to localhost:6379" in done.stderr, done


def test_an_unreachable_registry_is_said_in_one_line_with_status_3(tmp_path: Path) -> None:
    env = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_EXTRA_INDEX_URL": "",
           "PIP_FIND_LINKS": ""}
    done = _run("--suite", WALRUS, "--cache", str(tmp_path / "cache"), timeout=120, env=env)
    assert done.returncode == EXIT_REGISTRY_UNREACHABLE, done
    assert "the package registry could not be reached" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("suite", [WALRUS, *FROM_REPOSITORIES])
def test_whole_suite_in_its_own_namespace_gives_each_test_the_real_servers_outcome(suite: str,
                                                                                   tmp_path: Path) -> None:
    """Each suite as the census ran it: real 7.0.15 and `xspec serve` each alone on localhost:6379."""
    args = ["--suite", suite, "--json", str(tmp_path / "out.json"), "--differences-only"]
    if suite in FROM_REPOSITORIES:
        checkouts = os.environ.get("XSPEC_FRAMEWORK_CHECKOUTS")
        if not checkouts or not (Path(checkouts) / suite).is_dir():
            pytest.skip(f"{suite}'s tests are only in its repository (its PyPI sdist has none): set "
                        f"XSPEC_FRAMEWORK_CHECKOUTS to a folder holding a checkout named {suite}")
        args += ["--suite-dir", str(Path(checkouts) / suite)]
    done = _run(*args)
    outcomes = _outcomes(done, tmp_path / "out.json")
    assert outcomes["redis"] and _differences(outcomes) == [], done.stdout
    assert done.returncode == 0, done.stdout + done.stderr


# walrus's Array is a hash driven by Lua scripts that return nothing (walrus/scripts/array_*.lua): the three
# TestArray tests failed on an `xspec serve` whose scripts answered a missing return value wrongly.
ARRAY_APPEND = ("local key = KEYS[1]\nlocal value = ARGV[1]\nlocal max_idx = redis.call('HLEN', key)\n"
                "redis.call('HSET', key, max_idx, value)")
ARRAY_EXTEND = ("local key = KEYS[1]\nlocal nargs = #ARGV\nlocal offset = redis.call('HLEN', key)\nlocal idx = 0\n"
                "while idx < nargs do\n  redis.call('HSET', key, idx + offset, ARGV[idx + 1])\n  idx = idx + 1\nend")
ARRAY_POP = ("local key = KEYS[1]\nlocal last_idx = redis.call('HLEN', key) - 1\nif last_idx < 0 then\n"
             "  return nil\nend\nlocal value = redis.call('HGET', key, last_idx)\nredis.call('HDEL', key, last_idx)\n"
             "return value")


def _array_session(port: int) -> list[object]:
    import redis as redis_py

    r = redis_py.Redis(host="127.0.0.1", port=port, db=15)
    try:
        r.flushdb()
        append, extend, pop = (r.register_script(s) for s in (ARRAY_APPEND, ARRAY_EXTEND, ARRAY_POP))
        seen: list[object] = [append(["my-arr"], ["i1"]), append(["my-arr"], ["i2"]),
                              extend(["my-arr"], ["foo", "bar", "baz"]), pop(["my-arr"]), pop(["nothing"])]
        seen += [r.hlen("my-arr"), sorted(r.hscan_iter("my-arr")), r.hgetall("my-arr")]
        r.flushdb()
        r.script_flush()
        return seen
    finally:
        r.close()


def test_walrus_array_scripts_reply_as_the_real_server(redis_server: RealRedis) -> None:
    from xspec.reference.server import ServerThread

    with ServerThread(dialect="redis-7.0") as served:
        assert _array_session(served.port) == _array_session(redis_server.port)
