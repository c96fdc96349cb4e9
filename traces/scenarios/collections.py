"""Lists by position and value, sets over several keys, SORT and BITFIELD: LINSERT, LINDEX, LSET, LTRIM, LPOS, LREM,
RPOPLPUSH, LMPOP; SINTER, SUNION, SDIFF and their STORE forms, SMOVE, SMISMEMBER, SSCAN; SPOP, HRANDFIELD, BRPOPLPUSH
and BLMPOP."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import block
from xspec.traces.scenarios.registry import topic

scenario = topic("collections")


@scenario("LINSERT, LINDEX, LSET, LPOS with RANK and COUNT, LREM from both ends, LTRIM, RPOPLPUSH, LPUSHX",
          tags=["lists"])
def list_positions(r: Recorder) -> None:
    r.call(1, "RPUSH", "l", "a", "b", "c", "b", "a")
    r.call(1, "LINSERT", "l", "BEFORE", "c", "x")  # LIST-10
    r.call(1, "LINDEX", "l", "-1")  # LIST-11
    r.call(1, "LSET", "l", "0", "first")
    r.call(1, "LSET", "l", "99", "v")
    r.call(1, "LPOS", "l", "b", "RANK", "-1", "COUNT", "0")  # LIST-13
    r.call(1, "LREM", "l", "-1", "b")  # LIST-14
    r.call(1, "LTRIM", "l", "1", "-2")  # LIST-12
    r.call(1, "LRANGE", "l", "0", "-1")
    r.call(1, "RPOPLPUSH", "l", "m")  # LIST-15
    r.call(1, "LPUSHX", "nokey", "v")  # LIST-9
    r.call(1, "EXISTS", "nokey")


@scenario("SINTER, SUNION and SDIFF of intsets and sets of strings; their STORE forms; SMOVE; SMISMEMBER; SSCAN",
          tags=["sets"])
def set_operations(r: Recorder) -> None:
    r.call(1, "SADD", "i1", "1", "2", "3")
    r.call(1, "SADD", "i2", "2", "3", "4")
    r.call(1, "SADD", "s", "a", "2")
    r.call(1, "SINTER", "i1", "i2")  # SETS-6
    r.call(1, "SUNION", "i1", "i2")  # SETS-8
    r.call(1, "SDIFF", "i1", "i2")
    r.call(1, "SINTERSTORE", "d", "i1", "nokey")
    r.call(1, "SUNIONSTORE", "d", "i1", "i2")
    r.call(1, "SMEMBERS", "d")
    r.call(1, "SMOVE", "i1", "s", "1")  # SETS-9
    r.call(1, "SMISMEMBER", "s", "1", "a", "zz")
    r.call(1, "SSCAN", "i2", "0")  # SETS-10


@scenario("SORT of a list numerically and with ALPHA, BY a string and a hash field, GET, LIMIT, DESC, STORE",
          tags=["lists", "sort"])
def sort(r: Recorder) -> None:
    r.call(1, "RPUSH", "l", "3", "1", "10", "2")
    r.call(1, "RPUSH", "names", "bob", "alice", "carol")
    r.call(1, "SET", "w_bob", "2")
    r.call(1, "SET", "w_alice", "1")
    r.call(1, "SET", "w_carol", "3")
    r.call(1, "HSET", "h_bob", "age", "30")
    r.call(1, "SORT", "l")  # SORT-3
    r.call(1, "SORT", "l", "DESC", "LIMIT", "1", "2")  # SORT-4
    r.call(1, "SORT", "names", "ALPHA")
    r.call(1, "SORT", "names", "BY", "w_*", "GET", "#", "GET", "h_*->age")  # SORT-5
    r.call(1, "SORT", "names", "BY", "nosort", "STORE", "dst")  # SORT-6
    r.call(1, "LRANGE", "dst", "0", "-1")
    r.call(1, "SORT", "names")


@scenario("BITFIELD: SET, GET and INCRBY of signed and unsigned fields, OVERFLOW WRAP, SAT and FAIL; BITFIELD_RO",
          tags=["strings", "bitfield"])
def bitfield(r: Recorder) -> None:
    r.call(1, "BITFIELD", "b", "SET", "u8", "0", "200", "GET", "i8", "0", "INCRBY", "u8", "0", "100")  # BITFIELD-4
    r.call(1, "BITFIELD", "b", "OVERFLOW", "SAT", "INCRBY", "i8", "#1", "-200", "OVERFLOW", "FAIL",
           "INCRBY", "u4", "0", "100")
    r.call(1, "GET", "b")  # BITFIELD-5
    r.call(1, "BITFIELD_RO", "b", "GET", "u16", "0")  # BITFIELD-7
    r.call(1, "BITFIELD_RO", "b", "SET", "u8", "0", "1")
    r.call(1, "BITFIELD", "b", "GET", "u64", "0")  # BITFIELD-2


@scenario("SPOP one member and with a count (drawing the members to pop, and the members to keep), the whole set, "
          "errors; the sets left behind", tags=["sets", "random"])
def spop(r: Recorder) -> None:
    r.call(1, "SADD", "i", *map(str, range(1, 11)))
    r.call(1, "SPOP", "i")  # SETS-12
    r.call(1, "SPOP", "i", "2")  # SETS-13: the members to pop are drawn
    r.call(1, "SMEMBERS", "i")
    r.call(1, "SPOP", "i", "6")  # SETS-13: the member to keep is drawn
    r.call(1, "SMEMBERS", "i")
    r.call(1, "SADD", "h", "1", "2", "3", "4", "5", "6", "7", "x" * 70)
    r.call(1, "SPOP", "h", "7")  # SETS-13: a hash table left with integers is an intset again
    r.call(1, "SADD", "h", "0", "99")
    r.call(1, "SMEMBERS", "h")
    r.call(1, "SADD", "s", "a", "b", "c")
    r.call(1, "SPOP", "s", "5")  # SETS-13: the whole set, the key deleted
    r.call(1, "EXISTS", "s")
    r.call(1, "SPOP", "nokey", "0")
    r.call(1, "SPOP", "h", "-1")
    r.call(1, "SPOP", "h", "1", "2")


@scenario("HRANDFIELD without a count, with positive and negative counts, WITHVALUES in RESP2 and RESP3",
          tags=["hashes", "random"])
def hrandfield(r: Recorder) -> None:
    r.call(1, "HSET", "h", "f1", "v1", "f2", "v2", "f3", "v3")
    r.call(1, "HRANDFIELD", "h")  # HASH-13
    r.call(1, "HRANDFIELD", "h", "2")
    r.call(1, "HRANDFIELD", "h", "-5", "WITHVALUES")
    r.call(2, "HELLO", "3")
    r.call(2, "HRANDFIELD", "h", "9", "WITHVALUES")
    r.call(2, "HRANDFIELD", "nokey", "2")
    r.call(1, "HRANDFIELD", "h", "1", "junk")


@scenario("BRPOPLPUSH and BLMPOP served at once, then blocked beside a BLPOP and served in order from one push; "
          "a timed-out BRPOPLPUSH", tags=["lists", "blocking"])
def blocking_moves(r: Recorder) -> None:
    r.call(1, "RPUSH", "l", "a", "b", "c")
    r.call(1, "BRPOPLPUSH", "l", "d", "0")  # BLIST-11
    r.call(1, "BLMPOP", "0", "2", "nokey", "l", "LEFT", "COUNT", "5")  # BLIST-12 (6.2: unknown command)
    block(r, 2, "BRPOPLPUSH", "q", "d", "0")
    block(r, 3, "BLPOP", "q", "0")
    if not r.header.server_version.startswith("6."):
        block(r, 4, "BLMPOP", "0", "1", "q", "RIGHT", "COUNT", "2")
    r.call(1, "RPUSH", "q", "1", "2", "3", "4")  # BLIST-3
    r.recv(2)
    r.recv(3)
    if not r.header.server_version.startswith("6."):
        r.recv(4)
    r.call(1, "LRANGE", "d", "0", "-1")
    block(r, 2, "BRPOPLPUSH", "none", "d", "0.05")  # BLIST-8
    r.recv(2)
