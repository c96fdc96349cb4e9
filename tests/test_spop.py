"""SPOP (spec/rules/sets.md SETS-12, SETS-13, SETS-DIALECT-2; environment.md ENV-RANDOM).

A real server pops at random, so the model asks its chooser which members a pop takes and the checker
searches the draws: every dialect's real server runs the script, its trace checked on the model; the
reference's pops (its own random draws) are recorded the same way and must conform too. The parts that do
not depend on the draw are compared exactly with the reference (``tests/test_lists.py``'s ``differential``),
and what each dialect propagates is compared with its real server's replication stream, the model steered
to the real draw.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.real_servers import DialectServer
from tests.support import ReplicaTap
from tests.test_lists import ALL_DIALECTS, differential, lists_real_servers, lists_reference_servers
from xspec.models import Server
from xspec.models.server import render_op
from xspec.spec.dialect import get_dialect
from xspec.spec.resp import Array, Bulk, Set
from xspec.traces.record.client import RespConnection

pytestmark = pytest.mark.redis

__all__ = ["lists_real_servers", "lists_reference_servers"]


def c(*args: object) -> tuple[object, ...]:
    return ("call", 1, *args)


LONG = "x" * 70
EXACT = [
    # SETS-12, SETS-13: errors, missing keys, a count of 0, and pops that take the whole set
    c("SPOP", "nokey"), c("SPOP", "nokey", "3"), c("SPOP", "nokey", "0"), c("SPOP", "nokey", "-1"),
    c("SPOP", "nokey", "x"), c("SPOP", "nokey", "1", "2"), c("SET", "str", "v"), c("SPOP", "str"),
    c("SPOP", "str", "0"), c("SPOP", "str", "x"), c("SADD", "one", "m"), c("SPOP", "one"), c("EXISTS", "one"),
    c("SADD", "i", "3", "1", "2"), c("SPOP", "i", "0"), c("SPOP", "i", "3"), c("EXISTS", "i"),
    c("SADD", "s", "b", "a", "1"), c("SPOP", "s", "10"), c("SADD", "h", "a", "b", LONG), c("SPOP", "h", "3"),
    c("SADD", "n", "5", "x"), c("SREM", "n", "x"), c("SPOP", "n", "9223372036854775807"), c("EXISTS", "n"),
    c("SADD", "two", "p", "q"), c("SPOP", "two", "1", "x"), c("SCARD", "two"),
]

RANDOM = [
    # SETS-12, SETS-13: random draws of each strategy, and the state they leave
    ["SADD", "i", *map(str, range(1, 11))], ["SPOP", "i"], ["SPOP", "i", "2"], ["SMEMBERS", "i"], ["SPOP", "i", "6"],
    ["SMEMBERS", "i"], ["SADD", "s", "a", "b", "c", "d", "e", "f"], ["SPOP", "s", "5"],
    ["SMEMBERS", "s"], ["SADD", "m", "1", "2", "3", "x", "y"], ["SPOP", "m", "2"], ["SPOP", "m", "1"], ["SCARD", "m"],
    ["SADD", "h", "1", "2", "3", "4", "5", "6", "7", LONG], ["SPOP", "h", "7"], ["SADD", "h", "0", "99"],
    ["SMEMBERS", "h"], ["SPOP", "h"], ["EXISTS", "h"],
    # SETS-DIALECT-2: 7.2+ keeps the members drawn from a hash table as a listpack in the draw's order
    ["SADD", "g", *"abcdefghijkl", LONG], ["SPOP", "g", "11"], ["SMEMBERS", "g"], ["SADD", "g", "zz"],
    ["SMEMBERS", "g"],
]


def test_spop_exact_parts(lists_real_servers, lists_reference_servers):
    """SETS-12, SETS-13: what does not depend on the draw, on every dialect, the model and the reference."""
    differential(lists_real_servers, lists_reference_servers, EXACT, ALL_DIALECTS)


def _record(server, proto: int) -> None:
    s = server.scenario()
    if proto == 3:
        s.call(1, "HELLO", "3")
    for argv in RANDOM:
        s.call(1, *argv)
    s.check()


@pytest.mark.parametrize("dialect", ALL_DIALECTS)
def test_spop_draws_conform(lists_real_servers, lists_reference_servers, dialect):
    """ENV-RANDOM: the real server's pops and the reference's are draws the model's search finds."""
    real = lists_real_servers.get(dialect)
    if real is None:
        pytest.skip(f"no {dialect} server")
    ref_port = lists_reference_servers[dialect].port
    ref = DialectServer("127.0.0.1", ref_port, 0, get_dialect(dialect).version)
    ref.server_name = "valkey" if dialect.startswith("valkey") else "redis"
    for proto in (2, 3):
        for server in (real, ref):
            server.reset()
            _record(server, proto)
    real.reset()
    ref.reset()


def _steer(model: Server, key: bytes, popped: list[bytes]) -> Callable[[int], int]:
    """A chooser that makes the model's next pop take ``popped`` (SETS-12's draw, member by member)."""
    order = model.execute(9, [b"SMEMBERS", key]).reply
    walk = [i.value for i in order.items]  # type: ignore[union-attr]
    positions = sorted(walk.index(m) for m in popped)
    picks, low = [], 0
    for p in positions:
        picks.append(p - low)
        low = p + 1
    return lambda n: picks.pop(0)


