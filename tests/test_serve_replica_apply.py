"""How an `xspec serve` replica applies its primary's stream (REPL-2, REPL-12, STATS-2): the XADDs a primary
propagates take a short way on the replica, which must leave the same data and count the same statistics
as real Redis 7.0.15's replica does, and as the replica's general way does when something else (a blocked
reader, WATCH, keyspace events, a transaction) has to see each command."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
import redis

from tests.replication_support import NO_SYNC_DELAY, Real, link_up, wait_until
from tests.support import keyspace_state
from tests.test_serve_replication_sync import linked_replica
from xspec.reference.replica_link import ReplicaLink
from xspec.reference.replication import replication_of, resp_command
from xspec.reference.server import ServerThread
from xspec.spec.resp import NULL_ARRAY

CLOCK_FIELDS = frozenset({"seen-time", "active-time", "time_since_delivered"})
# Commands the test's own clients send to the replicas (not applied from the stream).
OWN = frozenset({"info", "select", "keys", "type", "xinfo|stream", "xinfo|groups", "xpending", "replicaof",
                 "hello", "client|setinfo", "config|set", "ping"})


def stream_workload(p: redis.Redis) -> None:
    """Pipelined XADDs of several shapes (auto IDs, explicit ones, lower-case names, several fields, long
    and numeric values, a new field set, a node filled past stream-node-max-entries) mixed with the
    consumer-group commands a primary propagates (XCLAIM, XACK, XGROUP) and a transaction."""
    with p.pipeline(transaction=False) as pipe:
        for _ in range(450):
            pipe.xadd("s", {"f": "v"})
        for i in range(60):
            pipe.execute_command("xadd", "s", "*", "f", i)
            pipe.execute_command("XADD", "s", "*", "f", "x" * (i * 3), "g", -i)
            pipe.execute_command("Xadd", "t", f"{i + 1}-{i}", "other", "fields", "here", "3")
        pipe.execute()
    p.xgroup_create("s", "g", "0")
    got = p.xreadgroup("g", "alice", {"s": ">"}, count=30)
    p.xack("s", "g", *[entry[0] for entry in got[0][1][:10]])
    p.xclaim("s", "g", "bob", 0, [got[0][1][20][0]])
    with p.pipeline(transaction=True) as tx:
        tx.xadd("s", {"in": "tx"})
        tx.xadd("t", {"in": "tx"})
        tx.execute()
    with p.pipeline(transaction=False) as pipe:
        for _ in range(200):
            pipe.xadd("s", {"f": "after"})
        pipe.execute()


def stream_stats(r: redis.Redis) -> dict[str, int]:
    """INFO commandstats' calls of the commands the stream carries, and the commands processed besides the
    test's own (INFO, SELECT, ...)."""
    stats = r.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}
    own = sum(n for name, n in calls.items() if name in OWN)
    out = {name: n for name, n in calls.items() if name not in OWN}
    out["total_commands_processed besides the test's own"] = int(r.info("stats")["total_commands_processed"]) - own
    return out


def settled(primary: redis.Redis, replicas: list[redis.Redis]) -> None:
    def caught_up() -> bool:
        target = int(primary.info("replication")["master_repl_offset"])
        return all(int(r.info("replication")["slave_repl_offset"]) == target for r in replicas)
    wait_until(caught_up, what="the replicas to catch up")


@pytest.mark.parametrize("primary_kind", ["redis-7.0.15", "xspec"])
def test_replicated_xadds_leave_the_data_and_statistics_of_a_real_replica(primary_kind: str,
                                                                          reals: list[Real]) -> None:
    """A real replica and an xspec replica behind one primary (real or xspec): the same keyspace, the same
    calls per command in INFO commandstats (XADD counted once per entry applied) and the same count of
    commands processed."""
    with ServerThread(config=NO_SYNC_DELAY) as ours_primary, ServerThread(config=NO_SYNC_DELAY) as ours_replica:
        if primary_kind == "xspec":
            primary, port = redis.Redis(port=ours_primary.port), ours_primary.port
        else:
            primary, port = reals[0].r, reals[0].port
        real, ours = reals[1].r, redis.Redis(port=ours_replica.port)
        try:
            primary.xadd("s", {"f": "first"})  # in the snapshot: the stream exists on the replicas
            for r in (real, ours):
                r.config_resetstat()
                r.replicaof("127.0.0.1", port)
                wait_until(lambda r=r: link_up(r), what="the replication link")  # type: ignore[misc]
            stream_workload(primary)
            settled(primary, [real, ours])
            assert keyspace_state(ours, [0], ignored=CLOCK_FIELDS) == keyspace_state(real, [0],
                                                                                     ignored=CLOCK_FIELDS)
            expected = stream_stats(real)
            assert expected["xadd"] == 832 and expected["xclaim"] >= 1
            assert stream_stats(ours) == expected
        finally:
            for r in (real, ours):
                r.replicaof("no", "one")
            for r in (primary, real):
                r.flushall()


# -- the short way against the general way, in process --------------------------------------------------------


