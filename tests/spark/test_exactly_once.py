"""Exactly-once streaming writes (``transactionalIdPrefix``): a task that fails mid-write
leaves nothing visible, its retry writes the batch once, a re-run of a batch already committed
writes nothing — and a streaming query made to re-run its last micro-batch (its commit-log
entry gone, as when the driver dies after the tasks committed) still has every input exactly
once in the output topic, read read_committed."""

from __future__ import annotations

import shutil
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from odradek.client import AdminClient, Consumer, TopicPartition
from odradek.local_cluster import BrokerProcess
from odradek.metrics.lag import sink_marker_group
from odradek.spark.exactly_once import produce_exactly_once
from odradek.spark.options import OptionError, parse_sink
from tests.spark.conftest import TopicFactory
from tests.spark.helpers import produce


def _read_committed(bootstrap: str, topic: str, partitions: int, want: int) -> list[bytes]:
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                        isolation_level="read_committed")
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + 30
        while len(values) < want and time.monotonic() < deadline:
            values += [r.value for r in consumer.poll(300) if r.value is not None]
        values += [r.value for r in consumer.poll(1000) if r.value is not None]  # no more
    finally:
        consumer.close()
    return values


def _rows(values: list[bytes]) -> pa.RecordBatch:
    return pa.record_batch([pa.array(values, pa.binary())], names=["value"])


def test_a_task_batch_is_written_once_whatever_its_attempts(bootstrap: str,
                                                           new_topic: TopicFactory) -> None:
    topic = new_topic(2)
    options = parse_sink({"kafka.bootstrap.servers": bootstrap, "topic": topic,
                          "transactionalidprefix": "eos"})
    task = f"eos-{uuid.uuid4()}-0"
    batch0 = [b"b0-%d" % i for i in range(300)]

    def failing() -> Iterator[pa.RecordBatch]:
        yield _rows(batch0[:150])
        time.sleep(0.2)  # let the first rows reach the broker inside the transaction
        raise RuntimeError("executor lost")

    with pytest.raises(RuntimeError, match="executor lost"):
        produce_exactly_once(options, failing(), task, 0)
    assert produce_exactly_once(options, iter([_rows(batch0)]), task, 0) == 300
    # The driver died before recording batch 0: the re-run writes nothing.
    assert produce_exactly_once(options, iter([_rows(batch0)]), task, 0) == 0
    batch1 = [b"b1-%d" % i for i in range(100)]
    assert produce_exactly_once(options, iter([_rows(batch1)]), task, 1) == 100
    assert produce_exactly_once(options, iter([_rows(batch1)]), task, 1) == 0
    got = _read_committed(bootstrap, topic, 2, 400)
    assert sorted(got) == sorted(batch0 + batch1)


def test_marker_groups_export_no_consumer_lag(spark_broker: BrokerProcess,
                                              new_topic: TopicFactory) -> None:
    """A marker group's offset counts micro-batches: as consumer lag it would never drain
    (and fire OdradekConsumerGroupLagGrowing). The broker exports none for it; an ordinary
    group on the same partition keeps its lag."""
    bootstrap, topic = spark_broker.bootstrap, new_topic(1)
    options = parse_sink({"kafka.bootstrap.servers": bootstrap, "topic": topic,
                          "transactionalidprefix": "eos"})
    marker = sink_marker_group("eos", str(uuid.uuid4()), 0)
    assert produce_exactly_once(options, iter([_rows([b"x"] * 50)]), marker, 0) == 50
    admin = AdminClient(bootstrap)
    try:
        assert admin.list_group_offsets(marker, require_stable=True)
        admin.alter_group_offsets("readers", {TopicPartition(topic, 0): 10})
    finally:
        admin.close()
    assert spark_broker.metrics_url is not None
    wanted = (f'odradek_consumer_group_lag_records{{group="readers",topic="{topic}",'
              f'partition="0"}} ')
    deadline = time.monotonic() + 30
    while True:
        with urllib.request.urlopen(spark_broker.metrics_url, timeout=10) as response:
            text = response.read().decode()
        lines = [line for line in text.splitlines() if line.startswith(wanted)]
        if lines or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert lines and float(lines[0].split()[-1]) == 41  # 50 records and the commit marker
    assert f'group="{marker}"' not in text


def test_the_option_is_checked() -> None:
    # Spark hands a data source its options with lower-cased names.
    base = {"kafka.bootstrap.servers": "127.0.0.1:9092", "topic": "t"}
    assert parse_sink({**base, "transactionalidprefix": " app "}).transactional_id_prefix \
        == "app"
    with pytest.raises(OptionError, match="empty prefix"):
        parse_sink({**base, "transactionalidprefix": " "})
    with pytest.raises(OptionError, match="acks=all"):
        parse_sink({**base, "transactionalidprefix": "app", "kafka.acks": "1"})


def test_batch_writes_refuse_the_option(spark: Any, bootstrap: str) -> None:
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="writeStream"):
        (df.write.format("odradek").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", "t").option("transactionalIdPrefix", "app").mode("append").save())


@pytest.mark.slow  # two streaming queries of several micro-batches (~40 s on a loaded machine)
def test_a_rerun_micro_batch_is_not_written_twice(spark: Any, bootstrap: str,
                                                  new_topic: TopicFactory,
                                                  tmp_path: Path) -> None:
    source, target = new_topic(2), new_topic(2)
    produced = produce(bootstrap, source, [(None, b"v%d" % i, None) for i in range(120)],
                       partitions=[0, 1])
    checkpoint = tmp_path / "cp"

    def run() -> None:
        query = (spark.readStream.format("odradek")
                 .option("kafka.bootstrap.servers", bootstrap).option("subscribe", source)
                 .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "40")
                 .load().selectExpr("value")
                 .writeStream.format("odradek").option("kafka.bootstrap.servers", bootstrap)
                 .option("topic", target).option("transactionalIdPrefix", "eos-test")
                 .option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination(180)
        assert query.exception() is None

    run()
    commits = sorted(checkpoint.glob("commits/[0-9]*"), key=lambda p: int(p.name))
    assert len(commits) >= 3, "expected several micro-batches"
    # As if the driver died after the last batch's tasks committed but before Spark's
    # commit log recorded it: Spark runs that batch again on restart.
    commits[-1].unlink()
    (commits[-1].parent / f".{commits[-1].name}.crc").unlink(missing_ok=True)
    shutil.rmtree(checkpoint / "state", ignore_errors=True)
    run()
    assert sorted(checkpoint.glob("commits/[0-9]*"), key=lambda p: int(p.name))[-1].name \
        == commits[-1].name, "the last micro-batch was not run again"
    got = _read_committed(bootstrap, target, 2, len(produced))
    assert sorted(got) == sorted(p.value or b"" for p in produced)
    assert len(got) == len(set(got))