def _members(reply: object) -> list[bytes]:
    if isinstance(reply, Bulk):
        return [reply.value]
    assert isinstance(reply, Array | Set), reply
    return [i.value for i in reply.items if isinstance(i, Bulk)]


def _normal(ops: list[list[bytes]]) -> list[object]:
    """SREMs compared by their members (the order of a random pop's SREMs is the reply's, SETS-13)."""
    return sorted((sorted(op) if op and op[0].upper() == b"SREM" else op for op in ops), key=repr)


@pytest.mark.parametrize("dialect", ALL_DIALECTS)
def test_spop_propagation(lists_real_servers, dialect):
    """SETS-12, SETS-13, SETS-DIALECT-2: one SREM per member (7.0, 6.2) or one SREM of all (7.2+); DEL when
    the pop empties the set (UNLINK under lazyfree-lazy-server-del in 7.2+)."""
    server = lists_real_servers.get(dialect)
    if server is None:
        pytest.skip(f"no {dialect} server")
    server.reset()
    conn = RespConnection(server.host, server.port)
    tap = ReplicaTap(server.host, server.port)
    model = Server(dialect=get_dialect(dialect))
    script = [["SADD", "s", *map(str, range(20))], ["SPOP", "s"], ["SPOP", "s", "3"], ["SPOP", "s", "14"],
              ["SPOP", "s", "5"], ["SADD", "t", "a", "b"], ["CONFIG", "SET", "lazyfree-lazy-server-del", "yes"],
              ["SPOP", "t", "2"], ["CONFIG", "SET", "lazyfree-lazy-server-del", "no"]]
    try:
        for words in script:
            argv = [w.encode() for w in words]
            reply = conn.call(argv)
            real = tap.take()
            if argv[0] == b"CONFIG":  # the model takes the setting from the trace's configuration
                model.config["lazyfree-lazy-server-del"] = words[-1]
                continue
            if argv[0] == b"SPOP" and argv[1] == b"s":
                model.chooser = _steer(model, b"s", _members(reply))
            modelled = [render_op(op) for op in model.execute(1, argv).propagated]
            model.chooser = None
            assert _normal(modelled) == _normal(real), (dialect, words, modelled, real)
    finally:
        conn.call([b"CONFIG", b"SET", b"lazyfree-lazy-server-del", b"no"])
        tap.close()
        conn.close()
        server.reset()


def test_a_draw_the_model_cannot_make_is_refused():
    """ENV-RANDOM: a popped member the set does not hold, or too many, diverges."""
    from xspec.spec.trace_format import loads
    from xspec.traces.check.checker import check_trace

    def trace(reply: str) -> str:
        header = '{"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"}, "clock": "wall", "config": {}}'
        return "\n".join([
            header,
            '{"ev":"call","c":1,"cmd":["SADD","s","a","b","c"],"t0":1000,"t1":1010,"reply":{"int":3}}',
            '{"ev":"call","c":1,"cmd":["SPOP","s","2"],"t0":1020,"t1":1030,"reply":' + reply + '}',
            '{"ev":"call","c":1,"cmd":["SISMEMBER","s","b"],"t0":1040,"t1":1050,"reply":{"int":1}}',
        ])
    good = '{"array": [{"bulk": "c"}, {"bulk": "a"}]}'
    assert check_trace(loads(trace(good))).status == "conform"
    for bad in ('{"array": [{"bulk": "c"}, {"bulk": "z"}]}', '{"array": [{"bulk": "a"}, {"bulk": "b"}]}',
                '{"array": [{"bulk": "c"}]}'):
        assert check_trace(loads(trace(bad))).status != "conform", bad


@pytest.mark.parametrize("dialect", ["redis-6.2", "redis-7.0", "redis-7.2", "valkey-9.1"])
def test_reference_spop_propagates_its_draw(lists_reference_servers, dialect):
    """SETS-12, SETS-13, SETS-DIALECT-2, SETS-DIALECT-3: the reference propagates the members it replied, in the
    reply's order: one SREM each (wrapped) before 7.2, one SREM of all from 7.2; DEL for a pop of the whole set."""
    from tests.test_list_blocking_moves import _PsyncTap

    port = lists_reference_servers[dialect].port
    conn = RespConnection("127.0.0.1", port)
    conn.call([b"FLUSHALL"])
    conn.call([b"SADD", b"s", *(b"%d" % i for i in range(20))])
    tap = _PsyncTap("127.0.0.1", port)
    batched = get_dialect(dialect).spop_one_srem
    try:
        for count in (None, b"3", b"14", b"5"):
            argv = [b"SPOP", b"s"] if count is None else [b"SPOP", b"s", count]
            popped = _members(conn.call(argv))
            ops = [op for op in tap.take() if op[0] != b"SELECT"]
            if count == b"5":
                lazy = get_dialect(dialect).config_listed().get("lazyfree-lazy-server-del") == "yes"
                assert ops == [[b"UNLINK" if batched and lazy else b"DEL", b"s"]], ops
            elif len(popped) == 1:
                assert ops == [[b"SREM", b"s", *popped]], ops
            elif batched:
                assert ops == [[b"SREM", b"s", *popped]], ops
            else:
                assert ops == [[b"MULTI"], *([b"SREM", b"s", m] for m in popped), [b"EXEC"]], ops
    finally:
        tap.close()
        conn.call([b"FLUSHALL"])
        conn.close()
