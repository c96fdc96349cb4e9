"""Helpers of the audit tests: one Spark session for the whole test session, and trace builders.

The session is started on first use and stopped when the interpreter exits, so every audit test
module shares it (a second SparkSession would cost its start-up again: 10-50 s on CI's 2 cores).
"""

from __future__ import annotations

import atexit
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xspec.audit.batches import canonical
from xspec.audit.ledger import anomalies_from, ledger_of
from xspec.audit.workload import ModelDriver
from xspec.spec.trace_format import Trace, dump

_SESSION: Any = None

TABLES = ("traces", "quarantine", "verdicts", "ledger", "anomalies", "events")


def spark_session() -> Any:
    """The test session's SparkSession on local[2] (skips when Spark cannot run here; fails on CI)."""
    global _SESSION
    if _SESSION is None:
        from xspec.audit.spark import spark_available
        missing = spark_available()
        if missing is not None:
            if os.environ.get("CI"):
                pytest.fail(missing)
            pytest.skip(missing)
        from xspec.audit.spark import session
        _SESSION = session("local[2]", app="xspec-audit-tests")
        atexit.register(_SESSION.stop)
    return _SESSION


def read_tables(out: Path) -> dict[str, pa.Table]:
    """The Parquet tables of an audit output folder, each in its canonical order."""
    tables = {}
    for name in TABLES:
        t = pq.read_table(out / name)
        if name == "traces":
            t = t.drop(["bytes"])
        tables[name] = canonical(name, t)
    return tables


def ledger_and_anomalies(trace: Trace, stuck_after_ms: int = 60_000,
                         poison: int = 5) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ledger and anomalies of one in-memory trace (written to a temporary file and ingested)."""
    import tempfile

    from xspec.audit.ingest import read_files
    from xspec.audit.ledger import LEDGER_INPUT
    folder = Path(tempfile.mkdtemp(prefix="xspec-audit-"))
    try:
        path = folder / "t.jsonl"
        dump(trace, path)
        events, _, quarantine = read_files([str(path)])
        assert quarantine.num_rows == 0, quarantine.to_pylist()
        rows = [r for r in events.select(list(LEDGER_INPUT)).to_pylist() if r["ev"] != "header"]
        ledger = ledger_of(str(path), rows)
        assert_columns_equal_fold(events)
        return ledger, anomalies_from(ledger, stuck_after_ms, poison)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def file_ledger(path: Path, stuck_after_ms: int = 60_000,
                poison: int = 5) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ledger and anomalies of one trace file (header row included: a trace/2 header names the nodes)."""
    from xspec.audit.ingest import read_files
    from xspec.audit.ledger import LEDGER_INPUT
    events, _, quarantine = read_files([str(path)])
    assert quarantine.num_rows == 0, quarantine.to_pylist()
    ledger = ledger_of(str(path), events.select(list(LEDGER_INPUT)).to_pylist())
    assert_columns_equal_fold(events)
    return ledger, anomalies_from(ledger, stuck_after_ms, poison)


def batch_ledger(events: pa.Table, columns: bool = True, chunk: int = 500) -> pa.Table:
    """The ledger step's table (canonical order) over an events table, fed in batches of ``chunk`` rows."""
    from xspec.audit.batches import ledger_batches
    from xspec.audit.ledger import LEDGER_INPUT
    from xspec.audit.schema import LEDGER
    events = events.sort_by([("trace", "ascending"), ("event", "ascending")]).select(list(LEDGER_INPUT))
    return canonical("ledger", pa.Table.from_batches(list(ledger_batches(iter(events.to_batches(
        max_chunksize=chunk)), columns=columns)), LEDGER))


def assert_columns_equal_fold(events: pa.Table) -> set[str]:
    """The column-wise ledger (with the fold for what it leaves) equals the fold's, row for row, and so do the
    column-wise anomalies and :func:`anomalies_of`'s, under several thresholds; returns the anomaly kinds seen."""
    by_columns, by_fold = batch_ledger(events), batch_ledger(events, columns=False)
    if not by_columns.equals(by_fold):
        for a, b in zip(by_columns.to_pylist(), by_fold.to_pylist(), strict=False):
            assert a == b
        assert by_columns.num_rows == by_fold.num_rows
    return assert_anomalies_equal(by_fold)


def assert_anomalies_equal(ledger: pa.Table) -> set[str]:
    """The column-wise anomalies of ``ledger`` equal :func:`anomalies_of`'s, row for row and in order, under several
    thresholds; returns the anomaly kinds seen."""
    from xspec.audit.batches import anomaly_batches
    from xspec.audit.schema import ANOMALIES
    seen: set[str] = set()
    for stuck_after_ms, poison in ((60_000, 5), (1_000, 2), (0, 1), (10**9, 0)):
        got = [pa.Table.from_batches(list(anomaly_batches(iter(ledger.to_batches(max_chunksize=97)), stuck_after_ms,
                                                          poison, columns=columns)), ANOMALIES)
               for columns in (True, False)]
        if not got[0].equals(got[1]):
            assert got[0].to_pylist() == got[1].to_pylist(), (stuck_after_ms, poison)
        seen |= set(got[1].column("kind").to_pylist())
    return seen


