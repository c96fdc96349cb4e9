"""Lists and sets beside streams: pushes, pops, blocking pops, and list or set values where stream readers wait."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import block, resp3
from xspec.traces.scenarios.registry import topic

scenario = topic("lists")


@scenario("LPUSH, RPUSH, LPOP/RPOP with and without a count, LRANGE, LLEN, LMOVE; WRONGTYPE against a stream",
          tags=["lists"])
def push_pop(r: Recorder) -> None:
    r.call(1, "LPUSH", "l", "a", "b", "c")  # LIST-2
    r.call(1, "RPUSH", "l", "d")
    r.call(1, "LRANGE", "l", "0", "-1")  # LIST-6
    r.call(1, "RPOP", "l", "2")  # LIST-3
    r.call(1, "LPOP", "l", "0")
    r.call(1, "LMOVE", "l", "m", "LEFT", "RIGHT")  # LIST-8
    r.call(1, "LLEN", "l")  # LIST-5
    r.call(1, "XADD", "s", "1-1", "f", "v")
    r.call(1, "LPUSH", "s", "x")  # LIST-1
    r.call(1, "XLEN", "l")


@scenario("Blocked BLPOP and BLMOVE served in FIFO order from one push; a timed-out BLMOVE gets a null array",
          tags=["lists", "blocking"])
def blocking_pops(r: Recorder) -> None:
    resp3(r, 3)
    block(r, 2, "BLPOP", "q", "0")  # BLIST-6
    block(r, 3, "BLMOVE", "q", "dst", "RIGHT", "LEFT", "0")
    r.call(1, "RPUSH", "q", "1", "2", "3")  # BLIST-1, BLIST-3
    r.recv(2)
    r.recv(3)
    r.call(1, "LRANGE", "q", "0", "-1")
    block(r, 2, "BLMOVE", "none", "dst", "LEFT", "LEFT", "0.05")  # BLIST-8
    r.recv(2)


@scenario("A list reader and a stream reader on one key: each is woken by its own type only",
          tags=["lists", "blocking", "xread"])
def list_and_stream_readers(r: Recorder) -> None:
    block(r, 2, "BLPOP", "k", "0")
    block(r, 3, "XREAD", "BLOCK", "0", "STREAMS", "k", "$")
    r.call(1, "XADD", "k", "1-1", "f", "v")  # BLIST-9
    r.recv(3)
    r.call(1, "DEL", "k")
    r.call(1, "LPUSH", "k", "e")
    r.recv(2)


@scenario("MULTI { DEL; SADD } on a stream with a blocked XREADGROUP: UNBLOCKED at EXEC",
          tags=["lists", "blocking", "xreadgroup", "sets"])
def readgroup_key_becomes_set(r: Recorder) -> None:
    r.call(1, "XADD", "mystream", "666", "f", "v")
    r.call(1, "XGROUP", "CREATE", "mystream", "mygroup", "$")
    block(r, 2, "XREADGROUP", "GROUP", "mygroup", "Alice", "BLOCK", "0", "STREAMS", "mystream", ">")
    r.call(1, "MULTI")
    r.call(1, "DEL", "mystream")
    r.call(1, "SADD", "mystream", "e1")  # SETS-2
    r.call(1, "EXEC")  # BLIST-9
    r.recv(2)
    r.call(1, "SMEMBERS", "mystream")


@scenario("Sets: SADD, SREM, SCARD, SISMEMBER, SMEMBERS of an intset; FUNCTION FLUSH and LIST", tags=["sets"])
def sets_and_functions(r: Recorder) -> None:
    r.call(1, "SADD", "s", "3", "1", "2", "1")
    r.call(1, "SMEMBERS", "s")  # SETS-4: numeric order
    r.call(1, "SREM", "s", "2", "9")  # SETS-3
    r.call(1, "SCARD", "s")  # SETS-5
    r.call(1, "SISMEMBER", "s", "3")
    r.call(1, "FUNCTION", "FLUSH", "ASYNC")  # FUNCTION-1
    r.call(1, "FUNCTION", "LIST")  # FUNCTION-4
