"""XSETID: parse order, moving last_id, ENTRIESADDED and MAXDELETEDID."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add
from xspec.traces.scenarios.registry import topic

scenario = topic("xsetid")


@scenario("XSETID errors: missing key, ID parsed first, below the top item", edge=(59,), tags=["errors"])
def errors(r: Recorder) -> None:
    r.call(1, "XSETID", "nokey", "1-0")
    r.call(1, "XSETID", "s", "-")
    r.call(1, "XSETID", "nokey", "+")
    r.call(1, "XSETID", "nokey", "bad")
    add(r, "s", [3, 5])
    r.call(1, "XSETID", "s", "1-0")
    r.call(1, "XSETID", "s", "4-0")
    r.call(1, "XSETID", "s", "5-0")
    r.call(1, "XSETID", "s", "5")
    r.call(1, "SET", "str", "x")
    r.call(1, "XSETID", "str", "1-0")
    r.call(1, "XSETID", "s")
    r.call(1, "XINFO", "STREAM", "s")


@scenario("XSETID lowers last_id to the last live entry after XDEL; the deleted ID can be re-added (7.0)", edge=(60,))
def lower_and_reuse(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XDEL", "s", "3-0")
    r.call(1, "XSETID", "s", "2-0")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XADD", "s", "3-0", "f", "again")
    r.call(1, "XRANGE", "s", "-", "+")
    r.call(1, "XADD", "s", "*", "f", "auto")
    r.call(1, "XLEN", "s")


@scenario("ENTRIESADDED below the length is refused; MAXDELETEDID 0-0 keeps, a smaller value lowers", edge=(61,))
def entries_added_and_max_deleted(r: Recorder) -> None:
    add(r, "s", [1, 2, 3, 4])
    r.call(1, "XDEL", "s", "2-0")
    r.call(1, "XSETID", "s", "4-0", "ENTRIESADDED", "2")
    r.call(1, "XSETID", "s", "4-0", "ENTRIESADDED", "3")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XSETID", "s", "4-0", "MAXDELETEDID", "0-0")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XSETID", "s", "4-0", "MAXDELETEDID", "1-5")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XSETID", "s", "10-0", "ENTRIESADDED", "100", "MAXDELETEDID", "9-0")
    r.call(1, "XINFO", "STREAM", "s")


@scenario("XSETID option errors come before the key lookup", tags=["errors"])
def option_errors(r: Recorder) -> None:
    r.call(1, "XSETID", "nokey", "5-0", "ENTRIESADDED", "-1")
    r.call(1, "XSETID", "nokey", "5-0", "ENTRIESADDED", "x")
    r.call(1, "XSETID", "nokey", "5-0", "ENTRIESADDED")
    r.call(1, "XSETID", "nokey", "5-0", "MAXDELETEDID", "6-0")
    r.call(1, "XSETID", "nokey", "5-0", "MAXDELETEDID", "bad")
    r.call(1, "XSETID", "nokey", "5-0", "MAXDELETEDID")
    r.call(1, "XSETID", "nokey", "5-0", "FOO", "1")
    r.call(1, "XSETID", "nokey", "5-0", "MAXDELETEDID", "5-0")
    r.call(1, "XSETID", "nokey", "5-0", "ENTRIESADDED", "0")


@scenario("XSETID on an empty stream may move last_id anywhere, even backwards")
def empty_stream(r: Recorder) -> None:
    add(r, "s", [5, 6])
    r.call(1, "XDEL", "s", "5-0", "6-0")
    r.call(1, "XSETID", "s", "1-0")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.call(1, "XSETID", "s", "100-0", "ENTRIESADDED", "0")
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "XADD", "s", "*", "f", "v")
    r.call(1, "XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    r.call(1, "XSETID", "e", "7-7", "ENTRIESADDED", "3", "MAXDELETEDID", "7-0")
    r.call(1, "XINFO", "STREAM", "e")
    r.call(1, "XINFO", "GROUPS", "e")
