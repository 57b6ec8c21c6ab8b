"""``make demo``: the whole pipeline against a running cluster (``make run``), end to end.

1. the generator (a separate process, paced) produces activity events to ``activity`` while
   the stream job turns them into per-minute page metrics (Parquet warehouse + ``metrics``
   topic), printing its progress;
2. the offline load copies everything so far into the warehouse's ``activity`` table;
3. more events; the stream job resumes from its checkpoints;
4. the offline load again: it picks up exactly where the first one stopped;
5. the results are checked (every offset loaded exactly once), summarised and plotted.

    python -m examples.pipeline.demo [--bootstrap-server B] [--output DIR] [--events N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import offline_load, plot, stream_job
from .topics import ACTIVITY, DEFAULT_BOOTSTRAP, METRICS, ensure_topics


def _offsets(bootstrap: str, topic: str) -> int:
    """Offsets in ``topic`` (end - start): cheap, and its record count only for a topic
    written without transactions (``activity``); see :func:`committed_records`."""
    from odradek.client import AdminClient, TopicPartition

    admin = AdminClient(bootstrap)
    try:
        parts = admin.describe_topics([topic])[topic].partitions
        ends = admin.list_offsets({TopicPartition(topic, p): -1 for p in parts})
        starts = admin.list_offsets({TopicPartition(topic, p): -2 for p in parts})
    finally:
        admin.close()
    return sum((ends[tp].offset if ends[tp] else 0) - (starts[tp].offset if starts[tp] else 0)
               for tp in ends)


def committed_records(spark: Any, bootstrap: str, topic: str) -> int:
    """Records a read_committed consumer gets from ``topic``. Not its offsets: each
    transaction's commit marker (a control batch) takes an offset too, so a topic written
    in transactions (``metrics``) holds more offsets than records."""
    return (spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("kafka.isolation.level", "read_committed")
            .load().count())


def _check_activity_table(spark: Any, warehouse: Path, expected: int) -> int:
    from pyspark.sql import functions as F

    table = spark.read.parquet(str(warehouse / ACTIVITY))
    total = table.count()
    distinct = table.select("partition", "offset").distinct().count()
    gaps = (table.groupBy("partition")
            .agg((F.max("offset") - F.min("offset") + 1 - F.count("*")).alias("gap"))
            .where("gap != 0").count())
    status = "ok" if total == distinct == expected and gaps == 0 else "MISMATCH"
    print(f"check: activity table holds {total} records, {distinct} distinct offsets, "
          f"{gaps} partitions with gaps; topic holds {expected}: {status}")
    return 0 if status == "ok" else 1


def _phase(spark: Any, bootstrap: str, warehouse: Path, events: int, rate: float,
           first: int) -> None:
    """Generate ``events`` (a separate process, paced) while the stream job runs; then let
    the stream job catch up and stop it cleanly."""
    queries = stream_job.start(spark, bootstrap, warehouse, available_now=False,
                               max_offsets=20_000)
    generator = subprocess.Popen(
        [sys.executable, "-m", "examples.pipeline.generate", "--bootstrap-server", bootstrap,
         "--events", str(events), "--rate", str(rate), "--first", str(first), "--quiet",
         "--seconds", str(4 * events / rate)])
    try:
        while generator.poll() is None:
            stream_job.show_progress(queries, 10)
            print(f"  generator               {_offsets(bootstrap, ACTIVITY):>7} events in "
                  f"{ACTIVITY}", flush=True)
        if generator.returncode:
            raise RuntimeError(f"the generator failed (exit {generator.returncode})")
        for i in range(len(queries)):
            while True:
                try:
                    queries[i].processAllAvailable()
                    break
                except Exception:
                    stream_job.show_progress(queries, 0)  # restarts a slow start, or raises
        stream_job.show_progress(queries, 0)
    finally:
        if generator.poll() is None:
            generator.kill()
        for query in queries:
            query.stop()


def main() -> int:
    from odradek.spark.session import local_session

    parser = argparse.ArgumentParser(prog="python -m examples.pipeline.demo")
    parser.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP)
    parser.add_argument("--output", type=Path, default=Path("run/pipeline"))
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--rate", type=float, default=1_500)
    args = parser.parse_args()
    bootstrap = args.bootstrap_server
    warehouse = args.output / "warehouse"
    shutil.rmtree(args.output, ignore_errors=True)
    ensure_topics(bootstrap)
    before = _offsets(bootstrap, ACTIVITY)
    print(f"== odradek pipeline demo on {bootstrap}; output in {args.output}")
    spark = local_session("pipeline-demo")
    half = args.events // 2
    print(f"== 1. generator → {ACTIVITY} ({half} events at {args.rate:.0f}/s) while the "
          f"stream job computes page_metrics (Parquet) and {METRICS}")
    _phase(spark, bootstrap, warehouse, half, args.rate, before)
    print("== 2. offline load: everything so far")
    offline_load.load(spark, bootstrap, warehouse)
    print(f"== 3. more events ({args.events - half}); the stream job resumes from its "
          f"checkpoints")
    _phase(spark, bootstrap, warehouse, args.events - half, args.rate, before + half)
    print("== 4. offline load: only what is new since the last load")
    offline_load.load(spark, bootstrap, warehouse)
    status = _check_activity_table(spark, warehouse, _offsets(bootstrap, ACTIVITY))
    metrics = spark.read.parquet(str(warehouse / "page_metrics"))
    top = metrics.orderBy("views", ascending=False).limit(3).collect()
    print(f"page_metrics: {metrics.count()} (minute, page) windows; busiest: " +
          "; ".join(f"{r.page} at {r.minute:%H:%M} {r.views} views, ctr {r.ctr:.2f}"
                    for r in top))
    sample = (spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", METRICS).option("kafka.isolation.level", "read_committed")
              .load().selectExpr("CAST(value AS STRING) v")
              .limit(1).collect())
    if sample:
        print(f"{METRICS} topic: {committed_records(spark, bootstrap, METRICS)} records, e.g. "
              f"{json.loads(sample[0].v)}")
    out = plot.plot(spark, warehouse, args.output / "results.png")
    print(f"== plot: {out}")
    return status


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"== done in {time.monotonic() - started:.0f}s")
    raise SystemExit(code)
