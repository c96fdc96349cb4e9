"""Keyspace notifications of SPOP, BRPOPLPUSH and BLMPOP (spec/rules/notify.md NOTIFY-4; sets.md SETS-12,
SETS-13; lists.md BLIST-11, BLIST-12), recorded on every dialect's real server as traces/scenarios/notify.py
records its scenarios: the model must explain each recording (a pop's draw searched), and the reference must
send the same events (its own draw)."""

from __future__ import annotations

import pytest

from tests.real_servers import SERVER_FIXTURES
from tests.test_keyspace_notifications import record
from tests.test_pubsub import DIALECTS
from xspec.reference.server import ServerThread
from xspec.spec.resp import Array, Bulk, Push
from xspec.spec.trace_format import Push as PushEvent
from xspec.spec.trace_format import Trace
from xspec.traces.check.checker import check_trace
from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import block
from xspec.traces.scenarios.notify import enable, listen, step
from xspec.traces.scenarios.registry import Scenario

pytestmark = pytest.mark.redis


def _pops(r: Recorder) -> None:
    listen(r)
    enable(r, "KEA")
    step(r, "SADD", "s", "a", "b", "c", "d")
    step(r, "SPOP", "s")  # NOTIFY-4: spop
    step(r, "SPOP", "s", "2")
    step(r, "SPOP", "s", "9")  # spop, then del
    step(r, "SPOP", "s", "0")
    step(r, "RPUSH", "l", "x", "y", "z")
    step(r, "BRPOPLPUSH", "l", "d", "0")  # rpop, lpush
    if not r.header.server_version.startswith("6."):
        step(r, "BLMPOP", "0", "1", "l", "LEFT", "COUNT", "5")  # lpop, del
    block(r, 3, "BRPOPLPUSH", "q", "d", "0")
    step(r, "RPUSH", "q", "1")  # served: rpush, rpop, lpush, del
    r.recv(3)
    enable(r, "")


POPS = Scenario(topic="notify", name="pops", title="SPOP, BRPOPLPUSH and BLMPOP events", run=_pops)


def _shape(trace: Trace) -> list[object]:
    """The events without times; SPOP's reply (a draw) only by its length."""
    out: list[object] = []
    for e in trace.events:
        reply = getattr(e, "reply", None)
        cmd = getattr(e, "cmd", None)
        if reply is None or (cmd and cmd[0].upper() == b"HELLO"):
            continue
        if cmd and cmd[0].upper() == b"SPOP":
            reply = len(getattr(reply, "items", ())) if isinstance(reply, Array) else type(reply).__name__
        out.append((type(e).__name__, e.c, reply))  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize("dialect", DIALECTS)
def test_pop_events(request: pytest.FixtureRequest, reference_servers_by_dialect: dict[str, ServerThread],
                    dialect: str) -> None:
    """NOTIFY-4 for the pops: the real server's events conform; the reference sends the same ones."""
    try:
        server = request.getfixturevalue(SERVER_FIXTURES[dialect])
    except pytest.skip.Exception:
        pytest.skip(f"no real server for {dialect}")
    name, version = DIALECTS[dialect]
    real = record(server.host, server.port, POPS, name, server.version)
    assert any(isinstance(e, PushEvent) and isinstance(e.reply, Array | Push) and Bulk(b"spop") in e.reply.items
               for e in real.events)
    verdict = check_trace(real)
    assert verdict.status == "conform", (verdict.event, verdict.message, verdict.got, verdict.allowed)
    ref = record("127.0.0.1", reference_servers_by_dialect[dialect].port, POPS, name, version)
    assert _shape(ref) == _shape(real)
