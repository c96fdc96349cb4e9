"""XTRIM: strategies, approximate trimming on node boundaries, LIMIT, and groups left behind."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add
from xspec.traces.scenarios.registry import topic

scenario = topic("trim")


@scenario("XTRIM errors: no strategy, parse before lookup, missing key replies 0", edge=(42,), tags=["errors"])
def errors(r: Recorder) -> None:
    r.call(1, "XTRIM", "s", "LIMIT", "0")
    r.call(1, "XTRIM", "nokey", "MAXLEN", "bad")
    r.call(1, "XTRIM", "nokey", "MAXLEN", "1")
    r.call(1, "XTRIM", "nokey", "MINID", "bad")
    r.call(1, "XTRIM", "nokey", "MAXLEN", "-1")
    r.call(1, "XTRIM", "nokey", "MAXLEN", "1", "LIMIT", "5")
    r.call(1, "XTRIM", "nokey", "MAXLEN", "1", "junk")
    r.call(1, "XTRIM", "nokey", "MAXLEN", "1", "MINID", "1")
    r.call(1, "XTRIM", "nokey", "MAXLEN")
    r.call(1, "XTRIM", "nokey", "MAXLEN", "~")
    r.call(1, "SET", "str", "x")
    r.call(1, "XTRIM", "str", "MAXLEN", "1")
    r.call(1, "XTRIM", "str", "MAXLEN", "x")
    r.call(1, "EXISTS", "nokey")


@scenario("Exact MAXLEN and MINID trimming; trimming keeps max-deleted-entry-id", tags=["xinfo"])
def exact(r: Recorder) -> None:
    add(r, "s", range(1, 11))
    r.call(1, "XDEL", "s", "9-0")
    r.call(1, "XTRIM", "s", "MAXLEN", "7")
    r.call(1, "XTRIM", "s", "MAXLEN", "=", "7")
    r.call(1, "XTRIM", "s", "MINID", "5")
    r.call(1, "XTRIM", "s", "MINID", "=", "5-1")
    r.call(1, "XRANGE", "s", "-", "+")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XTRIM", "s", "MAXLEN", "0")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "EXISTS", "s")


@scenario("Approximate trimming with 4-entry nodes: whole nodes only, LIMIT caps the deleted count",
          config={"stream-node-max-entries": "4"}, edge=(43,), tags=["nodes"])
def approx_nodes(r: Recorder) -> None:
    add(r, "s", range(1, 21))
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XADD", "s", "MAXLEN", "~", "5", "LIMIT", "4", "21-0", "f", "21")
    r.call(1, "XLEN", "s")
    r.call(1, "XADD", "s", "MAXLEN", "~", "5", "22-0", "f", "22")
    r.call(1, "XLEN", "s")
    r.call(1, "XRANGE", "s", "-", "+", "COUNT", "2")
    r.call(1, "XINFO", "STREAM", "s")
    add(r, "t", range(1, 21))
    r.call(1, "XTRIM", "t", "MAXLEN", "~", "5")
    r.call(1, "XTRIM", "t", "MAXLEN", "~", "5")
    r.call(1, "XLEN", "t")
    add(r, "u", range(1, 21))
    r.call(1, "XADD", "u", "MAXLEN", "~", "5", "21-0", "f", "21")
    r.call(1, "XLEN", "u")


@scenario("Approximate MINID and LIMIT on XTRIM", config={"stream-node-max-entries": "4"}, tags=["nodes"])
def approx_minid_limit(r: Recorder) -> None:
    add(r, "s", range(1, 21))
    r.call(1, "XTRIM", "s", "MINID", "~", "7")
    r.call(1, "XTRIM", "s", "MINID", "~", "13", "LIMIT", "2")
    r.call(1, "XTRIM", "s", "MINID", "~", "13", "LIMIT", "4")
    r.call(1, "XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "0")
    r.call(1, "XLEN", "s")
    r.call(1, "XINFO", "STREAM", "s")
    add(r, "t", range(1, 11))
    r.call(1, "XDEL", "t", "1-0", "2-0")
    r.call(1, "XTRIM", "t", "MAXLEN", "~", "5")
    r.call(1, "XTRIM", "t", "MAXLEN", "=", "5", "LIMIT", "0")
    r.call(1, "XRANGE", "t", "-", "+")


@scenario("Approximate trimming with the default 100-entry nodes trims nothing small", tags=["nodes"])
def approx_default_nodes(r: Recorder) -> None:
    add(r, "s", range(1, 31))
    r.call(1, "XTRIM", "s", "MAXLEN", "~", "10")
    r.call(1, "XADD", "s", "MAXLEN", "~", "10", "31-0", "f", "v")
    r.call(1, "XLEN", "s")
    r.call(1, "XTRIM", "s", "MINID", "~", "100")
    r.call(1, "XLEN", "s")


@scenario("Exact trimming leaves PEL entries of trimmed IDs; XCLAIM and XAUTOCLAIM then drop them", edge=(44,), tags=["groups"])
def trim_with_groups(r: Recorder) -> None:
    add(r, "s", range(1, 6))
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    r.call(1, "XTRIM", "s", "MAXLEN", "2")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "1-0", "4-0")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XAUTOCLAIM", "s", "g", "carol", "0", "0-0")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XINFO", "GROUPS", "s")
