"""Audit throughput: ingest, ledger + anomalies, conformance; Spark (local[N]) against the in-process path, same run.

    python benchmarks/bench_audit.py                       # 10^5 events on local[2]
    python benchmarks/bench_audit.py --events 100000 1000000 --data /tmp/audit-data   # growth; traces kept
    python benchmarks/bench_audit.py --events 10000000 --data /tmp/audit-data --skip-local --skip-conformance --whole

Data: traces written by ``xspec workload`` on the model (every consumer algorithm), as JSONL (``--data``: kept and
reused; a bigger size adds traces). For each size it prints: ingest (JSONL -> Parquet events table) events/s;
ledger + anomalies from the Parquet events table, events/s on Spark and in process, and their ratio (target: >= 500k
events/s on local[2]); conformance events/s per executor core against the single-process checker (target ratio >=
0.8); with ``--whole``, the whole audit's wall time (what ``xspec audit`` runs: ingest with conformance, ledger,
anomalies, report); and the peak memory of the process tree, JVM included (target for 10^7 events: 10 minutes,
8 GiB)."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from xspec.audit import batches
from xspec.audit.ledger import LEDGER_INPUT
from xspec.audit.schema import LEDGER, VERDICTS, spark_schema
from xspec.audit.spark import ledger_stage
from xspec.audit.workload import Params, generate
from xspec.spec.trace_format import load
from xspec.traces.check.checker import check_trace


class PeakMemory(threading.Thread):
    """The largest RSS of this process and all its children (the JVM and Python workers), sampled."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        me = psutil.Process()
        while not self.done.wait(0.2):
            total = 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)


