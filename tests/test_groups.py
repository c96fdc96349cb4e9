"""Differential tests of XGROUP, XACK, XPENDING, XCLAIM and XAUTOCLAIM (spec/rules/groups.md).

Each test runs commands on the real Redis 7.0.15 and asserts that the model
explains every reply (the conformance checker, over the trace's time windows).
Most tests also tap the server's replication stream (a raw ``SYNC``
connection) and assert that the model propagates exactly the same commands,
because propagation is half of what these commands specify and traces do not
record it.

Propagated delivery times depend on the millisecond in which the server read
its clock. The conformance checker searches the time windows of the trace, but
the propagation comparison replays the trace on the model with a concrete
clock: the millisecond at which each command was sent. That is exact when the
command's reply came back within the same millisecond, so every call is sent at
the start of a millisecond, and :func:`run` re-runs a scenario (a few times at
most) when a command still straddled a millisecond boundary. If the last attempt
still straddles (a busy machine), every millisecond each straddling command
could have read is tried.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from tests.support import ReplicaTap
from xspec.models import ManualClock, Server
from xspec.models.invariants import violations
from xspec.models.server import render_op
from xspec.models.state import Stream
from xspec.spec.ids import StreamID
from xspec.spec.resp import Error, Int, Reply
from xspec.spec.trace_format import Call, Connect, Header, Note, Trace, dumps
from xspec.traces.check.checker import check_trace, trace_dialect
from xspec.traces.record.recorder import Arg

if TYPE_CHECKING:
    from tests.conftest import RealRedis
    from tests.support import Scenario

def straddles(trace: Trace) -> bool:
    """True if some command's reply came back in a later millisecond than it was sent."""
    return any(isinstance(e, Call) and e.t0 is not None and e.t1 is not None
               and e.t0 // 1000 != e.t1 // 1000 for e in trace.events)


def model_propagation(trace: Trace, moments: dict[int, int] | None = None) -> list[list[bytes]]:
    """What the model propagates for a trace of plain calls.

    The clock is the millisecond each call was sent in, as the sequential checker
    sets it, or the one ``moments`` gives for that event index.
    """
    clock = ManualClock(0)
    model = Server(trace_dialect(trace), clock, trace.header.config)
    ops: list[list[bytes]] = []
    for i, e in enumerate(trace.events):
        if isinstance(e, Note):
            continue
        if isinstance(e, Connect):
            model.client(e.c)
            continue
        assert isinstance(e, Call), "propagation is compared for traces of plain calls only"
        clock.set(moments[i] if moments and i in moments else (e.t0 or 0) // 1000)
        ops.extend(render_op(op) for op in model.execute(e.c, e.cmd).propagated
                   if op[0] != b"SELECT")
    return ops


def propagation_explained(trace: Trace, real: list[list[bytes]]) -> list[list[bytes]] | None:
    """None if some choice of millisecond for each call explains the real propagation; else the model's.

    A call whose reply came back in a later millisecond than it was sent (a busy
    machine) may have read its clock in any millisecond of that span: every
    combination is tried, up to a bound.
    """
    spans = {i: range(e.t0 // 1000, e.t1 // 1000 + 1) for i, e in enumerate(trace.events)
             if isinstance(e, Call) and e.t0 is not None and e.t1 is not None and e.t0 // 1000 != e.t1 // 1000}
    first = model_propagation(trace)
    if first == real:
        return None
    if math.prod(len(r) for r in spans.values()) > 512:
        return first
    for moments in itertools.product(*spans.values()):
        if model_propagation(trace, dict(zip(spans, moments, strict=True))) == real:
            return None
    return first


def run(redis: RealRedis, body: Callable[[MillisecondAligned], None], *, propagation: bool = True,
        attempts: int = 6) -> Trace:
    """Run ``body`` on the real server, check the replies and the propagation on the model."""
    for attempt in range(attempts):
        redis.reset()
        tap = ReplicaTap(redis.host, redis.port) if propagation else None
        try:
            s = redis.scenario()
            body(MillisecondAligned(s))
            s.rec.close_all()
            trace = s.trace()
            if straddles(trace) and attempt < attempts - 1:
                continue
            # these tests use database 0 only: SELECTs are left out on both sides
            real = [op for op in tap.take() if op[0].upper() != b"SELECT"] if tap is not None else []
        finally:
            if tap is not None:
                tap.close()
        verdict = check_trace(trace)
        if verdict.status == "unsupported" and "does not implement" in verdict.message:
            pytest.skip(verdict.message)  # another command family is not modelled yet
        note = " (a command straddled a millisecond)" if straddles(trace) else ""
        assert verdict.status == "conform", f"{verdict.describe()}{note}\n--- trace ---\n{dumps(trace)}"
        if propagation:
            modelled = propagation_explained(trace, real)
            assert modelled is None, (f"propagation differs{note}\n  real:  {real}\n  model: {modelled}"
                                      f"\n--- trace ---\n{dumps(trace)}")
        return trace
    raise AssertionError("unreachable")


def fresh_ms() -> None:
    """Wait for the start of a millisecond, so the next command likely stays inside it."""
    while time.time_ns() // 1000 % 1000 > 250:
        pass


class MillisecondAligned:
    """A scenario whose calls are each sent at the start of a millisecond (see :func:`run`)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario

    def call(self, c: int, *args: Arg) -> Reply:
        fresh_ms()
        return self.scenario.call(c, *args)

    def send(self, c: int, *args: Arg) -> None:
        self.scenario.send(c, *args)

    def recv(self, c: int, timeout: float = 10.0) -> Reply:
        return self.scenario.recv(c, timeout)

    def is_waiting(self, c: int, wait: float = 0.05) -> bool:
        return self.scenario.is_waiting(c, wait)


def entries(s: MillisecondAligned, key: str = "s", n: int = 5) -> None:
    for i in range(1, n + 1):
        s.call(1, "XADD", key, f"{i}-0", "f", f"v{i}")


def is_error(r: Reply, prefix: str = "") -> bool:
    return isinstance(r, Error) and r.text.startswith(prefix)


PROTOCOLS = pytest.mark.parametrize("proto", [2, 3])


def speak(s: MillisecondAligned, proto: int, client: int = 1) -> None:
    if proto == 3:
        s.call(client, "HELLO", "3")


# -- XGROUP ----------------------------------------------------------------------------


@pytest.mark.redis
@PROTOCOLS
def test_xgroup_help_arity_and_unknown_subcommand(redis, proto):
    """XGROUP-1, XGROUP-15."""
    def body(s):
        speak(s, proto)
        s.call(1, "XGROUP", "HELP")
        s.call(1, "xgroup", "help")
        assert is_error(s.call(1, "XGROUP", "HELP", "extra"), "ERR wrong number")
        assert is_error(s.call(1, "XGROUP", "DESTROY", "s", "g", "x"), "ERR wrong number")  # §10-36
        s.call(1, "XGROUP", "CREATE", "s", "g")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g")
        s.call(1, "XGROUP", "FOO", "s")
    run(redis, body)


@pytest.mark.redis
def test_xgroup_option_errors(redis):
    """XGROUP-2, XGROUP-6; §10-36, §10-37."""
    def body(s):
        entries(s)
        assert is_error(s.call(1, "XGROUP", "CREATE", "s", "g", "0", "FOO"), "ERR unknown subcommand or")
        s.call(1, "xgroup", "create", "s", "g", "0", "FOO")  # echoed as typed
        s.call(1, "XGROUP", "cReAtE", "s", "g", "0", "MKSTREAM", "ENTRIESREAD")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "abc")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "-2")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "5", "ENTRIESREAD", "1.5")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "-1", "MKSTREAM", "FOO")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM")
        s.call(1, "XGROUP", "SETID", "s", "g", "0", "MKSTREAM")
        s.call(1, "XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD")
        s.call(1, "XGROUP", "SETID", "s", "g", "0", "FOO", "BAR")
        s.call(1, "XGROUP", "CREATE", "s", b"g", b"0", b"MKSTREAM\x00x")  # C-string option name
        s.call(1, "XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "5", "ENTRIESREAD", "6")
        s.call(1, "XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "5", "ENTRIESREAD", "6")
        s.call(1, "XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "5", "ENTRIESREAD", "6")
        s.call(1, "XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "7")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "FORCE", "JUSTID")  # shows last-delivered-id
        s.call(1, "XGROUP", "CREATE", "s", "x" * 200, "0", "FOO")
        s.call(1, "XGROUP", "C" + "r" * 140, "s", "g", "0", "FOO")
    run(redis, body)


@pytest.mark.redis
def test_xgroup_check_order(redis):
    """XGROUP-3 .. XGROUP-6: options, then WRONGTYPE, then missing key, then NOGROUP, then the count."""
    def body(s):
        entries(s)
        s.call(1, "SET", "str", "x")
        s.call(1, "XGROUP", "CREATE", "str", "g", "bad")
        s.call(1, "XGROUP", "CREATE", "str", "g", "0", "ENTRIESREAD", "abc")
        s.call(1, "XGROUP", "CREATE", "str", "g", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM")
        s.call(1, "XGROUP", "CREATE", "nokey", "g", "bad")
        s.call(1, "XGROUP", "CREATE", "nokey", "g", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM")
        s.call(1, "XGROUP", "CREATE", "nokey", "g", "$")  # nothing was created (§10-35)
        s.call(1, "XGROUP", "SETID", "nokey", "g", "0", "ENTRIESREAD", "5", "ENTRIESREAD", "6")
        s.call(1, "XGROUP", "SETID", "s", "nog", "0", "ENTRIESREAD", "5", "ENTRIESREAD", "6")
        s.call(1, "XGROUP", "SETID", "nokey", "g", "0")
        s.call(1, "XGROUP", "SETID", "str", "g", "0")
        s.call(1, "XGROUP", "SETID", "s", "nog", "0")
        s.call(1, "XGROUP", "DESTROY", "nokey", "g")  # §10-37: an error, not 0
        s.call(1, "XGROUP", "DESTROY", "str", "g")
        s.call(1, "XGROUP", "CREATECONSUMER", "nokey", "g", "c")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "nog", "c")
        s.call(1, "XGROUP", "CREATECONSUMER", "str", "g", "c")
        s.call(1, "XGROUP", "DELCONSUMER", "s", "nog", "c")
        s.call(1, "XGROUP", "DELCONSUMER", "nokey", "nog", "c")
        s.call(1, "XGROUP", "SETID", b"s", b"a\r\nb", b"0")  # CR LF quoted as spaces
        s.call(1, "XGROUP", "SETID", b"s", b"a\x00b", b"0")  # quoted up to the NUL
        s.call(1, "XGROUP", "SETID", b"s", "grüße".encode(), b"0")
    run(redis, body)


@pytest.mark.redis
@PROTOCOLS
def test_xgroup_create(redis, proto):
    """XGROUP-7 .. XGROUP-10, XGROUP-16; §10-33 (CREATE -), §10-34, §10-35, §10-38."""
    def body(s):
        speak(s, proto)
        entries(s, n=3)
        assert is_error(s.call(1, "XGROUP", "CREATE", "s", "g", "-"), "ERR Invalid stream ID")
        s.call(1, "XGROUP", "CREATE", "s", "g", "+")
        s.call(1, "XGROUP", "CREATE", "nokey", "g", "bad", "MKSTREAM")
        s.call(1, "XGROUP", "CREATE", "nokey", "g", "$")  # still missing: the bad ID created nothing
        s.call(1, "XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "2")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")  # BUSYGROUP
        s.call(1, "XGROUP", "CREATE", "s", "g", "0", "MKSTREAM")  # BUSYGROUP
        s.call(1, "XGROUP", "CREATE", "s", "g2", "99-99", "ENTRIESREAD", "1000")
        s.call(1, "XGROUP", "CREATE", "s", "g3", b"$\x00x")  # `$` compared as a C string
        s.call(1, "XGROUP", "CREATE", "s", "g4", " 3")
        s.call(1, "XGROUP", "CREATE", "s", "g5", "3", "entriesread", "0", "mkstream")
        s.call(1, "XGROUP", "CREATE", "s", "", "2")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "", "")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "", "")
        s.call(1, "XGROUP", "CREATE", "new", "g", "$", "MKSTREAM")
        s.call(1, "XGROUP", "CREATE", "new", "g", "$", "MKSTREAM")
        s.call(1, "XGROUP", "CREATE", "new2", "g", "7-7", "MKSTREAM", "ENTRIESREAD", "9223372036854775807")
        s.call(1, "XLEN", "new")
        # The propagated LASTID shows each group's last-delivered-id.
        for group in ("g", "g2", "g3", "g4", "g5", ""):
            s.call(1, "XCLAIM", "s", group, "c", "0", "1-0", "FORCE", "JUSTID")
        s.call(1, "XPENDING", "s", "")
    run(redis, body)


@pytest.mark.redis
def test_xgroup_create_ids_beyond_the_stream_and_lag(redis):
    """XGROUP-7, XGROUP-10; §10-34 (ENTRIESREAD 1000 on 3 entries: lag -997), via XINFO GROUPS."""
    def body(s):
        entries(s, n=3)
        s.call(1, "XGROUP", "CREATE", "s", "g", "99-99", "ENTRIESREAD", "1000")
        s.call(1, "XGROUP", "CREATE", "s", "g2", "$")
        s.call(1, "XGROUP", "CREATE", "e", "g", "$", "MKSTREAM", "ENTRIESREAD", "0")
        s.call(1, "XINFO", "GROUPS", "s")
        s.call(1, "XINFO", "GROUPS", "e")
    run(redis, body)


@pytest.mark.redis
def test_xgroup_create_mkstream_touches_watch(redis):
    """XGROUP-8 (MKSTREAM signals WATCH); XGROUP-10 .. XGROUP-14 on an existing key do not."""
    def body(s):
        entries(s, n=2)
        s.call(2, "WATCH", "s", "m")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XGROUP", "SETID", "s", "g", "1")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "c")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "FORCE", "JUSTID")
        s.call(1, "XACK", "s", "g", "1-0")
        s.call(1, "XGROUP", "DELCONSUMER", "s", "g", "c")
        s.call(1, "XGROUP", "DESTROY", "s", "g")
        s.call(2, "MULTI")
        s.call(2, "XLEN", "s")
        s.call(2, "EXEC")  # not touched
        s.call(2, "WATCH", "m")
        s.call(1, "XGROUP", "CREATE", "m", "g", "$", "MKSTREAM")
        s.call(2, "MULTI")
        s.call(2, "XLEN", "m")
        s.call(2, "EXEC")  # touched: null
    run(redis, body)


@pytest.mark.redis
def test_xgroup_create_mkstream_signals_blocked_readers(redis):
    """XGROUP-8: the new empty stream signals the key; a blocked XREAD re-checks and keeps waiting."""
    def body(s):
        s.send(2, "XREAD", "BLOCK", "0", "STREAMS", "k", "$")
        assert s.is_waiting(2)
        s.call(1, "XGROUP", "CREATE", "k", "g", "$", "MKSTREAM")
        assert s.is_waiting(2)
        s.call(1, "XADD", "k", "1-0", "f", "v")
        s.recv(2)
    run(redis, body, propagation=False)


@pytest.mark.redis
def test_xgroup_setid(redis):
    """XGROUP-11; §10-33: `-` is 0-0, `+` the maximum, `$` last-generated-id; entries-read reset."""
    def body(s):
        entries(s, n=3)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "0")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "2-0", "FORCE", "JUSTID")
        for id_arg in ("-", "+", "$", "2", " 1-1", "bad", "(1", "1-*", b"$\x00x"):
            s.call(1, "XGROUP", "SETID", "s", "g", id_arg)
            s.call(1, "XCLAIM", "s", "g", "c", "0", "3-0", "FORCE", "JUSTID")  # LASTID shows it
        s.call(1, "XGROUP", "SETID", "s", "g", "1", "ENTRIESREAD", "3")
        s.call(1, "XGROUP", "setid", "s", "g", "2", "entriesread", "-1")
        s.call(1, "XPENDING", "s", "g")  # the PEL is untouched
    run(redis, body)


@pytest.mark.redis
def test_xgroup_setid_entries_read_via_xinfo(redis):
    """XGROUP-11: ENTRIESREAD sets entries-read, its absence resets it to -1 (nil)."""
    def body(s):
        entries(s, n=3)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XGROUP", "SETID", "s", "g", "1", "ENTRIESREAD", "1")
        s.call(1, "XINFO", "GROUPS", "s")
        s.call(1, "XGROUP", "SETID", "s", "g", "+")
        s.call(1, "XINFO", "GROUPS", "s")
        s.call(1, "XGROUP", "SETID", "s", "g", "-", "ENTRIESREAD", "0")
        s.call(1, "XINFO", "GROUPS", "s")
    run(redis, body)


@pytest.mark.redis
@PROTOCOLS
def test_xgroup_consumers_and_destroy(redis, proto):
    """XGROUP-12 .. XGROUP-14, XGROUP-16; §10-38, §10-39 (DELCONSUMER drops, not reassigns)."""
    def body(s):
        speak(s, proto)
        entries(s)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "alice")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "alice")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", b"a\x00b")
        s.call(1, "XCLAIM", "s", "g", "alice", "0", "1-0", "2-0", "3-0", "FORCE", "JUSTID")
        s.call(1, "XCLAIM", "s", "g", "bob", "0", "4-0", "FORCE", "JUSTID")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XGROUP", "DELCONSUMER", "s", "g", "nobody")
        s.call(1, "XGROUP", "DELCONSUMER", "s", "g", "a")  # binary-safe: not 'a\0b'
        s.call(1, "XGROUP", "DELCONSUMER", "s", "g", b"a\x00b")
        s.call(1, "XGROUP", "DELCONSUMER", "s", "g", "alice")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XPENDING", "s", "g", "-", "+", "10")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "alice")  # it was deleted
        s.call(1, "XGROUP", "DESTROY", "s", "nog")
        s.call(1, "XGROUP", "DESTROY", "s", "g")
        s.call(1, "XGROUP", "DESTROY", "s", "g")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XPENDING", "s", "g")  # a new group: nothing of the old one survives
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "bob")
    run(redis, body)


@pytest.mark.redis
def test_xgroup_consumers_via_xinfo(redis):
    """XGROUP-13, XGROUP-14, XGROUP-16 as XINFO CONSUMERS shows them (§10-38)."""
    def body(s):
        entries(s, n=2)
        s.call(1, "XGROUP", "CREATE", "s", "", "0")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "", "")
        s.call(1, "XCLAIM", "s", "", "", "0", "1-0", "FORCE", "JUSTID")
        s.call(1, "XINFO", "GROUPS", "s")
        s.call(1, "XINFO", "CONSUMERS", "s", "")
    run(redis, body)


@pytest.mark.redis
def test_xgroup_destroy_wakes_blocked_xreadgroup(redis):
    """XGROUP-11 (SETID does not wake), XGROUP-12 (DESTROY signals the key); §10-65, §10-69."""
    def body(s):
        entries(s, n=1)
        s.call(1, "XGROUP", "CREATE", "s", "g", "$")
        s.call(1, "XGROUP", "CREATE", "s", "other", "$")
        s.send(2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
        assert s.is_waiting(2)
        s.call(1, "XGROUP", "SETID", "s", "g", "0")
        assert s.is_waiting(2)
        # Destroying another group still signals the key: the client re-checks and finds 1-0.
        s.call(1, "XGROUP", "DESTROY", "s", "other")
        s.recv(2)
        s.send(2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
        assert s.is_waiting(2)
        s.call(1, "XGROUP", "DESTROY", "s", "nog")
        assert s.is_waiting(2)
        s.call(1, "XGROUP", "DESTROY", "s", "g")
        assert is_error(s.recv(2), "NOGROUP")
    run(redis, body, propagation=False)


# -- XACK --------------------------------------------------------------------------------


@pytest.mark.redis
def test_xack(redis):
    """XACK-1 .. XACK-4; §10-40."""
    def body(s):
        entries(s)
        s.call(1, "SET", "str", "x")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XCLAIM", "s", "g", "a", "0", "1-0", "2-0", "3-0", "FORCE", "JUSTID")
        s.call(1, "XCLAIM", "s", "g", "b", "0", "4-0", "FORCE", "JUSTID")
        assert s.call(1, "XACK", "nokey", "g", "bad") == Int(0)
        s.call(1, "XACK", "s", "nog", "bad")
        s.call(1, "XACK", "str", "g", "bad")
        s.call(1, "XACK", "s", "g", "1-0", "bad")  # all or nothing
        s.call(1, "XACK", "s", "g", "1-0", "-")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XACK", "s", "g", "1-0", "1-0", "9-0")
        s.call(1, "XACK", "s", "g", "9-0")
        s.call(1, "XACK", "s", "g", "1")
        s.call(1, "xack", "s", "g", "2", b"4-0\x00junk")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "b")  # consumers stay
        s.call(1, "XACK", "s", "g", "3-0")
        s.call(1, "XPENDING", "s", "g")
    run(redis, body)


# -- XPENDING ----------------------------------------------------------------------------


@pytest.mark.redis
def test_xpending_argument_rules(redis):
    """XPENDING-1 .. XPENDING-6; §10-45, §10-47."""
    def body(s):
        entries(s)
        s.call(1, "SET", "str", "x")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XCLAIM", "s", "g", "alice", "0", "1-0", "2-0", "FORCE", "JUSTID")
        s.call(1, "XCLAIM", "s", "g", "bob", "0", "3-0", "FORCE", "JUSTID")
        for args in (
            ["-", "+"], ["x"], ["x", "y", "z", "w", "v", "u", "t"],
            ["IDLE", "10", "-", "+"], ["IDLE", "abc", "-", "+", "10"], ["IDLE", "abc", "-", "+"],
            ["IDLE", "10", "-", "+", "abc"], ["IDLE", "10", "-", "+", "10", "x", "y", "z"],
            ["idle", "1.5", "-", "+", "10"],
            ["-", "+", "abc"], ["bad", "+", "10"], ["-", "bad", "10"], ["bad", "+", "abc"],
            ["(", "+", "10"], ["(-", "+", "10"], ["-", "(+", "10"],
            ["(18446744073709551615-18446744073709551615", "+", "10"], ["-", "(0-0", "10"],
            ["(18446744073709551615-18446744073709551615", "(0-0", "10"],
            ["-", "+", "-5"], ["-", "+", "0"], ["-", "+", "10", "nobody"],
            ["-", "+", "10", b"alice\x00"], ["-", "+", "10", "alice", "junk", "junk2"],
            ["5", "1", "10"], [b"IDLE\x00x", "0", "-", "+", "10"], [b"IDLE\x00x", "0", "-", "+"],
        ):
            s.call(1, "XPENDING", "s", "g", *args)
        s.call(1, "XPENDING", "str", "g")
        s.call(1, "XPENDING", "str", "g", "-", "+", "abc")
        s.call(1, "XPENDING", "str", "g", "-", "+", "10")
        s.call(1, "XPENDING", "nokey", "g")
        s.call(1, "XPENDING", "nokey", "g", "-", "+", "10")
        s.call(1, "XPENDING", "s", "nog")
        s.call(1, "XPENDING", b"s\nx", b"g\x00y")
    run(redis, body)


@pytest.mark.redis
@PROTOCOLS
def test_xpending_summary(redis, proto):
    """XPENDING-7, XPENDING-8; §10-46 (bulk-string counts, empty PEL nulls, idle consumers left out)."""
    def body(s):
        speak(s, proto)
        entries(s)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "carol")
        s.call(1, "XCLAIM", "s", "g", "bob", "0", "5-0", "3-0", "FORCE", "JUSTID")
        s.call(1, "XCLAIM", "s", "g", "alice", "0", "2-0", "FORCE", "JUSTID")
        s.call(1, "XCLAIM", "s", "g", "B", "0", "4-0", "FORCE", "JUSTID")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XACK", "s", "g", "2-0", "3-0", "4-0", "5-0")
        s.call(1, "XPENDING", "s", "g")
    run(redis, body)


@pytest.mark.redis
@PROTOCOLS
def test_xpending_extended(redis, proto):
    """XPENDING-9 .. XPENDING-11; §10-47 (IDLE filter does not use COUNT, IDLE -5 filters nothing)."""
    def body(s):
        speak(s, proto)
        entries(s)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XCLAIM", "s", "g", "alice", "0", "1-0", "3-0", "FORCE", "JUSTID", "IDLE", "500000")
        s.call(1, "XCLAIM", "s", "g", "bob", "0", "2-0", "4-0", "FORCE", "RETRYCOUNT", "7")
        s.call(1, "XCLAIM", "s", "g", "alice", "0", "5-0", "FORCE", "TIME", "1000")
        for args in (
            ["-", "+", "10"], ["-", "+", "2"], ["(1", "(4", "10"], ["(1", "(4-0", "10"],
            ["2", "2", "10"], ["4", "2", "10"], ["-", "+", "10", "alice"], ["-", "+", "1", "bob"],
            ["IDLE", "100000", "-", "+", "2"], ["IDLE", "100000", "-", "+", "10", "bob"],
            ["IDLE", "-5", "-", "+", "10"], ["IDLE", "0", "-", "+", "10", "alice"],
            ["IDLE", "9223372036854775807", "-", "+", "10"],
        ):
                s.call(1, "XPENDING", "s", "g", *args)
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "carol")
        s.call(1, "XPENDING", "s", "g", "-", "+", "10", "carol")
    run(redis, body)


# -- XCLAIM ------------------------------------------------------------------------------


@pytest.mark.redis
def test_xclaim_argument_errors(redis):
    """XCLAIM-1 .. XCLAIM-5; §10-48, §10-49. Errors change nothing and propagate nothing."""
    def body(s):
        entries(s)
        s.call(1, "SET", "str", "x")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XCLAIM", "nokey", "g", "c", "abc", "1-0")  # NOGROUP before min-idle
        s.call(1, "XCLAIM", "str", "g", "c", "abc", "1-0")
        s.call(1, "XCLAIM", "s", "nog", "c", "abc", "1-0")
        s.call(1, "XCLAIM", "s", "g", "c", "abc", "1-0")
        s.call(1, "XCLAIM", "s", "g", "c", "1.5", "1-0")
        for tail in (
            ["1-0", "bad", "2-0"], ["-"], ["+"], ["1-0", "IDLE"], ["1-0", "IDLE", "abc"],
            ["1-0", "TIME", "abc"], ["1-0", "RETRYCOUNT", "abc"], ["1-0", "LASTID", "abc"],
            ["1-0", "LASTID", "-"], ["1-0", "FORCE", "2-0"], ["1-0", "LASTID", "100", "BADOPT"],
            ["1-0", "IDLE", "abc", "LASTID", "bad"], ["1-0", "LASTID", "bad", "IDLE", "abc"],
            ["1-0", b"a\r\nb"], ["1-0", b"ab\x00cd"], ["1-0", "FORCE", "JUSTID", "RETRYCOUNT"],
        ):
            s.call(1, "XCLAIM", "s", "g", "c", "0", *tail)
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "c")  # 1: no error created it
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "FORCE", "JUSTID")  # LASTID still 0-0
    run(redis, body)


@pytest.mark.redis
@PROTOCOLS
def test_xclaim_replies_and_delivery_counts(redis, proto):
    """XCLAIM-8, XCLAIM-10, XCLAIM-11, XCLAIM-14 .. XCLAIM-16; §10-50, §10-51."""
    def body(s):
        speak(s, proto)
        entries(s, n=4)
        s.call(1, "XADD", "s", "5-0", "a", "b", "a", "d")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "2-0")  # not pending, no FORCE: nothing
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "2-0", "FORCE", "JUSTID")  # count 1
        s.call(1, "XCLAIM", "s", "g", "c2", "0", "1-0", "FORCE")  # pending: +1
        s.call(1, "XCLAIM", "s", "g", "c2", "0", "3-0", "FORCE")  # new NACK 1, then +1 = 2
        s.call(1, "XCLAIM", "s", "g", "c2", "0", "2-0", "2-0", "JUSTID")  # duplicates, count kept
        s.call(1, "XCLAIM", "s", "g", "c2", "0", "2-0", "2-0")  # +1 each time
        s.call(1, "XCLAIM", "s", "g", "c2", "0", "2-0", "RETRYCOUNT", "-3")  # ignored: +1
        s.call(1, "XCLAIM", "s", "g", "c2", "0", "2-0", "RETRYCOUNT", "7", "JUSTID")
        s.call(1, "XCLAIM", "s", "g", "c2", "0", "2-0", "RETRYCOUNT", "0", "RETRYCOUNT", "9")
        s.call(1, "XCLAIM", "s", "g", "c2", "0", "5-0", "99-0", "FORCE")  # 99-0 has no entry
        s.call(1, "XCLAIM", "s", "g", "c3", "-5", "1-0", " 2-0", b"3-0\x00zz", "3", "JUSTID")
        s.call(1, "xclaim", "s", "g", "c3", "0", "1", "force", "justid", "Force", "JustId")
        s.call(1, "XCLAIM", "s", "g", "c4", "0", "4-0", b"FORCE\x00x", b"JUSTID\x00")
        s.call(1, "XCLAIM", "s", "g", "", "0", "4-0", "FORCE", "RETRYCOUNT", "9223372036854775807")
        s.call(1, "XCLAIM", "s", "g", "", "0", "4-0")  # past 2^63 - 1: shown negative
        s.call(1, "XAUTOCLAIM", "s", "g", "", "0", "4-0", "COUNT", "1")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XPENDING", "s", "g", "-", "+", "10")
    run(redis, body)


@pytest.mark.redis
def test_xclaim_delivery_time(redis):
    """XCLAIM-4, XCLAIM-7, XCLAIM-12; §10-52 (TIME in the future, negative IDLE: now)."""
    def body(s):
        entries(s, n=3)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        for options in (
            ["IDLE", "5000000"], ["IDLE", "-100"], ["TIME", "99999999999999"], ["TIME", "1000"],
            ["TIME", "-1"], ["TIME", "-5"], ["IDLE", "9223372036854775807"],
            ["IDLE", "-9223372036854775808"], ["TIME", "1000", "IDLE", "20000"],
            ["IDLE", "20000", "TIME", "1000"], [],
        ):
                s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "FORCE", "JUSTID", *options)
        s.call(1, "XPENDING", "s", "g", "-", "+", "10")
        s.call(1, "XCLAIM", "s", "g", "d", "0", "2-0", "3-0", "FORCE", "JUSTID", "IDLE", "100000")
        s.call(1, "XCLAIM", "s", "g", "e", "50000", "2-0", "2-0", "JUSTID")  # second one too fresh
        s.call(1, "XCLAIM", "s", "g", "e", "50000", "3-0", "3-0", "JUSTID", "IDLE", "90000")
        s.call(1, "XCLAIM", "s", "g", "f", "9223372036854775807", "2-0", "3-0")
        s.call(1, "XPENDING", "s", "g", "-", "+", "10")
    run(redis, body)


@pytest.mark.redis
def test_xclaim_min_idle_and_lazy_consumer(redis):
    """XCLAIM-12, XCLAIM-13; §10-53 (min-idle not met: empty reply, no consumer created in 7.0)."""
    def body(s):
        entries(s, n=3)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XCLAIM", "s", "g", "owner", "0", "1-0", "2-0", "FORCE", "JUSTID")
        s.call(1, "XCLAIM", "s", "g", "thief", "3600000", "1-0", "2-0")
        s.call(1, "XCLAIM", "s", "g", "thief", "0", "9-0", "3-0")  # nothing pending, no FORCE
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "thief")  # 1: it did not exist
        s.call(1, "XGROUP", "DELCONSUMER", "s", "g", "thief")
        s.call(1, "XCLAIM", "s", "g", "thief", "0", "1-0", "JUSTID")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "thief")  # 0: the claim created it
        s.call(1, "XPENDING", "s", "g")
    run(redis, body)


@pytest.mark.redis
def test_claim_min_idle_boundaries(redis):
    """XCLAIM-12, XAUTOCLAIM-8: skipped only when idle is strictly less than min-idle-time.

    Whether a millisecond passes between two commands is up to the machine; the
    model must explain whichever outcome the server produced.
    """
    def body(s):
        entries(s, n=3)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XCLAIM", "s", "g", "a", "0", "1-0", "2-0", "3-0", "FORCE", "JUSTID", "IDLE", "5000")
        s.call(1, "XCLAIM", "s", "g", "b", "5000", "1-0", "JUSTID")
        s.call(1, "XCLAIM", "s", "g", "b", "5001", "2-0", "JUSTID")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "5001", "3-0", "JUSTID")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "5000", "3-0", "JUSTID")
        s.call(1, "XPENDING", "s", "g", "IDLE", "1", "-", "+", "10")
    run(redis, body)


@pytest.mark.redis
def test_seen_time_of_claiming_consumers(redis):
    """XCLAIM-13, XAUTOCLAIM-9, XGROUP-13: seen-time is set at creation and at the first claim only."""
    def body(s):
        entries(s, n=3)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "a")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "b")
        s.call(1, "XCLAIM", "s", "g", "a", "0", "1-0", "2-0", "FORCE", "JUSTID")
        time.sleep(0.004)
        s.call(1, "XCLAIM", "s", "g", "b", "3600000", "1-0")  # claims nothing: b untouched
        s.call(1, "XAUTOCLAIM", "s", "g", "a", "3600000", "0")  # claims nothing: a untouched
        s.call(1, "XINFO", "CONSUMERS", "s", "g")
        time.sleep(0.003)
        s.call(1, "XAUTOCLAIM", "s", "g", "b", "0", "0", "COUNT", "1", "JUSTID")
        s.call(1, "XINFO", "CONSUMERS", "s", "g")
    run(redis, body)


@pytest.mark.redis
def test_xclaim_lastid(redis):
    """XCLAIM-5, XCLAIM-6, XCLAIM-16; §10-54 (LASTID moves the group even with no claim)."""
    def body(s):
        entries(s, n=2)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "1")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "LASTID", "3000", "LASTID", "2600")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "9-0", "LASTID", "5000", "LASTID", "100")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "9-0", "LASTID", "100", "LASTID", "5000")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "9-0", "LASTID", "5000")  # not greater: nothing
        s.call(1, "XCLAIM", "s", "g", "c", "0", "LASTID", "6000")  # no IDs at all
        s.call(1, "XCLAIM", "s", "g", "c", "0", "FORCE")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "2-0", "FORCE", "JUSTID", "LASTID", "7000")
        s.call(1, "XGROUP", "SETID", "s", "g", "0")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "LASTID", "5", "JUSTID")
    run(redis, body)


@pytest.mark.redis
def test_xclaim_lastid_via_xinfo(redis):
    """XCLAIM-6: LASTID changes last-delivered-id but not entries-read (XINFO GROUPS)."""
    def body(s):
        entries(s, n=2)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "1")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "LASTID", "1000")
        s.call(1, "XINFO", "GROUPS", "s")
    run(redis, body)


@pytest.mark.redis
def test_xclaim_deleted_entries(redis):
    """XCLAIM-9, XCLAIM-16; §10-44, §10-55 (deleted or trimmed PEL entries are dropped)."""
    def body(s):
        entries(s, n=6)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XCLAIM", "s", "g", "a", "0", "1-0", "2-0", "3-0", "4-0", "FORCE", "JUSTID")
        s.call(1, "XCLAIM", "s", "g", "b", "0", "5-0", "FORCE", "RETRYCOUNT", "4", "IDLE", "3000")
        s.call(1, "XDEL", "s", "3-0", "5-0")
        s.call(1, "XTRIM", "s", "MAXLEN", "=", "2")  # 1-0 and 2-0 go; their PEL entries stay
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "3-0", "3", "4-0", "5-0", "JUSTID", "LASTID", "2500")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "3-0", "7-0", "FORCE")  # gone, no NACK: nothing
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "LASTID", "3000")  # removal, no SETID
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "2-0", "9999999", "LASTID", "3001", "FORCE")
        s.call(1, "XPENDING", "s", "g")
    run(redis, body)


@pytest.mark.redis
def test_xclaim_in_multi(redis):
    """XCLAIM-16 inside MULTI/EXEC: the derived commands are propagated inside the transaction."""
    def body(s):
        entries(s, n=2)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "MULTI")
        s.call(1, "XCLAIM", "s", "g", "c", "0", "1-0", "2-0", "FORCE", "JUSTID")
        s.call(1, "XCLAIM", "s", "g", "d", "0", "9-0", "LASTID", "10")
        s.call(1, "XACK", "s", "g", "1-0")
        s.call(1, "XAUTOCLAIM", "s", "g", "e", "0", "0")
        s.call(1, "EXEC")
    run(redis, body)


# -- XAUTOCLAIM ------------------------------------------------------------------------------


@pytest.mark.redis
def test_xautoclaim_argument_rules(redis):
    """XAUTOCLAIM-1 .. XAUTOCLAIM-4; §10-56 (option errors come before NOGROUP)."""
    def body(s):
        entries(s, n=2)
        s.call(1, "SET", "str", "x")
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        for tail in (
            ["0", "bad"], ["abc", "0"], ["1.5", "bad"], ["0", "0", "COUNT", "0"],
            ["0", "0", "COUNT", "abc"], ["0", "0", "COUNT", "1000000000000000000"],
            ["0", "0", "COUNT", "576460752303423488"], ["0", "0", "COUNT", "-1"],
            ["0", "0", "COUNT"], ["0", "0", "FOO"], ["0", "0", "JUSTID", "COUNT"],
            ["0", "(18446744073709551615-18446744073709551615"], ["0", "("], ["0", "(-"],
            ["0", "0", "COUNT", "5", "JUSTID"], ["0", "0", b"COUNT\x00x", "0"],
        ):
            s.call(1, "XAUTOCLAIM", "nokey", "g", "c", *tail)
        s.call(1, "XAUTOCLAIM", "str", "g", "c", "0", "0")
        s.call(1, "XAUTOCLAIM", "str", "g", "c", "0", "bad")
        s.call(1, "XAUTOCLAIM", "s", "nog", "c", "0", "0")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "0")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "c")  # 1: nothing claimed, not created
    run(redis, body)


@pytest.mark.redis
@PROTOCOLS
def test_xautoclaim_claims(redis, proto):
    """XAUTOCLAIM-6, XAUTOCLAIM-9 .. XAUTOCLAIM-11; §10-57 (`+`, exclusive start, COUNT)."""
    def body(s):
        speak(s, proto)
        entries(s)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XCLAIM", "s", "g", "a", "0", "1-0", "2-0", "3-0", "4-0", "5-0", "FORCE", "JUSTID")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "+")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "(1", "COUNT", "2")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "3", "COUNT", "1", "count", "2", "JUSTID")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "(5")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "5-0")
        s.call(1, "XAUTOCLAIM", "s", "g", "d", "-5", "-", "JUSTID")
        s.call(1, "XAUTOCLAIM", "s", "g", "e", "3600000", "-")
        s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "e")  # 1: the claim found nothing idle
        s.call(1, "XAUTOCLAIM", "s", "g", "d", "0", "18446744073709551615-18446744073709551615")
        s.call(1, "XPENDING", "s", "g")
    run(redis, body)


@pytest.mark.redis
def test_xautoclaim_attempt_budget(redis):
    """XAUTOCLAIM-6, XAUTOCLAIM-8, XAUTOCLAIM-10; §10-57 (25 fresh entries, COUNT 1: cursor 11-0)."""
    def body(s):
        entries(s, n=25)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XCLAIM", "s", "g", "a", "0", *[f"{i}-0" for i in range(1, 26)], "FORCE", "JUSTID")
        s.call(1, "XCLAIM", "s", "g", "a", "0", "12-0", "25-0", "JUSTID", "IDLE", "7200000")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "3600000", "-", "COUNT", "1")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "3600000", "11-0", "COUNT", "1")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "3600000", "13-0", "COUNT", "1", "JUSTID")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "3600000", "23-0", "COUNT", "1")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "3600000", "-", "COUNT", "3")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "-", "COUNT", "2")
    run(redis, body)


@pytest.mark.redis
@PROTOCOLS
def test_xautoclaim_deleted_entries(redis, proto):
    """XAUTOCLAIM-7, XAUTOCLAIM-11; §10-44, §10-58 (deleted entries use COUNT and are listed)."""
    def body(s):
        speak(s, proto)
        entries(s, n=6)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XCLAIM", "s", "g", "a", "0", "1-0", "2-0", "3-0", "4-0", "5-0", "6-0", "FORCE",
               "JUSTID")
        s.call(1, "XDEL", "s", "1-0", "2-0", "3-0")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "-", "COUNT", "2")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "-", "COUNT", "2")
        s.call(1, "XTRIM", "s", "MAXLEN", "=", "1")
        s.call(1, "XAUTOCLAIM", "s", "g", "c", "3600000", "-", "JUSTID")
        s.call(1, "XPENDING", "s", "g")
    run(redis, body)


# -- with XREADGROUP -------------------------------------------------------------------------


@pytest.mark.redis
def test_setid_back_then_redelivery(redis):
    """§10-31 and §10-32: after SETID 0, `>` moves existing NACKs (count reset to 1), NOACK leaves them."""
    def body(s):
        entries(s, n=3)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
        s.call(1, "XCLAIM", "s", "g", "alice", "0", "1-0", "JUSTID", "RETRYCOUNT", "5")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XGROUP", "SETID", "s", "g", "0")
        s.call(1, "XREADGROUP", "GROUP", "g", "bob", "NOACK", "COUNT", "1", "STREAMS", "s", ">")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XCLAIM", "s", "g", "bob", "0", "1-0", "2-0", "JUSTID")  # counts: 1 and 1
        s.call(1, "XACK", "s", "g", "1-0", "2-0")
    run(redis, body)


@pytest.mark.redis
def test_xclaim_after_xreadgroup(redis):
    """XCLAIM-12 .. XCLAIM-16 on entries delivered by XREADGROUP, with XACK and XPENDING."""
    def body(s):
        entries(s, n=4)
        s.call(1, "XGROUP", "CREATE", "s", "g", "0")
        s.call(1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
        s.call(1, "XCLAIM", "s", "g", "bob", "3600000", "1-0", "2-0")
        s.call(1, "XCLAIM", "s", "g", "bob", "0", "1-0", "2-0")
        s.call(1, "XAUTOCLAIM", "s", "g", "carol", "0", "0", "COUNT", "1")
        s.call(1, "XACK", "s", "g", "3-0", "4-0")
        s.call(1, "XPENDING", "s", "g")
        s.call(1, "XGROUP", "DELCONSUMER", "s", "g", "alice")
        s.call(1, "XPENDING", "s", "g")
    run(redis, body)


# -- the model alone -------------------------------------------------------------------------


def test_model_reads_the_clock_where_redis_does():
    """XCLAIM-4, XCLAIM-10, XCLAIM-13, XAUTOCLAIM-6, XGROUP-13: the number of clock readings."""
    clock = ManualClock(1_000_000)
    m = Server(clock=clock)
    stream = Stream()
    for seq in (1, 2):
        stream.entries[StreamID(seq, 0)] = (b"f", b"v")
    stream.last_id = StreamID(2, 0)
    m.dbs[0][b"s"] = stream
    m.execute(1, [b"XGROUP", b"CREATE", b"s", b"g", b"0"])

    def readings(*argv: str) -> int:
        before = clock.readings
        m.execute(1, [a.encode() for a in argv])
        return clock.readings - before

    assert readings("XGROUP", "CREATECONSUMER", "s", "g", "c") == 1
    assert readings("XGROUP", "CREATECONSUMER", "s", "g", "c") == 0
    assert readings("XCLAIM", "s", "g", "c", "0", "1-0") == 1  # now only: nothing claimed
    # now, the FORCE NACK's own time, the consumer's seen-time
    assert readings("XCLAIM", "s", "g", "c", "0", "1-0", "FORCE", "JUSTID") == 3
    assert readings("XCLAIM", "s", "g", "d", "0", "1-0", "1-0", "JUSTID") == 2
    assert readings("XAUTOCLAIM", "s", "g", "e", "0", "0") == 2
    assert readings("XAUTOCLAIM", "s", "g", "e", "3600000", "0") == 1
    assert readings("XPENDING", "s", "g", "-", "+", "10") == 1
    assert readings("XPENDING", "s", "g", "-", "+", "10", "nobody") == 0
    assert readings("XPENDING", "s", "g") == 0


def test_model_keeps_the_pel_invariants_under_random_group_commands():
    """INV-6 .. INV-8 after every step of a seeded random mix of this family's commands."""
    rng = random.Random(20260)
    clock = ManualClock(1_000_000)
    m = Server(clock=clock)
    stream = Stream()
    for seq in range(1, 9):
        stream.entries[StreamID(seq, 0)] = (b"f", b"%d" % seq)
    stream.last_id = StreamID(8, 0)
    stream.first_id = StreamID(1, 0)
    stream.entries_added = 8
    m.dbs[0][b"s"] = stream
    m.execute(1, [b"XGROUP", b"CREATE", b"s", b"g", b"0"])

    def some_ids() -> list[str]:
        return [f"{rng.randint(1, 10)}-0" for _ in range(rng.randint(1, 4))]

    makers: list[Callable[[], list[str]]] = [
        lambda: ["XCLAIM", "s", "g", rng.choice("abc"), str(rng.choice([0, 5, 50])), *some_ids(),
                 *rng.choice([[], ["FORCE"], ["FORCE", "JUSTID"], ["IDLE", "20"], ["RETRYCOUNT", "3"]])],
        lambda: ["XAUTOCLAIM", "s", "g", rng.choice("abc"), str(rng.choice([0, 5, 50])),
                 rng.choice(["-", "3", "(4"]), "COUNT", str(rng.randint(1, 4))],
        lambda: ["XACK", "s", "g", *some_ids()],
        lambda: ["XGROUP", "DELCONSUMER", "s", "g", rng.choice("abc")],
        lambda: ["XGROUP", "CREATECONSUMER", "s", "g", rng.choice("abcd")],
        lambda: ["XPENDING", "s", "g", "-", "+", "10"],
    ]
    for _ in range(400):
        clock.advance(rng.randint(0, 10))
        if rng.random() < 0.05 and stream.entries:  # an entry disappears (as XDEL would)
            del stream.entries[rng.choice(list(stream.entries))]
        argv = rng.choice(makers)()
        m.execute(1, [a.encode() for a in argv])
        broken = [v for v in violations(m) if v.split(": ", 1)[-1].startswith(("INV-6", "INV-7", "INV-8"))]
        assert not broken, f"after {argv}: {broken}"


def test_a_straddling_command_may_have_read_either_millisecond() -> None:
    """The propagation check's fallback: a claim answered one millisecond after it was sent is explained
    by a clock read in that later millisecond, and a delivery time in neither is still caught."""
    def call(cmd: list[bytes], t0: int, t1: int) -> Call:
        return Call(c=1, cmd=cmd, reply=None, t0=t0, t1=t1)

    trace = Trace(Header(title="straddle", source="generated"), [
        Connect(c=1),
        call([b"XGROUP", b"CREATE", b"s", b"g", b"$", b"MKSTREAM"], 100_000, 100_100),
        call([b"XADD", b"s", b"1-1", b"f", b"v"], 100_200, 100_300),
        call([b"XREADGROUP", b"GROUP", b"g", b"a", b"STREAMS", b"s", b">"], 100_400, 100_500),
        call([b"XCLAIM", b"s", b"g", b"b", b"0", b"1-1"], 100_900, 101_100),
    ])
    later = model_propagation(trace, {4: 101})
    assert later != model_propagation(trace)  # the claim's delivery time shows the millisecond
    assert propagation_explained(trace, later) is None
    wrong = model_propagation(trace, {4: 102})
    assert propagation_explained(trace, wrong) is not None
