"""ACL authorization with real clients: a broker with ``authorizer.class.name`` set, a
PLAINTEXT listener whose ANONYMOUS principal is a super user (the administrators' local
listener) and a SASL_PLAINTEXT listener where alice and bob log in. ACLs are managed with
librdkafka's admin client (CreateAcls/DescribeAcls/DeleteAcls)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition
from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

from odradek.client.sync import AdminClient as OdradekAdmin
from odradek.local_cluster import ZooKeeperProcess

from .conftest import wait_until_true
from .helpers import consume_all, create_topic
from .inprocess import InProcessBroker, broker_config

USERS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ANY: Any = None  # a filter field matching everything (the client's stubs say str)


def _config(connect: str, logs: Any, broker_id: int = 0) -> Any:
    return broker_config(
        connect, logs, broker_id,
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        inter_broker_listener_name="PLAINTEXT",
        sasl_enabled_mechanisms="PLAIN,SCRAM-SHA-256",
        authorizer_class_name=AUTHORIZER,
        super_users="User:admin;User:ANONYMOUS")


@pytest.fixture(scope="module")
def chroot(zookeeper: ZooKeeperProcess) -> str:
    return f"{zookeeper.connect}/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def acl_broker(chroot: str, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[InProcessBroker]:
    broker = InProcessBroker(_config(chroot, tmp_path_factory.mktemp("logs"))).start()
    admin = OdradekAdmin(_bootstrap(broker, "PLAINTEXT"))
    try:
        admin.alter_user_scram_credentials(
            upsert=[(user, "SCRAM-SHA-256", password) for user, password in USERS.items()])
    finally:
        admin.close()
    yield broker
    broker.stop()


def _bootstrap(broker: InProcessBroker, listener: str) -> str:
    assert broker.broker is not None
    return f"127.0.0.1:{broker.broker.bound_ports[listener]}"


def _as(broker: InProcessBroker, user: str) -> dict[str, Any]:
    return {"bootstrap.servers": _bootstrap(broker, "SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": USERS[user]}


def _kafka_python_as(broker: InProcessBroker, user: str) -> dict[str, Any]:
    return {"bootstrap_servers": _bootstrap(broker, "SASL_PLAINTEXT"),
            "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": user, "sasl_plain_password": USERS[user]}


def _admin(broker: InProcessBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": _bootstrap(broker, "PLAINTEXT")})


def _acl(kind: ResourceType, name: str, principal: str, operation: AclOperation,
         permission: AclPermissionType = AclPermissionType.ALLOW,
         pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(kind, name, pattern, principal, "*", operation, permission)


def _create_acls(broker: InProcessBroker, *acls: AclBinding) -> None:
    _create_acls_at(_bootstrap(broker, "PLAINTEXT"), *acls)


def _create_acls_at(bootstrap: str, *acls: AclBinding) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the futures are done
    for future in admin.create_acls(list(acls)).values():
        future.result(20)


def _produce_error(settings: dict[str, Any], topic: str) -> KafkaError | None:
    producer = Producer({**settings, "message.timeout.ms": 10000})
    errors: list[KafkaError | None] = []
    producer.produce(topic, b"value", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(20)
    assert errors, "no delivery report"
    return errors[0]


def _consume_error(settings: dict[str, Any], topic: str, group: str) -> KafkaError:
    consumer = Consumer({**settings, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                error: KafkaError | None = message.error()
                assert error is not None
                return error
            assert message is None, "read a record without authorization"
    finally:
        consumer.close()
    raise AssertionError("no authorization error within 20 s")


def _denials(broker: InProcessBroker) -> float:
    assert broker.broker is not None
    family = broker.broker.metrics.connections._denials
    return float(broker.call(lambda: sum(child.value for child in family._children.values())))


def test_no_acls_lets_only_super_users_in(acl_broker: InProcessBroker) -> None:
    topic = f"closed-{uuid.uuid4().hex[:8]}"
    create_topic(acl_broker, topic)
    before = _denials(acl_broker)
    error = _produce_error(_as(acl_broker, "alice"), topic)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error
    assert _denials(acl_broker) > before
    # alice sees no topics at all; admin (a super user over SASL) sees and writes it
    metadata = Producer(_as(acl_broker, "alice")).list_topics(timeout=10)
    assert topic not in metadata.topics
    assert _produce_error(_as(acl_broker, "admin"), topic) is None
    assert consume_all(_bootstrap(acl_broker, "SASL_PLAINTEXT"), topic, 1,
                       settings=_as(acl_broker, "admin")) == [b"value"]


def test_read_and_write_need_their_acls(acl_broker: InProcessBroker) -> None:
    topic, group = f"orders-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(acl_broker, topic)
    _create_acls(acl_broker, _acl(ResourceType.TOPIC, topic, "User:alice", AclOperation.WRITE))
    assert _produce_error(_as(acl_broker, "alice"), topic) is None
    # WRITE implies DESCRIBE, not READ: both clients get TOPIC_AUTHORIZATION_FAILED
    error = _consume_error(_as(acl_broker, "alice"), topic, group)
    assert error.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                            KafkaError.GROUP_AUTHORIZATION_FAILED), error
    with pytest.raises(TopicAuthorizationFailedError):
        consumer = KafkaConsumer(**_kafka_python_as(acl_broker, "alice"),
                                 enable_auto_commit=False)
        try:
            consumer.assign([KTopicPartition(topic, 0)])
            consumer.seek_to_beginning()
            for _ in range(40):
                consumer.poll(timeout_ms=250)
        finally:
            consumer.close()
    # bob may not write
    with pytest.raises(TopicAuthorizationFailedError):
        producer = KafkaProducer(**_kafka_python_as(acl_broker, "bob"))
        try:
            producer.send(topic, b"x").get(20)
        finally:
            producer.close(5)
    # READ on the topic, but the group is still closed
    _create_acls(acl_broker, _acl(ResourceType.TOPIC, topic, "User:alice", AclOperation.READ))
    with pytest.raises(GroupAuthorizationFailedError):
        consumer = KafkaConsumer(topic, **_kafka_python_as(acl_broker, "alice"),
                                 group_id=group, auto_offset_reset="earliest")
        try:
            for _ in range(40):
                consumer.poll(timeout_ms=250)
        finally:
            consumer.close()
    _create_acls(acl_broker, _acl(ResourceType.GROUP, group, "User:alice", AclOperation.READ))
    consumer = KafkaConsumer(topic, **_kafka_python_as(acl_broker, "alice"), group_id=group,
                             auto_offset_reset="earliest", consumer_timeout_ms=15000)
    try:
        assert [m.value for m in consumer][:1] == [b"value"]
        consumer.commit()
        committed = consumer.committed(KTopicPartition(topic, 0))
        assert committed == 1
    finally:
        consumer.close()


def test_prefixed_acls_and_deny_over_allow(acl_broker: InProcessBroker) -> None:
    prefix = f"pre-{uuid.uuid4().hex[:6]}-"
    open_topic, blocked = prefix + "open", prefix + "blocked"
    for name in (open_topic, blocked):
        create_topic(acl_broker, name)
    _create_acls(
        acl_broker,
        _acl(ResourceType.TOPIC, prefix, "User:*", AclOperation.ALL,
             pattern=ResourcePatternType.PREFIXED),
        _acl(ResourceType.TOPIC, blocked, "User:alice", AclOperation.WRITE,
             AclPermissionType.DENY))
    assert _produce_error(_as(acl_broker, "alice"), open_topic) is None
    error = _produce_error(_as(acl_broker, "alice"), blocked)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error
    assert _produce_error(_as(acl_broker, "bob"), blocked) is None
    # alice may still read it (the DENY is of WRITE only); librdkafka looks up the
    # coordinator of its group.id even when assigned, so the group needs DESCRIBE
    _create_acls(acl_broker, _acl(ResourceType.GROUP, "unused", "User:alice",
                                  AclOperation.DESCRIBE))
    assert consume_all(_bootstrap(acl_broker, "SASL_PLAINTEXT"), blocked, 1,
                       settings=_as(acl_broker, "alice")) == [b"value"]
    admin = _admin(acl_broker)
    described = admin.describe_acls(AclBindingFilter(
        ResourceType.TOPIC, blocked, ResourcePatternType.MATCH, ANY, ANY, AclOperation.ANY,
        AclPermissionType.ANY)).result(20)
    assert {(b.name, b.resource_pattern_type, b.permission_type) for b in described} == {
        (prefix, ResourcePatternType.PREFIXED, AclPermissionType.ALLOW),
        (blocked, ResourcePatternType.LITERAL, AclPermissionType.DENY)}
    deleted = admin.delete_acls([AclBindingFilter(
        ResourceType.TOPIC, blocked, ResourcePatternType.LITERAL, "User:alice", ANY,
        AclOperation.ANY, AclPermissionType.DENY)])
    assert [len(f.result(20)) for f in deleted.values()] == [1]
    assert _produce_error(_as(acl_broker, "alice"), blocked) is None


def test_acl_apis_need_cluster_permissions(acl_broker: InProcessBroker) -> None:
    alice_admin = AdminClient(_as(acl_broker, "alice"))
    with pytest.raises(KafkaException) as denied:
        for future in alice_admin.create_acls([_acl(
                ResourceType.TOPIC, "x", "User:alice", AclOperation.ALL)]).values():
            future.result(20)
    assert denied.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    # (DescribeAcls is answered CLUSTER_AUTHORIZATION_FAILED too, but librdkafka 2.x drops
    # that top-level error and returns no ACLs: Kafka's kafka-acls test checks it.)
    assert alice_admin.describe_acls(AclBindingFilter(
        ResourceType.ANY, ANY, ResourcePatternType.ANY, ANY, ANY, AclOperation.ANY,
        AclPermissionType.ANY)).result(20) == []


def test_acl_changes_reach_a_second_broker_live(
        acl_broker: InProcessBroker, chroot: str, tmp_path: Any) -> None:
    second = InProcessBroker(_config(chroot, tmp_path / "logs-1", broker_id=1)).start()
    try:
        topic = f"live-{uuid.uuid4().hex[:8]}"
        create_topic(acl_broker, topic)
        bob_on_second = {**_as(second, "bob")}
        assert topic not in Producer(bob_on_second).list_topics(timeout=10).topics
        _create_acls(acl_broker, _acl(ResourceType.TOPIC, topic, "User:bob",
                                      AclOperation.DESCRIBE))
        wait_until_true(lambda: topic in Producer(bob_on_second).list_topics(timeout=10).topics,
                        10, "the ACL on the second broker")
        _create_acls(acl_broker, _acl(ResourceType.TOPIC, topic, "User:bob",
                                      AclOperation.DESCRIBE, AclPermissionType.DENY))
        wait_until_true(
            lambda: topic not in Producer(bob_on_second).list_topics(timeout=10).topics,
            10, "the DENY on the second broker")
    finally:
        second.stop()


def test_a_partly_denied_acks_all_produce_waits_for_its_replicas(
        acl_broker: InProcessBroker, chroot: str, tmp_path: Any) -> None:
    """One acks=all Produce to two topics led by broker 0 and replicated to broker 1: the
    allowed topic's write waits in the purgatory for the follower, the denied one is answered
    TOPIC_AUTHORIZATION_FAILED in the same response (the access rule finishes the parked
    response, it does not replace it)."""
    second = InProcessBroker(_config(chroot, tmp_path / "logs-1", broker_id=1)).start()
    try:
        allowed, denied = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("open", "shut"))
        admin = _admin(acl_broker)
        for future in admin.create_topics([NewTopic(t, 1, replica_assignment=[[0, 1]])
                                           for t in (allowed, denied)]).values():
            future.result(20)
        _create_acls(acl_broker,
                     _acl(ResourceType.TOPIC, allowed, "User:alice", AclOperation.WRITE),
                     _acl(ResourceType.TOPIC, denied, "User:alice", AclOperation.DESCRIBE))
        wait_until_true(lambda: all(
            len(admin.list_topics(t, timeout=10).topics[t].partitions[0].isrs) == 2
            for t in (allowed, denied)), 20, "both replicas in sync")
        # kafka-python puts every partition for a broker in one Produce (librdkafka does not)
        producer = KafkaProducer(**_kafka_python_as(acl_broker, "alice"), acks="all",
                                 linger_ms=200, retries=0)
        try:
            sent = {topic: producer.send(topic, b"v") for topic in (allowed, denied)}
            producer.flush(20)
            assert sent[allowed].get(20).offset == 0
            with pytest.raises(TopicAuthorizationFailedError):
                sent[denied].get(20)
        finally:
            producer.close(5)
        assert consume_all(_bootstrap(acl_broker, "PLAINTEXT"), allowed, 1) == [b"v"]
    finally:
        second.stop()


def test_inter_broker_principal_with_cluster_action(start_broker: Any) -> None:
    """Followers fetch over a SASL inter-broker listener as User:broker, which is no super
    user: the ClusterAction ACL on the cluster is what lets acks=all complete."""
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="broker" password="broker-secret";')
    settings = dict(listeners="CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                    listener_security_protocol_map="CLIENT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
                    inter_broker_listener_name="INTERNAL", sasl_enabled_mechanisms="SCRAM-SHA-256",
                    sasl_mechanism_inter_broker_protocol="SCRAM-SHA-256", sasl_jaas_config=jaas,
                    authorizer_class_name="acl", super_users="User:ANONYMOUS",
                    replica_fetch_backoff_ms="100")
    first = start_broker(0, **settings)
    client = _bootstrap(first, "CLIENT")
    admin = OdradekAdmin(client)
    try:
        admin.alter_user_scram_credentials(upsert=[("broker", "SCRAM-SHA-256", "broker-secret")])
    finally:
        admin.close()
    _create_acls_at(client, _acl(ResourceType.BROKER, "kafka-cluster", "User:broker",
                                 AclOperation.CLUSTER_ACTION))
    second = start_broker(1, **settings)
    assert second.broker is not None
    librdkafka = AdminClient({"bootstrap.servers": client})
    topic = f"replicated-{uuid.uuid4().hex[:8]}"
    new = NewTopic(topic, 1, 2, config={"min.insync.replicas": "2"})
    for future in librdkafka.create_topics([new]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": client, "acks": "all",
                         "message.timeout.ms": 30000})
    errors: list[Any] = []
    for i in range(50):
        producer.produce(topic, b"r%02d" % i, on_delivery=lambda err, _m: errors.append(err))
    producer.flush(40)
    assert errors == [None] * 50


def test_producer_ids_admin_and_transactions(acl_broker: InProcessBroker) -> None:
    topic = f"idem-{uuid.uuid4().hex[:8]}"
    create_topic(acl_broker, topic)
    _create_acls(acl_broker, _acl(ResourceType.TOPIC, topic, "User:bob", AclOperation.WRITE))
    # an idempotent producer needs IdempotentWrite on the cluster or Write on some topic
    idempotent = {**_as(acl_broker, "bob"), "enable.idempotence": True}
    assert _produce_error(idempotent, topic) is None
    transactional = Producer({**_as(acl_broker, "bob"), "transactional.id": "tx-bob"})
    with pytest.raises(KafkaException) as denied:
        transactional.init_transactions(20)
    assert denied.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    _create_acls(acl_broker, _acl(ResourceType.TRANSACTIONAL_ID, "tx-", "User:bob",
                                  AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED))
    transactional = Producer({**_as(acl_broker, "bob"), "transactional.id": "tx-bob"})
    transactional.init_transactions(20)
    transactional.begin_transaction()
    transactional.produce(topic, b"in-txn")
    transactional.commit_transaction(20)
    # admin requests: bob may not create topics or read a topic's configs
    bob_admin = AdminClient(_as(acl_broker, "bob"))
    created = bob_admin.create_topics([NewTopic(f"new-{uuid.uuid4().hex[:6]}", 1, 1)])
    for future in created.values():
        with pytest.raises(KafkaException) as refused:
            future.result(20)
        assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    with pytest.raises(KafkaException) as refused:
        bob_admin.describe_configs([resource])[resource].result(20)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_odradek_acls_command(acl_broker: InProcessBroker) -> None:
    from click.testing import CliRunner

    from odradek.cli.main import cli

    topic = f"cli-{uuid.uuid4().hex[:8]}"
    base = ["acls", "--bootstrap-server", _bootstrap(acl_broker, "PLAINTEXT")]
    runner = CliRunner()
    added = runner.invoke(cli, [*base, "--add", "--allow-principal", "User:alice",
                                "--operation", "Read", "--operation", "Describe",
                                "--topic", topic])
    assert added.exit_code == 0, added.output
    listed = runner.invoke(cli, [*base, "--output", "json", "--list", "--topic", topic])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    assert {(r["principal"], r["operation"], r["permission"]) for r in rows} == {
        ("User:alice", "READ", "ALLOW"), ("User:alice", "DESCRIBE", "ALLOW")}
    removed = runner.invoke(cli, [*base, "--output", "json", "--remove", "--operation",
                                  "Describe", "--topic", topic])
    assert removed.exit_code == 0, removed.output
    assert [r["operation"] for r in json.loads(removed.output)] == ["DESCRIBE"]
    listed = runner.invoke(cli, [*base, "--output", "json", "--list", "--topic", topic])
    assert [r["operation"] for r in json.loads(listed.output)] == ["READ"]
    refused = runner.invoke(cli, ["acls", "--bootstrap-server",
                                  _bootstrap(acl_broker, "SASL_PLAINTEXT"), "--list"],
                            env={})
    assert refused.exit_code != 0


def test_authorized_operations_are_reported(acl_broker: InProcessBroker) -> None:
    from confluent_kafka import TopicCollection

    topic = f"ops-{uuid.uuid4().hex[:8]}"
    create_topic(acl_broker, topic)
    _create_acls(acl_broker, _acl(ResourceType.TOPIC, topic, "User:bob", AclOperation.READ),
                 _acl(ResourceType.BROKER, "kafka-cluster", "User:bob", AclOperation.DESCRIBE))
    bob_admin = AdminClient(_as(acl_broker, "bob"))
    described = bob_admin.describe_topics(TopicCollection([topic]),
                                          include_authorized_operations=True)
    description = described[topic].result(20)
    assert set(description.authorized_operations) == {AclOperation.READ,
                                                      AclOperation.DESCRIBE}
    cluster = bob_admin.describe_cluster(include_authorized_operations=True).result(20)
    assert set(cluster.authorized_operations) == {AclOperation.DESCRIBE}


def test_without_an_authorizer_acl_requests_are_security_disabled(
        shared_broker: InProcessBroker) -> None:
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    with pytest.raises(KafkaException) as disabled:
        for future in admin.create_acls([_acl(ResourceType.TOPIC, "t", "User:alice",
                                              AclOperation.READ)]).values():
            future.result(20)
    assert disabled.value.args[0].code() == KafkaError.SECURITY_DISABLED
    # Kafka's texts: CreateAcls and DeleteAcls say one thing, DescribeAcls another
    assert disabled.value.args[0].str() == "No Authorizer is configured."
    from kio.schema.delete_acls.v3.request import DeleteAclsFilter, DeleteAclsRequest
    from kio.schema.describe_acls.v3.request import DescribeAclsRequest
    from kio.static.primitive import i8

    from .wire import WireClient

    every: dict[str, Any] = {"resource_name_filter": None, "pattern_type_filter": i8(1),
                             "principal_filter": None, "host_filter": None,
                             "operation": i8(1), "permission_type": i8(1)}
    with WireClient(shared_broker.port) as client:
        described = client.request(DescribeAclsRequest(resource_type_filter=i8(1), **every))
        deleted = client.request(DeleteAclsRequest(filters=(
            DeleteAclsFilter(resource_type_filter=i8(1), **every),)))
    assert (described.error_code, described.error_message) == (
        54, "No Authorizer is configured on the broker")
    assert [(r.error_code, r.error_message) for r in deleted.filter_results] == [
        (54, "No Authorizer is configured.")]


@pytest.mark.parametrize("version", [3, 4])
def test_a_denied_find_coordinator_says_why(acl_broker: InProcessBroker, version: int) -> None:
    """GROUP/TRANSACTIONAL_ID_AUTHORIZATION_FAILED carry Kafka's message where the answer
    has an error_message (FindCoordinator; Kafka 3.9.2 sends these texts for v3)."""
    from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest as FindV3
    from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest as FindV4
    from kio.static.primitive import i8

    from .wire import WireClient, sasl_login

    port = int(_bootstrap(acl_broker, "SASL_PLAINTEXT").rsplit(":", 1)[1])
    found = []
    with WireClient(port) as client:
        assert sasl_login(client, "PLAIN", "bob", USERS["bob"]).error_code == 0
        for key_type, key in ((0, f"group-{uuid.uuid4().hex[:6]}"), (1, "txn-of-bob")):
            if version == 3:
                answer = client.request(FindV3(key=key, key_type=i8(key_type)))
                found.append((answer.error_code, answer.error_message))
            else:
                answer = client.request(FindV4(key_type=i8(key_type), coordinator_keys=(key,)))
                found += [(c.error_code, c.error_message) for c in answer.coordinators]
    assert found == [(30, "Group authorization failed."),
                     (53, "Transactional Id authorization failed.")]
