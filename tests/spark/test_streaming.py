"""``spark.readStream.format("odradek")``: offsets in Spark's checkpoint, exact resume after a
killed driver, maxOffsetsPerTrigger, new partitions, failOnDataLoss."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from odradek.client import AdminClient, TopicPartition
from tests.spark.conftest import REPO, TopicFactory
from tests.spark.helpers import produce, random_records
from tests.spark.stream_driver import start_query


def _parquet_rows(spark: Any, path: Path) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.parquet(str(path))
                  .select("partition", "offset", "key", "value").collect())


def _expected(produced: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((p.partition, p.offset, None if p.key is None else p.key.decode(), p.value)
                  for p in produced)


def _run(spark: Any, bootstrap: str, topic: str, tmp: Path, name: str = "out",
         max_offsets: int = 10_000) -> Any:
    query = start_query(spark, bootstrap, topic, str(tmp / name), str(tmp / f"{name}-cp"),
                        max_offsets, available_now=True)
    query.awaitTermination(300)
    assert query.exception() is None
    return query


def test_resume_from_checkpoint_with_new_partitions(spark: Any, bootstrap: str,
                                                     new_topic: TopicFactory,
                                                     tmp_path: Path) -> None:
    topic = new_topic(2)
    produced = produce(bootstrap, topic, random_records(60), partitions=[0, 1])
    _run(spark, bootstrap, topic, tmp_path)
    assert _parquet_rows(spark, tmp_path / "out") == _expected(produced)
    admin = AdminClient(bootstrap)
    try:
        admin.create_partitions({topic: 3})
    finally:
        admin.close()
    produced += produce(bootstrap, topic, random_records(30, seed=1), partitions=[0, 1, 2])
    _run(spark, bootstrap, topic, tmp_path)
    assert _parquet_rows(spark, tmp_path / "out") == _expected(produced)


def test_max_offsets_per_trigger(spark: Any, bootstrap: str, new_topic: TopicFactory,
                                 tmp_path: Path) -> None:
    topic = new_topic(3)
    produced = produce(bootstrap, topic, random_records(300, seed=2), partitions=[0, 1, 2])
    query = _run(spark, bootstrap, topic, tmp_path, max_offsets=100)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    # Spark's split: each partition gets floor(100 * backlog share) = 33 per batch.
    assert sizes == [99, 99, 99, 3]
    assert _parquet_rows(spark, tmp_path / "out") == _expected(produced)


def test_fail_on_data_loss(spark: Any, bootstrap: str, new_topic: TopicFactory,
                           tmp_path: Path) -> None:
    topic = new_topic(1)
    first = produce(bootstrap, topic, random_records(10), partitions=[0])
    _run(spark, bootstrap, topic, tmp_path)
    later = produce(bootstrap, topic, random_records(20, seed=3), partitions=[0])
    admin = AdminClient(bootstrap)
    try:
        admin.delete_records({TopicPartition(topic, 0): 20})  # offsets 10..19 never read
    finally:
        admin.close()
    query = start_query(spark, bootstrap, topic, str(tmp_path / "out"),
                        str(tmp_path / "out-cp"), 10_000, available_now=True)
    with pytest.raises(Exception, match="failOnDataLoss"):
        query.awaitTermination(300)
    query = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("failOnDataLoss", "false").load()
             .selectExpr("CAST(key AS STRING) AS key", "value", "partition", "offset")
             .writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "out-cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None
    assert _parquet_rows(spark, tmp_path / "out") == _expected(
        first + [p for p in later if p.offset >= 20])


@pytest.mark.slow  # a driver process of its own (JVM start) and a dozen micro-batches
def test_killed_driver_restarts_from_checkpoint_exactly(spark: Any, bootstrap: str,
                                                        new_topic: TopicFactory,
                                                        tmp_path: Path) -> None:
    topic = new_topic(3)
    produced = produce(bootstrap, topic, random_records(360, seed=4), partitions=[0, 1, 2])
    checkpoint = tmp_path / "killed-cp"
    driver = subprocess.Popen(
        [sys.executable, "-m", "tests.spark.stream_driver", bootstrap, topic,
         str(tmp_path / "killed"), str(checkpoint), "30"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=(tmp_path / "driver.log").open("w"),
        start_new_session=True, env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    try:
        deadline = time.monotonic() + 240
        commits = checkpoint / "commits"
        while time.monotonic() < deadline and driver.poll() is None:
            done = len(list(commits.glob("[0-9]*"))) if commits.exists() else 0
            if done >= 3:
                break
            time.sleep(0.05)
        assert driver.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
        assert done >= 3, "the driver committed no micro-batch in time"
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)  # the Python driver and its JVM
        driver.wait(30)
    committed = len(list(commits.glob("[0-9]*")))
    assert committed < 360 // 30, "the driver finished before it was killed"
    # Restart from the checkpoint (in this process) and compare with an uninterrupted run.
    query = start_query(spark, bootstrap, topic, str(tmp_path / "killed"), str(checkpoint),
                        30, available_now=True)
    query.awaitTermination(300)
    assert query.exception() is None
    _run(spark, bootstrap, topic, tmp_path, name="uninterrupted")
    resumed = _parquet_rows(spark, tmp_path / "killed")
    assert resumed == _parquet_rows(spark, tmp_path / "uninterrupted") == _expected(produced)
