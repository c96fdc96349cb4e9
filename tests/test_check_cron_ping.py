"""The primary's cron PING between a client's send and its command's propagation (REPL-13).

The cron feeds a PING into the replication stream once a `repl-ping-replica-period`; a command a
client has sent but the server has not read yet runs after it, so the proxy sees the PING between
the client's ``send`` and that command's propagation. The trace/2 checker must accept that order,
and still refuse the orders no server produces. Forged from a real Valkey 9.1.2 recording by
moving its one PING (recorded after the setup's acknowledgement, before the XGROUP's ``send``).
"""

from __future__ import annotations

import dataclasses

import pytest

from xspec.spec.trace_format import ReplCmd, Send, Trace, load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.checker import check_trace

RECORDING = CORPUS_DIR / "replication" / "explore" / "valkey-9.1.2" / "async-1r-no-history" / "consumer-persists.jsonl"


def _moved(where: str) -> Trace:
    """The recording with its PING moved: ``where`` names the event it now follows."""
    trace = load(RECORDING)
    events = list(trace.events)
    ping = next(i for i, e in enumerate(events) if isinstance(e, ReplCmd) and e.cmd == [b"ping"])
    moved = events.pop(ping)
    send = next(i for i, e in enumerate(events) if isinstance(e, Send))
    after = {"send": send, "select": send + 1, "propagation": send + 2, "recv": send + 3}[where]
    assert isinstance(moved, ReplCmd)
    t = getattr(events[after], "t", None)
    events.insert(after + 1, dataclasses.replace(moved, t=None if t is None else t + 1))
    return dataclasses.replace(trace, events=events)


def test_the_recording_conforms() -> None:
    verdict = check_trace(load(RECORDING))
    assert verdict.status == "conform", verdict.describe()


@pytest.mark.parametrize("where", ["send", "propagation", "recv"])
def test_a_ping_while_the_command_waits_conforms(where: str) -> None:
    """After the send the write may run after the PING (the checker assumed it ran before)."""
    verdict = check_trace(_moved(where))
    assert verdict.status == "conform", verdict.describe()


def test_a_ping_inside_a_propagated_command_diverges() -> None:
    """SELECT and the command it introduces are fed together: no PING comes between them."""
    verdict = check_trace(_moved("select"))
    assert verdict.status == "diverge", verdict.describe()
    assert "ping" in verdict.describe()


def test_a_ping_the_stream_cannot_hold_there_diverges() -> None:
    """The reply came before the PING and the propagation after it: the write ran before the PING, so
    its propagation precedes the PING in the stream."""
    trace = load(RECORDING)
    events = list(trace.events)
    ping = next(i for i, e in enumerate(events) if isinstance(e, ReplCmd) and e.cmd == [b"ping"])
    moved = events.pop(ping)
    send = next(i for i, e in enumerate(events) if isinstance(e, Send))
    select, command, recv = events[send + 1:send + 4]
    events[send + 1:send + 4] = [recv, moved, select, command]
    verdict = check_trace(dataclasses.replace(trace, events=events))
    assert verdict.status == "diverge", verdict.describe()
