"""Producer close/flush always return by their deadline, failing (never dropping) records,
even when the broker dies while a Produce request is in flight.

The broker advertises a proxy's port, so every client connection goes through
:class:`KillOnProduceProxy`. The proxy forwards bytes both ways until it sees the first
Produce request; then it SIGKILLs the broker (by PID) and swallows the request, keeping the
client's socket open: the request is in flight and will never be answered, the worst case
(a broker host that vanished without a TCP reset).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from odradek.client import Producer
from odradek.client.errors import KafkaClientError
from odradek.local_cluster import BrokerProcess, free_port

from .conftest import create_topic

PRODUCE = 0


class KillOnProduceProxy:
    """A TCP proxy to ``upstream`` that kills ``broker`` when the first Produce passes."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.upstream_port = 0  # the broker's, once it is started
        self.broker: BrokerProcess | None = None
        self.produce_seen = threading.Event()
        self._server = socket.create_server(("127.0.0.1", port))
        self._sockets: list[socket.socket] = [self._server]
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self._sockets.append(client)
            if self.produce_seen.is_set():
                continue  # the broker is dead: accept, never answer
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                continue
            self._sockets.append(upstream)
            for target in (self._requests, self._responses):
                thread = threading.Thread(target=target, args=(client, upstream), daemon=True)
                self._threads.append(thread)
                thread.start()

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        try:
            while True:
                frame = _read_frame(client)
                if frame is None:
                    break
                if struct.unpack_from(">h", frame, 4)[0] == PRODUCE:
                    assert self.broker is not None
                    self.broker.kill()
                    self.produce_seen.set()
                    return  # the request is swallowed; the client's socket stays open
                upstream.sendall(frame)
        except OSError:
            pass
        _close(upstream)

    def _responses(self, client: socket.socket, upstream: socket.socket) -> None:
        try:
            while data := upstream.recv(65536):
                client.sendall(data)
        except OSError:
            pass
        if not self.produce_seen.is_set():
            _close(client)

    def close(self) -> None:
        for sock in self._sockets:
            _close(sock)


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exact(sock, 4)
    if head is None:
        return None
    body = _read_exact(sock, struct.unpack(">i", head)[0])
    return None if body is None else head + body


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            return None
        out += chunk
    return bytes(out)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()


@pytest.fixture
def doomed_broker(broker_factory) -> Iterator[KillOnProduceProxy]:
    proxy = KillOnProduceProxy(free_port())
    try:
        broker = broker_factory(
            0, advertised_listeners=f"PLAINTEXT://127.0.0.1:{proxy.port}")
        proxy.upstream_port = broker.port
        proxy.broker = broker
        yield proxy
    finally:
        proxy.close()


def _send_until_broker_dies(proxy: KillOnProduceProxy, **settings: object) -> tuple[
        Producer, list]:
    topic = create_topic(proxy.bootstrap, f"doomed-{uuid.uuid4().hex[:8]}", 1)
    producer = Producer(proxy.bootstrap, linger_ms=0, **settings)
    futures = [producer.send(topic, b"record-%d" % i) for i in range(200)]
    assert proxy.produce_seen.wait(30), "the producer never sent a Produce request"
    return producer, futures


def _assert_all_failed(futures: list) -> None:
    pending = sum(not f.done() for f in futures)
    assert pending == 0, f"{pending} of {len(futures)} record futures left unresolved"
    delivered = [f for f in futures if f.exception(0) is None]
    assert not delivered, f"{len(delivered)} records reported delivered by a dead broker"
    assert all(isinstance(f.exception(0), KafkaClientError) for f in futures)


def test_close_returns_by_its_timeout_when_broker_dies_mid_request(
        doomed_broker: KillOnProduceProxy) -> None:
    # Request timeout (30 s) and delivery timeout (120 s) are far beyond close's 2 s.
    producer, futures = _send_until_broker_dies(doomed_broker)
    started = time.monotonic()
    producer.close(timeout=2)
    elapsed = time.monotonic() - started
    assert elapsed < 2 + 3, f"close(timeout=2) took {elapsed:.1f}s"
    _assert_all_failed(futures)


def test_close_without_timeout_is_bounded_by_delivery_timeout(
        doomed_broker: KillOnProduceProxy) -> None:
    # The in-flight request would wait request.timeout.ms (30 s); delivery.timeout.ms (3 s)
    # must cut it short, so close() with no timeout still ends promptly.
    producer, futures = _send_until_broker_dies(doomed_broker, delivery_timeout_ms=3_000)
    started = time.monotonic()
    producer.flush()  # returns once every batch is resolved, here by its delivery deadline
    producer.close()
    elapsed = time.monotonic() - started
    assert elapsed < 3 + 5, f"flush()+close() without timeouts took {elapsed:.1f}s"
    _assert_all_failed(futures)

