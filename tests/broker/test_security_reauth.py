"""SASL re-authentication (KIP-368) with ``connections.max.reauth.ms``: librdkafka logs in
again on its connections, expired sessions are closed, a re-login must keep the user, and
odradek's client reconnects before its session ends."""

from __future__ import annotations

import logging
import socket
import struct
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from odradek.client.sync import AdminClient

from .helpers import create_topic
from .inprocess import InProcessBroker
from .security_support import bootstrap, closed, connect, frame, handshake_v1, read_response


@pytest.fixture
def reauth_broker(start_broker: Any) -> InProcessBroker:
    """SASL sessions of 1.5 s: clients must re-authenticate on their connections."""
    broker: InProcessBroker = start_broker(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        inter_broker_listener_name="PLAINTEXT",
        sasl_enabled_mechanisms="PLAIN,SCRAM-SHA-256",
        connections_max_reauth_ms="1500")
    admin = AdminClient(bootstrap(broker, "PLAINTEXT"))
    try:
        admin.alter_user_scram_credentials(upsert=[("alice", "SCRAM-SHA-256", "pw"),
                                                   ("bob", "SCRAM-SHA-256", "pw2")])
    finally:
        admin.close()
    return broker


def test_librdkafka_reauthenticates_and_keeps_producing(
        reauth_broker: InProcessBroker, topic_name: str,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="odradek.broker.handlers.sasl")
    create_topic(reauth_broker, topic_name)
    producer = Producer({"bootstrap.servers": bootstrap(reauth_broker, "SASL_PLAINTEXT"),
                         "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
                         "sasl.password": "pw", "linger.ms": 0})
    errors: list[Any] = []
    deadline = time.monotonic() + 5
    sent = 0
    while time.monotonic() < deadline:
        producer.produce(topic_name, b"r%03d" % sent,
                         on_delivery=lambda err, _m: errors.append(err) if err else None)
        sent += 1
        producer.poll(0.1)
    assert producer.flush(20) == 0
    assert errors == []
    assert caplog.text.count("re-authenticated as User:alice") >= 2, caplog.text[-3000:]


def _login_v1(sock: socket.socket, user: bytes, password: bytes, *,
              authenticate_version: int = 1) -> int:
    """PLAIN login over SaslHandshake v1 + SaslAuthenticate; the session lifetime (ms)."""
    sock.sendall(handshake_v1(b"PLAIN"))
    assert struct.unpack_from(">h", read_response(sock), 4)[0] == 0
    token = b"\0" + user + b"\0" + password
    sock.sendall(frame(36, authenticate_version, 2, struct.pack(">i", len(token)) + token))
    response = read_response(sock)
    assert struct.unpack_from(">h", response, 4)[0] == 0
    if authenticate_version == 0:
        return 0
    message_length = struct.unpack_from(">h", response, 6)[0]
    offset = 8 + max(message_length, 0)
    auth_length = struct.unpack_from(">i", response, offset)[0]
    return int(struct.unpack_from(">q", response, offset + 4 + auth_length)[0])


def test_an_expired_session_is_closed_at_the_next_request(
        reauth_broker: InProcessBroker, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="odradek.broker")
    with connect(reauth_broker) as sock:
        assert _login_v1(sock, b"alice", b"pw") == 1500
        sock.sendall(frame(18, 0, 3, b""))
        assert struct.unpack_from(">i", read_response(sock))[0] == 3
        time.sleep(1.7)
        sock.sendall(frame(18, 0, 4, b""))
        assert closed(sock)
    assert "SASL session expired" in caplog.text


def test_reauthentication_must_keep_the_user(reauth_broker: InProcessBroker) -> None:
    with connect(reauth_broker) as sock:
        _login_v1(sock, b"alice", b"pw")
        sock.sendall(handshake_v1(b"PLAIN"))  # re-authenticate ...
        assert struct.unpack_from(">h", read_response(sock), 4)[0] == 0
        token = b"\0bob\0pw2"  # ... as somebody else
        sock.sendall(frame(36, 1, 2, struct.pack(">i", len(token)) + token))
        assert struct.unpack_from(">h", read_response(sock), 4)[0] == 58
        assert closed(sock)
    with connect(reauth_broker) as sock:  # the same user: a new session
        _login_v1(sock, b"alice", b"pw")
        assert _login_v1(sock, b"alice", b"pw") == 1500
        sock.sendall(frame(18, 0, 5, b""))
        assert struct.unpack_from(">i", read_response(sock))[0] == 5


def test_odradek_client_reconnects_before_its_session_expires(
        reauth_broker: InProcessBroker, topic_name: str,
        caplog: pytest.LogCaptureFixture) -> None:
    from odradek.client import Producer as OdradekProducer

    caplog.set_level(logging.INFO, logger="odradek.broker")
    create_topic(reauth_broker, topic_name)
    producer = OdradekProducer(bootstrap(reauth_broker, "SASL_PLAINTEXT"),
                               security_protocol="SASL_PLAINTEXT",
                               sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                               sasl_plain_password="pw", linger_ms=0)
    try:
        futures = []
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            futures.append(producer.send(topic_name, b"x"))
            time.sleep(0.05)
        producer.flush(20)
        for future in futures:
            future.get(10)
    finally:
        producer.close()
    assert "SASL session expired" not in caplog.text

