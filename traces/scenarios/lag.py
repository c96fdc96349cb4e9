"""entries-read and lag (reference §5), including the 7.0 tombstone bug."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add
from xspec.traces.scenarios.registry import topic

scenario = topic("lag")


@scenario("The 7.0 lag sequence: read 1, XDEL 2, read 1, read all, XADD 6", edge=(64,))
def tombstone_bug(r: Recorder) -> None:
    add(r, "s", range(1, 6))
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XDEL", "s", "2-0")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XADD", "s", "6-0", "f", "v")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XINFO", "STREAM", "s", "FULL")


@scenario("Lag of new groups: at $, at 0, past the end, on an empty MKSTREAM stream")
def new_groups(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    r.call(1, "XINFO", "GROUPS", "e")
    add(r, "s", range(1, 6))
    r.call(1, "XGROUP", "CREATE", "s", "dollar", "$")
    r.call(1, "XGROUP", "CREATE", "s", "zero", "0")
    r.call(1, "XGROUP", "CREATE", "s", "mid", "3-0")
    r.call(1, "XGROUP", "CREATE", "s", "future", "9-0")
    r.call(1, "XGROUP", "CREATE", "s", "last", "5-0")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XGROUP", "SETID", "s", "zero", "+")
    r.call(1, "XGROUP", "SETID", "s", "dollar", "0", "ENTRIESREAD", "0")
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("Lag after trimming: a group at 0-0 after XDEL then XTRIM sees lag = length")
def after_trim(r: Recorder) -> None:
    add(r, "s", range(1, 6))
    r.call(1, "XDEL", "s", "1-0")
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XTRIM", "s", "MAXLEN", "2")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XTRIM", "s", "MAXLEN", "0")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XADD", "s", "9-0", "f", "v")
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("entries-read counts NOACK deliveries and XSETID ENTRIESADDED shifts the lag", tags=["noack"])
def noack_and_entries_added(r: Recorder) -> None:
    add(r, "s", range(1, 5))
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "NOACK", "COUNT", "2", "STREAMS", "s", ">")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XSETID", "s", "4-0", "ENTRIESADDED", "10")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XGROUP", "SETID", "s", "g", "2-0")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XGROUP", "SETID", "s", "g", "$")
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("Deleting the first entry keeps lag computable; deleting in the middle makes it nil until caught up")
def tombstones_first_and_middle(r: Recorder) -> None:
    add(r, "s", range(1, 7))
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XGROUP", "CREATE", "s", "h", "0")
    r.call(1, "XDEL", "s", "1-0")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    r.call(1, "XDEL", "s", "4-0")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XREADGROUP", "GROUP", "h", "c", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XINFO", "STREAM", "s")
