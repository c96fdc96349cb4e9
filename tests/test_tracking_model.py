"""CLIENT TRACKING in the model (spec/rules/tracking.md) against the real servers: every scenario of
traces/scenarios/tracking.py is recorded on each dialect's real server; the model must explain each
recording (invalidation messages as ``push`` events) and the reference server must answer the same
script as the real one; the checker must refuse a recording with a message changed or missing.
"""

from __future__ import annotations

import time

import pytest

from tests.real_servers import SERVER_FIXTURES
from tests.support import checked_run
from tests.test_pubsub import DIALECTS, shape
from xspec.reference.server import ServerThread
from xspec.spec.resp import Array, Bulk, Int, Map, Push, Set
from xspec.spec.trace_format import Call, Trace
from xspec.spec.trace_format import Push as PushEvent
from xspec.traces.check.checker import check_trace
from xspec.traces.record.client import RespConnection
from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.pubsub import confirm, push
from xspec.traces.scenarios.registry import Scenario, all_scenarios
from xspec.traces.scenarios.tracking import own


def _redirect(r: Recorder) -> None:
    r.call(1, "HELLO", "3")
    r.call(2, "HELLO", "3")
    r.call(1, "CLIENT", "TRACKING", "ON", "REDIRECT", "999999")  # TRACKING-1: no such client
    ids = {c: r.call(c, "CLIENT", "ID") for c in (1, 2, 3, 4)}
    redirect_to = {c: str(getattr(reply, "value", 0)) for c, reply in ids.items()}
    r.call(1, "CLIENT", "TRACKING", "ON", "REDIRECT", redirect_to[2], "REDIRECT", redirect_to[3])
    r.call(1, "CLIENT", "TRACKING", "ON", "REDIRECT", redirect_to[2])
    r.call(1, "CLIENT", "GETREDIR")
    r.call(1, "GET", "k")
    r.call(4, "SET", "k", "1")  # TRACKING-5: to the redirect client
    push(r, 2)
    r.call(1, "GET", "k")
    own(r, 2, "SET", "k", "2")  # the redirect client's own write
    confirm(r, 3, "SUBSCRIBE", "__redis__:invalidate")
    r.call(4, "CLIENT", "TRACKING", "ON", "REDIRECT", redirect_to[3])  # a RESP2 tracking client
    r.call(4, "GET", "r2")
    r.call(1, "SET", "r2", "1")  # TRACKING-5: a Pub/Sub message to the RESP2 subscriber
    push(r, 3)
    r.call(1, "GET", "gone")
    r.close(2)  # TRACKING-6: nothing is said yet
    time.sleep(0.05)
    r.call(1, "CLIENT", "TRACKINGINFO")
    r.call(4, "SET", "gone", "1")  # now: tracking-redir-broken
    push(r, 1)
    r.call(1, "CLIENT", "TRACKINGINFO")
    r.call(1, "CLIENT", "TRACKING", "ON", "REDIRECT", redirect_to[4])  # a new redirect mends it
    r.call(1, "CLIENT", "TRACKINGINFO")


# Not a corpus scenario: its commands name the server's client ids (REDIRECT), which differ per server.
REDIRECT = Scenario(topic="tracking", name="redirect", run=_redirect,
                    title="REDIRECT: to a RESP3 client, to a RESP2 client subscribed to __redis__:invalidate, "
                          "GETREDIR; the redirect client gone: tracking-redir-broken, broken_redirect")
TRACKING = [s for s in all_scenarios() if s.topic == "tracking"] + [REDIRECT]


def record(host: str, port: int, sc: Scenario, name: str, version: str) -> Trace:
    r = Recorder(host, port, server_name=name, server_version=version, title=sc.title)
    try:
        sc.run(r)
    finally:
        r.close_all()
        conn = RespConnection(host, port)
        conn.call([b"FLUSHALL"])
        conn.close()
    return r.trace()


@pytest.fixture(scope="module")
def recordings(request: pytest.FixtureRequest) -> dict[tuple[str, str], Trace]:
    out: dict[tuple[str, str], Trace] = {}
    for dialect, (name, _) in DIALECTS.items():
        try:
            server = request.getfixturevalue(SERVER_FIXTURES[dialect])
        except pytest.skip.Exception:
            continue
        server.reset()
        for sc in TRACKING:
            out[(dialect, sc.name)] = record(server.host, server.port, sc, name, server.version)
    return out


@pytest.fixture(scope="module")
def reference_recordings(reference_servers_by_dialect: dict[str, ServerThread]) -> dict[tuple[str, str], Trace]:
    out: dict[tuple[str, str], Trace] = {}
    for dialect, (name, version) in DIALECTS.items():
        st = reference_servers_by_dialect[dialect]
        for sc in TRACKING:
            out[(dialect, sc.name)] = record("127.0.0.1", st.port, sc, name, version)
    return out


