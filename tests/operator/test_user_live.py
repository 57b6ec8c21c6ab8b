"""A User resource's reconcile and deletion against a REAL broker with ACLs and SCRAM.

The broker has an ACL authorizer, a PLAINTEXT listener whose ANONYMOUS principal is a super
user (the operator's session here) and a SASL_PLAINTEXT listener where the User's principal
logs in with librdkafka using the password the operator generated. Only the Kubernetes side
is a dict (the Secrets the handler reads and writes); the Kafka side is real.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kopf
import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from odradek_operator.errors import PermanentReconcileError
from odradek_operator.handlers import user as user_handler
from odradek_operator.kafka.session import admin_session
from odradek_operator.kafka.user_access import remove_user

from odradek.client.admin import AsyncAdminClient, NewTopic
from odradek.local_cluster import BrokerProcess, free_port
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclFilter,
    Operation,
    Permission,
    ResourcePattern,
    ResourceType,
)
from tests.harness.fixtures import SINGLE_NODE_DEFAULTS, attach_process_logs

UID = str(uuid.uuid4())


@pytest.fixture
def acl_broker(zk_connect: str, tmp_path: Path, request: pytest.FixtureRequest
               ) -> Iterator[tuple[str, str]]:
    plain, sasl = free_port(), free_port()
    broker = BrokerProcess(0, plain, tmp_path / "broker", zk_connect, {
        **SINGLE_NODE_DEFAULTS,
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
    })
    broker.start()
    try:
        broker.wait_ready(60)
        yield broker.bootstrap, f"127.0.0.1:{sasl}"
    finally:
        attach_process_logs(request, [broker])
        broker.stop()


class SecretStore:
    """The Kubernetes calls the User handler makes (get and apply a Secret), from a dict."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.version = 0

    async def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        assert kind == "Secret"
        return self.objects.get(name)

    async def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        stored = {"metadata": {**obj["metadata"], "resourceVersion": str(self.version)},
                  "data": {k: base64.b64encode(v.encode()).decode()
                           for k, v in obj["stringData"].items()}}
        self.objects[obj["metadata"]["name"]] = stored
        return stored

    def password(self, name: str) -> str:
        return base64.b64decode(self.objects[name]["data"]["password"]).decode()


def reconcile(spec: dict[str, Any], status: dict[str, Any]) -> Any:
    raw = {"metadata": {"name": "counter", "uid": UID, "generation": 1}, "spec": spec,
           "status": status}
    body = kopf.Body(raw)  # type: ignore[arg-type]  # a plain dict is a raw body
    result = asyncio.run(user_handler._reconcile(body, "kafka", "counter"))
    status.update(result.status)
    return result


def consume_as(sasl: str, password: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "counter",
                         "sasl.password": password, "group.id": "counter",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        seen = 0
        for _ in range(30):
            for message in consumer.consume(100, 1.0):
                if message.error():
                    raise KafkaException(message.error())
                seen += 1
            if seen >= 10:
                break
        return seen
    finally:
        consumer.close()


async def logs_in(sasl: str, password: str) -> bool:
    admin = AsyncAdminClient(sasl, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="counter",
                             sasl_plain_password=password, request_timeout_ms=10_000)
    try:
        await admin.describe_cluster()
        return True
    except Exception:
        return False
    finally:
        await admin.close()


def produce_as(sasl: str, password: str, topic: str) -> str | None:
    """The delivery error's name, or None when the record was written."""
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "counter",
                         "sasl.password": password, "message.timeout.ms": 10_000})
    producer.produce(topic, b"x", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(15)
    return errors[0].name() if errors and errors[0] else None


def test_a_user_gets_its_credential_acls_and_quota_and_loses_them_on_delete(
        acl_broker: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    plain, sasl = acl_broker
    store = SecretStore()
    monkeypatch.setattr(user_handler, "kube", lambda: store)

    async def setup() -> None:
        async with AsyncAdminClient(plain) as admin:
            await admin.create_topics([NewTopic("page-views", 1, 1)])
    asyncio.run(setup())
    producer = Producer({"bootstrap.servers": plain})
    for i in range(10):
        producer.produce("page-views", str(i).encode())
    assert producer.flush(15) == 0

    spec = {"clusterRef": {"bootstrapServers": plain},
            "authentication": {"type": "scram-sha-512"},
            "authorization": {"acls": [
                {"resource": {"type": "topic", "name": "page-views"},
                 "operations": ["Read", "Describe"]},
                {"resource": {"type": "group", "name": "counter"}, "operations": ["Read"]}]},
            "quotas": {"consumerByteRate": 1048576}}
    status: dict[str, Any] = {}
    first = reconcile(spec, status)
    ready = {c.type: c for c in first.conditions}["Ready"]
    assert ready.status is True, ready
    assert status["secret"] == "counter" and status["acls"] == 3
    assert status["principal"] == "User:counter"
    password = store.password("counter")
    jaas = base64.b64decode(store.objects["counter"]["data"]["sasl.jaas.config"]).decode()
    assert f'username="counter" password="{password}"' in jaas
    assert asyncio.run(logs_in(sasl, password))
    assert consume_as(sasl, password, "page-views") == 10
    assert produce_as(sasl, password, "page-views") == "TOPIC_AUTHORIZATION_FAILED"

    # Nothing changed: nothing written; the password stays the same.
    again = reconcile(spec, status)
    assert again.events == [] and store.password("counter") == password

    # Drift made by hand: an extra grant and a removed quota are put back as the spec says.
    async def tamper() -> None:
        async with AsyncAdminClient(plain) as admin:
            await admin.create_acls([AclBinding(
                ResourcePattern(ResourceType.TOPIC, "page-views"),
                AccessControlEntry("User:counter", "*", Operation.WRITE, Permission.ALLOW))])
            await admin.alter_user_quotas("counter", {"consumer_byte_rate": None})
    asyncio.run(tamper())
    repaired = reconcile(spec, status)
    (_, reason, message), = repaired.events
    assert reason == "Synced" and "1 removed" in message and "consumer_byte_rate=1.04858e+06" \
        in message
    assert produce_as(sasl, password, "page-views") == "TOPIC_AUTHORIZATION_FAILED"

    async def removed() -> tuple[list[AclBinding], dict[str, float], list[Any]]:
        async with admin_session(plain) as admin:
            gone = await remove_user(admin, "counter", status["applied"])
            assert gone == ["3 ACL(s)", "quotas consumer_byte_rate",
                            "SCRAM-SHA-512 credential"]
            return (await admin.describe_acls(AclFilter(principal="User:counter")),
                    await admin.describe_user_quotas("counter"),
                    [c for c in await admin.describe_user_scram_credentials(None)
                     if c.user == "counter"])
    assert asyncio.run(removed()) == ([], {}, [])
    assert not asyncio.run(logs_in(sasl, password))


def test_a_secret_the_user_did_not_generate_is_never_overwritten(
        acl_broker: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    plain, _ = acl_broker
    store = SecretStore()
    store.objects["counter"] = {"metadata": {"name": "counter", "resourceVersion": "7"},
                                "data": {"password": base64.b64encode(b"theirs").decode()}}
    monkeypatch.setattr(user_handler, "kube", lambda: store)
    spec = {"clusterRef": {"bootstrapServers": plain}, "authentication": {}}
    with pytest.raises(PermanentReconcileError, match="was not generated for this User"):
        reconcile(spec, {})
    assert store.version == 0
