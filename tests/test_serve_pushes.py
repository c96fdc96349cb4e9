"""``xspec serve --trace`` and ``--checked`` with messages the server sends on its own: Pub/Sub
messages, keyspace notifications and CLIENT TRACKING invalidations are ``push`` events, a
multi-channel (UN)SUBSCRIBE is a ``send`` and a ``recv`` per confirmation, and a trace with pushes
is written as ``trace/2`` with one node (spec/trace-format.md; reference/trace.py).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from tests.pubsub_session import messages, session
from tests.support import checked_run
from xspec.commands.serve import model_checker
from xspec.reference.server import ServerThread
from xspec.spec.resp import Array, Bulk, Int, Push
from xspec.spec.trace_format import FORMAT, FORMAT_2, Call, Recv, Send, Trace, load
from xspec.spec.trace_format import Push as PushEvent
from xspec.traces.check.checker import check_trace


@pytest.mark.parametrize("dialect", ["redis-7.0", "redis-7.2", "valkey-9.1"])
@pytest.mark.parametrize("proto", [2, 3])
def test_pushes_are_recorded_and_judged(dialect: str, proto: int, tmp_path: Path,
                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="xspec.serve")
    path = tmp_path / "serve.jsonl"
    with ServerThread(dialect=dialect, checker=model_checker, trace=str(path)) as st:
        received = session(st.port, proto)
        checker = checked_run(st)
    assert checker.divergences == 0, caplog.text  # --checked compared each push with the model's
    assert "observer" not in caplog.text, caplog.text
    trace = load(path)
    assert trace.header.nodes is not None and len(trace.header.nodes) == 1  # trace/2, one node
    assert path.read_text().startswith(f'{{"xspec": "{FORMAT_2}"')
    pushes = [e for e in trace.events if isinstance(e, PushEvent)]
    assert len(pushes) >= received  # the messages the clients read, and none lost from the trace
    subscribe = next(i for i, e in enumerate(trace.events) if isinstance(e, Send) and e.cmd
                     and e.cmd[0].upper() == b"SUBSCRIBE")
    confirmations = [e for e in trace.events[subscribe + 1:subscribe + 3] if isinstance(e, Recv)]
    assert [c.reply.items[1] for c in confirmations] == [Bulk(b"a"), Bulk(b"b")]  # type: ignore[attr-defined]
    verdict = check_trace(trace)
    assert verdict.status == "conform", (verdict.event, verdict.message, verdict.got, verdict.allowed)
    # The check can fail: a message the server did not send is refused at its event.
    i = next(i for i, e in enumerate(trace.events)
             if isinstance(e, PushEvent) and Bulk(b"hello") in getattr(e.reply, "items", ()))
    e = trace.events[i]
    assert isinstance(e, PushEvent) and isinstance(e.reply, Array | Push)
    wrong = type(e.reply)((*e.reply.items[:-1], Bulk(b"not-sent")))
    events = list(trace.events)
    events[i] = replace(e, reply=wrong)
    verdict = check_trace(Trace(trace.header, events))
    assert verdict.status == "diverge" and verdict.event == i + 1


def test_a_trace_without_pushes_stays_version_1(tmp_path: Path) -> None:
    path = tmp_path / "serve.jsonl"
    with ServerThread(trace=str(path)) as st:
        r = redis.Redis(port=st.port)
        r.xadd("s", {"f": "v"})
        r.close()
    assert path.read_text().startswith(f'{{"xspec": "{FORMAT}"')
    assert check_trace(load(path)).status == "conform"


def test_a_wrong_push_is_a_divergence_in_checked_mode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """--checked compares each message with the model's: a server that sends a wrong one is caught."""
    from xspec.reference import pubsub

    real_write = pubsub._write

    def garbled(c: object, message: Push) -> None:
        real_write(c, Push((*message.items[:-1], Bulk(b"garbled"))))

    monkeypatch.setattr(pubsub, "_write", garbled)
    caplog.set_level(logging.ERROR, logger="xspec.serve")
    with ServerThread(checker=model_checker, trace=str(tmp_path / "serve.jsonl")) as st:
        r = redis.Redis(port=st.port)
        p = r.pubsub()
        p.subscribe("a")
        r.publish("a", "hello")
        assert [m["data"] for m in messages(p, 1)] == [b"garbled"]
        p.close()
        r.close()
        checker = checked_run(st)
    assert checker.divergences == 1 and "the model ['message', 'a', 'hello']" in caplog.text


def test_keys_the_virtual_clock_expires_are_judged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """On the virtual clock, XSPEC.CLOCK ADVANCE lets the active expiry cycle delete keys no command reads
    (EXPIRE-ACTIVE-5): the served trace's ``expired`` messages and DBSIZE counts conform offline, and a
    count the cycle cannot have reached diverges (EXPIRE-ACTIVE-2)."""
    caplog.set_level(logging.ERROR, logger="xspec.serve")
    path = tmp_path / "serve.jsonl"
    with ServerThread(clock="virtual", checker=model_checker, trace=str(path)) as st:
        r = redis.Redis(port=st.port, protocol=3)
        r.config_set("notify-keyspace-events", "Ex")
        p = r.pubsub()
        p.subscribe("__keyevent@0__:expired")
        r.set("a", "1", px=50)
        r.set("b", "2", px=80)
        r.set("c", "3")
        assert r.dbsize() == 3
        r.execute_command("XSPEC.CLOCK", "ADVANCE", "1000")
        got = messages_of(p, 2)
        assert r.dbsize() == 1
        p.close()
        r.close()
        checker = checked_run(st)
    assert sorted(got) == [b"a", b"b"]
    assert checker.divergences == 0, caplog.text
    trace = load(path)
    verdict = check_trace(trace)
    assert verdict.status == "conform", (verdict.event, verdict.message, verdict.got, verdict.allowed)
    # The last DBSIZE claims a count no deletion order reaches.
    i = max(i for i, e in enumerate(trace.events) if isinstance(e, Recv | Call) and getattr(e, "reply", None) == Int(1))
    events = list(trace.events)
    events[i] = replace(events[i], reply=Int(2))  # type: ignore[type-var]
    verdict = check_trace(Trace(trace.header, events))
    assert verdict.status == "diverge" and verdict.event == i + 1


def messages_of(p: redis.client.PubSub, want: int) -> list[bytes]:
    """The payloads of the next ``want`` messages (keys of keyspace events)."""
    got: list[bytes] = []
    for _ in range(50):
        m = p.get_message(timeout=0.1)
        if m is not None and m["type"] == "message":
            got.append(m["data"])
            if len(got) == want:
                break
    return got
