"""BRPOPLPUSH and BLMPOP (spec/rules/lists.md BLIST-11, BLIST-12, LIST-DIALECT-2).

Each script runs on every dialect's real server (its trace checked on the model) and on the reference in
the same dialect, in RESP2 and RESP3 (``tests/test_lists.py``'s ``differential``); list readers of every
kind and stream readers share a key's queue; propagation is compared with 7.0.15's replication stream.
"""

from __future__ import annotations

import socket
import time

import pytest

from tests.support import ReplicaTap
from tests.test_lists import ALL_DIALECTS, differential, lists_real_servers, lists_reference_servers
from tests.test_propagation import assert_propagation_matches
from xspec.spec.resp import Parser, encode_command
from xspec.traces.record.client import RespConnection

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers", "lists_reference_servers"]

NEWER = tuple(d for d in ALL_DIALECTS if d != "redis-6.2")

BRPOPLPUSH = [
    ("call", 1, "BRPOPLPUSH", "l", "d", "x"), ("call", 1, "BRPOPLPUSH", "l", "d", "-1"),
    ("call", 1, "RPUSH", "l", "a", "b", "c"), ("call", 1, "BRPOPLPUSH", "l", "d", "0"),
    ("call", 1, "LRANGE", "d", "0", "-1"), ("call", 1, "BRPOPLPUSH", "l", "l", "0"), ("call", 1, "LRANGE", "l", "0", "-1"),
    ("call", 1, "SET", "str", "v"), ("call", 1, "BRPOPLPUSH", "l", "str", "0"), ("call", 1, "BRPOPLPUSH", "str", "d", "0"),
    ("call", 1, "MULTI"), ("call", 1, "BRPOPLPUSH", "nokey", "d", "0"), ("call", 1, "EXEC"),
    # served in the order the readers blocked, list and stream readers on one key
    ("send", 2, "BRPOPLPUSH", "q", "d2", "0"), ("waiting", 2),
    ("send", 3, "XREAD", "BLOCK", "0", "STREAMS", "q", "$"), ("waiting", 3),
    ("send", 4, "BLPOP", "q", "0"), ("waiting", 4), ("send", 5, "BRPOPLPUSH", "q", "d2", "0"), ("waiting", 5),
    ("call", 1, "RPUSH", "q", "1", "2"), ("recv", 2), ("recv", 4), ("waiting", 5), ("waiting", 3),
    ("call", 1, "LRANGE", "d2", "0", "-1"), ("call", 1, "EXISTS", "q"),
    ("call", 1, "LPUSH", "q", "3"), ("recv", 5), ("call", 1, "LRANGE", "d2", "0", "-1"), ("close", 3),
    # a destination of another type when served: WRONGTYPE, the next reader takes the element
    ("send", 2, "BRPOPLPUSH", "e", "str", "0"), ("waiting", 2), ("send", 3, "BRPOPLPUSH", "e", "d3", "0"),
    ("waiting", 3), ("call", 1, "LPUSH", "e", "only"), ("recv", 2), ("recv", 3), ("call", 1, "LRANGE", "d3", "0", "-1"),
    # the timeout: a null array
    ("send", 2, "BRPOPLPUSH", "t", "d", "0.05"), ("recv", 2),
]

BLMPOP = [
    ("call", 1, "BLMPOP", "0", "0", "l", "LEFT"), ("call", 1, "BLMPOP", "0", "x", "l", "LEFT"),
    ("call", 1, "BLMPOP", "0", "2", "l", "LEFT"), ("call", 1, "BLMPOP", "0", "1", "l", "UP"),
    ("call", 1, "BLMPOP", "0", "1", "l", "LEFT", "COUNT", "0"), ("call", 1, "BLMPOP", "0", "1", "l", "LEFT", "COUNT"),
    ("call", 1, "BLMPOP", "0", "1", "l", "LEFT", "COUNT", "1", "COUNT", "1"),
    ("call", 1, "BLMPOP", "x", "1", "l", "LEFT"), ("call", 1, "BLMPOP", "-1", "1", "l", "LEFT"),
    ("call", 1, "BLMPOP", "x", "1", "l", "UP"),
    ("call", 1, "RPUSH", "l", "a", "b", "c", "d"), ("call", 1, "SET", "str", "v"),
    ("call", 1, "BLMPOP", "0", "2", "nokey", "l", "LEFT"), ("call", 1, "BLMPOP", "0", "1", "l", "right", "count", "2"),
    ("call", 1, "BLMPOP", "0", "2", "str", "l", "LEFT"), ("call", 1, "BLMPOP", "0", "2", "l", "str", "LEFT", "COUNT", "9"),
    ("call", 1, "EXISTS", "l"), ("call", 1, "MULTI"), ("call", 1, "BLMPOP", "0", "1", "nokey", "LEFT"),
    ("call", 1, "EXEC"),
    # blocked readers: served in order, each its count; BLPOP and BLMPOP on one key
    ("send", 2, "BLMPOP", "0", "2", "a", "b", "LEFT", "COUNT", "2"), ("waiting", 2),
    ("send", 3, "BLPOP", "b", "0"), ("waiting", 3), ("send", 4, "BLMPOP", "0", "1", "b", "RIGHT", "COUNT", "5"),
    ("waiting", 4), ("call", 1, "RPUSH", "b", "1", "2", "3", "4"), ("recv", 2), ("recv", 3), ("recv", 4),
    ("call", 1, "EXISTS", "b"),
    ("send", 2, "BLMPOP", "0.05", "1", "t", "LEFT"), ("recv", 2),
]

