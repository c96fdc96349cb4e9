"""Functions (spec/rules/functions.md): FUNCTION LOAD/LIST/DELETE/FLUSH/DUMP/RESTORE/STATS, FCALL, FCALL_RO on the
real servers (each run's trace checked on the model) and the reference server; what they propagate."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from tests.real_servers import RealRedis
from tests.support import ReplicaTap, play_steps
from xspec.models import DIALECTS, ManualClock, Server
from xspec.models.server import render_op
from xspec.reference.server import ServerThread
from xspec.spec.lua import LUA_AVAILABLE
from xspec.spec.resp import Array, Map, Reply, Set
from xspec.traces.record.client import RespConnection

pytestmark = pytest.mark.skipif(not LUA_AVAILABLE, reason="lupa is not installed")

DIALECTS_WITH_FUNCTIONS = ("redis-7.0", "redis-7.2", "redis-7.4", "valkey-8.1", "valkey-9.1")
Step = tuple[object, ...]

LIB = "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return args[1] end)"
LIB_REPLACED = (
    "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return keys[1] end)\n"
    "redis.register_function{function_name='ro', callback=function(keys, args) return redis.call('get', keys[1]) end, "
    "flags={'no-writes'}, description='read it'}")
LIB2 = ("#!lua name=lib2\nredis.register_function('f5', function() error('boom') end)\n"
        "redis.register_function('f6', function() return redis.call('nosuch') end)\n"
        "redis.register_function('f8', function() local unused = 1 end)\n"
        "redis.register_function('f7', function(k, a) redis.call('set', k[1], a[1]); return redis.call('get', k[1]) end)")


def _call(*args: object) -> Step:
    return ("call", 1, *args)


LOADING: list[Step] = [
    _call("FUNCTION", "FLUSH"), _call("FUNCTION", "LOAD", LIB), _call("FUNCTION", "LOAD", LIB),
    _call("FUNCTION", "LOAD", "REPLACE", LIB_REPLACED), _call("FCALL", "myfunc", 1, "k", "a"),
    _call("FCALL", "MYFUNC", 1, "k", "a"), _call("FCALL", "ro", 1, "k"), _call("FCALL_RO", "ro", 1, "k"),
    _call("FCALL_RO", "myfunc", 1, "k"), _call("FCALL", "nofunc", 0), _call("FCALL", "myfunc", "x"),
    _call("FCALL", "myfunc", 2, "a"), _call("FCALL", "myfunc", -1), _call("FUNCTION", "LIST"),
    _call("FUNCTION", "LIST", "WITHCODE"), _call("FUNCTION", "LIST", "libraryname", "my"),
    _call("FUNCTION", "LIST", "libraryname", "MY*"), _call("FUNCTION", "STATS"),
    _call("FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function('myfunc', function() return 1 end)"),
    _call("FUNCTION", "LOAD", "#!lua name=lib2\nreturn 1"), _call("FUNCTION", "LOAD", "return 1"),
    _call("FUNCTION", "LOAD", "#!lua\nreturn 1"), _call("FUNCTION", "LOAD", "#!lua name=bad-name\nreturn 1"),
    _call("FUNCTION", "LOAD", "#!lua name=lib2 foo=bar\nreturn 1"), _call("FUNCTION", "LOAD", "#!python name=lib2\nreturn 1"),
    _call("FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function('f2', function() return 1 end"),
    _call("FUNCTION", "LOAD", "#!lua name=lib2\nredis.call('set','x','y')"),
    _call("FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function('bad-name', function() return 1 end)"),
    _call("FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function('f3', 5)"),
    _call("FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function{function_name='f4', "
          "callback=function() return 1 end, flags={'bogus'}}"),
    _call("FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function{function_name='f4', "
          "callback=function() return 1 end, other=1}"),
    _call("FUNCTION", "LOAD", "#!lua name=lib3 name=lib4\nredis.register_function('f3', function() return 1 end)"),
    _call("FUNCTION", "LOAD", "#!LUA  NAME=lib5\nredis.register_function('f5x', function() return 1 end)"),
    _call("FUNCTION", "LOAD", "#!lua name=\nreturn 1"), _call("FUNCTION", "LOAD", "#!lua name=lib6"),
    _call("FUNCTION", "LOAD", "x", "y", "z"), _call("FUNCTION", "LOAD", "replace"),
    _call("FUNCTION", "LOAD", LIB2), _call("FCALL", "f5", 0), _call("FCALL", "f6", 0), _call("FCALL", "f8", 0), _call("FCALL", "f7", 0),
    # FUNCTION-DIALECT-3: Redis 7.4.1 crashes at the next FUNCTION FLUSH after a redis.call refused for its arguments unless a
    # later redis.call of the engine succeeds: f7 again, with good arguments
    _call("FCALL", "f7", 1, "key", "v"), _call("FUNCTION", "DELETE", "nolib"), _call("FUNCTION", "DELETE", "MYLIB"),
    _call("FUNCTION", "DELETE", "lib5"), _call("FUNCTION", "KILL"), _call("FUNCTION", "RESTORE", "bad"),
    _call("FUNCTION", "RESTORE", "bad", "bogus"), _call("FUNCTION", "RESTORE", "bad", "append", "x"),
    _call("EVAL_RO", "#!lua\nreturn 1", 0), _call("EVAL_RO", "#!lua flags=no-writes\nreturn 1", 0),
    _call("MULTI"), _call("FCALL", "myfunc", 0, "in-exec"), _call("FUNCTION", "DELETE", "lib2"), _call("EXEC"),
]


def _normal(step: Sequence[object], r: Reply) -> object:
    """FUNCTION LIST walks hash tables (libraries, each library's functions): compare it in any order."""
    if len(step) > 3 and str(step[2]).upper() == "FUNCTION" and str(step[3]).upper() == "LIST":
        return _canonical(r)
    return r


def _canonical(r: object) -> object:
    if isinstance(r, (Array, Set)):
        return ("list", tuple(sorted((_canonical(i) for i in r.items), key=repr)))
    if isinstance(r, Map):
        return ("map", tuple((_canonical(k), _canonical(v)) for k, v in r.pairs))
    return r


def _args(step: Sequence[object]) -> list[bytes]:
    return [a if isinstance(a, bytes) else str(a).encode() for a in step[2:]]


def _play_real(server: RealRedis, script: Sequence[Step], proto: int) -> list[object]:
    s = server.scenario()
    if proto == 3:
        s.call(1, "HELLO", "3")
    out = [_normal(step, s.call(1, *_args(step))) for step in script]
    s.check()
    return out


def _differential(real: dict[str, RealRedis], refs: dict[str, ServerThread], script: Sequence[Step],
                  protos: Sequence[int] = (2, 3)) -> None:
    ran = 0
    for dialect in DIALECTS_WITH_FUNCTIONS:
        server = real.get(dialect)
        if server is None:
            continue
        for proto in protos:
            server.reset()
            _flush_functions(server)
            expected = _play_real(server, script, proto)
            _flush_functions(server)
            got = play_steps(refs[dialect].port, [("call", 1, "FUNCTION", "FLUSH"), *script], proto, _args, _normal)[1:]
            assert got == expected, f"{dialect} RESP{proto}: reference differs\n real: {expected}\n ref:  {got}"
            ran += 1
        _flush_functions(server)
    assert ran


def _flush_functions(server: RealRedis) -> None:
    conn = RespConnection(server.host, server.port)
    try:
        conn.call([b"FUNCTION", b"FLUSH"])
        conn.call([b"SCRIPT", b"FLUSH"])
    finally:
        conn.close()


def test_function_load_list_call_delete(fn_real_servers, fn_reference_servers):
    _differential(fn_real_servers, fn_reference_servers, LOADING)


def test_function_dump_and_restore(fn_real_servers, fn_reference_servers):
    """FUNCTION-DUMP-1: one dialect's payload restores on its own server and on the reference, and the other way."""
    for dialect in DIALECTS_WITH_FUNCTIONS:
        server = fn_real_servers.get(dialect)
        if server is None:
            continue
        _flush_functions(server)
        real = RespConnection(server.host, server.port)
        ref = RespConnection("127.0.0.1", fn_reference_servers[dialect].port)
        try:
            ref.call([b"FUNCTION", b"FLUSH"])
            for conn in (real, ref):
                assert conn.call([b"FUNCTION", b"LOAD", LIB.encode()]).value == b"mylib"  # type: ignore[union-attr]
            real_dump, ref_dump = (conn.call([b"FUNCTION", b"DUMP"]).value for conn in (real, ref))  # type: ignore[union-attr]
            assert ref_dump == real_dump, dialect  # one library: the same bytes (LZF included)
            for conn in (real, ref):
                assert conn.call([b"FUNCTION", b"LOAD", LIB2.encode()]).value == b"lib2"  # type: ignore[union-attr]
            two = ref.call([b"FUNCTION", b"DUMP"]).value  # type: ignore[union-attr]
            replies = []
            for conn in (real, ref):
                replies.append([conn.call(argv) for argv in (
                    [b"FUNCTION", b"DELETE", b"mylib"], [b"FUNCTION", b"RESTORE", two],
                    [b"FUNCTION", b"RESTORE", two, b"REPLACE"],
                    [b"FUNCTION", b"FLUSH"], [b"FUNCTION", b"RESTORE", real_dump], [b"FCALL", b"myfunc", b"0", b"x"],
                    [b"FUNCTION", b"RESTORE", two, b"FLUSH"], [b"FCALL", b"f7", b"1", b"k", b"v"],
                    [b"FUNCTION", b"RESTORE", real_dump[:-1] + b"\0"], [b"FUNCTION", b"RESTORE", b"\x01" + real_dump[1:]],
                )])
            assert replies[0] == replies[1], dialect
        finally:
            _flush_functions(server)
            real.close()
            ref.close()


PROPAGATION: list[list[str]] = [
    ["FUNCTION", "LOAD", LIB2], ["FCALL", "f7", "1", "k", "v"], ["FCALL", "f5", "0"],
    ["FUNCTION", "LOAD", "REPLACE", LIB2], ["FUNCTION", "LOAD", LIB2], ["FUNCTION", "DELETE", "lib2"],
    ["FUNCTION", "DELETE", "lib2"], ["FUNCTION", "FLUSH"],
]


@pytest.mark.parametrize("dialect", DIALECTS_WITH_FUNCTIONS)
def test_functions_propagate(fn_real_servers: dict[str, RealRedis], dialect: str):
    """FUNCTION-2, FCALL-2: FUNCTION LOAD/DELETE/FLUSH verbatim; FCALL its effects."""
    server = fn_real_servers.get(dialect)
    if server is None:
        pytest.skip(f"no real {dialect} server")
    server.reset()
    _flush_functions(server)
    conn = RespConnection(server.host, server.port)
    tap = ReplicaTap(server.host, server.port)
    model = Server(DIALECTS[dialect], ManualClock(int(time.time() * 1000)))
    try:
        for line in PROPAGATION:
            argv = [a.encode() for a in line]
            conn.call(argv)
            assert [render_op(op) for op in model.execute(1, argv).propagated] == tap.take(), line
    finally:
        tap.close()
        conn.close()


def test_62_has_no_functions(fn_real_servers: dict[str, RealRedis], fn_reference_servers):
    server = fn_real_servers.get("redis-6.2")
    if server is None:
        pytest.skip("no real redis-6.2 server")
    script = [_call("FUNCTION", "LOAD", LIB), _call("FCALL", "myfunc", 0), _call("FCALL_RO", "myfunc", 0),
              _call("EVAL_RO", "return 1", 0), _call("EVALSHA_RO", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", 0)]
    assert play_steps(fn_reference_servers["redis-6.2"].port, script, 2, _args) == _play_real(server, script, 2)


@pytest.fixture(scope="session")
def fn_real_servers(real_servers_by_dialect: dict[str, RealRedis]) -> dict[str, RealRedis]:
    return real_servers_by_dialect


@pytest.fixture(scope="session")
def fn_reference_servers(reference_servers_by_dialect: dict[str, ServerThread]) -> dict[str, ServerThread]:
    return reference_servers_by_dialect
