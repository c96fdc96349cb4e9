"""The audit without Spark: schemas against the spec, the ledger's definitions and corner cases, the split's
soundness, verdicts equal to ``xspec replay``'s on every bundled trace, quarantine, the CLI's errors, and the
workload generator's expectations (model, real Redis)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.audit_support import Script, file_ledger, kinds, ledger_and_anomalies
from xspec.audit.schema import TABLES, type_text
from xspec.audit.split import check_split, plan_split
from xspec.audit.workload import ALGORITHMS
from xspec.cli import main
from xspec.spec.resp import Bulk, Int
from xspec.spec.trace_format import Call, Header, Recv, Send, Trace, find_traces, load
from xspec.traces.check.checker import check_trace

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "audit.md"


# ---------------------------------------------------------------------------------------------
# Schemas


def spec_tables() -> dict[str, list[tuple[str, str]]]:
    tables: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in SPEC.read_text().splitlines():
        m = re.match(r"### (\w+)$", line)
        if m:
            current = m.group(1)
            tables[current] = []
            continue
        if current and line.startswith("| ") and not line.startswith("| column"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            tables[current].append((cells[0], cells[1]))
        elif current and not line.strip() and tables[current]:
            current = None
    return tables


def test_schemas_are_the_specs_tables() -> None:
    spec = spec_tables()
    assert set(spec) == set(TABLES)
    for name, schema in TABLES.items():
        assert spec[name] == [(f.name, type_text(f.type)) for f in schema], name


# ---------------------------------------------------------------------------------------------
# The ledger


def group(s: Script, key: str = "s", g: str = "g") -> None:
    s(1, "XGROUP", "CREATE", key, g, "$", "MKSTREAM")


def test_ledger_follows_an_entry_through_delivery_claim_and_ack() -> None:
    s = Script()
    group(s)
    e = s(1, "XADD", "s", "*", "f", "v").value.decode()
    s.sleep(5)
    s(2, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    s.sleep(100)
    s(3, "XCLAIM", "s", "g", "bob", "50", e)
    s(3, "XACK", "s", "g", e)
    ledger, anomalies = ledger_and_anomalies(s.trace())
    (row,) = ledger
    assert [(d["consumer"], d["how"], d["count"]) for d in row["deliveries"]] == [(b"alice", ">", 1),
                                                                                (b"bob", "XCLAIM", 2)]
    assert row["deliveries"][0]["time"] == (1_700_000_000_000 + 5) * 1000
    assert [(a["consumer"], a["reply"], a["included"]) for a in row["acks"]] == [(b"bob", 1, True)]
    assert row["state"] == "acked" and row["added_event"] == 2 and row["group_at_add"]
    assert anomalies == []


def test_a_deleted_entrys_history_slot_is_not_a_delivery() -> None:
    s = Script()
    group(s)
    e = s(1, "XADD", "s", "*", "f", "v").value.decode()
    s(2, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    s(1, "XDEL", "s", e)
    reply = s(2, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    assert "null" in json.dumps(str(reply)).lower() or reply  # the [E, nil] slot
    ledger, anomalies = ledger_and_anomalies(s.trace())
    (row,) = ledger
    assert len(row["deliveries"]) == 1 and row["removed_how"] == "XDEL" and row["removed_pending"]
    assert kinds(anomalies) == {("deleted-while-pending", e)}


def test_xack_of_several_ids_includes_what_its_count_covers_and_attributes_by_connection() -> None:
    s = Script()
    group(s)
    e1 = s(1, "XADD", "s", "*", "f", "1").value.decode()
    e2 = s(1, "XADD", "s", "*", "f", "2").value.decode()
    s(2, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    assert s(2, "XACK", "s", "g", e1, e2) == Int(1)  # only e1 was pending
    s(4, "XACK", "s", "g", e2)  # a connection that never used g
    ledger, _ = ledger_and_anomalies(s.trace())
    by_id = {r["id"]: r for r in ledger}
    assert [a["included"] for a in by_id[e1]["acks"]] == [True]
    assert [(a["consumer"], a["included"]) for a in by_id[e2]["acks"]] == [(b"alice", False), (None, False)]
    assert by_id[e2]["state"] == "undelivered"


def test_lost_needs_the_group_at_the_add_and_stuck_counts_from_the_last_delivery() -> None:
    s = Script()
    before = s(1, "XADD", "s", "*", "f", "0").value.decode()  # before the group: never lost
    s(1, "XGROUP", "CREATE", "s", "g", "$")
    lost = s(1, "XADD", "s", "*", "f", "1").value.decode()
    kept = s(1, "XADD", "s", "*", "f", "2").value.decode()
    s(1, "XTRIM", "s", "MAXLEN", "1")
    s(2, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    s.sleep(999)
    s(1, "PING")
    _, anomalies = ledger_and_anomalies(s.trace(), stuck_after_ms=1000)
    assert kinds(anomalies) == {("lost", lost)}
    s.sleep(1)
    s(1, "PING")
    _, anomalies = ledger_and_anomalies(s.trace(), stuck_after_ms=1000)
    assert kinds(anomalies) == {("lost", lost), ("stuck", kept)}
    assert before not in {a["id"] for a in anomalies}


def test_justid_claims_deliver_nothing_and_force_justid_makes_an_entry_stuck_from_the_claim() -> None:
    s = Script()
    group(s)
    e = s(1, "XADD", "s", "*", "f", "v").value.decode()
    s.sleep(10)
    s(3, "XCLAIM", "s", "g", "bob", "0", e, "FORCE", "JUSTID")
    s.sleep(60_000)
    s(1, "PING")
    ledger, anomalies = ledger_and_anomalies(s.trace())
    (row,) = ledger
    assert row["deliveries"] == [] and row["state"] == "pending" and row["owner"] == b"bob"
    assert kinds(anomalies) == {("stuck", e)}


def test_poison_double_processing_redelivery_and_dead_letters() -> None:
    s = Script()
    group(s)
    p = s(1, "XADD", "s", "*", "kind", "poison").value.decode()
    s(2, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    for _ in range(4):
        s.sleep(100)
        s(3, "XAUTOCLAIM", "s", "g", "bob", "10", "0-0")
    ledger, anomalies = ledger_and_anomalies(s.trace(), poison=5)
    assert kinds(anomalies) == {("poison", p)}
    # bob gives up: dead-letters it, acks; alice acks it late: both processed it
    s(3, "XADD", "dead", "*", "kind", "poison")
    s(3, "XACK", "s", "g", p)
    s(2, "XACK", "s", "g", p)
    s(1, "XGROUP", "SETID", "s", "g", "0")
    s(2, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    ledger, anomalies = ledger_and_anomalies(s.trace(), poison=5)
    (row,) = [r for r in ledger if r["key"] == b"s"]
    assert row["dead_letter_key"] == b"dead" and row["dead_letter_id"] is not None
    assert kinds(anomalies) == {("double-processing", p), ("redelivered-after-ack", p)}
    (dp,) = [a for a in anomalies if a["kind"] == "double-processing"]
    assert dp["consumers"] == [b"alice", b"bob"]


def test_noack_multi_exec_and_unanswered_sends() -> None:
    s = Script()
    group(s)
    e = s(1, "XADD", "s", "*", "f", "v").value.decode()
    s(2, "XREADGROUP", "GROUP", "g", "alice", "NOACK", "STREAMS", "s", ">")
    s(3, "MULTI")
    s(3, "XDEL", "s", e)
    s(3, "EXEC")
    trace = s.trace()
    trace.events.append(Send(c=4, cmd=[b"XDEL", b"s", b"0-1"], now=trace.events[-1].now))  # never answered
    ledger, anomalies = ledger_and_anomalies(trace)
    (row,) = ledger
    assert row["state"] == "delivered" and row["removed_how"] == "XDEL" and not row["removed_pending"]
    assert anomalies == []


# ---------------------------------------------------------------------------------------------
# The split


def wall_trace(*events: object) -> Trace:
    return Trace(Header(), list(events))  # type: ignore[arg-type]


def xadd(c: int, key: str, t0_ms: float, t1_ms: float, entry: str) -> Call:
    return Call(c=c, cmd=[b"XADD", key.encode(), b"*", b"f", b"v"], reply=Bulk(entry.encode()),
                t0=int(t0_ms * 1000), t1=int(t1_ms * 1000))


def test_parts_that_each_conform_but_need_the_clock_to_go_back_are_checked_whole() -> None:
    trace = wall_trace(xadd(1, "a", 10_000, 10_002, "10003-0"), xadd(2, "b", 10_002.5, 10_003, "10001-0"))
    assert len(plan_split(trace)) == 2  # type: ignore[arg-type]
    whole = check_trace(trace)
    assert whole.status == "diverge"
    verdict, parts, how = check_split(trace)
    assert (verdict.status, verdict.event, verdict.describe()) == (whole.status, whole.event, whole.describe())
    assert how == "fallback: the parts' executions do not merge" and parts == 2


def test_parts_whose_executions_merge_conform_without_the_whole_search() -> None:
    trace = wall_trace(xadd(1, "a", 10_000, 10_002, "10001-0"), xadd(2, "b", 10_002.5, 10_003, "10003-0"),
                       Call(c=1, cmd=[b"PING"], reply=Bulk(b"x"), t0=10_004_000, t1=10_004_100))
    trace.events[-1] = Call(c=1, cmd=[b"XLEN", b"a"], reply=Int(1), t0=10_004_000, t1=10_004_100)
    calls: list[int] = []

    def counting(t: Trace, d: str | None) -> object:
        calls.append(len(t.events))
        return check_trace(t, d)

    verdict, parts, how = check_split(trace, "auto", counting)  # type: ignore[arg-type]
    assert (verdict.status, parts, how) == ("conform", 2, "split") and sorted(calls) == [1, 2]
    assert check_trace(trace).status == "conform"


def test_multi_key_commands_and_blocking_clients_join_their_keys() -> None:
    joined = wall_trace(xadd(1, "a", 1000, 1001, "1001-0"), xadd(2, "b", 1002, 1003, "1003-0"),
                        Call(c=1, cmd=[b"DEL", b"a", b"b"], reply=Int(2), t0=1_004_000, t1=1_004_500))
    assert plan_split(joined) == "one part"
    blocking = wall_trace(
        Send(c=3, cmd=[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"a", b"$"], t=1_000_000),
        xadd(1, "a", 1001, 1002, "1002-0"),
        Recv(c=3, reply=Bulk(b"x"), t=1_002_500),
        xadd(3, "b", 1003, 1004, "1004-0"))
    assert plan_split(blocking) == "one part"
    assert plan_split(wall_trace(Call(c=1, cmd=[b"FLUSHALL"], reply=Bulk(b"OK")))).startswith("uses FLUSHALL")


def test_split_verdicts_equal_whole_verdicts_on_the_bundled_traces() -> None:
    # every trace the split cuts, and every tenth of the others (the default suite's budget)
    files = find_traces([ROOT / "traces" / "redis-7.0.15", ROOT / "traces" / "findings", ROOT / "traces" / "tutorial"])
    traces = [load(f) for f in files]
    cut = [t for t in traces if not isinstance(plan_split(t), str)]
    split = 0
    ids = {id(t) for t in cut}
    for trace in cut + [t for t in traces if id(t) not in ids][::10]:
        whole = check_trace(trace)
        verdict, _, how = check_split(trace)
        split += how == "split"
        assert (verdict.status, verdict.event, verdict.describe()) == (whole.status, whole.event,
                                                                       whole.describe()), trace.path
    assert len(cut) >= 40 and split >= 30


# ---------------------------------------------------------------------------------------------
# Conformance equal to xspec replay, on every bundled corpus (in process; the Spark path runs the same function)


def replay_text(rows: list[dict[str, object]]) -> list[str]:
    """What ``xspec replay`` prints for these verdict rows (its per-trace lines)."""
    lines = []
    for v in rows:
        expected, event = v["expected"], v["expected_event"]
        if v["met"]:
            mark = "" if expected == "conform" else "  (as expected)"
        else:
            at = f" at event {event}" if expected == "diverge" and event is not None else ""
            mark = f"  (expected {expected}{at})"
        first, *details = str(v["message"]).split("\n")
        lines += [f"{v['trace']}: {first}{mark}", *details]
    return lines


SINGLE_SERVER_CORPORA = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "traces").iterdir()
                               if p.is_dir() and p.name != "replication" and find_traces([p]))


@pytest.mark.parametrize("corpora", [
    pytest.param(SINGLE_SERVER_CORPORA, id="single-server"),
    # the replication corpora (trace/2) take minutes to check: in the slow suite
    pytest.param(["traces"], id="all", marks=pytest.mark.slow),
])
def test_in_process_audit_gives_replays_verdicts_on_every_bundled_trace(tmp_path: Path, corpora: list[str]) -> None:
    from xspec.audit.run import AuditOptions, audit
    status, summary = audit([ROOT / c for c in corpora], tmp_path, AuditOptions(master="none"), lambda _: None)
    replay = CliRunner().invoke(main, ["replay", *(str(ROOT / c) for c in corpora)])
    import pyarrow.parquet as pq
    order = {str(f): n for n, f in enumerate(find_traces([ROOT / c for c in corpora]))}  # replay's order
    rows = sorted(pq.read_table(tmp_path / "verdicts").to_pylist(), key=lambda r: order[r["trace"]])
    *lines, last = replay.output.rstrip("\n").split("\n")
    assert replay_text(rows) == lines
    c = summary["conformance"]
    assert last == (f"{summary['traces']} traces, {summary['events']} events: {c['conform']} conform, "
                    f"{c['diverge']} diverge, {c['unsupported']} unsupported, {c['inconclusive']} inconclusive")
    assert status == replay.exit_code == 0
    assert (tmp_path / "report.html").read_text().count("<svg") == 5


# ---------------------------------------------------------------------------------------------
# Quarantine and the command line


def test_malformed_files_are_quarantined_with_file_and_line(tmp_path: Path) -> None:
    good = ROOT / "traces" / "tutorial"
    bad = tmp_path / "in" / "bad.jsonl"
    bad.parent.mkdir()
    lines = (ROOT / "traces" / "redis-7.0.15").glob("**/*.jsonl").__next__().read_text().splitlines()
    lines[1] = "{not json"
    lines.append('{"ev": "call", "c": "x"}')
    bad.write_text("\n".join(lines) + "\n")
    (tmp_path / "in" / "empty.jsonl").write_text("")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["audit", str(good), str(tmp_path / "in"), "--master", "none", "--out",
                                       str(out), "-q"])
    assert result.exit_code == 1, result.output
    summary = json.loads((out / "summary.json").read_text())
    got = {(Path(q["file"]).name, q["line"]) for q in summary["quarantined"]}
    assert got == {("bad.jsonl", 2), ("bad.jsonl", len(lines)), ("empty.jsonl", 1)}
    assert summary["conformance"]["conform"] == len(find_traces([good]))
    assert "Quarantined" in (out / "report.html").read_text()


@pytest.mark.parametrize("args, message", [
    ([], "give at least one trace file or folder"),
    (["no/such/place"], "no such file or folder"),
    (["traces/tutorial", "--out", "/dev/null/x"], "cannot write into"),
    (["traces/tutorial", "--master", "yarn"], "is not a Spark master"),
    (["traces/tutorial", "--stuck-after-ms", "-1"], "--stuck-after-ms"),
    (["spec/"], "no trace files"),
])
def test_bad_audit_arguments_get_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["audit", *args])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_bad_workload_target_gets_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["workload", "--target", "nowhere", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "is not a target" in result.output and result.exception is not None
    assert "Traceback" not in result.output
    result = CliRunner().invoke(main, ["workload", "--target", "cluster:redis-1.0", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "cluster:redis-1.0: unknown server" in result.output
    assert "Traceback" not in result.output


# ---------------------------------------------------------------------------------------------
# Workloads: the audit finds exactly what the generator caused


def expected_of(folder: Path) -> set[tuple[str, str, str, str]]:
    out = set()
    for f in folder.glob("*.expected.json"):
        data = json.loads(f.read_text())
        out |= {(data["trace"], a["kind"], a["key"], a["group"], a["id"]) for a in data["anomalies"]}  # type: ignore
    return out  # type: ignore[return-value]


def found_in(summary: dict[str, object]) -> set[tuple[str, ...]]:
    return {(a["trace"], a["kind"], a["key"], a["group"], a["id"]) for a in summary["anomalies"]}  # type: ignore


def test_model_workloads_anomalies_are_exactly_the_generators(tmp_path: Path) -> None:
    from xspec.audit.run import AuditOptions, audit
    result = CliRunner().invoke(main, ["workload", "--target", "model:redis-7.0", "--out", str(tmp_path / "w"),
                                       "--traces", "2", "--seed", "3", "--stuck-after-ms", "1000"])
    assert result.exit_code == 0, result.output
    expected = expected_of(tmp_path / "w")
    assert {k[1] for k in expected} == {"lost", "stuck", "poison", "double-processing", "deleted-while-pending",
                                        "redelivered-after-ack"}
    status, summary = audit([tmp_path / "w"], tmp_path / "a", AuditOptions(master="none", stuck_after_ms=1000),
                            lambda _: None)
    assert status == 0 and summary["conformance"]["conform"] == 2
    assert found_in(summary) == expected


def test_live_workloads_on_redis_are_audited_exactly(tmp_path: Path, redis_server: object) -> None:
    from xspec.audit.run import AuditOptions, audit
    from xspec.audit.workload import Params, generate
    params = Params(streams=9, messages=12, tick_ms=5, process_ms=20, claim_min_idle_ms=100, stuck_after_ms=300,
                    final_idle_ms=600)
    url = f"redis://{redis_server.host}:{redis_server.port}"  # type: ignore[attr-defined]
    list(generate(url, tmp_path / "w", params=params, seed=1, allow_flush=True))
    status, summary = audit([tmp_path / "w"], tmp_path / "a", AuditOptions(master="none", stuck_after_ms=300),
                            lambda _: None)
    assert status == 0 and summary["conformance"]["conform"] == 1
    assert found_in(summary) == expected_of(tmp_path / "w")
    assert load(next((tmp_path / "w").glob("*.jsonl"))).header.server_version == "7.0.15"


# ---------------------------------------------------------------------------------------------
# trace/2: phantom, id-reuse, group-less lost


FAILOVER_ANOMALIES = {
    "acked-pending-again": {"redelivered-after-ack"},
    "last-delivered-regressed": {"redelivered-after-ack"},
    "acked-xadd-lost": {"lost"},
    "wait-timed-out-then-lost": {"lost"},
    "wait-met-by-the-other-replica": {"lost"},
    "id-reissued-stale-ack": {"id-reuse"},
}
"""The anomalies each failover trace shows (spec/audit.md, "trace/2"); the others show none."""


@pytest.mark.parametrize("server", sorted(p.name for p in (ROOT / "traces" / "replication").iterdir()
                                           if (p / "failover").is_dir()))
def test_failover_traces_show_their_tagged_anomalies(server: str) -> None:
    from xspec.audit.ledger import ANOMALY_KINDS
    files = find_traces([ROOT / "traces" / "replication" / server / "failover"])
    assert len(files) >= 15
    for f in files:
        _, anomalies = file_ledger(f)
        got = {a["kind"] for a in anomalies}
        name = f.name.removesuffix(".jsonl")
        assert got == FAILOVER_ANOMALIES.get(name, set()), f
        # every tag that names an audit anomaly shows, except double-processing where no consumer acked (spec)
        tags = set(load(f).header.tags or []) & set(ANOMALY_KINDS)
        assert tags - {"double-processing"} <= got, f


def test_a_node_the_trace_says_nothing_about_counts_as_holding_the_entry(tmp_path: Path) -> None:
    source = ROOT / "traces" / "replication" / "redis-7.0.15" / "failover" / "acked-xadd-lost.jsonl"
    _, anomalies = file_ledger(source)
    assert [(a["kind"], a["id"], a["group"], a["events"]) for a in anomalies] == [("lost", "2-1", None, [9])]
    lines = source.read_text().splitlines()
    for drop, left in ((["XRANGE"], set()), ([], {"lost"})):
        # without the final reads no node is known to lack 2-1; with only b's read, a (resynchronised from b) lacks it
        kept = [ln for ln in lines if not any(w in ln for w in drop)] if drop else \
            [ln for ln in lines if '"node":"a","cmd":["XRANGE"' not in ln]
        cut = tmp_path / f"cut{len(kept)}.jsonl"
        cut.write_text("\n".join(kept) + "\n")
        assert {a["kind"] for a in file_ledger(cut)[1]} == left


def test_failover_drills_anomalies_are_exactly_the_generators(tmp_path: Path) -> None:
    from xspec.audit.run import AuditOptions, audit
    try:
        from xspec.traces.cluster.nodes import find_server
        find_server("redis-7.0.15")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    result = CliRunner().invoke(main, ["workload", "--target", "cluster:redis-7.0.15", "--out", str(tmp_path / "w"),
                                       "--traces", "2", "--streams", "4", "--seed", "0"])
    assert result.exit_code == 0, result.output
    expected = expected_of(tmp_path / "w")
    assert {k[1] for k in expected} == {"phantom", "id-reuse", "lost"}
    status, summary = audit([tmp_path / "w"], tmp_path / "a", AuditOptions(master="none"), lambda _: None)
    assert summary["conformance"]["conform"] == 2 and status == 0
    assert found_in(summary) == expected
    # each anomaly links to its trace's xspec view page at a line (the format in xspec.audit.report.view_link)
    page = (tmp_path / "a" / "report.html").read_text()
    trace = str(tmp_path / "w" / "workload-0000.jsonl").lstrip("/").removesuffix(".jsonl")
    assert re.search(f"href='view/{re.escape(trace)}.html#line=[0-9]+'", page)


def test_report_links_name_the_view_page_and_line() -> None:
    from xspec.audit.report import view_link
    assert view_link("traces/a/b.jsonl", 24) == "view/traces/a/b.html#line=24"
    assert view_link("/tmp/w/x.jsonl.gz", 3) == "view/tmp/w/x.html#line=3"
    assert view_link("t.jsonl") == "view/t.html"


# ---------------------------------------------------------------------------------------------
# Ingest in byte ranges (what Spark does with a big plain file)


def _ranges_of(path: Path, parts: int) -> tuple[object, object, bool]:
    """The events table and TRACES row of a file read in ``parts`` byte ranges, offsets added as the driver does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from xspec.audit.ingest import RangeResult, read_range
    from xspec.audit.schema import EVENTS
    size = path.stat().st_size
    cuts = [size * k // parts for k in range(parts + 1)]
    tables, lines, events, row = [], 0, 0, None
    for k in range(parts):
        got = RangeResult()
        t = pa.Table.from_batches(list(read_range(path, cuts[k], cuts[k + 1], got)), EVENTS)
        if got.whole:
            return None, None, True
        t = t.set_column(1, "line", pc.add(t["line"], lines).cast("int32"))
        tables.append(t.set_column(2, "event", pc.add(t["event"], events).cast("int32")))
        lines, events = lines + got.lines, events + got.events
        row = row or got.trace
    return pa.concat_tables(tables), {**row, "events": events}, False  # type: ignore[dict-item]


def test_a_file_read_in_byte_ranges_gives_the_rows_of_the_file_read_whole(tmp_path: Path) -> None:
    import pyarrow as pa

    from xspec.audit.ingest import FileResult, read_file
    from xspec.audit.schema import EVENTS
    from xspec.audit.workload import Params, generate
    (path, _), = generate("model:redis-7.0", tmp_path, params=Params(streams=3, messages=10), seed=2)
    files = [path, *find_traces([ROOT / "traces" / "tutorial"])[:6]]
    for f in files:
        result = FileResult()
        whole = pa.Table.from_batches(list(read_file(f, result)), EVENTS)
        for parts in (2, 5):
            table, row, fell_back = _ranges_of(f, parts)
            assert not fell_back and table.equals(whole) and row == result.trace, (f, parts)  # type: ignore[union-attr]
    # lines paired across ranges (send/recv) or checked across lines (trace/2): the file is read whole instead
    for f in (ROOT / "traces" / "findings" / "fakeredis-2.40.0" / "large-block-timeout.jsonl",
              ROOT / "traces" / "replication" / "redis-7.0.15" / "failover" / "two-owners.jsonl"):
        assert _ranges_of(f, 3)[2], f


def test_the_audits_readers_give_the_formats_traces_and_errors_and_restore_the_collector(tmp_path: Path) -> None:
    import base64
    import gc

    from xspec.audit.ingest import FileResult, read_file
    from xspec.audit.trace_lines import load_trace
    from xspec.spec.trace_format import TraceError
    header = json.dumps({"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"}, "clock": "wall"})
    calls = [
        {"ev": "call", "c": 1, "cmd": ["XADD", "s", "*", "f", {"b64": base64.b64encode(b"\xff\x00").decode()}],
         "reply": {"bulk": "1-0"}, "t0": 1, "t1": 2},
        {"ev": "call", "c": 1, "cmd": ["INCRBY", "k", "5"], "reply": {"int": 2**70}, "t0": 3, "t1": 4},
        {"ev": "call", "c": 2, "cmd": ["HELLO", "3"], "reply": {"attribute": [[{"simple": "a"}, {"int": 1}]],
                                                                "value": {"map": [[{"bulk": "é"}, {"null": True}]]}}},
        {"ev": "call", "c": 2, "cmd": ["PING"], "reply": {"simple": "PONG"}, "now": 5},
    ]
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join([header, *map(json.dumps, calls)]) + "\n")
    bad = {"bool-client.jsonl": '{"ev": "call", "c": true, "cmd": ["PING"], "reply": {"simple": "PONG"}}',
           "float-time.jsonl": '{"ev": "call", "c": 1, "cmd": ["PING"], "reply": {"simple": "PONG"}, "t0": 1.5}',
           "bad-b64.jsonl": '{"ev": "call", "c": 1, "cmd": [{"b64": "!!"}], "reply": {"int": 1}}',
           "bad-reply.jsonl": '{"ev": "call", "c": 1, "cmd": ["PING"], "reply": {"bulk": 3}}',
           "not-json.jsonl": "{not json"}
    for name, line in bad.items():
        (tmp_path / name).write_text(f"{header}\n{line}\n")
    files = [good, *(tmp_path / name for name in bad), *find_traces([ROOT / "traces"])[::9]]
    for f in files:
        try:
            expected: object = load(f)
        except TraceError as e:
            expected = str(e)
        try:
            got: object = load_trace(f)
        except TraceError as e:
            got = str(e)
        assert got == expected, f
    # the events rows carry each call's command and its reply as the line wrote it
    assert gc.isenabled()
    result = FileResult()
    rows = [r for b in read_file(good, result) for r in b.to_pylist()]
    assert gc.isenabled() and result.trace is not None
    for row, call in zip(rows[1:], calls, strict=True):
        assert row["cmd"] == load(good).events[row["event"] - 1].cmd  # type: ignore[union-attr]
        assert json.loads(row["reply_json"]) == call["reply"] and row["reply_type"] == next(iter(call["reply"]))
        assert (row["t0"], row["t1"], row["now"], row["client"]) == tuple(call.get(k) for k in ("t0", "t1", "now", "c"))
    assert rows[2]["reply_int"] is None  # past 64 bits: in reply_json only
    gc.disable()
    try:
        list(read_file(good, FileResult()))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_ledger_steps_arrow_batches_equal_the_plain_fold(tmp_path: Path) -> None:
    """The batch step skips polls that delivered nothing (Arrow compute); its ledger is the plain fold's, and so is
    the column-wise one."""
    import pyarrow as pa

    from xspec.audit.batches import canonical, ledger_batches
    from xspec.audit.ingest import read_files
    from xspec.audit.ledger import LEDGER_INPUT, ledger_of
    from xspec.audit.schema import LEDGER
    from xspec.audit.workload import Params, generate
    s = Script()
    s(1, "XGROUP", "CREATE", "s", "streams", "$", "MKSTREAM")  # a group named like the keyword
    s(2, "XREADGROUP", "GROUP", "streams", "alice", "STREAMS", "s", ">")  # nothing yet: a silent poll
    s(1, "XADD", "s", "1-1", "f", "v")
    s(3, "XREADGROUP", "GROUP", "streams", "bob", "STREAMS", "s", ">")
    s(2, "XREADGROUP", "COUNT", "5", "GROUP", "streams", "carol", "STREAMS", "s", ">")
    s(3, "XAUTOCLAIM", "s", "streams", "dave", "0", "0")
    s(3, "XACK", "s", "streams", "1-1")
    from xspec.spec.trace_format import dump
    dump(s.trace(), tmp_path / "corner.jsonl")
    list(generate("model:redis-7.0", tmp_path, traces=1, params=Params(streams=9, messages=8), seed=4))
    events, _, _ = read_files([str(f) for f in sorted(tmp_path.glob("*.jsonl"))])
    events = events.sort_by([("trace", "ascending"), ("event", "ascending")]).select(list(LEDGER_INPUT))
    for columns in (False, True):
        batched = pa.Table.from_batches(list(ledger_batches(iter(events.to_batches(max_chunksize=500)),
                                                            columns=columns)), LEDGER)
        plain: list[dict[str, object]] = []
        for trace in sorted(set(events.column("trace").to_pylist())):
            plain += ledger_of(trace, [r for r in events.to_pylist() if r["trace"] == trace])
        assert canonical("ledger", batched).to_pylist() == canonical("ledger", pa.Table.from_pylist(plain,
                                                                                                  LEDGER)).to_pylist()
    assert any(r["acks"] and r["acks"][0]["consumer"] == b"dave" for r in plain)  # its last XAUTOCLAIM


