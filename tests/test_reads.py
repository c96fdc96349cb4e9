"""XREAD and XREADGROUP without blocking: differential tests against a real Redis 7.0.15.

Each test runs commands on the real server and checks the recorded trace on
the model (rules XREAD-*, XREADGROUP-* of spec/rules/reads.md, edge cases
20-30, 72 and 75 of the reference's §10). Propagation is checked against the
server's own replication stream, read by :class:`ReplicationTap` over a raw
``SYNC`` connection.

Replies that show delivery times, seen-times or idle times are checked
exactly: the conformance checker explains them by the choice of clock
readings within each command's time window.
"""

from __future__ import annotations

from tests.support import ReplicaTap
from xspec.models import ManualClock, Server
from xspec.models.server import render_op
from xspec.spec.dialect import get_dialect
from xspec.spec.resp import Reply
from xspec.spec.trace_format import Call, Close, Connect, Recv, Send, Trace

MAX = "18446744073709551615-18446744073709551615"


# -- helpers shared by test_blocking.py and test_info.py ---------------------------------

ReplicationTap = ReplicaTap  # the shared tap, under the name test_blocking.py imports


def replay(trace: Trace) -> tuple[list[tuple[int, Reply, Reply | None]], list[list[bytes]]]:
    """Run a trace's commands on the model: (event, real reply, model reply) and what it propagated."""
    clock = ManualClock(0)
    model = Server(get_dialect("redis-7.0"), clock, trace.header.config)
    waiting: dict[int, list[Reply]] = {}
    pairs: list[tuple[int, Reply, Reply | None]] = []
    ops: list[list[bytes]] = []
    for n, e in enumerate(trace.events, 1):
        if isinstance(e, Connect):
            model.client(e.c)
        elif isinstance(e, Close):
            model.close(e.c)
        elif isinstance(e, (Call, Send)):
            assert e.cmd is not None
            clock.set((e.t0 if isinstance(e, Call) else e.t) // 1000)
            out = model.execute(e.c, e.cmd)
            ops.extend(render_op(o) for o in out.propagated)
            for cid, r in out.served:
                waiting.setdefault(cid, []).append(r)
            if isinstance(e, Call):
                if out.blocked:  # the reply of a call that blocked is its timeout
                    clock.set(e.t1 // 1000)
                    pairs.append((n, e.reply, model.timeout(e.c)))
                else:
                    pairs.append((n, e.reply, out.reply))
            elif out.reply is not None:
                waiting.setdefault(e.c, []).append(out.reply)
        elif isinstance(e, Recv):
            queue = waiting.get(e.c)
            if queue:
                pairs.append((n, e.reply, queue.pop(0)))
            else:
                clock.set(e.t // 1000)
                pairs.append((n, e.reply, model.timeout(e.c)))
    return pairs, ops


def without_times(ops: list[list[bytes]]) -> list[list[bytes]]:
    """Propagated commands with the value after TIME masked."""
    out = []
    for argv in ops:
        argv = list(argv)
        for n in range(len(argv) - 1):
            if argv[n] == b"TIME":
                argv[n + 1] = b"<t>"
        out.append(argv)
    return out


def check_propagation(s, tap: ReplicationTap) -> None:  # type: ignore[no-untyped-def]
    """The replies conform, and the model propagates what the server did (times masked)."""
    real = tap.take()
    tap.close()
    s.check()
    _, modelled = replay(s.trace())
    assert without_times(modelled) == without_times(real)


def add(s, key: str, *ids: str | int) -> None:  # type: ignore[no-untyped-def]
    for i in ids:
        s.call(1, "XADD", key, f"{i}-0" if isinstance(i, int) else i, "f", f"v{i}")


# -- XREAD ---------------------------------------------------------------------------

def test_xread_option_errors(redis):
    """XREAD-1 .. XREAD-7, XREADGROUP-1; edge cases 20 and 23."""
    s = redis.scenario()
    add(s, "s", 1)
    s.call(1, "XREAD", "STREAMS", "s", "0", "COUNT", "1")
    s.call(1, "XREAD", "COUNT", "1", "STREAMS", "s")
    s.call(1, "XREAD", "STREAMS", "s", "t", "0")
    s.call(1, "XREAD", "COUNT", "1", "s", "0")
    s.call(1, "XREAD", "COUNT", "1", "STREAMS")
    s.call(1, "XREAD", "COUNT", "x", "STREAMS", "s", "0")
    s.call(1, "XREAD", "COUNT", "1.0", "GROUP", "g", "c", "STREAMS", "s", "0")
    s.call(1, "XREAD", "FOO", "STREAMS", "s", "0")
    s.call(1, "XREAD", "GROUP", "g", "c", "STREAMS", "s", "0")
    s.call(1, "XREAD", "GROUP", "g", "STREAMS", "s")
    s.call(1, "XREAD", "NOACK", "STREAMS", "s", "0")
    s.call(1, "XREAD", "BLOCK", "-1", "STREAMS", "s", "$")
    s.call(1, "XREAD", "BLOCK", "1.5", "STREAMS", "s", "$")
    s.call(1, "XREAD", "BLOCK", "abc", "STREAMS", "s", "$")
    s.call(1, "XREAD", "BLOCK", "99999999999999999999", "STREAMS", "s", "$")
    s.call(1, "XREAD", "COUNT", "1", "BLOCK")
    s.call(1, "xread", "count", "1", "streams", "s", "0")
    s.call(1, "XREAD", b"COUNT\x00x", "1", "STREAMS", "s", "0")
    s.call(1, "XREAD", "STREAMS", "nokey", "bad", "COUNT", "x")
    s.call(1, "XREADGROUP", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "COUNT", "1", "STREAMS", "s", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1")
    s.call(1, "XREADGROUP", "COUNT", "1", "GROUP", "g", "c", "GROUP")
    s.call(1, "XREADGROUP", "NOACK", "NOACK", "GROUP", "g", "c", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "-5", "STREAMS", "s", ">")
    s.check()


def test_per_stream_checks_in_argument_order(redis):
    """XREAD-8, XREAD-9, XREADGROUP-2 .. XREADGROUP-4; edge cases 21, 25 and 26."""
    s = redis.scenario()
    add(s, "s", 1, 2)
    s.call(1, "SET", "str", "x")
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREAD", "STREAMS", "s", "str", "0", "0")
    s.call(1, "XREAD", "STREAMS", "str", "s", "bad", "0")
    s.call(1, "XREAD", "STREAMS", "s", "str", "bad", "0")
    s.call(1, "XREAD", "STREAMS", "s", "+")
    s.call(1, "XREAD", "STREAMS", "s", "-")
    s.call(1, "XREAD", "STREAMS", "nokey", "+")
    s.call(1, "XREAD", "STREAMS", "s", ">")
    s.call(1, "XREAD", "STREAMS", "nokey", ">")
    s.call(1, "XREAD", "STREAMS", "s", b"$\x00junk")
    s.call(1, "XREAD", "STREAMS", "s", "1-0-0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "nokey", ">", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "nokey", "bad", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">")
    s.call(1, "XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", "$")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+")
    s.call(1, "XREADGROUP", "GROUP", b"g\r\nx", "c", "STREAMS", b"k\nz\x00tail", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", ">", "$")
    s.call(1, "XINFO", "GROUPS", "s")
    s.check()


def test_xread_serving(redis):
    """XREAD-10, XREAD-11, XREAD-13; edge case 22."""
    s = redis.scenario()
    add(s, "a", 1, 2, 3)
    add(s, "b", 2, 4)
    s.call(1, "XREAD", "STREAMS", "a", "0")
    s.call(1, "XREAD", "STREAMS", "a", "b", "1", "1")
    s.call(1, "XREAD", "COUNT", "1", "STREAMS", "a", "b", "1", "1")
    s.call(1, "XREAD", "COUNT", "-5", "STREAMS", "a", "0")
    s.call(1, "XREAD", "COUNT", "2", "COUNT", "0", "STREAMS", "a", "0")
    s.call(1, "XREAD", "STREAMS", "a", "a", "0", "2")
    s.call(1, "XREAD", "STREAMS", "nokey", "a", "0", "2")
    s.call(1, "XREAD", "STREAMS", "nokey", "a", "0", "3")
    s.call(1, "XREAD", "STREAMS", "a", "$")
    s.call(1, "XREAD", "STREAMS", "a", "b", "3", "3")
    s.call(1, "XREAD", "STREAMS", "a", "2-5")
    s.call(1, "XREAD", "STREAMS", "a", "18446744073709551615-18446744073709551614")
    s.call(1, "XDEL", "a", "3-0")
    s.call(1, "XREAD", "STREAMS", "a", "2")
    s.call(1, "XREAD", "STREAMS", "a", "1")
    s.call(1, "XDEL", "a", "1-0", "2-0")
    s.call(1, "XREAD", "STREAMS", "a", "0")
    s.call(1, "XADD", "e", "MAXLEN", "0", "1-0", "f", "v")
    s.call(1, "XREAD", "STREAMS", "e", "0")
    s.check()


def test_xread_and_xreadgroup_resp3(redis):
    """XREAD-11 in RESP3: a map from key to entries; nulls are `_`."""
    s = redis.scenario()
    add(s, "a", 1, 2)
    add(s, "b", 3)
    s.call(1, "XGROUP", "CREATE", "a", "g", "0")
    s.call(2, "HELLO", "3")
    s.call(2, "XREAD", "STREAMS", "a", "b", "0", "0")
    s.call(2, "XREAD", "STREAMS", "a", "a", "0", "1")
    s.call(2, "XREAD", "STREAMS", "a", "$")
    s.call(2, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "a", ">")
    s.call(2, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "0")
    s.call(1, "XDEL", "a", "1-0")
    s.call(2, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "0")
    s.call(2, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "a", ">", "0")
    s.call(2, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">")
    s.check()


def test_xread_in_multi_never_blocks(redis):
    """XREAD-12, XREADGROUP-13; edge case 24."""
    s = redis.scenario()
    add(s, "s", 1)
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    s.call(2, "HELLO", "3")
    for c in (1, 2):
        s.call(c, "MULTI")
        s.call(c, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
        s.call(c, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
        s.call(c, "XREAD", "BLOCK", "10", "STREAMS", "s", "0")
        s.call(c, "EXEC")
    s.call(1, "XINFO", "GROUPS", "s")
    s.check()


# -- XREADGROUP --------------------------------------------------------------------------

def test_xreadgroup_delivers_new_entries(redis):
    """XREADGROUP-7, XREADGROUP-9, XREADGROUP-10, LAG-4."""
    s = redis.scenario()
    add(s, "s", 1, 2, 3, 4, 5)
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XPENDING", "s", "g")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "", "STREAMS", "s", ">")
    s.call(1, "XPENDING", "s", "g")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XDEL", "s", "5-0")
    s.call(1, "XADD", "s", "6-0", "f", "v")
    s.call(1, "XDEL", "s", "6-0")
    s.call(1, "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", "s", ">", ">")
    s.check()


def test_duplicate_key_in_one_xreadgroup(redis):
    """XREADGROUP-7: a key named twice is served twice, the group moving in between."""
    s = redis.scenario()
    add(s, "s", 1, 2, 3)
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "s", ">", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", ">", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", "s", "0", "1")
    s.call(1, "XPENDING", "s", "g")
    s.check()


def test_history_reads(redis):
    """XREADGROUP-5, XREADGROUP-6; edge cases 28, 29 and 30."""
    s = redis.scenario()
    add(s, "s", 1, 2, 3, 4)
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "s", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    s.call(1, "XDEL", "s", "2-0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "3")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", "0-0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", "1")
    s.call(1, "XREADGROUP", "GROUP", "g", "other", "STREAMS", "s", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "4")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "99")
    s.call(1, "XDEL", "s", "1-0", "3-0", "4-0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    s.call(1, "XINFO", "STREAM", "s", "FULL")
    s.check()


def test_max_id_behaves_as_gt(redis):
    """XREADGROUP-8; edge case 75."""
    s = redis.scenario()
    add(s, "s", 1, 2)
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", MAX)
    s.call(1, "XPENDING", "s", "g")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", MAX)
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", MAX)
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "18446744073709551615-18446744073709551614")
    s.call(1, "XINFO", "GROUPS", "s")
    s.check()


def test_consumer_created_only_when_served(redis):
    """XREADGROUP-9; edge case 27."""
    s = redis.scenario()
    add(s, "s", 1)
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    s.call(1, "XREADGROUP", "GROUP", "g", "ghost", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "ghost", "BLOCK", "10", "STREAMS", "s", ">")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XINFO", "CONSUMERS", "s", "g")
    s.call(1, "XREADGROUP", "GROUP", "g", "hist", "STREAMS", "s", "0")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.call(1, "XREADGROUP", "GROUP", "g", "new", "NOACK", "STREAMS", "s", ">")
    s.call(1, "XINFO", "CONSUMERS", "s", "g")
    s.call(1, "XINFO", "GROUPS", "s")
    s.check()


def test_setid_back_moves_nacks_and_noack_leaves_them(redis):
    """XREADGROUP-10, XREADGROUP-11; edge cases 31 and 32."""
    s = redis.scenario()
    add(s, "s", 1, 2, 3)
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    s.call(1, "XGROUP", "SETID", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "carol", "NOACK", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XPENDING", "s", "g")
    s.call(1, "XINFO", "STREAM", "s", "FULL")
    s.call(1, "XREADGROUP", "GROUP", "g", "alice", "NOACK", "STREAMS", "s", ">")
    s.call(1, "XINFO", "STREAM", "s", "FULL")
    s.check()


def test_watch_survives_xreadgroup(redis):
    """XREADGROUP-13: XREADGROUP does not touch WATCHed keys."""
    s = redis.scenario()
    add(s, "s", 1, 2)
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(2, "WATCH", "s")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    s.call(2, "MULTI")
    s.call(2, "PING")
    s.call(2, "EXEC")
    s.check()


def test_xreadgroup_propagation(redis):
    """XREADGROUP-12, XREAD-13, LAG-5; edge cases 72 and 74 (master side), against the replication stream.

    The master's entries-read moves with every `>` read while only NOACK reads
    propagate it; history reads bump delivery counts that are never propagated.
    """
    s = redis.scenario()
    tap = ReplicationTap(redis.host, redis.port)
    add(s, "s", 1, 2, 3, 4)
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREAD", "STREAMS", "s", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c2", "NOACK", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c2", "NOACK", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0")
    s.call(1, "XINFO", "STREAM", "s", "FULL")
    s.call(1, "XREADGROUP", "GROUP", "g", "c3", "STREAMS", "s", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c4", "NOACK", "STREAMS", "s", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c9", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "c9", "NOACK", "STREAMS", "s", ">")
    s.call(1, "XADD", "s", "5-0", "f", "v")
    s.call(1, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    s.call(1, "XGROUP", "SETID", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c5", "COUNT", "2", "STREAMS", "s", ">")
    s.call(1, "XGROUP", "CREATE", "s", "h", "0")
    s.call(1, "XREADGROUP", "GROUP", "h", "c1", "NOACK", "COUNT", "1", "STREAMS", "s", "s", ">", ">")
    s.call(1, "MULTI")
    s.call(1, "XADD", "s", "6-0", "f", "v")
    s.call(1, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "h", "c6", "NOACK", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "EXEC")
    check_propagation(s, tap)
