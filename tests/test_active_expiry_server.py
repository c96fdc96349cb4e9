"""``xspec serve``'s active expiry cycle against real redis-server 7.0.15 (EXPIRE-ACTIVE-1, -3, -4, -5).

Keys with a short time go with no command reading them: DBSIZE drops, subscribers to
``__keyevent@0__:expired`` get the events, INFO's ``expired_keys`` counts them, a replica gets the
primary's DEL (and deletes nothing by itself), a paused server deletes nothing until unpaused, the
virtual clock expires keys when XSPEC.CLOCK moves it, and ``--checked`` follows without divergence.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.replication_support import NO_SYNC_DELAY, Real, wait_until
from xspec.commands.serve import model_checker
from xspec.reference.propagation import Propagator
from xspec.reference.server import ServerThread
from xspec.spec.resp import Bulk
from xspec.spec.trace_format import Push as PushEvent
from xspec.spec.trace_format import load
from xspec.traces.check.checker import check_trace


@pytest.fixture(scope="module")
def xspecs() -> Iterator[list[ServerThread]]:
    with ServerThread(config=NO_SYNC_DELAY) as a, ServerThread(config=NO_SYNC_DELAY) as b:
        yield [a, b]


@pytest.fixture(params=["redis-7.0.15", "xspec"])
def target(request: pytest.FixtureRequest, reals: list[Real], xspecs: list[ServerThread]) -> Iterator[redis.Redis]:
    port = reals[0].port if request.param == "redis-7.0.15" else xspecs[0].port
    r = redis.Redis(port=port)
    r.replicaof("no", "one")
    r.flushall()
    r.config_set("notify-keyspace-events", "")
    try:
        yield r
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
        r.config_set("notify-keyspace-events", "")
        r.flushall()
        r.close()


def expired_keys(r: redis.Redis) -> int:
    return int(r.info("stats")["expired_keys"])


def test_keys_go_without_access_and_are_counted(target: redis.Redis) -> None:
    before = expired_keys(target)
    # One round trip: no expiry cycle runs between the writes and DBSIZE, however slowly the machine
    # serves the client (50 ms of it between the first SET and DBSIZE and a cron tick would count fewer).
    pipe = target.pipeline(transaction=False)
    for i in range(5):
        pipe.set(f"k{i}", "v", px=50)
    pipe.set("kept", "v").dbsize()
    assert pipe.execute()[-1] == 6
    wait_until(lambda: target.dbsize() == 1, what="the active expiry cycle")
    assert expired_keys(target) - before == 5
    assert target.exists("kept") == 1


def test_subscribers_get_the_expired_events(target: redis.Redis) -> None:
    target.config_set("notify-keyspace-events", "Ex")
    sub = target.pubsub()
    sub.subscribe("__keyevent@0__:expired")
    assert sub.get_message(timeout=2)["type"] == "subscribe"  # type: ignore[index]
    target.set("a", "1", px=30)
    target.set("b", "2", px=60)
    got = set()
    deadline = time.monotonic() + 3
    while len(got) < 2 and time.monotonic() < deadline:
        m = sub.get_message(timeout=0.5)
        if m is not None and m["type"] == "message":
            assert m["channel"] == b"__keyevent@0__:expired"
            got.add(m["data"])
    sub.close()
    assert got == {b"a", b"b"}
    assert target.dbsize() == 0


def test_a_paused_server_deletes_nothing_until_unpaused(target: redis.Redis) -> None:
    # One round trip: the pause is in force before the cycle can see the keys past their time.
    pipe = target.pipeline(transaction=False)
    pipe.set("p1", "v", px=150).set("p2", "v", px=150).execute_command("CLIENT", "PAUSE", "5000", "WRITE")
    pipe.execute()
    time.sleep(0.6)  # four cron ticks past the keys' time
    assert target.dbsize() == 2  # DBSIZE is no write: it runs under the pause, and reads no key
    target.execute_command("CLIENT", "UNPAUSE")
    wait_until(lambda: target.dbsize() == 0, what="the deletions after the pause")


def _replica_pair(primary_port: int, replica: redis.Redis) -> None:
    replica.replicaof("127.0.0.1", primary_port)
    wait_until(lambda: replica.info("replication").get("master_link_status") == "up", what="the link")


@pytest.mark.parametrize("pair", ["redis→redis", "xspec→redis", "xspec→xspec"])
def test_the_replica_gets_the_primarys_del(pair: str, reals: list[Real], xspecs: list[ServerThread]) -> None:
    primary_port = reals[0].port if pair.startswith("redis") else xspecs[0].port
    replica_port = xspecs[1].port if pair.endswith("xspec") else reals[1].port
    primary, replica = redis.Redis(port=primary_port), redis.Redis(port=replica_port)
    primary.replicaof("no", "one")
    primary.flushall()
    _replica_pair(primary_port, replica)
    try:
        replica_before = expired_keys(replica)
        primary.set("gone", "v")
        primary.set("stays", "v")
        assert primary.execute_command("WAIT", "1", "10000") == 1
        assert replica.dbsize() == 2
        # The time is given only now: the primary's cycle cannot delete the key (and send its DEL) before the
        # replica was looked at, however slowly the machine serves these calls.
        primary.pexpire("gone", 50)
        wait_until(lambda: primary.dbsize() == 1, what="the primary's active expiry")
        wait_until(lambda: replica.dbsize() == 1, what="the DEL on the replica")
        assert replica.exists("stays") == 1
        assert expired_keys(replica) == replica_before  # the replica expired nothing itself: it got a DEL
    finally:
        replica.replicaof("no", "one")
        primary.flushall()
        replica.flushall()
        primary.close()
        replica.close()


def test_xspec_propagates_each_deletion_as_del(xspecs: list[ServerThread]) -> None:
    """What the cycle hands to the replicas and the AOF: one DEL per key, no MULTI (EXPIRE-ACTIVE-3)."""
    st = xspecs[0]
    sent: list[list[tuple[int, list[bytes]]]] = []

    def install() -> Any:
        old, st.core.propagation = st.core.propagation, Propagator(sent.append)
        return old

    r = redis.Redis(port=st.port)
    r.replicaof("no", "one")
    r.flushall()
    old = st.call(install)
    try:
        r.set("x", "1", px=20)
        r.set("y", "1", px=20)
        wait_until(lambda: r.dbsize() == 0, what="two deletions")
    finally:
        st.call(lambda: setattr(st.core, "propagation", old))
        r.close()
    deletions = [ops for ops in sent if ops[0][1][0] != b"SET"]
    assert sorted(ops[0][1] for ops in deletions) == [[b"DEL", b"x"], [b"DEL", b"y"]]
    assert all(len(ops) == 1 for ops in deletions)


def test_valkey_unlinks_under_its_lazyfree_default() -> None:
    """Valkey 9.1's lazyfree-lazy-expire is yes: the cycle propagates UNLINK (EXPIRE-LAZY-1)."""
    sent: list[list[tuple[int, list[bytes]]]] = []
    with ServerThread(dialect="valkey-9.1", clock="virtual") as st:
        r = redis.Redis(port=st.port)
        assert r.config_get("lazyfree-lazy-expire") == {"lazyfree-lazy-expire": "yes"}
        st.call(lambda: setattr(st.core, "propagation", Propagator(sent.append)))
        r.set("v", "1", px=50)
        r.execute_command("XSPEC.CLOCK", "ADVANCE", "200")
        st.call(lambda: setattr(st.core, "propagation", None))
        r.close()
    assert [ops[0][1][0] for ops in sent] == [b"SET", b"UNLINK"]
    assert sent[1] == [(0, [b"UNLINK", b"v"])]


