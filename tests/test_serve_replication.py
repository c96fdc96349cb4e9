"""Replication in `xspec serve` against real Redis 7.0.15 (spec/rules/replication.md, REPL-*, WAIT-*).

Each deployment puts a real replica and an xspec replica behind the same primary (a real one, then an
xspec one), runs the same writes, and compares the two replicas' keyspaces (streams by XINFO STREAM FULL
and XPENDING, consumer groups and PELs included) and every node's replication offsets.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.replication_support import NO_SYNC_DELAY, Real, link_up, wait_until
from tests.support import keyspace_state
from xspec.reference.server import ServerThread

# The xspec primaries send their snapshot at once, as the real ones told repl-diskless-sync-delay 0 do.

# Each replica's own clock sets these when it applies the stream (FAILOVER-GROUP-4).
CLOCK_FIELDS = frozenset({"seen-time", "active-time", "time_since_delivered"})


# INFO replication of a 7.0.15 primary with two replicas (REPL-15), as redis-py parses it.
PRIMARY_FIELDS = ["role", "connected_slaves", "slave0", "slave1", "master_failover_state", "master_replid",
                  "master_replid2", "master_repl_offset", "second_repl_offset", "repl_backlog_active",
                  "repl_backlog_size", "repl_backlog_first_byte_offset", "repl_backlog_histlen"]


@pytest.fixture(scope="module")
def xspecs() -> Iterator[list[ServerThread]]:
    with ServerThread(config=NO_SYNC_DELAY) as a, ServerThread(config=NO_SYNC_DELAY) as b, \
            ServerThread(config=NO_SYNC_DELAY) as c:
        yield [a, b, c]


def client(st: ServerThread) -> redis.Redis:
    return redis.Redis(port=st.port)


def follow(replica: redis.Redis, port: int) -> None:
    replica.replicaof("127.0.0.1", port)
    wait_until(lambda: link_up(replica), what="the replication link")


def workload(p: redis.Redis) -> None:
    """Streams with groups, deliveries, acks, claims, deletions and trims; a transaction; another database."""
    for i in range(20):
        p.xadd("orders", {"n": i})
    p.xgroup_create("orders", "billing", "0")
    p.xgroup_create("orders", "audit", "$", mkstream=True)
    got = p.xreadgroup("billing", "alice", {"orders": ">"}, count=5)
    p.xreadgroup("billing", "bob", {"orders": ">"}, count=3)
    first = got[0][1][0][0]
    p.xack("orders", "billing", first)
    p.xclaim("orders", "billing", "carol", 0, [got[0][1][1][0]])
    p.xautoclaim("orders", "billing", "dave", 0, "0", count=2)
    p.xdel("orders", got[0][1][2][0])
    p.xreadgroup("billing", "erin", {"orders": ">"}, count=2, noack=True)
    p.xadd("capped", {"x": 1}, maxlen=5, approximate=True)
    for i in range(30):
        p.xadd("capped", {"x": i}, maxlen=10, approximate=False)
    p.xtrim("orders", maxlen=18, approximate=True)
    with p.pipeline(transaction=True) as tx:
        tx.xadd("orders", {"n": "tx"})
        tx.rpush("jobs", "a", "b", "c")
        tx.execute()
    p.lpop("jobs")
    p.set("plain", "v")
    p.execute_command("SELECT", 1)
    p.xadd("other", {"db": 1})
    p.execute_command("SELECT", 0)
    p.publish("news", "propagated to replicas, not to the AOF")
    p.xgroup_createconsumer("orders", "billing", "frank")
    p.xgroup_setid("orders", "audit", "0")


def publish_moves_the_offset(primary: redis.Redis) -> bool:
    """PUBLISH goes to the replicas (Redis's forceCommandPropagation): the offset moves by its 31 bytes."""
    # One round trip: the replication cron's keep-alive PING (REPL-13) cannot come between the readings.
    pipe = primary.pipeline(transaction=False)
    pipe.info("replication").publish("c", "m").info("replication")
    before, _, after = pipe.execute()
    moved = int(after["master_repl_offset"]) - int(before["master_repl_offset"])
    return moved == len(b"*3\r\n$7\r\nPUBLISH\r\n$1\r\nc\r\n$1\r\nm\r\n")


def offsets(*nodes: redis.Redis) -> list[int]:
    return [int(n.info("replication")["master_repl_offset"]) for n in nodes]


def same_offsets(primary: redis.Redis, *replicas: redis.Redis) -> None:
    """Every replica's ``master_repl_offset`` becomes the primary's (REPL-2); waited for, as the primary's
    keep-alive PING (REPL-13) may move its offset between the readings."""
    wait_until(lambda: offsets(primary, *replicas) == [offsets(primary)[0]] * (1 + len(replicas)),
               what="every replica's offset to be the primary's")


def settle(primary: redis.Redis, replicas: list[redis.Redis]) -> None:
    """Every replica applied the primary's whole stream (its offset equals the primary's)."""
    def caught_up() -> bool:
        target = offsets(primary)[0]
        return all(int(r.info("replication")["slave_repl_offset"]) == target for r in replicas)
    wait_until(caught_up, what="the replicas to catch up")


def test_xspec_replicates_from_a_real_primary(reals: list[Real], xspecs: list[ServerThread]) -> None:
    primary, real_replica = reals[0].r, reals[1].r
    ours = client(xspecs[0])
    primary.xadd("before", {"synced": "fully"})  # in the RDB of the full sync
    primary.xgroup_create("before", "g", "0")
    primary.xreadgroup("g", "c", {"before": ">"})
    follow(real_replica, reals[0].port)
    follow(ours, reals[0].port)
    workload(primary)
    assert publish_moves_the_offset(primary)
    assert primary.wait(2, 5000) == 2  # both acknowledged (WAIT-1)
    settle(primary, [real_replica, ours])
    assert keyspace_state(ours, [0, 1], ignored=CLOCK_FIELDS) == keyspace_state(
        real_replica, [0, 1], ignored=CLOCK_FIELDS)
    same_offsets(primary, real_replica, ours)
    info = ours.info("replication")
    assert list(info) == list(real_replica.info("replication"))  # REPL-15: the same fields, in order
    assert list(primary.info("replication")) == PRIMARY_FIELDS  # what the real primary prints
    assert info["role"] == "slave" and info["master_port"] == reals[0].port
    assert info["master_replid"] == primary.info("replication")["master_replid"]
    assert ours.role()[:4] == [b"slave", b"127.0.0.1", reals[0].port, b"connected"]
    # READONLY for a client's writes, reads served (REPL-10, REPL-12)
    with pytest.raises(redis.ReadOnlyError):
        ours.xadd("orders", {"n": "no"})
    assert ours.xlen("orders") == primary.xlen("orders")
    # A link drop: the xspec replica continues from the backlog (REPL-6, REPL-7)
    before = primary.info("stats")["sync_partial_ok"]
    ours.execute_command("XSPEC.LINK", "CUT")
    primary.xadd("orders", {"n": "while-cut"})
    wait_until(lambda: link_up(ours), what="the link to come back")
    assert primary.info("stats")["sync_partial_ok"] == before + 1
    settle(primary, [ours])
    assert ours.xrevrange("orders", count=1)[0][1] == {b"n": b"while-cut"}
    ours.replicaof("no", "one")
    real_replica.replicaof("no", "one")
    for r in (primary, real_replica, ours):
        r.flushall()


def test_a_real_replica_follows_xspec(reals: list[Real], xspecs: list[ServerThread]) -> None:
    primary, ours_replica = client(xspecs[1]), client(xspecs[2])
    real_replica = reals[1].r
    primary.xadd("before", {"synced": "fully"})
    primary.xgroup_create("before", "g", "0")
    primary.xreadgroup("g", "c", {"before": ">"})
    follow(real_replica, xspecs[1].port)
    follow(ours_replica, xspecs[1].port)
    workload(primary)
    assert publish_moves_the_offset(primary)
    assert primary.wait(2, 5000) == 2
    settle(primary, [real_replica, ours_replica])
    assert keyspace_state(real_replica, [0, 1], ignored=CLOCK_FIELDS) == keyspace_state(
        ours_replica, [0, 1], ignored=CLOCK_FIELDS)
    same_offsets(primary, real_replica, ours_replica)
    # The primary's view: ROLE and INFO list both replicas with their acknowledged offsets (REPL-14, REPL-15)
    role = primary.role()
    assert role[0] == b"master" and len(role[2]) == 2
    info = primary.info("replication")
    assert info["connected_slaves"] == 2 and info["repl_backlog_active"] == 1
    assert list(info) == PRIMARY_FIELDS
    assert real_replica.info("replication")["master_replid"] == info["master_replid"]
    # The real replica reconnects after a cut and continues (+CONTINUE)
    before = primary.info("stats")["sync_partial_ok"]
    real_replica.client_kill_filter(_type="master")
    wait_until(lambda: link_up(real_replica), what="the real replica's link")
    assert primary.info("stats")["sync_partial_ok"] == before + 1
    primary.xadd("orders", {"n": "after"})
    settle(primary, [real_replica, ours_replica])
    assert real_replica.xrevrange("orders", count=1)[0][1] == {b"n": b"after"}


def test_blocked_reader_on_a_replica_and_wait(xspecs: list[ServerThread]) -> None:
    """Needs the deployment of the test before: xspec 1 primary, xspec 2 and the real replica following."""
    primary, replica = client(xspecs[1]), client(xspecs[2])
    if primary.info("replication")["connected_slaves"] < 2:
        pytest.skip("runs on the previous test's deployment")
    # A blocked XREAD on the replica is served by the replicated XADD (REPL-12)
    import threading
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.append(client(xspecs[2]).xread({"wakeup": "$"}, block=5000)))
    reader.start()
    wait_until(lambda: replica.info("clients")["blocked_clients"] == 1, what="the reader to block")
    primary.xadd("wakeup", {"hello": "replica"})
    reader.join(10)
    assert got and got[0][0][1][0][1] == {b"hello": b"replica"}
    # WAIT counts acknowledgements (WAIT-1, WAIT-4); inside MULTI it never blocks
    primary.xadd("w", {"a": 1})
    assert primary.wait(2, 5000) == 2
    replica.execute_command("XSPEC.LINK", "HOLD")
    primary.xadd("w", {"a": 2})
    started = time.monotonic()
    assert primary.wait(2, 300) == 1  # the held replica does not acknowledge; the count when it times out
    assert time.monotonic() - started >= 0.25
    # once the real replica has acknowledged everything (the GETACK the WAIT sent included)
    wait_until(lambda: max(int(r[2]) for r in primary.role()[2]) == offsets(primary)[0], what="an acknowledgement")
    with primary.pipeline(transaction=True) as tx:
        tx.execute_command("WAIT", 2, 0)
        assert tx.execute() == [1]
    replica.execute_command("XSPEC.LINK", "FLOW")
    assert primary.wait(2, 5000) == 2
    with pytest.raises(redis.ResponseError, match="WAIT cannot be used with replica instances"):
        replica.wait(1, 0)
    # A write inside MULTI on a replica is refused and dooms the transaction (REPL-10)
    one = redis.Redis(port=xspecs[2].port, single_connection_client=True)
    one.execute_command("MULTI")
    with pytest.raises(redis.ReadOnlyError):
        one.execute_command("XADD", "w", "*", "a", "3")
    with pytest.raises(redis.exceptions.ExecAbortError):
        one.execute_command("EXEC")
    one.close()


