"""The exact conformance checker: symbolic time, orders, blocking, verdicts and the replay report.

Traces here are written by hand (``source: written``) to pin one rule of
spec/trace-format.md's "What it means for a trace to conform" each; every
conforming trace has a twin that must diverge at a stated event, so no test
can pass by accepting everything. Replies in them are the real server's
(checked on Redis 7.0.15 when the traces were written).
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from xspec.cli import main
from xspec.spec.resp import Array, Error, Int
from xspec.spec.trace_format import Call, loads
from xspec.traces.check import checker
from xspec.traces.check.checker import check_trace
from xspec.traces.check.symbolic import Ambiguous, Infeasible, SymbolicClock, Time, Zone, id_hints

T = 1_700_000_000_000_000  # µs; the millisecond t = T // 1000
t = T // 1000


def trace_text(events: list[dict[str, Any]], **header: Any) -> str:
    h: dict[str, Any] = {"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"},
                         "clock": "wall", "config": {}, "source": "written"}
    h.update(header)
    return "\n".join(json.dumps(x) for x in [h, *events]) + "\n"


def check(events: list[dict[str, Any]], **header: Any) -> checker.Verdict:
    return check_trace(loads(trace_text(events, **header)))


def call(c: int, cmd: list[str], reply: dict[str, Any], at_ms: float, dur_us: int = 100) -> dict[str, Any]:
    t0 = T + int(at_ms * 1000)
    return {"ev": "call", "c": c, "cmd": cmd, "t0": t0, "t1": t0 + dur_us, "reply": reply}


def send(c: int, cmd: list[str], at_ms: float) -> dict[str, Any]:
    return {"ev": "send", "c": c, "cmd": cmd, "t": T + int(at_ms * 1000)}


def recv(c: int, reply: dict[str, Any], at_ms: float) -> dict[str, Any]:
    return {"ev": "recv", "c": c, "t": T + int(at_ms * 1000), "reply": reply}


def bulk(s: str) -> dict[str, Any]:
    return {"bulk": s}


OK = {"simple": "OK"}
NIL_ARRAY = {"null": "array"}


def consumers_reply(*rows: tuple[str, int, int]) -> dict[str, Any]:
    return {"array": [{"array": [bulk("name"), bulk(name), bulk("pending"), {"int": pending},
                                 bulk("idle"), {"int": idle}]} for name, pending, idle in rows]}


def assert_verdict(v: checker.Verdict, status: str, event: int | None = None) -> None:
    assert v.status == status, v.describe()
    if event is not None:
        assert v.event == event, v.describe()


# ---------------------------------------------------------------------------
# The symbolic clock


def test_zone_entailment_bounds_and_monotonic_chain() -> None:
    zone = Zone()
    a = Time(zone.new_reading(10, 20), 0, 0, zone)
    b = Time(zone.new_reading(5, 12), 0, 0, zone)
    # b comes after a, so a <= b, and both lie in [10, 12]
    assert zone.lo[1:] == [10, 10] and zone.hi[1:] == [12, 12]
    assert a <= b  # entailed: no chooser is needed
    assert b - a >= 0
    assert (b - a) - (b - a) == 0 and isinstance((b - a) - (b - a), int)
    with pytest.raises(Ambiguous):
        _ = a < b  # both are possible and nothing can branch
    with pytest.raises(Infeasible):
        zone.new_reading(0, 9)  # a later reading cannot be earlier than t=10


def test_zone_branches_and_keeps_the_choice() -> None:
    zone = Zone()
    picks = iter([1, 0])
    zone.choose = lambda n, complete: next(picks)
    a = Time(zone.new_reading(0, 10), 0, 0, zone)
    b = Time(zone.new_reading(0, 10), 0, 0, zone)
    assert not (b - a > 3)  # branch 1: the negation, b - a <= 3, is added
    assert zone.max_diff(b.pos, a.pos) == 3
    assert b - a <= 3  # now entailed
    assert max(a, b - 5) is a  # max() works through comparisons
    assert a + 5 >= b - 5
    assert zone.range_of(b.pos, a.pos) == (0, 3)


def test_zone_equalities_and_negative_cycles() -> None:
    zone = Zone()
    a = Time(zone.new_reading(0, 100), 0, 0, zone)
    b = Time(zone.new_reading(0, 100), 0, 0, zone)
    with zone.assuming():
        assert b - a == 40  # adds the equality
        assert not (b - a == 41)  # inconsistent with it, and leaves the zone as it was
        assert b == 100
    assert (zone.lo[a.pos], zone.hi[a.pos]) == (60, 60)
    c = Time(zone.new_reading(0, 1000), 0, 0, zone)
    zone.add_le(c.pos, a.pos, 50)  # c - a <= 50
    with pytest.raises(Infeasible):
        zone.add_le(a.pos, c.pos, -51)  # a - c <= -51: a cycle of weight -1


def test_symbolic_time_refuses_concrete_uses() -> None:
    zone = Zone()
    a = Time(zone.new_reading(0, 10), 0, 0, zone)
    for use in (bool, int, str, hash, lambda x: f"{x}", lambda x: b"%d" % x):
        with pytest.raises(TypeError):
            use(a)
    with pytest.raises(TypeError):
        _ = (a + a)  # not a difference of two readings
    assert repr(a - Time(zone.new_reading(0, 10), 0, 0, zone) + 3) == "t1-t2+3"


def test_concrete_tries_hinted_values_first() -> None:
    zone = Zone()
    seen: list[int] = []
    zone.choose = lambda n, complete: seen.append(n) or 0  # type: ignore[func-returns-value]
    clock = SymbolicClock(zone)
    clock.set_window(t - 1, t + 2, expected=loads(trace_text([
        {"ev": "call", "c": 1, "cmd": ["X"], "reply": bulk(f"{t + 1}-0")}])).events[0].reply)  # type: ignore[union-attr]
    assert clock.concrete(clock.now_ms()) == t + 1  # the hinted value first
    clock.set_window(t - 1, t + 2, expected=Int(0))
    assert clock.concrete(clock.now_ms()) == t + 1  # no hint: the earliest value, not before the first
    assert seen == [4, 2]
    assert id_hints(loads(trace_text([{"ev": "call", "c": 1, "cmd": ["X"], "reply": {
        "array": [bulk("5-1"), bulk("x-1"), {"array": [bulk("7-0"), bulk("5-9")]}]}}]))
        .events[0].reply) == [5, 7]  # type: ignore[union-attr]


# ---------------------------------------------------------------------------
# Time windows (wall traces)


def create_consumer_then_info(idle: int, gap_ms: int) -> list[dict[str, Any]]:
    return [
        call(1, ["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"], OK, 0),
        call(1, ["XGROUP", "CREATECONSUMER", "s", "g", "alice"], {"int": 1}, 0.2),
        call(1, ["XINFO", "CONSUMERS", "s", "g"], consumers_reply(("alice", 0, idle)), gap_ms),
    ]


@pytest.mark.parametrize("idle,status", [(46, "diverge"), (47, "conform"), (50, "conform"), (53, "conform"),
                                         (54, "diverge"), (-1, "diverge")])
def test_idle_time_is_explained_by_two_readings(idle: int, status: str) -> None:
    # seen-time in [t-1, t+2] (window of CREATECONSUMER with 1 ms slack), XINFO's reading in [t+49, t+52]
    v = check(create_consumer_then_info(idle, 50))
    assert_verdict(v, status, 3 if status == "diverge" else None)
    if status == "diverge":
        assert "47..53" in v.describe()  # what the model allows, with the range of the idle time


def test_idle_times_must_agree_with_each_other() -> None:
    events = create_consumer_then_info(50, 50)
    events.append(call(1, ["XINFO", "CONSUMERS", "s", "g"], consumers_reply(("alice", 0, 60)), 60))
    assert_verdict(check(events), "conform")
    events[-1] = call(1, ["XINFO", "CONSUMERS", "s", "g"], consumers_reply(("alice", 0, 50)), 60)
    assert_verdict(check(events), "diverge", 4)  # the same seen-time, 10 ms later


def test_readings_never_decrease() -> None:
    # Both consumers are created in the same window; bob's seen-time cannot be before alice's,
    # so bob cannot have been idle longer, though each idle time alone fits the windows.
    events = [
        call(1, ["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"], OK, 0),
        call(1, ["XGROUP", "CREATECONSUMER", "s", "g", "alice"], {"int": 1}, 0.2),
        call(1, ["XGROUP", "CREATECONSUMER", "s", "g", "bob"], {"int": 1}, 0.5),
        call(1, ["XINFO", "CONSUMERS", "s", "g"], consumers_reply(("alice", 0, 50), ("bob", 0, 49)), 50),
    ]
    assert_verdict(check(events), "conform")
    events[-1] = call(1, ["XINFO", "CONSUMERS", "s", "g"], consumers_reply(("alice", 0, 49), ("bob", 0, 50)), 50)
    assert_verdict(check(events), "diverge", 4)


def test_slack_widens_every_window() -> None:
    events = create_consumer_then_info(56, 50)
    assert_verdict(check(events), "diverge", 3)
    assert_verdict(check(events, slack_ms=3), "conform")


@pytest.mark.parametrize("offset,status", [(-2, "diverge"), (-1, "conform"), (0, "conform"), (2, "conform"),
                                           (3, "diverge")])
def test_generated_id_must_come_from_the_window(offset: int, status: str) -> None:
    events = [call(1, ["XADD", "s", "*", "f", "v"], bulk(f"{t + offset}-0"), 0.1, dur_us=800)]
    assert_verdict(check(events), status, 1 if status == "diverge" else None)


def test_generated_ids_follow_the_clock_order() -> None:
    first = call(1, ["XADD", "s", "*", "f", "v"], bulk(f"{t + 2}-0"), 0.1, dur_us=800)
    events = [first, call(2, ["XADD", "r", "*", "f", "v"], bulk(f"{t + 2}-0"), 0.95, dur_us=40)]
    assert_verdict(check(events), "conform")
    events[1] = call(2, ["XADD", "r", "*", "f", "v"], bulk(f"{t}-0"), 0.95, dur_us=40)
    assert_verdict(check(events), "diverge", 2)  # fits its window, but the clock went back


def test_comparisons_of_times_branch_and_later_replies_decide() -> None:
    # XCLAIM's min-idle test compares an idle time the windows leave open (47..53 ms against 50):
    # the checker branches. Not claiming means idle <= 49 then, which caps what XPENDING can show.
    def events(pending_idle: int) -> list[dict[str, Any]]:
        return [
            call(1, ["XADD", "s", "1-0", "f", "v"], bulk("1-0"), 0),
            call(1, ["XGROUP", "CREATE", "s", "g", "0"], OK, 0.1),
            call(1, ["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"], {"array": [{"array": [
                bulk("s"), {"array": [{"array": [bulk("1-0"), {"array": [bulk("f"), bulk("v")]}]}]}]}]}, 0.2),
            call(2, ["XCLAIM", "s", "g", "bob", "50", "1-0", "JUSTID"], {"array": []}, 50.5),
            call(1, ["XPENDING", "s", "g", "-", "+", "10"],
                 {"array": [{"array": [bulk("1-0"), bulk("alice"), {"int": pending_idle}, {"int": 1}]}]}, 50.6),
        ]
    assert_verdict(check(events(52)), "conform")
    assert_verdict(check(events(53)), "diverge", 5)
    assert_verdict(check(events(53)[:3] + events(53)[4:]), "conform")  # without the XCLAIM, 53 fits


# ---------------------------------------------------------------------------
# Orders


def test_overlapping_commands_take_the_order_the_replies_need() -> None:
    events = [send(1, ["SET", "k", "a"], 0), send(2, ["GET", "k"], 0.01),
              recv(1, OK, 0.02), recv(2, {"null": "bulk"}, 0.03)]
    assert_verdict(check(events), "conform")  # GET ran first
    events[3] = recv(2, bulk("a"), 0.03)
    assert_verdict(check(events), "conform")  # SET ran first
    events[3] = recv(2, bulk("b"), 0.03)
    v = check(events)
    assert_verdict(v, "diverge", 4)
    assert sorted(v.allowed_text) == ["'a'", "(nil bulk)"]


def test_real_time_order_is_kept() -> None:
    # SET's reply arrived before GET was sent: GET must see it.
    events = [send(1, ["SET", "k", "a"], 0), recv(1, OK, 0.02),
              send(2, ["GET", "k"], 0.03), recv(2, {"null": "bulk"}, 0.04)]
    assert_verdict(check(events), "diverge", 4)
    events[3] = recv(2, bulk("a"), 0.04)
    assert_verdict(check(events), "conform")


def test_a_call_is_atomic_but_overlaps_outstanding_sends() -> None:
    events = [send(1, ["SET", "k", "a"], 0), call(2, ["GET", "k"], {"null": "bulk"}, 0.01),
              call(2, ["GET", "k"], bulk("a"), 0.2), recv(1, OK, 0.3)]
    assert_verdict(check(events), "conform")
    events[2] = call(2, ["GET", "k"], {"null": "bulk"}, 0.2)
    events.insert(3, call(2, ["GET", "k"], bulk("a"), 0.25))
    assert_verdict(check(events), "conform")
    events.insert(4, call(2, ["GET", "k"], {"null": "bulk"}, 0.27))
    assert_verdict(check(events), "diverge", 5)  # a key does not come back unset


def test_pipeline_replies_in_order() -> None:
    events = [send(1, ["SET", "k", "a"], 0), send(1, ["GET", "k"], 0.01), send(1, ["SET", "k", "b"], 0.02),
              recv(1, OK, 0.1), recv(1, bulk("a"), 0.11), recv(1, OK, 0.12)]
    assert_verdict(check(events), "conform")
    events[4] = recv(1, bulk("b"), 0.11)
    assert_verdict(check(events), "diverge", 5)


def test_concurrent_writers_search_stays_small() -> None:
    # Eight clients race; only replies consistent with some order are accepted, and the
    # search over 8! orders is cut down by pruning repeated states.
    clients = range(1, 9)
    events = [send(c, ["SET", "k", f"v{c}", "GET"], c * 0.001) for c in clients]
    # client 3 ran first, then every other in client order
    previous = {"null": "bulk"}
    order = [3, 1, 2, 4, 5, 6, 7, 8]
    replies: dict[int, dict[str, Any]] = {}
    for c in order:
        replies[c] = previous
        previous = bulk(f"v{c}")
    events += [recv(c, replies[c], 1 + c * 0.001) for c in clients]
    events.append(call(1, ["GET", "k"], bulk("v8"), 2))
    assert_verdict(check(events), "conform")
    events[-1] = call(1, ["GET", "k"], bulk("v3"), 2)
    assert_verdict(check(events), "diverge", 17)


def test_closed_clients_pending_command_may_or_may_not_run() -> None:
    closing = [send(1, ["SET", "k", "a"], 0), {"ev": "close", "c": 1, "by": "client", "t": T + 10}]
    assert_verdict(check([*closing, call(2, ["GET", "k"], bulk("a"), 1)]), "conform")
    assert_verdict(check([*closing, call(2, ["GET", "k"], {"null": "bulk"}, 1)]), "conform")
    assert_verdict(check([*closing, call(2, ["GET", "k"], bulk("b"), 1)]), "diverge", 3)


def test_multi_runs_queued_commands_at_exec() -> None:
    events = [call(1, ["MULTI"], OK, 0), call(1, ["SET", "k", "a"], {"simple": "QUEUED"}, 0.1),
              call(2, ["GET", "k"], {"null": "bulk"}, 0.2),
              call(1, ["EXEC"], {"array": [OK]}, 0.3), call(2, ["GET", "k"], bulk("a"), 0.4)]
    assert_verdict(check(events), "conform")
    events[2] = call(2, ["GET", "k"], bulk("a"), 0.2)
    assert_verdict(check(events), "diverge", 3)


# ---------------------------------------------------------------------------
# Blocking


def blocked_read(reply: dict[str, Any], after_ms: float, block_ms: int = 100) -> list[dict[str, Any]]:
    return [send(1, ["XREAD", "BLOCK", str(block_ms), "STREAMS", "s", "$"], 0),
            call(2, ["SET", "other", "x"], OK, after_ms / 2),
            recv(1, reply, after_ms)]


@pytest.mark.parametrize("after_ms,status", [(50, "diverge"), (98, "diverge"), (98.001, "conform"),
                                             (150, "conform")])
def test_timeout_fires_after_the_deadline_within_the_window(after_ms: float, status: str) -> None:
    # The deadline is the blocking reading (>= t-1) plus 100, and 7.0 times out once the clock has
    # passed it, so at t+100 at the earliest; the recv's window ends at ceil(recv) + 1.
    assert_verdict(check(blocked_read(NIL_ARRAY, after_ms)), status, 3 if status == "diverge" else None)


def test_blocked_forever_cannot_time_out() -> None:
    v = check(blocked_read(NIL_ARRAY, 5000, block_ms=0))
    assert_verdict(v, "diverge", 3)
    assert "still blocked" in v.message


def test_blocked_read_served_by_deleting_the_key() -> None:
    unblocked = {"error": "UNBLOCKED the stream key no longer exists"}
    events = [call(1, ["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"], OK, 0),
              send(2, ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"], 0.2),
              call(1, ["DEL", "s"], {"int": 1}, 0.3),
              recv(2, unblocked, 0.5)]
    assert_verdict(check(events), "conform")
    events[3] = recv(2, NIL_ARRAY, 0.5)
    v = check(events)
    assert_verdict(v, "diverge", 4)
    assert "(error) UNBLOCKED the stream key no longer exists" in v.allowed_text
    # the reply came before DEL was sent: nothing served it
    events = [events[0], events[1], recv(2, unblocked, 0.25), call(1, ["DEL", "s"], {"int": 1}, 0.3)]
    assert_verdict(check(events), "diverge", 3)


@pytest.mark.parametrize("write_ms", [50, 99.5, 150])
def test_blocked_read_served_or_timed_out(write_ms: float) -> None:
    served = {"array": [{"array": [bulk("s"), {"array": [{"array": [bulk("5-0"), {"array": [bulk("f"),
                                                                                           bulk("v")]}]}]}]}]}
    events = [send(1, ["XREAD", "BLOCK", "100", "STREAMS", "s", "$"], 0),
              call(2, ["XADD", "s", "5-0", "f", "v"], bulk("5-0"), write_ms),
              recv(1, served, write_ms + 0.2)]
    # until the timeout is processed a write may still serve the reader
    assert_verdict(check(events), "conform")
    events[2] = recv(1, NIL_ARRAY, write_ms + 0.2)
    assert_verdict(check(events), "conform" if write_ms > 98 else "diverge")


# ---------------------------------------------------------------------------
# Virtual clock, scope, search bound


def test_virtual_clock_traces_run_in_file_order_at_now() -> None:
    events = [{"ev": "call", "c": 1, "cmd": ["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"], "now": 1000,
               "reply": OK},
              {"ev": "call", "c": 1, "cmd": ["XGROUP", "CREATECONSUMER", "s", "g", "a"], "now": 1000,
               "reply": {"int": 1}},
              {"ev": "call", "c": 1, "cmd": ["XINFO", "CONSUMERS", "s", "g"], "now": 1040,
               "reply": consumers_reply(("a", 0, 40))},
              {"ev": "send", "c": 2, "cmd": ["XREAD", "BLOCK", "50", "STREAMS", "s", "$"], "now": 1100},
              {"ev": "recv", "c": 2, "now": 1151, "reply": NIL_ARRAY}]
    assert_verdict(check(events, clock="virtual"), "conform")
    events[2]["reply"] = consumers_reply(("a", 0, 41))
    assert_verdict(check(events, clock="virtual"), "diverge", 3)
    events[2]["reply"] = consumers_reply(("a", 0, 40))
    events[4]["now"] = 1150  # the deadline has not passed yet
    assert_verdict(check(events, clock="virtual"), "diverge", 5)


def test_out_of_scope_commands_and_settings_are_unsupported() -> None:
    v = check([call(1, ["PFADD", "h", "x"], {"int": 1}, 0)])
    assert_verdict(v, "unsupported")
    assert "PFADD" in v.message
    v = check([call(1, ["PING"], {"simple": "PONG"}, 0)], config={"maxmemory": "10"})
    assert_verdict(v, "unsupported")
    assert "maxmemory" in v.message


def test_past_the_search_bound_is_inconclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    events = [send(c, ["SET", "k", f"v{c}", "GET"], c * 0.001) for c in range(1, 5)]
    events += [recv(c, bulk("never"), 1) for c in range(1, 5)]
    assert_verdict(check(events), "diverge", 5)
    monkeypatch.setattr(checker, "STEP_BUDGET_BASE", 3)
    monkeypatch.setattr(checker, "STEP_BUDGET_PER_EVENT", 0)
    assert_verdict(check(events), "inconclusive")


# ---------------------------------------------------------------------------
# The replay report


def write(path: Path, events: list[dict[str, Any]], **header: Any) -> Path:
    path.write_text(trace_text(events, **header))
    return path


def test_replay_report_counts_and_expectations(tmp_path: Path) -> None:
    good = [send(1, ["SET", "k", "a"], 0), send(2, ["GET", "k"], 0.01), recv(1, OK, 0.02),
            recv(2, bulk("a"), 0.03)]
    bad = good[:3] + [recv(2, bulk("b"), 0.03)]
    write(tmp_path / "a-good.jsonl", good)
    write(tmp_path / "b-finding.jsonl", bad, expect={"verdict": "diverge", "dialect": "redis-7.0", "event": 4})
    write(tmp_path / "c-scope.jsonl", [call(1, ["PFADD", "h", "x"], {"int": 1}, 0)],
          expect={"verdict": "unsupported"})
    runner = CliRunner()
    r = runner.invoke(main, ["replay", str(tmp_path), "--against", "model"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[-1] == "3 traces, 9 events: 1 conform, 1 diverge, 1 unsupported, 0 inconclusive"
    assert any("b-finding.jsonl: diverge at event 4: reply differs  (as expected)" in x for x in lines)
    assert "    trace says: 'b'" in lines
    assert "    model allows: 'a'" in lines
    # the wrong event, or an unmet default expectation, fail the run
    write(tmp_path / "b-finding.jsonl", bad, expect={"verdict": "diverge", "event": 3})
    r = runner.invoke(main, ["replay", str(tmp_path)])
    assert r.exit_code == 1 and "(expected diverge at event 3)" in r.output
    write(tmp_path / "b-finding.jsonl", bad)
    r = runner.invoke(main, ["replay", str(tmp_path / "b-finding.jsonl"), "--dialect", "redis-7.0"])
    assert r.exit_code == 1 and "(expected conform)" in r.output
    r = runner.invoke(main, ["replay", str(tmp_path), "--dialect", "redis-0.1"])
    assert r.exit_code == 2 and "unknown dialect" in r.output


def test_replay_reports_malformed_and_truncated_files_and_goes_on(tmp_path: Path) -> None:
    good = write(tmp_path / "good.jsonl", [call(1, ["PING"], {"simple": "PONG"}, 0)])
    text = good.read_text()
    (tmp_path / "truncated.jsonl").write_text(text + text.splitlines()[1][:25])
    (tmp_path / "badfield.jsonl").write_text(text + '{"ev": "call", "c": "one", "cmd": ["PING"], "reply": {}}\n')
    with gzip.open(tmp_path / "cut.jsonl.gz", "wb") as f:
        f.write((text * 3).encode())
    data = (tmp_path / "cut.jsonl.gz").read_bytes()
    (tmp_path / "cut.jsonl.gz").write_bytes(data[:-12])
    r = CliRunner().invoke(main, ["replay", str(tmp_path)])
    assert r.exit_code == 1
    assert "Traceback" not in r.output
    assert f"error: {tmp_path / 'truncated.jsonl'}:3: not valid JSON" in r.output
    assert f"error: {tmp_path / 'badfield.jsonl'}:3: field 'c' has the wrong type" in r.output
    assert f"error: {tmp_path / 'cut.jsonl.gz'}:" in r.output
    assert f"{good}: conform" in r.output
    assert r.output.splitlines()[-1].startswith("4 traces, 1 events: 1 conform")


# ---------------------------------------------------------------------------
# Recorded from the real server


def test_recorded_idle_times_overlaps_and_unblocking_conform(redis: Any) -> None:
    s = redis.scenario(title="checker: idle times, overlapping clients, a read unblocked by DEL")
    s.call(1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "alice")
    time.sleep(0.02)
    s.call(2, "XGROUP", "CREATECONSUMER", "s", "g", "bob")
    s.call(1, "XINFO", "CONSUMERS", "s", "g")
    s.send(3, "XREADGROUP", "GROUP", "g", "carol", "BLOCK", "0", "STREAMS", "s", ">")
    assert s.is_waiting(3)
    s.send(1, "SET", "k", "a")
    s.send(2, "GET", "k")
    s.recv(2)
    s.recv(1)
    s.call(1, "XINFO", "CONSUMERS", "s", "g")
    s.call(2, "DEL", "s")
    assert isinstance(s.recv(3), Error)
    trace = s.check()
    # the same conversation with alice idle a second longer does not conform, at that reply
    at = next(i for i, e in enumerate(trace.events) if isinstance(e, Call) and e.cmd[:2] == [b"XINFO", b"CONSUMERS"])
    e = trace.events[at]
    assert isinstance(e, Call) and isinstance(e.reply, Array)
    alice = e.reply.items[0]
    assert isinstance(alice, Array) and isinstance(alice.items[5], Int)
    e.reply = Array((Array(alice.items[:5] + (Int(alice.items[5].value + 1000),)), *e.reply.items[1:]))
    assert_verdict(check_trace(trace), "diverge", at + 1)


# ---------------------------------------------------------------------------
# Choices the model leaves open: the order of a hash-table walk (SWAPDB-8)


def swapdb_walk(served: str, entry: str, clock: str = "wall") -> checker.Verdict:
    """A reader blocked on s, t and u in database 0; SWAPDB brings s and t (not u) into it."""
    def e(event: dict[str, Any], ms: int) -> dict[str, Any]:
        return {**event, "now": t + ms} if clock == "virtual" else event
    entry_reply = {"array": [{"array": [bulk(entry), {"array": [bulk("f"), bulk("v")]}]}]}
    return check([
        e(call(1, ["XADD", "t", "1-1", "f", "v"], bulk("1-1"), 0), 0),
        e(call(1, ["XADD", "s", "2-1", "f", "v"], bulk("2-1"), 1), 1),
        e(call(1, ["SELECT", "1"], OK, 2), 2),
        e(call(1, ["XADD", "u", "3-1", "f", "v"], bulk("3-1"), 3), 3),
        e(call(1, ["SELECT", "0"], OK, 4), 4),
        e(call(1, ["SWAPDB", "0", "1"], OK, 5), 5),
        e(send(2, ["XREAD", "BLOCK", "0", "STREAMS", "s", "t", "u", "$", "$", "$"], 6), 6),
        e(call(1, ["SWAPDB", "0", "1"], OK, 7), 7),
        e(recv(2, {"array": [{"array": [bulk(served), entry_reply]}]}, 8), 8),
    ], clock=clock)


@pytest.mark.parametrize("clock", ["wall", "virtual"])
def test_checker_accepts_every_order_of_a_walk_and_nothing_else(clock: str) -> None:
    assert_verdict(swapdb_walk("s", "2-1", clock), "conform")  # the model's canonical order
    assert_verdict(swapdb_walk("t", "1-1", clock), "conform")  # another process's order
    assert_verdict(swapdb_walk("u", "3-1", clock), "diverge", 9)  # u is in database 1 now: not ready
    assert_verdict(swapdb_walk("t", "2-1", clock), "diverge", 9)  # t's entry is 1-1


# ---------------------------------------------------------------------------
# The witness: the execution the checker found, as data


def test_witness_gives_the_order_the_replies_need() -> None:
    """GET's nil reply needs GET to run before SET, which was sent first (events are 0-based indexes)."""
    events = [send(1, ["SET", "k", "a"], 0), send(2, ["GET", "k"], 0.01),
              recv(2, {"null": "bulk"}, 0.02), recv(1, OK, 0.03)]
    v = check(events)
    assert_verdict(v, "conform")
    assert v.witness is not None and v.witness.events == 4 and v.witness.divergence is None
    assert [(s.kind, s.event, s.client, s.reply_event) for s in v.witness.steps] == [
        ("command", 1, 2, 2), ("command", 0, 1, 3)]
    assert v.witness.steps[0].argv == [b"GET", b"k"]
    assert v.witness.step_of(0) is v.witness.steps[1]


