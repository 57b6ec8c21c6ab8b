"""Small helpers shared by broker tests: topics, records, raw produce/fetch requests."""

from __future__ import annotations

import datetime
import time
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64

from odradek.protocol import records as rec

from .inprocess import InProcessBroker


def create_topic(broker: InProcessBroker, name: str, partitions: int = 1, **config: str) -> None:
    """Create through the broker's own cluster facade and wait until we lead it."""

    async def create() -> None:
        services = broker.broker.services  # type: ignore[union-attr]
        await services.cluster.create_topic(name, partitions, 1, config)
        await services.cluster.view.wait_for(
            lambda view: name in view.topics
            and len(view.topics[name].partitions) == partitions
            and all(p.leader >= 0 for p in view.topics[name].partitions.values()),
            30,
        )

    broker.run(create())


def ms(milliseconds: int) -> i32Timedelta:
    """A request timeout as kio's wire type (checked to fit the i32 field)."""
    return i32Timedelta.parse(datetime.timedelta(milliseconds=milliseconds))


def batch(*values: bytes, timestamp: int | None = None, **kwargs: Any) -> bytes:
    return rec.encode_batch(rec.records_from_values(values, timestamp=timestamp), **kwargs)


def produce_request(
    topic: str, records: bytes, partition: int = 0, acks: int = -1, timeout_ms: int = 5000
) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=None,
        acks=i16(acks),
        timeout=ms(timeout_ms),
        topic_data=(
            TopicProduceData(
                name=TopicName(topic),
                partition_data=(
                    PartitionProduceData(index=i32(partition), records=Records(records)),
                ),
            ),
        ),
    )


def fetch_request(
    topic: str,
    offset: int,
    *,
    partition: int = 0,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 1 << 20,
    isolation_level: int = 0,
) -> FetchRequest:
    return FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=ms(max_wait_ms),
        min_bytes=i32(min_bytes),
        max_bytes=i32(max_bytes),
        isolation_level=i8(isolation_level),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic=TopicName(topic),
                partitions=(
                    FetchPartition(partition=i32(partition), current_leader_epoch=i32(-1),
                                   fetch_offset=i64(offset), last_fetched_epoch=i32(-1),
                                   log_start_offset=i64(-1), partition_max_bytes=i32(max_bytes)),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def partition_response(response: Any) -> Any:
    """The single partition of a one-topic, one-partition Produce or Fetch response."""
    (topic,) = response.responses
    parts = getattr(topic, "partition_responses", None) or topic.partitions
    (part,) = parts
    return part


def values_of(records: bytes | None) -> list[bytes | None]:
    return [r.value for _h, batch_records in rec.decode_batches(records or b"")
            for r in batch_records]


def consume_all(bootstrap: str, topic: str, count: int, partitions: int = 1,
                timeout: float = 20, settings: dict[str, Any] | None = None) -> list[bytes]:
    """Up to ``count`` values of ``topic`` from offset 0, read by librdkafka (assigned, no
    group); ``settings`` adds client settings (security)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, **(settings or {}),
                         "group.id": "unused", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(values) < count and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=1000, timeout=0.5):
                assert message.error() is None, message.error()
                value = message.value()
                assert value is not None
                values.append(value)
    finally:
        consumer.close()
    return values
