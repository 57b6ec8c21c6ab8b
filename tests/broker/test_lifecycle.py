"""Process lifecycle and the zero-copy path: real subprocess (uvloop), clean shutdown."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from odradek.broker import response_stream

from .helpers import batch, create_topic, fetch_request, partition_response, produce_request
from .wire import WireClient


def test_subprocess_broker_serves_clients_and_stops_cleanly_on_sigterm(broker: Any) -> None:
    """`python -m odradek broker` (uvloop when installed) round trip, then SIGTERM → exit 0."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(200):
        producer.produce("proc-topic", value=b"%d" % i)
        producer.poll(0)
    # Produce never auto-creates, but librdkafka's metadata request does (auto.create on)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("proc-topic", 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 200 and time.monotonic() < deadline:
        got.extend(m.value() or b"" for m in consumer.consume(500, 0.5) if m.error() is None)
    consumer.close()
    assert got == [b"%d" % i for i in range(200)]
    assert broker.stop() == 0, broker.log_tail()


def test_fetch_records_go_through_sendfile(
    start_broker: Any, topic_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real_sendfile = os.sendfile

    def counting_sendfile(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        calls.append(count)
        return real_sendfile(out_fd, in_fd, offset, count)

    monkeypatch.setattr(response_stream.os, "sendfile", counting_sendfile)
    broker = start_broker()
    create_topic(broker, topic_name)
    records = batch(b"z" * (response_stream.COPY_AT_MOST + 10_000))  # small ones are copied
    with WireClient(broker.port) as client:
        client.request(produce_request(topic_name, records))
        fetched = partition_response(client.request(fetch_request(topic_name, 0)))
    # the same batch; only baseOffset (0..8) and partitionLeaderEpoch (12..16) are rewritten
    assert bytes(fetched.records)[16:] == records[16:]
    assert sum(calls) == len(records), f"sendfile moved {sum(calls)} of {len(records)} bytes"


def test_stop_answers_waiting_fetches_before_closing(start_broker: Any, topic_name: str) -> None:
    broker = start_broker()
    create_topic(broker, topic_name)
    client = WireClient(broker.port)
    try:
        correlation_id = client.send(fetch_request(topic_name, 0, max_wait_ms=30_000))
        # make sure the request reached the purgatory before stopping
        services = broker.broker.services
        from .conftest import wait_until_true

        wait_until_true(lambda: broker.call(lambda: len(services.replica_manager.fetch_purgatory))
                        == 1, 10, "fetch to wait in the purgatory")
        started = time.monotonic()
        broker.stop()
        broker.broker = None  # already stopped; the fixture's stop is then a no-op
        got_id, response = client.receive(1, 12)
        assert got_id == correlation_id
        assert partition_response(response).error_code == 0
        assert time.monotonic() - started < 10
        assert client.is_closed_by_peer()
    finally:
        client.close()
