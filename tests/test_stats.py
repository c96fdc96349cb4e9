"""INFO errorstats, commandstats, total_error_replies and the dirty counter (spec/rules/stats.md).

One script of commands (errors of every kind, MULTI/EXEC, a blocked client
served an error, lists and sets) runs after CONFIG RESETSTAT on each real
server (7.0.15, 6.2.14, Valkey 9.1.2), on the reference server in its dialect
and on the model (``tests/model_connection.py``); the counters must be equal
(``usec`` aside, which is the host's), and so must the growth of
``rdb_changes_since_last_save`` after each list, set and FUNCTION command.
tests/test_stats_model.py does the same against 7.2, 7.4 and Valkey 8.1.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Protocol

import pytest

from tests.model_connection import ModelServer
from tests.test_lists import DIALECTS, lists_real_servers, lists_reference_servers
from xspec.spec.resp import Bulk, Reply, Verbatim
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


class Conn(Protocol):
    def call(self, argv: list[bytes]) -> Reply: ...
    def send(self, argv: list[bytes]) -> None: ...
    def recv(self, timeout: float = ...) -> Reply: ...
    def close(self) -> None: ...


Connect = Callable[[], Conn]


def tcp(port: int) -> Connect:
    """Connections to a server on the loopback port ``port``."""
    return lambda: RespConnection("127.0.0.1", port)


def model(dialect: str) -> Connect:
    """Connections to a fresh model server of ``dialect``."""
    return ModelServer(dialect).connect


def _text(r: object) -> str:
    if isinstance(r, Bulk):
        return r.value.decode()
    assert isinstance(r, Verbatim), r
    return r.text.decode()


def _info(conn: Conn, section: str) -> list[str]:
    return [line for line in _text(conn.call([b"INFO", section.encode()])).split("\r\n")
            if line and not line.startswith("#")]


def _dirty(conn: Conn) -> int:
    line = next(x for x in _info(conn, "persistence") if x.startswith("rdb_changes_since_last_save:"))
    return int(line.split(":")[1])


def commandstats(admin: Conn) -> list[str]:
    """The Commandstats lines, sorted, ``usec`` removed, without INFO's own line."""
    return sorted(re.sub(r"usec=\d+,usec_per_call=[\d.]+,", "", line)
                  for line in _info(admin, "commandstats") if not line.startswith("cmdstat_info:"))


def measure(connect: Connect, script: list[tuple[int, str]] | None = None,
            counted: re.Pattern[str] | None = None) -> tuple[list[str], list[str], str, list[tuple[str, int]]]:
    """Run ``script`` (SCRIPT) after CONFIG RESETSTAT: commandstats (usec removed), errorstats,
    total_error_replies, and the dirty-counter growth of each ``counted`` command (COUNTED)."""
    script = SCRIPT if script is None else script
    counted = COUNTED if counted is None else counted
    admin = connect()
    conns: dict[int, Conn] = {}
    try:
        admin.call([b"FLUSHALL"])
        admin.call([b"CONFIG", b"RESETSTAT"])
        growth: list[tuple[str, int]] = []
        for client, command in script:
            conn = conns.get(client) or conns.setdefault(client, connect())
            if command.startswith("send "):
                conn.send(command[5:].encode().split())
                time.sleep(0.05)
                continue
            before = _dirty(admin)
            if command == "recv":
                conn.recv(5)
            else:
                conn.call(command.encode().split())
            if counted.match(command):
                growth.append((command, _dirty(admin) - before))
        commands = commandstats(admin)
        errors = _info(admin, "errorstats")
        total = next(x for x in _info(admin, "stats") if x.startswith("total_error_replies:"))
        return commands, errors, total, growth
    finally:
        admin.close()
        for c in conns.values():
            c.close()


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


def _growth(connect: Connect, commands: list[str]) -> list[tuple[str, int]]:
    """The dirty counter's growth over each of ``commands``, after FLUSHALL."""
    conn, admin = connect(), connect()
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




CLAIMS = ["XADD c 1-1 f v", "XADD c 2-1 f v", "XADD c 3-1 f v", "XGROUP CREATE c g 0",
          "XREADGROUP GROUP g a STREAMS c >", "XCLAIM c g b 0 1-1", "XCLAIM c g b 0 1-1 2-1 JUSTID",
          "XCLAIM c g b 0 9-9", "XCLAIM c g b 0 9-9 LASTID 5-0", "XCLAIM c g b 0 9-9 LASTID 5-0",
          "XCLAIM c g b 0 1-1 LASTID 6-0", "XCLAIM c g h 100000000 1-1", "XDEL c 2-1", "XCLAIM c g d 0 2-1",
          "XCLAIM c g b 0 7-7 FORCE", "XCLAIM c g b 0 3-1 FORCE RETRYCOUNT 5", "XAUTOCLAIM c g e 0 0",
          "XAUTOCLAIM c g e 0 0 COUNT 1 JUSTID", "XAUTOCLAIM c g f 100000000 0", "XDEL c 1-1",
          "XAUTOCLAIM c g e 0 0", "XAUTOCLAIM nokey g e 0 0", "XCLAIM c nogroup b 0 1-1"]


