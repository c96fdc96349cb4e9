"""The audit as a Spark job (local mode by default, or a standalone cluster's master URL).

The session binds to 127.0.0.1, has no UI and quiet logs, and runs its Python workers on this
interpreter (``PYSPARK_PYTHON``). Every step is an Arrow ``mapInArrow`` over the functions of
:mod:`xspec.audit.batches`:

1. ingest: the files' paths, spread over tasks, become the events table (Parquet, one folder,
   hash-partitioned by trace and sorted by trace and event inside each file) plus the traces
   and quarantine rows; the events of a malformed file are dropped;
2. conformance: each trace checked by the model where its path lands;
3. ledger: the events table, repartitioned by trace and sorted by event, folded per trace;
4. anomalies: one pass over the ledger.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from xspec.audit import batches
from xspec.audit.ingest import Check
from xspec.audit.schema import ANOMALIES, EVENTS, LEDGER, QUARANTINE, TRACES, VERDICTS, spark_schema
from xspec.spec.trace_format import FORMAT

LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""

DEFAULT_MASTER = "local[*]"


def spark_available() -> str | None:
    """None when pyspark and a Java runtime are there, else what is missing (one line)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed: pip install 'xspec[audit]'"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Spark needs a Java 17 runtime (apt-get install openjdk-17-jre-headless)"
    return None


def session(master: str = DEFAULT_MASTER, *, app: str = "xspec-audit", cores: int | None = None) -> Any:
    """A SparkSession on ``master`` bound to loopback, UI off, quiet, Python workers on this interpreter."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf_dir = Path(tempfile.gettempdir()) / "xspec-audit-spark"
    conf_dir.mkdir(exist_ok=True)
    log_conf = conf_dir / "log4j2.properties"
    log_conf.write_text(LOG4J2)
    # spark-submit puts SPARK_CONF_DIR on the driver's classpath, where log4j2 finds its configuration
    # before the JVM logs anything (a driver option set from here would come too late)
    os.environ["SPARK_CONF_DIR"] = str(conf_dir)
    java_opts = f"-Dlog4j2.configurationFile=file:{log_conf} -Dlog4j.configurationFile=file:{log_conf}"
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.extraJavaOptions", java_opts)
               .config("spark.executor.extraJavaOptions", java_opts)
               .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
               .config("spark.pyspark.python", sys.executable)
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.python.worker.reuse", "true")
               .config("spark.executor.memory", "1g")
               .config("spark.sql.session.timeZone", "UTC"))
    if cores is not None:
        builder = builder.config("spark.cores.max", str(cores))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class _Progress(threading.Thread):
    """Prints the running stage's task counts every few seconds (when the terminal wants progress)."""

    def __init__(self, spark: Any, progress: Callable[[str], None]) -> None:
        super().__init__(daemon=True)
        self.tracker = spark.sparkContext.statusTracker()
        self.progress = progress
        self.stopped = threading.Event()
        self.phase = ""

    def run(self) -> None:
        last = ""
        while not self.stopped.wait(2.0):
            try:
                infos = [self.tracker.getStageInfo(s) for s in self.tracker.getActiveStageIds()]
            except Exception:  # the context is stopping
                return
            parts = [f"{i.numCompletedTasks}/{i.numTasks} tasks" for i in infos if i is not None]
            text = f"{self.phase}: {', '.join(parts)}" if parts else ""
            if text and text != last:
                self.progress(text)
                last = text


DEFAULT_INGEST_SPLIT_BYTES = 32 << 20
"""A plain ``.jsonl`` file at least this big is read in byte ranges by several tasks (one task reads it otherwise)."""