def test_the_column_wise_ledger_computes_trimming_claims_reused_connections_and_late_acks_as_the_fold() -> None:
    """Corner cases the column-wise path computes itself (each ledger_and_anomalies call also asserts that the
    column-wise ledger equals the fold's), and what it leaves to the fold."""
    from xspec.audit.columns import split_ledger
    s = Script()
    s(1, "XACK", "s", "g", "5-1")  # an error (no group yet): nothing
    group(s)
    s(3, "XACK", "s", "g", "9-1")  # before the XADD of that ID: a row without its addition
    s(1, "XADD", "s", "9-1", "f", "early")
    ids = [s(1, "XADD", "s", "MAXLEN", "4", "*", "n", str(i)).value.decode() for i in range(4)]  # trims 9-1
    s(2, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "BLOCK", "10", "STREAMS", "s", ">")
    s(1, "XADD", "s", "MAXLEN", "=", "3", "*", "n", "4")  # trims ids[0] and ids[1], pending for alice
    s.sleep(100)
    s(3, "XCLAIM", "s", "g", "bob", "50", ids[2])
    s(2, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")  # history: the trimmed ones' nil slots
    s.close(2)
    s(2, "XACK", "s", "g", ids[2])  # the same client number, a new connection: no consumer
    s(3, "XACK", "s", "g", ids[1], ids[2])  # count 1 of 2: partial, left to the fold
    s(1, "XGROUP", "CREATE", "t", "g", "$", "MKSTREAM")
    s(1, "XGROUP", "CREATE", "t", "streams", "$")
    t0 = s(1, "XADD", "t", "MAXLEN", "0", "*", "f", "v").value.decode()  # added and trimmed at once
    s(4, "XREADGROUP", "GROUP", "streams", "STREAMS", "STREAMS", "t", ">")
    ledger, anomalies = ledger_and_anomalies(s.trace())
    by = {(r["key"], r["group"], r["id"]): r for r in ledger}
    assert by[(b"s", b"g", "9-1")]["added_event"] is None and by[(b"s", b"g", "9-1")]["removed_how"] == "XADD"
    assert by[(b"s", b"g", ids[0])]["removed_pending"] and by[(b"t", b"streams", t0)]["group_at_add"]
    assert ("lost", t0) in kinds(anomalies) and ("deleted-while-pending", ids[0]) in kinds(anomalies)
    # without the partial XACK, key s is the column-wise path's; key t is too
    s2 = Script()
    group(s2)
    e = s2(1, "XADD", "s", "MAXLEN", "1", "*", "f", "v").value.decode()
    s2(2, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    s2.close(2)
    s2(2, "XACK", "s", "g", e)
    (row,), _ = ledger_and_anomalies(s2.trace())
    assert row["acks"][0]["consumer"] is None and row["state"] == "acked"
    import tempfile

    from xspec.audit.batches import _trace_ends
    from xspec.audit.ingest import read_files
    from xspec.audit.ledger import LEDGER_INPUT
    from xspec.spec.trace_format import dump
    with tempfile.TemporaryDirectory() as folder:
        dump(s2.trace(), Path(folder) / "t.jsonl")
        events, _, _ = read_files([str(Path(folder) / "t.jsonl")])
    batch = events.select(list(LEDGER_INPUT)).combine_chunks().to_batches()[0]
    table, rest, keep_keys, keep_traces = split_ledger(batch, _trace_ends(batch))
    assert table.num_rows == 1 and not keep_keys and not keep_traces
    assert set(rest.column("ev").to_pylist()) <= {"header", "close"}


def test_the_column_wise_ledger_and_anomalies_equal_the_folds_on_corpora_and_workloads(tmp_path: Path) -> None:
    """Bundled corpora (trace/2 and send/recv traces go to the fold whole) and generated workloads of every
    algorithm, whose every key the column-wise path computes (the fold reads headers, closes and the XADDs of
    connections that may dead-letter, for the keys it would keep); the column-wise anomalies equal
    ``anomalies_of``'s row by row under several thresholds."""
    from tests.audit_support import assert_columns_equal_fold
    from xspec.audit.batches import _trace_ends
    from xspec.audit.columns import split_ledger
    from xspec.audit.ingest import read_files
    from xspec.audit.ledger import LEDGER_INPUT
    from xspec.audit.workload import Params, generate
    corpora = [str(f) for f in find_traces([ROOT / "traces" / name for name in (
        "tutorial", "findings", "redis-7.0.15", "valkey-9.1.2", "replication/redis-7.0.15/failover")])]
    events, _, _ = read_files(corpora)
    assert assert_columns_equal_fold(events) >= {"lost", "stuck", "poison", "double-processing",
                                                 "deleted-while-pending", "redelivered-after-ack"}
    for seed, params in enumerate([Params(streams=9, messages=12), Params(streams=4, messages=30, trim_maxlen=2),
                                   Params(streams=9, messages=5, trim_maxlen=0, final_idle_ms=10)]):
        list(generate("model:redis-7.0", tmp_path / str(seed), traces=2, params=params, seed=seed))
    workloads, _, _ = read_files([str(f) for f in find_traces([tmp_path])])
    assert_columns_equal_fold(workloads)
    batch = workloads.sort_by([("trace", "ascending"), ("event", "ascending")]).select(
        list(LEDGER_INPUT)).combine_chunks().to_batches()[0]
    _, rest, keep_keys, keep_traces = split_ledger(batch, _trace_ends(batch))
    assert not keep_traces and not keep_keys
    assert rest.num_rows < batch.num_rows / 20


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10_000), streams=st.integers(1, 6), messages=st.integers(1, 15),
       trim=st.integers(0, 4), idle=st.sampled_from([10, 2_000]),
       algorithms=st.lists(st.sampled_from(ALGORITHMS), min_size=1, max_size=4, unique=True))
