"""The real-time half: Structured Streaming over ``activity`` → per-minute page metrics.

    python -m examples.pipeline.stream_job [--bootstrap-server B] [--warehouse DIR]
                                           [--seconds S | --available-now]

Per page and one-minute event-time window: page views, clicks and the click-through rate
(clicks / views). Events later than the watermark (2 minutes behind the newest event time
seen) are dropped, which is what lets a window be final: in append mode each window is
emitted once, when the watermark passes its end. Two queries share the plan:

* Parquet under ``WAREHOUSE/page_metrics``, partitioned by ``date``/``hour`` (Spark's file
  sink: exactly-once through its commit log);
* the ``metrics`` topic, one JSON record per window and page, keyed by page — exactly once
  (``transactionalIdPrefix``: each micro-batch's records are committed in Kafka
  transactions together with a marker of the batch, so a re-run batch is not written
  twice; read the topic with ``isolation.level=read_committed``). ``--at-least-once``
  writes without transactions, as Spark's Kafka sink does.

Offsets live in each query's checkpoint, so a stopped or killed job resumes where it was.
Progress (batches, input rows, rate, watermark) is printed as the queries run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from .topics import ACTIVITY, DEFAULT_BOOTSTRAP, METRICS, ensure_topics

EVENT_SCHEMA = ("type STRING, user STRING, session STRING, page STRING, referrer STRING, "
                "event_time LONG, agent STRING, target STRING, query STRING")
WATERMARK = "2 minutes"


def page_metrics(spark: Any, bootstrap: str, max_offsets: int | None = None) -> Any:
    """The streaming DataFrame of per-minute, per-page views, clicks and CTR."""
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", ACTIVITY).option("startingOffsets", "earliest"))
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
    events = (reader.load()
              .select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"))
              .select("e.*")
              .withColumn("ts", F.timestamp_millis("event_time"))
              .where(F.col("type").isin("page_view", "click")))
    # A click is counted on the page it happened on, i.e. the page being viewed.
    return (events.withWatermark("ts", WATERMARK)
            .groupBy(F.window("ts", "1 minute").alias("w"), "page")
            .agg(F.sum(F.when(F.col("type") == "page_view", 1).otherwise(0)).alias("views"),
                 F.sum(F.when(F.col("type") == "click", 1).otherwise(0)).alias("clicks"))
            .select(F.col("w.start").alias("minute"), "page", "views", "clicks",
                    F.when(F.col("views") > 0, F.col("clicks") / F.col("views"))
                    .alias("ctr"),
                    F.date_format("w.start", "yyyy-MM-dd").alias("date"),
                    F.hour("w.start").alias("hour")))


def start(spark: Any, bootstrap: str, warehouse: Path, *, available_now: bool,
          max_offsets: int | None = None, exactly_once: bool = True) -> list[Any]:
    """Start the two queries (Parquet, metrics topic); returns them."""
    metrics = page_metrics(spark, bootstrap, max_offsets)
    checkpoints = warehouse / "_checkpoints"

    def trigger(writer: Any) -> Any:
        if available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime="5 seconds")

    parquet = _start(trigger(metrics.writeStream.queryName("page_metrics_parquet")
                             .format("parquet").partitionBy("date", "hour")
                             .option("path", str(warehouse / "page_metrics"))
                             .option("checkpointLocation", str(checkpoints / "page_metrics"))
                             .outputMode("append")))
    topic_writer = (metrics.selectExpr(
        "page AS key",
        "to_json(named_struct('minute', CAST(minute AS STRING), 'page', page, "
        "'views', views, 'clicks', clicks, 'ctr', ctr)) AS value")
        .writeStream.queryName("page_metrics_topic").format("odradek")
        .option("kafka.bootstrap.servers", bootstrap).option("topic", METRICS)
        .option("checkpointLocation", str(checkpoints / "metrics_topic"))
        .outputMode("append"))
    if exactly_once:
        topic_writer = topic_writer.option("transactionalIdPrefix", "page-metrics")
    topic = _start(trigger(topic_writer))
    return [parquet, topic]


#: Writers of the running queries by name, so that :func:`show_progress` can restart one.
_writers: dict[str, Any] = {}
#: How many times the queries may be restarted after Spark's Python process came up too
#: slowly (over the whole run).
_restarts_left = [20]


def _start(writer: Any, timeout: float = 120) -> Any:
    """Start a query and wait until it has run a micro-batch (or stopped): starting the
    queries one at a time keeps a busy machine's load down while their sources start."""
    query = writer.start()
    _writers[query.name] = writer
    deadline = time.monotonic() + timeout
    while query.isActive and query.lastProgress is None and time.monotonic() < deadline:
        time.sleep(0.2)
    return query


