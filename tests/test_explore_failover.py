"""Delivery properties across crashes, link cuts and failovers (spec/exploration.md, EXPLORE-FAIL-1 .. -8).

* every replication configuration's numbers and verdicts are pinned (three small ones in the default suite,
  the rest slow-marked: up to about a minute each);
* each property has a configuration where it is violated and one where it holds;
* the compact system refines models/replication.py along random walks;
* symmetry reduction keeps the verdicts, and its representatives are the canonical forms of the unreduced states;
* ``xspec explore --protocol`` prints one line per property and configuration.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest
from click.testing import CliRunner

from xspec.commands.explore import explore_command
from xspec.explore.failover import NAMED, PROPERTIES, REGIMES, FailoverConfig, FailoverSystem
from xspec.explore.failover_refinement import random_walks
from xspec.explore.failover_report import check_failover
from xspec.explore.fastwalk import walk
from xspec.explore.poison import poison_questions

V, H = "violated", "holds"
# name -> (states, transitions, depth, {property: verdict or shortest counterexample length})
PINNED: dict[str, tuple[int, int, int, dict[str, Any]]] = {
    "async-1r": (213147, 865681, 21, {
        "acked-add-durable": 3, "acked-never-redelivered": 7, "single-owner": 6, "last-delivered-monotone": 6,
        "delivery-count-monotone": 9, "no-id-reuse": 4, "consumer-persists": 5}),
    "async-2r": (34990, 188424, 23, {
        "acked-add-durable": 3, "acked-never-redelivered": 7, "single-owner": 6, "last-delivered-monotone": 6,
        "delivery-count-monotone": H, "no-id-reuse": 4, "consumer-persists": 6}),
    "async-worker": (403852, 1750563, 23, {
        "acked-add-durable": 3, "acked-never-redelivered": 7, "single-owner": 6, "last-delivered-monotone": 6,
        "delivery-count-monotone": 9, "no-id-reuse": 4, "consumer-persists": 6}),
    "async-1r-no-history": (16980, 63972, 17, {
        "acked-add-durable": 3, "acked-never-redelivered": 7, "single-owner": 6, "last-delivered-monotone": 6,
        "delivery-count-monotone": H, "no-id-reuse": 4, "consumer-persists": 6}),
    "async-1r-no-failover": (40363, 205790, 19, dict.fromkeys(PROPERTIES, H)),
    "wait-1r": (710792, 3604146, 24, {
        "acked-add-durable": H, "acked-never-redelivered": H, "single-owner": 6, "last-delivered-monotone": 6,
        "delivery-count-monotone": 9, "no-id-reuse": 4, "consumer-persists": 5}),
    "wait-2r": (372752, 2549885, 31, {
        "acked-add-durable": H, "acked-never-redelivered": H, "single-owner": 6, "last-delivered-monotone": 6,
        "delivery-count-monotone": H, "no-id-reuse": 4, "consumer-persists": 6}),
    "wait-worker": (2099447, 12691849, 27, {
        "acked-add-durable": H, "acked-never-redelivered": H, "single-owner": 6, "last-delivered-monotone": 6,
        "delivery-count-monotone": 9, "no-id-reuse": 4, "consumer-persists": 6}),
    "wait-1r-no-history": (68960, 343935, 21, {
        "acked-add-durable": H, "acked-never-redelivered": H, "single-owner": 6, "last-delivered-monotone": 6,
        "delivery-count-monotone": H, "no-id-reuse": 4, "consumer-persists": 6}),
    "wait-1r-no-failover": (336056, 2075504, 23, dict.fromkeys(PROPERTIES, H)),
    "coordinated-1r": (45791, 222596, 20, {
        "acked-add-durable": H, "acked-never-redelivered": H, "single-owner": H, "last-delivered-monotone": H,
        "delivery-count-monotone": 8, "no-id-reuse": H, "consumer-persists": 4}),
    "coordinated-2r": (22690, 133359, 23, dict.fromkeys(PROPERTIES, H)),
    "coordinated-worker": (104128, 585445, 22, dict.fromkeys(PROPERTIES, H)),
    "coordinated-1r-no-history": (4680, 21327, 17, dict.fromkeys(PROPERTIES, H)),
    "coordinated-1r-no-failover": (40363, 205790, 19, dict.fromkeys(PROPERTIES, H)),
}
DEFAULT = ("async-1r-no-history", "coordinated-1r", "coordinated-1r-no-history")


def _run(name: str) -> tuple[int, int, int, dict[str, Any]]:
    report = check_failover(NAMED[name])
    r = report.result
    assert r.complete
    verdicts: dict[str, Any] = {v.prop: H if v.holds else len(v.steps) for v in report.verdicts}
    return len(r.states), r.transitions, r.max_depth, verdicts


@pytest.mark.parametrize("name", DEFAULT)
def test_the_one_replica_configurations_keep_their_numbers_and_verdicts(name: str) -> None:
    assert _run(name) == PINNED[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in PINNED if n not in DEFAULT])
def test_every_replication_configuration_keeps_its_numbers_and_verdicts(name: str) -> None:
    assert _run(name) == PINNED[name]


def test_every_configuration_is_pinned() -> None:
    assert set(PINNED) == set(NAMED)


def test_each_property_is_violated_somewhere_and_holds_somewhere() -> None:
    """EXPLORE-FAIL-4: the seven properties, each with a configuration that violates it and one where it holds."""
    for prop in PROPERTIES:
        verdicts = [numbers[3][prop] for numbers in PINNED.values()]
        assert H in verdicts, prop
        assert any(v != H for v in verdicts), prop


def test_under_asynchronous_replication_every_property_is_violated() -> None:
    assert all(v != H for v in PINNED["async-1r"][3].values())


def test_the_regimes_give_the_expected_guarantees() -> None:
    """Issue 17: under ``wait`` the acknowledged-write properties hold and delivery-count-monotone does not."""
    wait = PINNED["wait-1r"][3]
    assert wait["acked-add-durable"] == H and wait["acked-never-redelivered"] == H
    assert wait["delivery-count-monotone"] != H


@pytest.mark.parametrize("name", ["async-1r", "async-2r", "async-worker", "wait-1r", "wait-2r", "wait-worker",
                                  "coordinated-1r", "coordinated-2r", "coordinated-worker"])
def test_the_failover_system_refines_the_replication_model(name: str) -> None:
    worker = name.endswith("worker")
    out = random_walks(NAMED[name], walks=40 if name.startswith("wait") or worker else 12, length=30, seed=5,
                       favour_worker=worker)
    assert out.steps > 60 and not out.mismatches, "\n".join(out.mismatches[:3])
    if worker:  # the poison-pill limit: the worker's XPENDING and its dead-letter XADD ran on the model too
        assert out.inspections >= 3 and out.dead_letters >= 2, (out.inspections, out.dead_letters)
    if name.startswith("wait"):  # the model's WAIT answered where the compact system's marks say
        assert out.waits >= 5, out.waits
    if name.startswith("coordinated"):  # the model's FAILOVER handed over
        assert out.handovers >= 3, out.handovers


def _whole(system: FailoverSystem) -> set[Any]:
    first = system.initial()
    seen = {first}
    queue = deque([first])
    while queue:
        s = queue.popleft()
        for _, t in system.expand(s):
            t = system.normal(t)
            if t not in seen:
                seen.add(t)
                queue.append(t)
    return seen


@pytest.mark.parametrize("config", [FailoverConfig("small-1r", entries=1, cuts=0),
                                    FailoverConfig("small-2r", entries=1, replicas=2, history_reads=0,
                                                   monitor=False)])
def test_symmetry_keeps_the_verdicts_and_represents_every_state(config: FailoverConfig) -> None:
    reduced, _ = walk(FailoverSystem(config))
    whole, _ = walk(FailoverSystem(config, symmetry=False))
    system = FailoverSystem(config)
    states = _whole(FailoverSystem(config, symmetry=False))
    assert len(states) == len(whole.states)
    for s in states:  # the representative is a function of the orbit
        assert {system.canonical(r)[0] for r in system._relabellings(s)} == {system.canonical(s)[0]}
    assert {hash(system.canonical(s)[0]) for s in states} == set(reduced.states)
    assert set(reduced.violations) == set(whole.violations)


@pytest.mark.parametrize("config", [FailoverConfig("small-1r", entries=1, cuts=0),
                                    FailoverConfig("small-worker", entries=1, worker_claims=1, poison_limit=1,
                                                   history_reads=0),
                                    FailoverConfig("small-wait", regime="wait", entries=1, crashes=0)])
def test_forgetting_violated_properties_records_keeps_every_verdict(config: FailoverConfig) -> None:
    """EXPLORE-FAIL-7: a violated property's ghost record forgotten, the same verdicts and shortest lengths."""
    def verdicts(forget: bool) -> dict[str, Any]:
        result, _ = walk(FailoverSystem(config, forget=forget))
        return {prop: v.state and result.depth[v.state] for prop, v in result.violations.items()}

    assert verdicts(True) == verdicts(False)


