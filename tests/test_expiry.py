"""Key expiry on an explicit clock: the model and the reference core side by side (spec/rules/expiry.md).

The differential tests against the real servers are in tests/test_strings.py; these scripts need a
clock the test moves (lazy expiry's propagation, WATCH, RENAME, RESTORE, DEBUG RELOAD, INFO), which
only the model and the reference's virtual clock give.
"""

from __future__ import annotations

import pytest

from xspec.models import ManualClock, Server
from xspec.models.server import render_op
from xspec.reference.api import PreRendered
from xspec.reference.clock import VirtualClock
from xspec.reference.handlers import new_core
from xspec.spec.dialect import get_dialect
from xspec.spec.resp import NULL_ARRAY, Array, Bulk, Int, NullArray, NullBulk, Reply, Simple, for_protocol

START = 1_700_000_000_000
DIALECTS = ("redis-7.0", "redis-6.2", "redis-7.2", "valkey-9.1")


class Both:
    """One script on the model and on a reference core, with their clocks moved together."""

    def __init__(self, dialect: str) -> None:
        self.clock = ManualClock(START)
        self.model = Server(get_dialect(dialect), self.clock)
        self.ref_clock = VirtualClock(START)
        self.core = new_core(dialect=dialect, clock=self.ref_clock)
        self.conns = {1: self.core.connect(None), 2: self.core.connect(None)}
        self.propagated: list[list[bytes]] = []

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.ref_clock.set(self.ref_clock.now_ms() + ms)

    def run(self, *args: str, client: int = 1) -> Reply:
        argv = [a.encode() for a in args]
        out = self.model.execute(client, argv)
        self.propagated += [render_op(op) for op in out.propagated if op[0] not in (b"SELECT",)]
        ref = self.core.execute(self.conns[client], argv)
        if isinstance(ref, PreRendered):
            ref = ref.reply
        assert for_protocol(ref, 2) == out.reply, (args, ref, out.reply)  # type: ignore[arg-type]
        assert out.reply is not None
        return out.reply


@pytest.mark.parametrize("dialect", DIALECTS)
def test_lazy_expiry_deletes_and_propagates(dialect: str) -> None:
    b = Both(dialect)
    assert b.run("SET", "k", "v", "PX", "100") == Simple("OK")
    assert b.run("PTTL", "k") == Int(100)
    b.advance(100)
    assert b.run("GET", "k") == Bulk(b"v")  # EXPIRE-LAZY-1: a time equal to the reading has not passed
    assert b.run("DBSIZE") == Int(1)
    b.advance(1)
    assert b.run("DBSIZE") == Int(1)  # not deleted until looked up (or actively expired)
    assert b.run("EXISTS", "k") == Int(0)
    assert b.run("DBSIZE") == Int(0)
    word = b"UNLINK" if dialect.startswith("valkey") else b"DEL"
    assert [word, b"k"] in b.propagated


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_type_expires(dialect: str) -> None:
    b = Both(dialect)
    for args in (("RPUSH", "l", "a"), ("SADD", "s", "a"), ("HSET", "h", "f", "v"), ("XADD", "x", "1-1", "f", "v"),
                 ("ZADD", "z", "1", "a"), ("SET", "str", "v")):
        b.run(*args)
        assert b.run("PEXPIRE", args[1], "10") == Int(1)
    assert b.run("INFO", "keyspace").value.endswith(b"db0:keys=6,expires=6,avg_ttl=0\r\n")  # type: ignore[union-attr]
    b.advance(11)
    assert b.run("LLEN", "l") == Int(0)
    assert b.run("SCARD", "s") == Int(0)
    assert b.run("HLEN", "h") == Int(0)
    assert b.run("XLEN", "x") == Int(0)
    assert b.run("ZCARD", "z") == Int(0)
    assert b.run("STRLEN", "str") == Int(0)
    assert b.run("DBSIZE") == Int(0)


