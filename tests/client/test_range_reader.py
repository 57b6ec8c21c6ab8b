"""RangeReader: raw record batches for an offset range, against Apache Kafka and odradek."""

from __future__ import annotations

from itertools import pairwise

import pytest

from odradek.client import (
    AdminClient,
    BrokerResponseError,
    KafkaClientError,
    Producer,
    TopicPartition,
)
from odradek.client.batch_codec import decode_fetched
from odradek.client.range_reader import RangeReader, next_fetch_offset

from .conftest import Target, create_topic


def _offsets(chunks: list, start: int, end: int) -> list[int]:
    records: list = []
    for chunk in chunks:
        decode_fetched(chunk.records, "t", 0, max(start, chunk.fetch_offset), records)
    return [r.offset for r in records if r.offset < end]


def test_reads_exactly_the_range_in_chunks(target: Target, topic_name: str) -> None:
    create_topic(target.bootstrap, topic_name, 1)
    with Producer(target.bootstrap, batch_size=2048, linger_ms=0) as producer:
        for i in range(2000):
            producer.send(topic_name, b"x" * 100 + str(i).encode(), partition=0)
        producer.flush()
    with RangeReader(target.bootstrap, max_partition_fetch_bytes=32 * 1024) as reader:
        chunks = list(reader.chunks((topic_name, 0), 150, 1900))
        assert len(chunks) > 5  # small fetches: the range takes many
        assert chunks[0].fetch_offset == 150
        for before, after in pairwise(chunks):
            assert after.fetch_offset == before.next_offset
            assert next_fetch_offset(before.records, before.fetch_offset) == before.next_offset
        assert _offsets(chunks, 150, 1900) == list(range(150, 1900))
        with pytest.raises(KafkaClientError, match="no record at offset 2000"):
            list(reader.chunks((topic_name, 0), 1990, 2005, poll_timeout=1))


def test_data_loss_is_the_callers_call(target: Target, topic_name: str) -> None:
    create_topic(target.bootstrap, topic_name, 1)
    with Producer(target.bootstrap) as producer:
        for i in range(50):
            producer.send(topic_name, f"v{i}".encode(), partition=0)
        producer.flush()
    tp = TopicPartition(topic_name, 0)
    admin = AdminClient(target.bootstrap)
    try:
        admin.delete_records({tp: 20})
    finally:
        admin.close()
    with RangeReader(target.bootstrap) as reader:
        assert reader.log_start_offset(tp) == 20
        with pytest.raises(BrokerResponseError, match="OFFSET_OUT_OF_RANGE"):
            list(reader.chunks(tp, 5, 30))
        lost: list[tuple[int, int]] = []
        chunks = list(reader.chunks(tp, 5, 30, on_data_loss=lambda _tp, a, b:
                                    lost.append((a, b))))
        assert lost == [(5, 20)]
        assert _offsets(chunks, 20, 30) == list(range(20, 30))
        lost.clear()
        assert list(reader.chunks(tp, 5, 15, on_data_loss=lambda _tp, a, b:
                                  lost.append((a, b)))) == []
        assert lost == [(5, 15)]