TRANSACTION_SERVES = [
    # BLIST-3: a list filled in a transaction serves BRPOPLPUSH and BLMPOP readers after EXEC
    ("send", 2, "BLMPOP", "0", "1", "k", "LEFT", "COUNT", "2"), ("waiting", 2),
    ("send", 3, "BRPOPLPUSH", "k", "k2", "0"), ("waiting", 3),
    ("call", 1, "MULTI"), ("call", 1, "RPUSH", "k", "x", "y"), ("call", 1, "RPUSH", "k", "z"), ("call", 1, "EXEC"),
    ("recv", 2), ("recv", 3), ("call", 1, "LRANGE", "k2", "0", "-1"), ("call", 1, "EXISTS", "k"),
]


@pytest.mark.parametrize("name, script, dialects", [
    ("brpoplpush", BRPOPLPUSH, ALL_DIALECTS), ("blmpop", BLMPOP, NEWER), ("transaction", TRANSACTION_SERVES, NEWER),
])
def test_blocking_moves_differential(lists_real_servers, lists_reference_servers, name, script, dialects):
    """BLIST-11, BLIST-12 on every dialect's real server, the model and the reference."""
    differential(lists_real_servers, lists_reference_servers, script, dialects)


def test_blmpop_is_unknown_to_62(lists_real_servers, lists_reference_servers):
    """LIST-DIALECT-2: 6.2 has no BLMPOP."""
    differential(lists_real_servers, lists_reference_servers, [("call", 1, "BLMPOP", "0", "1", "l", "LEFT")],
                 ("redis-6.2",))


def test_blocking_moves_propagate(redis):
    """BLIST-11, BLIST-12: what a 7.0.15 replica receives, served at once and served blocked."""
    assert_propagation_matches(redis, [
        (1, ["RPUSH", "l", "a", "b", "c"]), (1, ["BRPOPLPUSH", "l", "d", "0"]),
        (1, ["BLMPOP", "0", "2", "nokey", "l", "RIGHT", "COUNT", "5"]), (1, ["BLMPOP", "0", "1", "d", "LEFT"]),
        (2, ["BRPOPLPUSH", "q", "q2", "0"], "send"), (3, ["BLMPOP", "0", "1", "q", "left", "COUNT", "2"], "send"),
        (1, ["RPUSH", "q", "1", "2", "3", "4"]),
    ])


class _PsyncTap(ReplicaTap):
    """A :class:`ReplicaTap` that attaches with ``PSYNC ? -1`` (the reference answers ``SYNC`` with
    ``+FULLRESYNC`` too, which the plain tap refuses)."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.host, self.port = host, port
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.sendall(encode_command([b"PSYNC", b"?", b"-1"]))
        buf = b""
        while buf.count(b"\r\n") < 2:
            buf += self._recv()
        buf = buf.lstrip(b"\n")
        _, rest = buf.split(b"\r\n", 1)  # +FULLRESYNC <id> <offset>
        rest = rest.lstrip(b"\n")
        while b"\r\n" not in rest:
            rest += self._recv()
        head, rest = rest.split(b"\r\n", 1)
        size = int(head[1:])
        while len(rest) < size:
            rest += self._recv()
        self.parser = Parser()
        self.parser.feed(rest[size:])
        self.take(marker_db=15)


def _reference_ops(port: int, script: list[tuple[object, ...]]) -> list[list[bytes]]:
    """What the reference propagates for ``script`` (run as ``run_real`` runs one)."""
    conns: dict[int, RespConnection] = {}
    tap = _PsyncTap("127.0.0.1", port)
    try:
        for step in script:
            client, args = step[0], [str(a).encode() for a in step[1]]  # type: ignore[attr-defined]
            conn = conns.get(client) or conns.setdefault(client, RespConnection("127.0.0.1", port))  # type: ignore[arg-type]
            if len(step) > 2:
                conn.send(args)
                time.sleep(0.05)
            else:
                conn.call(args)
        return tap.take()
    finally:
        for conn in conns.values():
            conn.close()
        tap.close()


def test_reference_propagates_as_the_real_server(redis, lists_reference_servers):
    """BLIST-11, BLIST-12: the reference's replication stream equals 7.0.15's (served at once and blocked)."""
    from tests.test_propagation import run_real

    script: list[tuple[object, ...]] = [
        (1, ["RPUSH", "l", "a", "b", "c"]), (1, ["BRPOPLPUSH", "l", "d", "0"]),
        (1, ["BLMPOP", "0", "2", "nokey", "l", "RIGHT", "COUNT", "5"]), (1, ["BLMPOP", "0", "1", "d", "LEFT"]),
        (2, ["BRPOPLPUSH", "q", "q2", "0"], "send"), (3, ["BLMPOP", "0", "1", "q", "left", "COUNT", "2"], "send"),
        (1, ["RPUSH", "q", "1", "2", "3", "4"]),
    ]
    redis.reset()
    _, real, _ = run_real(redis, script)
    redis.reset()
    port = lists_reference_servers["redis-7.0"].port
    conn = RespConnection("127.0.0.1", port)
    conn.call([b"FLUSHALL"])
    conn.close()
    got = _reference_ops(port, script)
    assert got == real, (got, real)
