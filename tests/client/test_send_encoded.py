"""``Producer.send_encoded``: whole pre-encoded batches through the producer's usual path
(idempotent sequencing, acks=all, compression), read back by confluent-kafka (librdkafka)."""

from __future__ import annotations

import time

import confluent_kafka
import pytest

from odradek.client import Producer
from odradek.client.batch_codec import RecordsBuilder
from tests.harness.kafka import located

from .conftest import Target, create_topic

TS = 1_700_000_000_000


def _encoded(rows: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]
             ) -> bytes:
    builder = RecordsBuilder()
    for key, value, headers in rows:
        builder.append(TS, key, value, headers)
    return bytes(builder.buffer)


def _rows(start: int, n: int) -> list[tuple[bytes | None, bytes | None,
                                            list[tuple[str, bytes | None]]]]:
    return [(None if i % 4 == 0 else f"k{i}".encode(),
             None if i % 17 == 0 else f"value-{i}".encode() * (1 + i % 7),
             [("h", str(i).encode()), ("n", None)] if i % 3 == 0 else [])
            for i in range(start, start + n)]


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_encoded_batches_read_back_by_confluent(target: Target, topic_name: str,
                                                codec: str) -> None:
    create_topic(target.bootstrap, topic_name, 2)
    expected: dict[int, list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]]
    expected = {0: [], 1: []}
    with Producer(target.bootstrap, compression_type=codec) as producer:
        futures = []
        start = 0
        for round_ in range(6):
            partition = round_ % 2
            rows = _rows(start, 50 + round_ * 40)
            start += len(rows)
            futures += producer.send_encoded(
                topic_name, [(partition, _encoded(rows), len(rows))], TS)
            expected[partition] += rows
            # A per-record send between bulk batches keeps its place in the partition.
            futures.append(producer.send(topic_name, b"single", b"s", partition=partition,
                                         timestamp=TS))
            expected[partition].append((b"s", b"single", []))
        last = [f.get(30) for f in futures]
    assert [m.offset for m in last[:2]] == [49, 50]  # the batch's last record, then the single
    assert producer.async_producer.config.enable_idempotence

    consumer = confluent_kafka.Consumer({"bootstrap.servers": target.bootstrap,
                                         "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(topic_name, p, 0) for p in range(2)])
    total = sum(len(v) for v in expected.values())
    got: dict[int, list[tuple[int, tuple[bytes | None, bytes | None, list]]]] = {0: [], 1: []}
    deadline = time.monotonic() + 30
    while sum(len(v) for v in got.values()) < total and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None:
            assert msg.error() is None, msg.error()
            assert msg.timestamp()[1] == TS
            partition, offset = located(msg)
            got[partition].append((offset, (msg.key(), msg.value(), list(msg.headers() or []))))
    consumer.close()
    for partition, records in got.items():
        assert [offset for offset, _ in records] == list(range(len(expected[partition])))
        assert [record for _, record in records] == expected[partition]


def test_encoded_batch_errors(target: Target, topic_name: str) -> None:
    from odradek.client import BrokerResponseError

    create_topic(target.bootstrap, topic_name, 1)
    with Producer(target.bootstrap, max_request_size=10_000) as producer:
        with pytest.raises(BrokerResponseError, match="UNKNOWN_TOPIC_OR_PARTITION"):
            producer.send_encoded(topic_name, [(5, _encoded(_rows(0, 3)), 3)], TS)
        big = _encoded([(None, bytes(20_000), [])])
        with pytest.raises(BrokerResponseError, match="MESSAGE_TOO_LARGE"):
            producer.send_encoded(topic_name, [(0, big, 1)], TS)
