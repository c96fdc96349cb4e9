"""Tests of the corpus recorder: the scenario registry, the runner, and the recorded corpus on disk."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xspec.spec.resp import Array, Bulk, Int
from xspec.spec.trace_format import Call, Recv, Send, dumps, find_traces, load, loads
from xspec.traces import CORPUS_DIR
from xspec.traces.scenarios import Scenario, ScenarioError, all_scenarios
from xspec.traces.scenarios.helpers import block
from xspec.traces.scenarios.registry import SKIPPED_EDGE_CASES, TOPIC_MODULES
from xspec.traces.scenarios.runner import DEFAULT_STREAM_CONFIG, edge_case_readme, record_scenario, select

CORPUS = CORPUS_DIR / "redis-7.0.15"
SCENARIOS = all_scenarios()
BY_PATH = {s.path: s for s in SCENARIOS}


def scenario(path: str) -> Scenario:
    return BY_PATH[path]


# -- the registry --------------------------------------------------------------


def test_scenarios_have_unique_paths_and_known_topics() -> None:
    paths = [s.path for s in SCENARIOS]
    assert len(paths) == len(set(paths)), sorted(p for p in paths if paths.count(p) > 1)
    assert len(SCENARIOS) >= 150
    for s in SCENARIOS:
        assert s.topic in TOPIC_MODULES, s.path
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", s.name), s.path
        assert s.title and s.title == s.title.strip() and not s.title.endswith("."), s.path
        assert s.all_tags[0] == s.topic


def test_every_topic_module_registers_scenarios() -> None:
    assert {s.topic for s in SCENARIOS} == set(TOPIC_MODULES)


def test_every_edge_case_is_recorded_or_named_as_skipped() -> None:
    covered = {n for s in SCENARIOS for n in s.edge_cases}
    assert covered | set(SKIPPED_EDGE_CASES) == set(range(1, 76))
    assert all(1 <= n <= 75 for n in covered)
    readme = edge_case_readme(SCENARIOS, "7.0.15")
    for n in range(1, 76):
        assert re.search(rf"^\| {n} \| ", readme, re.MULTILINE), n
    for n in SKIPPED_EDGE_CASES:
        assert f"| {n} | " in readme and "not recorded:" in readme


def test_select_matches_globs_and_substrings() -> None:
    assert [s.path for s in select(SCENARIOS, "xadd/lenient-ids")] == ["xadd/lenient-ids.jsonl"]
    assert {s.topic for s in select(SCENARIOS, "blocking/*")} == {"blocking"}
    assert select(SCENARIOS, "lenient") == [scenario("xadd/lenient-ids.jsonl")]
    assert select(SCENARIOS, "no-such-scenario-anywhere") == []
    assert select(SCENARIOS, None) == SCENARIOS


# -- recording against the real server ------------------------------------------


@pytest.mark.redis
def test_recording_a_scenario_gives_a_trace_that_round_trips(redis) -> None:  # type: ignore[no-untyped-def]
    s = scenario("xadd/lenient-ids.jsonl")
    trace = record_scenario(s, redis.host, redis.port, redis.version)
    header = trace.header
    assert (header.server_name, header.source, header.clock) == ("redis", "recorded", "wall")
    assert header.title == s.title and header.tags == s.all_tags and header.config == {}
    calls = [e for e in trace.events if isinstance(e, Call)]
    assert [c.cmd[0] for c in calls] == [b"XADD", b"XADD", b"XADD", b"XRANGE"]
    assert [c.reply for c in calls[:3]] == [Bulk(b"1-1"), Bulk(b"2-1"), Bulk(b"3-4")]
    for c in calls:
        assert c.t0 is not None and c.t1 is not None and c.t0 <= c.t1
    text = dumps(trace)
    again = loads(text)
    assert again.header.to_json() == header.to_json()
    assert again.events == trace.events
    assert dumps(again) == text


@pytest.mark.redis
def test_scenario_config_is_applied_and_recorded_then_reset(redis) -> None:  # type: ignore[no-untyped-def]
    s = scenario("xinfo/radix-tree-counts.jsonl")
    assert s.config == {"stream-node-max-entries": "3"}
    trace = record_scenario(s, redis.host, redis.port, redis.version)
    assert trace.header.config == s.config
    infos = [e.reply for e in trace.events if isinstance(e, Call) and e.cmd[:2] == [b"XINFO", b"STREAM"]]
    # s4 holds 4 entries: with 3-entry nodes that is 2 radix-tree keys (the default would give 1)
    assert isinstance(infos[2], Array) and infos[2].items[2:4] == (Bulk(b"radix-tree-keys"), Int(2))
    record_scenario(scenario("xadd/lenient-ids.jsonl"), redis.host, redis.port, redis.version)
    conn = redis.connection()
    try:
        got = conn.call([b"CONFIG", b"GET", b"stream-node-max-entries"])
    finally:
        conn.close()
    assert got == Array((Bulk(b"stream-node-max-entries"), Bulk(DEFAULT_STREAM_CONFIG["stream-node-max-entries"].encode())))


@pytest.mark.redis
def test_each_scenario_starts_on_an_empty_server(redis) -> None:  # type: ignore[no-untyped-def]
    conn = redis.connection()
    try:
        conn.call([b"XADD", b"s", b"1-0", b"f", b"v"])
    finally:
        conn.close()
    trace = record_scenario(scenario("xadd/lenient-ids.jsonl"), redis.host, redis.port, redis.version)
    xrange = [e for e in trace.events if isinstance(e, Call)][-1]
    assert len(xrange.reply.items) == 3  # type: ignore[union-attr]  # the 1-0 added above is gone


@pytest.mark.redis
def test_blocking_scenario_records_send_and_recv_in_order(redis) -> None:  # type: ignore[no-untyped-def]
    trace = record_scenario(scenario("blocking/fifo-same-group.jsonl"), redis.host, redis.port, redis.version)
    kinds = [(type(e).__name__, e.c) for e in trace.events if isinstance(e, (Send, Recv))]
    assert kinds == [("Send", 2), ("Send", 3), ("Recv", 2), ("Recv", 3)]
    sends = [i for i, e in enumerate(trace.events) if isinstance(e, Send)]
    xadds = [i for i, e in enumerate(trace.events) if isinstance(e, Call) and e.cmd[:2] == [b"XADD", b"s"]
             and e.cmd[2] == b"2-0"]
    assert max(sends) < xadds[0], "both clients block before the serving XADD"


@pytest.mark.redis
def test_block_helper_refuses_a_command_that_does_not_block(redis) -> None:  # type: ignore[no-untyped-def]
    def not_blocking(r) -> None:  # type: ignore[no-untyped-def]
        r.call(1, "XADD", "s", "1-0", "f", "v")
        block(r, 2, "XREAD", "BLOCK", "0", "STREAMS", "s", "0")

    s = Scenario(topic="xread", name="not-blocking", title="A read that is served at once", run=not_blocking)
    with pytest.raises(ScenarioError):
        record_scenario(s, redis.host, redis.port, redis.version)


# -- the corpus on disk ------------------------------------------------------------


def test_corpus_has_one_valid_recorded_trace_per_scenario() -> None:
    files = find_traces([CORPUS])
    on_disk = {str(f.relative_to(CORPUS)) for f in files}
    assert on_disk == set(BY_PATH), (sorted(on_disk - set(BY_PATH)), sorted(set(BY_PATH) - on_disk))
    for f in files:
        trace = load(f)
        s = BY_PATH[str(f.relative_to(CORPUS))]
        assert trace.header.source == "recorded", f
        assert (trace.header.server_name, trace.header.server_version) == ("redis", "7.0.15"), f
        assert trace.header.title == s.title and trace.header.config == s.config, f
        assert trace.events, f


def test_corpus_readme_maps_the_edge_cases() -> None:
    text = (CORPUS / "README.md").read_text(encoding="utf-8")
    assert text == edge_case_readme(SCENARIOS, "7.0.15")


def test_corpus_files_are_written_deterministically() -> None:
    for f in find_traces([CORPUS])[:20]:
        assert dumps(load(f)) == Path(f).read_text(encoding="utf-8")
