"""The lifetime counters of spec/rules/stats.md in the dialects of the registry binaries (Redis 7.2.4,
7.4.1, Valkey 8.1.8; tests/test_stats.py covers 7.0.15, 6.2.14 and Valkey 9.1.2), on the model and on
the reference server; and how the model's INFO shows counters it cannot know (STATS-0, ENV-INFO).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.real_servers import SERVER_FIXTURES
from tests.test_stats import CHECKS, model, tcp
from xspec.models import ManualClock, Server
from xspec.reference.server import ServerThread
from xspec.spec.dialect import get_dialect
from xspec.spec.environment import environment_matches
from xspec.spec.resp import Bulk, Reply

pytestmark = pytest.mark.redis

BINARY_DIALECTS = ("redis-7.2", "redis-7.4", "valkey-8.1")


@pytest.fixture(scope="module")
def references() -> Iterator[dict[str, ServerThread]]:
    threads = {d: ServerThread(dialect=d) for d in BINARY_DIALECTS}
    for t in threads.values():
        t.__enter__()
    try:
        yield threads
    finally:
        for t in threads.values():
            t.__exit__(None, None, None)


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("dialect", BINARY_DIALECTS)
def test_counters_match_the_real_binary(request: pytest.FixtureRequest, references, dialect: str, check: str):
    """STATS-1..8, STATS-DIALECT-6, STATS-DIALECT-7: test_stats's checks on the dialect's real server,
    the model and the reference server."""
    expected = CHECKS[check](tcp(request.getfixturevalue(SERVER_FIXTURES[dialect]).port))
    assert CHECKS[check](model(dialect)) == expected, "the model differs"
    assert CHECKS[check](tcp(references[dialect].port)) == expected, "the reference server differs"


def _info(server: Server, *sections: bytes) -> Reply:
    out = server.execute(1, [b"INFO", *sections])
    assert out.reply is not None
    return out.reply


def test_counters_are_free_until_the_trace_resets_them():
    """STATS-0, ENV-INFO: a model that did not see the server start prints its counters as unknown,
    which any recorded value matches; after CONFIG RESETSTAT they are compared exactly."""
    server = Server(get_dialect("redis-7.0"), ManualClock())
    server.execute(1, [b"NOSUCH"])
    server.execute(1, [b"SET", b"k", b"v"])
    unknown = _info(server, b"commandstats", b"errorstats", b"stats", b"persistence")
    text = unknown.value.decode() if isinstance(unknown, Bulk) else ""
    assert "?:?" in text and "total_error_replies:?" in text and "rdb_changes_since_last_save:?" in text
    recorded = Bulk(text.replace("\r\n?:?\r\n", "\r\ncmdstat_get:calls=9,usec=1,usec_per_call=0.11,"
                                 "rejected_calls=0,failed_calls=0\r\n")
                    .replace("total_error_replies:?", "total_error_replies:77")
                    .replace("rdb_changes_since_last_save:?", "rdb_changes_since_last_save:5").encode())
    assert environment_matches([b"INFO", b"commandstats", b"errorstats", b"stats", b"persistence"],
                               recorded, unknown)
    server.execute(1, [b"CONFIG", b"RESETSTAT"])
    server.execute(1, [b"GET", b"k"])
    server.execute(1, [b"GET"])
    known = _info(server, b"commandstats", b"errorstats")
    assert isinstance(known, Bulk)
    lines = known.value.decode().split("\r\n")
    assert "cmdstat_get:calls=1,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0" in lines
    assert "errorstat_ERR:count=1" in lines
    argv = [b"INFO", b"commandstats", b"errorstats"]
    host = Bulk(known.value.replace(b"usec=0,usec_per_call=0.00", b"usec=12,usec_per_call=12.00"))
    assert environment_matches(argv, host, known)  # usec is the host's
    for wrong in (known.value.replace(b"rejected_calls=1", b"rejected_calls=2"),
                  known.value.replace(b"errorstat_ERR:count=1", b"errorstat_ERR:count=2")):
        assert not environment_matches(argv, Bulk(wrong), known)
