"""Broken or hostile input: one log line, an error code or a closed connection, and the
broker keeps serving everyone else."""

from __future__ import annotations

import logging

import pytest
from kio.schema.metadata.v1.request import MetadataRequest

from odradek.protocol.framing import size_prefix
from odradek.protocol.records import BATCH_HEADER_SIZE

from ..protocol.hostile_frames import CRASH_FRAME
from .helpers import (
    batch,
    create_topic,
    fetch_request,
    ms,
    partition_response,
    produce_request,
)
from .inprocess import InProcessBroker
from .wire import WireClient


def assert_still_serving(broker: InProcessBroker, topic: str) -> None:
    with WireClient(broker.port) as client:
        produced = partition_response(client.request(produce_request(topic, batch(b"alive"))))
        assert produced.error_code == 0
        fetched = partition_response(client.request(fetch_request(topic, produced.base_offset)))
        assert fetched.error_code == 0


def closed_with_one_log_line(
    broker: InProcessBroker, payload: bytes, caplog: pytest.LogCaptureFixture, expect: str
) -> None:
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="odradek.broker.connection"), WireClient(
        broker.port
    ) as client:
        client.send_raw(payload)
        assert client.is_closed_by_peer(), "the broker kept the connection open"
    lines = [r for r in caplog.records if r.name == "odradek.broker.connection"]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert expect in lines[0].getMessage()


@pytest.mark.parametrize(
    ("payload", "expect"),
    [
        (size_prefix(200 * 1024 * 1024), "frame size"),  # above socket.request.max.bytes
        ((-5).to_bytes(4, "big", signed=True), "frame size"),
        (size_prefix(10) + bytes.fromhex("03e7000000000001ffff"), "api key 999"),
        (size_prefix(10) + bytes.fromhex("0003006300000001ffff"), "version 99"),
        (size_prefix(3) + b"\x00\x03\x00", "too short"),
        (size_prefix(12) + bytes.fromhex("000300010000000100ff") + b"\xff\xff", "header"),
        (size_prefix(14) + bytes.fromhex("0003000100000001ffff") + b"\x7f\xff\xff\xff",
         "MetadataRequest"),
        # An array length kio's native reader would try to allocate (and abort the process).
        (size_prefix(len(CRASH_FRAME)) + CRASH_FRAME, "does not fit"),
    ],
    ids=["huge", "negative", "unknown-key", "unknown-version", "short", "bad-header",
         "truncated-body", "impossible-array-length"],
)
def test_bad_frames_close_the_connection(
    shared_broker: InProcessBroker, topic_name: str, caplog: pytest.LogCaptureFixture,
    payload: bytes, expect: str,
) -> None:
    create_topic(shared_broker, topic_name)
    closed_with_one_log_line(shared_broker, payload, caplog, expect)
    assert_still_serving(shared_broker, topic_name)


def test_group_api_above_the_advertised_range_closes_the_connection(
    shared_broker: InProcessBroker, caplog: pytest.LogCaptureFixture
) -> None:
    from kio.schema.join_group.v8.request import JoinGroupRequest, JoinGroupRequestProtocol
    from kio.schema.types import GroupId

    from odradek.protocol.messages import encode_request

    body = JoinGroupRequest(group_id=GroupId("g"), session_timeout=ms(10_000),
                            rebalance_timeout=ms(10_000), member_id="",
                            group_instance_id=None, protocol_type="consumer",
                            protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
                            reason=None)
    frame = encode_request(body, 1)
    closed_with_one_log_line(shared_broker, frame, caplog, "api key 11 version 8")


def test_batch_with_bad_crc_is_corrupt_message(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    damaged = bytearray(batch(b"payload"))
    damaged[BATCH_HEADER_SIZE + 2] ^= 0xFF  # a byte the CRC covers
    with WireClient(shared_broker.port) as client:
        response = client.request(produce_request(topic_name, bytes(damaged)))
        assert partition_response(response).error_code == 2  # CORRUPT_MESSAGE
    assert_still_serving(shared_broker, topic_name)


def test_garbage_records_are_rejected(shared_broker: InProcessBroker, topic_name: str) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        response = client.request(produce_request(topic_name, b"\x00" * 7))
        # CORRUPT_MESSAGE or INVALID_RECORD
        assert partition_response(response).error_code in (2, 87)


def test_batch_over_message_max_bytes_is_message_too_large(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name, 1, **{"max.message.bytes": "1000"})
    with WireClient(shared_broker.port) as client:
        response = client.request(produce_request(topic_name, batch(b"x" * 2000)))
        assert partition_response(response).error_code == 10  # MESSAGE_TOO_LARGE
        ok = client.request(produce_request(topic_name, batch(b"x" * 100)))
        assert partition_response(ok).error_code == 0


def test_produce_to_missing_topic_is_unknown_and_does_not_create_it(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    with WireClient(shared_broker.port) as client:
        response = client.request(produce_request(topic_name, batch(b"x")))
        assert partition_response(response).error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
        metadata = client.request(MetadataRequest(topics=()))
        assert topic_name not in {t.name for t in metadata.topics}


def test_produce_to_missing_partition_is_unknown(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        response = client.request(produce_request(topic_name, batch(b"x"), partition=5))
        assert partition_response(response).error_code == 3


def test_failed_acks_zero_produce_closes_the_connection(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    with WireClient(shared_broker.port) as client:
        client.send(produce_request(topic_name, batch(b"x"), acks=0))
        assert client.is_closed_by_peer()