def _restart_slow_starts(queries: list[Any]) -> None:
    """Start again (in ``queries``) each query that failed because a Python process Spark
    started did not connect back in time.

    Spark gives the processes behind a Python streaming source and sink a fixed 10 s, and
    on a pip-installed pyspark they import pyspark from ``pyspark.zip`` (no cached
    bytecode), which an overloaded machine can make take longer. Nothing of the failed
    micro-batch was committed, so the query simply resumes from its checkpoint.
    """
    for i, query in enumerate(queries):
        while (not query.isActive and query.exception() is not None
               and "failed to connect back" in str(query.exception())
               and _restarts_left[0] > 0):
            _restarts_left[0] -= 1
            print(f"  {query.name}: Spark's Python process started too slowly; restarting "
                  f"from the checkpoint", flush=True)
            query = queries[i] = _start(_writers[query.name])


def show_progress(queries: list[Any], seconds: float, interval: float = 5.0) -> None:
    """Print each query's newest progress until ``seconds`` pass or all have stopped (a
    query that failed only because Spark's Python process started too slowly is restarted
    in ``queries``); raise if a query failed."""
    deadline = time.monotonic() + seconds
    seen: dict[str, int] = {}
    _restart_slow_starts(queries)
    while time.monotonic() < deadline and any(q.isActive for q in queries):
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
        for query in queries:
            progress = query.lastProgress
            if not progress or seen.get(query.name) == progress["batchId"]:
                continue
            seen[query.name] = progress["batchId"]
            print(f"  {query.name:<22} batch {progress['batchId']:>4}  "
                  f"in {progress['numInputRows']:>7} rows  "
                  f"{progress.get('processedRowsPerSecond', 0):>9.0f} rows/s  "
                  f"watermark {progress.get('eventTime', {}).get('watermark', '-')}",
                  flush=True)
        _restart_slow_starts(queries)
    for query in queries:
        if query.exception() is not None:
            raise RuntimeError(f"{query.name} failed: {query.exception()}")


def run(spark: Any, bootstrap: str, warehouse: Path, *, seconds: float,
        available_now: bool, exactly_once: bool = True) -> None:
    queries = start(spark, bootstrap, warehouse, available_now=available_now,
                    exactly_once=exactly_once)
    try:
        show_progress(queries, seconds if not available_now else 3600)
    finally:
        for query in queries:
            query.stop()


def main() -> None:
    from odradek.spark.session import local_session

    parser = argparse.ArgumentParser(prog="python -m examples.pipeline.stream_job")
    parser.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP)
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"))
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--available-now", action="store_true",
                        help="process what is in the topic now, then stop")
    parser.add_argument("--at-least-once", action="store_true",
                        help="write the metrics topic without transactions")
    args = parser.parse_args()
    ensure_topics(args.bootstrap_server)
    spark = local_session("pipeline-stream")
    run(spark, args.bootstrap_server, args.warehouse, seconds=args.seconds,
        available_now=args.available_now, exactly_once=not args.at_least_once)


if __name__ == "__main__":
    main()
