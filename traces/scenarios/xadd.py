"""XADD: ID parsing and generation, options, trimming on insert, errors."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import MAX_ID, U64_MAX, add, resp3, sleep_ms
from xspec.traces.scenarios.registry import topic

scenario = topic("xadd")


@scenario("XADD accepts leading blanks, a plus sign and leading zeros in IDs", edge=(1,), tags=["ids"])
def lenient_ids(r: Recorder) -> None:
    r.call(1, "XADD", "s", " 1-1", "f", "v")
    r.call(1, "XADD", "s", "+2-1", "f", "v")
    r.call(1, "XADD", "s", "03-04", "f", "v")
    r.call(1, "XRANGE", "s", "-", "+")


@scenario("A huge negative sequence wraps around through strtoull; a small one is invalid", edge=(2,), tags=["ids"])
def negative_sequence(r: Recorder) -> None:
    r.call(1, "XADD", "s", "4--18446744073709551615", "f", "v")
    r.call(1, "XADD", "s", "1--5", "f", "v")
    r.call(1, "XADD", "s", "5--5", "f", "v")
    r.call(1, "XRANGE", "s", "-", "+")


@scenario("Malformed and over-long IDs are rejected", edge=(3,), tags=["ids", "errors"])
def invalid_ids(r: Recorder) -> None:
    for bad in ("6-1 ", "1.5", "6-", "-6", "*-1", "6-**", "", "-", "+", "abc", "1-2-3",
                "18446744073709551616-0", "1-18446744073709551616", "1-" + "0" * 126):
        r.call(1, "XADD", "s", bad, "f", "v")
    r.call(1, "XADD", "s", "1-" + "0" * 124 + "7", "f", "v")
    r.call(1, "EXISTS", "s")
    r.call(1, "XRANGE", "s", "-", "+")


@scenario("ID 0-0 is refused before the key lookup (wins over WRONGTYPE and NOMKSTREAM)", edge=(4,), tags=["errors"])
def zero_id(r: Recorder) -> None:
    r.call(1, "XADD", "s", "0", "f", "v")
    r.call(1, "XADD", "s", "0-0", "f", "v")
    r.call(1, "SET", "str", "x")
    r.call(1, "XADD", "str", "0-0", "f", "v")
    r.call(1, "XADD", "str", "1-0", "f", "v")
    r.call(1, "XADD", "nokey", "NOMKSTREAM", "0", "f", "v")
    r.call(1, "XADD", "nokey", "NOMKSTREAM", "1-0", "f", "v")
    r.call(1, "EXISTS", "s", "nokey")


@scenario("0-* on a new stream gives 0-1, then 0-2", edge=(5,), tags=["ids"])
def auto_sequence_from_zero(r: Recorder) -> None:
    r.call(1, "XADD", "new", "0-*", "f", "v")
    r.call(1, "XADD", "new", "0-*", "f", "v")
    r.call(1, "XADD", "new", "7-*", "f", "v")
    r.call(1, "XADD", "new", "7-*", "f", "v")
    r.call(1, "XRANGE", "new", "-", "+")


@scenario("N-* below the top ms, and explicit IDs not above last_id, are refused", edge=(6,), tags=["ids", "errors"])
def not_above_top(r: Recorder) -> None:
    add(r, "s", ["5-3"])
    r.call(1, "XADD", "s", "3-*", "f", "v")
    r.call(1, "XADD", "s", "5-*", "f", "v")
    r.call(1, "XADD", "s", "5-4", "f", "v")
    r.call(1, "XADD", "s", "5-2", "f", "v")
    r.call(1, "XADD", "s", "5", "f", "v")
    r.call(1, "XADD", "s", "6", "f", "v")
    r.call(1, "XDEL", "s", "6-0")
    r.call(1, "XADD", "s", "6-0", "f", "v")
    r.call(1, "XRANGE", "s", "-", "+")


@scenario("N-* when the sequence of N is exhausted: 7.0 replies the stale-errno error", edge=(7,), tags=["ids", "errors"])
def auto_sequence_overflow(r: Recorder) -> None:
    r.call(1, "XADD", "s", f"5-{U64_MAX}", "f", "v")
    r.call(1, "XADD", "s", "5-*", "f", "v")
    r.call(1, "XADD", "s", "*", "f", "v")
    r.call(1, "XRANGE", "s", "-", "+")


@scenario("The maximum ID is accepted once; then every XADD form reports exhaustion", edge=(8,), tags=["ids", "errors"])
def exhausted(r: Recorder) -> None:
    r.call(1, "XADD", "s", MAX_ID, "f", "v")
    r.call(1, "XADD", "s", "*", "f", "v")
    r.call(1, "XADD", "s", f"{U64_MAX}-*", "f", "v")
    r.call(1, "XADD", "s", "5-*", "f", "v")
    r.call(1, "XADD", "s", "MAXLEN", "0", "*", "f", "v")
    r.call(1, "XADD", "s", "NOMKSTREAM", "*", "f", "v")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.call(1, "XLEN", "s")
    r.call(1, "XINFO", "STREAM", "s")


@scenario("XADD MAXLEN = 0 on a missing key creates an empty stream that remembers the entry", edge=(9,), tags=["trim"])
def maxlen_zero_new_key(r: Recorder) -> None:
    r.call(1, "XADD", "s", "MAXLEN", "=", "0", "1-0", "f", "v")
    r.call(1, "EXISTS", "s")
    r.call(1, "XLEN", "s")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XADD", "s", "MAXLEN", "0", "*", "f", "v")
    r.call(1, "XLEN", "s")


@scenario("XADD MINID ~ above the new ID trims the new entry itself", edge=(10,), tags=["trim"])
def minid_trims_new_entry(r: Recorder) -> None:
    r.call(1, "XADD", "s", "MINID", "~", "1000", "12-0", "f", "v")
    r.call(1, "XLEN", "s")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XADD", "s", "MINID", "1000", "13-0", "f", "v")
    r.call(1, "XLEN", "s")
    r.call(1, "XADD", "s", "MINID", "=", "14", "14-0", "f", "v")
    r.call(1, "XRANGE", "s", "-", "+")


@scenario("LIMIT needs ~ and a strategy", edge=(11,), tags=["trim", "errors"])
def limit_errors(r: Recorder) -> None:
    r.call(1, "XADD", "s", "LIMIT", "0", "*", "f", "v")
    r.call(1, "XADD", "s", "LIMIT", "10", "*", "f", "v")
    r.call(1, "XADD", "s", "MAXLEN", "5", "LIMIT", "10", "*", "f", "v")
    r.call(1, "XADD", "s", "MAXLEN", "=", "5", "LIMIT", "10", "*", "f", "v")
    r.call(1, "XADD", "s", "MAXLEN", "~", "5", "LIMIT", "-1", "1-0", "f", "v")
    r.call(1, "XADD", "s", "MAXLEN", "~", "5", "LIMIT", "x", "1-0", "f", "v")
    r.call(1, "XADD", "s", "MAXLEN", "~", "5", "LIMIT", "10", "1-0", "f", "v")
    r.call(1, "XADD", "s", "LIMIT", "10", "MAXLEN", "~", "5", "2-0", "f", "v")
    r.call(1, "EXISTS", "nokey")
    r.call(1, "XLEN", "s")


@scenario("A second MAXLEN, or MAXLEN with MINID, is refused", edge=(12,), tags=["trim", "errors"])
def duplicate_strategy(r: Recorder) -> None:
    r.call(1, "XADD", "s", "MAXLEN", "1", "MAXLEN", "2", "*", "f", "v")
    r.call(1, "XADD", "s", "MAXLEN", "1", "MINID", "2", "*", "f", "v")
    r.call(1, "XADD", "s", "MINID", "1", "MINID", "2", "*", "f", "v")
    r.call(1, "EXISTS", "s")


@scenario("Option parsing stops at the ID: options after * or an ID are fields", edge=(13,), tags=["options"])
def star_ends_options(r: Recorder) -> None:
    r.call(1, "XADD", "s", "1-0", "MAXLEN", "1")
    r.call(1, "XADD", "s", "2-0", "NOMKSTREAM", "x")
    r.call(1, "XADD", "t", "*", "MAXLEN", "1")
    r.call(1, "XADD", "t", "*", "MAXLEN", "1")
    r.call(1, "XLEN", "t")
    r.call(1, "XADD", "s", "NOMKSTREAM", "NOMKSTREAM", "3-0", "f", "v")
    r.call(1, "XADD", "s", "nomkstream", "maxlen", "5", "4-0", "f", "v")
    r.call(1, "XRANGE", "s", "-", "+")


@scenario("Duplicate field names are kept in order", edge=(14,))
def duplicate_fields(r: Recorder) -> None:
    r.call(1, "XADD", "s", "2-0", "b", "2", "b", "3")
    r.call(1, "XADD", "s", "3-0", "a", "", "", "b", "a", "c")
    r.call(1, "XRANGE", "s", "-", "+")
    r.call(1, "XREVRANGE", "s", "+", "-")


@scenario("NOMKSTREAM on a missing key replies null (RESP2 and RESP3) and creates nothing", edge=(15,), tags=["resp3"])
def nomkstream(r: Recorder) -> None:
    r.call(1, "XADD", "nokey", "NOMKSTREAM", "*", "f", "v")
    resp3(r, 2)
    r.call(2, "XADD", "nokey", "NOMKSTREAM", "1-0", "f", "v")
    r.call(1, "EXISTS", "nokey")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.call(1, "XADD", "s", "NOMKSTREAM", "2-0", "f", "v")
    r.call(2, "XADD", "s", "NOMKSTREAM", "MAXLEN", "1", "3-0", "f", "v")
    r.call(1, "XRANGE", "s", "-", "+")


@scenario("XADD argument errors: odd field count, bad MAXLEN, bad MINID, wrong type", tags=["errors"])
def argument_errors(r: Recorder) -> None:
    r.call(1, "XADD", "s", "*")
    r.call(1, "XADD", "s", "*", "f")
    r.call(1, "XADD", "s", "*", "f", "v", "g")
    r.call(1, "XADD", "s", "MAXLEN", "*", "f", "v")
    r.call(1, "XADD", "s", "MAXLEN", "-1", "*", "f", "v")
    r.call(1, "XADD", "s", "MAXLEN", "1.5", "*", "f", "v")
    r.call(1, "XADD", "s", "MAXLEN", "~", "abc", "*", "f", "v")
    r.call(1, "XADD", "s", "MINID", "-", "*", "f", "v")
    r.call(1, "XADD", "s", "MINID", "bad", "*", "f", "v")
    r.call(1, "XADD", "s", "MAXLEN", "~", "*", "f", "v")
    r.call(1, "XADD", "s", "bogus", "f", "v")
    r.call(1, "SET", "str", "x")
    r.call(1, "XADD", "str", "*", "f", "v")
    r.call(1, "XADD", "str", "NOMKSTREAM", "*", "f", "v")
    r.call(1, "XADD", "str", "*", "f")
    r.call(1, "XLEN", "s")


@scenario("Exact MAXLEN and MINID trimming on insert", tags=["trim"])
def trim_on_insert(r: Recorder) -> None:
    for i in range(1, 6):
        r.call(1, "XADD", "s", "MAXLEN", "3", f"{i}-0", "f", str(i))
    r.call(1, "XRANGE", "s", "-", "+")
    r.call(1, "XADD", "s", "MINID", "5", "6-0", "f", "6")
    r.call(1, "XRANGE", "s", "-", "+")
    r.call(1, "XADD", "s", "MAXLEN", "=", "1", "7-0", "f", "7")
    r.call(1, "XINFO", "STREAM", "s")


@scenario("Approximate MAXLEN on insert removes whole nodes only", config={"stream-node-max-entries": "3"}, tags=["trim", "nodes"])
def approx_trim_on_insert(r: Recorder) -> None:
    add(r, "s", range(1, 10))
    r.call(1, "XADD", "s", "MAXLEN", "~", "5", "10-0", "f", "10")
    r.call(1, "XLEN", "s")
    r.call(1, "XADD", "s", "MAXLEN", "~", "2", "LIMIT", "3", "11-0", "f", "11")
    r.call(1, "XLEN", "s")
    r.call(1, "XADD", "s", "MINID", "~", "10", "LIMIT", "0", "12-0", "f", "12")
    r.call(1, "XRANGE", "s", "-", "+")
    r.call(1, "XINFO", "STREAM", "s")


@scenario("* IDs from the clock, and * after a future explicit ID increments the sequence", tags=["ids", "time"])
def star_ids(r: Recorder) -> None:
    r.call(1, "XADD", "s", "*", "n", "1")
    sleep_ms(3)
    r.call(1, "XADD", "s", "*", "n", "2")
    r.call(1, "XADD", "s", "*", "n", "3")
    sleep_ms(2)
    r.call(1, "XADD", "s", "*", "n", "4")
    r.call(1, "XLEN", "s")
    r.call(1, "XADD", "future", "99999999999999-5", "n", "1")
    r.call(1, "XADD", "future", "*", "n", "2")
    r.call(1, "XADD", "future", "99999999999999-*", "n", "3")
    r.call(1, "XADD", "future", f"99999999999999-{U64_MAX}", "n", "4")
    r.call(1, "XADD", "future", "*", "n", "5")
    r.call(1, "XRANGE", "future", "-", "+")


@scenario("Binary and empty field names and values round-trip", tags=["binary"])
def binary_values(r: Recorder) -> None:
    r.call(1, "XADD", "s", "1-0", b"\x00\xff", b"\xc3\x28", "", "")
    r.call(1, "XADD", b"k\xfe", "1-0", "f", "v")
    r.call(1, "XRANGE", "s", "-", "+")
    r.call(1, "XRANGE", b"k\xfe", "-", "+")
    r.call(1, "XLEN", b"k\xfe")


@scenario("Many fields and numeric values in one entry", tags=["fields"])
def many_fields(r: Recorder) -> None:
    args: list[str] = []
    for i in range(40):
        args += [f"field{i}", str(i * 1000003)]
    r.call(1, "XADD", "s", "1-0", *args)
    r.call(1, "XADD", "s", "2-0", "n", "-12", "n", "3.5", "n", "9223372036854775807", "n", "1e5")
    r.call(1, "XRANGE", "s", "-", "+")
