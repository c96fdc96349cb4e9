"""The active expiry cycle as the checker's internal step (spec/rules/expiry.md EXPIRE-ACTIVE-1, EXPIRE-ACTIVE-2).

A wall trace that reads DBSIZE, or receives an ``expired`` message, is checked with the cycle's deletions
as steps of the model: DBSIZE counts exactly, and a key's ``expired`` message needs no command that looks
the key up. A real 7.0.15's traces conform; counts no order of deletions gives diverge.
"""

from __future__ import annotations

import dataclasses
import io
import json
import time

import pytest

from xspec.spec.resp import OK, Array, Int
from xspec.spec.trace_format import Call, Push, Trace, load, loads
from xspec.traces import CORPUS_DIR
from xspec.traces.check.checker import check_trace
from xspec.traces.check.explain import explain, render_plain
from xspec.traces.scenarios.pubsub import confirm, push

HEADER = '{"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"}, "clock": "wall", "config": {}}'
MS = 1000  # trace times are in microseconds


def _call(c: int, cmd: list[str], at_ms: int, reply: dict[str, object]) -> str:
    return json.dumps({"ev": "call", "c": c, "cmd": cmd, "t0": at_ms * MS, "t1": at_ms * MS + 500, "reply": reply})


def _counts(*counts: int, ttl_ms: int = 10) -> Trace:
    """k expires ``ttl_ms`` after 1000 ms, k2 never; then one DBSIZE every 100 ms from 1500 ms."""
    lines = [HEADER, _call(1, ["SET", "k", "v", "PX", str(ttl_ms)], 1000, {"simple": "OK"}),
             _call(1, ["SET", "k2", "v"], 1002, {"simple": "OK"})]
    lines += [_call(1, ["DBSIZE"], 1500 + 100 * i, {"int": n}) for i, n in enumerate(counts)]
    return loads("\n".join(lines))


@pytest.mark.parametrize("counts, status", [
    ((2, 2), "conform"), ((1, 1), "conform"), ((2, 1), "conform"),  # the cycle ran before either count, or between
    ((2, 1, 2), "diverge"),  # a deleted key counted again, with no write in between
    ((1, 2), "diverge"),
    ((0, 0), "diverge"),  # k2 has no time
])
def test_counts_follow_one_order_of_deletions(counts: tuple[int, ...], status: str) -> None:
    """EXPIRE-ACTIVE-2: DBSIZE counts exactly, the deletions taken as internal steps."""
    assert check_trace(_counts(*counts)).status == status


def test_no_deletion_before_the_time() -> None:
    """EXPIRE-ACTIVE-2: a key is deleted only once its time has passed (k's is 10 s away)."""
    assert check_trace(_counts(1, ttl_ms=10_000)).status == "diverge"
    assert check_trace(_counts(2, ttl_ms=10_000)).status == "conform"


def test_the_count_drops_as_time_passes() -> None:
    """EXPIRE-ACTIVE-2: three keys expiring at different times, counted down one by one."""
    lines = [HEADER] + [_call(1, ["SET", k, "v", "PX", str(ms)], 1000 + i, {"simple": "OK"})
                        for i, (k, ms) in enumerate((("c", 300), ("a", 100), ("b", 200)))]
    lines += [_call(1, ["DBSIZE"], at, {"int": n}) for at, n in ((1050, 3), (1150, 2), (1250, 1), (1350, 0))]
    assert check_trace(loads("\n".join(lines))).status == "conform"
    lines[-3] = _call(1, ["DBSIZE"], 1150, {"int": 1})  # two gone 150 ms in: b's time is 200 ms
    assert check_trace(loads("\n".join(lines))).status == "diverge"


def test_a_virtual_trace_keeps_the_range() -> None:
    """EXPIRE-ACTIVE-2: a virtual trace is checked in file order without a search, and when the cycle's ticks
    fell is not in it: DBSIZE's range stays (its ``expired`` messages are taken: tests/test_serve_pushes.py)."""
    trace = loads("\n".join([
        '{"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"}, "clock": "virtual", "config": {}}',
        '{"ev":"call","c":1,"cmd":["SET","k","v","PX","10"],"now":1000,"reply":{"simple":"OK"}}',
        '{"ev":"call","c":1,"cmd":["DBSIZE"],"now":1500,"reply":{"int":0}}',
        '{"ev":"call","c":1,"cmd":["DBSIZE"],"now":1600,"reply":{"int":1}}',
    ]))
    assert check_trace(trace).status == "conform"


def test_the_witness_and_the_explanation_show_the_deletion() -> None:
    verdict = check_trace(_counts(1, 1))
    assert verdict.status == "conform"
    assert verdict.witness is not None
    steps = [s for s in verdict.witness.steps if s.kind == "expire"]
    assert [(s.db, s.argv) for s in steps] == [(0, [b"k"])]
    out = io.StringIO()
    render_plain(explain(_counts(1, 1)).steps, out)
    assert "active expiry of 'k'" in out.getvalue()


def _expired_push(c: int, at_ms: int, key: str, channel: str = "__keyevent@0__:expired") -> str:
    return json.dumps({"ev": "push", "c": c, "t": at_ms * MS,
                       "reply": {"array": [{"bulk": "message"}, {"bulk": channel}, {"bulk": key}]}})


