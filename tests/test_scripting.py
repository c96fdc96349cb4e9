"""Scripting (spec/rules/scripting.md): EVAL, EVALSHA, EVAL_RO, SCRIPT on the real servers of every dialect,
the model (each real run's trace is checked on it) and the reference server; what scripts propagate."""

from __future__ import annotations

import pytest

from tests.real_servers import RealRedis
from tests.support import ReplicaTap
from tests.test_lists import ALL_DIALECTS, differential
from xspec.models import DIALECTS, ManualClock, Server
from xspec.models.server import render_op
from xspec.reference.server import ServerThread
from xspec.spec.lua import LUA_AVAILABLE, engine_for, format_number
from xspec.traces.record.client import RespConnection

pytestmark = pytest.mark.skipif(not LUA_AVAILABLE, reason="lupa is not installed")

Step = tuple[object, ...]


def _eval(body: str, *args: object) -> Step:
    return ("call", 1, "EVAL", body, *args)


CONVERSIONS: list[Step] = [
    _eval("return 1", 0), _eval("local x = 1", 0), _eval("return", 0), _eval("return {1,2,3,'ciao',{1,2}}", 0), _eval("return 3.99", 0), _eval("return -3.99", 0),
    _eval("return true", 0), _eval("return false", 0), _eval("return nil", 0), _eval("return {1,2,nil,4}", 0),
    _eval("return {err='My Error'}", 0), _eval("return {err='My Error', ok='x'}", 0), _eval("return {ok='fine'}", 0),
    _eval("return {1, 2, {err='inner'}}", 0), _eval("return {1.5, 'x', 2.9}", 0),
    _eval("return 12345678901234567890", 0), _eval("return {err=1}", 0), _eval("return {err=''}", 0),
    _eval("return {double=3.5}", 0), _eval("return {map={a=1}}", 0), _eval("return {set={a=true}}", 0),
    _eval("redis.setresp(3); return true", 0), _eval("redis.setresp(3); return false", 0),
    _eval("redis.setresp(3); return nil", 0), _eval("return redis.status_reply('hi')", 0),
    _eval("return KEYS", 2, "a", "b", "c", "d"), _eval("return ARGV", 2, "a", "b", "c", "d"),
    _eval("return redis.sha1hex('')", 0), _eval("return redis.sha1hex(1)", 0),
    _eval("return {1, 'a', {}, false, true}", 0), _eval("return redis.replicate_commands()", 0),
    _eval("return redis.log(redis.LOG_WARNING, 'x')", 0), _eval("return redis.set_repl(redis.REPL_ALL)", 0),
]

CALLS: list[Step] = [
    ("call", 1, "HSET", "h", "f", "v"), ("call", 1, "RPUSH", "l", "x"),
    _eval("return redis.call('set', KEYS[1], ARGV[1])", 1, "k", "v"), _eval("return redis.call('get', KEYS[1])", 1, "k"),
    _eval("return redis.call('get','nokey')", 0), _eval("return type(redis.call('get','nokey'))", 0),
    _eval("redis.setresp(3); return type(redis.call('get','nokey'))", 0),
    _eval("redis.setresp(3); return redis.call('hgetall', 'h')", 0),
    _eval("redis.setresp(3); local r = redis.call('hgetall', 'h'); return type(r) .. tostring(r.map.f)", 0),
    _eval("return redis.call('ping')", 0), _eval("return redis.call('ping').ok", 0),
    _eval("return redis.call('lrange', 'l', 0, -1)", 0), _eval("return redis.call('exists', 1)", 0),
    _eval("return redis.call('get', 1.5)", 0), _eval("return redis.call('select', 5)", 0),
    _eval("return redis.call('set', 'n', 1.9)", 0), ("call", 1, "GET", "n"),
    _eval("local t = redis.pcall('set','a'); return t.err", 0),
    _eval("return redis.pcall('lpush', 'k', 'x')", 0), _eval("return redis.pcall('nosuch')", 0),
    ("call", 1, "GET", "k"),
]

ERRORS: list[Step] = [
    ("call", 1, "SET", "k", "v"),
    _eval("return redis.call('nosuch')", 0), _eval("return redis.call('lpush', 'k', 'x')", 0),
    _eval("return redis.call('get')", 0), _eval("return redis.call()", 0), _eval("return redis.call(1)", 0),
    _eval("return redis.call('get', {})", 0), _eval("error('x')", 0), _eval("error({err='y'})", 0),
    _eval("return 1 +", 0), _eval("foo()", 0), _eval("x = 5", 0), _eval("return _G.x", 0),
    _eval("return redis.call('eval', 'return 1', 0)", 0), _eval("return redis.call('multi')", 0),
    _eval("return redis.call('client','list')", 0), _eval("return redis.call('script','load','return 1')", 0),
    _eval("redis.setresp(4)", 0), _eval("return redis.sha1hex()", 0), _eval("return redis.error_reply()", 0),
    _eval("return redis.error_reply(1)", 0), _eval("return redis.status_reply()", 0),
    _eval("return redis.error_reply('boom')", 0), _eval("return redis.error_reply('-ERR boom')", 0),
    _eval("return redis.error_reply('MY boom')", 0),
    _eval("return 1", -1), _eval("return 1", 2, "a"), _eval("return 1", "x"), ("call", 1, "EVAL", "return 1"),
    _eval("return redis.call('blpop', 'q', 0)", 0),
    _eval("return redis.call('xread','block','0','streams','s','$')", 0),
    _eval("return redis.call('lpush', 'k', 'x') .. 'never'", 0),
    _eval("local ok = pcall(function() redis.call('nosuch') end); return ok", 0),
]

