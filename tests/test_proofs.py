"""``xspec prove``: the Z3 catalogue, its cross-check against the executable model, and seeded mutants.

The counterexamples Z3 finds for the expected violations are replayed here on
the model (which the differential tests tie to Redis 7.0.15), so a
counterexample that the model does not exhibit fails the suite.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import z3
from click.testing import CliRunner

from xspec.commands.prove import prove_command
from xspec.models import ManualClock, Server
from xspec.models.invariants import violations
from xspec.models.mutants import MUTANTS, apply
from xspec.proofs import catalogue, clients, state
from xspec.proofs.crosscheck import COMMANDS, HELPERS, LAG_HELPERS, cross_check
from xspec.proofs.run import HOLDS, VIOLATED, Result, prove_all
from xspec.spec.resp import Array, Bulk, Int, Reply


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    return {r.prop.name: r for r in prove_all()}


def test_catalogue_is_large_and_named_by_rules() -> None:
    names = [p.name for p in catalogue.PROPERTIES]
    assert len(names) >= 25 and len(set(names)) == len(names)
    assert all(p.rules and p.claim and p.expect in (HOLDS, VIOLATED) for p in catalogue.PROPERTIES)
    assert all(p.why for p in catalogue.PROPERTIES if p.expect == VIOLATED)


def test_every_property_comes_out_as_expected(results: dict[str, Result]) -> None:
    wrong = {name: (r.status, r.failed, r.reason) for name, r in results.items() if not r.as_expected}
    assert not wrong


def test_expected_violations_come_with_counterexamples(results: dict[str, Result]) -> None:
    violated = [r for r in results.values() if r.prop.expect == VIOLATED]
    assert {r.prop.name for r in violated} >= {"IND-XADD", "LAG-READ-REDIS70", "LAG-EXACT-REDIS70"}
    for r in violated:
        assert r.status == VIOLATED and r.counterexample, r.prop.name
    assert "entries-added 18446744073709551615" in "\n".join(results["IND-XADD"].counterexample)


def test_every_invariant_and_command_is_covered() -> None:
    induction = [p for p in catalogue.PROPERTIES if p.name.startswith("IND-")]
    assert len(induction) >= 14
    checked = {name for name, _ in catalogue.INVARIANTS}
    assert checked >= {"INV-1", "INV-2", "INV-3", "INV-4", "INV-6", "INV-7", "INV-8"}
    assert {name for name, _ in clients.CLIENT_INVARIANTS} == {"INV-10", "INV-11"}


def test_reads_table_names_exactly_the_fields_each_invariant_reads() -> None:
    """A step that leaves an invariant's fields alone skips its proof: READS must not miss a field."""
    s = state.fresh("probe.")
    by_constant = {str(value): name for name, value in s.field_items()}
    for name, inv in state.INVARIANTS:
        found: set[str] = set()
        todo = [inv(s)]
        while todo:
            t = todo.pop()
            if z3.is_const(t) and str(t) in by_constant:
                found.add(by_constant[str(t)])
            todo.extend(t.children())
        assert found == set(state.READS[name]), name


# -- the counterexamples, on the model ------------------------------------------------------------------
def _run(commands: list[list[bytes]]) -> tuple[Server, list[Reply | None]]:
    server = Server(clock=ManualClock(1000))
    return server, [server.execute(1, argv).reply for argv in commands]


def _group_info(reply: Reply | None) -> dict[bytes, Reply]:
    assert isinstance(reply, Array)
    record = reply.items[0]
    assert isinstance(record, Array)
    items = record.items
    return {k.value: v for k, v in zip(items[::2], items[1::2], strict=True) if isinstance(k, Bulk)}


# The two ways a '>' read makes entries-read negative (INV-8, LAG-6): one more than 2^63-1, and the
# estimate from an entries-added of 2^63. Each ends with the group's entries-read at -2^63.
NEGATIVE_ENTRIES_READ = {
    "wrap": [[b"XADD", b"s", b"1-0", b"f", b"v"],
             [b"XGROUP", b"CREATE", b"s", b"g", b"0", b"ENTRIESREAD", b"9223372036854775807"],
             [b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"s", b">"]],
    "estimate": [[b"XADD", b"s", b"1-0", b"f", b"v"],
                 [b"XSETID", b"s", b"1-0", b"ENTRIESADDED", b"9223372036854775807"],
                 [b"XADD", b"s", b"2-0", b"f", b"v"],
                 [b"XGROUP", b"CREATE", b"s", b"g", b"1-0"],
                 [b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"s", b">"]],
}