def test_the_virtual_clock_expires_keys_when_moved() -> None:
    with ServerThread(clock="virtual") as st:
        r = redis.Redis(port=st.port)
        r.config_set("notify-keyspace-events", "Ex")
        sub = r.pubsub()
        sub.subscribe("__keyevent@0__:expired")
        sub.get_message(timeout=2)
        r.set("early", "1", px=50)
        r.set("late", "1", px=250)
        time.sleep(0.3)  # the wall clock does not count
        assert r.dbsize() == 2
        r.execute_command("XSPEC.CLOCK", "ADVANCE", "40")
        assert r.dbsize() == 2
        r.execute_command("XSPEC.CLOCK", "ADVANCE", "200")  # past the early key's time, not the late one's
        assert r.dbsize() == 1
        r.execute_command("XSPEC.CLOCK", "ADVANCE", "1000")
        assert r.dbsize() == 0
        got = []
        while (m := sub.get_message(timeout=0.5)) is not None:
            got.append(m["data"])
        assert got == [b"early", b"late"]  # in the order of the keys' times
        assert expired_keys(r) == 2
        sub.close()
        r.close()


@pytest.mark.parametrize("clock", ["wall", "virtual"])
def test_checked_follows_active_expiry(clock: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="xspec.serve")
    with ServerThread(clock=clock, checker=model_checker, trace=str(tmp_path / "serve.jsonl")) as st:
        r = redis.Redis(port=st.port)
        r.config_set("notify-keyspace-events", "Ex")
        sub = r.pubsub()
        sub.subscribe("__keyevent@0__:expired")
        sub.get_message(timeout=2)
        for key in ("a", "b", "c"):
            r.set(key, "1", px=50)
        r.set("d", "1")
        if clock == "virtual":
            r.execute_command("XSPEC.CLOCK", "ADVANCE", "300")
        else:
            wait_until(lambda: st.core.dbs[0].expires == {}, what="the active expiry cycle")
        assert r.dbsize() == 1
        assert r.get("a") is None
        r.set("a", "2")
        assert r.keys("*") and r.dbsize() == 2
        got = set()
        while (m := sub.get_message(timeout=0.3)) is not None:
            got.add(m["data"])
        assert got == {b"a", b"b", b"c"}
        sub.close()
        r.close()
        checker = st.core.observer.observers[1]  # type: ignore[union-attr]
        assert checker.divergences == 0, caplog.text
    trace = load(tmp_path / "serve.jsonl")
    pushes = [e.reply for e in trace.events if isinstance(e, PushEvent)]
    messages = {p.items[2] for p in pushes if p.items[0] == Bulk(b"message")}  # type: ignore[union-attr]
    assert messages == {Bulk(b"a"), Bulk(b"b"), Bulk(b"c")}
    if clock == "wall":  # the offline checker takes active expiry steps in wall-clock traces only (EXPIRE-ACTIVE-2)
        verdict = check_trace(trace)
        assert verdict.status == "conform", verdict.describe()


