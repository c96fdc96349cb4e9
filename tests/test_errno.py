"""XADD-14: which commands leave the main thread's errno alone and which write it.

Every case runs on the real server: a fresh stream ``s`` whose last ID is
``5-<max>``, the case's setup, a failing ``XADD s 1-0`` (errno EDOM, XADD-15),
the command under test, then ``XADD s 5-*``, whose error text tells whether the
command wrote errno. The model must word that error the same way. A few
blocking scenarios cover served and timed-out readers (BLOCK-8).

The last tests drive the model alone with a clock that ticks at every reading,
pinning the order of its clock readings to 7.0's (XREAD-2, XREADGROUP-10).
"""

from __future__ import annotations

import pytest

from xspec.models import ManualClock, Server
from xspec.spec.ids import StreamID

U64 = "18446744073709551615"
TOP = f"5-{U64}"

GROUP = [("XGROUP", "CREATE", "s", "g", "0")]
PENDING = [*GROUP, ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")]  # 5-max pending for c
OTHER = [("XADD", "t", "1-0", "f", "v"), ("XADD", "t", "2-0", "f", "v"), ("XADD", "t", "3-0", "f", "v")]
OTHER_PENDING = [*OTHER, ("XGROUP", "CREATE", "t", "g", "0"),
                 ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "t", ">")]  # 1-0 .. 3-0 pending for c

Case = tuple[str, list[tuple[str, ...]], tuple[str, ...]]