def test_witness_resolves_clock_readings_to_values() -> None:
    # XADD * gives the reading's millisecond in its ID: the reading is exactly that value.
    events = [call(1, ["XADD", "s", "*", "f", "v"], bulk(f"{t}-0"), 0),
              call(1, ["XADD", "s", "*", "f", "v"], bulk(f"{t + 1}-0"), 1)]
    v = check(events)
    assert_verdict(v, "conform")
    assert v.witness is not None
    assert [s.readings for s in v.witness.steps] == [(t,), (t + 1,)]
    assert v.witness.readings() == [t, t + 1]
    # in a virtual trace every reading of a command is its now
    virtual = check([{**events[0], "now": 1000, "reply": bulk("1000-0")},
                     {**events[1], "now": 1005, "reply": bulk("1005-0")}], clock="virtual")
    assert virtual.witness is not None
    assert [s.readings for s in virtual.witness.steps] == [(1000,), (1005,)]


def test_witness_says_which_command_served_a_blocked_one() -> None:
    served = {"array": [{"array": [bulk("s"), {"array": [{"array": [bulk("5-0"), {"array": [bulk("f"),
                                                                                           bulk("v")]}]}]}]}]}
    events = [send(1, ["XREAD", "BLOCK", "100", "STREAMS", "s", "$"], 0),
              call(2, ["XADD", "s", "5-0", "f", "v"], bulk("5-0"), 99.5),
              recv(1, served, 99.7)]
    w = check(events).witness
    assert w is not None
    read, write = w.steps
    assert read.blocked and read.served == () and read.reply_event == 2
    assert not write.blocked and write.served == (0,)
    assert w.completed_by(0) is write
    # the same read timed out: a step of its own, past the deadline and before the XADD
    events[2] = recv(1, NIL_ARRAY, 99.7)
    w = check(events).witness
    assert w is not None
    assert [(s.kind, s.event) for s in w.steps] == [("command", 0), ("timeout", 0), ("command", 1)]
    read, timeout, write = w.steps
    assert w.completed_by(0) is timeout and timeout.at == 1 and write.served == ()
    assert timeout.readings[0] > read.readings[0] + 100  # BLOCK-8: the clock passed the deadline


