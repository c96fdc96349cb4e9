"""Multi-client scripts run on the real Redis 7.0.15 and on the reference server: the replies must be equal.

Scripts use explicit stream IDs, so replies do not depend on the time. Each
step is ``("call", client, "CMD ...")``, ``("send", client, "CMD ...")``,
``("recv", client)``, ``("waiting", client)`` (no reply yet) or
``("close", client)``. A script's clients speak RESP3 when its name says so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import pytest

from tests.conftest import RealRedis
from tests.support import play_steps
from xspec.reference.server import ServerThread
from xspec.spec.resp import Array, Bulk, Int, Map, Reply
from xspec.traces.record.client import RespConnection

pytestmark = pytest.mark.redis

Step = tuple[str, int] | tuple[str, int, str]


@pytest.fixture(scope="module")
def ref() -> Iterator[ServerThread]:
    with ServerThread() as st:
        yield st


def _argv(step: Sequence[object]) -> list[bytes]:
    return str(step[2]).encode().split() if len(step) == 3 else []


def run(port: int, script: list[Step], proto: int) -> list[object]:
    return play_steps(port, script, proto, _argv)


SCRIPTS: dict[str, list[Step]] = {
    "block-inside-multi": [
        ("call", 1, "MULTI"), ("call", 1, "XREAD BLOCK 0 STREAMS s $"),
        ("call", 1, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"), ("call", 1, "EXEC"),
    ],
    "watch-touched-by-another-client": [
        ("call", 1, "WATCH s"), ("call", 2, "XADD s 1-1 f v"), ("call", 1, "MULTI"),
        ("call", 1, "XLEN s"), ("call", 1, "EXEC"), ("call", 1, "WATCH s"), ("call", 1, "MULTI"),
        ("call", 1, "XADD s 2-1 f v"), ("call", 1, "EXEC"),
    ],
    "fifo-per-key": [
        ("call", 1, "XGROUP CREATE s g $ MKSTREAM"),
        ("send", 2, "XREADGROUP GROUP g a BLOCK 0 STREAMS s >"),
        ("send", 3, "XREADGROUP GROUP g b BLOCK 0 STREAMS s >"),
        ("send", 4, "XREAD BLOCK 0 STREAMS s $"),
        ("call", 1, "XADD s 1-1 f v"), ("recv", 2), ("recv", 4), ("waiting", 3),
        ("call", 1, "XADD s 2-1 f v"), ("recv", 3), ("call", 1, "XPENDING s g"),
    ],
    "served-after-the-whole-exec": [
        ("send", 2, "XREAD BLOCK 0 STREAMS s $"),
        ("call", 1, "MULTI"), ("call", 1, "XADD s 1-1 a 1"), ("call", 1, "XADD s 2-1 b 2"),
        ("call", 1, "EXEC"), ("recv", 2),
    ],
    "pipelined-behind-a-block": [
        ("send", 2, "XREAD BLOCK 0 STREAMS s $"), ("send", 2, "XLEN s"), ("send", 2, "ECHO x"),
        ("waiting", 2), ("call", 1, "XADD s 1-1 f v"), ("recv", 2), ("recv", 2), ("recv", 2),
    ],
    "disconnect-while-blocked": [
        ("send", 2, "XREAD BLOCK 0 STREAMS s $"), ("send", 3, "XREAD BLOCK 0 STREAMS s $"),
        ("close", 2), ("call", 1, "XADD s 1-1 f v"), ("recv", 3), ("call", 1, "CLIENT LIST TYPE pubsub"),
    ],
    "deleted-and-flushed-keys": [
        ("call", 1, "XGROUP CREATE s g $ MKSTREAM"), ("call", 1, "XGROUP CREATE t g $ MKSTREAM"),
        ("send", 2, "XREADGROUP GROUP g a BLOCK 0 STREAMS s >"),
        ("send", 3, "XREAD BLOCK 0 STREAMS s $"),
        ("call", 1, "DEL s"), ("recv", 2), ("waiting", 3),
        ("send", 4, "XREADGROUP GROUP g a BLOCK 0 STREAMS t >"),
        ("call", 1, "FLUSHALL"), ("recv", 4),
        ("call", 1, "SET s x"), ("waiting", 3), ("call", 1, "DEL s"), ("call", 1, "XADD s 5-5 f v"), ("recv", 3),
    ],
    "swapdb-with-blocked-clients": [
        ("call", 1, "SELECT 1"), ("call", 1, "XADD s 1-1 f v"),
        ("send", 2, "XREAD BLOCK 0 STREAMS s 0-0"),
        ("call", 1, "SWAPDB 0 1"), ("recv", 2),
        ("call", 1, "SELECT 0"), ("call", 1, "XLEN s"),
    ],
    "reset-and-quit-inside-multi": [
        ("call", 1, "MULTI"), ("call", 1, "SET k v"), ("call", 1, "RESET"), ("call", 1, "EXEC"),
        ("call", 1, "GET k"), ("call", 1, "MULTI"), ("call", 1, "QUIT"),
    ],
    "hello-queued-in-multi-resp2": [
        ("call", 1, "MULTI"), ("call", 1, "XINFO STREAM nokey"), ("call", 1, "HELLO 3"),
        ("call", 1, "GET nokey"), ("call", 1, "CONFIG GET stream-node-max-entries"), ("call", 1, "EXEC"),
    ],
    "client-unblock": [
        ("call", 1, "CLIENT ID"), ("send", 2, "XREAD BLOCK 0 STREAMS s $"),
        ("call", 1, "CLIENT UNBLOCK 0"),
    ],
    "timeouts": [
        ("call", 1, "XREAD BLOCK 10 STREAMS s $"), ("call", 1, "XGROUP CREATE s g $ MKSTREAM"),
        ("call", 1, "XREADGROUP GROUP g c BLOCK 10 STREAMS s >"), ("call", 1, "XINFO CONSUMERS s g"),
        ("call", 1, "WAIT 0 10"),
    ],
    "client-pause": [
        ("call", 1, "CLIENT PAUSE x"), ("call", 1, "CLIENT PAUSE -1"), ("call", 1, "CLIENT PAUSE 10 FOO"),
        ("call", 1, "CLIENT PAUSE 10 WRITE x"),
        ("call", 1, "CLIENT PAUSE 300 WRITE"), ("call", 2, "GET k"), ("send", 2, "SET k v"), ("waiting", 2),
        ("call", 1, "MULTI"), ("call", 1, "SET k x"),  # queuing a write waits for the pause too
        ("recv", 2), ("call", 1, "EXEC"), ("call", 2, "GET k"),
        ("call", 1, "CLIENT PAUSE 200 ALL"), ("send", 2, "PING"), ("waiting", 2), ("recv", 2),
        ("call", 1, "CLIENT PAUSE 5000 WRITE"), ("call", 1, "CLIENT UNPAUSE"), ("call", 2, "SET k w"),
    ],
    "wrong-types-and-errors-resp3": [
        ("call", 1, "SET s x"), ("call", 1, "XADD s 1-1 f v"), ("call", 1, "XREAD STREAMS s 0"),
        ("call", 1, "XREAD BLOCK 0 STREAMS s"), ("call", 1, "MULTI"), ("call", 1, "XADD s"),
        ("call", 1, "EXEC"), ("call", 1, "TYPE s"), ("call", 1, "XRANGE nokey - +"),
        ("call", 1, "XREAD COUNT 1 STREAMS nokey 0"),
    ],
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_script_matches_redis(redis: RealRedis, ref: ServerThread, name: str) -> None:
    proto = 3 if name.endswith("resp3") else 2
    theirs = run(redis.port, SCRIPTS[name], proto)
    mine = run(ref.port, SCRIPTS[name], proto)
    for step, a, b in zip([s for s in SCRIPTS[name] if s[0] in ("call", "recv", "waiting")], theirs, mine,
                          strict=True):
        if step[2:] == ("CLIENT ID",) and isinstance(a, Reply):
            continue
        assert without_hello_id(a) == without_hello_id(b), (step, a, b)


def without_hello_id(r: object) -> object:
    """HELLO's ``id`` is the host's numbering of connections: blank it out, in maps and in RESP2 arrays."""
    if isinstance(r, Map):
        return Map(tuple((k, Int(0) if k == Bulk(b"id") else without_hello_id(v)) for k, v in r.pairs))
    if isinstance(r, Array):
        items = [without_hello_id(i) for i in r.items]
        for i in range(len(items) - 1):
            if items[i] == Bulk(b"id") and isinstance(items[i + 1], Int):
                items[i + 1] = Int(0)
        return Array(tuple(items))  # type: ignore[arg-type]
    return r


def test_client_unblock_by_id(ref: ServerThread) -> None:
    a = RespConnection("127.0.0.1", ref.port)
    b = RespConnection("127.0.0.1", ref.port)
    try:
        bid = b.call([b"CLIENT", b"ID"])
        b.send([b"XREAD", b"BLOCK", b"0", b"STREAMS", b"unblock-me", b"$"])
        time.sleep(0.05)
        assert a.call([b"CLIENT", b"UNBLOCK", str(bid.value).encode(), b"ERROR"]).value == 1  # type: ignore[union-attr]
        assert b.recv().text == "UNBLOCKED client unblocked via CLIENT UNBLOCK"  # type: ignore[union-attr]
    finally:
        a.close()
        b.close()
