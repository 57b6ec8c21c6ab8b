"""The partition side of transactions on a real broker: WriteTxnMarkers, then read_committed
Fetch and ListOffsets, at the wire level and through real consumers (librdkafka,
kafka-python). Transactional batches are produced raw (the coordinator is not needed to
put them in a partition) and ended with markers as a coordinator would send them."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.types import BrokerId, ProducerId, TopicName
from kio.schema.write_txn_markers.v1.request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from kio.static.primitive import i8, i16, i32, i64

from odradek.protocol import records as rec

from .helpers import create_topic, fetch_request, partition_response, produce_request
from .inprocess import InProcessBroker
from .wire import WireClient

COMMITTED, ABORTED, OPEN = 1001, 1002, 1003


def txn_batch(pid: int, seq: int, *values: bytes, epoch: int = 0) -> bytes:
    return rec.encode_batch(rec.records_from_values(values), producer_id=pid,
                            producer_epoch=epoch, base_sequence=seq, is_transactional=True)


def markers(topic: str, pid: int, commit: bool, epoch: int = 0,
            partition: int = 0) -> WriteTxnMarkersRequest:
    return WriteTxnMarkersRequest(markers=(
        WritableTxnMarker(
            producer_id=ProducerId(pid), producer_epoch=i16(epoch), transaction_result=commit,
            topics=(WritableTxnMarkerTopic(name=TopicName(topic),
                                           partition_indexes=(i32(partition),)),),
            coordinator_epoch=i32(0),
        ),
    ))


def marker_errors(response: Any) -> list[int]:
    return [int(part.error_code) for marker in response.markers for topic in marker.topics
            for part in topic.partitions]


def read_committed_fetch(topic: str, offset: int) -> Any:
    return fetch_request(topic, offset, isolation_level=1)


def latest(client: WireClient, topic: str, isolation: int) -> int:
    response = client.request(ListOffsetsRequest(
        replica_id=BrokerId(-1), isolation_level=i8(isolation),
        topics=(ListOffsetsTopic(name=TopicName(topic), partitions=(
            ListOffsetsPartition(partition_index=i32(0), timestamp=i64(-1)),)),),
    ))
    return int(response.topics[0].partitions[0].offset)


def write_history(client: WireClient, topic: str) -> None:
    """offsets 0-1 committed txn, 2 plain, 3-4 aborted txn, 5-6 markers, 7 open txn."""
    for request in (
        produce_request(topic, txn_batch(COMMITTED, 0, b"c1", b"c2")),
        produce_request(topic, rec.encode_batch(rec.records_from_values([b"plain"]))),
        produce_request(topic, txn_batch(ABORTED, 0, b"a1", b"a2")),
    ):
        assert partition_response(client.request(request)).error_code == 0
    assert marker_errors(client.request(markers(topic, COMMITTED, True))) == [0]
    assert marker_errors(client.request(markers(topic, ABORTED, False))) == [0]
    open_txn = client.request(produce_request(topic, txn_batch(OPEN, 0, b"o1")))
    assert partition_response(open_txn).base_offset == 7


def test_read_committed_fetch_stops_at_the_lso_and_names_aborted_transactions(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        write_history(client, topic_name)
        committed = partition_response(client.request(read_committed_fetch(topic_name, 0)))
        assert (committed.high_watermark, committed.last_stable_offset) == (8, 7)
        headers = [h for h, _r in rec.decode_batches(committed.records)]
        assert headers[-1].last_offset == 6  # nothing of the open transaction
        assert [(int(t.producer_id), int(t.first_offset))
                for t in committed.aborted_transactions] == [(ABORTED, 3)]
        at_marker = partition_response(client.request(read_committed_fetch(topic_name, 6)))
        assert len(at_marker.aborted_transactions) == 1  # its ABORT marker is in the range
        past = partition_response(client.request(read_committed_fetch(topic_name, 5)))
        assert [h.base_offset for h, _r in rec.decode_batches(past.records)] == [5, 6]
        at_lso = partition_response(client.request(read_committed_fetch(topic_name, 7)))
        assert (at_lso.records or b"", list(at_lso.aborted_transactions)) == (b"", [])
        uncommitted = partition_response(client.request(fetch_request(topic_name, 0)))
        assert uncommitted.aborted_transactions is None
        assert [h.last_offset for h, _r in rec.decode_batches(uncommitted.records)][-1] == 7
        assert (latest(client, topic_name, 1), latest(client, topic_name, 0)) == (7, 8)
        # The open transaction commits: the LSO reaches the high watermark.
        assert marker_errors(client.request(markers(topic_name, OPEN, True))) == [0]
        assert latest(client, topic_name, 1) == latest(client, topic_name, 0) == 9


def test_write_txn_markers_fences_old_epochs_and_reports_unknown_partitions(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        client.request(produce_request(topic_name, txn_batch(77, 0, b"x", epoch=5)))
        stale = client.request(markers(topic_name, 77, True, epoch=4))
        assert marker_errors(stale) == [47]  # INVALID_PRODUCER_EPOCH
        missing = client.request(markers(topic_name, 77, True, epoch=5, partition=9))
        assert marker_errors(missing) == [3]  # UNKNOWN_TOPIC_OR_PARTITION
        assert marker_errors(client.request(markers(topic_name, 77, True, epoch=5))) == [0]
        # A client cannot smuggle a marker in through Produce.
        control = rec.encode_batch(rec.records_from_values([b"x"]), producer_id=77,
                                   producer_epoch=5, is_transactional=True, is_control=True)
        refused = partition_response(client.request(produce_request(topic_name, control)))
        assert refused.error_code == 87  # INVALID_RECORD


def _consume(bootstrap: str, topic: str, isolation: str, want: int) -> list[bytes | None]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes | None] = []
    deadline = time.monotonic() + 20
    try:
        while len(values) < want and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=100, timeout=0.5):
                assert message.error() is None, message.error()
                values.append(message.value())
        for message in consumer.consume(num_messages=100, timeout=1.0):  # nothing more
            values.append(message.value())
        if isolation == "read_committed":
            _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            values.append(b"high=%d" % high)
    finally:
        consumer.close()
    return values


def test_real_consumers_see_committed_data_only_with_read_committed(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        write_history(client, topic_name)
    bootstrap = shared_broker.bootstrap
    assert _consume(bootstrap, topic_name, "read_committed", 3) == [
        b"c1", b"c2", b"plain", b"high=7"]
    assert _consume(bootstrap, topic_name, "read_uncommitted", 6) == [
        b"c1", b"c2", b"plain", b"a1", b"a2", b"o1"]

    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             isolation_level="read_committed", enable_auto_commit=False,
                             consumer_timeout_ms=3000)
    try:
        consumer.assign([KTopicPartition(topic_name, 0)])
        consumer.seek(KTopicPartition(topic_name, 0), 0)
        assert [m.value for m in consumer] == [b"c1", b"c2", b"plain"]
    finally:
        consumer.close()
    with WireClient(shared_broker.port) as client:
        assert marker_errors(client.request(markers(topic_name, OPEN, False))) == [0]
    assert _consume(bootstrap, topic_name, "read_committed", 3) == [
        b"c1", b"c2", b"plain", b"high=9"]