def _subscribed(*lines: str, channel: str = "__keyevent@0__:expired") -> Trace:
    header = ('{"xspec": "trace/2", "nodes": {"server": {"server": {"name": "redis", "version": "7.0.15"}, '
              '"addrs": [], "config": {}}}, "clock": "wall"}')
    sub = [json.dumps({"ev": "send", "c": 2, "node": "server", "cmd": ["SUBSCRIBE", channel], "t": 900 * MS}),
           json.dumps({"ev": "recv", "c": 2, "t": 901 * MS,
                       "reply": {"array": [{"bulk": "subscribe"}, {"bulk": channel}, {"int": 1}]}}),
           _call(1, ["CONFIG", "SET", "notify-keyspace-events", "KEx"], 902, {"simple": "OK"})]
    return loads("\n".join([header, *sub, *lines]))


def test_an_expired_message_with_no_access_conforms() -> None:
    """EXPIRE-ACTIVE-2: the cycle deleted k, and its subscriber learnt of it; no command looked k up."""
    trace = _subscribed(_call(1, ["SET", "k", "v", "PX", "10"], 1000, {"simple": "OK"}), _expired_push(2, 1100, "k"))
    verdict = check_trace(trace)
    assert verdict.status == "conform", verdict.describe()
    assert [s.kind for s in verdict.witness.steps][-1] == "expire"  # type: ignore[union-attr]


def test_an_expired_message_before_the_key_s_time_diverges() -> None:
    trace = _subscribed(_call(1, ["SET", "k", "v", "PX", "1000"], 1000, {"simple": "OK"}), _expired_push(2, 1100, "k"))
    assert check_trace(trace).status == "diverge"


def test_an_expired_message_on_the_keyspace_channel() -> None:
    trace = _subscribed(_call(1, ["SET", "k", "v", "PX", "10"], 1000, {"simple": "OK"}),
                        _expired_push(2, 1100, "expired", channel="__keyspace@0__:k"),
                        channel="__keyspace@0__:k")
    assert check_trace(trace).status == "conform"


def test_the_recorded_trace_and_its_variants() -> None:
    """EXPIRE-ACTIVE-2 on 7.0.15's corpus trace: its messages in either order conform; a key counted again diverges."""
    trace = load(CORPUS_DIR / "redis-7.0.15" / "strings" / "active-expiry.jsonl")
    verdict = check_trace(trace)
    assert verdict.status == "conform", verdict.describe()
    assert sorted(s.argv[0] for s in verdict.witness.steps if s.kind == "expire") == [b"a", b"b"]  # type: ignore
    events = list(trace.events)
    first, second = [i for i, e in enumerate(events) if isinstance(e, Push)][:2]
    events[first], events[second] = (dataclasses.replace(events[second], t=events[first].t),  # type: ignore[type-var]
                                     dataclasses.replace(events[first], t=events[second].t))  # type: ignore[type-var]
    assert check_trace(Trace(trace.header, events, trace.path)).status == "conform"
    last = max(i for i, e in enumerate(events) if isinstance(e, Call) and e.cmd == [b"DBSIZE"])
    events[last] = dataclasses.replace(events[last], reply=Int(3))  # type: ignore[type-var]
    assert check_trace(Trace(trace.header, events, trace.path)).status == "diverge"


@pytest.mark.redis
def test_real_counts_conform_and_a_key_counted_again_diverges(redis) -> None:  # type: ignore[no-untyped-def]
    """EXPIRE-ACTIVE-1, -2 on 7.0.15: keys 10-15 ms from expiry go with no command reading them."""
    redis.reset()
    s = redis.scenario()
    # In a transaction: DBSIZE counts the keys before any cycle can delete one, however slowly the client
    # is served (as separate calls, 10 ms between the first SET and DBSIZE and a cron tick counted 2 or 1).
    for args in (("MULTI",), ("SET", "k", "v", "PX", "10"), ("SET", "j", "v", "PX", "15"), ("SET", "k2", "v"),
                 ("DBSIZE",)):
        s.call(1, *args)
    assert s.call(1, "EXEC") == Array((OK, OK, OK, Int(3)))
    deadline = time.monotonic() + 5
    while s.call(1, "DBSIZE") != Int(1):  # the cron's cycle deletes both, at hz 10 within a tick or two
        assert time.monotonic() < deadline, "the active expiry cycle deleted nothing"
        time.sleep(0.05)
    s.call(1, "DBSIZE")
    trace = s.check()
    counts = [i for i, e in enumerate(trace.events) if isinstance(e, Call) and e.cmd == [b"DBSIZE"]
              and isinstance(e.reply, Int)]
    assert [trace.events[i].reply for i in counts][-2:] == [Int(1), Int(1)]  # type: ignore[attr-defined]
    events = list(trace.events)
    events[counts[-1]] = dataclasses.replace(events[counts[-1]], reply=Int(3))  # type: ignore[type-var]
    assert check_trace(Trace(trace.header, events, trace.path)).status == "diverge"
    redis.reset()


@pytest.mark.redis
def test_the_cycle_s_expired_message_is_explained(redis) -> None:  # type: ignore[no-untyped-def]
    """EXPIRE-ACTIVE-2 on 7.0.15: the ``expired`` message of a key the cycle deleted, no command touching it."""
    redis.reset()
    s = redis.scenario()
    confirm(s.rec, 2, "SUBSCRIBE", "__keyevent@0__:expired")
    s.call(1, "CONFIG", "SET", "notify-keyspace-events", "Ex")
    try:
        s.call(1, "SET", "k", "v", "PX", "10")
        push(s.rec, 2)
    finally:
        s.call(1, "CONFIG", "SET", "notify-keyspace-events", "")
    trace = s.check()
    assert isinstance(trace.events[-2], Push)
    redis.reset()
