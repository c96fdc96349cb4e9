"""Strings, hashes and key expiry (spec/rules/strings.md, hashes.md, expiry.md): SET's options, the
counters and INCRBYFLOAT's formatting, ranges, MGET/MSET, the hash commands in a listpack's order,
and keys of every type expiring on the server's clock (lazily: each is read after its time)."""

from __future__ import annotations

import time

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.registry import topic

scenario = topic("strings")


@scenario("SET with NX, XX, GET, KEEPTTL and the expiry options; SETNX, SETEX, GETSET, GETDEL, GETEX, MGET, MSET")
def set_options(r: Recorder) -> None:
    for args in (("SET", "k", "v"), ("SET", "k", "w", "GET"), ("SET", "k", "x", "NX"), ("SET", "n", "x", "XX"),
                 ("SET", "k", "y", "XX", "GET"), ("SET", "k", "v", "EX", "0"), ("SET", "k", "v", "PX", "x"),
                 ("SET", "k", "v", "KEEPTTL", "EX", "5"), ("SET", "k", "v", "EX", "100"), ("TTL", "k"),
                 ("SET", "k", "w", "KEEPTTL"), ("TTL", "k"), ("SET", "k", "z"), ("TTL", "k"),
                 ("SETNX", "k", "1"), ("SETNX", "k2", "1"), ("SETEX", "e", "100", "v"), ("PTTL", "e"),
                 ("GETSET", "e", "w"), ("TTL", "e"), ("GETDEL", "e"), ("GETDEL", "e"),
                 ("GETEX", "k", "PX", "100000"), ("PTTL", "k"), ("GETEX", "k", "PERSIST"), ("TTL", "k"),
                 ("GETEX", "nokey", "EX", "1"), ("MSET", "a", "1", "b", "2"), ("MSETNX", "a", "1", "c", "3"),
                 ("MGET", "a", "b", "c", "k"), ("XADD", "s", "1-1", "f", "v"), ("MGET", "s", "a"), ("GET", "s"),
                 ("SET", "s", "v", "GET")):
        r.call(1, *args)


@scenario("INCR, DECR, INCRBY, DECRBY and their errors; INCRBYFLOAT's long double sums; APPEND, STRLEN, "
          "GETRANGE, SETRANGE")
def counters_and_ranges(r: Recorder) -> None:
    for args in (("INCR", "n"), ("INCRBY", "n", "41"), ("DECR", "n"), ("DECRBY", "n", "-10"), ("INCRBY", "n", "x"),
                 ("SET", "m", "9223372036854775807"), ("INCR", "m"), ("SET", "m", "1.5"), ("INCR", "m"),
                 ("INCRBYFLOAT", "m", "0.1"), ("INCRBYFLOAT", "m", "1e3"), ("INCRBYFLOAT", "m", "-1001.6"),
                 ("INCRBYFLOAT", "m", "inf"), ("INCRBYFLOAT", "f", "3.0e-2"), ("INCRBYFLOAT", "f", "x"),
                 ("APPEND", "t", "Hello"), ("APPEND", "t", " World"), ("STRLEN", "t"), ("GETRANGE", "t", "0", "4"),
                 ("GETRANGE", "t", "-5", "-1"), ("GETRANGE", "t", "-1", "-5"), ("GETRANGE", "t", "3", "100"),
                 ("SETRANGE", "t", "6", "Redis"), ("GET", "t"), ("SETRANGE", "u", "2", "x"), ("GET", "u"),
                 ("SETRANGE", "u", "-1", "x"), ("SETRANGE", "v", "0", ""), ("EXISTS", "v")):
        r.call(1, *args)


@scenario("Hash writes and reads in a listpack's order: HSET, HMSET, HSETNX, HDEL, HINCRBY, HINCRBYFLOAT, "
          "HGETALL, HKEYS, HVALS, HSCAN MATCH, WRONGTYPE")
def hash_commands(r: Recorder) -> None:
    for args in (("HSET", "h", "f1", "v1", "f2", "v2"), ("HSET", "h", "f1", "x", "f3", "v3"), ("HSET", "h", "f"),
                 ("HMSET", "h", "f4", "v4"), ("HSETNX", "h", "f4", "z"), ("HSETNX", "h", "f5", "z"),
                 ("HGET", "h", "f1"), ("HMGET", "h", "f1", "nof", "f2"), ("HGETALL", "h"), ("HDEL", "h", "f2", "nof"),
                 ("HSET", "h", "f2", "back"), ("HKEYS", "h"), ("HVALS", "h"), ("HLEN", "h"), ("HEXISTS", "h", "f3"),
                 ("HSTRLEN", "h", "f3"), ("HINCRBY", "h", "n", "5"), ("HINCRBY", "h", "f1", "1"),
                 ("HINCRBYFLOAT", "h", "fl", "1.5"), ("HINCRBYFLOAT", "h", "fl", "0.1"),
                 ("HSCAN", "h", "0", "MATCH", "f*"), ("HSCAN", "h", "0", "COUNT", "0"), ("SET", "s", "v"),
                 ("HGET", "s", "f"), ("HSET", "one", "f", "v"), ("HDEL", "one", "f", "g"), ("EXISTS", "one")):
        r.call(1, *args)