def _get(recordings: dict[tuple[str, str], Trace], dialect: str, name: str) -> Trace:
    if (dialect, name) not in recordings:
        pytest.skip(f"no real server for {dialect}")
    return recordings[(dialect, name)]


# Scenarios that name clients by their ids (REDIRECT): the model numbers clients as the trace does, so
# it checks them as recorded on a fresh reference server, whose ids are the trace's numbers; that
# recording answers as the real server's does (test_reference_answers_as_the_real_server).
BY_ID = {"redirect"}


@pytest.fixture(scope="module")
def fresh_reference_recordings() -> dict[tuple[str, str], Trace]:
    out: dict[tuple[str, str], Trace] = {}
    for dialect, (name, version) in DIALECTS.items():
        for sc in TRACKING:
            if sc.name in BY_ID:
                with ServerThread(dialect=dialect) as st:
                    out[(dialect, sc.name)] = record("127.0.0.1", st.port, sc, name, version)
    return out


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", [s.name for s in TRACKING])
def test_model_explains_the_real_server(recordings: dict[tuple[str, str], Trace],
                                        fresh_reference_recordings: dict[tuple[str, str], Trace],
                                        dialect: str, name: str) -> None:
    trace = fresh_reference_recordings[(dialect, name)] if name in BY_ID else _get(recordings, dialect, name)
    assert any(isinstance(e, PushEvent) for e in trace.events)
    verdict = check_trace(trace)
    assert verdict.status == "conform", (verdict.event, verdict.message, verdict.got, verdict.allowed)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", [s.name for s in TRACKING])
def test_reference_answers_as_the_real_server(recordings: dict[tuple[str, str], Trace],
                                              reference_recordings: dict[tuple[str, str], Trace],
                                              dialect: str, name: str) -> None:
    real = _get(recordings, dialect, name)
    assert _named(reference_recordings[(dialect, name)]) == _named(real)


def _named(trace: Trace) -> list[tuple[str, int, object]]:
    """The trace's shape with every client id (learnt from CLIENT ID's answers) replaced by the client's
    number: ids describe the host's connection count."""
    ids = {e.reply.value: e.c for e in trace.events if isinstance(e, Call) and e.cmd[:2] == [b"CLIENT", b"ID"]
           and isinstance(e.reply, Int)}

    def named(r: object) -> object:
        if isinstance(r, Int) and r.value in ids:
            return ("client", ids[r.value])
        if isinstance(r, Array | Push | Set):
            return (type(r).__name__, tuple(named(i) for i in r.items))
        if isinstance(r, Map):
            return ("map", tuple((named(k), named(v)) for k, v in r.pairs))
        return r

    return [(kind, c, named(reply)) for kind, c, reply in shape(trace)]


def test_checker_refuses_a_changed_or_missing_message(recordings: dict[tuple[str, str], Trace]) -> None:
    trace = _get(recordings, "redis-7.0", "default-mode")
    i = next(k for k, e in enumerate(trace.events) if isinstance(e, PushEvent))
    events = list(trace.events)
    e = events[i]
    assert isinstance(e, PushEvent) and isinstance(e.reply, Push)
    events[i] = PushEvent(c=e.c, reply=Push((Bulk(b"invalidate"), Array((Bulk(b"other"),)))), t=e.t)
    assert check_trace(Trace(trace.header, events, trace.path)).status == "diverge"
    missing = [e for k, e in enumerate(trace.events) if k != i]
    assert check_trace(Trace(trace.header, missing, trace.path)).status == "diverge"


@pytest.mark.parametrize("dialect", ["redis-7.0", "valkey-9.1"])
def test_serve_checked_judges_tracking_command_and_notifications(dialect: str, tmp_path: object) -> None:
    """``xspec serve --checked`` runs CLIENT TRACKING, COMMAND and notify-keyspace-events on the model too
    (reference/trace.py no longer skips them): the tracking, notification and COMMAND scripts diverge nowhere."""
    from xspec.commands.serve import model_checker
    name, version = DIALECTS[dialect]
    scenarios = TRACKING + [s for s in all_scenarios() if s.topic == "notify"]
    with ServerThread(dialect=dialect, checker=model_checker, trace=str(tmp_path / "run.jsonl")) as st:  # type: ignore[operator]
        for sc in scenarios:
            record("127.0.0.1", st.port, sc, name, version)
        conn = RespConnection("127.0.0.1", st.port)
        for form in (["COMMAND", "COUNT"], ["COMMAND", "INFO", "get", "client|tracking"], ["COMMAND", "DOCS", "xadd"],
                     ["COMMAND", "GETKEYS", "mset", "a", "1", "b", "2"], ["COMMAND", "LIST", "FILTERBY", "ACLCAT", "stream"]):
            conn.call([a.encode() for a in form])
        conn.close()
        checker = checked_run(st)
    assert checker.divergences == 0