def test_partial_and_full_resync_between_xspec_nodes(xspecs: list[ServerThread], reals: list[Real]) -> None:
    """Promote the xspec replica; the old primary, which took a write after that, rejoins with a full sync
    (REPL-8, REPL-9: its offset is past the new primary's second_repl_offset) and loses that write."""
    old, new = client(xspecs[1]), client(xspecs[2])
    if new.info("replication")["role"] != "slave":
        pytest.skip("runs on the previous tests' deployment")
    reals[1].r.replicaof("no", "one")
    settle(old, [new])
    new.replicaof("no", "one")
    info = new.info("replication")
    assert info["role"] == "master" and info["master_replid2"] == old.info("replication")["master_replid"]
    assert info["second_repl_offset"] == info["master_repl_offset"] + 1
    new.xadd("orders", {"n": "on-new"})
    old.xadd("orders", {"n": "lost"})  # the old primary still takes writes
    full_before = new.info("stats")["sync_full"]
    follow(old, xspecs[2].port)
    assert new.info("stats")["sync_full"] == full_before + 1
    settle(new, [old])
    assert old.xrevrange("orders", count=1)[0][1] == {b"n": b"on-new"}
    assert keyspace_state(old, [0, 1], ignored=CLOCK_FIELDS) == keyspace_state(new, [0, 1], ignored=CLOCK_FIELDS)
    # And back: the new primary steps down to the old one, which has its history: a partial resync
    old.replicaof("no", "one")
    old.xadd("orders", {"n": "back"})
    partial_before = old.info("stats")["sync_partial_ok"]
    follow(new, xspecs[1].port)
    assert old.info("stats")["sync_partial_ok"] == partial_before + 1
    settle(old, [new])
    assert new.xrevrange("orders", count=1)[0][1] == {b"n": b"back"}
    new.replicaof("no", "one")


