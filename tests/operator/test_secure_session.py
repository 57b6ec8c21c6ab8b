"""The operator against a REAL broker whose inter-broker listener is SASL_SSL: its admin
session authenticates with SCRAM over TLS (trusting the TLS Secret's ca.crt), creates a topic,
keeps the spec's SCRAM users in the cluster, and reports a refused login as such.

The broker also has a PLAINTEXT listener, used only to create the operator's own user first
(as ``odradek users`` through another listener would, before such a cluster starts).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from odradek_operator.errors import ClusterUnreachable
from odradek_operator.handlers.scram_users import reconcile_users
from odradek_operator.kafka.access import cluster_access
from odradek_operator.kafka.session import AuthenticationFailed, admin_session
from odradek_operator.kafka.topics import sync_topic
from odradek_operator.manifests.common import ClusterNames
from odradek_operator.spec import BrokerClusterSpec, TopicSpec

from odradek.client.admin import AsyncAdminClient
from odradek.client.sync import AdminClient
from odradek.local_cluster import BrokerProcess, free_port
from tests.harness.certs import CertSet, make_certs
from tests.harness.fixtures import SINGLE_NODE_DEFAULTS, attach_process_logs

OPERATOR = ("odradek-operator", "operator-secret")


@pytest.fixture
def secure_broker(zk_connect: str, tmp_path: Path, request: pytest.FixtureRequest
                  ) -> Iterator[tuple[BrokerProcess, int, CertSet]]:
    certs = make_certs(tmp_path / "certs")
    plain, secure = free_port(), free_port()
    broker = BrokerProcess(0, plain, tmp_path / "broker", zk_connect, {
        **SINGLE_NODE_DEFAULTS,
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SECURE://127.0.0.1:{secure}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL",
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.location": str(certs.broker_keystore),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
    })
    broker.start()
    try:
        broker.wait_ready(60)
        admin = AdminClient(broker.bootstrap)
        try:
            admin.alter_user_scram_credentials(upsert=[(*OPERATOR[:1], "SCRAM-SHA-512",
                                                        OPERATOR[1])])
        finally:
            admin.close()
        yield broker, secure, certs
    finally:
        attach_process_logs(request, [broker])
        broker.stop()


def secure_spec() -> BrokerClusterSpec:
    return BrokerClusterSpec.parse({
        "zookeeper": {"connect": "zk:2181"},
        "listeners": {"named": [{"name": "SECURE", "port": 9093,
                                 "securityProtocol": "SASL_SSL"}]},
        "tls": {"secretName": "odr-tls"},
        "authentication": {
            "mechanisms": ["SCRAM-SHA-512", "SCRAM-SHA-256"],
            "operatorSecretRef": {"name": "odr-operator"},
            "users": [{"name": "alice", "mechanism": "SCRAM-SHA-256",
                       "secretRef": {"name": "alice-pw"}},
                      {"name": "bob", "secretRef": {"name": "bob-pw", "key": "pw"}}]}})


def settings(certs: CertSet, password: str = OPERATOR[1]) -> dict[str, Any]:
    access = cluster_access(ClusterNames("odr", "kafka"), secure_spec(),
                            ca_pem=certs.ca.read_text(), credentials=(OPERATOR[0], password))
    return dict(access.settings)


class SecretsOnly:
    """The one Kubernetes call reconcile_users makes (GET a Secret), from a dict: the broker
    side of the same path is real."""

    def __init__(self, secrets: dict[str, dict[str, str]]) -> None:
        self.secrets = secrets

    async def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        assert kind == "Secret" and namespace == "kafka"
        data = self.secrets.get(name)
        if data is None:
            return None
        return {"metadata": {"resourceVersion": str(hash(tuple(sorted(data.items()))))},
                "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


async def _logs_in(bootstrap: str, certs: CertSet, user: str, password: str,
                   mechanism: str) -> bool:
    admin = AsyncAdminClient(bootstrap, security_protocol="SASL_SSL", ssl_cafile=str(certs.ca),
                             sasl_mechanism=mechanism, sasl_plain_username=user,
                             sasl_plain_password=password, request_timeout_ms=10_000)
    try:
        await admin.describe_cluster()
        return True
    except Exception:
        return False
    finally:
        await admin.close()


def test_operator_session_authenticates_with_scram_over_sasl_ssl_and_creates_a_topic(
        secure_broker):
    _broker, port, certs = secure_broker
    bootstrap = f"127.0.0.1:{port}"

    async def scenario() -> None:
        spec = TopicSpec.parse({"clusterRef": {"bootstrapServers": bootstrap},
                                "partitions": 3, "replicationFactor": 1}, "secured-events")
        async with admin_session(bootstrap, security=settings(certs)) as admin:
            outcome = await sync_topic(admin, spec)
            assert outcome.topic is not None and outcome.topic.partitions == 3
            assert "secured-events" in await admin.list_topics()
        with pytest.raises(AuthenticationFailed, match="refused the operator"):
            async with admin_session(bootstrap, security=settings(certs, "wrong"), delay=1):
                pass

    asyncio.run(scenario())


def test_scram_users_from_secrets_are_written_rotated_and_removed(secure_broker):
    _broker, port, certs = secure_broker
    bootstrap = f"127.0.0.1:{port}"
    spec = secure_spec()
    api = SecretsOnly({"alice-pw": {"password": "alice-1"}, "bob-pw": {"pw": "bob-1"}})

    async def scenario() -> None:
        async with admin_session(bootstrap, security=settings(certs)) as admin:
            first = await reconcile_users(api, admin, "kafka", spec, None)  # type: ignore[arg-type]
            assert first.problems == [] and set(first.applied) == {"alice", "bob"}
            assert await _logs_in(bootstrap, certs, "alice", "alice-1", "SCRAM-SHA-256")
            assert await _logs_in(bootstrap, certs, "bob", "bob-1", "SCRAM-SHA-512")
            # Nothing changed: nothing written.
            again = await reconcile_users(api, admin, "kafka", spec, first.applied)  # type: ignore[arg-type]
            assert again.events == []
            # A rotated password (new Secret version) and a user dropped from the spec.
            api.secrets["alice-pw"] = {"password": "alice-2"}
            fewer = BrokerClusterSpec.parse({
                "zookeeper": {"connect": "zk:2181"},
                "listeners": {"named": [{"name": "SECURE", "port": 9093,
                                         "securityProtocol": "SASL_SSL"}]},
                "tls": {"secretName": "odr-tls"},
                "authentication": {
                    "mechanisms": ["SCRAM-SHA-512", "SCRAM-SHA-256"],
                    "operatorSecretRef": {"name": "odr-operator"},
                    "users": [{"name": "alice", "mechanism": "SCRAM-SHA-256",
                               "secretRef": {"name": "alice-pw"}}]}})
            third = await reconcile_users(api, admin, "kafka", fewer, again.applied)  # type: ignore[arg-type]
            assert set(third.applied) == {"alice"}
            users = {(c.user, c.mechanism)
                     for c in await admin.describe_user_scram_credentials(None)}
            assert ("bob", "SCRAM-SHA-512") not in users
            assert (OPERATOR[0], "SCRAM-SHA-512") in users  # never the operator's to delete
        assert await _logs_in(bootstrap, certs, "alice", "alice-2", "SCRAM-SHA-256")
        assert not await _logs_in(bootstrap, certs, "alice", "alice-1", "SCRAM-SHA-256")
        assert not await _logs_in(bootstrap, certs, "bob", "bob-1", "SCRAM-SHA-512")
        # A user whose Secret is missing is reported and left alone.
        del api.secrets["alice-pw"]
        async with admin_session(bootstrap, security=settings(certs)) as admin:
            fourth = await reconcile_users(api, admin, "kafka", fewer, third.applied)  # type: ignore[arg-type]
        assert [reason for reason, _ in fourth.problems] == ["SecretNotFound"]
        assert "kafka/alice-pw" in fourth.problems[0][1]
        assert await _logs_in(bootstrap, certs, "alice", "alice-2", "SCRAM-SHA-256")

    asyncio.run(scenario())


def test_operator_session_presents_the_brokers_certificate_when_clients_must(
        zk_connect: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """spec.tls.clientAuth: required on an SSL inter-broker listener: the operator connects
    with the TLS Secret's own certificate, as the brokers do to each other."""
    certs = make_certs(tmp_path / "certs")
    plain, mtls = free_port(), free_port()
    broker = BrokerProcess(0, plain, tmp_path / "broker", zk_connect, {
        **SINGLE_NODE_DEFAULTS,
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},MTLS://127.0.0.1:{mtls}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,MTLS:SSL",
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.location": str(certs.broker_keystore),
        "ssl.truststore.location": str(certs.ca), "ssl.client.auth": "required"})
    broker.start()
    try:
        broker.wait_ready(60)
        spec = BrokerClusterSpec.parse({
            "zookeeper": {"connect": "zk:2181"},
            "listeners": {"named": [{"name": "MTLS", "port": 9091, "securityProtocol": "SSL"}]},
            "tls": {"secretName": "odr-tls", "clientAuth": "required"}})
        pair = (certs.broker_cert.read_text(), certs.broker_key.read_text())
        names = ClusterNames("odr", "kafka")
        with_cert = cluster_access(names, spec, ca_pem=certs.ca.read_text(),
                                   client_certificate=pair).settings
        without = cluster_access(names, spec, ca_pem=certs.ca.read_text()).settings
        bootstrap = f"127.0.0.1:{mtls}"

        async def scenario() -> None:
            topic = TopicSpec.parse({"clusterRef": {"bootstrapServers": bootstrap},
                                     "partitions": 1, "replicationFactor": 1}, "mtls-events")
            async with admin_session(bootstrap, security=with_cert) as admin:
                assert (await sync_topic(admin, topic)).topic is not None
            # Without it the broker closes the connection. Under TLS 1.3 the client learns
            # that only on its first read, so this is "unreachable", not a TLS error.
            with pytest.raises(ClusterUnreachable):
                async with admin_session(bootstrap, security=without, delay=1):
                    pass

        asyncio.run(scenario())
    finally:
        attach_process_logs(request, [broker])
        broker.stop()
