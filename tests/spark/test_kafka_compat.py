"""Spark's own Kafka connector (spark-sql-kafka-0-10 from Maven Central) on odradek topics:
it reads and writes them, and ``format("odradek")`` returns the same schema and rows."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.spark.conftest import TopicFactory
from tests.spark.helpers import CODECS, produce, random_records, rows

pytestmark = pytest.mark.java


def _read(spark: Any, fmt: str, bootstrap: str, **options: str) -> Any:
    reader = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_same_schema_and_rows_as_spark_kafka_source(spark: Any, kafka_jars: list[str],
                                                    bootstrap: str,
                                                    new_topic: TopicFactory) -> None:
    topic = new_topic(3)
    for i, codec in enumerate(CODECS):
        produce(bootstrap, topic, random_records(60, seed=10 + i), compression=codec,
                partitions=[0, 1, 2])
    for headers in ("false", "true"):
        kafka = _read(spark, "kafka", bootstrap, subscribe=topic, includeHeaders=headers)
        odradek = _read(spark, "odradek", bootstrap, subscribe=topic, includeHeaders=headers)
        assert odradek.schema == kafka.schema
        assert rows(odradek) == rows(kafka)
    offsets = {"startingOffsets": json.dumps({topic: {"0": 13, "1": -2, "2": 100}}),
               "endingOffsets": json.dumps({topic: {"0": 77, "1": 3, "2": -1}})}
    kafka = rows(_read(spark, "kafka", bootstrap, subscribe=topic, **offsets))
    assert rows(_read(spark, "odradek", bootstrap, subscribe=topic, **offsets)) == kafka
    assert len(kafka) == 64 + 3 + 0


def _failure(action: Any) -> str:
    with pytest.raises(Exception) as info:
        action()
    return str(info.value)


def test_missing_topic_and_no_topic_option_fail_as_with_spark_kafka_source(
        spark: Any, kafka_jars: list[str], bootstrap: str, tmp_path: Any) -> None:
    missing = f"absent-{uuid.uuid4().hex[:8]}"
    unknown = "This server does not host this topic-partition"
    for options in ({"subscribe": missing}, {"assign": json.dumps({missing: [0]})}):
        kafka = _failure(lambda o=options: _read(spark, "kafka", bootstrap, **o).collect())
        assert f"UnknownTopicOrPartitionException: {unknown}" in kafka
        odradek = _failure(lambda o=options: _read(spark, "odradek", bootstrap, **o).collect())
        assert "UNKNOWN_TOPIC_OR_PARTITION" in odradek and unknown in odradek, odradek
        assert missing in odradek
    for fmt in ("kafka", "odradek"):
        query = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", missing).load().writeStream.format("noop")
                 .option("checkpointLocation", str(tmp_path / fmt))
                 .trigger(availableNow=True).start())
        message = _failure(lambda q=query: q.awaitTermination(300))
        assert unknown in message, (fmt, message)
    nothing = "One of the following options must be specified for Kafka source: "
    assert nothing in _failure(lambda: _read(spark, "kafka", bootstrap).collect())
    assert nothing in _failure(lambda: _read(spark, "odradek", bootstrap).collect())


def test_spark_kafka_sink_and_odradek_sink_interoperate(spark: Any, kafka_jars: list[str],
                                                        bootstrap: str,
                                                        new_topic: TopicFactory) -> None:
    data = spark.createDataFrame(
        [(f"k{i}", f"v{i}", [("h", f"{i}".encode())]) for i in range(30)],
        "key string, value string, headers array<struct<key:string,value:binary>>")
    by_kafka, by_odradek = new_topic(2), new_topic(2)
    (data.write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", by_kafka).save())
    (data.write.format("odradek").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", by_odradek).mode("append").save())

    def contents(fmt: str, topic: str) -> list[tuple[Any, ...]]:
        df = _read(spark, fmt, bootstrap, subscribe=topic, includeHeaders="true")
        return sorted((r[0], r[1], r[3], r[7]) for r in rows(df))

    # Both sinks hash keys with murmur2: the same rows land on the same partitions.
    assert contents("odradek", by_kafka) == contents("kafka", by_odradek) == \
        contents("kafka", by_kafka) == contents("odradek", by_odradek)
    assert len(contents("odradek", by_kafka)) == 30


def _checkpointed_offsets(checkpoint: Any) -> list[dict[str, Any]]:
    """The source offsets of every micro-batch in a query's offset log (Spark writes a
    version line, the batch metadata, then one line per source)."""
    logs = sorted(checkpoint.joinpath("offsets").glob("[0-9]*"), key=lambda p: int(p.name))
    return [json.loads(path.read_text().splitlines()[2]) for path in logs]


@pytest.mark.slow  # four streaming queries
def test_streaming_same_batches_and_checkpoint_offsets_as_spark_kafka_source(
        spark: Any, kafka_jars: list[str], bootstrap: str, new_topic: TopicFactory,
        tmp_path: Any) -> None:
    """Both micro-batch sources plan the same batches under maxOffsetsPerTrigger, keep the
    same offset JSON in the checkpoint, and resume from it the same way."""
    topic = new_topic(3)
    produce(bootstrap, topic, random_records(150, seed=20), partitions=[0, 1, 2])

    def run(fmt: str) -> Any:
        query = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", topic).option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", "40").load()
                 .writeStream.format("parquet").option("path", str(tmp_path / fmt))
                 .option("checkpointLocation", str(tmp_path / f"{fmt}-cp"))
                 .trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert query.exception() is None
        return query

    for fmt in ("kafka", "odradek"):
        run(fmt)
    produce(bootstrap, topic, random_records(30, seed=21), partitions=[0, 1, 2])
    for fmt in ("kafka", "odradek"):
        run(fmt)  # resumes from the checkpoint
    assert _checkpointed_offsets(tmp_path / "odradek-cp") == \
        _checkpointed_offsets(tmp_path / "kafka-cp")
    assert len(_checkpointed_offsets(tmp_path / "kafka-cp")) >= 5
    kafka = rows(spark.read.parquet(str(tmp_path / "kafka")))
    assert rows(spark.read.parquet(str(tmp_path / "odradek"))) == kafka
    assert len(kafka) == 180
