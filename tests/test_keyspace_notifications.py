"""Keyspace notifications (spec/rules/notify.md) against the real servers: every scenario of
traces/scenarios/notify.py is recorded on each dialect's real server; the model must explain each
recording (the events as ``push`` events), the reference server must answer the same script exactly
as the real one does, and the checker must refuse a recording with an event changed or missing.
"""

from __future__ import annotations

import pytest

from tests.real_servers import SERVER_FIXTURES
from tests.test_pubsub import DIALECTS, shape
from xspec.models.notify import parse, shown
from xspec.reference import notify as reference_notify
from xspec.reference.server import ServerThread
from xspec.spec.dialect import REDIS_62, REDIS_70
from xspec.spec.resp import Array, Bulk, Push
from xspec.spec.trace_format import Push as PushEvent
from xspec.spec.trace_format import Trace
from xspec.traces.check.checker import check_trace
from xspec.traces.record.client import RespConnection
from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.registry import Scenario, all_scenarios

NOTIFY = [s for s in all_scenarios() if s.topic == "notify"]


def _reset(host: str, port: int) -> None:
    conn = RespConnection(host, port)
    conn.call([b"CONFIG", b"SET", b"notify-keyspace-events", b""])  # the servers are shared
    conn.call([b"FLUSHALL"])
    conn.close()


def record(host: str, port: int, sc: Scenario, name: str, version: str) -> Trace:
    _reset(host, port)  # other tests leave keys on the shared servers
    r = Recorder(host, port, server_name=name, server_version=version, title=sc.title)
    try:
        sc.run(r)
    finally:
        r.close_all()
        _reset(host, port)
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
        for sc in NOTIFY:
            out[(dialect, sc.name)] = record(server.host, server.port, sc, name, server.version)
    return out


@pytest.fixture(scope="module")
def reference_recordings(reference_servers_by_dialect: dict[str, ServerThread]) -> dict[tuple[str, str], Trace]:
    out: dict[tuple[str, str], Trace] = {}
    for dialect, (name, version) in DIALECTS.items():
        st = reference_servers_by_dialect[dialect]
        for sc in NOTIFY:
            out[(dialect, sc.name)] = record("127.0.0.1", st.port, sc, name, version)
    return out


def _get(recordings: dict[tuple[str, str], Trace], dialect: str, name: str) -> Trace:
    if (dialect, name) not in recordings:
        pytest.skip(f"no real server for {dialect}")
    return recordings[(dialect, name)]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", [s.name for s in NOTIFY])
def test_model_explains_the_real_server(recordings: dict[tuple[str, str], Trace], dialect: str, name: str) -> None:
    trace = _get(recordings, dialect, name)
    assert any(isinstance(e, PushEvent) for e in trace.events)
    verdict = check_trace(trace)
    assert verdict.status == "conform", (verdict.event, verdict.message, verdict.got, verdict.allowed)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", [s.name for s in NOTIFY])
def test_reference_answers_as_the_real_server(recordings: dict[tuple[str, str], Trace],
                                              reference_recordings: dict[tuple[str, str], Trace],
                                              dialect: str, name: str) -> None:
    real = _get(recordings, dialect, name)
    assert shape(reference_recordings[(dialect, name)]) == shape(real)


def _events(trace: Trace) -> list[int]:
    return [i for i, e in enumerate(trace.events) if isinstance(e, PushEvent)
            and isinstance(e.reply, Array | Push) and e.reply.items[0] == Bulk(b"pmessage")]


def test_checker_refuses_a_changed_or_missing_event(recordings: dict[tuple[str, str], Trace]) -> None:
    trace = _get(recordings, "redis-7.0", "streams")
    i = _events(trace)[0]
    events = list(trace.events)
    e = events[i]
    assert isinstance(e, PushEvent) and isinstance(e.reply, Array)
    events[i] = PushEvent(c=e.c, reply=Array((*e.reply.items[:3], Bulk(b"xdel"))), t=e.t)
    assert check_trace(Trace(trace.header, events, trace.path)).status == "diverge"
    missing = [e for k, e in enumerate(trace.events) if k != i]
    assert check_trace(Trace(trace.header, missing, trace.path)).status == "diverge"


@pytest.mark.parametrize("dialect", [REDIS_62, REDIS_70])
def test_the_setting_parses_and_prints_alike(dialect: object) -> None:
    """The model's and the reference's parsers agree on every one- and two-letter setting."""
    letters = "AKEg$lshzxetdmnQ"
    for a in ["", *letters]:
        for b in letters:
            value = (a + b).encode()
            mine = parse(value, dialect)  # type: ignore[arg-type]
            try:
                theirs: str | None = reference_notify.parse_setting(value, dialect.keyspace_new_events)  # type: ignore[attr-defined]
            except ValueError:
                theirs = None
            assert mine == theirs, value
            if mine is not None:
                assert shown(mine) == reference_notify.shown(mine)
