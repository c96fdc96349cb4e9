"""The fuzzer's scripting family: EVAL/EVALSHA/EVAL_RO of small scripts over the stream, list and string keys,
SCRIPT LOAD/EXISTS, and FCALL of one library (spec/rules/scripting.md, functions.md).

Registered under ``scripting`` in :data:`~xspec.traces.fuzz.generate.FAMILIES`, with the profile ``scripts``
that weights it beside the stream commands (the default profiles give it no weight).
"""

from __future__ import annotations

import hashlib

from xspec.traces.fuzz.generate import FAMILIES, KEYS, PROFILES, Arg, Generator, Profile

# Script bodies: each reads or writes through redis.call/pcall, converts a value, or fails in one of the ways
# SCRIPT-5..8 and SCRIPT-15 describe. KEYS[1] is a stream key, KEYS[2] a value key.
BODIES: tuple[bytes, ...] = (
    b"return redis.call('xlen', KEYS[1])",
    b"return redis.call('xrange', KEYS[1], '-', '+', 'COUNT', 2)",
    b"return redis.call('xadd', KEYS[1], ARGV[1], 'f', ARGV[2])",
    b"return redis.pcall('xadd', KEYS[1], ARGV[1], 'f', 'v')",
    b"redis.call('set', KEYS[2], ARGV[2]); return redis.call('get', KEYS[2])",
    b"return redis.call('incr', KEYS[2])",
    b"return {redis.call('exists', KEYS[1]), redis.call('type', KEYS[1]).ok}",
    b"return redis.call('lpush', KEYS[2], ARGV[2], ARGV[1])",
    b"return redis.call('xgroup', 'CREATE', KEYS[1], 'g', '0', 'MKSTREAM')",
    b"return redis.call('xreadgroup', 'GROUP', 'g', 'c', 'COUNT', 1, 'STREAMS', KEYS[1], '>')",
    b"return redis.call('nosuch')",
    b"return {1, 2.5, 'x', false, {err='E'}, nil, 3}",
    b"return {ok='done'}",
    b"error('failed here')",
    b"return tonumber(ARGV[2]) + 1",
    b"return cjson.encode({KEYS[1], #ARGV})",
    b"#!lua flags=no-writes\nreturn redis.call('xlen', KEYS[1])",
    b"#!lua flags=no-writes\nreturn redis.call('del', KEYS[1])",
)
ARGS: tuple[bytes, ...] = (b"*", b"1-1", b"0-1", b"5", b"x", b"", b"-1")
VALUE_KEYS: tuple[bytes, ...] = (b"a", b"b", b"l")
LIBRARY = (b"#!lua name=fuzzlib\nredis.register_function('flen', function(keys) return redis.call('xlen', keys[1]) end)\n"
           b"redis.register_function{function_name='fread', callback=function(keys) return redis.call('xrange', "
           b"keys[1], '-', '+') end, flags={'no-writes'}}")


def scripting_family(gen: Generator, client: int) -> list[Arg]:
    """One scripting command; its numkeys is mostly right, sometimes not (SCRIPT-1)."""
    rng = gen.rng
    body = rng.choice(BODIES)
    keys = [rng.choice(KEYS), rng.choice(VALUE_KEYS)]
    args = [rng.choice(ARGS), rng.choice(ARGS)]
    numkeys = b"2" if not gen.chance(0.05) else rng.choice((b"-1", b"9", b"x"))
    kind = rng.randrange(10)
    if kind < 5:
        return [b"EVAL", body, numkeys, *keys, *args]
    if kind == 5:
        return [rng.choice((b"EVAL_RO", b"EVAL")), body, numkeys, *keys, *args]
    if kind == 6:
        return [b"SCRIPT", rng.choice((b"LOAD", b"EXISTS")), body]
    if kind == 7:
        return [b"EVALSHA", hashlib.sha1(body).hexdigest().encode(), numkeys, *keys, *args]
    if kind == 8:
        return [b"FUNCTION", b"LOAD", b"REPLACE", LIBRARY]
    return [rng.choice((b"FCALL", b"FCALL_RO")), rng.choice((b"flen", b"fread", b"nosuch")), b"1", keys[0]]


FAMILIES.setdefault("scripting", scripting_family)
PROFILES.setdefault("scripts", Profile(weights=(("scripting", 14), ("xadd", 14), ("xreadgroup", 6), ("keyspace", 3))))