# Errors inside MULTI/EXEC of every kind: rejected while queuing, a command's own error in EXEC's
# array, EXECABORT, a failed WATCH, MULTI nested, EXEC and DISCARD without MULTI, a no_multi command.
TRANSACTIONS = [
    (1, "SET w 1"), (1, "WATCH w"), (2, "SET w 2"), (1, "MULTI"), (1, "SET w 3"), (1, "SET x 1"), (1, "EXEC"),
    (1, "MULTI"), (1, "MULTI"), (1, "XADD s bad f v"), (1, "XADD s 1-1 f v"), (1, "XGROUP CREATE s g 9-9"),
    (1, "XGROUP CREATE s g 9-9"), (1, "EXEC"), (1, "EXEC"), (1, "DISCARD"), (1, "MULTI"), (1, "WATCH w"),
    (1, "SET y 1"), (1, "EXEC"), (1, "MULTI"), (1, "XACK"), (1, "DISCARD"), (1, "MULTI"),
    (1, "XREADGROUP GROUP g a BLOCK 0 STREAMS s >"), (1, "XREADGROUP GROUP nog a STREAMS s >"), (1, "EXEC"),
    (1, "HELLO 4"), (1, "XGROUP NOSUCH s g"), (1, "AUTH x"), (1, "PING")]
TRANSACTIONS_COUNTED = re.compile(r"^(SET|EXEC|XADD|XGROUP|XREADGROUP)\b")


def blocked_calls(connect: Connect) -> list[list[str]]:
    """Commandstats after a client blocks, after it is served, after one times out, and after a blocked
    XREADGROUP is served an error (STATS-2, STATS-3, STATS-DIALECT-7)."""
    admin, client, pusher = connect(), connect(), connect()
    try:
        admin.call([b"FLUSHALL"])
        admin.call([b"CONFIG", b"RESETSTAT"])
        seen = []
        client.send([b"BLPOP", b"q", b"0"])
        time.sleep(0.05)
        seen.append(commandstats(admin))
        pusher.call([b"RPUSH", b"q", b"1"])
        client.recv(5)
        seen.append(commandstats(admin))
        client.send([b"BRPOP", b"q", b"0.01"])
        client.recv(5)
        seen.append(commandstats(admin))
        pusher.call([b"XGROUP", b"CREATE", b"s", b"g", b"$", b"MKSTREAM"])
        client.send(b"XREADGROUP GROUP g c BLOCK 0 STREAMS s >".split())
        time.sleep(0.05)
        seen.append(commandstats(admin))
        pusher.call([b"XGROUP", b"DESTROY", b"s", b"g"])
        client.recv(5)
        seen.append(commandstats(admin))
        return seen
    finally:
        for c in (admin, client, pusher):
            c.close()


def unblocked(connect: Connect) -> list[list[str]]:
    """Commandstats after CLIENT UNBLOCK of an XREAD (TIMEOUT by default), a BLPOP (TIMEOUT) and a BRPOP
    (ERROR), and errorstats (STATS-9)."""
    admin, client = connect(), connect()
    try:
        cid = client.call([b"CLIENT", b"ID"])
        target = str(getattr(cid, "value", 0)).encode()
        admin.call([b"CONFIG", b"RESETSTAT"])
        seen = []
        for command, how in ((b"XREAD BLOCK 0 STREAMS s $", []), (b"BLPOP q 0", [b"TIMEOUT"]), (b"BRPOP q 0", [b"ERROR"])):
            client.send(command.split())
            time.sleep(0.05)
            seen.append([repr(admin.call([b"CLIENT", b"UNBLOCK", target, *how])), repr(client.recv(5))])
            seen.append(commandstats(admin))
        seen.append(_info(admin, "errorstats"))
        return seen
    finally:
        admin.close()
        client.close()


# What each differential check measures, and the rules it covers.
CHECKS: dict[str, Callable[[Connect], object]] = {
    "script": measure,  # STATS-1..4, STATS-DIALECT-1, STATS-DIALECT-2
    "keyspace": lambda connect: _growth(connect, KEYSPACE),  # STATS-5, STATS-DIALECT-3
    "streams": lambda connect: _growth(connect, STREAMS),  # STATS-6, STATS-7, STATS-DIALECT-4..6
    "claims": lambda connect: _growth(connect, CLAIMS),  # STATS-8, STATS-DIALECT-5
    "transactions": lambda connect: measure(connect, TRANSACTIONS, TRANSACTIONS_COUNTED),  # STATS-DIALECT-8
    "blocked": blocked_calls,  # STATS-3, STATS-DIALECT-7
    "unblocked": unblocked,  # STATS-9
}


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_model_and_the_reference_count_as_the_real_server(lists_real_servers, lists_reference_servers,
                                                             dialect, check):
    """STATS-1..8 and the dialect differences: the counters after each check's commands are the real
    server's on the model and on the reference server."""
    real = lists_real_servers.get(dialect)
    if real is None:
        pytest.skip(f"no {dialect} server installed")
    expected = CHECKS[check](tcp(real.port))
    assert CHECKS[check](model(dialect)) == expected, "the model differs"
    assert CHECKS[check](tcp(lists_reference_servers[dialect].port)) == expected, "the reference server differs"
