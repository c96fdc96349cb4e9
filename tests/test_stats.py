"""INFO errorstats, commandstats, total_error_replies and the dirty counter (spec/rules/stats.md).

One script of commands (errors of every kind, MULTI/EXEC, a blocked client
served an error, lists and sets) runs after CONFIG RESETSTAT on each real
server (7.0.15, 6.2.14, Valkey 9.1.2) and on the reference server in its
dialect; the counters must be equal (``usec`` aside, which is the host's), and
so must the growth of ``rdb_changes_since_last_save`` after each list, set and
FUNCTION command.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.test_lists import DIALECTS, lists_real_servers, lists_reference_servers
from xspec.spec.resp import Bulk, Verbatim
from xspec.traces.record.client import RespConnection

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers", "lists_reference_servers"]

# (client, command); "send ..." leaves a blocked command, "recv" reads its reply.
SCRIPT = [
    (1, "NOSUCH x"), (1, "GET"), (1, "SET k v"), (1, "LPUSH k a"), (1, "LPUSH l a b c"), (1, "LPOP l 2"),
    (1, "LPOP l 0"), (1, "RPOP l"), (1, "LPOP nokey"), (1, "LPOP l x"), (1, "SADD s a b a"), (1, "SADD s a"),
    (1, "SREM s a z"), (1, "SREM s b"), (1, "RPUSH m 1 2"), (1, "LMOVE m n left right"),
    (1, "LMOVE nokey n left right"), (1, "BLPOP nokey m 0"), (1, "XGROUP CREATE x g $ MKSTREAM"),
    (1, "MULTI"), (1, "SET a 1"), (1, "LPUSH a x"), (1, "GET"), (1, "EXEC"),
    (1, "MULTI"), (1, "SET a 1"), (1, "LPUSH a x"), (1, "EXEC"), (1, "XGROUP CREATE mystream mygroup $ MKSTREAM"),
    (2, "send XREADGROUP GROUP mygroup Alice BLOCK 0 STREAMS mystream >"), (1, "XGROUP DESTROY mystream mygroup"),
    (2, "recv"), (2, "send BLPOP q 0"), (1, "RPUSH q 1 2"), (2, "recv"), (2, "send BLPOP q2 0.02"), (2, "recv"),
    (1, "FUNCTION FLUSH"), (1, "FUNCTION LIST x"), (1, "PING"),
]
# The commands whose dirty-counter growth is compared (STATS-4).
COUNTED = re.compile(r"^(LPUSH|RPUSH|LPOP|RPOP|LMOVE|BLPOP|SADD|SREM|FUNCTION|RPUSH)\b")


def _text(r: object) -> str:
    if isinstance(r, Bulk):
        return r.value.decode()
    assert isinstance(r, Verbatim), r
    return r.text.decode()


def _info(conn: RespConnection, section: str) -> list[str]:
    return [line for line in _text(conn.call([b"INFO", section.encode()])).split("\r\n")
            if line and not line.startswith("#")]


def _dirty(conn: RespConnection) -> int:
    line = next(x for x in _info(conn, "persistence") if x.startswith("rdb_changes_since_last_save:"))
    return int(line.split(":")[1])


def measure(port: int) -> tuple[list[str], list[str], str, list[tuple[str, int]]]:
    """Run SCRIPT after CONFIG RESETSTAT: commandstats (usec removed), errorstats, total_error_replies,
    and the dirty-counter growth of each counted command."""
    admin = RespConnection("127.0.0.1", port)
    conns: dict[int, RespConnection] = {}
    try:
        admin.call([b"FLUSHALL"])
        admin.call([b"CONFIG", b"RESETSTAT"])
        growth: list[tuple[str, int]] = []
        for client, command in SCRIPT:
            conn = conns.get(client) or conns.setdefault(client, RespConnection("127.0.0.1", port))
            if command.startswith("send "):
                conn.send(command[5:].encode().split())
                time.sleep(0.05)
                continue
            before = _dirty(admin)
            if command == "recv":
                conn.recv(5)
            else:
                conn.call(command.encode().split())
            if COUNTED.match(command):
                growth.append((command, _dirty(admin) - before))
        commands = sorted(re.sub(r"usec=\d+,usec_per_call=[\d.]+,", "", line)
                          for line in _info(admin, "commandstats") if not line.startswith("cmdstat_info:"))
        errors = _info(admin, "errorstats")
        total = next(x for x in _info(admin, "stats") if x.startswith("total_error_replies:"))
        return commands, errors, total, growth
    finally:
        admin.close()
        for c in conns.values():
            c.close()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_counters_match_the_real_server(lists_real_servers, lists_reference_servers, dialect):
    """STATS-1, STATS-2, STATS-3, STATS-4, STATS-DIALECT-1."""
    real = lists_real_servers.get(dialect)
    if real is None:
        pytest.skip(f"no {dialect} server installed")
    expected = measure(real.port)
    got = measure(lists_reference_servers[dialect].port)
    assert got[0] == expected[0], "commandstats differ"
    assert got[1:] == expected[1:]


def test_error_code_is_the_first_word_within_32_bytes(lists_reference_servers):
    """STATS-1: the reference counts an error under its code, ERR when no space comes early enough."""
    core = lists_reference_servers["redis-7.0"].core
    before = dict(core.error_codes)
    core.count_error("NOGROUP the consumer group this client was blocked on no longer exists")
    core.count_error("X" * 40 + " far")
    assert core.error_codes.get("NOGROUP", 0) == before.get("NOGROUP", 0) + 1
    assert core.error_codes.get("ERR", 0) == before.get("ERR", 0) + 1


KEYSPACE = ["SET k v", "SET k v NX", "SET k w XX GET", "SET n v XX", "DEL k nokey", "SET a 1", "SET b 2",
            "RENAME a c", "RENAME nokey d", "SWAPDB 0 1", "SWAPDB 0 0", "SELECT 1", "SET x 1", "FLUSHDB", "FLUSHDB",
            "SELECT 0", "SET y 1", "SET z 1", "FLUSHALL", "FLUSHALL", "UNLINK nokey"]


def _keyspace_growth(port: int) -> list[tuple[str, int]]:
    conn, admin = RespConnection("127.0.0.1", port), RespConnection("127.0.0.1", port)
    try:
        conn.call([b"FLUSHALL"])
        out = []
        for command in KEYSPACE:
            before = _dirty(admin)
            conn.call(command.encode().split())
            out.append((command, _dirty(admin) - before))
        return out
    finally:
        conn.close()
        admin.close()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_keyspace_commands_count_changes_as_the_real_server(lists_real_servers, lists_reference_servers, dialect):
    """STATS-5, STATS-DIALECT-3."""
    real = lists_real_servers.get(dialect)
    if real is None:
        pytest.skip(f"no {dialect} server installed")
    assert _keyspace_growth(lists_reference_servers[dialect].port) == _keyspace_growth(real.port)


STREAMS = ["XADD s 1-1 f v", "XADD s 2-1 f v", "XADD s MAXLEN 1 3-1 f v", "XADD s 3-1 f v", "XADD s 4-1 f v",
           "XDEL s 4-1 9-9", "XDEL s 9-9", "XTRIM s MAXLEN 0", "XTRIM s MAXLEN 0", "XSETID s 9-9",
           "XGROUP CREATE s g 0", "XGROUP CREATE s g 0", "XGROUP SETID s g 0", "XGROUP CREATECONSUMER s g c",
           "XGROUP CREATECONSUMER s g c", "XGROUP DELCONSUMER s g c", "XGROUP DELCONSUMER s g c",
           "XACK s g 1-1", "XGROUP DESTROY s g", "XGROUP DESTROY s g", "XGROUP CREATE t g $ MKSTREAM",
           # STATS-7
           "XADD r 1-1 f v", "XADD r 2-1 f v", "XADD u 1-1 f v", "XGROUP CREATE r g 0", "XGROUP CREATE u g 0",
           "XREADGROUP GROUP g a COUNT 1 STREAMS r >", "XREADGROUP GROUP g a STREAMS r >",
           "XREADGROUP GROUP g a STREAMS r >", "XREADGROUP GROUP g b STREAMS r >", "XREADGROUP GROUP g a STREAMS r 0",
           "XREADGROUP GROUP g a STREAMS r 9", "XREADGROUP GROUP g c STREAMS r 0", "XADD r 3-1 f v",
           "XREADGROUP GROUP g d NOACK STREAMS r u > >", "XREADGROUP GROUP g d STREAMS r u 0 0",
           "XREADGROUP GROUP g e STREAMS r nokey > >"]


def _growth(port: int, commands: list[str]) -> list[tuple[str, int]]:
    conn, admin = RespConnection("127.0.0.1", port), RespConnection("127.0.0.1", port)
    try:
        conn.call([b"FLUSHALL"])
        out = []
        for command in commands:
            before = _dirty(admin)
            conn.call(command.encode().split())
            out.append((command, _dirty(admin) - before))
        return out
    finally:
        conn.close()
        admin.close()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_stream_commands_count_changes_as_the_real_server(lists_real_servers, lists_reference_servers, dialect):
    """STATS-6, STATS-7, STATS-DIALECT-4, STATS-DIALECT-5."""
    real = lists_real_servers.get(dialect)
    if real is None:
        pytest.skip(f"no {dialect} server installed")
    assert _growth(lists_reference_servers[dialect].port, STREAMS) == _growth(real.port, STREAMS)
