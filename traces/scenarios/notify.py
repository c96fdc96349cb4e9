"""Keyspace notifications (spec/rules/notify.md): ``notify-keyspace-events`` and the events streams,
lists, sets and the generic commands send, as Pub/Sub messages on ``__keyspace@<db>__:<key>`` and
``__keyevent@<db>__:<event>``.

Client 1 listens (a pattern over both kinds of channel, and a ``mark`` channel); client 2 writes.
After each write client 2 publishes on ``mark``, and client 1 reads messages up to that mark: the
events a command sends are exactly the messages before it, however many the dialect sends. Every
scenario ends with the setting empty again (the servers are shared).
"""

from __future__ import annotations

from xspec.spec.resp import Bulk
from xspec.spec.trace_format import Push
from xspec.traces.record.recorder import Arg, Recorder
from xspec.traces.scenarios.helpers import block
from xspec.traces.scenarios.pubsub import confirm, push
from xspec.traces.scenarios.registry import topic

scenario = topic("notify")
SETTING = "notify-keyspace-events"


def listen(r: Recorder, c: int = 1, pattern: str = "__key*") -> None:
    confirm(r, c, "PSUBSCRIBE", pattern)
    confirm(r, c, "SUBSCRIBE", "mark")


def drain(r: Recorder, c: int = 1) -> None:
    """Client ``c``'s messages up to the next ``mark`` (published by client 2 just before)."""
    while True:
        push(r, c)
        last = r.events[-1]
        assert isinstance(last, Push)
        items: tuple[object, ...] = getattr(last.reply, "items", ())
        if len(items) == 3 and items[0] == Bulk(b"message") and items[1] == Bulk(b"mark"):
            return


def step(r: Recorder, *args: Arg) -> None:
    """Client 2 runs a command; client 1 reads what it sent."""
    r.call(2, *args)
    r.call(2, "PUBLISH", "mark", "-")
    drain(r)


def enable(r: Recorder, classes: str) -> None:
    r.call(2, "CONFIG", "SET", SETTING, classes)


@scenario("notify-keyspace-events: CONFIG SET and GET of class letters (A, n, m, K, E), a letter that is no "
          "class, and what a narrower setting sends", tags=["resp2"])
def setting(r: Recorder) -> None:
    for value in ("KEA", "AKEn", "Kl", "g$lshzxetd", "Q", "KEAm", "El", ""):  # NOTIFY-2
        enable(r, value)
        r.call(2, "CONFIG", "GET", SETTING)
    listen(r)
    enable(r, "Kl")  # NOTIFY-1: keyspace channels of list events only
    step(r, "LPUSH", "l", "a")
    step(r, "SADD", "s", "m")
    enable(r, "Et")  # keyevent channels of stream events only
    step(r, "XADD", "x", "1-1", "f", "v")
    step(r, "DEL", "l", "s", "x")
    enable(r, "Eg")
    step(r, "DEL", "nothing")
    enable(r, "")


@scenario("Stream events: xadd, xtrim, xdel, xsetid, xgroup-create/-setid/-destroy/-createconsumer/"
          "-delconsumer, a consumer created by XREADGROUP and XCLAIM, new keys", tags=["resp2"])