@scenario("EXPIRE's options, TTL and PTTL, PERSIST; keys of every type read after their time are gone")
def expiry(r: Recorder) -> None:
    for args in (("SET", "k", "v"), ("TTL", "k"), ("EXPIRE", "k", "100"), ("EXPIRE", "k", "50", "GT"),
                 ("EXPIRE", "k", "200", "GT"), ("EXPIRE", "k", "100", "NX"), ("EXPIRE", "k", "300", "LT"),
                 ("EXPIRE", "k", "1", "NX", "XX"), ("EXPIRE", "k", "1", "BOGUS"), ("TTL", "k"), ("PERSIST", "k"),
                 ("PERSIST", "k"), ("TTL", "k"), ("TTL", "nokey"), ("PEXPIREAT", "k", "1"), ("EXISTS", "k"),
                 ("RPUSH", "l", "a"), ("PEXPIRE", "l", "50"), ("HSET", "h", "f", "v"), ("PEXPIRE", "h", "50"),
                 ("XADD", "x", "1-1", "f", "v"), ("PEXPIRE", "x", "50"), ("SET", "s", "v", "PX", "50"),
                 ("SET", "i", "1", "PX", "50"), ("INCR", "i")):
        r.call(1, *args)
    r.call(2, "SET", "w", "v", "PX", "50")
    r.call(2, "WATCH", "w")
    time.sleep(0.15)
    for args in (("LLEN", "l"), ("HGETALL", "h"), ("XLEN", "x"), ("GET", "s"), ("GET", "i"), ("PTTL", "s")):
        r.call(1, *args)
    r.call(2, "MULTI")
    r.call(2, "GET", "w")
    r.call(2, "EXEC")


@scenario("Keyspace notifications of strings, hashes and expiry: set, expire, incrby, incrbyfloat, append, "
          "setrange, del, persist, hset, hincrby, hincrbyfloat, hdel, a lazily expired key's expired, new keys",
          tags=["resp2"])
def notifications(r: Recorder) -> None:
    from xspec.traces.scenarios.notify import enable, listen, step

    listen(r)
    enable(r, "KEA")
    enable(r, "KEAn")  # refused by 6.2, which has no new events
    for args in (("SET", "k", "v", "EX", "100"), ("SET", "k", "w", "KEEPTTL"), ("INCR", "n"),
                 ("INCRBYFLOAT", "n", "1.5"), ("APPEND", "k", "x"), ("SETRANGE", "k", "0", "y"), ("GETDEL", "k"),
                 ("MSET", "a", "1", "b", "2"), ("GETSET", "a", "3"), ("SETEX", "e", "100", "v"), ("PERSIST", "e"),
                 ("EXPIRE", "e", "100"), ("GETEX", "e", "PERSIST"), ("EXPIRE", "e", "-1"), ("SET", "e", "v"), ("GETEX", "e", "PXAT", "1"),
                 ("HSET", "h", "f", "1", "g", "2"), ("HSETNX", "h", "x", "1"), ("HINCRBY", "h", "f", "1"),
                 ("HINCRBYFLOAT", "h", "g", "0.5"), ("HDEL", "h", "f"), ("HDEL", "h", "g", "x"),
                 ("SET", "t", "v", "PX", "30")):
        step(r, *args)
    time.sleep(0.06)
    step(r, "GET", "t")  # lazily or actively expired: expired, once
    enable(r, "")


@scenario("The active expiry cycle: keys deleted with no command looking them up, counted by DBSIZE and "
          "announced by expired messages", tags=["resp2"])
def active_expiry(r: Recorder) -> None:
    from xspec.traces.scenarios.notify import drain, enable, listen

    listen(r)
    enable(r, "Ex")  # NOTIFY-1: keyevent channels of expired keys only
    for args in (("SET", "a", "v", "PX", "20"), ("SET", "b", "v", "PX", "40"), ("SET", "c", "v", "PX", "100000"),
                 ("SET", "d", "v"), ("DBSIZE",)):
        r.call(2, *args)
    time.sleep(0.3)  # EXPIRE-ACTIVE-1: the cycle runs ten times a second
    r.call(2, "DBSIZE")  # EXPIRE-ACTIVE-2: a and b are gone, c and d stay
    r.call(2, "PUBLISH", "mark", "-")
    drain(r)  # expired a and b, in the cycle's order
    r.call(2, "DBSIZE")
    enable(r, "")


@scenario("Keys past their time while clients are paused (CLIENT PAUSE WRITE): missing to every lookup, "
          "still stored and counted, deleted once the pause is over", tags=["resp2"])
def paused_expiry(r: Recorder) -> None:
    setup: tuple[tuple[str, ...], ...] = (
        ("SET", "k", "v", "PX", "50"), ("SET", "s", "v"), ("XADD", "st", "1-1", "f", "v"), ("PEXPIRE", "st", "50"),
        ("CLIENT", "PAUSE", "3000", "WRITE"))
    for args in setup:
        r.call(1, *args)
    time.sleep(0.2)  # EXPIRE-PAUSE-1: k and st are past their time; nothing deletes them while paused
    for args in (("GET", "k"), ("EXISTS", "k", "st", "s"), ("TTL", "k"), ("PTTL", "st"), ("TYPE", "k"),
                 ("STRLEN", "k"), ("XRANGE", "st", "-", "+"), ("XLEN", "st"), ("KEYS", "*"), ("SCAN", "0"),
                 ("MGET", "k", "s"), ("DBSIZE",), ("MULTI",), ("GET", "k"), ("DBSIZE",), ("EXEC",), ("DBSIZE",),
                 ("CLIENT", "UNPAUSE"), ("GET", "k"), ("DBSIZE",)):
        r.call(1, *args)
    time.sleep(0.3)  # EXPIRE-ACTIVE-1: once unpaused, the cycle deletes st
    r.call(1, "DBSIZE")
