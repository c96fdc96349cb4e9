"""Scripting and functions: EVAL's conversions and errors, the script cache, read-only scripts, the Lua
libraries, atomicity, FUNCTION LOAD/LIST/DELETE and FCALL (spec/rules/scripting.md, functions.md).

Each scenario starts and ends with SCRIPT FLUSH (and FUNCTION FLUSH where the dialect has it), since the
recorder's reset between scenarios empties the databases but not the script cache or the libraries.
"""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.registry import topic

scenario = topic("scripting")

LIB = ("#!lua name=mylib\nredis.register_function('echo', function(keys, args) return args[1] end)\n"
       "redis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end, "
       "flags={'no-writes'}, description='reads a key'}\n"
       "redis.register_function('put', function(keys, args) redis.call('set', keys[1], args[1]); "
       "return redis.call('incr', keys[2]) end)")


def _flush(r: Recorder) -> None:
    r.call(1, "SCRIPT", "FLUSH")
    r.call(1, "FUNCTION", "FLUSH")  # 6.2: an unknown command, recorded as such


@scenario("EVAL: Lua values as replies and replies as Lua values, KEYS and ARGV, RESP3 in scripts")
def conversions(r: Recorder) -> None:
    _flush(r)
    r.call(1, "EVAL", "return {1, 2.9, -3.5, 'x', {true, false}, nil, 'after nil'}", "0")  # SCRIPT-5
    r.call(1, "EVAL", "return {err='CUSTOM failure'}", "0")
    r.call(1, "EVAL", "return {1, {ok='fine'}, {err='inner'}}", "0")
    r.call(1, "EVAL", "return {KEYS[1], KEYS[2], ARGV[1], #ARGV}", "2", "k1", "k2", "a1", "a2")
    r.call(1, "HSET", "h", "f", "v")
    r.call(1, "EVAL", "return redis.call('hgetall', KEYS[1])", "1", "h")  # SCRIPT-6
    r.call(1, "EVAL", "return {type(redis.call('get', 'nokey')), redis.call('ping').ok}", "0")
    r.call(1, "EVAL", "redis.setresp(3); local m = redis.call('hgetall', 'h'); return {m.map.f, "
                      "type(redis.call('get', 'nokey'))}", "0")
    r.call(1, "EVAL", "redis.setresp(3); return redis.call('hgetall', 'h')", "0")
    r.call(1, "EVAL", "redis.setresp(3); return {true, false, {double=1.5}}", "0")
    r.call(1, "HELLO", "3")
    r.call(1, "EVAL", "return {map={a=1}}", "0")
    r.call(1, "EVAL", "return {double=0.1}", "0")
    r.call(1, "EVAL", "return redis.call('set', 'n', 1.9)", "0")  # SCRIPT-DIALECT-2
    r.call(1, "GET", "n")
    r.call(1, "HELLO", "2")
    _flush(r)


@scenario("redis.call and redis.pcall refusals and errors, uncaught errors, the read-only globals, wrong numkeys")
def errors(r: Recorder) -> None:
    _flush(r)
    r.call(1, "SET", "k", "v")
    for body in ("return redis.call('nosuch')", "return redis.pcall('nosuch')", "return redis.call('lpush', 'k', 'x')",
                 "return redis.pcall('lpush', 'k', 'x')", "return redis.call('get')", "return redis.call()",
                 "return redis.call('get', {})", "return redis.call('multi')", "error('plain')", "error({err='TABLE x'})",
                 "return nosuch_global", "newglobal = 1", "return 1 +", "redis.setresp(4)",
                 "return redis.error_reply('MY code')", "return redis.status_reply('fine')", "return redis.sha1hex('x')",
                 "return redis.call('blpop', 'q', 0)", "return redis.call('get', 'k')"):
        r.call(1, "EVAL", body, "0")  # SCRIPT-7, SCRIPT-8, SCRIPT-15
    r.call(1, "EVAL", "return 1", "-1")  # SCRIPT-1
    r.call(1, "EVAL", "return 1", "3", "a")
    r.call(1, "EVAL", "return 1", "x")
    _flush(r)