LIBRARIES: list[Step] = [
    _eval("return cjson.encode({1,2,{a=1}})", 0), _eval("return cjson.encode({a=1.5})", 0),
    _eval("return cjson.decode('[1,2,{\"a\":1.5}]')[3].a", 0), _eval("return cjson.encode({})", 0),
    _eval("return cjson.encode({[1]=1,[3]=3})", 0), _eval("return cjson.encode({[1]=1,[30]=3})", 0),
    _eval("return cjson.encode({1/3, 1e20, 'a/b\\\"\\\\', true, cjson.null, -0.5, 100})", 0),
    _eval("return cjson.encode('\\1\\127\\200')", 0),
    _eval("return cjson.decode('{\"a\":null}').a == cjson.null", 0), _eval("return cjson.decode('[1,2')", 0),
    _eval("return cjson.decode('')", 0), _eval("return cjson.decode('{\"a\" 1}')", 0),
    _eval("return cjson.decode('[1] x')", 0), _eval("return cjson.decode('\"\\\\u00e9\"')", 0),
    _eval("return cjson.decode('{1:2}')", 0), _eval("return cjson.decode('[tru]')", 0),
    _eval("return cmsgpack.pack({1,2,3})", 0),
    _eval("return cmsgpack.pack(1.5, 0.1, -1, -200, 70000, 5000000000, 'abc', {}, true, false)", 0),
    _eval("return {cmsgpack.unpack(cmsgpack.pack({5,6}, 'x', 1.5, -3, 300, true))}", 0),
    _eval("local t = cmsgpack.unpack(cmsgpack.pack({a=1,b={1,2}})); return {t.a, t.b[2]}", 0),
    _eval("return cmsgpack.pack(string.rep('x', 40), string.rep('y', 300))", 0),
    _eval("return bit.band(7,3)", 0), _eval("return {bit.bor(1,2,4), bit.bxor(5,1), bit.bnot(0), bit.lshift(1,31)}", 0),
    _eval("return {bit.rshift(-1, 28), bit.arshift(-16, 2), bit.tohex(255), bit.tohex(-1, -4), bit.tobit(2^32+5)}", 0),
    _eval("return struct.pack('>I2', 5)", 0), _eval("return {struct.unpack('<i4', struct.pack('<i4', -2))}", 0),
    _eval("return {struct.unpack('>HBs', struct.pack('>HBs', 513, 7, 'hi'))}", 0),
    _eval("return struct.size('>I2bd')", 0),
]


def test_script_conversions(script_real_servers, script_reference_servers):
    differential(script_real_servers, script_reference_servers, CONVERSIONS, dialects=ALL_DIALECTS)


def test_redis_call_and_pcall(script_real_servers, script_reference_servers):
    differential(script_real_servers, script_reference_servers, CALLS, dialects=ALL_DIALECTS)


def test_script_errors_in_each_dialect(script_real_servers, script_reference_servers):
    differential(script_real_servers, script_reference_servers, ERRORS, dialects=ALL_DIALECTS, protos=(2,))


def test_script_libraries(script_real_servers, script_reference_servers):
    differential(script_real_servers, script_reference_servers, LIBRARIES, dialects=ALL_DIALECTS, protos=(2,))


def test_script_cache_and_read_only_scripts(script_real_servers, script_reference_servers):
    one = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
    differential(script_real_servers, script_reference_servers, dialects=ALL_DIALECTS, protos=(2,), script=[
        ("call", 1, "SCRIPT", "FLUSH"), ("call", 1, "EVALSHA", one, 0), ("call", 1, "EVALSHA", "abc", "x"),
        ("call", 1, "SCRIPT", "LOAD", "return 1"), ("call", 1, "SCRIPT", "EXISTS", one, one.upper(), "abc"),
        ("call", 1, "EVALSHA", one.upper(), 0), ("call", 1, "EVALSHA", one, "x"), ("call", 1, "EVALSHA", one, 1),
        ("call", 1, "EVALSHA_RO", one, 0), ("call", 1, "EVAL", "return 2", 0),
        ("call", 1, "SCRIPT", "EXISTS", "7f923f79fe76194c868d7e1d0820de36700eb649"),
        ("call", 1, "SCRIPT", "FLUSH", "bad"), ("call", 1, "SCRIPT", "FLUSH", "ASYNC"),
        ("call", 1, "SCRIPT", "FLUSH", "sync"), ("call", 1, "SCRIPT", "EXISTS", one), ("call", 1, "SCRIPT", "KILL"),
        ("call", 1, "SCRIPT", "LOAD", "return +"), ("call", 1, "SCRIPT", "NOPE"),
        ("call", 1, "EVAL_RO", "return redis.call('set','a','1')", 0),
        ("call", 1, "EVAL_RO", "return redis.call('get','a')", 0),
        ("call", 1, "EVAL", "#!lua flags=no-writes\nreturn redis.call('set','a','1')", 0),
        ("call", 1, "EVAL", "#!lua flags=no-writes,allow-oom\nreturn 1", 0),
        ("call", 1, "EVAL", "#!lua flags=bogus\nreturn 1", 0), ("call", 1, "EVAL", "#!lua\nreturn redis.call('set','a','1')", 0),
        ("call", 1, "EVAL", "#!lua name=x\nreturn 1", 0), ("call", 1, "EVAL", "#!python\nreturn 1", 0),
        ("call", 1, "EVAL", "#!lua", 0), ("call", 1, "MULTI"),
        ("call", 1, "EVAL", "return redis.call('incr', 'c')", 0), ("call", 1, "EVALSHA", one, 0), ("call", 1, "EXEC"),
    ])


