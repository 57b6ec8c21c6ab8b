"""SCRAM users with Apache Kafka's own tools: ``kafka-configs --entity-type users`` stores
them through AlterUserScramCredentials, and Kafka's Java client then
authenticates with them (SCRAM-SHA-256 and -512, and PLAIN checked against the same stored
credential) on odradek's SASL_PLAINTEXT listener. (The credentials are read back with
DescribeUserScramCredentials through odradek's client: ``kafka-configs --describe`` of users
also needs DescribeClientQuotas.) Runs against odradek only: it needs a
broker with a SASL listener."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odradek.client.sync import AdminClient
from odradek.local_cluster import free_port
from tests.harness.apache_kafka import CONFIG_COMMAND, TOPIC_COMMAND, ApacheKafka
from tests.harness.fixtures import BrokerFactory
from tests.harness.zk import zk_client
from tests.interop.test_java_tools import TOOL_TIMEOUT, run_tool

pytestmark = pytest.mark.java


def _client_properties(path: Path, mechanism: str, user: str, password: str) -> Path:
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    path.write_text("security.protocol=SASL_PLAINTEXT\n"
                    f"sasl.mechanism={mechanism}\n"
                    f'sasl.jaas.config={module} required username="{user}" '
                    f'password="{password}";\n')
    return path


def test_kafka_configs_manages_users_and_java_clients_log_in(
        broker_factory: BrokerFactory, apache_kafka: ApacheKafka, zk_connect: str,
        tmp_path: Path) -> None:
    plain_port, sasl_port = free_port(), free_port()
    process = broker_factory(
        0, wait=False,
        listeners=f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        inter_broker_listener_name="PLAINTEXT",
        sasl_enabled_mechanisms="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512")
    process.port = plain_port
    process.wait_ready(60)
    users = ("--bootstrap-server", f"127.0.0.1:{plain_port}", "--entity-type", "users")
    out = run_tool(apache_kafka, CONFIG_COMMAND, *users, "--entity-name", "alice", "--alter",
                   "--add-config",
                   "SCRAM-SHA-256=[iterations=8192,password=alice-secret],"
                   "SCRAM-SHA-512=[password=alice-secret]")
    assert "Completed updating config for user alice." in out, out
    # (kafka-configs --describe of users also asks DescribeClientQuotas: the quotas' work.)
    assert _described(plain_port) == {("alice", "SCRAM-SHA-256", 8192),
                                      ("alice", "SCRAM-SHA-512", 4096)}
    with zk_client(zk_connect) as zk:
        stored = json.loads(zk.get("/config/users/alice")[0])
    assert stored["version"] == 1
    assert stored["config"]["SCRAM-SHA-256"].startswith("salt=")
    assert stored["config"]["SCRAM-SHA-256"].endswith(",iterations=8192")
    assert "alice-secret" not in json.dumps(stored)

    sasl = ("--bootstrap-server", f"127.0.0.1:{sasl_port}")
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"):
        config = _client_properties(tmp_path / f"{mechanism}.properties", mechanism, "alice",
                                    "alice-secret")
        run_tool(apache_kafka, TOPIC_COMMAND, *sasl, "--command-config", str(config), "--list")
    wrong = _client_properties(tmp_path / "wrong.properties", "SCRAM-SHA-256", "alice", "nope")
    proc = apache_kafka.run_java_tool(
        TOPIC_COMMAND, [*sasl, "--command-config", str(wrong), "--list"], TOOL_TIMEOUT)
    assert proc.returncode != 0
    assert "SaslAuthenticationException" in proc.stdout + proc.stderr, proc.stderr[-2000:]

    out = run_tool(apache_kafka, CONFIG_COMMAND, *users, "--entity-name", "alice", "--alter",
                   "--delete-config", "SCRAM-SHA-512")
    assert "Completed updating config for user alice." in out, out
    assert _described(plain_port) == {("alice", "SCRAM-SHA-256", 8192)}


def _described(port: int) -> set[tuple[str, str, int]]:
    admin = AdminClient(f"127.0.0.1:{port}")
    try:
        return {(c.user, c.mechanism, c.iterations)
                for c in admin.describe_user_scram_credentials(["alice"])}
    finally:
        admin.close()