def test_witness_records_the_models_own_choices() -> None:
    """SWAPDB-8: the walk that signals t first is the model's choice 1 of 2."""
    v = swapdb_walk("t", "1-1")
    assert v.witness is not None
    (swap,) = [s for s in v.witness.steps if s.served]
    assert swap.model_choices == (1,) and swap.served == (6,)
    assert swapdb_walk("s", "2-1").witness.steps[-1].model_choices == (0,)  # type: ignore[union-attr]


def test_witness_rules_only_on_request() -> None:
    events = [call(1, ["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"], OK, 0),
              call(1, ["XGROUP", "CREATE", "s", "g", "$"], {"error": "BUSYGROUP Consumer Group name already exists"},
                   1)]
    plain = check(events).witness
    assert plain is not None and all(s.rules == () for s in plain.steps)
    v = check_trace(loads(trace_text(events)), rules=True)
    assert v.witness is not None
    first, busy = v.witness.steps
    assert "XGROUP-9" in busy.rules and "XGROUP-8" in first.rules
    assert not any(r.startswith(("XADD-", "XREAD-")) for s in v.witness.steps for r in s.rules)  # other commands'


def test_divergence_witness_has_the_allowed_replies_and_the_prefix_execution() -> None:
    events = [send(1, ["SET", "k", "a"], 0), send(2, ["GET", "k"], 0.01),
              recv(1, OK, 0.02), recv(2, bulk("b"), 0.03)]
    v = check(events)
    assert_verdict(v, "diverge", 4)
    w = v.witness
    assert w is not None and w.divergence is not None
    d = w.divergence
    assert d.event == 3 and d.argv == [b"GET", b"k"] and d.got == bulk_reply("b")
    assert sorted(d.allowed_text) == ["'a'", "(nil bulk)"] and len(d.allowed) == 2
    assert w.events == 3 and [s.event for s in w.steps] == [0, 1]  # the first three events conform
    assert "model allows: (nil bulk)" in v.describe()


def bulk_reply(s: str) -> Any:
    from xspec.spec.resp import Bulk
    return Bulk(s.encode())


def test_an_explorer_counterexample_carries_the_witness_the_checker_finds() -> None:
    from xspec.explore.protocols import PROTOCOLS
    from xspec.explore.report import check_protocol

    report, _ = check_protocol(PROTOCOLS["noack-reader"])
    (found, *_) = [p.counterexample for p in report.properties if p.counterexample is not None]
    v = check_trace(found.trace)
    assert_verdict(v, "conform")
    assert v.witness is not None and v.witness.steps == found.witness.steps