def test_scripts_are_atomic_and_serve_blocked_clients_after(script_real_servers, script_reference_servers):
    """SCRIPT-17: the blocked client gets what is left after the whole script, not the first push."""
    differential(script_real_servers, script_reference_servers, dialects=ALL_DIALECTS, protos=(2,), script=[
        ("send", 2, "BLPOP", "q", 0),
        ("call", 1, "EVAL", "redis.call('rpush', 'q', 'a', 'b'); return redis.call('lpop', 'q')", 0),
        ("recv", 2), ("call", 1, "LRANGE", "q", 0, -1),
    ])


# -- propagation ----------------------------------------------------------------------------------

PROPAGATION: list[list[str]] = [
    ["EVAL", "redis.call('set','a','1'); redis.call('incr','a'); return 1", "0"],
    ["EVAL", "redis.call('set','a','1'); return 1", "0"],
    ["EVAL", "return redis.call('get','a')", "0"],
    ["EVAL", "redis.call('set','a','1'); error('x')", "0"],
    ["SCRIPT", "LOAD", "return 1"],
    ["SCRIPT", "FLUSH"],
    ["EVAL", "redis.call('lpush','l','x'); return redis.call('lpop','l')", "0"],
    ["EVAL", "redis.set_repl(redis.REPL_NONE); redis.call('set','z','1'); return 1", "0"],
    ["MULTI"], ["EVAL", "redis.call('set','a','2'); return 1", "0"], ["SET", "b", "2"], ["EXEC"],
    # last: the tap's marker, published from database 0, would take the SELECT that comes back to it
    ["EVAL", "redis.call('select','2'); redis.call('set','b','1'); return 1", "0"],
]


@pytest.mark.parametrize("dialect", ALL_DIALECTS)
def test_scripts_propagate_their_effects(script_real_servers: dict[str, RealRedis], dialect: str):
    server = script_real_servers.get(dialect)
    if server is None:
        pytest.skip(f"no real {dialect} server")
    server.reset()
    conn = RespConnection(server.host, server.port)
    tap = ReplicaTap(server.host, server.port)
    model = Server(DIALECTS[dialect], ManualClock(1))
    try:
        for line in PROPAGATION:
            argv = [a.encode() for a in line]
            conn.call(argv)
            real = tap.take()
            assert [render_op(op) for op in model.execute(1, argv).propagated] == real, line
    finally:
        tap.close()
        conn.close()


# -- the engine on its own -------------------------------------------------------------------------

@pytest.mark.parametrize("value, shortest, text", [
    (5.0, False, b"5"), (1.9, False, b"1.8999999999999999"), (1.9, True, b"1.9"), (-0.5, True, b"-0.5"),
    (1e20, False, b"1e+20"), (1e20, True, b"1e+20"),
])
def test_numbers_given_to_redis_call(value: float, shortest: bool, text: bytes):
    assert format_number(value, shortest) == text


def test_an_engine_keeps_nothing_between_scripts():
    engine = engine_for("redis-7.0")
    first = engine.compile(b"return 1")
    assert engine.compile(b"return 1") is first


@pytest.fixture(scope="session")
def script_real_servers(real_servers_by_dialect: dict[str, RealRedis]) -> dict[str, RealRedis]:
    return real_servers_by_dialect


@pytest.fixture(scope="session")
def script_reference_servers(reference_servers_by_dialect: dict[str, ServerThread]) -> dict[str, ServerThread]:
    return reference_servers_by_dialect




def test_script_exists_without_a_sha(real_servers_by_dialect, reference_servers_by_dialect):
    """SCRIPT-DIALECT-6: 6.2's SCRIPT EXISTS without a SHA replies an empty array, 7.0+ the arity error."""
    differential(real_servers_by_dialect, reference_servers_by_dialect,
                 [("call", 1, "SCRIPT", "EXISTS"), ("call", 1, "SCRIPT", "EXISTS", "abc")], ALL_DIALECTS)
