"""Manual assignment: seek, seek_to_beginning/end, offsets_for_times, pause/resume,
auto.offset.reset."""

from __future__ import annotations

import time

import pytest

from odradek.client import Consumer, NoOffsetForPartition, Producer, TopicPartition

from .conftest import Target, create_topic


def _poll_n(consumer: Consumer, n: int, timeout: float = 20) -> list:
    out: list = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        out += consumer.poll(300, max_records=n - len(out))
    return out


def test_seek_and_offsets_for_times(target: Target, topic_name: str) -> None:
    create_topic(target.bootstrap, topic_name, 1)
    tp = TopicPartition(topic_name, 0)
    base = int(time.time() * 1000) - 100_000
    with Producer(target.bootstrap) as producer:
        for i in range(100):  # timestamps base, base+1000, ...
            producer.send(topic_name, f"v{i}".encode(), partition=0,
                          timestamp=base + i * 1000)
        producer.flush()
    consumer = Consumer(bootstrap_servers=target.bootstrap)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 42)
        assert [r.offset for r in _poll_n(consumer, 3)] == [42, 43, 44]
        assert consumer.position(tp) == 45
        found = consumer.offsets_for_times({tp: base + 10_500})
        hit = found[tp]
        assert hit is not None and hit.offset == 11
        assert hit.timestamp == base + 11_000
        assert consumer.offsets_for_times({tp: base + 10**9})[tp] is None
        consumer.seek_to_timestamp(base + 30_000, tp)
        assert _poll_n(consumer, 1)[0].offset == 30
        consumer.seek_to_beginning(tp)
        assert consumer.position(tp) == 0
        consumer.seek_to_end(tp)
        assert consumer.position(tp) == 100
        assert consumer.end_offsets([tp]) == {tp: 100}
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        consumer.seek(tp, 0)
        consumer.pause(tp)
        assert consumer.poll(500) == []
        consumer.resume(tp)
        assert _poll_n(consumer, 1)[0].offset == 0
    finally:
        consumer.close()


def test_auto_offset_reset_policies(target: Target, topic_name: str) -> None:
    create_topic(target.bootstrap, topic_name, 1)
    tp = TopicPartition(topic_name, 0)
    with Producer(target.bootstrap) as producer:
        producer.send(topic_name, [b"a", b"b"], partition=0)
    earliest = Consumer(bootstrap_servers=target.bootstrap, auto_offset_reset="earliest")
    latest = Consumer(bootstrap_servers=target.bootstrap, auto_offset_reset="latest")
    strict = Consumer(bootstrap_servers=target.bootstrap, auto_offset_reset="none")
    try:
        for c in (earliest, latest, strict):
            c.assign([tp])
        assert earliest.position(tp) == 0
        assert latest.position(tp) == 2
        with pytest.raises(NoOffsetForPartition):
            strict.poll(200)
    finally:
        for c in (earliest, latest, strict):
            c.close()


def test_stream_blocks_for_new_data(target: Target, topic_name: str) -> None:
    create_topic(target.bootstrap, topic_name, 1)
    consumer = Consumer(bootstrap_servers=target.bootstrap, auto_offset_reset="latest")
    consumer.assign([TopicPartition(topic_name, 0)])
    assert consumer.position(TopicPartition(topic_name, 0)) == 0
    assert consumer.poll(300) == []
    with Producer(target.bootstrap) as producer:
        producer.send(topic_name, b"late").get(10)
    assert next(iter(consumer)).value == b"late"
    consumer.close()


def test_offsets_of_a_partition_the_cached_metadata_lacks(target: Target,
                                                           topic_name: str) -> None:
    """A partition added (by another client) after this consumer cached the topic's
    metadata: stale metadata is refreshed and the lookup retried, as Kafka's clients do,
    never UNKNOWN_TOPIC_OR_PARTITION straight from the cache."""
    from odradek.client import AdminClient

    create_topic(target.bootstrap, topic_name, 1)
    consumer = Consumer(bootstrap_servers=target.bootstrap)
    try:
        first, added = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
        assert consumer.end_offsets([first]) == {first: 0}  # caches a one-partition topic
        admin = AdminClient(target.bootstrap)
        try:
            admin.create_partitions({topic_name: 2})
        finally:
            admin.close()
        assert consumer.end_offsets([added]) == {added: 0}
        assert consumer.beginning_offsets([added]) == {added: 0}
    finally:
        consumer.close()
