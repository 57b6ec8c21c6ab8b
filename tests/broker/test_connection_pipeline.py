"""The connection's pipeline on a live broker: request order around pending answers, one
write per read, backpressure on a client that does not read, a peer leaving mid-pipeline."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from odradek.broker import connection as connection_module
from odradek.broker.connection import Connection
from odradek.broker.response_stream import COPY_AT_MOST, ResponseStream
from odradek.protocol.messages import encode_request

from .conftest import wait_until_true
from .helpers import batch, create_topic, fetch_request, partition_response, produce_request
from .inprocess import InProcessBroker
from .wire import WireClient

API_VERSIONS = ApiVersionsRequest(client_software_name="pipeline", client_software_version="1")


def only_connection(broker: InProcessBroker) -> Connection:
    assert broker.broker is not None
    connections = broker.broker.listeners.connections
    wait_until_true(lambda: len(connections) == 1, 5, "the test's connection to be open")
    (connection,) = connections
    return connection


def write_buffer_size(connection: Connection) -> int:
    transport = connection._transport
    assert transport is not None, "the connection lost its transport"
    return transport.get_write_buffer_size()


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Each ResponseStream.send the broker makes: the correlation ids of the frames it got."""
    calls: list[list[int]] = []
    real_send = ResponseStream.send

    def send(self: ResponseStream[Any], frames: Sequence[tuple[Sequence[Any], Any]]) -> None:
        calls.append([timed.correlation_id for _chunks, timed in frames])
        real_send(self, frames)

    monkeypatch.setattr(ResponseStream, "send", send)
    return calls


def test_ready_responses_of_one_read_leave_in_one_write(
    shared_broker: InProcessBroker, writes: list[list[int]]
) -> None:
    with WireClient(shared_broker.port) as client:
        client.send_raw(b"".join(encode_request(API_VERSIONS, i) for i in range(1, 11)))
        got = [client.receive(18, 3)[0] for _ in range(10)]
    assert got == list(range(1, 11))
    assert writes == [list(range(1, 11))], f"one write of all ten, not {writes}"


def test_ready_responses_behind_a_pending_one_wait_and_leave_with_it(
    shared_broker: InProcessBroker, topic_name: str, writes: list[list[int]]
) -> None:
    """A long-poll fetch (answered at its 300 ms deadline) then five requests answered at
    once: the five wait for it, then all six leave in one write, in request order."""
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        fetch = encode_request(fetch_request(topic_name, 0, max_wait_ms=300), 1)
        client.send_raw(fetch + b"".join(encode_request(API_VERSIONS, i) for i in range(2, 7)))
        started = time.monotonic()
        got_id, response = client.receive(1, 12)
        assert got_id == 1 and partition_response(response).error_code == 0
        assert time.monotonic() - started >= 0.25, "the fetch waited for its deadline"
        assert [client.receive(18, 3)[0] for _ in range(5)] == [2, 3, 4, 5, 6]
    assert writes == [[1, 2, 3, 4, 5, 6]], f"one write once the fetch completed, not {writes}"


def test_a_client_that_pipelines_without_reading_is_paused_not_buffered(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    """1000 fetches of a 17 KiB batch (sendfile regions), and the client reads nothing: the
    broker stops reading with at most _MAX_PIPELINE responses unwritten and a bounded write
    buffer; once the client reads, all 1000 arrive, in order."""
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as producer:
        producer.request(produce_request(topic_name, batch(b"x" * (COPY_AT_MOST + 1024))))
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", shared_broker.port))
    sock.settimeout(30)
    requests = b"".join(encode_request(fetch_request(topic_name, 0), i)
                        for i in range(1, 1001))
    sender = threading.Thread(target=sock.sendall, args=(requests,), daemon=True)
    try:
        sender.start()
        connection = only_connection(shared_broker)
        wait_until_true(lambda: not shared_broker.call(lambda: connection.reading), 10,
                        "the broker to stop reading from a client that does not read")
        time.sleep(0.3)  # still paused, still bounded, however long the client stalls
        unwritten, buffered, unread, reading = shared_broker.call(lambda: (
            connection.unwritten, write_buffer_size(connection),
            connection._frames.buffered_bytes, connection.reading))
        assert not reading
        assert unwritten <= connection_module._MAX_PIPELINE
        assert buffered <= connection_module._WRITE_HIGH_WATER
        assert unread <= connection_module._READ_SIZE, "no more than one read left unhandled"
        got = []
        stream = sock.makefile("rb")
        for _ in range(1000):
            size = int.from_bytes(stream.read(4), "big")
            frame = stream.read(size)
            got.append(int.from_bytes(frame[:4], "big"))
        assert got == list(range(1, 1001))
        sender.join(10)
    finally:
        sock.close()


def test_a_peer_leaving_with_a_pending_long_poll_costs_no_error_and_no_task(
    shared_broker: InProcessBroker, topic_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    create_topic(shared_broker, topic_name)
    assert shared_broker.broker is not None
    purgatory = shared_broker.broker.services.replica_manager.fetch_purgatory

    def tasks() -> int:
        return len(asyncio.all_tasks())

    before = shared_broker.call(tasks)
    client = WireClient(shared_broker.port)
    client.send_raw(encode_request(fetch_request(topic_name, 0, max_wait_ms=30_000), 1)
                    + encode_request(API_VERSIONS, 2) + encode_request(API_VERSIONS, 3))
    wait_until_true(lambda: shared_broker.call(lambda: len(purgatory)) == 1, 10,
                    "the fetch to wait in the purgatory")
    operations = shared_broker.call(
        lambda: {op for ops in purgatory._watchers.values() for op in ops})
    with caplog.at_level(logging.DEBUG, logger="odradek"):
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
        client.close()  # a reset, mid-pipeline
        connections = shared_broker.broker.listeners.connections
        wait_until_true(lambda: not shared_broker.call(lambda: len(connections)), 10,
                        "the broker to drop the connection")
        assert shared_broker.call(lambda: all(op.future.cancelled() for op in operations))
        assert shared_broker.call(tasks) <= before
    lines = [r for r in caplog.records if r.name.startswith("odradek.broker")]
    assert len(lines) <= 1, [r.getMessage() for r in lines]
    assert all(r.levelno <= logging.INFO for r in lines), [r.getMessage() for r in lines]


def test_requests_before_a_broken_one_are_answered_then_the_connection_closes(
    shared_broker: InProcessBroker,
) -> None:
    unknown_api = (12345).to_bytes(2, "big") + b"\0\0" + (3).to_bytes(4, "big")  # key 12345
    with WireClient(shared_broker.port) as client:
        client.send_raw(encode_request(API_VERSIONS, 1) + encode_request(API_VERSIONS, 2)
                        + len(unknown_api).to_bytes(4, "big") + unknown_api)
        assert [client.receive(18, 3)[0] for _ in range(2)] == [1, 2]
        assert client.is_closed_by_peer()
