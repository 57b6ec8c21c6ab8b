"""Committed offsets live in ``__consumer_offsets`` and survive the coordinator's death.

With one broker (RF=1) the coordinator restarts and reloads the offsets partition from its
log. With three brokers (RF=3) the coordinator is SIGKILLed and a follower that becomes
leader of the offsets partition must already hold every acknowledged commit.
"""

from __future__ import annotations

import uuid

import confluent_kafka

from odradek.coordinator.partitioning import partition_for_group
from odradek.local_cluster import BrokerProcess, wait_until
from tests.harness.fixtures import ClusterFactory
from tests.harness.kafka import located

from .helpers import FAST_GROUPS, committed_offsets, create_topic, produce


def commit_some(bootstrap: str, group_id: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit ``offsets`` as a group consumer would, after consuming up to them."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group_id,
                                         "enable.auto.commit": False})
    try:
        result = consumer.commit(
            offsets=[confluent_kafka.TopicPartition(topic, p, o) for p, o in offsets.items()],
            asynchronous=False)
        assert result is not None and all(tp.error is None for tp in result), result
    finally:
        consumer.close()


def resume_positions(bootstrap: str, group_id: str, topic: str, partitions: int,
                     expected: int) -> dict[int, int]:
    """Subscribe in ``group_id`` and return the first offset consumed on each partition."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": group_id, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
    })
    first: dict[int, int] = {}
    consumer.subscribe([topic])
    try:
        def all_partitions_seen() -> bool:
            for message in consumer.consume(100, 0.5):
                if message.error() is None:
                    first.setdefault(*located(message))
            return len(first) == expected

        wait_until(all_partitions_seen, 60, "the restarted group to consume every partition",
                   interval=0)
    finally:
        consumer.close()
    return first


def test_offsets_survive_a_coordinator_restart(group_broker: BrokerProcess) -> None:
    bootstrap = group_broker.bootstrap
    partitions = 3
    topic = create_topic(bootstrap, partitions)
    produce(bootstrap, topic, partitions, 10)
    group_id = f"restart-{uuid.uuid4().hex[:8]}"
    wanted = {0: 3, 1: 7, 2: 10}
    commit_some(bootstrap, group_id, topic, {0: 3, 1: 7})
    commit_some(bootstrap, group_id, topic, {2: 10})
    assert committed_offsets(bootstrap, group_id, topic, partitions) == wanted

    group_broker.stop()
    group_broker.start()
    group_broker.wait_ready(60)

    assert committed_offsets(bootstrap, group_id, topic, partitions) == wanted
    produce(bootstrap, topic, partitions, 1, tag="late")
    assert resume_positions(bootstrap, group_id, topic, partitions, partitions) == wanted


def test_offsets_survive_kill_9_of_the_coordinator_with_rf3(
    cluster_factory: ClusterFactory,
) -> None:
    # A short ZooKeeper session: the controller notices the SIGKILLed broker sooner.
    cluster = cluster_factory(3, offsets_topic_replication_factor="3",
                              default_replication_factor="3", min_insync_replicas="2",
                              zookeeper_session_timeout_ms="6000", **FAST_GROUPS)
    bootstrap = cluster.bootstrap
    partitions = 3
    topic = create_topic(bootstrap, partitions, replication=3)
    produce(bootstrap, topic, partitions, 10)
    group_id = f"kill9-{uuid.uuid4().hex[:8]}"
    wanted = {0: 4, 1: 5, 2: 6}
    commit_some(bootstrap, group_id, topic, wanted)

    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": bootstrap})
    offsets_partition = partition_for_group(group_id, int(FAST_GROUPS[
        "offsets_topic_num_partitions"]))
    metadata = admin.list_topics("__consumer_offsets", timeout=10)
    coordinator = metadata.topics["__consumer_offsets"].partitions[offsets_partition].leader
    cluster.brokers[coordinator].kill()
    survivors = ",".join(b.bootstrap for b in cluster.brokers if b.running)

    assert committed_offsets(survivors, group_id, topic, partitions) == wanted
    assert resume_positions(survivors, group_id, topic, partitions, partitions) == wanted
