"""What one call's several propagated ops look like on the replication stream, per dialect: wrapped in
MULTI/EXEC or not (spec/rules/server.md PROP-DIALECT-3, spec/rules/sets.md SETS-DIALECT-3).

6.2 sends a stream command's ops (XREADGROUP's XCLAIMs and SETID) one by one and wraps every EXEC's writes,
even a single one; 7.0 wraps a call's ops when there are several and leaves a single write of an EXEC bare.
The real server's stream decides; the reference server of the same dialect must send the same ops.
"""

from __future__ import annotations

import re

import pytest

from tests.support import ReplicaTap
from tests.test_list_blocking_moves import _PsyncTap
from tests.test_lists import lists_real_servers, lists_reference_servers
from xspec.traces.record.client import RespConnection

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers", "lists_reference_servers"]

SCRIPT = [
    ["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "2-1", "f", "v"], ["XGROUP", "CREATE", "s", "g", "0"],
    ["XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">"],
    ["XREADGROUP", "GROUP", "g", "d", "NOACK", "STREAMS", "s", "0"],
    ["MULTI"], ["XADD", "s", "3-1", "f", "v"], ["EXEC"],
    ["MULTI"], ["XADD", "s", "4-1", "f", "v"], ["XDEL", "s", "1-1"], ["EXEC"],
]
_MILLISECONDS = re.compile(rb"^\d{10,}$")


def _ops(tap: ReplicaTap, host: str, port: int) -> list[list[bytes]]:
    conn = RespConnection(host, port)
    try:
        conn.call([b"FLUSHALL"])
        tap.take()
        for words in SCRIPT:
            conn.call([w.encode() for w in words])
        # XCLAIM's TIME is the server's clock: compare its shape, not its value
        return [[b"<ms>" if _MILLISECONDS.match(w) else w for w in op] for op in tap.take() if op[0] != b"SELECT"]
    finally:
        conn.call([b"FLUSHALL"])
        conn.close()


@pytest.mark.parametrize("dialect", ["redis-6.2", "redis-7.0"])
def test_the_reference_wraps_what_the_real_server_wraps(lists_real_servers, lists_reference_servers, dialect):
    real = lists_real_servers.get(dialect)
    if real is None:
        pytest.skip(f"no {dialect} server")
    real.reset()
    tap = ReplicaTap(real.host, real.port)
    try:
        expected = _ops(tap, real.host, real.port)
    finally:
        tap.close()
        real.reset()
    port = lists_reference_servers[dialect].port
    reference_tap = _PsyncTap("127.0.0.1", port)
    try:
        got = _ops(reference_tap, "127.0.0.1", port)
    finally:
        reference_tap.close()
    assert got == expected
    wrapped_claims = expected[3] == [b"MULTI"]  # XREADGROUP's two XCLAIMs
    single = expected.index([b"XADD", b"s", b"3-1", b"f", b"v"])
    bare_single_exec = expected[single - 1] != [b"MULTI"]  # the EXEC of one write
    assert (wrapped_claims, bare_single_exec) == ((False, False) if dialect == "redis-6.2" else (True, True))