def test_checked_without_the_mirror_diverges(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The mirror is what keeps --checked judging: without it the model still counts the deleted key."""
    from xspec.reference.trace import CheckedRun
    monkeypatch.setattr(CheckedRun, "actively_expired", lambda self, dbid, key, now: None)
    caplog.set_level(logging.ERROR, logger="xspec.serve")
    with ServerThread(clock="virtual", checker=model_checker, trace=str(tmp_path / "serve.jsonl")) as st:
        r = redis.Redis(port=st.port)
        r.set("a", "1", px=50)
        r.execute_command("XSPEC.CLOCK", "ADVANCE", "300")
        assert r.dbsize() == 0
        r.close()
        checker = st.core.observer.observers[1]  # type: ignore[union-attr]
        assert checker.divergences == 1, caplog.text
    assert "DBSIZE" in caplog.text


def test_a_paused_node_deletes_nothing_until_resumed() -> None:
    """XSPEC.NODE PAUSE stops the node's loop work: its cycle deletes nothing until RESUME."""
    with ServerThread() as st:
        r = redis.Redis(port=st.port)
        r.set("n", "1", px=30)
        st.call(lambda: setattr(st.server, "paused", True))
        time.sleep(0.3)
        assert st.call(lambda: len(st.core.dbs[0])) == 1
        st.call(lambda: setattr(st.server, "paused", False))
        wait_until(lambda: st.call(lambda: len(st.core.dbs[0])) == 0, what="the deletion after RESUME")
        r.close()


def test_many_keys_and_a_flush_between_passes(xspecs: list[ServerThread]) -> None:
    """Thousands of keys go within a few ticks; after FLUSHALL the cycle finds the new keys at once."""
    r = redis.Redis(port=xspecs[0].port)
    r.replicaof("no", "one")
    r.flushall()
    # A pass that began before the short keys' time samples 20 keys a tick and stops at a sample that
    # found none expired (EXPIRE-ACTIVE-3, as 7.0's cursor): up to 300 ticks over 6000 keys. At hz 100
    # that is 3 s, at the default 10 it would be 30.
    r.config_set("hz", 100)
    try:
        pipe = r.pipeline(transaction=False)
        for i in range(3000):
            pipe.set(f"m{i}", "v", px=20)
            pipe.set(f"long{i}", "v", ex=3600)
        pipe.execute()
        wait_until(lambda: r.dbsize() == 3000, what="the short keys' deletion")
        r.flushall()
        r.set("fresh", "v", px=20)
        wait_until(lambda: r.dbsize() == 0, timeout=1.0, what="the new key's deletion after FLUSHALL")
    finally:
        r.config_set("hz", 10)
        r.flushall()
        r.close()
