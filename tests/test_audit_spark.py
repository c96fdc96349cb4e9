"""The audit on Spark (local[2], one session for the whole test session): the same tables as the in-process
path on bundled traces, generated workloads and malformed files, and a property test over generated collections."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.audit_support import read_tables, spark_session, straddling_traces
from xspec.audit.run import AuditOptions, audit
from xspec.audit.workload import ALGORITHMS, Params, generate

ROOT = Path(__file__).resolve().parent.parent


def both(inputs: list[Path], out: Path, **options: object) -> tuple[dict[str, object], dict[str, object]]:
    """Audit ``inputs`` on Spark and in process; assert every table is equal; return both summaries."""
    spark = spark_session()
    status_s, summary_s = audit(inputs, out / "spark", AuditOptions(master="local[2]", **options),  # type: ignore
                                lambda _: None, spark=spark)
    status_l, summary_l = audit(inputs, out / "local", AuditOptions(master="none", **options),  # type: ignore
                                lambda _: None)
    spark_tables, local_tables = read_tables(out / "spark"), read_tables(out / "local")
    for name in spark_tables:
        assert spark_tables[name].equals(local_tables[name]), name
    assert summary_s == summary_l and status_s == status_l
    return summary_s, summary_l


def test_spark_and_in_process_paths_write_the_same_tables(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    shutil.copytree(ROOT / "traces" / "findings", inputs / "findings")
    shutil.copytree(ROOT / "traces" / "tutorial", inputs / "tutorial")
    shutil.copytree(ROOT / "traces" / "replication" / "redis-7.0.15" / "failover", inputs / "failover")  # trace/2
    list(generate("model:redis-7.0", inputs / "workload", traces=2, params=Params(stuck_after_ms=1000), seed=5,
                  gzip=True))
    list(generate("model:redis-7.0", inputs / "plain", traces=1, params=Params(stuck_after_ms=1000), seed=6))
    (inputs / "bad.jsonl").write_text('{"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"}}\n'
                                      '{"ev": "call"}\n')
    # Spark reads files of 8 kB and more in byte ranges (the findings' send/recv files fall back to whole files)
    summary, _ = both([inputs], tmp_path, stuck_after_ms=1000, ingest_split_bytes=4096)
    assert summary["quarantined"] == [{"file": str(inputs / "bad.jsonl"), "line": 2,
                                       "message": "missing field 'c'"}]
    # the ingest tasks wrote the events files themselves (no Spark sort): each holds whole traces, sorted by trace
    # and event, as the ledger step reads them; and the byte ranges of big files were joined into whole traces
    files = sorted((tmp_path / "spark" / "events").glob("part-*.parquet"))
    seen: set[str] = set()
    for f in files:
        rows = pq.read_table(f, columns=["trace", "event"]).to_pylist()
        keys = [(r["trace"], r["event"]) for r in rows]
        assert keys == sorted(keys), f
        traces = {r["trace"] for r in rows}
        assert not traces & seen, f
        seen |= traces
    assert summary["conformance"]["diverge"] > 0 and not summary["unmet"]
    assert {a["kind"] for a in summary["anomalies"]} >= {"lost", "stuck", "id-reuse"}  # type: ignore[index]


def test_split_traces_are_checked_part_by_part_on_separate_tasks_with_the_whole_traces_verdicts(
        tmp_path: Path) -> None:
    from xspec.spec.trace_format import load
    from xspec.traces.check.checker import check_trace
    inputs = tmp_path / "in"
    shutil.copytree(ROOT / "traces" / "tutorial", inputs / "tutorial")
    for name in ("xadd/star-ids.jsonl", "xreadgroup/dollar-and-gt.jsonl"):
        (inputs / "corpus" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "traces" / "redis-7.0.15" / name, inputs / "corpus" / name)
    straddling_traces(inputs / "straddle")
    # every trace is split (the Spark job plans, checks and merges its parts on separate tasks; the in-process path
    # splits in one process); both() asserts the two verdict tables (parts and how included) are equal
    both([inputs], tmp_path, split_min_events=1)
    verdicts = read_tables(tmp_path / "spark")["verdicts"].to_pylist()
    hows = {str(v["split"]).split(":")[0] for v in verdicts}
    assert {"split", "fallback", "whole"} <= hows, hows
    assert any(v["split"] == "split" and v["parts"] >= 2 for v in verdicts)
    for v in verdicts:
        whole = check_trace(load(v["trace"]))
        assert (v["status"], v["event"], v["message"]) == (whole.status, whole.event, whole.describe()), v


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 1000), streams=st.integers(1, 6), messages=st.integers(1, 12),
       algorithms=st.lists(st.sampled_from(ALGORITHMS), min_size=1, max_size=4, unique=True),
       traces=st.integers(1, 3))
def test_property_spark_equals_in_process_on_generated_collections(tmp_path_factory: pytest.TempPathFactory,
                                                                   seed: int, streams: int, messages: int,
                                                                   algorithms: list[str], traces: int) -> None:
    folder = tmp_path_factory.mktemp("collection")
    params = Params(streams=streams, messages=messages, algorithms=tuple(algorithms), stuck_after_ms=500,
                    final_idle_ms=1000)
    list(generate("model:redis-7.0", folder / "in", traces=traces, params=params, seed=seed))
    summary, _ = both([folder / "in"], folder, stuck_after_ms=500, ingest_split_bytes=2048)
    assert summary["traces"] == traces


def _old_pending_changes(ledger: list[dict[str, object]]) -> dict[tuple[object, ...], list[tuple[int, int]]]:
    """Per group, (time, +1) when an entry became pending and (time, -1) when it stopped: the plot's definition,
    row by row (the oracle of the column-wise report)."""
    changes: dict[tuple[object, ...], list[tuple[int, int]]] = {}
    for r in ledger:
        pend = [d for d in (r["deliveries"] or []) if d["time"] is not None]  # type: ignore[attr-defined]
        if not pend:
            continue
        acked = [a["time"] for a in (r["acks"] or []) if a["included"] and a["time"] is not None]  # type: ignore
        ends = [t for t in (min(acked) if acked else None, r["removed_time"]) if t is not None]
        end = min(ends) if ends else (r["end_time"] if r["state"] == "pending" else None)  # type: ignore[type-var]
        name = (r["trace"], r["key"], r["group"])
        changes.setdefault(name, []).append((pend[0]["time"], 1))
        if end is not None:
            changes[name].append((end, -1))  # type: ignore[arg-type]
    return changes


def test_summary_and_report_are_built_from_the_tables_in_batches(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """summary.json lists every anomaly (written batch by batch), the report's plots cover every ledger row and
    anomaly, and its list is capped, saying how many there are and where the rest are."""
    from collections import Counter

    from xspec.audit import report
    from xspec.audit.batches import canonical
    monkeypatch.setattr(report, "BATCH_ROWS", 37)
    monkeypatch.setattr(report, "MAX_ANOMALIES_SHOWN", 3)
    inputs = tmp_path / "in"
    list(generate("model:redis-7.0", inputs, traces=2, params=Params(stuck_after_ms=1000), seed=3))
    shutil.copytree(ROOT / "traces" / "tutorial", inputs / "tutorial")
    out = tmp_path / "out"
    status, summary = audit([inputs], out, AuditOptions(master="none", stuck_after_ms=1000), lambda _: None)
    tables = {n: canonical(n, pq.read_table(out / n)) for n in ("ledger", "anomalies")}
    rows = tables["anomalies"].to_pylist()
    assert len(rows) > 3 and status == 0
    want = [{"kind": a["kind"], "trace": a["trace"], "key": report.text_of(a["key"]),
             "group": report.text_of(a["group"]), "id": a["id"], "consumers": [report.text_of(c) for c in
                                                                                a["consumers"]],
             "events": a["events"]} for a in rows]
    written = json.loads((out / "summary.json").read_text())
    assert written["anomalies"] == want and summary["anomalies"] == want and len(summary["anomalies"]) == len(want)
    assert written["anomaly_counts"] == dict(sorted(Counter(a["kind"] for a in rows).items()))
    assert written["ledger_rows"] == tables["ledger"].num_rows
    assert {k: v for k, v in written.items() if k != "anomalies"} == {
        k: v for k, v in summary.items() if k != "anomalies"}
    # the plots' data, column by column, equal the row-by-row definitions over every row
    data = report.plot_data(out)
    ledger = tables["ledger"].to_pylist()
    latency = sorted((r["deliveries"][0]["time"] - r["added_time"]) / 1000 for r in ledger
                     if r["deliveries"] and r["added_time"] is not None and r["deliveries"][0]["time"] is not None)
    assert sorted(x for a in data.latency for x in a.tolist()) == latency
    assert Counter({n: int(k) for n, k in enumerate(data.deliveries) if k}) == Counter(
        len(r["deliveries"] or []) for r in ledger)
    changes = _old_pending_changes(ledger)
    assert dict(data.changes) == {g: len(c) for g, c in changes.items()}
    assert data.plotted_groups() and all(sorted(data.pending[g]) == sorted(changes[g])
                                         for g in data.plotted_groups())
    assert data.kinds == Counter(a["kind"] for a in rows) and data.traces == Counter(a["trace"] for a in rows)
    page = (out / "report.html").read_text()
    assert page.count("<svg") == 5 and page.count("<section class='anomaly'") == 3
    assert f"{len(rows)} anomalies: the first 3" in page and "<code>anomalies/</code>" in page
    (tmp_path / "empty").mkdir()
    report.write_summary(tmp_path / "empty" / "s.json", {**summary, "anomalies": []})
    assert json.loads((tmp_path / "empty" / "s.json").read_text())["anomalies"] == []