def test_property_column_wise_ledger_and_anomalies_equal_the_folds_on_generated_workloads(
        tmp_path_factory: pytest.TempPathFactory, seed: int, streams: int, messages: int, trim: int, idle: int,
        algorithms: list[str]) -> None:
    from tests.audit_support import assert_columns_equal_fold
    from xspec.audit.ingest import read_files
    from xspec.audit.workload import Params, generate
    folder = tmp_path_factory.mktemp("workload")
    params = Params(streams=streams, messages=messages, trim_maxlen=trim, final_idle_ms=idle,
                    algorithms=tuple(algorithms))
    list(generate("model:redis-7.0", folder, traces=1, params=params, seed=seed))
    events, _, _ = read_files([str(f) for f in find_traces([folder])])
    assert_columns_equal_fold(events)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=12), cuts=st.lists(st.integers(1, 50), min_size=1,
                                                                                    max_size=8),
       chunk=st.integers(1, 60))
def test_batches_are_regrouped_into_whole_traces_in_order(sizes: list[int], cuts: list[int], chunk: int) -> None:
    """However the events file is cut into batches, the ledger reads every row once, in order, and no trace is
    split across two of its chunks."""
    import pyarrow as pa

    from xspec.audit import batches
    traces = [f"t{k:03d}" for k, n in enumerate(sizes) for _ in range(n)]
    table = pa.table({"trace": traces, "event": list(range(len(traces)))})
    pieces, at, k = [], 0, 0
    while at < len(traces):
        n = cuts[k % len(cuts)]
        pieces.append(table.slice(at, n).combine_chunks().to_batches()[0])
        at, k = at + n, k + 1
    old = batches.CHUNK_ROWS
    batches.CHUNK_ROWS = chunk
    try:
        out = list(batches._whole_traces(iter(pieces)))
    finally:
        batches.CHUNK_ROWS = old
    assert pa.Table.from_batches(out).to_pylist() == table.to_pylist()
    seen: set[str] = set()
    for b in out:
        names = set(b.column("trace").to_pylist())
        assert not names & seen
        seen |= names