def _paths_frame(spark: Any, files: list[str], slices: int, split_bytes: int | None = None) -> Any:
    """The tasks' input: a row per file (``part`` -1), or per byte range of a big plain file (``part`` 0, 1, ...).

    The rows are dealt into at most ``slices`` partitions by size, biggest first, each to the partition with the
    least bytes so far (so the cores finish together), and the partitions are numbered heaviest first (Spark
    starts tasks in that order). A plain ``createDataFrame(...).repartition(n)`` would deal rows at random: one
    task could get two big traces while another gets none.
    """
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType
    rows: list[tuple[str, int, int, int, int]] = []
    for f in files:
        size = os.path.getsize(f)
        if split_bytes and size >= 2 * split_bytes and f.endswith(".jsonl"):
            parts = min(slices, -(-size // split_bytes))
            cuts = [size * k // parts for k in range(parts + 1)]
            rows += [(f, cuts[k + 1] - cuts[k], cuts[k], cuts[k + 1], k) for k in range(parts)]
        else:
            rows.append((f, size, 0, -1, -1))
    schema = StructType([StructField("path", StringType()), StructField("size", LongType()),
                         StructField("start", LongType()), StructField("end", LongType()),
                         StructField("part", IntegerType())])
    bins = deal(rows, max(1, min(slices, len(rows))))
    rdd = spark.sparkContext.parallelize(bins, len(bins)).flatMap(lambda b: b)
    return spark.createDataFrame(rdd, schema)


def deal(rows: list[tuple[str, int, int, int, int]], slices: int) -> list[list[tuple[str, int, int, int, int]]]:
    """Rows (with their size second) dealt into ``slices`` bins: biggest first, each to the lightest bin; the bins
    heaviest first."""
    return deal_by(rows, slices, lambda r: r[1])


def deal_by(rows: list[Any], slices: int, size: Callable[[Any], int]) -> list[list[Any]]:
    """Rows dealt into ``slices`` bins by ``size``: biggest first, each to the lightest bin; the bins heaviest
    first."""
    import heapq
    heap = [(0, n) for n in range(slices)]
    bins: list[list[Any]] = [[] for _ in range(slices)]
    for row in sorted(rows, key=lambda r: -size(r)):
        load, n = heapq.heappop(heap)
        bins[n].append(row)
        heapq.heappush(heap, (load + size(row), n))
    return sorted((b for b in bins if b), key=lambda b: -sum(size(r) for r in b))


def _rows_frame(spark: Any, rows: list[dict[str, Any]], schema: pa.Schema, size: str, slices: int) -> Any:
    """A DataFrame of ``rows`` (of ``schema``) dealt into at most ``slices`` partitions by their ``size`` column, one
    task each (as :func:`_paths_frame` deals files)."""
    tuples = [tuple(r.get(name) for name in schema.names) for r in rows]
    at = schema.names.index(size)
    bins = deal_by(tuples, max(1, min(slices, len(tuples))), lambda r: int(r[at]))
    rdd = spark.sparkContext.parallelize(bins, len(bins)).flatMap(lambda b: b)
    return spark.createDataFrame(rdd, spark_schema(schema))


def split_stage(spark: Any, traces: list[str], out: Path, dialect: str, split_min_events: int) -> pa.Table:
    """The VERDICTS rows of big trace/1 traces, each split into parts (spec/audit.md, "The split") checked on
    separate tasks: (1) a task per trace plans its parts from the events table, (2) a task per part (dealt by size)
    checks it, read from its lines of the file, and writes its witness steps, (3) a task per trace decides the
    verdict from the parts' verdicts and merged witnesses, or checks the whole trace where they cannot."""
    parallelism = spark.sparkContext.defaultParallelism
    work = out / "_split"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    plans = _paths_frame(spark, traces, parallelism * 4).mapInArrow(
        functools.partial(batches.plan_batches, events_dir=str(out / "events"), out=str(work)),
        spark_schema(batches.PLAN)).toArrow().cast(batches.PLAN).to_pylist()
    parts = [p for p in plans if p["part"] >= 0]
    results: dict[tuple[str, int], dict[str, Any]] = {}
    if parts:
        got = _rows_frame(spark, parts, batches.PLAN, "size", parallelism * 4).mapInArrow(
            functools.partial(batches.part_batches, dialect=dialect, out=str(work)),
            spark_schema(batches.PART_RESULTS)).toArrow().cast(batches.PART_RESULTS).to_pylist()
        results = {(r["trace"], r["part"]): r for r in got}
    decide: list[dict[str, Any]] = []
    for t in sorted({p["trace"] for p in plans}):
        mine = sorted((p for p in plans if p["trace"] == t), key=lambda p: p["part"])
        first = mine[0]
        if first["part"] < 0:
            decide.append({**first, "parts": 1, "statuses": None, "steps": None})
            continue
        done = [results[(t, p["part"])] for p in mine]
        decide.append({"trace": t, "events": first["events"], "parts": len(mine), "reason": None,
                       "statuses": [d["status"] for d in done], "steps": [d["steps"] for d in done]})
    verdicts = _rows_frame(spark, decide, batches.SPLIT_TRACES, "events", parallelism * 4).mapInArrow(
        functools.partial(batches.decide_batches, dialect=dialect, split_min_events=split_min_events),
        spark_schema(VERDICTS)).toArrow().cast(VERDICTS)
    shutil.rmtree(work, ignore_errors=True)
    return verdicts


@dataclass
class _Ingested:
    """What the ingest tasks wrote and reported."""

    raw: Any  # the staging rows (events), as a DataFrame
    traces: list[dict[str, Any]] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)  # of the files checked while read
    ranges: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # what each byte range gave, by file


def _ingest(spark: Any, files: list[str], staging: Path, slices: int, split_bytes: int | None,
            check: Check | None) -> _Ingested:
    """Run the ingest tasks into ``staging`` (with ``check``, each trace/1 file read whole is checked in its task,
    from the events it parsed)."""
    from pyspark.sql import functions as F
    _paths_frame(spark, files, slices, split_bytes).mapInArrow(
        functools.partial(batches.ingest_batches, check=check), spark_schema(batches.STAGING)).write.mode(
        "overwrite").parquet(str(staging))
    raw = spark.read.schema(spark_schema(batches.STAGING)).parquet(str(staging))
    got = _Ingested(raw.filter(~F.col("ev").isin(*batches.META_EVS)))
    for r in raw.filter(F.col("ev").isin(*batches.META_EVS)).select("trace", "ev", "text").collect():
        data = json.loads(r.text)
        if r.ev == batches.META_TRACE:
            got.traces.append(data)
        elif r.ev == batches.META_QUARANTINE:
            got.quarantine.append(data)
        elif r.ev == batches.META_VERDICT:
            got.verdicts.append(data)
        else:
            got.ranges.setdefault(r.trace, []).append(data)
    return got


def _offsets(ranges: dict[str, list[dict[str, Any]]]) -> tuple[list[tuple[str, int, int, int]], list[dict[str, Any]]]:
    """(trace, part, lines before it, events before it) of every range of the files read in ranges, and their
    TRACES rows; a file any of whose ranges could not be read on its own is left out (it is read whole)."""
    offsets: list[tuple[str, int, int, int]] = []
    rows: list[dict[str, Any]] = []
    for trace, parts in ranges.items():
        if any(p["whole"] for p in parts):
            continue
        lines = events = 0
        for p in sorted(parts, key=lambda p: p["part"]):
            offsets.append((trace, p["part"], lines, events))
            lines += p["lines"]
            events += p["events"]
        row = next(p["row"] for p in parts if p["part"] == 0)
        rows.append({**row, "events": events})
    return offsets, rows


@contextlib.contextmanager
def whole_files(spark: Any) -> Iterator[None]:
    """While inside, a Parquet scan reads each file as one partition, in file order (no file is split or
    packed with another): the events files hold whole traces sorted by event, as the ledger fold reads
    them, so it needs no shuffle."""
    names = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    old = {n: spark.conf.get(n, None) for n in names}
    for n in names:
        spark.conf.set(n, str(1 << 40))
    try:
        yield
    finally:
        for n, v in old.items():
            if v is None:
                spark.conf.unset(n)
            else:
                spark.conf.set(n, v)


def ledger_stage(spark: Any, events_dir: Path, ledger_dir: Path, stuck_after_ms: int,
                 poison_deliveries: int) -> pa.Table:
    """The events table (files of whole traces, sorted by trace and event) to the ledger table; returns the
    anomalies.

    The tasks get the events files' paths (dealt by size), read them and write each one's ledger and anomalies
    files with pyarrow (:func:`batches.ledger_files`); the driver reads the anomalies back. A Spark scan would turn
    every nested event row into a JVM row and back into Arrow on its way to Python, and Spark's writer every ledger
    row (and collecting every anomaly) again, which costs more than the ledger itself.
    """
    shutil.rmtree(ledger_dir, ignore_errors=True)
    ledger_dir.mkdir(parents=True)
    files = sorted(str(p) for p in events_dir.glob("part-*.parquet"))
    if not files:
        pq.write_table(LEDGER.empty_table(), ledger_dir / "part-00000.parquet")
        return ANOMALIES.empty_table()
    found_dir = ledger_dir.parent / "_anomalies"
    shutil.rmtree(found_dir, ignore_errors=True)
    found_dir.mkdir(parents=True)
    step = functools.partial(batches.ledger_files, out=str(ledger_dir), anomalies_out=str(found_dir),
                             stuck_after_ms=stuck_after_ms, poison_deliveries=poison_deliveries)
    written = _paths_frame(spark, files, spark.sparkContext.defaultParallelism * 4).mapInArrow(
        step, spark_schema(batches.WRITTEN)).toArrow().column("path").to_pylist()
    found = pa.concat_tables([pq.read_table(p, schema=ANOMALIES) for p in sorted(written)]) if written else \
        ANOMALIES.empty_table()
    shutil.rmtree(found_dir, ignore_errors=True)
    return found


def ingest_stage(spark: Any, files: list[str], out: Path, *, check: Check | None,
                 split_bytes: int | None = DEFAULT_INGEST_SPLIT_BYTES) -> tuple[list[dict[str, Any]],
                                                                         list[dict[str, Any]], list[dict[str, Any]]]:
    """Trace files to the events table ``out/events``: (TRACES rows, QUARANTINE rows, VERDICTS rows of the files
    checked while read, with ``check``)."""
    from pyspark.sql import functions as F
    parallelism = spark.sparkContext.defaultParallelism
    staging = out / "_staging"
    got = _ingest(spark, files, staging, parallelism * 4, split_bytes, check)
    raw, trace_rows, quarantine_rows, verdict_rows = got.raw, got.traces, got.quarantine, got.verdicts
    offsets, ranged_rows = _offsets(got.ranges)
    again = sorted(t for t in got.ranges if t not in {o[0] for o in offsets})
    trace_rows += ranged_rows
    whole = raw.filter(F.col("part") < 0)
    if again:  # files some of whose ranges could not be read on their own: read whole
        more = _ingest(spark, again, out / "_staging_whole", parallelism * 4, None, check)
        trace_rows += more.traces
        quarantine_rows += more.quarantine
        verdict_rows += more.verdicts
        whole = whole.unionByName(more.raw)
    good = sorted(t["trace"] for t in trace_rows)
    whole_good = [t for t in good if t not in {o[0] for o in offsets}]
    # files read whole stay where their ingest task put them (the tasks' files were dealt by size, so the events
    # files are as even as the ingest was, and no shuffle moves them); only the byte ranges of big files are
    # brought together by trace
    events = whole.join(spark.createDataFrame([(t,) for t in whole_good] or [("",)], "trace string")
                        .hint("broadcast"), "trace").select(*EVENTS.names)
    if offsets:
        shift = spark.createDataFrame(offsets, "trace string, part int, line_offset int, event_offset int")
        ranged = (raw.filter(F.col("part") >= 0).join(shift.hint("broadcast"), ["trace", "part"])
                  .withColumn("line", (F.col("line") + F.col("line_offset")).cast("int"))
                  .withColumn("event", (F.col("event") + F.col("event_offset")).cast("int")))
        big = len({o[0] for o in offsets})
        events = events.unionByName(ranged.select(*EVENTS.names).repartition(min(big, parallelism * 2), "trace"))
    with whole_files(spark):
        events.sortWithinPartitions("trace", "event").write.mode("overwrite").parquet(str(out / "events"))
    shutil.rmtree(out / "_staging_whole", ignore_errors=True)
    shutil.rmtree(staging, ignore_errors=True)
    return trace_rows, quarantine_rows, verdict_rows


def run_spark(spark: Any, files: list[str], out: Path, *, dialect: str, stuck_after_ms: int, poison_deliveries: int,
              split_min_events: int, progress: Callable[[str], None],
              ingest_split_bytes: int | None = DEFAULT_INGEST_SPLIT_BYTES) -> dict[str, pa.Table]:
    """Audit ``files`` with ``spark``; writes the Parquet tables under ``out`` and returns the small ones."""
    parallelism = spark.sparkContext.defaultParallelism
    ticker = _Progress(spark, progress)
    ticker.start()
    try:
        ticker.phase = "ingest and conformance"
        progress(f"ingest and conformance: {len(files)} files on {parallelism} cores")
        trace_rows, quarantine_rows, verdict_rows = ingest_stage(spark, files, out, check=Check(
            dialect, split_min_events, split_elsewhere=True), split_bytes=ingest_split_bytes)
        traces = pa.Table.from_pylist(trace_rows, TRACES)
        quarantine = pa.Table.from_pylist(quarantine_rows, QUARANTINE)
        good = sorted(t["trace"] for t in trace_rows)

        checked = {v["trace"] for v in verdict_rows}
        todo = [t for t in good if t not in checked]  # trace/2, files read in byte ranges, and traces to split
        verdicts = pa.Table.from_pylist(verdict_rows, VERDICTS)
        big = [t["trace"] for t in trace_rows if split_min_events and t["trace"] not in checked
               and t["format"] == FORMAT and t["events"] >= split_min_events]
        if big:
            ticker.phase = "conformance of split traces"
            progress(f"conformance: {len(big)} traces split into parts")
            verdicts = pa.concat_tables([verdicts, split_stage(spark, big, out, dialect, split_min_events)])
            todo = sorted(set(todo) - set(big))
        if todo:
            ticker.phase = "conformance"
            progress(f"conformance: {len(todo)} traces")
            verdicts_df = _paths_frame(spark, todo, parallelism * 4).mapInArrow(
                functools.partial(batches.conformance_batches, dialect=dialect, split_min_events=split_min_events),
                spark_schema(VERDICTS))
            verdicts = pa.concat_tables([verdicts, verdicts_df.toArrow().cast(VERDICTS)])

        ticker.phase = "ledger"
        progress("ledger and anomalies")
        anomalies = ledger_stage(spark, out / "events", out / "ledger", stuck_after_ms, poison_deliveries)
    finally:
        ticker.stopped.set()
    small = {"traces": traces, "quarantine": quarantine, "verdicts": verdicts, "anomalies": anomalies}
    for name, table in small.items():
        folder = out / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        pq.write_table(batches.canonical(name, table), folder / "part-00000.parquet")
    return {**small, "ledger": pq.read_table(out / "ledger", schema=LEDGER)}
