"""ACLs with Apache Kafka's own ``kafka-acls`` (kafka.admin.AclCommand) against an odradek
broker with ``authorizer.class.name`` set: added, listed and removed through CreateAcls,
DescribeAcls and DeleteAcls, stored in ZooKeeper exactly where and how Kafka's AclAuthorizer
stores them, and refused to a user without ALTER on the cluster. Also ``kafka-configs
--describe --entity-type users``, which asks both DescribeClientQuotas and
DescribeUserScramCredentials. Runs against odradek only (it needs the authorizer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odradek.local_cluster import free_port
from tests.harness.apache_kafka import CONFIG_COMMAND, ApacheKafka
from tests.harness.fixtures import BrokerFactory
from tests.harness.zk import zk_client
from tests.interop.test_java_tools import TOOL_TIMEOUT, run_tool

pytestmark = pytest.mark.java

ACL_COMMAND = "kafka.admin.AclCommand"


def test_kafka_acls_adds_lists_and_removes(broker_factory: BrokerFactory,
                                           apache_kafka: ApacheKafka, zk_connect: str,
                                           tmp_path: Path) -> None:
    plain_port, sasl_port = free_port(), free_port()
    process = broker_factory(
        0, wait=False,
        listeners=f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        inter_broker_listener_name="PLAINTEXT", sasl_enabled_mechanisms="SCRAM-SHA-256",
        authorizer_class_name="kafka.security.auth.SimpleAclAuthorizer",
        super_users="User:ANONYMOUS")
    process.port = plain_port
    process.wait_ready(60)
    plain = ("--bootstrap-server", f"127.0.0.1:{plain_port}")

    run_tool(apache_kafka, ACL_COMMAND, *plain, "--add", "--allow-principal", "User:alice",
             "--operation", "Read", "--operation", "Write", "--topic", "orders")
    run_tool(apache_kafka, ACL_COMMAND, *plain, "--add", "--allow-principal", "User:alice",
             "--operation", "Read", "--group", "etl-", "--resource-pattern-type", "prefixed")
    listed = run_tool(apache_kafka, ACL_COMMAND, *plain, "--list", "--topic", "orders")
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in listed
    assert "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" in listed
    everything = run_tool(apache_kafka, ACL_COMMAND, *plain, "--list")
    assert "ResourcePattern(resourceType=GROUP, name=etl-, patternType=PREFIXED)" in everything

    with zk_client(zk_connect) as zk:
        topic_acls = json.loads(zk.get("/kafka-acl/Topic/orders")[0])
        group_acls = json.loads(zk.get("/kafka-acl-extended/prefixed/Group/etl-")[0])
        assert zk.get_children("/kafka-acl-changes")
        assert zk.get_children("/kafka-acl-extended-changes")
    assert topic_acls["version"] == 1
    assert sorted(a["operation"] for a in topic_acls["acls"]) == ["Read", "Write"]
    assert group_acls["acls"] == [{"principal": "User:alice", "permissionType": "Allow",
                                   "operation": "Read", "host": "*"}]

    # Kafka's own AclAuthorizer, writing ZooKeeper directly: it reads what odradek stored,
    # and its write reaches the broker through the change notification
    direct = ("--authorizer-properties", f"zookeeper.connect={zk_connect}")
    assert "operation=WRITE" in run_tool(apache_kafka, ACL_COMMAND, *direct, "--list",
                                         "--topic", "orders")
    run_tool(apache_kafka, ACL_COMMAND, *direct, "--add", "--allow-principal", "User:bob",
             "--operation", "Describe", "--topic", "orders")
    listed = run_tool(apache_kafka, ACL_COMMAND, *plain, "--list", "--topic", "orders")
    assert "(principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW)" in listed

    run_tool(apache_kafka, ACL_COMMAND, *plain, "--remove", "--force", "--allow-principal",
             "User:alice", "--operation", "Write", "--topic", "orders")
    listed = run_tool(apache_kafka, ACL_COMMAND, *plain, "--list", "--topic", "orders")
    assert "operation=READ" in listed and "operation=WRITE" not in listed
    assert "User:bob" in listed

    # alice over SASL: no ALTER on the cluster, so kafka-acls is refused
    run_tool(apache_kafka, CONFIG_COMMAND, *plain, "--alter", "--entity-type", "users",
             "--entity-name", "alice", "--add-config",
             "SCRAM-SHA-256=[iterations=4096,password=alice-secret]")
    config = tmp_path / "alice.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                      "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                      'required username="alice" password="alice-secret";\n')
    proc = apache_kafka.run_java_tool(
        ACL_COMMAND, ["--bootstrap-server", f"127.0.0.1:{sasl_port}", "--command-config",
                      str(config), "--add", "--allow-principal", "User:alice", "--operation",
                      "All", "--topic", "*"], TOOL_TIMEOUT)
    assert "ClusterAuthorizationException" in proc.stdout + proc.stderr, proc.stderr[-2000:]

    # kafka-configs --describe of users: SCRAM credentials and quotas, both /config/users
    run_tool(apache_kafka, CONFIG_COMMAND, *plain, "--alter", "--entity-type", "users",
             "--entity-name", "alice", "--add-config", "producer_byte_rate=1048576")
    described = run_tool(apache_kafka, CONFIG_COMMAND, *plain, "--describe", "--entity-type",
                         "users")
    assert "producer_byte_rate=1048576" in described, described
    assert "SCRAM-SHA-256=iterations=4096" in described, described
