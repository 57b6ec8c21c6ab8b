"""Produce/consume through odradek's client, and interop with confluent-kafka (librdkafka),
for every codec and both directions."""

from __future__ import annotations

import time

import confluent_kafka
import pytest

from odradek.client import Consumer, Producer, TopicPartition
from odradek.client.partitioner import partition_for_key

from .conftest import Target, create_topic

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
N = 300


def _messages(codec: str) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    return [(f"k{i}".encode(), f"{codec}-value-{i}-".encode() * (1 + i % 5),
             [("h", str(i).encode())] if i % 3 == 0 else []) for i in range(N)]


def _read_all(bootstrap: str, topic: str, partitions: int, expected: int,
              timeout: float = 30) -> list:
    consumer = Consumer(bootstrap_servers=bootstrap)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        out: list = []
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            out += consumer.poll(500)
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("codec", CODECS)
def test_odradek_producer_to_odradek_consumer(target: Target, topic_name: str,
                                              codec: str) -> None:
    create_topic(target.bootstrap, topic_name, 3)
    messages = _messages(codec)
    with Producer(target.bootstrap, compression_type=codec, linger_ms=20) as producer:
        futures = [producer.send(topic_name, v, key=k, headers=h) for k, v, h in messages]
        metadata = [f.get(30) for f in futures]
    for (key, _, _), md in zip(messages, metadata, strict=True):
        assert md.partition == partition_for_key(key, 3)
        assert md.offset >= 0
    got = _read_all(target.bootstrap, topic_name, 3, N)
    assert len(got) == N, f"read {len(got)} of {N}"
    by_key = {r.key: r for r in got}
    for key, value, headers in messages:
        record = by_key[key]
        assert (record.value, record.headers) == (value, headers)
    per_partition: dict[int, list[int]] = {}
    for r in got:
        per_partition.setdefault(r.partition, []).append(r.offset)
    for offsets in per_partition.values():
        assert offsets == list(range(len(offsets))), "offsets not contiguous / in order"


@pytest.mark.parametrize("codec", CODECS)
def test_odradek_producer_to_confluent_consumer(target: Target, topic_name: str,
                                                codec: str) -> None:
    create_topic(target.bootstrap, topic_name, 2)
    messages = _messages(codec)
    with Producer(target.bootstrap, compression_type=codec) as producer:
        for f in [producer.send(topic_name, v, key=k, headers=h) for k, v, h in messages]:
            f.get(30)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": target.bootstrap,
                                         "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(topic_name, p, 0) for p in range(2)])
    got: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = []
    deadline = time.monotonic() + 30
    while len(got) < N and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None:
            assert msg.error() is None, msg.error()
            # confluent's stub types headers() like produce()'s input (dict | list, str
            # values); a consumed message's headers are list[tuple[str, bytes | None]].
            headers: list[tuple[str, bytes | None]] = list(msg.headers() or [])  # type: ignore[arg-type]
            got.append((msg.key(), msg.value(), headers))
    consumer.close()
    assert sorted(got) == sorted(messages)


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_producer_to_odradek_consumer(target: Target, topic_name: str,
                                                codec: str) -> None:
    create_topic(target.bootstrap, topic_name, 2)
    messages = _messages(codec)
    producer = confluent_kafka.Producer({"bootstrap.servers": target.bootstrap,
                                         "compression.type": codec, "linger.ms": 5})
    for key, value, headers in messages:
        producer.produce(topic_name, value, key, headers=list(headers))
    assert producer.flush(30) == 0
    got = _read_all(target.bootstrap, topic_name, 2, N)
    assert sorted((r.key, r.value, r.headers) for r in got) == sorted(messages)


def test_partition_choice_equals_librdkafka_murmur2_random(target: Target,
                                                           topic_name: str) -> None:
    create_topic(target.bootstrap, topic_name, 7)
    keys = [f"key-{i}".encode() for i in range(10_000)]
    delivered: dict[bytes, int] = {}

    def on_delivery(err, msg) -> None:
        assert err is None, err
        delivered[msg.key()] = msg.partition()

    producer = confluent_kafka.Producer({"bootstrap.servers": target.bootstrap,
                                         "partitioner": "murmur2_random", "linger.ms": 20})
    for key in keys:
        producer.produce(topic_name, b"", key, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0
    mismatches = [k for k in keys if delivered[k] != partition_for_key(k, 7)]
    assert not mismatches, f"{len(mismatches)} keys differ, e.g. {mismatches[:3]}"


def test_paper_api_send_list_and_stream(target: Target, topic_name: str) -> None:
    create_topic(target.bootstrap, topic_name, 1)
    with Producer(target.bootstrap) as producer:
        futures = producer.send(topic_name, [b"m1", b"m2", b"m3"])
        assert [f.get(30).offset for f in futures] == [0, 1, 2]
    consumer = Consumer(bootstrap_servers=target.bootstrap, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic_name, 0)])
    stream = iter(consumer)
    assert [next(stream).value for _ in range(3)] == [b"m1", b"m2", b"m3"]
    consumer.close()