def kinds(anomalies: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(kind, id) of each anomaly."""
    return {(a["kind"], a["id"]) for a in anomalies}


class Script:
    """A conversation on the model (virtual clock), for building ledger cases with real replies."""

    def __init__(self) -> None:
        self.driver = ModelDriver("redis-7.0")

    def __call__(self, c: int, *args: str | bytes) -> Any:
        return self.driver.call(c, *[a.encode() if isinstance(a, str) else a for a in args])

    def sleep(self, ms: int) -> None:
        self.driver.sleep(ms)

    def close(self, c: int) -> None:
        self.driver.close(c)

    def trace(self) -> Trace:
        return self.driver.trace()


def straddling_traces(folder: Path) -> list[Path]:
    """Small wall-clock traces whose commands straddle keys, written to ``folder``: parts whose executions merge, parts
    that each conform but need the clock to go back, a part that diverges, a multi-key command, a blocking client,
    a MULTI/EXEC over two keys and a send/recv pair (each exercises one way the split decides; spec/audit.md, "The
    split")."""
    from xspec.spec.resp import Array, Bulk, Int, Simple
    from xspec.spec.trace_format import Call, Header, Recv, Send

    def xadd(c: int, key: str, t0_ms: float, t1_ms: float, entry: str) -> Call:
        return Call(c=c, cmd=[b"XADD", key.encode(), b"*", b"f", b"v"], reply=Bulk(entry.encode()),
                    t0=int(t0_ms * 1000), t1=int(t1_ms * 1000))

    def xlen(c: int, key: str, t0_ms: float, n: int) -> Call:
        return Call(c=c, cmd=[b"XLEN", key.encode()], reply=Int(n), t0=int(t0_ms * 1000), t1=int(t0_ms * 1000) + 100)

    cases: dict[str, list[Any]] = {
        "merge": [xadd(1, "a", 10_000, 10_002, "10001-0"), xadd(2, "b", 10_002.5, 10_003, "10003-0"),
                  xlen(1, "a", 10_004, 1), xlen(2, "b", 10_005, 1)],
        "clock-back": [xadd(1, "a", 10_000, 10_002, "10003-0"), xadd(2, "b", 10_002.5, 10_003, "10001-0")],
        "part-diverges": [xadd(1, "a", 10_000, 10_002, "10001-0"), xadd(2, "b", 10_003, 10_004, "10003-0"),
                          xlen(2, "b", 10_005, 7)],
        "multi-key": [xadd(1, "a", 1000, 1001, "1001-0"), xadd(2, "b", 1002, 1003, "1003-0"),
                      Call(c=1, cmd=[b"DEL", b"a", b"b"], reply=Int(2), t0=1_004_000, t1=1_004_500)],
        "blocking": [Send(c=3, cmd=[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"a", b"$"], t=1_000_000),
                     xadd(1, "a", 1001, 1002, "1002-0"),
                     Recv(c=3, reply=Array((Array((Bulk(b"a"), Array((Array((Bulk(b"1002-0"), Array((
                         Bulk(b"f"), Bulk(b"v"))))),)))),)), t=1_002_500),
                     xadd(3, "b", 1003, 1004, "1004-0")],
        "multi-exec": [Call(c=1, cmd=[b"MULTI"], reply=Simple("OK"), t0=1_000_000, t1=1_000_100),
                       Call(c=1, cmd=[b"XLEN", b"a"], reply=Simple("QUEUED"), t0=1_000_200, t1=1_000_300),
                       Call(c=1, cmd=[b"XLEN", b"b"], reply=Simple("QUEUED"), t0=1_000_400, t1=1_000_500),
                       Call(c=1, cmd=[b"EXEC"], reply=Array((Int(0), Int(0))), t0=1_000_600, t1=1_000_700),
                       xadd(2, "c", 1001, 1002, "1002-0")],
        "send-recv": [Send(c=1, cmd=[b"XADD", b"a", b"*", b"f", b"v"], t=1_000_000),
                      xadd(2, "b", 1000.1, 1000.4, "1000-0"),
                      Recv(c=1, reply=Bulk(b"1000-0"), t=1_000_500), xlen(2, "b", 1001, 1)],
    }
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, events in cases.items():
        path = folder / f"{name}.jsonl"
        dump(Trace(Header(), events), path)
        out.append(path)
    return out