def _poison_runs(config: FailoverConfig) -> tuple[set[bytes], int]:
    """The worker's commands in every reachable state's steps, and the most dead-letter entries a node held."""
    system = FailoverSystem(config, symmetry=False)
    states = _whole(system)
    heads = {step.argv[1] if step.argv[0] == b"XADD" else step.argv[0]
             for step in system.steps if step.proc == 3 and step.kind == "command"}
    most = max(bin(node[4]).count("1") for s in states for node in s[0] if node is not None)
    return heads, most


def test_the_worker_dead_letters_above_its_poison_pill_limit() -> None:
    """EXPLORE-FAIL-2: with the limit the worker asks XPENDING and moves the entry to ``dlq`` before its XACK;
    without it, it never writes the dead-letter stream."""
    small = FailoverConfig("small-worker", entries=1, worker_claims=1, poison_limit=1, history_reads=0, cuts=0)
    heads, most = _poison_runs(small)
    assert heads == {b"XAUTOCLAIM", b"XPENDING", b"dlq", b"XACK"} and most == 1
    heads, most = _poison_runs(FailoverConfig("no-limit", entries=1, worker_claims=1, history_reads=0, cuts=0))
    assert heads == {b"XAUTOCLAIM", b"XACK"} and most == 0
    heads, most = _poison_runs(FailoverConfig("high-limit", entries=1, worker_claims=1, poison_limit=5,
                                              history_reads=0, cuts=0))
    assert heads == {b"XAUTOCLAIM", b"XPENDING", b"XACK"} and most == 0


