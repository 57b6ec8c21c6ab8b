"""The reference pipeline in ``examples/pipeline``: events, the stream job's metrics, and the
paper's offline load surviving a kill with no duplicates and no gaps."""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from examples.pipeline import demo, generate, offline_load, plot, stream_job
from examples.pipeline.events import EventGenerator
from examples.pipeline.topics import ACTIVITY, METRICS, ensure_topics
from tests.spark.conftest import REPO, TopicFactory


def test_events_look_like_site_activity() -> None:
    events = list(EventGenerator(seed=1).events(5000))
    kinds = collections.Counter(e.type for e in events)
    assert set(kinds) == {"page_view", "click", "search", "login"}
    assert kinds["page_view"] > kinds["click"] > kinds["login"] > 0
    users = collections.Counter(e.key for e in events)
    assert users.most_common(1)[0][1] > 8 * (len(events) / len(users))  # skewed keys
    record = json.loads(events[0].value)
    assert {"type", "user", "session", "page", "referrer", "event_time"} <= set(record)
    times = [e.event_time_ms for e in events]
    assert times != sorted(times)  # a little out of order, as shipped logs are


@pytest.fixture(scope="module")
def activity(bootstrap: str) -> int:
    ensure_topics(bootstrap, partitions=3)
    # Unpaced; event times span ~7 minutes, so the watermark closes several windows.
    return generate.produce(bootstrap, 3000, rate=1e9, seconds=120, speedup=300, show=False)


def _table(spark: Any, warehouse: Path) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in
                  spark.read.parquet(str(warehouse / ACTIVITY))
                  .select("partition", "offset").collect())


def _all_offsets(bootstrap: str) -> list[tuple[int, int]]:
    from odradek.client import AdminClient, TopicPartition

    admin = AdminClient(bootstrap)
    try:
        ends = admin.list_offsets({TopicPartition(ACTIVITY, p): -1 for p in range(3)})
    finally:
        admin.close()
    return sorted((tp.partition, o) for tp, v in ends.items() for o in range(v.offset))


@pytest.mark.slow  # a Spark driver process of its own, killed, and three loads
def test_offline_load_killed_mid_write_then_rerun(spark: Any, bootstrap: str, activity: int,
                                                  tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    load = subprocess.Popen(
        [sys.executable, "-m", "examples.pipeline.offline_load", "--bootstrap-server",
         bootstrap, "--warehouse", str(warehouse)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=(tmp_path / "load.log").open("w"),
        text=True, start_new_session=True, env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    try:
        assert load.stdout is not None
        deadline = time.monotonic() + 240
        for line in load.stdout:
            if "writing into" in line or time.monotonic() > deadline:
                break
        staging = warehouse / ACTIVITY / "_staging"
        while time.monotonic() < deadline and load.poll() is None and not any(
                staging.glob("*/_temporary/*")):
            time.sleep(0.02)
        assert load.poll() is None, (tmp_path / "load.log").read_text()[-3000:]
    finally:
        os.killpg(load.pid, signal.SIGKILL)  # mid-write: Spark's task files are open
        load.wait(30)
    assert offline_load.committed_loads(warehouse / ACTIVITY) == []
    assert any(staging.iterdir()), "the kill left no partial output to clean up"

    assert offline_load.load(spark, bootstrap, warehouse, show=False) == activity
    assert _table(spark, warehouse) == _all_offsets(bootstrap)

    # Killed after the files were written but before the commit (the rename): a staged
    # copy of a whole load is left behind and must not be published.
    first = offline_load.committed_loads(warehouse / ACTIVITY)[0]
    shutil.copytree(first, staging / "leftover")
    more = generate.produce(bootstrap, 500, rate=1e9, seconds=60, first=activity,
                            speedup=300, show=False)
    assert offline_load.load(spark, bootstrap, warehouse, show=False) == more
    assert _table(spark, warehouse) == _all_offsets(bootstrap)  # no duplicates, no gaps
    assert len(offline_load.committed_loads(warehouse / ACTIVITY)) == 2
    assert offline_load.load(spark, bootstrap, warehouse, show=False) == 0


def test_demo_counts_records_not_offsets_of_a_transactional_topic(
        spark: Any, bootstrap: str, new_topic: TopicFactory) -> None:
    """The stream job writes ``metrics`` in transactions: every commit adds a marker that
    takes an offset, so the demo's record count must not be an offset count."""
    from odradek.client import Producer

    topic = new_topic(1)
    with Producer(bootstrap, transactional_id=f"demo-count-{topic}") as producer:
        producer.init_transactions()
        for batch in range(3):
            producer.begin_transaction()
            for i in range(5):
                producer.send(topic, b"%d-%d" % (batch, i))
            producer.commit_transaction()
    assert demo._offsets(bootstrap, topic) == 18  # the three commit markers take offsets
    assert demo.committed_records(spark, bootstrap, topic) == 15


@pytest.mark.slow  # two stateful streaming queries
def test_stream_job_metrics_match_a_batch_computation(spark: Any, bootstrap: str,
                                                      activity: int, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    warehouse = tmp_path / "warehouse"
    for query in stream_job.start(spark, bootstrap, warehouse, available_now=True):
        query.awaitTermination(300)
        assert query.exception() is None
    streamed = spark.read.parquet(str(warehouse / "page_metrics"))
    rows = {(r.minute, r.page): (r.views, r.clicks) for r in streamed.collect()}
    assert rows, "no window was closed by the watermark"
    events = (spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", ACTIVITY).load()
              .select(F.from_json(F.col("value").cast("string"), stream_job.EVENT_SCHEMA)
                      .alias("e")).select("e.*")
              .withColumn("minute", F.date_trunc("minute", F.timestamp_millis("event_time"))))
    batch = {(r.minute, r.page): (r.views, r.clicks) for r in events.groupBy("minute", "page")
             .agg(F.sum(F.when(F.col("type") == "page_view", 1).otherwise(0)).alias("views"),
                  F.sum(F.when(F.col("type") == "click", 1).otherwise(0)).alias("clicks"))
             .where("views + clicks > 0").collect()}
    # Every emitted window is final and exact; only the newest (still open) are missing.
    assert all(batch[key] == value for key, value in rows.items())
    assert max(m for m, _ in rows) < max(m for m, _ in batch)
    # Written exactly once, in transactions: read committed data only.
    published = (spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", METRICS).option("kafka.isolation.level", "read_committed")
                 .load().count())
    assert published == len(rows)
    png = plot.plot(spark, warehouse, tmp_path / "results.png")
    assert png.stat().st_size > 10_000