def replica_stream() -> bytes:
    """A stream as a primary sends it: explicit-ID XADDs of several shapes, a new key, a transaction, a
    database change, an XADD the replica refuses (an ID not above the top) and consumer-group commands."""
    commands: list[list[bytes]] = [[b"XADD", b"s", b"1-1", b"f", b"v"]]
    for i in range(2, 400):
        commands.append([b"XADD" if i % 3 else b"xadd", b"s", b"%d-%d" % (i // 4 + 1, i % 4 + 2), b"f", b"%d" % i])
    commands += [[b"XADD", b"s", b"200-0", b"a", b"1", b"b", b"x" * 100], [b"XADD", b"s", b"200-1", b"f", b""],
                 [b"XADD", b"s", b"5-0", b"f", b"too-small"], [b"XADD", b"t", b"1-1", b"f", b"v"],
                 [b"MULTI"], [b"XADD", b"s", b"300-0", b"f", b"v"], [b"XADD", b"t", b"300-1", b"f", b"v"], [b"EXEC"],
                 [b"XGROUP", b"CREATE", b"s", b"g", b"0"],
                 [b"XCLAIM", b"s", b"g", b"c", b"0", b"1-1", b"TIME", b"1000", b"RETRYCOUNT", b"1", b"FORCE",
                  b"JUSTID", b"LASTID", b"1-1"],
                 [b"XACK", b"s", b"g", b"1-1"], [b"SELECT", b"1"], [b"XADD", b"s", b"1-1", b"f", b"v"],
                 [b"XADD", b"s", b"2-1", b"f", b"v"], [b"SELECT", b"0"]]
    commands += [[b"XADD", b"s", b"%d-0" % (400 + i), b"f", b"v"] for i in range(300)]
    return b"".join(resp_command(c) for c in commands)


SEEN_TIME = re.compile(r"\(Bulk\(value=b'seen-time'\), Int\(value=\d+\)\)")


def applied_state(core: Any) -> tuple[Any, ...]:
    """What the replica holds and counts: each stream's entries and layout, the statistics."""
    c = core.connect(None)
    streams = []
    for db in (0, 1):
        core.execute(c, [b"SELECT", b"%d" % db])
        for key in (b"s", b"t"):
            # a consumer's seen-time is the replica's clock when it applied the command
            streams.append(SEEN_TIME.sub("", str(core.execute(c, [b"XINFO", b"STREAM", key, b"FULL"]))))
            entries = core.execute(c, [b"XRANGE", key, b"-", b"+"])
            streams.append(b"".join(entries.parts) if hasattr(entries, "parts") else entries)
    calls = {name: stat[0] for name, stat in core.command_stats.items()}
    failed = {name: stat[3] for name, stat in core.command_stats.items()}
    core.disconnect(c)
    return streams, calls, failed, core.stat_commands, core.dirty, core.stat_errors


def apply(stream: bytes, short_way: bool, monkeypatch: pytest.MonkeyPatch, read: int = 4096) -> tuple[Any, Any]:
    core, link, _ = linked_replica()
    with monkeypatch.context() as m:
        if not short_way:
            m.setattr(ReplicaLink, "_short_way", lambda self, c: None)
        for i in range(0, len(stream), read):
            link._received(stream[i:i + read])
    assert link.applied == replication_of(core).offset == len(stream)
    return core, link


@pytest.mark.parametrize("read", [37, 4096, 1 << 20])
def test_the_short_way_applies_and_counts_as_the_general_way(read: int, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = replica_stream()
    short, _ = apply(stream, True, monkeypatch, read)
    general, _ = apply(stream, False, monkeypatch, read)
    assert applied_state(short) == applied_state(general)
    assert short.command_stats["xadd"][0] == stream.count(b"XADD") + stream.count(b"xadd")
    assert short.command_stats["xadd"][3] == 1  # the XADD whose ID is not above the top failed, as counted


def test_what_else_sees_each_replicated_xadd(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a client waits in XREAD, WATCHes the key or listens to keyspace events on the replica, each
    XADD is seen as the general way shows it (BLOCK-*, REPL-12, NOTIFY-4)."""
    core, link = apply(resp_command([b"XADD", b"s", b"1-1", b"f", b"v"]), True, monkeypatch)
    reader = core.connect(None)
    assert core.execute(reader, [b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$"]) is None
    watcher = core.connect(None)
    core.execute(watcher, [b"WATCH", b"s"])
    more = b"".join(resp_command([b"XADD", b"s", b"%d-0" % i, b"f", b"v"]) for i in range(2, 6))
    link._received(more)
    assert reader.blocked is None  # served by the first of the four
    core.execute(watcher, [b"MULTI"])
    core.execute(watcher, [b"XLEN", b"s"])
    assert core.execute(watcher, [b"EXEC"]) == NULL_ARRAY  # the WATCH saw the change
    assert core.execute(watcher, [b"XLEN", b"s"]).value == 5


def test_a_blocked_reader_on_a_replica_gets_the_first_replicated_entry() -> None:
    """Over the network: XREAD BLOCK on an xspec replica, then a pipelined run of XADDs on the primary; the
    reader gets the first entry alone (served after that command, as Redis serves it)."""
    with ServerThread(config=NO_SYNC_DELAY) as a, ServerThread(config=NO_SYNC_DELAY) as b:
        primary, replica = redis.Redis(port=a.port), redis.Redis(port=b.port)
        primary.xadd("s", {"f": "0"}, id="1-0")
        replica.replicaof("127.0.0.1", a.port)
        wait_until(lambda: link_up(replica), what="the replication link")
        got: list[Any] = []
        reader = threading.Thread(target=lambda: got.append(redis.Redis(port=b.port).xread({"s": "$"}, block=5000)))
        reader.start()
        wait_until(lambda: replica.info("clients")["blocked_clients"] == 1, what="the reader to block")
        with primary.pipeline(transaction=False) as pipe:
            for i in range(2, 50):
                pipe.xadd("s", {"f": i}, id=f"{i}-0")
            pipe.execute()
        reader.join(10)
        assert got == [[[b"s", [(b"2-0", {b"f": b"2"})]]]]
        settled(primary, [replica])
        assert replica.xlen("s") == 49
        replica.replicaof("no", "one")