class TreeCpu(threading.Thread):
    """CPU seconds used so far by this process and every descendant seen (the JVM, Spark's Python daemon and
    workers), sampled every 0.2 s: a process that exited keeps its last reading, so the CPU of workers that are gone
    is not lost (their parent's ``children_*`` times count only the children it waited for, and the JVM is not
    waited for until the end). On a shared machine this, not the wall clock, says what a step costs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.seen: dict[tuple[int, float], float] = {}
        self.lock = threading.Lock()

    def run(self) -> None:
        while True:
            self.sample()
            time.sleep(0.2)

    def sample(self) -> float:
        me = psutil.Process()
        with self.lock:
            for p in [me, *me.children(recursive=True)]:
                try:
                    with p.oneshot():
                        t = p.cpu_times()
                        self.seen[(p.pid, p.create_time())] = t.user + t.system
                except psutil.Error:
                    pass
            return sum(self.seen.values())


_TREE_CPU = TreeCpu()


def tree_cpu() -> float:
    """CPU seconds of the process tree so far, exited workers included (:class:`TreeCpu`)."""
    if not _TREE_CPU.is_alive():
        _TREE_CPU.start()
    return _TREE_CPU.sample()


class Step:
    """Wall time and process-tree CPU time of a step."""

    def __enter__(self) -> Step:
        self.wall, self.cpu = time.perf_counter(), tree_cpu()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, tree_cpu() - self.cpu

    def text(self, n: int) -> str:
        return (f"{n / self.wall / 1000:,.0f}k ev/s wall ({self.wall:.1f} s); {n / self.cpu / 1000:,.0f}k ev per CPU-s "
                f"({self.cpu:.1f} CPU-s, JVM included)")


def make_data(folder: Path, events: int) -> list[str]:
    """Workload traces of about 12k events each, ``events`` in all (traces already in ``folder`` are reused)."""
    params = Params(streams=27, messages=60, stuck_after_ms=1000)
    files: list[str] = []
    total = 0
    have = sorted(folder.rglob("workload-*.jsonl"))
    for path in have:
        files.append(str(path))
        total += _events(path)
        if total >= events:
            return files
    more = folder / f"from-{len(have):05d}" if have else folder
    for path, _ in generate("model:redis-7.0", more, traces=10**9, params=params, seed=1 + len(have)):
        files.append(str(path))
        total += _events(path)
        if total >= events:
            break
    return files


def _events(path: Path | str) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f) - 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, nargs="+", default=[100_000])
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--data", type=Path, help="keep the generated traces here and reuse them (default: a temporary "
                    "folder, removed at the end)")
    ap.add_argument("--skip-local", action="store_true", help="no in-process comparison (for the big sizes)")
    ap.add_argument("--skip-conformance", action="store_true", help="no conformance ratio")
    ap.add_argument("--whole", action="store_true",
                    help="also the whole audit (xspec audit's job: ingest with conformance, ledger, anomalies, "
                         "report) with its wall time and the process tree's peak memory")
    ap.add_argument("--whole-only", action="store_true", help="only the whole audit (for 10^7 events)")
    ap.add_argument("--conformance-events", type=int, nargs="+", default=[100_000],
                    help="events checked for the conformance ratio (several sizes: one ratio each, to show how "
                         "Spark's fixed cost per job weighs less on bigger samples)")
    ap.add_argument("--ingest-check", action="store_true",
                    help="also ingest with conformance, as the audit runs it (each trace/1 file checked in its "
                         "ingest task), in CPU seconds per event")
    args = ap.parse_args()
    tree_cpu()  # starts sampling before the JVM and its workers exist
    from xspec.audit.spark import session
    t = time.perf_counter()
    spark = session(args.master, app="bench-audit")
    cores = spark.sparkContext.defaultParallelism
    print(f"Spark {spark.version} on {args.master} ({cores} cores), session {time.perf_counter() - t:.1f} s; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    growth: list[tuple[int, float]] = []
    for size in args.events:
        work = Path(tempfile.mkdtemp(prefix="bench-audit-"))
        try:
            t = time.perf_counter()
            files = make_data(args.data or work / "in", size)
            n = sum(_events(f) for f in files)
            print(f"\n== {n:,} events in {len(files)} traces (ready in {time.perf_counter() - t:.1f} s)", flush=True)
            mem = PeakMemory()
            mem.start()
            if not args.whole_only:
                step_s = ingest(spark, files, work, n)
                if args.ingest_check:
                    ingest(spark, files, work, n, check=True)
                step_s += ledger(spark, work, n, not args.skip_local)
                growth.append((n, step_s))
                if not args.skip_conformance:
                    for sample in args.conformance_events:
                        conformance(spark, files, sample, cores)
            if args.whole or args.whole_only:
                whole(spark, files, work, n)
            mem.done.set()
            print(f"peak memory of the process tree (JVM and Python workers included): {mem.peak / 2**30:.2f} GiB; "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if len(growth) > 1:
        base_n, base_s = growth[0]
        print("\ngrowth (ingest + ledger + anomalies): " + ", ".join(
            f"{n:,} ev {s:.1f} s ({(s / base_s) / (n / base_n):.2f}x per event)" for n, s in growth))
    spark.stop()


def ingest(spark: Any, files: list[str], work: Path, n: int, check: bool = False) -> float:
    """JSONL -> the Parquet events table, as the audit's ingest stage writes it (``check``: with conformance, each
    trace/1 file checked in its ingest task as ``xspec audit`` does; else none)."""
    from xspec.audit.ingest import Check
    from xspec.audit.spark import ingest_stage
    with Step() as step:
        ingest_stage(spark, files, work, check=Check(split_elsewhere=True) if check else None)
    what = "with conformance" if check else "JSONL -> Parquet events table"
    print(f"ingest (Spark, {what}): {step.text(n)}", flush=True)
    return step.wall


def ledger(spark: Any, work: Path, n: int, in_process: bool) -> float:
    """Ledger + anomalies from the events table on Spark, and (``in_process``) in this process."""
    with Step() as step:
        found = ledger_stage(spark, work / "events", work / "ledger", 1000, 5).num_rows  # the audit's own step
    print(f"ledger + anomalies (Spark {spark.sparkContext.master}): {step.text(n)}, {found} anomalies", flush=True)
    if in_process:
        with Step() as local:
            table = pq.read_table(work / "events", columns=list(LEDGER_INPUT))
            led = pa.Table.from_batches(list(batches.ledger_batches(iter(
                table.sort_by([("trace", "ascending"), ("event", "ascending")]).to_batches()))), LEDGER)
            local_found = sum(b.num_rows for b in batches.anomaly_batches(iter(led.to_batches()), 1000, 5))
        print(f"ledger + anomalies (in process, one core, reading the table included): {local.text(n)}, "
              f"{local_found} anomalies; Spark/in-process {local.wall / step.wall:.2f}x wall, "
              f"{local.cpu / step.cpu:.2f}x CPU", flush=True)
        # what each Spark task runs, file by file (no sort of the whole table), here in one process
        files = sorted(str(p) for p in (work / "events").glob("part-*.parquet"))
        for folder in ("_bench_ledger", "_bench_anomalies"):
            shutil.rmtree(work / folder, ignore_errors=True)
            (work / folder).mkdir()
        with Step() as tasks:
            for _ in batches.ledger_files(iter([pa.record_batch({"path": files})]), str(work / "_bench_ledger"),
                                          str(work / "_bench_anomalies"), 1000, 5):
                pass
        print(f"ledger + anomalies (in process, one core, the Spark tasks' ledger_files over the same files): "
              f"{tasks.text(n)}; Spark/this {tasks.cpu / step.cpu:.2f}x CPU", flush=True)
    return step.wall


def conformance(spark: Any, files: list[str], events: int, cores: int) -> None:
    """Conformance events/s per executor core against the single-process checker (load + check, both)."""
    from xspec.audit.spark import _paths_frame
    subset, m = [], 0
    for f in files:
        if m >= events:
            break
        subset.append(f)
        m += _events(f)
    t, c = time.perf_counter(), time.process_time()
    for f in subset:
        check_trace(load(f))
    single, single_cpu = m / (time.perf_counter() - t), m / (time.process_time() - c)

    def job(chosen: list[str]) -> None:
        _paths_frame(spark, chosen, cores * 4).mapInArrow(batches.conformance_batches,
                                                          spark_schema(VERDICTS)).count()
    job(subset[:cores])  # the Python workers start and import the model once (then reused)
    with Step() as step:
        job(subset)
    per_core = m / step.wall / cores
    per_cpu = m / step.cpu
    print(f"conformance ({m:,} events, {len(subset)} traces): single process {single / 1000:,.1f}k ev/s wall, "
          f"{single_cpu / 1000:,.1f}k ev per CPU-s; Spark {per_core / 1000:,.1f}k ev/s per core wall, "
          f"{per_cpu / 1000:,.1f}k ev per CPU-s (JVM included); per-core/single {per_core / single:.2f}x wall, "
          f"{per_cpu / single_cpu:.2f}x CPU", flush=True)


def whole(spark: Any, files: list[str], work: Path, n: int) -> None:
    """The whole audit as ``xspec audit`` runs it on this session."""
    from xspec.audit.run import AuditOptions, audit
    start = time.perf_counter()

    def progress(text: str) -> None:
        print(f"  [{time.perf_counter() - start:6.0f} s, {tree_cpu():7.0f} CPU-s] {text}", flush=True)
    with Step() as step:
        status, summary = audit([Path(f) for f in files], work / "audit", AuditOptions(
            master=spark.sparkContext.master), progress, spark=spark)
    print(f"whole audit (ingest with conformance, ledger, anomalies, report): {step.text(n)}; exit status "
          f"{status}, {summary['conformance']}, {len(summary['anomalies'])} anomalies", flush=True)


if __name__ == "__main__":
    main()
