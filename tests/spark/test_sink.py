"""``df.write.format("odradek")`` and ``writeStream``: Spark's Kafka sink columns."""

from __future__ import annotations

from typing import Any

import pytest

from odradek.client import Consumer, TopicPartition
from tests.spark.conftest import TopicFactory


def _consume(bootstrap: str, topic: str, partitions: int, count: int) -> list[Any]:
    consumer = Consumer(bootstrap_servers=bootstrap)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    records: list[Any] = []
    for _ in range(60):
        records += consumer.poll(500)
        if len(records) >= count:
            break
    consumer.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))


def test_write_every_column(spark: Any, bootstrap: str, new_topic: TopicFactory) -> None:
    from pyspark.sql import functions as F

    topic = new_topic(3)
    rows = [(f"k{i % 4}" if i % 5 else None, f"value-{i}" if i != 7 else None, i % 3,
             [("trace", f"t{i}".encode()), ("empty", None)] if i % 2 else [])
            for i in range(40)]
    df = spark.createDataFrame(rows, "key string, value string, partition int, "
                                     "headers array<struct<key:string,value:binary>>")
    df = df.withColumn("topic", F.lit(topic))
    df.write.format("odradek").option("kafka.bootstrap.servers", bootstrap).mode("append").save()
    got = _consume(bootstrap, topic, 3, 40)
    assert len(got) == 40
    by_value = {None if r.value is None else bytes(r.value).decode(): r for r in got}
    for key, value, partition, headers in rows:
        record = by_value[value]
        assert record.partition == partition
        assert (None if record.key is None else bytes(record.key).decode()) == key
        assert [(k, None if v is None else bytes(v)) for k, v in record.headers] == headers


def test_topic_option_and_binary_columns(spark: Any, bootstrap: str,
                                         new_topic: TopicFactory) -> None:
    topic = new_topic(1)
    df = spark.createDataFrame([(b"\x00k", b"\xff\x00v", "ignored-topic")],
                               "key binary, value binary, topic string")
    (df.write.format("odradek").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).mode("append").save())
    [record] = _consume(bootstrap, topic, 1, 1)
    assert (bytes(record.key), bytes(record.value)) == (b"\x00k", b"\xff\x00v")


def test_bad_input_is_rejected_before_any_write(spark: Any, bootstrap: str) -> None:
    def write(df: Any, **options: str) -> str:
        writer = (df.write.format("odradek").option("kafka.bootstrap.servers", bootstrap)
                  .mode("append"))
        for key, value in options.items():
            writer = writer.option(key, value)
        with pytest.raises(Exception) as info:
            writer.save()
        return str(info.value)

    assert "option 'value'" in write(spark.createDataFrame([("k",)], "key string"),
                                     topic="t")
    assert "option 'topic'" in write(spark.createDataFrame([("v",)], "value string"))
    assert "'value' column must be string or binary" in write(
        spark.createDataFrame([(1,)], "value int"), topic="t")
    with pytest.raises(Exception, match="option 'mode'"):
        (spark.createDataFrame([("v",)], "value string").write.format("odradek")
         .option("kafka.bootstrap.servers", bootstrap).option("topic", "t")
         .mode("overwrite").save())


def test_delivery_errors_fail_the_task_with_the_kafka_error(spark: Any, bootstrap: str,
                                                            new_topic: TopicFactory) -> None:
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="UNKNOWN_TOPIC_OR_PARTITION"):
        (df.write.format("odradek").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", "no-such-topic").option("kafka.max.block.ms", "2000")
         .mode("append").save())
    topic = new_topic(1)
    with pytest.raises(Exception, match="MESSAGE_TOO_LARGE"):
        (spark.createDataFrame([("x" * 2_000_000,)], "value string")
         .write.format("odradek").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", topic).mode("append").save())


def test_write_stream_copies_a_topic(spark: Any, bootstrap: str, new_topic: TopicFactory,
                                     tmp_path: Any) -> None:
    from tests.spark.helpers import produce, random_records

    source, target = new_topic(2), new_topic(2)
    produced = produce(bootstrap, source, random_records(50), partitions=[0, 1])
    query = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", source).option("startingOffsets", "earliest")
             .option("includeHeaders", "true").load()
             .selectExpr("key", "value", "headers", "partition")
             .writeStream.format("odradek").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", target).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    got = _consume(bootstrap, target, 2, len(produced))
    assert sorted(((r.partition, r.key, r.value) for r in got), key=repr) == \
        sorted(((p.partition, p.key, p.value) for p in produced), key=repr)