SMALL_POISON = {  # EXPLORE-FAIL-11 on one entry: question -> shortest path length, None: never
    "async": {"limit-evaded": 8, "dead-lettered-after-ack": 6, "acked-after-dead-letter": 6,
              "dead-letter-refused": None, "dead-letter-lost": 7},
    "wait": {"limit-evaded": 8, "dead-lettered-after-ack": 8, "acked-after-dead-letter": 8,
             "dead-letter-refused": None, "dead-letter-lost": None},
    "coordinated": {"limit-evaded": None, "dead-lettered-after-ack": 6, "acked-after-dead-letter": 6,
                    "dead-letter-refused": None, "dead-letter-lost": None},
}


@pytest.mark.parametrize("regime", REGIMES)
def test_what_the_poison_pill_limit_keeps_across_failures(regime: str) -> None:
    """EXPLORE-FAIL-11: only a failover that loses the claim's count lets a poison pill evade the limit
    (never under FAILOVER); racing the consumer's XACK needs no failure at all."""
    config = FailoverConfig(f"small-{regime}", regime=regime, entries=1, worker_claims=1, poison_limit=1,
                            history_reads=0)
    report = poison_questions(config)
    assert {q: p and len(p) for q, p in report.found.items()} == SMALL_POISON[regime]
    evaded = report.describe("limit-evaded")
    if evaded:
        assert any("REPLICAOF NO ONE" in step for step in evaded) and evaded[-1].startswith("w: XPENDING")
    with pytest.raises(ValueError):
        poison_questions(FailoverConfig("no-limit", worker_claims=1))


def test_counterexamples_are_shortest_paths_that_replay() -> None:
    """EXPLORE-FAIL-5: a violation's counterexample is a shortest path."""
    report = check_failover(NAMED["async-1r-no-history"])
    lost = next(v for v in report.verdicts if v.prop == "acked-add-durable")
    described = [report.system.steps[sid].describe(report.system.process_names) for sid, _ in lost.steps]
    assert described[0] == "producer: XADD s * p 1"
    assert described[-1].startswith("env: replica 1: REPLICAOF NO ONE")
    assert len(described) == 3


def test_cli_prints_one_line_per_property_and_configuration() -> None:
    """EXPLORE-FAIL-9: one line per property and configuration, holds or violated."""
    out = CliRunner().invoke(explore_command, ["--protocol", "coordinated-1r-no-history"])
    assert out.exit_code == 0, out.output
    lines = [line.split() for line in out.output.splitlines() if line.startswith("  coordinated-1r-no-history")]
    assert [words[1] for words in lines] == list(PROPERTIES)
    assert all(words[2] in (H, V) for words in lines)


def test_cli_refuses_an_unknown_protocol() -> None:
    out = CliRunner().invoke(explore_command, ["--protocol", "no-such"])
    assert out.exit_code == 2 and "no protocol 'no-such'" in out.output