def streams(r: Recorder) -> None:
    listen(r)
    enable(r, "KEA")
    enable(r, "KEAn")  # NOTIFY-DIALECT-1: 6.2 refuses n and keeps KEA
    step(r, "XADD", "s", "1-1", "a", "1")  # NOTIFY-3, NOTIFY-4
    step(r, "XADD", "s", "MAXLEN", "1", "2-1", "b", "2")
    step(r, "XTRIM", "s", "MAXLEN", "5")
    step(r, "XDEL", "s", "2-1", "9-9")
    step(r, "XDEL", "s", "9-9")
    step(r, "XGROUP", "CREATE", "s", "g", "0")
    step(r, "XGROUP", "CREATE", "s2", "g", "$", "MKSTREAM")
    step(r, "XGROUP", "CREATE", "s2", "g", "$")  # BUSYGROUP: nothing
    step(r, "XGROUP", "CREATECONSUMER", "s", "g", "c1")
    step(r, "XGROUP", "CREATECONSUMER", "s", "g", "c1")
    step(r, "XADD", "s", "3-1", "c", "3")
    step(r, "XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "STREAMS", "s", ">")  # NOTIFY-DIALECT-2
    step(r, "XCLAIM", "s", "g", "c3", "0", "3-1")
    step(r, "XGROUP", "SETID", "s", "g", "0")
    step(r, "XSETID", "s", "9-9")
    step(r, "XGROUP", "DELCONSUMER", "s", "g", "c1")
    step(r, "XGROUP", "DELCONSUMER", "s", "g", "nobody")  # NOTIFY-DIALECT-2
    step(r, "XGROUP", "DESTROY", "s", "g")
    step(r, "XGROUP", "DESTROY", "s", "g")
    step(r, "XADD", "s", "NOMKSTREAM", "10-1", "a", "1")
    step(r, "XADD", "none", "NOMKSTREAM", "*", "a", "1")
    step(r, "DEL", "s", "s2", "none")
    enable(r, "")


@scenario("List events: lpush, rpush, lpop, rpop, lmove, a deleted emptied list, a blocked BLPOP and BLMOVE "
          "served by a push", tags=["resp2"])
def lists(r: Recorder) -> None:
    listen(r)
    enable(r, "KEA")
    enable(r, "KEAn")
    step(r, "LPUSH", "l", "a", "b")
    step(r, "RPUSH", "l", "c")
    step(r, "LPOP", "l")
    step(r, "RPOP", "l", "5")
    step(r, "LPOP", "l")
    step(r, "RPUSH", "l", "x", "y")
    step(r, "LMOVE", "l", "m", "LEFT", "RIGHT")
    step(r, "LMOVE", "l", "m", "RIGHT", "LEFT")
    step(r, "LMOVE", "m", "m", "LEFT", "RIGHT")
    block(r, 3, "BLPOP", "q", "0")
    step(r, "RPUSH", "q", "v1")
    r.recv(3)
    block(r, 3, "BLMOVE", "q2", "dst", "LEFT", "LEFT", "0")
    step(r, "LPUSH", "q2", "v2", "v3")
    r.recv(3)
    step(r, "BLPOP", "q2", "0")
    step(r, "DEL", "m", "dst")
    enable(r, "")


@scenario("Set and generic events: sadd, srem, a deleted emptied set, del, unlink, rename_from/rename_to, "
          "restore; MULTI/EXEC's events", tags=["resp2"])
def sets_and_generic(r: Recorder) -> None:
    listen(r)
    enable(r, "KEA")
    enable(r, "KEAn")
    step(r, "SADD", "s", "1", "2")
    step(r, "SADD", "s", "2")
    step(r, "SREM", "s", "1", "9")
    step(r, "SREM", "s", "9")
    step(r, "SREM", "s", "2")
    step(r, "SADD", "s", "a")
    step(r, "RENAME", "s", "t")
    step(r, "RPUSH", "l", "1")
    step(r, "RENAME", "t", "l")
    step(r, "DUMP", "l")
    step(r, "UNLINK", "l", "nothing")
    r.call(2, "SADD", "src", "m")
    r.call(2, "PUBLISH", "mark", "-")
    drain(r)
    dump = r.call(2, "DUMP", "src")
    payload = getattr(dump, "value", b"")
    step(r, "RESTORE", "copy", "0", payload)
    step(r, "RESTORE", "copy", "0", payload, "REPLACE")
    step(r, "RESTORE", "copy", "1", payload, "REPLACE", "ABSTTL")  # already expired: del
    r.call(2, "MULTI")
    r.call(2, "SADD", "s", "1")
    r.call(2, "DEL", "s", "src")
    r.call(2, "EXEC")
    r.call(2, "PUBLISH", "mark", "-")
    drain(r)
    enable(r, "")


@scenario("RESP3: events are pushes; a database other than 0 names its channels", tags=["resp3"])
def resp3_events(r: Recorder) -> None:
    r.call(1, "HELLO", "3")
    r.call(1, "PSUBSCRIBE", "__keyevent@*")
    enable(r, "E$lt")
    r.call(2, "SELECT", "3")
    r.call(2, "RPUSH", "l", "a")
    push(r, 1)
    r.call(2, "SELECT", "0")
    r.call(1, "CONFIG", "SET", SETTING, "")