OTHER_DIALECTS = ("redis-6.2", "redis-7.2", "redis-7.4", "valkey-8.1", "valkey-9.1")


@pytest.mark.parametrize("dialect", OTHER_DIALECTS)
def test_replication_both_ways_in_other_dialects(dialect: str) -> None:
    """Each dialect's real server as primary (a real and an xspec replica of that dialect), then xspec as the
    primary of a real replica: the replicas hold the same keyspace and every offset is the primary's."""
    from tests.real_servers import dialect_binary
    binary = dialect_binary(dialect)[0]
    reals = [Real(binary), Real(binary)]
    try:
        with ServerThread(dialect=dialect, config=NO_SYNC_DELAY) as a, \
                ServerThread(dialect=dialect, config=NO_SYNC_DELAY) as b:
            primary, real_replica, ours = reals[0].r, reals[1].r, client(a)
            follow(real_replica, reals[0].port)
            follow(ours, reals[0].port)
            workload(primary)
            settle(primary, [real_replica, ours])
            assert keyspace_state(ours, [0, 1], ignored=CLOCK_FIELDS) == keyspace_state(
                real_replica, [0, 1], ignored=CLOCK_FIELDS)
            same_offsets(primary, real_replica, ours)
            # xspec as the primary of the real server and of another xspec replica
            ours.replicaof("no", "one")
            real_replica.replicaof("no", "one")
            for r in (real_replica, ours):
                r.flushall()
            xspec_primary, xspec_replica = ours, client(b)
            follow(real_replica, a.port)
            follow(xspec_replica, a.port)
            workload(xspec_primary)
            assert xspec_primary.wait(2, 5000) == 2
            settle(xspec_primary, [real_replica, xspec_replica])
            assert keyspace_state(real_replica, [0, 1], ignored=CLOCK_FIELDS) == keyspace_state(
                xspec_replica, [0, 1], ignored=CLOCK_FIELDS)
            same_offsets(xspec_primary, real_replica, xspec_replica)
    finally:
        for s in reals:
            s.stop()