@pytest.mark.parametrize("way", sorted(NEGATIVE_ENTRIES_READ))
def test_negative_entries_read_is_reachable_and_allowed_by_inv8(way: str) -> None:
    """The model reaches entries-read -2^63 (once IND-READ-NEW's counterexample) and INV-8 allows it."""
    server, replies = _run([*NEGATIVE_ENTRIES_READ[way], [b"XINFO", b"GROUPS", b"s"]])
    assert _group_info(replies[-1])[b"entries-read"] == Int(-(1 << 63))
    assert violations(server) == []


@pytest.mark.parametrize("way", sorted(NEGATIVE_ENTRIES_READ))
def test_negative_entries_read_on_the_real_server(redis: Any, way: str) -> None:
    """Redis 7.0.15 shows entries-read -2^63 after both sequences; the model explains the trace."""
    s = redis.scenario(title=f"entries-read made negative by the {way}")
    for argv in NEGATIVE_ENTRIES_READ[way]:
        s.call(1, *argv)
    assert _group_info(s.call(1, b"XINFO", b"GROUPS", b"s"))[b"entries-read"] == Int(-(1 << 63))
    s.check()


def test_delivery_counts_past_2_63_are_allowed_by_inv8() -> None:
    """INV-8: delivery counts are unsigned 64-bit; XPENDING prints 2^63 as -2^63 (XCLAIM-14, as on 7.0.15)."""
    server, replies = _run([
        [b"XADD", b"s", b"1-0", b"f", b"v"], [b"XGROUP", b"CREATE", b"s", b"g", b"0"],
        [b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"s", b">"],
        [b"XCLAIM", b"s", b"g", b"c", b"0", b"1-0", b"RETRYCOUNT", b"9223372036854775807"],
        [b"XCLAIM", b"s", b"g", b"c", b"0", b"1-0"],
        [b"XPENDING", b"s", b"g", b"-", b"+", b"1"]])
    assert replies[-1] == Array((Array((Bulk(b"1-0"), Bulk(b"c"), Int(0), Int(-(1 << 63)))),))
    assert violations(server) == []


def test_skipped_tombstone_counterexample_on_the_model() -> None:
    """LAG-READ-REDIS70's counterexample: 0-2, 0-5 (deleted), 0-6; group at 0-4 with entries-read 1."""
    _, replies = _run([
        [b"XADD", b"s", b"0-2", b"f", b"v"], [b"XADD", b"s", b"0-5", b"f", b"v"],
        [b"XADD", b"s", b"0-6", b"f", b"v"], [b"XDEL", b"s", b"0-5"],
        [b"XGROUP", b"CREATE", b"s", b"g", b"0-4", b"ENTRIESREAD", b"1"],
        [b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"s", b">"],
        [b"XINFO", b"GROUPS", b"s"]])
    info = _group_info(replies[-1])
    assert info[b"entries-read"] == Int(2)  # three entries were added up to 0-6
    assert info[b"lag"] == Int(1)  # nothing is left to deliver


def test_first_entry_shortcut_counterexample_on_the_model() -> None:
    """LAG-EXACT-REDIS70's counterexample: four deletions before the only entry 0-9; lag 4, one to deliver."""
    _, replies = _run([
        *([b"XADD", b"s", b"0-%d" % n, b"f", b"v"] for n in (1, 5, 6, 7, 9)),
        [b"XDEL", b"s", b"0-1", b"0-5", b"0-6", b"0-7"],
        [b"XGROUP", b"CREATE", b"s", b"g", b"0-4", b"ENTRIESREAD", b"1"],
        [b"XINFO", b"GROUPS", b"s"]])
    assert _group_info(replies[-1])[b"lag"] == Int(4)


def test_claim_counterexamples_on_the_model() -> None:
    """XCLAIM-EXCLUSIVE-IDLE and -ZERO: the same entry claimed twice at the same clock reading."""
    for first_options, min_idle in (([b"IDLE", b"5"], b"1"), ([], b"0")):
        _, replies = _run([
            [b"XADD", b"s", b"1-0", b"f", b"v"], [b"XGROUP", b"CREATE", b"s", b"g", b"0"],
            [b"XCLAIM", b"s", b"g", b"alice", min_idle, b"1-0", b"FORCE", b"JUSTID", *first_options],
            [b"XCLAIM", b"s", b"g", b"bob", min_idle, b"1-0", b"JUSTID"]])
        assert replies[-2] == replies[-1] == Array((Bulk(b"1-0"),))
    _, replies = _run([  # and with min-idle > 0 and no IDLE/TIME the second claim gets nothing
        [b"XADD", b"s", b"1-0", b"f", b"v"], [b"XGROUP", b"CREATE", b"s", b"g", b"0"],
        [b"XCLAIM", b"s", b"g", b"alice", b"1", b"1-0", b"FORCE", b"JUSTID"],
        [b"XCLAIM", b"s", b"g", b"bob", b"1", b"1-0", b"JUSTID"]])
    assert replies[-1] == Array(())


