"""Differential tests of MULTI/EXEC/DISCARD/WATCH/UNWATCH (spec/rules/transactions.md).

Every scenario runs on the real 7.0.15 server, in RESP2 and RESP3, and is then
checked on the model.
"""

from __future__ import annotations

import pytest

from tests.support import scenario
from xspec.models import ManualClock, Server
from xspec.spec.resp import NULL_ARRAY, Array, Error, Simple

pytestmark = pytest.mark.redis

PROTOCOLS = [2, 3]






@pytest.mark.parametrize("proto", PROTOCOLS)
def test_multi_exec_discard_basics(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "EXEC")  # EXEC-1
    s.call(1, "DISCARD")  # DISCARD-1
    s.call(1, "MULTI")  # MULTI-1
    s.call(1, "MULTI")  # MULTI-2: not flagged
    s.call(1, "WATCH", "k")  # WATCH-2: not flagged
    s.call(1, "SET", "k", "1")  # DISPATCH-4
    s.call(1, "GET", "k")
    s.call(1, "GET", "nokey")
    s.call(1, "SET", "k", "2", "BADOPT")  # a runtime error stays inside the EXEC array
    s.call(1, "EXEC")  # EXEC-4
    s.call(1, "MULTI")
    s.call(1, "SET", "k", "3")
    s.call(1, "DISCARD")  # DISCARD-2
    s.call(1, "GET", "k")
    s.call(1, "MULTI")
    s.call(1, "EXEC")  # EXEC-4: empty transaction
    s.call(1, "MULTI", "extra")  # DISPATCH-2 outside MULTI
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_queuing_errors_abort_exec(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "MULTI")
    s.call(1, "SET", "k", "1")
    s.call(1, "NOSUCH", "arg")  # DISPATCH-5
    s.call(1, "SET", "k", "2")
    s.call(1, "EXEC")  # EXEC-2
    s.call(1, "GET", "k")
    s.call(1, "MULTI")
    s.call(1, "GET")  # DISPATCH-5: arity
    s.call(1, "EXEC")
    s.call(1, "MULTI")
    s.call(1, "CLIENT", "NOSUCH")  # DISPATCH-5: unknown subcommand
    s.call(1, "DISCARD")
    s.call(1, "MULTI")
    s.call(1, "EXEC", "extra")  # DISPATCH-5: arity of a command that would run inside MULTI
    s.call(1, "EXEC")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_watch_dirtiness_from_key_modifications(redis, proto):
    s = scenario(redis, proto, clients=(1, 2))
    s.call(2, "SET", "k", "0")

    def attempt(*modification: str) -> None:
        s.call(1, "WATCH", "k")
        s.call(2, *modification)
        s.call(1, "MULTI")
        s.call(1, "GET", "k")
        s.call(1, "EXEC")

    attempt("SET", "k", "1")  # WATCH-3
    attempt("SET", "k", "1", "NX")  # WATCH-4: a write that changes nothing does not touch
    attempt("SET", "k", "2", "XX", "GET")
    attempt("DEL", "nokey", "k")
    attempt("DEL", "k")  # WATCH-4: deleting a missing key touches nothing
    attempt("SET", "other", "1")
    attempt("RENAME", "other", "k")  # WATCH-3: destination
    attempt("RENAME", "k", "k")  # WATCH-4
    attempt("RENAME", "k", "moved")  # WATCH-3: source
    attempt("SET", "k", "back")
    attempt("UNLINK", "k")
    attempt("GET", "k")  # WATCH-4: reads never touch
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_watch_state_rules(redis, proto):
    s = scenario(redis, proto, clients=(1, 2))
    s.call(1, "WATCH", "k")  # WATCH-1
    s.call(1, "SET", "k", "own")  # WATCH-3: the watcher's own write counts
    s.call(1, "MULTI")
    s.call(1, "EXEC")
    s.call(1, "WATCH", "k", "k", "j")
    s.call(1, "SELECT", "1")  # WATCH-1: the watch stays on database 0
    s.call(2, "SET", "k", "x")
    s.call(1, "MULTI")
    s.call(1, "EXEC")  # EXEC-3
    s.call(1, "SELECT", "0")
    s.call(1, "WATCH", "k")
    s.call(1, "MULTI")
    s.call(1, "DISCARD")  # DISCARD-2 unwatches
    s.call(2, "SET", "k", "y")
    s.call(1, "MULTI")
    s.call(1, "EXEC")
    s.call(1, "WATCH", "k")
    s.call(2, "SET", "k", "z")
    s.call(1, "UNWATCH")  # WATCH-6 clears the dirty flag
    s.call(1, "MULTI")
    s.call(1, "EXEC")
    s.call(1, "WATCH", "k")
    s.call(2, "SET", "k", "w")
    s.call(1, "MULTI")
    s.call(1, "NOSUCH")
    s.call(1, "EXEC")  # EXEC-2 wins over EXEC-3
    s.call(2, "SET", "k", "v")
    s.call(1, "MULTI")
    s.call(1, "EXEC")  # EXEC-2 unwatched everything
    s.call(1, "WATCH", "k")
    s.call(1, "MULTI")
    s.call(1, "UNWATCH")  # queued: runs inside EXEC
    s.call(1, "SET", "k", "mine")
    s.call(1, "EXEC")  # EXEC-4: own writes inside EXEC do not doom it
    s.call(1, "WATCH", "k")
    s.call(1, "QUIT")  # CONN-1
    s.call(2, "SET", "k", "after-quit")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_flush_and_swapdb_touch_watched_keys(redis, proto):
    s = scenario(redis, proto, clients=(1, 2))

    def attempt(*modification: str) -> None:
        s.call(1, "WATCH", "k")
        s.call(2, *modification)
        s.call(1, "MULTI")
        s.call(1, "EXEC")

    attempt("FLUSHALL")  # WATCH-5: the watched key does not exist
    s.call(2, "SET", "k", "1")
    attempt("FLUSHDB")  # WATCH-5
    s.call(2, "SET", "k", "1")
    s.call(2, "SELECT", "1")
    attempt("FLUSHDB")  # WATCH-5: another database
    attempt("FLUSHALL", "ASYNC")
    s.call(2, "SET", "k", "in-db1")
    s.call(2, "SELECT", "0")
    attempt("SWAPDB", "0", "1")  # SWAPDB-5: the key exists in the incoming database
    attempt("FLUSHALL")
    attempt("SWAPDB", "0", "1")  # SWAPDB-5: missing on both sides
    s.call(2, "SET", "j", "1")
    attempt("SWAPDB", "2", "3")
    attempt("SWAPDB", "0", "0")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_doomed_transaction_stops_queuing(redis, proto):
    s = scenario(redis, proto, clients=(1, 2))
    s.call(1, "MULTI")
    s.call(1, "SET", "a", "1")
    s.call(2, "CLIENT", "LIST")  # DISPATCH-4: multi=1
    s.call(1, "NOSUCH")
    s.call(1, "SET", "a", "2")
    s.call(2, "CLIENT", "LIST")  # still multi=1
    s.call(1, "DISCARD")
    s.call(1, "WATCH", "k")
    s.call(2, "SET", "k", "1")
    s.call(1, "MULTI")
    s.call(1, "SET", "a", "3")
    s.call(2, "CLIENT", "LIST")  # flags=xd multi=0
    s.call(1, "EXEC")
    s.call(1, "MULTI")
    s.call(1, "CLIENT", "INFO")  # EXEC-4: inside EXEC the client is still in MULTI
    s.call(1, "SET", "b", "1")
    s.call(1, "EXEC")
    s.call(2, "CLIENT", "LIST")  # CONN-5: cmd=exec
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_select_and_hello_inside_exec(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "MULTI")
    s.call(1, "SET", "a", "db0")
    s.call(1, "SELECT", "2")
    s.call(1, "SET", "a", "db2")
    s.call(1, "GET", "nokey")
    s.call(1, "HELLO", "3" if proto == 2 else "2")  # EXEC-5: later replies use the new protocol
    s.call(1, "GET", "nokey")
    s.call(1, "EXEC")
    s.call(1, "GET", "a")
    s.call(1, "SELECT", "0")
    s.call(1, "GET", "a")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_blocking_commands_inside_multi_answer_at_once(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "MULTI")
    s.call(1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    s.call(1, "XADD", "s", "1-1", "f", "v")
    s.call(1, "XREAD", "BLOCK", "0", "STREAMS", "s", "0")
    s.call(1, "EXEC")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_watch_sees_stream_writes_and_retyping(redis, proto):
    s = scenario(redis, proto, clients=(1, 2))
    s.call(2, "XADD", "s", "1-1", "f", "v")
    for modification in (("XADD", "s", "2-1", "f", "v"), ("SET", "s", "string"), ("XADD", "s", "3-1", "f", "v"),
                         ("DEL", "s"), ("XADD", "s", "4-1", "f", "v")):
        s.call(1, "WATCH", "s")
        s.call(2, *modification)
        s.call(1, "MULTI")
        s.call(1, "TYPE", "s")
        s.call(1, "EXEC")
    s.check()


def test_exec_of_doomed_transactions_on_the_model():
    # The model's own bookkeeping: QUEUED replies, the abort kinds and the reset of the flags.
    server = Server(clock=ManualClock())
    assert server.execute(1, [b"MULTI"]).reply == Simple("OK")
    assert server.execute(1, [b"NOSUCH"]).reply == Error(
        "ERR unknown command 'NOSUCH', with args beginning with: ")
    assert server.execute(1, [b"SET", b"a", b"1"]).reply == Simple("QUEUED")
    assert server.clients[1].multi_queue == []
    assert server.execute(1, [b"EXEC"]).reply == Error("EXECABORT Transaction discarded because of previous errors.")
    server.execute(1, [b"WATCH", b"a"])
    server.execute(2, [b"SET", b"a", b"1"])
    server.execute(1, [b"MULTI"])
    assert server.execute(1, [b"EXEC"]).reply == NULL_ARRAY
    assert server.clients[1].watched == {}
    server.execute(1, [b"MULTI"])
    server.execute(1, [b"SET", b"a", b"2"])
    assert server.execute(1, [b"EXEC"]).reply == Array((Simple("OK"),))


def test_random_keyspace_and_transaction_sequences(redis):
    # A seeded random walk over the generic and transaction commands by three
    # clients (one in RESP3), checked as a whole trace: the interplay of
    # WATCH, MULTI queuing, SELECT, SWAPDB and flushes that single rules miss.
    import random

    rng = random.Random(7011)
    keys = ["a", "b", "c"]
    s = redis.scenario()
    s.call(3, "HELLO", "3")
    in_multi = {1: False, 2: False, 3: False}
    for _ in range(400):
        c = rng.choice([1, 2, 3])
        k = rng.choice(keys)
        choice = rng.random()
        if choice < 0.2:
            cmd = ["SET", k, str(rng.randint(0, 9)), *rng.choice([[], ["NX"], ["XX"], ["GET"], ["XX", "GET"]])]
        elif choice < 0.3:
            cmd = ["GET", k]
        elif choice < 0.38:
            cmd = ["DEL", *rng.sample(keys, rng.randint(1, 3))]
        elif choice < 0.43:
            cmd = ["RENAME", k, rng.choice(keys)]
        elif choice < 0.48:
            cmd = ["EXISTS", k, rng.choice(keys)]
        elif choice < 0.53:
            cmd = ["SELECT", str(rng.randint(0, 2))]
        elif choice < 0.56:
            cmd = ["SWAPDB", str(rng.randint(0, 2)), str(rng.randint(0, 2))]
        elif choice < 0.58:
            cmd = [rng.choice(["FLUSHDB", "FLUSHALL"])]
        elif choice < 0.68:
            cmd = ["MULTI"]
        elif choice < 0.78:
            cmd = ["EXEC"] if in_multi[c] or rng.random() < 0.2 else ["MULTI"]
        elif choice < 0.81:
            cmd = ["DISCARD"]
        elif choice < 0.9:
            cmd = ["WATCH", *rng.sample(keys, rng.randint(1, 2))]
        elif choice < 0.93:
            cmd = ["UNWATCH"]
        elif choice < 0.95:
            cmd = ["NOSUCH", k]
        elif choice < 0.97:
            cmd = ["DBSIZE"]
        else:
            cmd = ["TYPE", k]
        reply = s.call(c, *cmd)
        if cmd[0] == "MULTI" and reply == Simple("OK"):
            in_multi[c] = True
        elif cmd[0] in ("EXEC", "DISCARD") and in_multi[c]:
            in_multi[c] = False
    s.check()


def test_watch_sees_every_stream_write_that_changes_the_key(redis):
    # WATCH-3 for the stream commands: which of them touch the key (the real
    # server decides, including the group commands that change only group state).
    s = redis.scenario()
    s.call(2, "XADD", "s", "1-1", "f", "v")
    s.call(2, "XADD", "s", "2-1", "f", "v")
    s.call(2, "XADD", "s", "3-1", "f", "v")
    modifications = [
        ("XGROUP", "CREATE", "s", "g", "0"),
        ("XGROUP", "CREATE", "s", "g", "0"),  # BUSYGROUP: no change
        ("XGROUP", "CREATECONSUMER", "s", "g", "c1"),
        ("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">"),
        ("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0"),  # history read
        ("XACK", "s", "g", "1-1"),
        ("XACK", "s", "g", "1-1"),  # nothing acked
        ("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">"),
        ("XCLAIM", "s", "g", "c2", "0", "2-1"),
        ("XAUTOCLAIM", "s", "g", "c3", "0", "0"),
        ("XGROUP", "SETID", "s", "g", "0"),
        ("XGROUP", "DELCONSUMER", "s", "g", "c1"),
        ("XDEL", "s", "9-9"),  # nothing deleted
        ("XDEL", "s", "1-1"),
        ("XTRIM", "s", "MAXLEN", "100"),  # nothing trimmed
        ("XTRIM", "s", "MAXLEN", "1"),
        ("XSETID", "s", "10-0"),
        ("XGROUP", "DESTROY", "s", "g"),
        ("XLEN", "s"),
        ("XADD", "m", "NOMKSTREAM", "*", "f", "v"),
        ("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"),
        ("XADD", "m", "MAXLEN", "0", "5-1", "f", "v"),
        ("XTRIM", "m", "MAXLEN", "0"),
    ]
    for modification in modifications:
        s.call(1, "WATCH", "m" if "m" in modification else "s")  # the key the modification names
        s.call(2, *modification)
        s.call(1, "MULTI")
        s.call(1, "PING")
        s.call(1, "EXEC")
    s.check()
