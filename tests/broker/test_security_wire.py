"""Listeners with security protocols, against real clients: TLS (confluent-kafka and
kafka-python), SASL/SCRAM-SHA-256/512 over TLS, SASL/PLAIN, failed logins and hostile
SASL input. One broker with five listeners (PLAINTEXT for setting up users, SSL,
SASL_PLAINTEXT, SASL_SSL, and a mutual-TLS-capable SSL listener) on a real ZooKeeper."""

from __future__ import annotations

import json
import logging
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition
from kafka.errors import KafkaError as KafkaPythonError

from odradek.client.sync import AdminClient
from odradek.local_cluster import ZooKeeperProcess
from tests.harness.certs import CertSet, make_certs

from .conftest import wait_until_true
from .helpers import create_topic
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
    consumer = Consumer({**settings, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < count and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=500, timeout=0.5):
                assert message.error() is None, message.error()
                value = message.value()
                assert value is not None
                values.append(value)
    finally:
        consumer.close()
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


@pytest.mark.parametrize(("listener", "mechanism", "user"), [
    ("SSL", None, None),
    ("SASL_SSL", "SCRAM-SHA-256", "alice"),
    ("SASL_SSL", "SCRAM-SHA-512", "bob"),
    ("SASL_PLAINTEXT", "PLAIN", "alice"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512", "bob"),
])
def test_librdkafka_round_trip(secure_broker: InProcessBroker, certs: CertSet,
                               topic_name: str, listener: str, mechanism: str | None,
                               user: str | None) -> None:
    create_topic(secure_broker, topic_name)
    password = USERS[user][1] if user else None
    librdkafka_round_trip(librdkafka_settings(secure_broker, certs, listener, mechanism, user,
                                              password), topic_name)


@pytest.mark.parametrize(("listener", "mechanism", "user"), [
    ("SSL", None, None),
    ("SASL_SSL", "SCRAM-SHA-256", "alice"),
    ("SASL_SSL", "SCRAM-SHA-512", "bob"),
    ("SASL_PLAINTEXT", "PLAIN", "bob"),
])
def test_kafka_python_round_trip(secure_broker: InProcessBroker, certs: CertSet,
                                 topic_name: str, listener: str, mechanism: str | None,
                                 user: str | None) -> None:
    create_topic(secure_broker, topic_name)
    password = USERS[user][1] if user else None
    kafka_python_round_trip(kafka_python_settings(secure_broker, certs, listener, mechanism,
                                                  user, password), topic_name)


def test_metadata_advertises_the_listener_the_client_came_in_on(
        secure_broker: InProcessBroker, certs: CertSet) -> None:
    settings = librdkafka_settings(secure_broker, certs, "SASL_SSL", "SCRAM-SHA-256", "alice",
                                   USERS["alice"][1])
    producer = Producer(settings)
    try:
        metadata = producer.list_topics(timeout=20)
    finally:
        producer.flush(1)
    ports = {broker.port for broker in metadata.brokers.values()}
    assert secure_broker.broker is not None
    assert ports == {secure_broker.broker.bound_ports["SASL_SSL"]}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_wrong_password_fails_cleanly_and_the_broker_serves_others(
        secure_broker: InProcessBroker, certs: CertSet, topic_name: str,
        mechanism: str, caplog: pytest.LogCaptureFixture) -> None:
    listener = "SASL_PLAINTEXT" if mechanism == "PLAIN" else "SASL_SSL"
    errors: list[KafkaError] = []
    settings = librdkafka_settings(secure_broker, certs, listener, mechanism, "alice", "wrong")
    caplog.set_level(logging.INFO, logger="odradek.broker")
    producer = Producer({**settings, "error_cb": errors.append})
    producer.produce("anything", b"x")
    deadline = time.monotonic() + 20
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) \
            and time.monotonic() < deadline:
        producer.poll(0.2)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    producer.purge()
    assert "failed authentication" in caplog.text
    assert _authentications(secure_broker, listener, "failure") > 0
    with pytest.raises(KafkaPythonError):
        KafkaProducer(**kafka_python_settings(secure_broker, certs, listener, mechanism,
                                              "alice", "wrong"), bootstrap_timeout_ms=5000)
    create_topic(secure_broker, topic_name)
    librdkafka_round_trip(librdkafka_settings(secure_broker, certs, "SASL_SSL",
                                              "SCRAM-SHA-256", "alice", USERS["alice"][1]),
                          topic_name, count=10)


def _authentications(broker: InProcessBroker, listener: str, result: str) -> float:
    assert broker.broker is not None
    family = broker.broker.metrics.connections._authentications
    value: float = broker.call(lambda: family.labels(listener, result).value)
    return value


def test_unknown_user_fails_like_a_wrong_password(
        secure_broker: InProcessBroker, certs: CertSet) -> None:
    errors: list[KafkaError] = []
    settings = librdkafka_settings(secure_broker, certs, "SASL_SSL", "SCRAM-SHA-256",
                                   "mallory", "guess")
    producer = Producer({**settings, "error_cb": errors.append})
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


# -- hostile input on the SASL_PLAINTEXT listener ------------------------------------------


def _frame(api_key: int, version: int, correlation_id: int, body: bytes,
           flexible: bool = False) -> bytes:
    client = b"\x00\x04test"
    header = struct.pack(">hhi", api_key, version, correlation_id) + client
    if flexible:
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _handshake_v1(mechanism: bytes) -> bytes:
    return _frame(17, 1, 1, struct.pack(">h", len(mechanism)) + mechanism)


def _authenticate_v1(token: bytes) -> bytes:
    return _frame(36, 1, 2, struct.pack(">i", len(token)) + token)


def _read_response(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
    return _recv_exactly(sock, size)


def _recv_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _closed(sock: socket.socket, timeout: float = 10) -> bool:
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _connect(broker: InProcessBroker, listener: str = "SASL_PLAINTEXT") -> socket.socket:
    assert broker.broker is not None
    return socket.create_connection(("127.0.0.1", broker.broker.bound_ports[listener]), 5)


def _assert_still_serving(broker: InProcessBroker, certs: CertSet) -> None:
    producer = Producer(librdkafka_settings(broker, certs, "SASL_PLAINTEXT", "PLAIN", "bob",
                                            USERS["bob"][1]))
    assert producer.list_topics(timeout=20).brokers


def test_request_before_authentication_closes_the_connection(
        secure_broker: InProcessBroker, certs: CertSet,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="odradek.broker")
    with _connect(secure_broker) as sock:
        sock.sendall(_frame(3, 1, 7, struct.pack(">i", -1)))  # Metadata v1, all topics
        assert _closed(sock)
    assert "before SASL authentication completed" in caplog.text
    _assert_still_serving(secure_broker, certs)


@pytest.mark.parametrize("token", [
    b"", b"\xff\xfe\xfd", b"n,,n=alice", b"n,,n=alice,r=", b"y,a=,n=,r=\x00",
    b"n,,n=al=ice,r=abc", b"p=tls-unique,,n=alice,r=abc", b"x" * 70_000,
])
def test_garbage_scram_tokens_fail_authentication(
        secure_broker: InProcessBroker, certs: CertSet, token: bytes,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="odradek.broker")
    with _connect(secure_broker) as sock:
        sock.sendall(_handshake_v1(b"SCRAM-SHA-256"))
        assert struct.unpack_from(">h", _read_response(sock), 4)[0] == 0
        sock.sendall(_authenticate_v1(token))
        response = _read_response(sock)
        assert struct.unpack_from(">h", response, 4)[0] == 58  # SASL_AUTHENTICATION_FAILED
        assert _closed(sock)
    assert "failed authentication" in caplog.text
    _assert_still_serving(secure_broker, certs)


def test_truncated_and_oversized_frames_close_the_connection(
        secure_broker: InProcessBroker, certs: CertSet,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="odradek.broker")
    with _connect(secure_broker) as sock:  # a SaslAuthenticate whose token overruns the frame
        sock.sendall(_handshake_v1(b"PLAIN"))
        _read_response(sock)
        header = _authenticate_v1(b"")[4:18]  # api key, version, correlation id, client id
        payload = header + struct.pack(">i", 1000) + b"\0al"
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        assert _closed(sock)
    with _connect(secure_broker) as sock:  # half a frame, then the peer goes away
        sock.sendall(_handshake_v1(b"SCRAM-SHA-256")[:9])
    with _connect(secure_broker) as sock:  # a size prefix far beyond any request
        sock.sendall(struct.pack(">i", 2**31 - 1) + b"\x00" * 10)
        assert _closed(sock)
    with _connect(secure_broker) as sock:  # fine once logged in, too big before
        sock.sendall(struct.pack(">i", 600_000) + b"\x00" * 10)
        assert _closed(sock)
    assert "frame size 600000 outside 0..524288 (sasl.server.max.receive.size)" in caplog.text
    with _connect(secure_broker) as sock:  # v0 handshake, then a bare PLAIN token with junk
        sock.sendall(_frame(17, 0, 1, struct.pack(">h", 5) + b"PLAIN"))
        _read_response(sock)
        sock.sendall(struct.pack(">i", 9) + b"\xff" * 9)
        assert _closed(sock)
    with _connect(secure_broker) as sock:  # an unknown mechanism
        sock.sendall(_handshake_v1(b"GSSAPI"))
        assert struct.unpack_from(">h", _read_response(sock), 4)[0] == 33
        assert _closed(sock)
    _assert_still_serving(secure_broker, certs)


def test_v0_handshake_with_bare_plain_tokens(secure_broker: InProcessBroker) -> None:
    with _connect(secure_broker) as sock:
        sock.sendall(_frame(17, 0, 1, struct.pack(">h", 5) + b"PLAIN"))
        _read_response(sock)
        token = b"\0bob\0" + USERS["bob"][1].encode()
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert _read_response(sock) == b""  # PLAIN's empty server token: authenticated
        sock.sendall(_frame(18, 0, 3, b""))  # now any request is answered
        assert struct.unpack_from(">i", _read_response(sock))[0] == 3


def _principals(broker: InProcessBroker) -> set[str]:
    assert broker.broker is not None
    connections = broker.broker.listeners.connections
    principals: set[str] = broker.call(lambda: {c.session.principal for c in connections.values()})
    return principals


def _wait_for_principal(broker: InProcessBroker, producer: Producer, topic: str,
                        principal: str) -> None:
    """librdkafka keeps only the connections it uses (sparse connections): produce, so the
    connection to the leader stays open while the broker's view of it is checked."""
    create_topic(broker, topic)
    producer.produce(topic, b"who am i")
    assert producer.flush(20) == 0
    wait_until_true(lambda: principal in _principals(broker), 10, f"a {principal} connection")


def test_client_certificate_principal(secure_broker: InProcessBroker, certs: CertSet,
                                      topic_name: str) -> None:
    settings = {**librdkafka_settings(secure_broker, certs, "SSL"),
                "ssl.certificate.location": str(certs.client_cert),
                "ssl.key.location": str(certs.client_key)}
    _wait_for_principal(secure_broker, Producer(settings), topic_name,
                        f"User:{certs.client_subject}")


def test_sasl_principal_is_on_the_connection(secure_broker: InProcessBroker,
                                             certs: CertSet, topic_name: str) -> None:
    producer = Producer(librdkafka_settings(secure_broker, certs, "SASL_SSL", "SCRAM-SHA-512",
                                            "bob", USERS["bob"][1]))
    _wait_for_principal(secure_broker, producer, topic_name, "User:bob")


def test_tls_garbage_instead_of_a_handshake(secure_broker: InProcessBroker,
                                            certs: CertSet) -> None:
    with _connect(secure_broker, "SSL") as sock:
        sock.sendall(b"\x16\x03\x01\x00\x05hello" + b"\x00" * 100)
        assert _closed(sock)
    _assert_still_serving(secure_broker, certs)




# -- odradek's own client and CLI ---------------------------------------------------------


def odradek(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "odradek", *args], input=input,
                          capture_output=True, text=True, timeout=90)


@pytest.mark.parametrize(("listener", "mechanism", "user"), [
    ("SSL", None, None), ("SASL_PLAINTEXT", "PLAIN", "alice"),
    ("SASL_SSL", "SCRAM-SHA-512", "bob"),
])
def test_odradek_client_round_trip(secure_broker: InProcessBroker, certs: CertSet,
                                   topic_name: str, listener: str, mechanism: str | None,
                                   user: str | None) -> None:
    from odradek.client import Consumer, Producer

    create_topic(secure_broker, topic_name)
    settings = kafka_python_settings(secure_broker, certs, listener, mechanism, user,
                                     USERS[user][1] if user else None)
    bootstrap_servers = settings.pop("bootstrap_servers")
    producer = Producer(bootstrap_servers, **settings)
    try:
        for i in range(50):
            producer.send(topic_name, b"o%03d" % i)
        producer.flush(30)
    finally:
        producer.close()
    consumer = Consumer(bootstrap_servers=bootstrap_servers, auto_offset_reset="earliest",
                        group_id=f"g-{uuid.uuid4().hex[:6]}",
                        **settings)
    values: list[bytes | None] = []
    try:
        consumer.subscribe([topic_name])
        deadline = time.monotonic() + 30
        while len(values) < 50 and time.monotonic() < deadline:
            values.extend(record.value for record in consumer.poll(timeout_ms=500))
    finally:
        consumer.close()
    assert values == [b"o%03d" % i for i in range(50)]


def test_cli_users_and_command_config(secure_broker: InProcessBroker, certs: CertSet,
                                      tmp_path: Path) -> None:
    plain = ["--bootstrap-server", bootstrap(secure_broker, "PLAINTEXT")]
    done = odradek("users", *plain, "add", "carol", "--password", "carol-pw",
                   "--mechanism", "SCRAM-SHA-512")
    assert done.returncode == 0, done.stderr
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        f"ssl.truststore.location={certs.ca}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="carol" password="carol-pw";\n')
    secured = ["--bootstrap-server", bootstrap(secure_broker, "SASL_SSL"),
               "--command-config", str(properties)]
    listed = odradek("users", *secured, "--output", "json", "list")
    assert listed.returncode == 0, listed.stderr
    assert {"user": "carol", "mechanism": "SCRAM-SHA-512", "iterations": 4096} in \
        json.loads(listed.stdout)
    topic = f"cli-{uuid.uuid4().hex[:8]}"
    done = odradek("topics", *secured, "create", "--topic", topic, "--partitions", "1",
                   "--replication-factor", "1")
    assert done.returncode == 0, done.stderr
    done = odradek("produce", *secured, topic, input="x\ny\n")
    assert done.returncode == 0, done.stderr
    done = odradek("consume", *secured, topic, "--from-beginning", "--max-messages", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["x", "y"]
    done = odradek("users", *plain, "delete", "carol")
    assert done.returncode == 0, done.stderr
    refused = odradek("topics", *secured, "list")
    assert refused.returncode == 1
    assert "Authentication failed" in refused.stderr
    assert "carol" not in odradek("users", *plain, "list").stdout


# -- re-authentication (KIP-368) ----------------------------------------------------------


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
    sock.sendall(_handshake_v1(b"PLAIN"))
    assert struct.unpack_from(">h", _read_response(sock), 4)[0] == 0
    token = b"\0" + user + b"\0" + password
    sock.sendall(_frame(36, authenticate_version, 2, struct.pack(">i", len(token)) + token))
    response = _read_response(sock)
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
    with _connect(reauth_broker) as sock:
        assert _login_v1(sock, b"alice", b"pw") == 1500
        sock.sendall(_frame(18, 0, 3, b""))
        assert struct.unpack_from(">i", _read_response(sock))[0] == 3
        time.sleep(1.7)
        sock.sendall(_frame(18, 0, 4, b""))
        assert _closed(sock)
    assert "SASL session expired" in caplog.text


def test_reauthentication_must_keep_the_user(reauth_broker: InProcessBroker) -> None:
    with _connect(reauth_broker) as sock:
        _login_v1(sock, b"alice", b"pw")
        sock.sendall(_handshake_v1(b"PLAIN"))  # re-authenticate ...
        assert struct.unpack_from(">h", _read_response(sock), 4)[0] == 0
        token = b"\0bob\0pw2"  # ... as somebody else
        sock.sendall(_frame(36, 1, 2, struct.pack(">i", len(token)) + token))
        assert struct.unpack_from(">h", _read_response(sock), 4)[0] == 58
        assert _closed(sock)
    with _connect(reauth_broker) as sock:  # the same user: a new session
        _login_v1(sock, b"alice", b"pw")
        assert _login_v1(sock, b"alice", b"pw") == 1500
        sock.sendall(_frame(18, 0, 5, b""))
        assert struct.unpack_from(">i", _read_response(sock))[0] == 5


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