def test_entries_added_wrap_counterexample_on_the_model() -> None:
    """IND-XADD's counterexample to induction: at entries-added 2^64-1 one XADD wraps it below the length."""
    server = Server(clock=ManualClock(1000))
    server.execute(1, [b"XADD", b"s", b"1-0", b"f", b"v"])
    stream = server.dbs[0][b"s"]
    stream.entries_added = (1 << 64) - 1  # type: ignore[union-attr]  # no command reaches it in practice
    server.execute(1, [b"XADD", b"s", b"*", b"f", b"v"])
    assert any("INV-3" in v for v in violations(server))


# -- cross-check ---------------------------------------------------------------------------------------
def test_encodings_agree_with_the_model_on_random_states() -> None:
    report = cross_check(1000, seed=2024)
    assert set(report.samples) == {*COMMANDS, *HELPERS}
    assert sum(report.samples.values()) == 1000
    assert not report.failures, report.failures[:5]


# -- seeded mutants (models/mutants.py) ----------------------------------------------------------------
# The mutants the cross-check can see, with the command families that exercise them. The others
# mutate what the encodings leave out (XPENDING, XRANGE, RESP3 shapes, blocking).
KILLS = {
    "xclaim-no-idle-check": ["XCLAIM"],
    "xclaim-min-idle-inclusive": ["XCLAIM"],
    "xclaim-justid-counts": ["XCLAIM"],
    "xclaim-ignores-retrycount": ["XCLAIM"],
    "xautoclaim-forgets-deleted": ["XAUTOCLAIM"],
    "xautoclaim-budget-off-by-one": ["XAUTOCLAIM"],
    "xautoclaim-min-idle-inclusive": ["XAUTOCLAIM"],
    "xautoclaim-justid-counts": ["XAUTOCLAIM"],
    "xack-keeps-consumer-pel": ["XACK"],
    "xack-counts-unknown-ids": ["XACK"],
    "delconsumer-keeps-pending": ["XGROUP DELCONSUMER"],
    "lag-off-by-one": [LAG_HELPERS],
    "noack-adds-to-pel": ["XREADGROUP >"],
    "history-redelivery-not-counted": ["XREADGROUP history"],
    "xdel-forgets-max-deleted": ["XDEL"],
    "xadd-auto-seq-starts-at-one": ["XADD"],
    "xsetid-ignores-entries-added": ["XSETID"],
}


@pytest.mark.parametrize("name", sorted(KILLS))
def test_cross_check_kills_mutant(name: str) -> None:
    with apply(name):
        report = cross_check(30, seed=7, commands=KILLS[name])
    assert report.failures, f"mutant {name} survived 30 samples of {KILLS[name]}"


def test_mutant_kill_rate_is_reported() -> None:
    """Every mutant of the registry is either in KILLS or known not to be reachable by the encodings."""
    unreachable = {"xpending-idle-inclusive", "destroy-leaves-readers-blocked", "resp3-read-reply-as-array",
                   "blocked-fifo-reversed", "xrange-count-off-by-one"}
    assert set(MUTANTS) <= set(KILLS) | unreachable
    assert len(set(KILLS) & set(MUTANTS)) / len(MUTANTS) >= 0.75


# -- the command ----------------------------------------------------------------------------------------
def test_prove_command_json_and_exit_status(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    ok = runner.invoke(prove_command, ["--only", "ID-*", "--json"])
    assert ok.exit_code == 0, ok.output
    rows = json.loads(ok.output)["properties"]
    assert {r["name"] for r in rows} == {"ID-ORDER", "ID-SUCC", "ID-PRED"}
    assert all(r["result"] == HOLDS for r in rows)
    # A property expected to hold that fails makes the command exit 1.
    broken = [p if p.name != "ID-ORDER" else catalogue.Property(p.name, p.rules, p.claim, p.build, "violated", "x")
              for p in catalogue.PROPERTIES]
    monkeypatch.setattr(catalogue, "PROPERTIES", broken)
    monkeypatch.setattr("xspec.proofs.run.PROPERTIES", broken)
    bad = runner.invoke(prove_command, ["--only", "ID-ORDER"])
    assert bad.exit_code == 1
    assert "HOLDS (expected violated)" in bad.output
