"""XGROUP CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add
from xspec.traces.scenarios.registry import topic

scenario = topic("xgroup")


@scenario("XGROUP CREATE with $, 0, an ID, MKSTREAM; BUSYGROUP")
def create(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XGROUP", "CREATE", "s", "at-end", "$")
    r.call(1, "XGROUP", "CREATE", "s", "at-start", "0")
    r.call(1, "XGROUP", "CREATE", "s", "in-middle", "2")
    r.call(1, "XGROUP", "CREATE", "s", "future", "99-99")
    r.call(1, "XGROUP", "CREATE", "s", "at-end", "0")
    r.call(1, "XGROUP", "CREATE", "s", "at-end", "0", "MKSTREAM")
    r.call(1, "XGROUP", "CREATE", "new", "g", "$", "MKSTREAM")
    r.call(1, "XGROUP", "CREATE", "new2", "g", "5-5", "MKSTREAM")
    r.call(1, "XGROUP", "create", "s", "lower", "0", "mkstream")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XINFO", "GROUPS", "new")
    r.call(1, "XINFO", "GROUPS", "new2")
    r.call(1, "XINFO", "STREAM", "new2")


@scenario("XGROUP SETID accepts - and + (CREATE does not)", edge=(33,), tags=["lag"])
def setid_special_ids(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    r.call(1, "XGROUP", "SETID", "s", "g", "+")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XGROUP", "SETID", "s", "g", "-")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XGROUP", "SETID", "s", "g", "$")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XGROUP", "SETID", "s", "g", "2", "ENTRIESREAD", "2")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XGROUP", "CREATE", "s", "h", "-")
    r.call(1, "XGROUP", "CREATE", "s", "h", "+")


@scenario("ENTRIESREAD is not validated against the stream: lag goes negative", edge=(34,), tags=["lag"])
def entriesread_negative_lag(r: Recorder) -> None:
    add(r, "s", [1, 2, 3])
    r.call(1, "XGROUP", "CREATE", "s", "g", "99-99", "ENTRIESREAD", "1000")
    r.call(1, "XGROUP", "CREATE", "s", "h", "0", "ENTRIESREAD", "-1")
    r.call(1, "XGROUP", "CREATE", "s", "i", "0", "ENTRIESREAD", "-2")
    r.call(1, "XGROUP", "CREATE", "s", "j", "0", "ENTRIESREAD", "x")
    r.call(1, "XGROUP", "CREATE", "s", "k", "2", "ENTRIESREAD", "1")
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("CREATE errors: invalid ID before MKSTREAM creates anything; missing key needs MKSTREAM", edge=(35,), tags=["errors"])
def create_errors(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "nokey", "g", "bad", "MKSTREAM")
    r.call(1, "EXISTS", "nokey")
    r.call(1, "XGROUP", "CREATE", "nokey", "g", "$")
    r.call(1, "XGROUP", "CREATE", "nokey", "g", "0")
    r.call(1, "SET", "str", "x")
    r.call(1, "XGROUP", "CREATE", "str", "g", "$")
    r.call(1, "XGROUP", "CREATE", "str", "g", "$", "MKSTREAM")
    r.call(1, "XGROUP", "CREATE", "nokey", "g", ">", "MKSTREAM")
    r.call(1, "XGROUP", "CREATE", "nokey", "g", "*", "MKSTREAM")
    r.call(1, "EXISTS", "nokey")


@scenario("CREATE trailing-option and arity errors echo the subcommand as typed", edge=(36,), tags=["errors"])
def create_syntax_errors(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0", "FOO")
    r.call(1, "XGROUP", "create", "s", "g", "0", "FOO")
    r.call(1, "XGROUP", "CREATE", "s", "g", "0", "MKSTREAM", "ENTRIESREAD", "1", "X")
    r.call(1, "XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD")
    r.call(1, "XGROUP", "CREATE", "s", "g")
    r.call(1, "XGROUP", "DESTROY", "s", "g", "x")
    r.call(1, "XGROUP", "DESTROY", "s")
    r.call(1, "XGROUP", "CREATECONSUMER", "s", "g")
    r.call(1, "XGROUP", "DELCONSUMER", "s", "g", "c", "x")
    r.call(1, "XGROUP", "SETID", "s", "g")
    r.call(1, "XGROUP", "FOO", "s", "g")
    r.call(1, "XGROUP", "foo")
    r.call(1, "XGROUP")
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("SETID errors: no MKSTREAM, key must exist, group must exist", edge=(37,), tags=["errors"])
def setid_errors(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XGROUP", "SETID", "s", "g", "0", "MKSTREAM")
    r.call(1, "XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD")
    r.call(1, "XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "-5")
    r.call(1, "XGROUP", "SETID", "nokey", "g", "0")
    r.call(1, "XGROUP", "DESTROY", "nokey", "g")
    r.call(1, "XGROUP", "SETID", "s", "nogroup", "0")
    r.call(1, "XGROUP", "SETID", "s", "g", "bad")
    r.call(1, "XGROUP", "SETID", "s", "g", "5", "ENTRIESREAD", "1")
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("Empty group and consumer names are valid", edge=(38,))
def empty_names(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XGROUP", "CREATE", "s", "", "0")
    r.call(1, "XREADGROUP", "GROUP", "", "", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "XGROUP", "CREATECONSUMER", "s", "", "c")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XPENDING", "s", "")
    r.call(1, "XPENDING", "s", "", "-", "+", "10", "")
    r.call(1, "XGROUP", "DELCONSUMER", "s", "", "")
    r.call(1, "XGROUP", "DESTROY", "s", "")


@scenario("DELCONSUMER returns the consumer's pending count and drops those entries from the group PEL", edge=(39,))
def delconsumer_pending(r: Recorder) -> None:
    add(r, "s", [1, 2, 3, 4])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "s", ">")
    r.call(1, "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XGROUP", "DELCONSUMER", "s", "g", "alice")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XGROUP", "DELCONSUMER", "s", "g", "alice")
    r.call(1, "XGROUP", "DELCONSUMER", "s", "g", "nobody")
    r.call(1, "XGROUP", "DELCONSUMER", "s", "nogroup", "bob")
    r.call(1, "XGROUP", "DELCONSUMER", "nokey", "g", "bob")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")


@scenario("CREATECONSUMER and DELCONSUMER replies and errors")
def createconsumer(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "c1")
    r.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "c1")
    r.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "c2")
    r.call(1, "XGROUP", "CREATECONSUMER", "s", "nogroup", "c1")
    r.call(1, "XGROUP", "CREATECONSUMER", "nokey", "g", "c1")
    r.call(1, "SET", "str", "x")
    r.call(1, "XGROUP", "CREATECONSUMER", "str", "g", "c1")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XGROUP", "DELCONSUMER", "s", "g", "c2")
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("DESTROY replies 1 then 0, drops PEL and consumers")
def destroy(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    r.call(1, "XGROUP", "DESTROY", "s", "g")
    r.call(1, "XGROUP", "DESTROY", "s", "g")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "SET", "str", "x")
    r.call(1, "XGROUP", "DESTROY", "str", "g")


@scenario("XGROUP HELP and its arity")
def help(r: Recorder) -> None:
    r.call(1, "XGROUP", "HELP")
    r.call(1, "XGROUP", "help")
    r.call(1, "XGROUP", "HELP", "extra")


@scenario("Groups are listed in name order (bytewise) whatever the creation order")
def group_order(r: Recorder) -> None:
    add(r, "s", [1])
    for name in ("zeta", "Alpha", "alpha", "b", "a1", "a"):
        r.call(1, "XGROUP", "CREATE", "s", name, "0")
    r.call(1, "XINFO", "GROUPS", "s")
    r.call(1, "XINFO", "STREAM", "s")
