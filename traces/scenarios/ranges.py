"""XLEN, XRANGE, XREVRANGE and XDEL."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import MAX_ID, add
from xspec.traces.scenarios.registry import topic

scenario = topic("ranges")


@scenario("XRANGE and XREVRANGE over full, partial and incomplete-ID ranges")
def basic_ranges(r: Recorder) -> None:
    add(r, "s", ["1-0", "1-1", "2-0", "2-5", "3-0", "5-9"])
    r.call(1, "XRANGE", "s", "-", "+")
    r.call(1, "XRANGE", "s", "2", "2")
    r.call(1, "XRANGE", "s", "1-1", "3")
    r.call(1, "XRANGE", "s", "2-1", "+")
    r.call(1, "XRANGE", "s", "4", "+")
    r.call(1, "XRANGE", "s", "3", "2")
    r.call(1, "XREVRANGE", "s", "+", "-")
    r.call(1, "XREVRANGE", "s", "2", "1")
    r.call(1, "XREVRANGE", "s", "-", "+")
    r.call(1, "XREVRANGE", "s", "+", "-", "COUNT", "2")
    r.call(1, "XRANGE", "s", "0", MAX_ID)


@scenario("COUNT 0 or negative on an existing key is a null array; on a missing key an empty array", edge=(16,))
def count_zero(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XRANGE", "s", "-", "+", "COUNT", "0")
    r.call(1, "XRANGE", "s", "-", "+", "COUNT", "-3")
    r.call(1, "XREVRANGE", "s", "+", "-", "COUNT", "0")
    r.call(1, "XRANGE", "nokey", "-", "+", "COUNT", "0")
    r.call(1, "XRANGE", "nokey", "-", "+")
    r.call(1, "XRANGE", "s", "-", "+", "COUNT", "1")
    r.call(1, "XRANGE", "s", "3", "+", "COUNT", "0")


@scenario("Exclusive ranges: invalid forms and interval errors", edge=(17,), tags=["errors"])
def exclusive_errors(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XRANGE", "s", "(", "+")
    r.call(1, "XRANGE", "s", "(-", "+")
    r.call(1, "XRANGE", "s", "-", "(+")
    r.call(1, "XRANGE", "s", f"({MAX_ID}", "+")
    r.call(1, "XRANGE", "s", "-", "(0-0")
    r.call(1, "XRANGE", "s", "-", "(0")
    r.call(1, "XREVRANGE", "s", "(0-0", "-")
    r.call(1, "XREVRANGE", "s", "+", f"({MAX_ID}")
    r.call(1, "XRANGE", "s", "(1-0", "(3-0")
    r.call(1, "XREVRANGE", "s", "(3-0", "(1-0")


@scenario("An incomplete exclusive end (3 still includes 3-0", edge=(18,))
def exclusive_incomplete_end(r: Recorder) -> None:
    add(r, "s", ["1-0", "3-0", "3-1", "4-0"])
    r.call(1, "XRANGE", "s", "(0-0", "(3")
    r.call(1, "XRANGE", "s", "(1", "+")
    r.call(1, "XRANGE", "s", "(1-0", "3")
    r.call(1, "XREVRANGE", "s", "(4", "(1")


@scenario("COUNT repeats (last wins); a COUNT without value is a syntax error; IDs are parsed before the type check", edge=(19,), tags=["errors"])
def count_options(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XRANGE", "s", "-", "+", "COUNT", "1", "COUNT", "2")
    r.call(1, "XRANGE", "s", "-", "+", "COUNT")
    r.call(1, "XRANGE", "s", "-", "+", "COUNT", "x")
    r.call(1, "XRANGE", "s", "-", "+", "LIMIT", "1")
    r.call(1, "XRANGE", "s", "-", "+", "count", "1")
    r.call(1, "SET", "str", "x")
    r.call(1, "XRANGE", "str", "bad", "+")
    r.call(1, "XRANGE", "str", "-", "+")
    r.call(1, "XREVRANGE", "str", "+", "bad")
    r.call(1, "XRANGE", "s", "-")
    r.call(1, "XREVRANGE", "s", "+")


@scenario("Paging through a stream with exclusive starts, as the introduction does", tags=["seed"])
def pagination(r: Recorder) -> None:
    add(r, "s", range(1, 11))
    r.call(1, "XRANGE", "s", "-", "+", "COUNT", "3")
    r.call(1, "XRANGE", "s", "(3-0", "+", "COUNT", "3")
    r.call(1, "XRANGE", "s", "(6-0", "+", "COUNT", "3")
    r.call(1, "XRANGE", "s", "(9-0", "+", "COUNT", "3")
    r.call(1, "XRANGE", "s", "(10-0", "+", "COUNT", "3")
    r.call(1, "XREVRANGE", "s", "+", "-", "COUNT", "4")
    r.call(1, "XREVRANGE", "s", "(7-0", "-", "COUNT", "4")


@scenario("XLEN on missing keys, streams and other types", tags=["errors"])
def xlen(r: Recorder) -> None:
    r.call(1, "XLEN", "nokey")
    add(r, "s", [1, 2, 3])
    r.call(1, "XLEN", "s")
    r.call(1, "XDEL", "s", "2-0")
    r.call(1, "XLEN", "s")
    r.call(1, "SET", "str", "x")
    r.call(1, "XLEN", "str")
    r.call(1, "XLEN")
    r.call(1, "XLEN", "a", "b")


@scenario("XDEL: missing key before parsing, duplicates count once, first-entry bookkeeping", edge=(41,))
def xdel(r: Recorder) -> None:
    r.call(1, "XDEL", "nokey", "bad")
    add(r, "s", [1, 2, 3, 4])
    r.call(1, "XDEL", "s", "1-0", "1-0")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XDEL", "s", "4-0")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XDEL", "s", "9-0")
    r.call(1, "XDEL", "s", "2", "3")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "EXISTS", "s")
    r.call(1, "XADD", "s", "4-0", "f", "v")
    r.call(1, "XADD", "s", "5-0", "f", "v")
    r.call(1, "XRANGE", "s", "-", "+")


@scenario("XDEL errors: an invalid ID deletes nothing; wrong type; arity", tags=["errors"])
def xdel_errors(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XDEL", "s", "1-0", "bad")
    r.call(1, "XDEL", "s", "-")
    r.call(1, "XDEL", "s", "+")
    r.call(1, "XLEN", "s")
    r.call(1, "SET", "str", "x")
    r.call(1, "XDEL", "str", "1-0")
    r.call(1, "XDEL", "str", "bad")
    r.call(1, "XDEL", "s")


@scenario("Deleting inside nodes and whole nodes, then ranging across the gaps", config={"stream-node-max-entries": "2"}, tags=["nodes"])
def xdel_across_nodes(r: Recorder) -> None:
    add(r, "s", range(1, 9))
    r.call(1, "XDEL", "s", "3-0", "4-0")
    r.call(1, "XDEL", "s", "6-0")
    r.call(1, "XRANGE", "s", "-", "+")
    r.call(1, "XREVRANGE", "s", "+", "-", "COUNT", "3")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XDEL", "s", "1-0", "2-0", "5-0", "7-0", "8-0")
    r.call(1, "XINFO", "STREAM", "s")
