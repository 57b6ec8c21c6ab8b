"""``make demo``: the whole pipeline against a running cluster (``make run``), end to end.

1. the generator produces activity events to ``activity`` (in a thread, paced);
2. the stream job turns them into per-minute page metrics as they arrive (Parquet
   warehouse + ``metrics`` topic), printing its progress;
3. halfway and at the end the offline load copies everything since its last run into the
   warehouse's ``activity`` table — the second run picks up exactly where the first stopped;
4. the results are checked (every offset loaded once), summarised and plotted to a PNG.

    python -m examples.pipeline.demo [--bootstrap-server B] [--output DIR] [--events N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from . import generate, offline_load, plot, stream_job
from .topics import ACTIVITY, DEFAULT_BOOTSTRAP, METRICS, ensure_topics


def _offsets(bootstrap: str, topic: str) -> int:
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


def main() -> int:
    from odradek.spark.session import local_session

    parser = argparse.ArgumentParser(prog="python -m examples.pipeline.demo")
    parser.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP)
    parser.add_argument("--output", type=Path, default=Path("run/pipeline"))
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--rate", type=float, default=1_500)
    parser.add_argument("--keep", action="store_true",
                        help="keep the warehouse of an earlier demo (resume from it)")
    args = parser.parse_args()
    bootstrap = args.bootstrap_server
    warehouse = args.output / "warehouse"
    if not args.keep:
        shutil.rmtree(args.output, ignore_errors=True)
    ensure_topics(bootstrap)
    before = _offsets(bootstrap, ACTIVITY)
    print(f"== odradek pipeline demo on {bootstrap}; warehouse {warehouse}")
    spark = local_session("pipeline-demo")

    half = args.events // 2
    produced = [0]

    def generate_events() -> None:
        seconds = 4 * args.events / args.rate
        produced[0] += generate.produce(bootstrap, half, args.rate, seconds, first=before,
                                        show=False)
        produced[0] += generate.produce(bootstrap, args.events - half, args.rate, seconds,
                                        first=half + before, show=False)

    print(f"== 1. generator → {ACTIVITY}: {args.events} events at {args.rate:.0f}/s; "
          f"stream job → page_metrics (Parquet) + {METRICS}")
    generator = threading.Thread(target=generate_events, name="generator", daemon=True)
    generator.start()
    queries = stream_job.start(spark, bootstrap, warehouse, available_now=False,
                               max_offsets=20_000)
    loaded_once = False
    try:
        while generator.is_alive():
            stream_job.show_progress(queries, 10)
            print(f"  generator               {produced[0]:>7} events acknowledged so far",
                  flush=True)
            if not loaded_once and produced[0] >= half:
                print("== 2. offline load (first half)")
                offline_load.load(spark, bootstrap, warehouse)
                loaded_once = True
    finally:
        for query in queries:
            query.stop()
    generator.join()
    print("== 3. stream job: drain what is left (Trigger.AvailableNow, same checkpoints)")
    stream_job.run(spark, bootstrap, warehouse, seconds=0, available_now=True)
    print("== 4. offline load (everything since the last load)")
    offline_load.load(spark, bootstrap, warehouse)
    status = _check_activity_table(spark, warehouse, _offsets(bootstrap, ACTIVITY))
    metrics = spark.read.parquet(str(warehouse / "page_metrics"))
    top = metrics.orderBy("views", ascending=False).limit(3).collect()
    print(f"page_metrics: {metrics.count()} (minute, page) windows; busiest: " +
          "; ".join(f"{r.page} {r.minute:%H:%M} {r.views} views ctr {r.ctr:.2f}"
                    for r in top))
    sample = (spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", METRICS).load().selectExpr("CAST(value AS STRING) v")
              .limit(1).collect())
    if sample:
        print(f"{METRICS} topic: {_offsets(bootstrap, METRICS)} records, e.g. "
              f"{json.loads(sample[0].v)}")
    out = plot.plot(spark, warehouse, args.output / "results.png")
    print(f"== plot: {out}")
    return status


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"== done in {time.monotonic() - started:.0f}s")
    raise SystemExit(code)
