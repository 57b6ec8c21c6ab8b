"""Independent groups, and group administration through confluent-kafka's AdminClient
(ListGroups, DescribeGroups, DeleteGroups) and Kafka's own ``kafka-consumer-groups``."""

from __future__ import annotations

import re
import uuid

import confluent_kafka
import pytest
from confluent_kafka import ConsumerGroupState

from odradek.local_cluster import BrokerProcess, wait_until
from tests.harness.apache_kafka import ApacheKafka

from .helpers import (
    MemberFactory,
    admin,
    committed_offsets,
    create_topic,
    produce,
    wait_for_stable_assignment,
    wait_for_values,
)
from .test_offsets_durability import commit_some

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def test_two_groups_each_get_every_message_and_admin_sees_them(
    group_broker: BrokerProcess, members: MemberFactory
) -> None:
    bootstrap = group_broker.bootstrap
    partitions = 4
    topic = create_topic(bootstrap, partitions)
    first_id, second_id = (f"admin-{uuid.uuid4().hex[:8]}" for _ in range(2))
    first = [members("confluent", bootstrap, topic, first_id) for _ in range(2)]
    second = [members("confluent", bootstrap, topic, second_id)]
    wait_for_stable_assignment(first, partitions)
    wait_for_stable_assignment(second, partitions)
    expected = produce(bootstrap, topic, partitions, 10)
    wait_for_values(first, expected, 30, "the first group to consume everything")
    wait_for_values(second, expected, 30, "the second group to consume everything")

    client = admin(bootstrap)
    listed = client.list_consumer_groups(request_timeout=20).result(30)
    states = {g.group_id: g.state for g in listed.valid}
    assert states.get(first_id) == ConsumerGroupState.STABLE, states
    assert states.get(second_id) == ConsumerGroupState.STABLE, states

    described = client.describe_consumer_groups([first_id], request_timeout=20)[first_id]
    description = described.result(30)
    assert description.state == ConsumerGroupState.STABLE
    assert len(description.members) == 2
    owned = sorted(tp.partition for m in description.members
                   for tp in m.assignment.topic_partitions)
    assert owned == list(range(partitions)), "DescribeGroups assignments do not cover the topic"
    assert all(m.host.startswith("/") for m in description.members), description.members

    with pytest.raises(confluent_kafka.KafkaException, match="NON_EMPTY_GROUP"):
        client.delete_consumer_groups([first_id], request_timeout=20)[first_id].result(30)

    for member in first:
        member.stop()  # SIGTERM: the consumer leaves the group

    def empty() -> bool:
        found = client.describe_consumer_groups([first_id], request_timeout=20)[first_id]
        return bool(found.result(30).state == ConsumerGroupState.EMPTY)

    wait_until(empty, 30, "the first group to be empty after its members left")
    client.delete_consumer_groups([first_id], request_timeout=20)[first_id].result(30)
    listed = client.list_consumer_groups(request_timeout=20).result(30)
    assert first_id not in {g.group_id for g in listed.valid}
    assert set(committed_offsets(bootstrap, first_id, topic, partitions).values()) == {-1001}, (
        "a deleted group's offsets are gone"
    )
    assert set(committed_offsets(bootstrap, second_id, topic, partitions).values()) == {10}


def test_group_whose_last_offsets_are_deleted_is_no_longer_listed(
    group_broker: BrokerProcess,
) -> None:
    """OffsetDelete of an empty group's last offsets removes the group, as Kafka does:
    kafka-python deletes them, confluent-kafka's ListGroups no longer shows the group."""
    import kafka

    bootstrap = group_broker.bootstrap
    topic = create_topic(bootstrap, 2)
    group_id = f"gone-{uuid.uuid4().hex[:8]}"
    commit_some(bootstrap, group_id, topic, {0: 3, 1: 4})
    client = admin(bootstrap)

    def listed() -> set[str]:
        found = client.list_consumer_groups(request_timeout=20).result(30)
        return {g.group_id for g in found.valid}

    assert group_id in listed()
    python_admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    try:
        first = python_admin.delete_group_offsets(group_id, [kafka.TopicPartition(topic, 0)])
        assert all(e is kafka.errors.NoError for e in first.values()), first
        assert group_id in listed(), "one committed offset is left: the group stays"
        last = python_admin.delete_group_offsets(group_id, [kafka.TopicPartition(topic, 1)])
        assert all(e is kafka.errors.NoError for e in last.values()), last
    finally:
        python_admin.close()
    assert group_id not in listed(), "an empty group without offsets is removed"
    assert set(committed_offsets(bootstrap, group_id, topic, 2).values()) == {-1001}


@pytest.mark.java
def test_kafka_consumer_groups_describe_shows_lag(group_broker: BrokerProcess) -> None:
    kafka = ApacheKafka()
    if kafka.fetch_jars() is None:
        pytest.skip(f"Apache Kafka {kafka.version} is unavailable: {kafka.unavailable_reason}")
    bootstrap = group_broker.bootstrap
    topic = create_topic(bootstrap, 3)
    produce(bootstrap, topic, 3, 10)
    group_id = f"tools-{uuid.uuid4().hex[:8]}"
    commit_some(bootstrap, group_id, topic, {0: 3, 1: 7, 2: 10})

    proc = kafka.run_java_tool(CONSUMER_GROUP_COMMAND,
                               ["--bootstrap-server", bootstrap, "--describe", "--group",
                                group_id], 90)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    rows = {}
    for line in proc.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[0] == group_id and fields[1] == topic:
            rows[int(fields[2])] = (int(fields[3]), int(fields[4]), int(fields[5]))
    assert rows == {0: (3, 10, 7), 1: (7, 10, 3), 2: (10, 10, 0)}, proc.stdout

    listed = kafka.run_java_tool(CONSUMER_GROUP_COMMAND,
                                 ["--bootstrap-server", bootstrap, "--list"], 90)
    assert re.search(rf"^{re.escape(group_id)}$", listed.stdout, re.M), listed.stdout