CASES: list[Case] = [
    # XREAD: ID parsing (ID-7) and the range iterator (XRANGE-4)
    ("xread-all", [], ("XREAD", "STREAMS", "s", "0")),
    ("xread-count-reached", [], ("XREAD", "COUNT", "1", "STREAMS", "s", "0")),
    ("xread-nothing-new", [], ("XREAD", "STREAMS", "s", TOP)),
    ("xread-dollar", [], ("XREAD", "STREAMS", "s", "$")),
    ("xread-strtoull-id", [], ("XREAD", "STREAMS", "s", f" {TOP}")),
    ("xread-missing-key", [], ("XREAD", "STREAMS", "nokey", "0")),
    ("xread-other-count-reached", OTHER, ("XREAD", "COUNT", "2", "STREAMS", "t", "0")),
    ("xread-other-all", OTHER, ("XREAD", "COUNT", "3", "STREAMS", "t", "0")),
    ("xread-block-served", [], ("XREAD", "BLOCK", "10", "STREAMS", "s", "0")),
    # XREADGROUP: new entries, history (the consumer PEL iterator)
    ("xreadgroup-new", GROUP, ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")),
    ("xreadgroup-new-count", GROUP, ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")),
    ("xreadgroup-new-noack", GROUP, ("XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">")),
    ("xreadgroup-nothing-new", PENDING, ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")),
    ("xreadgroup-other-new-count", [*OTHER, ("XGROUP", "CREATE", "t", "g", "0")],
     ("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "t", ">")),
    ("xreadgroup-history", PENDING, ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")),
    ("xreadgroup-history-count", PENDING, ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "0")),
    ("xreadgroup-history-empty", GROUP, ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")),
    ("xreadgroup-history-beyond", PENDING, ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", TOP)),
    ("xreadgroup-history-other-count", OTHER_PENDING,
     ("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "t", "0")),
    ("xreadgroup-history-other-count-last", OTHER_PENDING,
     ("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "t", "0")),
    ("xreadgroup-history-strtoull", PENDING, ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", " 9")),
    ("xreadgroup-nogroup", [], ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")),
    # XPENDING
    ("xpending-summary-empty", GROUP, ("XPENDING", "s", "g")),
    ("xpending-summary", PENDING, ("XPENDING", "s", "g")),
    ("xpending-range", PENDING, ("XPENDING", "s", "g", "-", "+", "10")),
    ("xpending-range-count", PENDING, ("XPENDING", "s", "g", "-", "+", "1")),
    ("xpending-range-other-count", OTHER_PENDING, ("XPENDING", "t", "g", "-", "+", "2")),
    ("xpending-range-other-end", OTHER_PENDING, ("XPENDING", "t", "g", "-", "2", "10")),
    ("xpending-range-beyond", PENDING, ("XPENDING", "s", "g", "6", "+", "10")),
    ("xpending-range-empty", GROUP, ("XPENDING", "s", "g", "-", "+", "10")),
    ("xpending-range-strtoull", PENDING, ("XPENDING", "s", "g", " 0", "+", "10")),
    ("xpending-consumer", PENDING, ("XPENDING", "s", "g", "-", "+", "10", "c")),
    ("xpending-consumer-other-count", OTHER_PENDING, ("XPENDING", "t", "g", "-", "+", "2", "c")),
    ("xpending-idle", PENDING, ("XPENDING", "s", "g", "IDLE", "0", "-", "+", "10")),
    # XINFO
    ("xinfo-stream", [], ("XINFO", "STREAM", "s")),
    ("xinfo-stream-other", OTHER, ("XINFO", "STREAM", "t")),
    ("xinfo-stream-empty", [("XDEL", "s", TOP)], ("XINFO", "STREAM", "s")),
    ("xinfo-stream-full", PENDING, ("XINFO", "STREAM", "s", "FULL")),
    ("xinfo-stream-full-count", OTHER_PENDING, ("XINFO", "STREAM", "t", "FULL", "COUNT", "1")),
    ("xinfo-groups", GROUP, ("XINFO", "GROUPS", "s")),
    ("xinfo-groups-none", [], ("XINFO", "GROUPS", "s")),
    ("xinfo-consumers", PENDING, ("XINFO", "CONSUMERS", "s", "g")),
    ("xinfo-consumers-none", GROUP, ("XINFO", "CONSUMERS", "s", "g")),
    # XCLAIM
    ("xclaim-pending", PENDING, ("XCLAIM", "s", "g", "d", "0", TOP)),
    ("xclaim-not-pending", PENDING, ("XCLAIM", "s", "g", "d", "0", "1-1")),
    ("xclaim-force", GROUP, ("XCLAIM", "s", "g", "d", "0", TOP, "FORCE")),
    ("xclaim-force-deleted", GROUP, ("XCLAIM", "s", "g", "d", "0", "1-1", "FORCE")),
    ("xclaim-strtoull", PENDING, ("XCLAIM", "s", "g", "d", "0", f" {TOP}")),
    ("xclaim-lastid", PENDING, ("XCLAIM", "s", "g", "d", "0", TOP, "LASTID", "9")),
    ("xclaim-lastid-strtoull", PENDING, ("XCLAIM", "s", "g", "d", "0", TOP, "LASTID", " 9")),
    ("xclaim-justid", PENDING, ("XCLAIM", "s", "g", "d", "0", TOP, "JUSTID")),
    ("xclaim-deleted-entry", [*PENDING, ("XDEL", "s", TOP)], ("XCLAIM", "s", "g", "d", "0", TOP)),
    # XAUTOCLAIM
    ("xautoclaim", PENDING, ("XAUTOCLAIM", "s", "g", "d", "0", "0")),
    ("xautoclaim-empty", GROUP, ("XAUTOCLAIM", "s", "g", "d", "0", "0")),
    ("xautoclaim-other-count", OTHER_PENDING, ("XAUTOCLAIM", "t", "g", "d", "0", "0", "COUNT", "2")),
    ("xautoclaim-other-count-last", OTHER_PENDING, ("XAUTOCLAIM", "t", "g", "d", "0", "0", "COUNT", "3")),
    ("xautoclaim-justid", PENDING, ("XAUTOCLAIM", "s", "g", "d", "0", "0", "JUSTID")),
    ("xautoclaim-strtoull", PENDING, ("XAUTOCLAIM", "s", "g", "d", "0", " 9")),
    ("xautoclaim-deleted", [*PENDING, ("XDEL", "s", TOP)], ("XAUTOCLAIM", "s", "g", "d", "0", "0")),
    # XGROUP
    ("xgroup-create", [], ("XGROUP", "CREATE", "s", "g", "0")),
    ("xgroup-create-dollar", [], ("XGROUP", "CREATE", "s", "g", "$")),
    ("xgroup-create-strtoull", [], ("XGROUP", "CREATE", "s", "g", " 0")),
    ("xgroup-create-mkstream", [], ("XGROUP", "CREATE", "new", "g", "0", "MKSTREAM")),
    ("xgroup-create-entriesread", [], ("XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "1")),
    ("xgroup-create-exists", GROUP, ("XGROUP", "CREATE", "s", "g", "0")),
    ("xgroup-setid", GROUP, ("XGROUP", "SETID", "s", "g", "0")),
    ("xgroup-setid-strtoull", GROUP, ("XGROUP", "SETID", "s", "g", " 0")),
    ("xgroup-destroy", PENDING, ("XGROUP", "DESTROY", "s", "g")),
    ("xgroup-createconsumer", GROUP, ("XGROUP", "CREATECONSUMER", "s", "g", "c")),
    ("xgroup-delconsumer", PENDING, ("XGROUP", "DELCONSUMER", "s", "g", "c")),
    ("xgroup-delconsumer-idle", [*GROUP, ("XGROUP", "CREATECONSUMER", "s", "g", "c")],
     ("XGROUP", "DELCONSUMER", "s", "g", "c")),
    # XACK
    ("xack", PENDING, ("XACK", "s", "g", TOP)),
    ("xack-not-pending", PENDING, ("XACK", "s", "g", "1-1")),
    ("xack-strtoull", PENDING, ("XACK", "s", "g", f" {TOP}")),
    ("xread-other-count-short", OTHER, ("XREAD", "COUNT", "4", "STREAMS", "t", "0")),
    ("xreadgroup-history-deleted-last", [*OTHER_PENDING, ("XDEL", "t", "3-0")],
     ("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "t", "1-0")),
    ("xreadgroup-history-deleted-mid", [*OTHER_PENDING, ("XDEL", "t", "2-0")],
     ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "t", "1-0")),
    ("xreadgroup-history-new-consumer", OTHER_PENDING, ("XREADGROUP", "GROUP", "g", "e", "STREAMS", "t", "0")),
    ("xpending-consumer-missing", OTHER_PENDING, ("XPENDING", "t", "g", "-", "+", "10", "zz")),
    ("xpending-count-zero", OTHER_PENDING, ("XPENDING", "t", "g", "-", "+", "0")),
    ("xpending-idle-all-skipped", OTHER_PENDING, ("XPENDING", "t", "g", "IDLE", "100000", "-", "+", "10")),
    ("xpending-idle-count", OTHER_PENDING, ("XPENDING", "t", "g", "IDLE", "0", "-", "+", "3")),
    ("xpending-exclusive", OTHER_PENDING, ("XPENDING", "t", "g", "(1-0", "+", "10")),
    ("xinfo-groups-destroyed", [*OTHER, ("XGROUP", "CREATE", "t", "g", "$"), ("XGROUP", "DESTROY", "t", "g")],
     ("XINFO", "GROUPS", "t")),
    ("xinfo-full-no-groups", OTHER, ("XINFO", "STREAM", "t", "FULL")),
    ("xinfo-full-count-no-groups", OTHER, ("XINFO", "STREAM", "t", "FULL", "COUNT", "1")),
    ("xinfo-full-count-exact", OTHER, ("XINFO", "STREAM", "t", "FULL", "COUNT", "3")),
    ("xinfo-full-destroyed", [*OTHER, ("XGROUP", "CREATE", "t", "g", "$"), ("XGROUP", "DESTROY", "t", "g")],
     ("XINFO", "STREAM", "t", "FULL", "COUNT", "1")),
    ("xclaim-other-pending", OTHER_PENDING, ("XCLAIM", "t", "g", "d", "0", "2-0")),
    ("xclaim-other-pending-last", OTHER_PENDING, ("XCLAIM", "t", "g", "d", "0", "3-0")),
    ("xclaim-other-missing-mid", [*OTHER, ("XGROUP", "CREATE", "t", "g", "$")], ("XCLAIM", "t", "g", "d", "0", "2-5")),
    ("xclaim-other-missing-end", [*OTHER, ("XGROUP", "CREATE", "t", "g", "$")], ("XCLAIM", "t", "g", "d", "0", "4-0")),
    ("xclaim-other-option-word", OTHER_PENDING, ("XCLAIM", "t", "g", "d", "0", "2-0", "JUSTID")),
    ("xclaim-other-deleted-mid", [*OTHER_PENDING, ("XDEL", "t", "2-0")], ("XCLAIM", "t", "g", "d", "0", "2-0")),
    ("xclaim-other-deleted-end", [*OTHER_PENDING, ("XDEL", "t", "3-0")], ("XCLAIM", "t", "g", "d", "0", "3-0")),
    ("xclaim-other-idle-skip", OTHER_PENDING, ("XCLAIM", "t", "g", "d", "100000", "2-0")),
    ("xack-other", OTHER_PENDING, ("XACK", "t", "g", "1-0", "3-0")),
    ("xautoclaim-other-deleted-mid", [*OTHER_PENDING, ("XDEL", "t", "2-0")],
     ("XAUTOCLAIM", "t", "g", "d", "0", "0", "COUNT", "2")),
    ("xautoclaim-other-deleted-last", [*OTHER_PENDING, ("XDEL", "t", "3-0")],
     ("XAUTOCLAIM", "t", "g", "d", "0", "2-0", "COUNT", "1")),
    ("xautoclaim-other-attempts", OTHER_PENDING, ("XAUTOCLAIM", "t", "g", "d", "100000", "0", "COUNT", "1")),
    ("xgroup-delconsumer-missing", OTHER_PENDING, ("XGROUP", "DELCONSUMER", "t", "g", "zz")),
    ("xgroup-destroy-other", OTHER_PENDING, ("XGROUP", "DESTROY", "t", "g")),
    # generic and administrative commands
    ("del", OTHER_PENDING, ("DEL", "t")),
    ("unlink", OTHER_PENDING, ("UNLINK", "t")),
    ("rename", OTHER, ("RENAME", "t", "u")),
    ("set-overwrite", OTHER_PENDING, ("SET", "t", "x")),
    ("swapdb", [], ("SWAPDB", "2", "3")),
    ("dbsize", [], ("DBSIZE",)),
    ("keys", [], ("KEYS", "*")),
    ("scan", [], ("SCAN", "0")),
    ("scan-invalid", [], ("SCAN", "x")),
    ("config-set-int", [], ("CONFIG", "SET", "stream-node-max-entries", "50")),
    ("config-set-memory", [], ("CONFIG", "SET", "stream-node-max-bytes", "4kb")),
    ("config-set-memory-invalid", [], ("CONFIG", "SET", "stream-node-max-bytes", "abc")),
    ("config-set-int-fails-first", [], ("CONFIG", "SET", "stream-node-max-entries", "x",
                                        "stream-node-max-bytes", "5")),
    ("config-get", [], ("CONFIG", "GET", "stream-node-max-bytes")),
    ("client-setname", [], ("CLIENT", "SETNAME", "x")),
    ("client-list", [], ("CLIENT", "LIST")),
    ("client-info", [], ("CLIENT", "INFO")),
    ("info-stats", [], ("INFO", "stats")),
    ("info-default", [], ("INFO",)),
    ("info-errorstats", [], ("INFO", "errorstats")),
    ("info-server-keyspace", [], ("INFO", "server", "keyspace")),
    ("auth-no-password-configured", [], ("AUTH", "x")),
    ("auth-unknown-user", [], ("AUTH", "nouser", "x")),
    ("auth-default-user", [], ("AUTH", "default", "x")),
    ("auth-syntax", [], ("AUTH", "a", "b", "c")),
    ("hello-auth-unknown-user", [], ("HELLO", "2", "AUTH", "nouser", "x")),
    ("hello-auth-default-user", [], ("HELLO", "2", "AUTH", "default", "x")),
    ("xsetid-strtoull", [], ("XSETID", "s", TOP)),
    ("xsetid", [], ("XSETID", "s", "6-0")),
    ("xtrim-nothing", [], ("XTRIM", "s", "MAXLEN", "5")),
    ("exists-type-echo", [], ("EXISTS", "s")),
    ("hello", [], ("HELLO", "3")),
    ("multi-exec", [], ("MULTI",)),
]


@pytest.mark.parametrize(("setup", "command"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_errno_after_command(redis, setup: list[tuple[str, ...]], command: tuple[str, ...]) -> None:
    s = redis.scenario()
    s.call(1, "XADD", "s", TOP, "f", "v")
    for args in setup:
        s.call(1, *args)
    s.call(1, "XADD", "s", "1-0", "f", "v")  # XADD-15: EDOM
    s.call(1, *command)
    if command == ("MULTI",):
        s.call(1, "XPENDING", "s", "g", "-", "+", "10")
        s.call(1, "EXEC")
    s.call(1, "XADD", "s", "5-*", "f", "v")  # XADD-14: worded after the command's errno
    s.check()


def _errno_set(s) -> None:  # noqa: ANN001 - the Scenario of tests/support.py
    s.call(1, "XADD", "s", TOP, "f", "v")
    s.call(1, "XADD", "s", "1-0", "f", "v")  # XADD-15: EDOM


def test_blocked_read_served(redis) -> None:
    """Serving a blocked XREAD walks the stream off its tree (errno 0)."""
    s = redis.scenario()
    s.call(1, "XADD", "t", "1-0", "f", "v")
    s.send(2, "XREAD", "BLOCK", "0", "STREAMS", "t", "$")
    assert s.is_waiting(2)
    _errno_set(s)
    s.call(1, "XADD", "t", "2-0", "f", "v")
    s.recv(2)
    s.call(1, "XADD", "s", "5-*", "f", "v")
    s.check()


def test_blocked_read_timeout_last_in_table(redis) -> None:
    """The timeout walk runs off the table once the last client with a deadline times out."""
    s = redis.scenario()
    _errno_set(s)
    s.call(1, "XREAD", "BLOCK", "20", "STREAMS", "s", "$")
    s.call(1, "XADD", "s", "5-*", "f", "v")
    s.check()


def test_blocked_read_timeout_with_later_deadline(redis) -> None:
    """A later deadline left in the table stops the walk: errno stays."""
    s = redis.scenario()
    s.send(2, "XREAD", "BLOCK", "100000", "STREAMS", "u", "$")
    assert s.is_waiting(2)
    _errno_set(s)
    s.call(1, "XREAD", "BLOCK", "20", "STREAMS", "s", "$")
    s.call(1, "XADD", "s", "5-*", "f", "v")
    s.check()


# -- the order of clock readings (model unit tests; XREAD-2, XREADGROUP-9, XREADGROUP-10) ----
class TickingClock(ManualClock):
    """A clock one millisecond later at every reading, so readings show their order."""

    def now_ms(self) -> int:
        reading = super().now_ms()
        self.ms += 1
        return reading


def _server() -> tuple[Server, TickingClock]:
    clock = TickingClock(1_000)
    server = Server(clock=clock)
    server.connect(1)
    server.connect(2)
    return server, clock


def _run(server: Server, client: int, *args: str) -> None:
    server.execute(client, [a.encode() for a in args])


def test_block_deadline_is_read_while_parsing() -> None:
    """XREAD-2: the BLOCK reading comes before the seen-time reading of the same command."""
    server, clock = _server()
    _run(server, 1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    before = clock.ms
    _run(server, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "100", "STREAMS", "s", ">")
    blocked = server.clients[2].blocked
    assert blocked is not None and blocked.deadline == before + 100
    assert clock.ms == before + 1  # nothing served: no consumer, no other reading


def test_served_read_reads_block_first_then_seen_time_then_delivery() -> None:
    server, clock = _server()
    _run(server, 1, "XADD", "s", "1-0", "f", "v")
    _run(server, 1, "XGROUP", "CREATE", "s", "g", "0")
    before = clock.ms
    _run(server, 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "100", "STREAMS", "s", ">")
    stream = server.dbs[0][b"s"]
    group = stream.groups[b"g"]
    assert group.consumers[b"c"].seen_time == before + 1
    assert group.pel[StreamID(1, 0)].delivery_time == before + 2


def test_taken_over_nack_reads_the_clock_twice() -> None:
    """XREADGROUP-10: a fresh NACK's reading, dropped, then the taken-over NACK's own."""
    server, clock = _server()
    _run(server, 1, "XADD", "s", "1-0", "f", "v")
    _run(server, 1, "XGROUP", "CREATE", "s", "g", "0")
    _run(server, 1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    _run(server, 1, "XGROUP", "SETID", "s", "g", "0")
    before = clock.ms
    _run(server, 1, "XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", ">")
    nack = server.dbs[0][b"s"].groups[b"g"].pel[StreamID(1, 0)]
    assert nack.delivery_time == before + 2  # seen-time, the dropped NACK, then this one
    assert clock.ms == before + 3
