"""Shared by the security wire tests: test certificates, a broker with one listener per
security protocol (PLAINTEXT for setting up users, SSL, SASL_PLAINTEXT, SASL_SSL) on a real
ZooKeeper, client settings for librdkafka and kafka-python, and raw-frame helpers for
hostile input."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition

from odradek.client.sync import AdminClient
from odradek.local_cluster import ZooKeeperProcess
from tests.harness.certs import CertSet, make_certs

from .conftest import wait_until_true
from .helpers import consume_all, create_topic
from .inprocess import InProcessBroker, broker_config

USERS = {"alice": ("SCRAM-SHA-256", "alice-secret"), "bob": ("SCRAM-SHA-512", "bob-secret")}
LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertSet:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def secure_broker(zookeeper: ZooKeeperProcess, certs: CertSet,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessBroker]:
    connect = f"{zookeeper.connect}/t-{uuid.uuid4().hex[:12]}"
    config = broker_config(
        connect, tmp_path_factory.mktemp("logs"),
        listeners=",".join(f"{name}://127.0.0.1:0" for name in LISTENERS),
        ssl_keystore_location=str(certs.broker_keystore),
        ssl_truststore_location=str(certs.ca),
        ssl_client_auth="requested",
        sasl_enabled_mechanisms="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        connection_failed_authentication_delay_ms="50")
    broker = InProcessBroker(config).start()
    admin = AdminClient(bootstrap(broker, "PLAINTEXT"))
    try:
        admin.alter_user_scram_credentials(
            upsert=[(user, mechanism, password) for user, (mechanism, password) in USERS.items()])
    finally:
        admin.close()
    yield broker
    broker.stop()


def bootstrap(broker: InProcessBroker, listener: str) -> str:
    assert broker.broker is not None
    return f"127.0.0.1:{broker.broker.bound_ports[listener]}"


def librdkafka_settings(broker: InProcessBroker, certs: CertSet, listener: str,
                        mechanism: str | None = None, user: str | None = None,
                        password: str | None = None) -> dict[str, Any]:
    settings: dict[str, Any] = {"bootstrap.servers": bootstrap(broker, listener),
                                "security.protocol": listener}
    if "SSL" in listener:
        settings["ssl.ca.location"] = str(certs.ca)
    if mechanism is not None:
        settings.update({"sasl.mechanism": mechanism, "sasl.username": user,
                         "sasl.password": password})
    return settings


def librdkafka_round_trip(settings: dict[str, Any], topic: str, count: int = 200) -> None:
    producer = Producer({**settings, "linger.ms": 5})
    errors: list[Any] = []
    for i in range(count):
        producer.produce(topic, value=b"v%04d" % i,
                         on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert producer.flush(30) == 0
    assert errors == []
    values = consume_all(settings["bootstrap.servers"], topic, count, timeout=30,
                         settings=settings)
    assert values == [b"v%04d" % i for i in range(count)]


def kafka_python_settings(broker: InProcessBroker, certs: CertSet, listener: str,
                          mechanism: str | None = None, user: str | None = None,
                          password: str | None = None) -> dict[str, Any]:
    settings: dict[str, Any] = {"bootstrap_servers": bootstrap(broker, listener),
                                "security_protocol": listener}
    if "SSL" in listener:
        settings["ssl_cafile"] = str(certs.ca)
    if mechanism is not None:
        settings.update({"sasl_mechanism": mechanism, "sasl_plain_username": user,
                         "sasl_plain_password": password})
    return settings


def kafka_python_round_trip(settings: dict[str, Any], topic: str, count: int = 100) -> None:
    producer = KafkaProducer(**settings, acks="all")
    try:
        for i in range(count):
            producer.send(topic, b"k%04d" % i, partition=0)
        producer.flush(30)
    finally:
        producer.close(5)
    consumer = KafkaConsumer(**settings, enable_auto_commit=False,
                             consumer_timeout_ms=20_000)
    try:
        consumer.assign([KTopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == count:
                break
    finally:
        consumer.close()
    assert values == [b"k%04d" % i for i in range(count)]


def authentications(broker: InProcessBroker, listener: str, result: str) -> float:
    assert broker.broker is not None
    family = broker.broker.metrics.connections._authentications
    value: float = broker.call(lambda: family.labels(listener, result).value)
    return value





def frame(api_key: int, version: int, correlation_id: int, body: bytes,
           flexible: bool = False) -> bytes:
    client = b"\x00\x04test"
    header = struct.pack(">hhi", api_key, version, correlation_id) + client
    if flexible:
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def handshake_v1(mechanism: bytes) -> bytes:
    return frame(17, 1, 1, struct.pack(">h", len(mechanism)) + mechanism)


def authenticate_v1(token: bytes) -> bytes:
    return frame(36, 1, 2, struct.pack(">i", len(token)) + token)


def read_response(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", recv_exactly(sock, 4))[0]
    return recv_exactly(sock, size)


def recv_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def closed(sock: socket.socket, timeout: float = 10) -> bool:
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def connect(broker: InProcessBroker, listener: str = "SASL_PLAINTEXT") -> socket.socket:
    assert broker.broker is not None
    return socket.create_connection(("127.0.0.1", broker.broker.bound_ports[listener]), 5)


def assert_still_serving(broker: InProcessBroker, certs: CertSet) -> None:
    producer = Producer(librdkafka_settings(broker, certs, "SASL_PLAINTEXT", "PLAIN", "bob",
                                            USERS["bob"][1]))
    assert producer.list_topics(timeout=20).brokers


def principals(broker: InProcessBroker) -> set[str]:
    assert broker.broker is not None
    connections = broker.broker.listeners.connections
    principals: set[str] = broker.call(lambda: {c.session.principal for c in connections})
    return principals


def wait_for_principal(broker: InProcessBroker, producer: Producer, topic: str,
                        principal: str) -> None:
    """librdkafka keeps only the connections it uses (sparse connections): produce, so the
    connection to the leader stays open while the broker's view of it is checked."""
    create_topic(broker, topic)
    producer.produce(topic, b"who am i")
    assert producer.flush(20) == 0
    wait_until_true(lambda: principal in principals(broker), 10, f"a {principal} connection")


def odradek(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "odradek", *args], input=input,
                          capture_output=True, text=True, timeout=90)

