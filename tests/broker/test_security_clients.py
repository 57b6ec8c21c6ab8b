"""Real clients over every security protocol: librdkafka, kafka-python and odradek's own
client and CLI round trips over SSL, SASL_SSL (SCRAM-SHA-256/512) and SASL_PLAINTEXT
(PLAIN), Metadata per listener, failed logins, and the principal a connection gets."""

from __future__ import annotations

import json
import logging
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaProducer
from kafka.errors import KafkaError as KafkaPythonError

from tests.harness.certs import CertSet

from .helpers import create_topic
from .inprocess import InProcessBroker
from .security_support import (
    USERS,
    authentications,
    bootstrap,
    kafka_python_round_trip,
    kafka_python_settings,
    librdkafka_round_trip,
    librdkafka_settings,
    odradek,
    wait_for_principal,
)


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
    assert authentications(secure_broker, listener, "failure") > 0
    with pytest.raises(KafkaPythonError):
        KafkaProducer(**kafka_python_settings(secure_broker, certs, listener, mechanism,
                                              "alice", "wrong"), bootstrap_timeout_ms=5000)
    create_topic(secure_broker, topic_name)
    librdkafka_round_trip(librdkafka_settings(secure_broker, certs, "SASL_SSL",
                                              "SCRAM-SHA-256", "alice", USERS["alice"][1]),
                          topic_name, count=10)



@pytest.mark.parametrize(("mechanism", "user", "password", "message"), [
    ("PLAIN", "alice", "wrong", "Authentication failed: Invalid username or password"),
    ("PLAIN", "mallory", "guess", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "alice", "wrong", "Authentication failed during authentication due to "
                                        "invalid credentials with SASL mechanism SCRAM-SHA-256"),
    ("SCRAM-SHA-512", "mallory", "guess", "Authentication failed during authentication due "
                                          "to invalid credentials with SASL mechanism "
                                          "SCRAM-SHA-512"),
])
def test_a_failed_login_is_answered_in_kafkas_words(
        secure_broker: InProcessBroker, mechanism: str, user: str, password: str,
        message: str) -> None:
    """The SaslAuthenticate error message Apache Kafka 3.9.2 sends (clients print it)."""
    from .wire import WireClient, sasl_login

    port = int(bootstrap(secure_broker, "SASL_PLAINTEXT").rsplit(":", 1)[1])
    with WireClient(port) as client:
        failed = sasl_login(client, mechanism, user, password)
    assert (failed.error_code, failed.error_message) == (58, message)


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



def test_client_certificate_principal(secure_broker: InProcessBroker, certs: CertSet,
                                      topic_name: str) -> None:
    settings = {**librdkafka_settings(secure_broker, certs, "SSL"),
                "ssl.certificate.location": str(certs.client_cert),
                "ssl.key.location": str(certs.client_key)}
    wait_for_principal(secure_broker, Producer(settings), topic_name,
                        f"User:{certs.client_subject}")


def test_sasl_principal_is_on_the_connection(secure_broker: InProcessBroker,
                                             certs: CertSet, topic_name: str) -> None:
    producer = Producer(librdkafka_settings(secure_broker, certs, "SASL_SSL", "SCRAM-SHA-512",
                                            "bob", USERS["bob"][1]))
    wait_for_principal(secure_broker, producer, topic_name, "User:bob")



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
    done = odradek("perf", *secured, "--output", "json", "produce", "--topic", topic,
                   "--num-records", "500", "--record-size", "100")
    assert done.returncode == 0, done.stderr
    done = odradek("users", *plain, "delete", "carol")
    assert done.returncode == 0, done.stderr
    refused = odradek("topics", *secured, "list")
    assert refused.returncode == 1
    assert "Authentication failed" in refused.stderr
    assert "carol" not in odradek("users", *plain, "list").stdout

