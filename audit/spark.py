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

import functools
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from xspec.audit import batches
from xspec.audit.schema import ANOMALIES, EVENTS, LEDGER, QUARANTINE, TRACES, VERDICTS, spark_schema

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


def _paths_frame(spark: Any, files: list[str], slices: int) -> Any:
    from pyspark.sql.types import LongType, StringType, StructField, StructType
    sizes = [(f, os.path.getsize(f)) for f in files]
    sizes.sort(key=lambda fs: -fs[1])  # biggest first: they start early and the small ones fill in
    schema = StructType([StructField("path", StringType()), StructField("size", LongType())])
    return spark.createDataFrame(sizes, schema).repartition(max(1, min(slices, len(files))))


def run_spark(spark: Any, files: list[str], out: Path, *, dialect: str, stuck_after_ms: int, poison_deliveries: int,
              split_min_events: int, progress: Callable[[str], None]) -> dict[str, pa.Table]:
    """Audit ``files`` with ``spark``; writes the Parquet tables under ``out`` and returns the small ones."""
    from pyspark.sql import functions as F
    parallelism = spark.sparkContext.defaultParallelism
    ticker = _Progress(spark, progress)
    ticker.start()
    try:
        ticker.phase = "ingest"
        progress(f"ingest: {len(files)} files on {parallelism} cores")
        paths = _paths_frame(spark, files, parallelism * 4)
        staging = out / "_staging"
        raw = paths.mapInArrow(batches.ingest_batches, spark_schema(EVENTS))
        raw.write.mode("overwrite").parquet(str(staging))
        raw = spark.read.schema(spark_schema(EVENTS)).parquet(str(staging))
        meta = raw.filter(F.col("ev").isin(batches.META_TRACE, batches.META_QUARANTINE)).select("ev", "text")
        trace_rows: list[dict[str, Any]] = []
        quarantine_rows: list[dict[str, Any]] = []
        for r in meta.collect():
            (trace_rows if r.ev == batches.META_TRACE else quarantine_rows).append(json.loads(r.text))
        traces = pa.Table.from_pylist(trace_rows, TRACES)
        quarantine = pa.Table.from_pylist(quarantine_rows, QUARANTINE)
        good = sorted(t["trace"] for t in trace_rows)
        events = (raw.filter(~F.col("ev").isin(batches.META_TRACE, batches.META_QUARANTINE))
                  .join(spark.createDataFrame([(t,) for t in good], "trace string").hint("broadcast"), "trace")
                  .select(*EVENTS.names))
        out_files = max(1, min(parallelism * 2, len(good)))
        events.repartition(out_files, "trace").sortWithinPartitions("trace", "event") \
            .write.mode("overwrite").parquet(str(out / "events"))
        shutil.rmtree(staging, ignore_errors=True)

        ticker.phase = "conformance"
        progress(f"conformance: {len(good)} traces")
        verdicts_df = _paths_frame(spark, good, parallelism * 4).mapInArrow(
            functools.partial(batches.conformance_batches, dialect=dialect, split_min_events=split_min_events),
            spark_schema(VERDICTS))
        verdicts = verdicts_df.toArrow().cast(VERDICTS)

        ticker.phase = "ledger"
        progress("ledger and anomalies")
        events = spark.read.schema(spark_schema(EVENTS)).parquet(str(out / "events"))
        ledger_df = (events.select(*batches.LEDGER_INPUT).repartition(out_files, "trace")
                     .sortWithinPartitions("trace", "event")
                     .mapInArrow(batches.ledger_batches, spark_schema(LEDGER)))
        ledger_df.write.mode("overwrite").parquet(str(out / "ledger"))
        ledger_df = spark.read.schema(spark_schema(LEDGER)).parquet(str(out / "ledger"))
        anomalies = ledger_df.mapInArrow(
            functools.partial(batches.anomaly_batches, stuck_after_ms=stuck_after_ms,
                              poison_deliveries=poison_deliveries), spark_schema(ANOMALIES)).toArrow().cast(ANOMALIES)
    finally:
        ticker.stopped.set()
    small = {"traces": traces, "quarantine": quarantine, "verdicts": verdicts, "anomalies": anomalies}
    for name, table in small.items():
        folder = out / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        pq.write_table(batches.canonical(name, table), folder / "part-00000.parquet")
    return {**small, "ledger": pq.read_table(out / "ledger", schema=LEDGER)}
