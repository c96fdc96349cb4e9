"""Audit throughput: ingest, ledger + anomalies, conformance; Spark (local[N]) against the in-process path, same run.

    python benchmarks/bench_audit.py                       # 10^5 events on local[2]
    python benchmarks/bench_audit.py --events 1000000 10000000 --skip-local   # growth, big scale

Data: traces written by ``xspec workload`` on the model (every consumer algorithm), as JSONL. For each size it
prints: ingest (JSONL -> Parquet events table) events/s; ledger + anomalies from the Parquet events table,
events/s on Spark and in process, and their ratio (target: >= 500k events/s on local[2]); conformance events/s per
executor core against the single-process checker (target ratio >= 0.8); the whole audit's wall time and the peak
memory of the process tree, JVM included (target for 10^7 events: 10 minutes, 8 GiB).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from xspec.audit import batches
from xspec.audit.ledger import LEDGER_INPUT
from xspec.audit.schema import ANOMALIES, EVENTS, LEDGER, VERDICTS, spark_schema
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


def make_data(folder: Path, events: int) -> list[str]:
    """Workload traces of about 20k events each, ``events`` in all."""
    params = Params(streams=27, messages=60, stuck_after_ms=1000)
    files: list[str] = []
    total = 0
    for path, _ in generate("model:redis-7.0", folder, traces=10**9, params=params, seed=1):
        files.append(str(path))
        total += sum(1 for _ in open(path)) - 1
        if total >= events:
            break
    return files


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds / 1000:,.0f}k ev/s ({seconds:.1f} s)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, nargs="+", default=[100_000])
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--skip-local", action="store_true", help="no in-process comparison (for the big sizes)")
    ap.add_argument("--conformance-events", type=int, default=100_000,
                    help="events checked for the conformance ratio")
    args = ap.parse_args()
    from xspec.audit.spark import session
    t = time.perf_counter()
    spark = session(args.master, app="bench-audit")
    cores = spark.sparkContext.defaultParallelism
    print(f"Spark {spark.version} on {args.master} ({cores} cores), session {time.perf_counter() - t:.1f} s; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    growth: list[tuple[int, float]] = []
    for size in args.events:
        work = Path(tempfile.mkdtemp(prefix="bench-audit-"))
        try:
            t = time.perf_counter()
            files = make_data(work / "in", size)
            n = sum(sum(1 for _ in open(f)) - 1 for f in files)
            print(f"\n== {n:,} events in {len(files)} traces (generated in {time.perf_counter() - t:.1f} s)")

            # ingest: JSONL -> the Parquet events table
            mem = PeakMemory()
            mem.start()
            t = time.perf_counter()
            paths = spark.createDataFrame([(f, 0) for f in files], "path string, size long").repartition(cores * 2)
            paths.mapInArrow(batches.ingest_batches, spark_schema(EVENTS)) \
                .repartition(cores * 2, "trace").sortWithinPartitions("trace", "event") \
                .write.mode("overwrite").parquet(str(work / "events"))
            ingest_s = time.perf_counter() - t
            print(f"ingest (Spark, JSONL -> Parquet): {rate(n, ingest_s)}")

            # ledger + anomalies from the Parquet events table
            t = time.perf_counter()
            ledger_stage(spark, work / "events", work / "ledger")  # the audit's own step
            found = spark.read.parquet(str(work / "ledger")).mapInArrow(
                lambda it: batches.anomaly_batches(it, 1000, 5), spark_schema(ANOMALIES)).count()
            spark_s = time.perf_counter() - t
            mem.done.set()
            growth.append((n, ingest_s + spark_s))
            print(f"ledger + anomalies (Spark {args.master}): {rate(n, spark_s)}, {found} anomalies")
            if not args.skip_local:
                table = pq.read_table(work / "events", columns=list(LEDGER_INPUT))
                t = time.perf_counter()
                led = pa.Table.from_batches(list(batches.ledger_batches(iter(
                    table.sort_by([("trace", "ascending"), ("event", "ascending")]).to_batches()))), LEDGER)
                local_found = sum(b.num_rows for b in batches.anomaly_batches(iter(led.to_batches()), 1000, 5))
                local_s = time.perf_counter() - t
                print(f"ledger + anomalies (in process): {rate(n, local_s)}, {local_found} anomalies; "
                      f"Spark/in-process {local_s / spark_s:.2f}x")
            print(f"peak memory of the process tree: {mem.peak / 2**30:.2f} GiB; "
                  f"load average {os.getloadavg()[0]:.1f}")

            # conformance per core against the single-process checker
            subset, m = [], 0
            for f in files:
                if m >= args.conformance_events:
                    break
                subset.append(f)
                m += sum(1 for _ in open(f)) - 1
            t = time.perf_counter()
            for f in subset:
                check_trace(load(f))
            single = m / (time.perf_counter() - t)
            def conformance_job(chosen: list[str]) -> None:
                spark.createDataFrame([(f, 0) for f in chosen], "path string, size long") \
                    .repartition(max(cores, len(chosen))) \
                    .mapInArrow(batches.conformance_batches, spark_schema(VERDICTS)).count()
            conformance_job(subset[:cores])  # the Python workers start and import the model once (then reused)
            t = time.perf_counter()
            conformance_job(subset)
            per_core = m / (time.perf_counter() - t) / cores
            print(f"conformance: single process {single / 1000:,.1f}k ev/s, Spark {per_core / 1000:,.1f}k ev/s per "
                  f"core; per-core/single {per_core / single:.2f}x")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if len(growth) > 1:
        base_n, base_s = growth[0]
        print("\ngrowth (ingest + ledger + anomalies): " + ", ".join(
            f"{n:,} ev {s:.1f} s ({(s / base_s) / (n / base_n):.2f}x per event)" for n, s in growth))
    spark.stop()


if __name__ == "__main__":
    main()