def test_active_expiry_is_an_internal_step() -> None:
    clock = ManualClock(START)
    s = Server(get_dialect("redis-7.0"), clock)
    s.execute(1, [b"SET", b"k", b"v", b"PX", b"5"])
    s.execute(1, [b"SET", b"j", b"v"])
    assert s.expired_keys() == []
    assert s.active_expire(0, b"k") == []  # EXPIRE-ACTIVE-1: not yet due
    clock.advance(6)
    assert s.expired_keys() == [(0, b"k")]
    assert s.active_expire(0, b"k") == [[b"DEL", b"k"]]
    assert s.execute(1, [b"DBSIZE"]).reply == Int(1)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_watch_and_expiry(dialect: str) -> None:
    b = Both(dialect)
    b.run("SET", "w", "v", "PX", "10", client=2)
    b.run("WATCH", "w", client=2)
    b.advance(11)
    b.run("MULTI", client=2)
    b.run("PING", client=2)
    assert isinstance(b.run("EXEC", client=2), NullArray)  # EXPIRE-WATCH-1: expired since WATCH
    b.run("SET", "x", "v", "PX", "10", client=2)
    b.advance(11)
    b.run("WATCH", "x", client=2)  # already expired, not deleted: remembered (not by 6.2)
    b.run("MULTI", client=2)
    b.run("PING", client=2)
    if dialect == "redis-6.2":
        assert b.run("EXEC", client=2) == NULL_ARRAY  # EXPIRE-DIALECT-3
    else:
        assert b.run("EXEC", client=2) == Array((Simple("PONG"),))
    b.run("SET", "y", "v", "PX", "10", client=2)
    b.advance(11)
    b.run("WATCH", "y", client=2)
    assert b.run("GET", "y") == NullBulk()  # the lazy deletion of a remembered key is no change
    b.run("MULTI", client=2)
    b.run("PING", client=2)
    assert b.run("EXEC", client=2) == (NULL_ARRAY if dialect == "redis-6.2" else Array((Simple("PONG"),)))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_rename_restore_and_reload_keep_times(dialect: str) -> None:
    b = Both(dialect)
    b.run("SET", "a", "v", "PX", "1000")
    b.run("SET", "b", "w", "PX", "5000")
    b.run("RENAME", "a", "b")
    assert b.run("PTTL", "b") == Int(1000)  # EXPIRE-KEYS-1
    assert b.run("PTTL", "a") == Int(-2)
    dump = b.run("DUMP", "b")
    assert isinstance(dump, Bulk)
    assert b.model.execute(1, [b"RESTORE", b"c", b"2000", dump.value]).reply == Simple("OK")
    assert b.core.execute(b.conns[1], [b"RESTORE", b"c", b"2000", dump.value]) == Simple("OK")
    assert b.run("PTTL", "c") == Int(2000)
    b.model.config["enable-debug-command"] = "yes"
    assert b.model.execute(1, [b"DEBUG", b"RELOAD"]).reply == Simple("OK")
    assert b.model.execute(1, [b"PTTL", b"c"]).reply == Int(2000)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_ttl_rounding_and_keepttl(dialect: str) -> None:
    b = Both(dialect)
    b.run("SET", "k", "v", "PX", "1499")
    assert b.run("TTL", "k") == Int(1)
    b.run("SET", "k", "v", "PX", "1500")
    assert b.run("TTL", "k") == Int(2)  # TTL-3: half a second rounds up
    b.run("SET", "k", "w", "KEEPTTL")
    assert b.run("PTTL", "k") == Int(1500)
    b.run("APPEND", "k", "x")
    b.run("SETRANGE", "k", "0", "y")
    assert b.run("PTTL", "k") == Int(1500)  # STRING-2
    b.run("SET", "k", "z")
    assert b.run("TTL", "k") == Int(-1)
    assert b.run("EXPIRE", "k", "-1") == Int(1)  # EXPIRE-6
    assert b.run("EXISTS", "k") == Int(0)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_hash_dumps_and_restores(dialect: str) -> None:
    b = Both(dialect)
    b.run("HSET", "h", "f", "1", "g", "two")
    b.run("HSET", "big", "f", "x" * 65)
    for key in ("h", "big"):
        dump = b.run("DUMP", key)
        assert isinstance(dump, Bulk)
        for argv in ([b"RESTORE", key + "2", b"0", dump.value], [b"HGETALL", key + "2"]):
            argv = [a.encode() if isinstance(a, str) else a for a in argv]
            ref = b.core.execute(b.conns[1], argv)
            assert for_protocol(ref, 2) == b.model.execute(1, argv).reply  # type: ignore[arg-type]  # HASH-12


def test_debug_reload_drops_expired_keys() -> None:
    clock = ManualClock(START)
    s = Server(get_dialect("redis-7.0"), clock, {"enable-debug-command": "yes"})
    s.execute(1, [b"SET", b"k", b"v", b"PX", b"10"])
    s.execute(1, [b"SET", b"j", b"v", b"PX", b"1000"])
    clock.advance(20)
    assert s.execute(1, [b"DBSIZE"]).reply == Int(2)
    assert s.execute(1, [b"DEBUG", b"RELOAD"]).reply == Simple("OK")
    assert s.execute(1, [b"DBSIZE"]).reply == Int(1)  # EXPIRE-KEYS-1
    assert s.execute(1, [b"PTTL", b"j"]).reply == Int(980)


def test_dbsize_allows_what_active_expiry_may_have_deleted() -> None:
    clock = ManualClock(START)
    s = Server(get_dialect("redis-7.0"), clock)
    for key in (b"a", b"b", b"c"):
        s.execute(1, [b"SET", key, b"v"])
    s.execute(1, [b"PEXPIRE", b"a", b"10"])
    s.execute(1, [b"PEXPIRE", b"b", b"10"])
    assert s.execute(1, [b"DBSIZE"]).reply == Int(3)
    clock.advance(11)
    reply = s.execute(1, [b"DBSIZE"]).reply
    assert reply == Int(1) and reply == Int(2) and reply == Int(3)  # EXPIRE-ACTIVE-1
    assert reply != Int(0) and reply != Int(4)
    assert isinstance(reply, Int) and reply.value == 3  # on the wire: every key stored
