"""Real Kafka clients against the in-process broker: librdkafka (confluent-kafka),
kafka-python and aiokafka, unmodified."""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from .helpers import consume_all, create_topic
from .inprocess import InProcessBroker


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_librdkafka_round_trip_with_acks(
    shared_broker: InProcessBroker, topic_name: str, acks: str
) -> None:
    create_topic(shared_broker, topic_name, partitions=2)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap, "acks": acks,
                         "linger.ms": 5, "enable.idempotence": False})
    errors: list[KafkaError] = []
    for i in range(2000):
        producer.produce(topic_name, value=b"m%05d" % i, partition=i % 2,
                         on_delivery=lambda err, _msg: errors.append(err) if err else None)
    assert producer.flush(20) == 0
    assert errors == []
    got = consume_all(shared_broker.bootstrap, topic_name, 2000, partitions=2)
    assert sorted(got) == [b"m%05d" % i for i in range(2000)]


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_librdkafka_idempotent_compressed_producer(
    shared_broker: InProcessBroker, topic_name: str, compression: str
) -> None:
    create_topic(shared_broker, topic_name)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap,
                         "enable.idempotence": True, "compression.type": compression,
                         "linger.ms": 2})
    delivered: list[int] = []

    def on_delivery(err: KafkaError | None, message: object) -> None:
        assert err is None, err
        delivered.append(message.offset())  # type: ignore[attr-defined]

    for i in range(500):
        producer.produce(topic_name, value=b"v%d" % i, on_delivery=on_delivery)
    assert producer.flush(20) == 0
    assert sorted(delivered) == list(range(500))
    assert consume_all(shared_broker.bootstrap, topic_name, 500) == [b"v%d" % i for i in range(500)]


def test_librdkafka_seek_by_offset_and_timestamp(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap, "linger.ms": 0})
    base = 1_700_000_000_000
    for i in range(10):
        producer.produce(topic_name, value=b"%d" % i, timestamp=base + i * 1000)
        producer.flush(10)
    consumer = Consumer({"bootstrap.servers": shared_broker.bootstrap, "group.id": "unused",
                         "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=10)
        assert (low, high) == (0, 10)
        (found,) = consumer.offsets_for_times(
            [TopicPartition(topic_name, 0, base + 4500)], timeout=10
        )
        assert found.offset == 5
        (beyond,) = consumer.offsets_for_times(
            [TopicPartition(topic_name, 0, base + 99_000)], timeout=10
        )
        assert beyond.offset == -1  # no record that recent: Kafka answers -1 (end)
        consumer.assign([TopicPartition(topic_name, 0, 7)])
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        assert (message.offset(), message.value(), message.timestamp()[1]) == (7, b"7", base + 7000)
    finally:
        consumer.close()


def test_kafka_python_round_trip_and_admin(shared_broker: InProcessBroker, topic_name: str) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap, request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic(topic_name, num_partitions=1, replication_factor=1)])
        assert topic_name in admin.list_topics()
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap, acks="all",
                             enable_idempotence=True)
    for i in range(100):
        producer.send(topic_name, value=b"kp%d" % i)
    producer.flush(20)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=shared_broker.bootstrap, group_id=None,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    from kafka import TopicPartition as KTopicPartition

    consumer.assign([KTopicPartition(topic_name, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 100 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(r.value for r in records)
    consumer.close()
    assert got == [b"kp%d" % i for i in range(100)]


def test_aiokafka_round_trip(shared_broker: InProcessBroker, topic_name: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition as ATopicPartition

    create_topic(shared_broker, topic_name)

    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=shared_broker.bootstrap, acks="all")
        await producer.start()
        try:
            for i in range(100):
                await producer.send(topic_name, b"ak%d" % i)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=shared_broker.bootstrap, group_id=None,
                                    auto_offset_reset="earliest", fetch_max_wait_ms=100)
        await consumer.start()
        got: list[bytes] = []
        try:
            consumer.assign([ATopicPartition(topic_name, 0)])
            await consumer.seek_to_beginning()
            async with asyncio.timeout(20):
                while len(got) < 100:
                    batches = await consumer.getmany(timeout_ms=500)
                    for messages in batches.values():
                        got.extend(m.value for m in messages)
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(scenario()) == [b"ak%d" % i for i in range(100)]


def test_kafka_python_transactional_producer(shared_broker: InProcessBroker,
                                             topic_name: str) -> None:
    """kafka-python's transactional producer against the transaction coordinator: one
    transaction committed, one aborted; a read_committed consumer sees the first only."""
    import kafka
    from kafka import TopicPartition as KTopicPartition

    create_topic(shared_broker, topic_name)
    producer = kafka.KafkaProducer(bootstrap_servers=shared_broker.bootstrap,
                                   transactional_id=f"py-{topic_name}", max_block_ms=30000)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic_name, b"kept", partition=0)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic_name, b"dropped", partition=0)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close(timeout=5)
    consumer = kafka.KafkaConsumer(bootstrap_servers=shared_broker.bootstrap, group_id=None,
                                   isolation_level="read_committed", consumer_timeout_ms=3000)
    try:
        consumer.assign([KTopicPartition(topic_name, 0)])
        consumer.seek(KTopicPartition(topic_name, 0), 0)
        assert [m.value for m in consumer] == [b"kept"]
    finally:
        consumer.close()
