"""Sorted sets: ZADD's options, the ZRANGE family, set operations, pops and blocking pops, scores' texts."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import block, resp3
from xspec.traces.scenarios.notify import enable, listen, step
from xspec.traces.scenarios.registry import topic

scenario = topic("zsets")


@scenario("ZADD with NX, XX, GT, LT, CH and INCR, their conflicts, ZINCRBY, ZSCORE, ZRANK; WRONGTYPE against a stream",
          tags=["zsets"])
def add_options(r: Recorder) -> None:
    r.call(1, "ZADD", "z", "1", "a", "2", "b")  # ZSET-2, ZSET-3
    r.call(1, "ZADD", "z", "NX", "CH", "5", "a", "3", "c")
    r.call(1, "ZADD", "z", "XX", "GT", "CH", "0", "a", "9", "b")
    r.call(1, "ZADD", "z", "INCR", "LT", "-1", "c")
    r.call(1, "ZADD", "z", "NX", "XX", "1", "a")
    r.call(1, "ZADD", "z", "GT", "LT", "1", "a")
    r.call(1, "ZINCRBY", "z", "0.5", "a")  # ZSET-4
    r.call(1, "ZSCORE", "z", "a")  # ZSET-6
    r.call(1, "ZMSCORE", "z", "a", "nope")
    r.call(1, "ZRANK", "z", "b")  # ZSET-7
    r.call(1, "ZREVRANK", "z", "b")
    r.call(1, "ZADD", "z", "INCR", "inf", "b")
    r.call(1, "ZADD", "z", "INCR", "-inf", "b")
    r.call(1, "XADD", "s", "1-1", "f", "v")
    r.call(1, "ZADD", "s", "1", "a")  # ZSET-1
    r.call(1, "ZREM", "z", "a", "b", "c")  # ZSET-5
    r.call(1, "EXISTS", "z")


@scenario("ZRANGE by rank, score and lex, with REV, LIMIT and WITHSCORES in RESP3; ZRANGESTORE; ZREMRANGEBY*",
          tags=["zsets", "resp3"])
def ranges(r: Recorder) -> None:
    resp3(r, 1)
    r.call(1, "ZADD", "r", "1", "a", "2", "b", "3", "c", "4", "d")
    r.call(1, "ZRANGE", "r", "0", "-1", "WITHSCORES")  # ZSET-9, ZSET-10
    r.call(1, "ZRANGE", "r", "(4", "1", "BYSCORE", "REV", "LIMIT", "1", "2", "WITHSCORES")
    r.call(1, "ZRANGEBYLEX", "r", "[b", "+")
    r.call(1, "ZRANGE", "r", "0", "1", "LIMIT", "0", "1")
    r.call(1, "ZCOUNT", "r", "(1", "+inf")  # ZSET-12
    r.call(1, "ZRANGESTORE", "dst", "r", "1", "2")  # ZSET-11
    r.call(1, "ZRANGE", "dst", "0", "-1", "WITHSCORES")
    r.call(1, "ZREMRANGEBYSCORE", "r", "-inf", "(2")  # ZSET-13
    r.call(1, "ZREMRANGEBYRANK", "r", "-1", "-1")
    r.call(1, "ZRANGE", "r", "0", "-1")


@scenario("ZUNIONSTORE, ZINTERSTORE and ZDIFF over sorted sets and a set, with WEIGHTS and AGGREGATE",
          tags=["zsets", "sets"])
def set_operations(r: Recorder) -> None:
    r.call(1, "ZADD", "a", "1", "x", "2", "y")
    r.call(1, "ZADD", "b", "10", "y", "20", "z")
    r.call(1, "SADD", "s", "x", "z")
    r.call(1, "ZUNIONSTORE", "u", "3", "a", "b", "s", "WEIGHTS", "2", "1", "5", "AGGREGATE", "MAX")  # ZSET-14
    r.call(1, "ZRANGE", "u", "0", "-1", "WITHSCORES")
    r.call(1, "ZINTERSTORE", "i", "2", "a", "b")
    r.call(1, "ZRANGE", "i", "0", "-1", "WITHSCORES")
    r.call(1, "ZDIFF", "2", "a", "s", "WITHSCORES")
    r.call(1, "ZINTERSTORE", "i", "2", "a", "nokey")
    r.call(1, "EXISTS", "i")


@scenario("Blocked BZPOPMIN and BZPOPMAX served in FIFO order by one ZADD; a timed-out BZPOPMIN gets a null array",
          tags=["zsets", "blocking"])
def blocking_pops(r: Recorder) -> None:
    block(r, 2, "BZPOPMIN", "q", "0")  # BZSET-2
    block(r, 3, "BZPOPMAX", "q", "0")
    r.call(1, "ZADD", "q", "1", "low", "2", "mid", "3", "high")
    r.recv(2)
    r.recv(3)
    r.call(1, "ZRANGE", "q", "0", "-1")
    r.call(1, "ZPOPMIN", "q", "5")  # ZSET-15
    block(r, 2, "BZPOPMIN", "none", "0.3")  # BZSET-3
    r.recv(2)


@scenario("Scores that read and print differently across versions: 1.1, 1e-7, -0 in a listpack and a skiplist",
          tags=["zsets"])
def score_texts(r: Recorder) -> None:
    r.call(1, "ZADD", "d", "1.1", "a", "1e-7", "b", "-0.0", "c", "123456789012345678", "e")  # ZSET-DOUBLE-1
    r.call(1, "ZRANGE", "d", "0", "-1", "WITHSCORES")
    r.call(1, "ZSCAN", "d", "0")  # ZSET-17
    r.call(1, "ZADD", "long", "-0.0", "m" * 65)  # ZSET-ENC-1, ZSET-ENC-3
    r.call(1, "ZSCORE", "long", "m" * 65)
    r.call(1, "ZADD", "d", " 1", "x")
    r.call(1, "ZADD", "d", "1e400", "x")


@scenario("Keyspace notifications of ZADD, ZINCRBY, ZREM, the STORE forms, ZREMRANGEBYSCORE and ZPOPMAX",
          tags=["zsets", "pubsub"])
def notifications(r: Recorder) -> None:
    listen(r)
    enable(r, "KEA")  # NOTIFY-2
    step(r, "ZADD", "z", "1", "a", "2", "b")  # NOTIFY-4
    step(r, "ZADD", "z", "INCR", "1", "a")
    step(r, "ZADD", "z", "NX", "5", "a")
    step(r, "ZREM", "z", "a")
    step(r, "ZUNIONSTORE", "u", "1", "z")
    step(r, "ZINTERSTORE", "u", "2", "z", "nokey")
    step(r, "ZRANGESTORE", "r", "z", "0", "-1")
    step(r, "ZREMRANGEBYSCORE", "r", "-inf", "+inf")
    step(r, "ZPOPMAX", "z")
    enable(r, "")