def test_min_replicas_to_write() -> None:
    """REPL-11: writes are refused while fewer good replicas than min-replicas-to-write are counted."""
    with ServerThread(config=NO_SYNC_DELAY) as a, ServerThread(config=NO_SYNC_DELAY) as b:
        primary, replica = client(a), client(b)
        primary.config_set("min-replicas-to-write", 1)
        with pytest.raises(redis.ResponseError, match="NOREPLICAS Not enough good replicas to write."):
            primary.xadd("s", {"a": 1})
        follow(replica, a.port)
        wait_until(lambda: primary.info("replication").get("min_slaves_good_slaves") == 1, what="a good replica")
        assert primary.xadd("s", {"a": 1}, id="1-0") == b"1-0"
        assert primary.xlen("s") == 1
        primary.config_set("min-replicas-to-write", 0)
        assert "min_slaves_good_slaves" not in primary.info("replication")


def test_failover_hands_over_to_the_target() -> None:
    """FAILOVER-1 .. FAILOVER-5: the checks in order, then the coordinated handover (the target continues
    the old primary's history: nothing is lost, the old primary follows it)."""
    with ServerThread(config=NO_SYNC_DELAY) as a, ServerThread(config=NO_SYNC_DELAY) as b, \
            ServerThread(config=NO_SYNC_DELAY) as c:
        primary, target, other = client(a), client(b), client(c)
        for text, argv in (("FAILOVER requires connected replicas.", ["FAILOVER"]),
                           ("No failover in progress.", ["FAILOVER", "ABORT"]),
                           ("syntax error", ["FAILOVER", "FORCE", "FORCE"]),
                           ("FAILOVER timeout must be greater than 0", ["FAILOVER", "TIMEOUT", "0"])):
            with pytest.raises(redis.ResponseError, match=text):
                primary.execute_command(*argv)
        follow(target, a.port)
        follow(other, a.port)
        with pytest.raises(redis.ResponseError, match="FAILOVER is not valid when server is a replica."):
            target.execute_command("FAILOVER")
        with pytest.raises(redis.ResponseError, match="FAILOVER target HOST and PORT is not a replica."):
            primary.execute_command("FAILOVER", "TO", "127.0.0.1", "1")
        with pytest.raises(redis.ResponseError, match="requires both a timeout and target"):
            primary.execute_command("FAILOVER", "FORCE")
        primary.xadd("s", {"before": "failover"}, id="1-0")
        assert primary.execute_command("FAILOVER", "TO", "127.0.0.1", b.port) == b"OK"
        wait_until(lambda: target.role()[0] == b"master" and primary.role()[:4] == [
            b"slave", b"127.0.0.1", b.port, b"connected"], what="the handover")
        assert primary.info("replication")["master_failover_state"] == "no-failover"
        assert target.info("replication")["master_replid2"] == primary.info("replication")["master_replid2"]
        with pytest.raises(redis.ReadOnlyError):
            primary.xadd("s", {"on": "old"})
        target.xadd("s", {"after": "failover"}, id="2-0")
        settle(target, [primary])
        assert primary.xrange("s") == target.xrange("s") == [(b"1-0", {b"before": b"failover"}),
                                                             (b"2-0", {b"after": b"failover"})]
        wait_until(lambda: link_up(other) and other.xlen("s") == 2, what="the other replica, chained")
