"""The audit as a Spark job (local mode by default, or a standalone cluster's master URL).

The session binds to 127.0.0.1, has no UI and quiet logs, and runs its Python workers on this
interpreter (``PYSPARK_PYTHON``). Every step is an Arrow ``mapInArrow`` over the functions of
:mod:`xspec.audit.batches`:

1. ingest: the files' paths, spread over tasks, become the events table (Parquet, one folder;
   each task writes the files it read whole to a file of its own, sorted by trace and event;
   the byte ranges of big files are brought together by trace) plus the traces and quarantine
   rows; the events of a malformed file are dropped;
2. conformance: each trace checked by the model where its path lands (most in their ingest task);
3. ledger and anomalies: each events file read by a task, which writes its ledger and anomalies;
4. the summary and the report (:mod:`xspec.audit.report`), from those tables in Arrow batches.
"""

from __future__ import annotations

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
import pyarrow.compute as pc
import pyarrow.parquet as pq

from xspec.audit import batches, split
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
    separate tasks: (1) a task per trace plans its parts from the events table and writes each part's lines to a
    file of its own, (2) the parts, dealt by size to four tasks per core, are checked, each read from its file, and
    their witness steps written, (3) a task per trace decides the verdict from the parts' verdicts and merged
    witnesses, or checks the whole trace where they cannot. Where no merge is needed (a virtual clock, every part
    conforms), the driver decides from the header alone and step (3) runs only for the other traces."""
    parallelism = spark.sparkContext.defaultParallelism
    work = out / "_split"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    from xspec.audit.split import check_parts, plan_parts
    plans = _paths_frame(spark, traces, parallelism * 4).mapInArrow(
        functools.partial(plan_parts, events_dir=str(out / "events"), out=str(work)),
        spark_schema(split.PLAN)).toArrow().cast(split.PLAN).to_pylist()
    parts = [p for p in plans if p["part"] >= 0]
    results: dict[tuple[str, int], dict[str, Any]] = {}
    if parts:
        got = _rows_frame(spark, parts, split.PLAN, "size", parallelism * 4).mapInArrow(
            functools.partial(check_parts, dialect=dialect, out=str(work)),
            spark_schema(split.PART_RESULTS)).toArrow().cast(split.PART_RESULTS).to_pylist()
        results = {(r["trace"], r["part"]): r for r in got}
    decide: list[dict[str, Any]] = []
    decided: list[dict[str, Any]] = []
    for t in sorted({p["trace"] for p in plans}):
        mine = sorted((p for p in plans if p["trace"] == t), key=lambda p: p["part"])
        first = mine[0]
        if first["part"] < 0:
            decide.append({**first, "parts": 1, "statuses": None, "steps": None})
            continue
        done = [results[(t, p["part"])] for p in mine]
        row = {"trace": t, "events": first["events"], "parts": len(mine), "reason": None,
               "statuses": [d["status"] for d in done], "steps": [d["steps"] for d in done]}
        verdict = _conform_without_merge(row, dialect)
        if verdict is None:
            decide.append(row)
        else:
            decided.append(verdict)
    verdicts = pa.Table.from_pylist(decided, VERDICTS)
    if decide:
        verdicts = pa.concat_tables([verdicts, _rows_frame(
            spark, decide, split.SPLIT_TRACES, "events", parallelism * 4).mapInArrow(
            functools.partial(batches.decide_batches, dialect=dialect, split_min_events=split_min_events),
            spark_schema(VERDICTS)).toArrow().cast(VERDICTS)])
    shutil.rmtree(work, ignore_errors=True)
    return verdicts


def _conform_without_merge(row: dict[str, Any], dialect: str) -> dict[str, Any] | None:
    """The VERDICTS row of a split trace that needs no merge (a virtual clock, every part conforms), decided here
    as ``batches.decide_batches`` decides it (its header is all it reads); None for the others, which a task
    decides (merging witnesses, or checking the whole trace)."""
    from xspec.audit.conformance import verdict_row
    from xspec.audit.split import part_trace, undecided
    from xspec.traces.check.checker import Verdict
    if any(s != "conform" for s in row["statuses"]):
        return None
    head = part_trace(row["trace"], [])
    if head.header.clock != "virtual" or undecided(head.header.clock, row["statuses"], lambda: None) is not None:
        return None
    return verdict_row(head, row["trace"], Verdict("conform", row["events"]), dialect, parts=row["parts"],
                       split="split")


EVENTS_ROW_GROUP = 131_072
"""Events an ingest task gathers before writing them as one Parquet row group."""


class _TableFile:
    """A Parquet file written from batches gathered into row groups of :data:`EVENTS_ROW_GROUP` rows, under a
    partial name (``_``, which readers skip) until it is closed."""

    def __init__(self, path: str, schema: pa.Schema) -> None:
        self.path, self.schema = path, schema
        self.partial = os.path.join(os.path.dirname(path), "_" + os.path.basename(path))
        self.held: list[pa.RecordBatch] = []
        self.rows = 0
        self.writer: pq.ParquetWriter | None = None

    def write(self, batch: pa.RecordBatch) -> None:
        self.held.append(batch)
        self.rows += batch.num_rows
        if self.rows >= EVENTS_ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self.held:
            return
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.partial, self.schema)
        self.writer.write_table(pa.Table.from_batches(self.held, self.schema), row_group_size=max(self.rows, 1))
        self.held, self.rows = [], 0

    def close(self, dropped: set[str]) -> None:
        """Finish the file (without the rows of the traces in ``dropped``, when it holds any)."""
        self._flush()
        if self.writer is None:
            return
        self.writer.close()
        if dropped:  # a malformed file's first batches were written before its error was found: rare, rewritten
            table = pq.read_table(self.partial, schema=self.schema)
            table = table.filter(pc.invert(pc.is_in(table.column("trace"), pa.array(sorted(dropped)))))
            if table.num_rows:
                pq.write_table(table, self.partial, row_group_size=EVENTS_ROW_GROUP)
            else:
                os.remove(self.partial)
                return
        os.replace(self.partial, self.path)


def ingest_files(paths: Iterator[pa.RecordBatch], check: Check | None, events_out: str, ranges_out: str,
                 name: str) -> Iterator[pa.RecordBatch]:
    """An ingest task: :func:`batches.ingest_batches` over its files (in path order), writing the events of the files
    read whole to one events file of its own in ``events_out`` (EVENTS, whole traces sorted by trace and event:
    no Spark sort or write is needed) and the rows of byte ranges to ``ranges_out`` (STAGING, for Spark to bring
    together by trace); yields only the META rows (STAGING batches). A file that turns out malformed leaves no
    rows; a task run again writes the same files again.

    Through Spark's writer every nested event would be turned into a JVM row and back into Parquet, which costs
    more than reading the files."""
    import uuid

    from pyspark import TaskContext
    context = TaskContext.get()
    task = f"{name}-{context.partitionId():05d}.parquet" if context is not None else f"{name}-{uuid.uuid4()}.parquet"
    rows = pa.Table.from_batches(list(paths))
    if not rows.num_rows:
        return
    rows = rows.sort_by("path")
    events = _TableFile(os.path.join(events_out, f"part-{task}"), EVENTS)
    ranges = _TableFile(os.path.join(ranges_out, f"part-{task}"), batches.STAGING)
    seen: set[str] = set()
    good: set[str] = set()
    meta_evs = pa.array(batches.META_EVS)
    for batch in batches.ingest_batches(iter(rows.to_batches()), check=check):
        meta = pc.fill_null(pc.is_in(batch.column("ev"), meta_evs), False)
        if pc.any(meta).as_py():
            found = batch.filter(meta)
            good.update(found.filter(pc.equal(found.column("ev"), batches.META_TRACE)).column("trace").to_pylist())
            yield found
            batch = batch.filter(pc.invert(meta))
        if not batch.num_rows:
            continue
        if batch.column("part")[0].as_py() >= 0:
            ranges.write(batch)
        else:
            seen.update(pc.unique(batch.column("trace")).to_pylist())
            events.write(batch.drop_columns(["part"]))
    events.close(seen - good)
    ranges.close(set())


@dataclass
class _Ingested:
    """What the ingest tasks wrote and reported."""

    ranges_dir: Path  # the byte ranges' rows (STAGING)
    traces: list[dict[str, Any]] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)  # of the files checked while read
    ranges: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # what each byte range gave, by file


def _ingest(spark: Any, files: list[str], events_dir: Path, ranges_dir: Path, name: str, slices: int,
            split_bytes: int | None, check: Check | None) -> _Ingested:
    """Run the ingest tasks (with ``check``, each trace/1 file read whole is checked in its task, from the events it
    parsed): the events of files read whole go to ``events_dir``, those of byte ranges to ``ranges_dir``."""
    ranges_dir.mkdir(parents=True, exist_ok=True)
    meta = _paths_frame(spark, files, slices, split_bytes).mapInArrow(
        functools.partial(ingest_files, check=check, events_out=str(events_dir), ranges_out=str(ranges_dir),
                          name=name), spark_schema(batches.STAGING)).toArrow()
    got = _Ingested(ranges_dir)
    for trace, ev, text in zip(*(meta.column(c).to_pylist() for c in ("trace", "ev", "text")), strict=True):
        data = json.loads(text)
        if ev == batches.META_TRACE:
            got.traces.append(data)
        elif ev == batches.META_QUARANTINE:
            got.quarantine.append(data)
        elif ev == batches.META_VERDICT:
            got.verdicts.append(data)
        else:
            got.ranges.setdefault(trace, []).append(data)
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
    checked while read, with ``check``).

    Each ingest task writes the events of the files it read whole to an events file of its own (whole traces,
    sorted by trace and event, as the ledger step reads them: nothing is shuffled or sorted); only the byte ranges
    of big files are brought together by trace, by Spark."""
    from pyspark.sql import functions as F
    parallelism = spark.sparkContext.defaultParallelism
    events_dir, ranges_dir = out / "events", out / "_ranges"
    for folder in (events_dir, ranges_dir):
        shutil.rmtree(folder, ignore_errors=True)
    events_dir.mkdir(parents=True)
    got = _ingest(spark, files, events_dir, ranges_dir, "a", parallelism * 4, split_bytes, check)
    trace_rows, quarantine_rows, verdict_rows = got.traces, got.quarantine, got.verdicts
    offsets, ranged_rows = _offsets(got.ranges)
    again = sorted(t for t in got.ranges if t not in {o[0] for o in offsets})
    trace_rows += ranged_rows
    if again:  # files some of whose ranges could not be read on their own: read whole
        more = _ingest(spark, again, events_dir, ranges_dir, "b", parallelism * 4, None, check)
        trace_rows += more.traces
        quarantine_rows += more.quarantine
        verdict_rows += more.verdicts
    if offsets:  # the ranges of each big file, brought together by trace and numbered in the whole file
        raw = spark.read.schema(spark_schema(batches.STAGING)).parquet(str(ranges_dir))
        shift = spark.createDataFrame(offsets, "trace string, part int, line_offset int, event_offset int")
        ranged = (raw.join(shift.hint("broadcast"), ["trace", "part"])
                  .withColumn("line", (F.col("line") + F.col("line_offset")).cast("int"))
                  .withColumn("event", (F.col("event") + F.col("event_offset")).cast("int")))
        big = len({o[0] for o in offsets})
        (ranged.select(*EVENTS.names).repartition(min(big, parallelism * 2), "trace")
         .sortWithinPartitions("trace", "event").write.mode("append").parquet(str(events_dir)))
    shutil.rmtree(ranges_dir, ignore_errors=True)
    return trace_rows, quarantine_rows, verdict_rows


def run_spark(spark: Any, files: list[str], out: Path, *, dialect: str, stuck_after_ms: int, poison_deliveries: int,
              split_min_events: int, progress: Callable[[str], None],
              ingest_split_bytes: int | None = DEFAULT_INGEST_SPLIT_BYTES) -> None:
    """Audit ``files`` with ``spark``; writes the Parquet tables under ``out`` (the driver holds the anomalies
    while it sorts them, never the events or the ledger)."""
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
    del anomalies
    for name in list(small):
        folder = out / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        pq.write_table(batches.canonical(name, small.pop(name)), folder / "part-00000.parquet")