@scenario("The script cache: SCRIPT LOAD/EXISTS/FLUSH/KILL, EVALSHA and NOSCRIPT, EVAL_RO and shebang flags")
def cache(r: Recorder) -> None:
    _flush(r)
    one = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
    r.call(1, "EVALSHA", one, "0")  # SCRIPT-3
    r.call(1, "SCRIPT", "LOAD", "return 1")  # SCRIPT-2
    r.call(1, "SCRIPT", "EXISTS", one, one.upper(), "nope")  # SCRIPT-12
    r.call(1, "EVALSHA", one.upper(), "0")
    r.call(1, "EVALSHA", "short", "x")
    r.call(1, "SCRIPT", "LOAD", "return +")
    r.call(1, "SCRIPT", "KILL")  # SCRIPT-14
    r.call(1, "SCRIPT", "FLUSH", "nope")  # SCRIPT-13
    r.call(1, "SCRIPT", "FLUSH", "ASYNC")
    r.call(1, "SCRIPT", "EXISTS", one)
    r.call(1, "EVAL_RO", "return redis.call('set', 'a', '1')", "0")  # SCRIPT-4
    r.call(1, "EVAL_RO", "return redis.call('get', 'a')", "0")
    r.call(1, "EVAL", "#!lua flags=no-writes\nreturn redis.call('set', 'a', '1')", "0")
    r.call(1, "EVAL", "#!lua flags=bogus\nreturn 1", "0")
    r.call(1, "EVAL", "#!lua\nreturn redis.call('incr', 'a')", "0")
    r.call(1, "MULTI")
    r.call(1, "EVAL", "return redis.call('incr', 'a')", "0")
    r.call(1, "EVALSHA", one, "0")
    r.call(1, "EXEC")
    _flush(r)


@scenario("The libraries scripts get: cjson, cmsgpack, bit, struct")
def libraries(r: Recorder) -> None:
    _flush(r)
    for body in ("return cjson.encode({1, 'two', {three=3}, 1.5})", "return cjson.encode({})",
                 "return cjson.decode('{\"a\":[1,2,{\"b\":null}]}').a[2]", "return cjson.decode('[1,2')",
                 "return cjson.encode({[1]=1, [40]=2})", "return cmsgpack.pack({1, 2, 3}, 'abc', -1, 300, 1.5)",
                 "return {cmsgpack.unpack(cmsgpack.pack({5, 6}, 'x', -200, 70000))}",
                 "return {bit.band(12, 10), bit.bor(1, 2), bit.bxor(5, 1), bit.lshift(1, 31), bit.tohex(255)}",
                 "return {struct.unpack('>I2b', struct.pack('>I2b', 513, -3))}"):
        r.call(1, "EVAL", body, "0")  # SCRIPT-8
    _flush(r)


@scenario("A script is atomic: a client blocked on a list it fills is served after the whole script")
def atomic(r: Recorder) -> None:
    _flush(r)
    r.send(2, "BLPOP", "q", "0")
    r.call(1, "EVAL", "redis.call('rpush', 'q', 'a', 'b'); return redis.call('lpop', 'q')", "0")  # SCRIPT-17
    r.recv(2)
    r.call(1, "LRANGE", "q", "0", "-1")
    _flush(r)


@scenario("Functions: FUNCTION LOAD and its refusals, LIST, STATS, FCALL and FCALL_RO, DELETE, KILL")
def functions(r: Recorder) -> None:
    _flush(r)
    r.call(1, "FUNCTION", "LOAD", LIB)  # FUNCTION-LOAD-1..5
    r.call(1, "FUNCTION", "LOAD", LIB)
    r.call(1, "FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('ECHO', function() return 1 end)")
    r.call(1, "FUNCTION", "LOAD", "#!lua name=other\nredis.call('ping')")
    r.call(1, "FUNCTION", "LOAD", "#!lua name=bad-name\nreturn 1")
    r.call(1, "FUNCTION", "LOAD", "no metadata")
    r.call(1, "FCALL", "echo", "0", "hi")  # FCALL-1, FCALL-2
    r.call(1, "FCALL", "ECHO", "0", "hi")
    r.call(1, "FCALL", "put", "2", "k", "counter", "v")
    r.call(1, "FCALL_RO", "peek", "1", "k")
    r.call(1, "FCALL_RO", "put", "2", "k", "counter", "v")
    r.call(1, "FCALL", "nosuch", "0")
    r.call(1, "FCALL", "echo", "x")
    r.call(1, "FUNCTION", "LIST", "WITHCODE")  # FUNCTION-4
    r.call(1, "FUNCTION", "STATS")
    r.call(1, "FUNCTION", "KILL")
    r.call(1, "FUNCTION", "DELETE", "nolib")
    r.call(1, "FUNCTION", "DELETE", "mylib")
    r.call(1, "FUNCTION", "LIST")
    _flush(r)
