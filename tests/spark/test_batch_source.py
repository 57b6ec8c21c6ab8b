"""``spark.read.format("odradek")``: exact offset ranges, every codec, keys, headers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from odradek.client import AdminClient, TopicPartition
from odradek.spark.schema import kafka_schema
from tests.spark.conftest import TopicFactory
from tests.spark.helpers import CODECS, expected, produce, random_records, rows


def _read(spark: Any, bootstrap: str, **options: str) -> Any:
    reader = spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


@pytest.fixture(scope="module")
def mixed_topic(spark_broker: Any) -> tuple[str, list[Any]]:
    """3 partitions, written by one producer per codec (so batches of every codec
    interleave in each partition), with keys, null keys/values and headers."""
    from odradek.client import NewTopic

    bootstrap = spark_broker.bootstrap
    topic = "mixed-codecs"
    admin = AdminClient(bootstrap)
    admin.create_topics([NewTopic(topic, 3, 1)])
    admin.close()
    produced = []
    for i, codec in enumerate(CODECS):
        produced += produce(bootstrap, topic, random_records(120, seed=i), compression=codec,
                            partitions=[0, 1, 2])
    return topic, produced


def test_schema_is_spark_kafka_layout(spark: Any, bootstrap: str,
                                      mixed_topic: tuple[str, list[Any]]) -> None:
    topic, _ = mixed_topic
    assert _read(spark, bootstrap, subscribe=topic).schema == kafka_schema(False)
    assert _read(spark, bootstrap, subscribe=topic, includeHeaders="true").schema == \
        kafka_schema(True)


def test_reads_every_record_of_every_codec(spark: Any, bootstrap: str,
                                           mixed_topic: tuple[str, list[Any]]) -> None:
    topic, produced = mixed_topic
    df = _read(spark, bootstrap, subscribe=topic, includeHeaders="true")
    assert rows(df) == expected(topic, produced)
    assert rows(_read(spark, bootstrap, subscribe=topic)) == expected(topic, produced, False)


def test_exact_offset_ranges(spark: Any, bootstrap: str,
                             mixed_topic: tuple[str, list[Any]]) -> None:
    topic, produced = mixed_topic
    start = {"0": 17, "1": 0, "2": 150}
    end = {"0": 181, "1": 1, "2": -1}
    ends = {int(p): o for p, o in end.items()}
    ends[2] = max(p.offset for p in produced if p.partition == 2) + 1
    df = _read(spark, bootstrap, subscribe=topic, includeHeaders="true",
               startingOffsets=json.dumps({topic: start}),
               endingOffsets=json.dumps({topic: end}))
    wanted = [p for p in produced if int(start[str(p.partition)]) <= p.offset
              < ends[p.partition]]
    assert rows(df) == expected(topic, wanted)


def test_assign_and_pattern(spark: Any, bootstrap: str,
                            mixed_topic: tuple[str, list[Any]]) -> None:
    topic, produced = mixed_topic
    df = _read(spark, bootstrap, assign=json.dumps({topic: [1]}))
    assert rows(df) == expected(topic, [p for p in produced if p.partition == 1], False)
    df = _read(spark, bootstrap, subscribePattern="mixed-.*")
    assert len(rows(df)) == len(produced)


def test_max_records_per_partition_splits_ranges(spark: Any, bootstrap: str,
                                                 mixed_topic: tuple[str, list[Any]]) -> None:
    topic, produced = mixed_topic
    df = _read(spark, bootstrap, subscribe=topic, maxRecordsPerPartition="50")
    per_partition = [sum(1 for p in produced if p.partition == n) for n in range(3)]
    assert df.rdd.getNumPartitions() == sum(-(-c // 50) for c in per_partition)
    assert rows(df) == expected(topic, produced, False)
    df = _read(spark, bootstrap, subscribe=topic, minPartitions="12")
    assert df.rdd.getNumPartitions() >= 12
    assert rows(df) == expected(topic, produced, False)


def test_starting_timestamp(spark: Any, bootstrap: str, new_topic: TopicFactory) -> None:
    topic = new_topic(2)
    old = produce(bootstrap, topic, random_records(20), partitions=[0, 1],
                  timestamp=1_700_000_000_000)
    new = produce(bootstrap, topic, random_records(20, seed=1), partitions=[0, 1],
                  timestamp=1_800_000_000_000)
    df = _read(spark, bootstrap, subscribe=topic, startingTimestamp="1750000000000")
    assert rows(df) == expected(topic, new, False)
    by_partition = json.dumps({topic: {"0": 1_750_000_000_000, "1": 1_600_000_000_000}})
    df = _read(spark, bootstrap, subscribe=topic, startingOffsetsByTimestamp=by_partition)
    wanted = [p for p in old + new if p.partition == 1 or p.timestamp > 1_750_000_000_000]
    assert rows(df) == expected(topic, wanted, False)


def test_deleted_records_are_data_loss(spark: Any, bootstrap: str,
                                       new_topic: TopicFactory) -> None:
    topic = new_topic(1)
    produced = produce(bootstrap, topic, random_records(30), partitions=[0])
    admin = AdminClient(bootstrap)
    try:
        admin.delete_records({TopicPartition(topic, 0): 10})
    finally:
        admin.close()
    # A range planned below the log start: the offsets are gone.
    offsets = json.dumps({topic: {"0": 5}})
    with pytest.raises(Exception, match="failOnDataLoss"):
        _read(spark, bootstrap, subscribe=topic, startingOffsets=offsets).collect()
    df = _read(spark, bootstrap, subscribe=topic, startingOffsets=offsets,
               failOnDataLoss="false")
    assert rows(df) == expected(topic, [p for p in produced if p.offset >= 10], False)
    # "earliest" starts at the log start offset: nothing is missing.
    assert len(rows(_read(spark, bootstrap, subscribe=topic))) == 20


def test_empty_topics_read_empty_and_missing_topics_fail(spark: Any, bootstrap: str,
                                                        new_topic: TopicFactory) -> None:
    """Spark's Kafka source fails on a topic that does not exist (UnknownTopicOrPartition-
    Exception); reading it as empty would hide a typo or a deleted topic."""
    topic = new_topic(3)
    assert _read(spark, bootstrap, subscribe=topic).collect() == []
    for options in ({"subscribe": f"{topic},no-such-topic-here"},
                    {"assign": json.dumps({"no-such-topic-here": [0]})}):
        with pytest.raises(Exception) as info:
            _read(spark, bootstrap, **options).collect()
        message = str(info.value)
        assert "UNKNOWN_TOPIC_OR_PARTITION" in message, message
        assert "This server does not host this topic-partition" in message
        assert "no-such-topic-here" in message
