"""Requests that mix allowed and denied resources, on the wire: each handler answers the
denied ones itself, beside the others' results, with Kafka's codes (the clients of
test_authorization.py rarely send such mixes). bob may use ``open-*`` topics and the group
``g-open``, nothing else."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.types import BrokerId, GroupId, TopicName
from kio.static.primitive import i8, i32, i64

from odradek.broker.access_rules import RULES
from odradek.client.sync import AdminClient as OdradekAdmin
from odradek.local_cluster import ZooKeeperProcess
from odradek.metrics.recorders import api_name

from .helpers import batch, create_topic, produce_request
from .inprocess import InProcessBroker, broker_config
from .wire import WireClient, sasl_login

TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED = 29, 30, 31
PASSWORD = "bob-secret"


@pytest.fixture(scope="module")
def broker(zookeeper: ZooKeeperProcess, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[InProcessBroker]:
    config = broker_config(
        f"{zookeeper.connect}/t-{uuid.uuid4().hex[:12]}", tmp_path_factory.mktemp("logs"), 0,
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        inter_broker_listener_name="PLAINTEXT", sasl_enabled_mechanisms="PLAIN",
        authorizer_class_name="kafka.security.authorizer.AclAuthorizer",
        super_users="User:ANONYMOUS")
    started = InProcessBroker(config).start()
    assert started.broker is not None
    plaintext = f"127.0.0.1:{started.broker.bound_ports['PLAINTEXT']}"
    odradek_admin = OdradekAdmin(plaintext)
    try:
        odradek_admin.alter_user_scram_credentials(
            upsert=[("bob", "SCRAM-SHA-256", PASSWORD)])
    finally:
        odradek_admin.close()
    admin = AdminClient({"bootstrap.servers": plaintext})
    acls = [AclBinding(kind, name, ResourcePatternType.PREFIXED, "User:bob", "*",
                       AclOperation.ALL, AclPermissionType.ALLOW)
            for kind, name in ((ResourceType.TOPIC, "open-"), (ResourceType.GROUP, "g-open"))]
    for future in admin.create_acls(acls).values():
        future.result(20)
    yield started
    started.stop()


@pytest.fixture
def topics(broker: InProcessBroker) -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    names = f"open-{suffix}", f"shut-{suffix}"
    for name in names:
        create_topic(broker, name)
    return names


def _as_bob(broker: InProcessBroker) -> WireClient:
    assert broker.broker is not None
    client = WireClient(broker.broker.bound_ports["SASL_PLAINTEXT"])
    assert sasl_login(client, "PLAIN", "bob", PASSWORD).error_code == 0
    return client


def _assert_denials_follow_the_rules(broker: InProcessBroker) -> None:
    """Every denial the broker counted is one that access_rules.RULES states for its API
    (the table documents what the handlers check)."""
    assert broker.broker is not None
    connections = broker.broker.metrics.connections
    samples = broker.call(lambda: connections._denials.collect().samples)
    counted = {(s.labels["api"], s.labels["operation"], s.labels["resource_type"])
               for s in samples if s.name.endswith("_total") and s.value > 0}
    stated = {(api_name(api), rule.operation.spelling, rule.resource_type.spelling)
              for api, rules in RULES.items() for rule in rules}
    assert counted, "no denial was counted"
    assert counted - stated == set()


def _produce(open_topic: str, shut_topic: str, acks: int) -> Any:
    one = produce_request(open_topic, batch(b"v"), acks=acks)
    other = produce_request(shut_topic, batch(b"v"), acks=acks)
    return dataclasses.replace(one, topic_data=one.topic_data + other.topic_data)


def test_a_produce_answers_its_denied_topic_beside_the_written_one(
        broker: InProcessBroker, topics: tuple[str, str]) -> None:
    open_topic, shut_topic = topics
    with _as_bob(broker) as client:
        answer = client.request(_produce(open_topic, shut_topic, acks=1))
    codes = {t.name: [int(p.error_code) for p in t.partition_responses]
             for t in answer.responses}
    assert codes == {open_topic: [0], shut_topic: [TOPIC_DENIED]}
    _assert_denials_follow_the_rules(broker)


def test_a_partly_denied_acks_0_produce_closes_the_connection(
        broker: InProcessBroker, topics: tuple[str, str]) -> None:
    """Kafka's rule: an acks=0 produce with any error in it closes the connection (the
    client has no other way to learn of it); the allowed topic is still written."""
    open_topic, shut_topic = topics
    with _as_bob(broker) as client:
        client.send(_produce(open_topic, shut_topic, acks=0))
        assert client.is_closed_by_peer(), "the connection stayed open"
    _assert_denials_follow_the_rules(broker)


def test_list_offsets_delete_groups_and_configs_answer_each_denied_resource(
        broker: InProcessBroker, topics: tuple[str, str]) -> None:
    open_topic, shut_topic = topics
    with _as_bob(broker) as client:
        offsets = client.request(ListOffsetsRequest(
            replica_id=BrokerId(-1), isolation_level=i8(0), topics=tuple(
                ListOffsetsTopic(name=TopicName(name), partitions=(ListOffsetsPartition(
                    partition_index=i32(0), current_leader_epoch=i32(-1),
                    timestamp=i64(-1)),))
                for name in topics)))
        deleted = client.request(DeleteGroupsRequest(
            groups_names=(GroupId("g-open-x"), GroupId("g-shut"))))
        described = client.request(DescribeConfigsRequest(resources=(
            DescribeConfigsResource(resource_type=i8(2), resource_name=open_topic,
                                    configuration_keys=("retention.ms",)),
            DescribeConfigsResource(resource_type=i8(2), resource_name=shut_topic,
                                    configuration_keys=None),
            DescribeConfigsResource(resource_type=i8(4), resource_name="0",
                                    configuration_keys=None),
        ), include_synonyms=False, include_documentation=False))
    assert {t.name: [int(p.error_code) for p in t.partitions] for t in offsets.topics} == {
        open_topic: [0], shut_topic: [TOPIC_DENIED]}
    groups = {r.group_id: int(r.error_code) for r in deleted.results}
    assert groups["g-shut"] == GROUP_DENIED
    assert groups["g-open-x"] != GROUP_DENIED  # asked of the coordinator (none yet here)
    assert [(r.resource_name, int(r.error_code), r.error_message, len(r.configs))
            for r in described.results] == [
        (open_topic, 0, None, 1),
        (shut_topic, TOPIC_DENIED, "Topic authorization failed.", 0),
        ("0", CLUSTER_DENIED, "Cluster authorization failed.", 0)]
    _assert_denials_follow_the_rules(broker)


def test_requests_denied_as_a_whole_carry_their_top_level_code(
        broker: InProcessBroker, topics: tuple[str, str]) -> None:
    from kio.schema.describe_cluster.v0.request import DescribeClusterRequest
    from kio.schema.describe_log_dirs.v4.request import DescribeLogDirsRequest
    from kio.schema.elect_leaders.v2.request import ElectLeadersRequest
    from kio.schema.end_txn.v3.request import EndTxnRequest
    from kio.schema.heartbeat.v4.request import HeartbeatRequest
    from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
    from kio.schema.offset_fetch.v7.request import OffsetFetchRequest
    from kio.schema.types import ProducerId, TransactionalId
    from kio.static.primitive import i16

    from .helpers import ms

    open_topic, shut_topic = topics
    with _as_bob(broker) as client:
        heartbeat = client.request(HeartbeatRequest(
            group_id=GroupId("g-shut"), generation_id=i32(1), member_id="m",
            group_instance_id=None))
        offsets = client.request(OffsetFetchRequest(
            group_id=GroupId("g-shut"), topics=None, require_stable=False))
        end = client.request(EndTxnRequest(
            transactional_id=TransactionalId("tx-shut"), producer_id=ProducerId(1),
            producer_epoch=i16(0), committed=True))
        init = client.request(InitProducerIdRequest(
            transactional_id=TransactionalId("tx-shut"), transaction_timeout=ms(60000),
            producer_id=ProducerId(-1), producer_epoch=i16(-1)))
        cluster = client.request(DescribeClusterRequest(
            include_cluster_authorized_operations=True))
        log_dirs = client.request(DescribeLogDirsRequest(topics=None))
        elected = client.request(ElectLeadersRequest(
            election_type=i8(0), topic_partitions=None, timeout=ms(1000)))
        metadata = client.request(MetadataRequest(
            topics=tuple(MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=TopicName(name))
                         for name in (open_topic, shut_topic)),
            allow_auto_topic_creation=False, include_topic_authorized_operations=True))
    assert [int(a.error_code) for a in (heartbeat, offsets, end, init)] == [
        GROUP_DENIED, GROUP_DENIED, 53, 53]  # 53: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert (int(cluster.error_code), cluster.error_message, cluster.brokers) == (
        CLUSTER_DENIED, "Cluster authorization failed.", ())
    assert (int(log_dirs.error_code), log_dirs.results) == (CLUSTER_DENIED, ())
    assert int(elected.error_code) == CLUSTER_DENIED
    shown = {t.name: (int(t.error_code), t.topic_authorized_operations)
             for t in metadata.topics}
    assert shown[shut_topic] == (TOPIC_DENIED, -(2**31))
    assert shown[open_topic][0] == 0
    assert shown[open_topic][1] & (1 << 3), "READ missing from the authorized operations"
    _assert_denials_follow_the_rules(broker)
