"""The streaming source's offset decisions, driven directly (no Spark): what Spark's engine
asks the reader each trigger, against a real broker."""

from __future__ import annotations

import uuid

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from odradek.client import AdminClient, BrokerResponseError, NewTopic
from odradek.spark.options import parse_source
from odradek.spark.planning import OffsetRange
from odradek.spark.reading import DataLossError
from odradek.spark.stream_source import StreamReader
from tests.spark.conftest import TopicFactory
from tests.spark.helpers import produce, random_records


def _reader(bootstrap: str, **options: str) -> StreamReader:
    raw = {"kafka.bootstrap.servers": bootstrap, **options}
    return StreamReader(parse_source({k.lower(): v for k, v in raw.items()}, streaming=True))


def test_trigger_by_trigger(bootstrap: str, new_topic: TopicFactory) -> None:
    topic = new_topic(2)
    produce(bootstrap, topic, random_records(10), partitions=[0, 1])
    reader = _reader(bootstrap, subscribe=topic, maxOffsetsPerTrigger="4")
    try:
        start = reader.initialOffset()
        assert start == {topic: {"0": 5, "1": 5}}  # "latest" by default
        assert reader.latestOffset(start, ReadMaxRows(4)) == start
        produce(bootstrap, topic, random_records(12), partitions=[0, 0, 1])
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        assert end == {topic: {"0": 7, "1": 6}}  # 8 and 4 waiting: floor(4 * 2/3), ...
        assert reader.partitions(start, end) == [OffsetRange(topic, 0, 5, 7),
                                                 OffsetRange(topic, 1, 5, 6)]
        assert reader.latestOffset(end, ReadAllAvailable()) == {topic: {"0": 13, "1": 9}}
        # A new partition is read from its beginning.
        admin = AdminClient(bootstrap)
        try:
            admin.create_partitions({topic: 3})
        finally:
            admin.close()
        produce(bootstrap, topic, random_records(2), partitions=[2])
        latest = reader.latestOffset(end, ReadAllAvailable())
        assert latest[topic]["2"] == 2
        assert OffsetRange(topic, 2, 0, 2) in reader.partitions(end, latest)
        # Spark restarts from the checkpointed offsets: the same plan again.
        fresh = _reader(bootstrap, subscribe=topic)
        assert fresh.partitions(end, latest) == reader.partitions(end, latest)
        fresh.stop()
    finally:
        reader.stop()


def test_min_offsets_per_trigger_waits(bootstrap: str, new_topic: TopicFactory) -> None:
    topic = new_topic(1)
    reader = _reader(bootstrap, subscribe=topic, minOffsetsPerTrigger="5",
                     maxTriggerDelay="1h")
    try:
        start = reader.initialOffset()
        produce(bootstrap, topic, random_records(3), partitions=[0])
        assert reader.latestOffset(start, ReadMaxRows(100)) == start
        produce(bootstrap, topic, random_records(3), partitions=[0])
        assert reader.latestOffset(start, ReadMaxRows(100)) == {topic: {"0": 6}}
    finally:
        reader.stop()


def test_data_loss_in_planning(bootstrap: str, new_topic: TopicFactory) -> None:
    topic = new_topic(1)
    produce(bootstrap, topic, random_records(5), partitions=[0])
    gone = {topic: {"0": 5}, "deleted-topic": {"0": 3}}
    back = {topic: {"0": 9}}
    strict = _reader(bootstrap, subscribe=topic)
    lenient = _reader(bootstrap, subscribe=topic, failOnDataLoss="false")
    try:
        with pytest.raises(DataLossError, match="deleted-topic-0 disappeared"):
            strict.partitions(gone, {topic: {"0": 5}})
        with pytest.raises(DataLossError, match="went back from 9 to 5"):
            strict.partitions(back, {topic: {"0": 5}})
        assert lenient.partitions(back, {topic: {"0": 5}}) == []
        assert lenient.partitions(gone, {topic: {"0": 5}}) == []
    finally:
        strict.stop()
        lenient.stop()


def test_a_subscribed_topic_that_does_not_exist_fails(bootstrap: str) -> None:
    missing = f"absent-{uuid.uuid4().hex[:8]}"
    reader = _reader(bootstrap, subscribe=missing)
    try:
        with pytest.raises(BrokerResponseError, match=f"UNKNOWN_TOPIC_OR_PARTITION.*'{missing}'"):
            reader.initialOffset()
    finally:
        reader.stop()


def test_subscribe_pattern_picks_up_new_topics(bootstrap: str) -> None:
    prefix = f"pat-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(bootstrap)
    reader = _reader(bootstrap, subscribePattern=f"{prefix}-.*", startingOffsets="earliest")
    try:
        admin.create_topics([NewTopic(f"{prefix}-a", 1, 1)])
        start = reader.initialOffset()
        assert start == {f"{prefix}-a": {"0": 0}}
        admin.create_topics([NewTopic(f"{prefix}-b", 2, 1), NewTopic(f"x{prefix}-c", 1, 1)])
        produce(bootstrap, f"{prefix}-b", random_records(4), partitions=[0, 1])
        end = reader.latestOffset(start, ReadAllAvailable())
        assert end == {f"{prefix}-a": {"0": 0}, f"{prefix}-b": {"0": 2, "1": 2}}
        assert reader.partitions(start, end) == [OffsetRange(f"{prefix}-b", 0, 0, 2),
                                                 OffsetRange(f"{prefix}-b", 1, 0, 2)]
    finally:
        reader.stop()
        admin.close()
