"""The broker readiness probe (odradek.readiness, ``odradek broker-ready``).

The decision is tested on hand-made metadata; the probe itself against real brokers: a
registered broker is ready, an unknown id and an absent broker are not, and a broker that was
stopped while its partner kept writing becomes ready again only once it is back in the ISR.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from kio.schema.errors import ErrorCode

from odradek.client import AdminClient, NewTopic, Producer
from odradek.client.connection import NodeAddress
from odradek.client.metadata import ClusterMetadata, PartitionInfo, TopicInfo
from odradek.local_cluster import free_port, wait_until
from odradek.readiness import (
    BrokerNotReady,
    broker_id_from_environment,
    check_broker_ready,
    readiness_problems,
)


def _metadata(brokers: list[int], partitions: list[tuple[str, int, int, list[int], list[int]]]
              ) -> ClusterMetadata:
    topics: dict[str, TopicInfo] = {}
    for topic, index, leader, replicas, isr in partitions:
        info = topics.setdefault(topic, TopicInfo(topic, ErrorCode.none, False, {}))
        info.partitions[index] = PartitionInfo(topic, index, leader, 0, tuple(replicas), tuple(isr))
    return ClusterMetadata({b: NodeAddress(b, "h", 9092) for b in brokers}, topics, brokers[0])


def test_a_registered_broker_in_every_isr_is_ready() -> None:
    metadata = _metadata([0, 1, 2], [("t", 0, 0, [0, 1], [0, 1]), ("t", 1, 2, [2, 0], [2, 0]),
                                     ("u", 0, 1, [1, 2], [1])])
    assert readiness_problems(0, metadata) == []


def test_an_unregistered_broker_is_not_ready() -> None:
    problems = readiness_problems(3, _metadata([0, 1], []))
    assert problems == ["broker 3 is not registered (live brokers: [0, 1])"]


def test_a_replica_outside_the_isr_is_not_ready_and_the_message_names_the_partitions() -> None:
    partitions = [("t", i, 1, [1, 0], [1]) for i in range(7)]
    (problem,) = readiness_problems(0, _metadata([0, 1], partitions), limit=3)
    assert problem == ("broker 0 is not in the ISR of 7 partition(s): t-0, t-1, t-2 and 4 more")


def test_a_partition_without_a_leader_does_not_block_readiness() -> None:
    assert readiness_problems(0, _metadata([0], [("t", 0, -1, [1, 0], [1])])) == []


@pytest.mark.parametrize(("env", "expected"), [
    ({"HOSTNAME": "odradek-2"}, 2),
    ({"HOSTNAME": "my-cluster-broker-11"}, 11),
    ({"HOSTNAME": "odradek-2", "BROKER_ID": "7"}, 7),
])
def test_the_broker_id_comes_from_broker_id_or_the_statefulset_ordinal(
        env: dict[str, str], expected: int) -> None:
    assert broker_id_from_environment(env) == expected


@pytest.mark.parametrize("env", [{"HOSTNAME": "laptop"}, {"BROKER_ID": "x", "HOSTNAME": "a-1"}])
def test_an_underivable_broker_id_is_a_clear_error(env: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="BROKER_ID"):
        broker_id_from_environment(env)


def _probe(bootstrap: str, broker_id: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "odradek", "broker-ready", "--bootstrap-server",
                           bootstrap, "--broker-id", str(broker_id), "--timeout", "5"],
                          capture_output=True, text=True, timeout=60)


def test_the_probe_passes_for_a_running_broker_and_fails_for_an_unknown_id(broker) -> None:
    ok = _probe(broker.bootstrap, 0)
    assert ok.returncode == 0, ok.stderr
    assert "broker 0 ready" in ok.stdout
    unknown = _probe(broker.bootstrap, 5)
    assert unknown.returncode == 1
    assert "not ready: broker 5 is not registered" in unknown.stderr


def test_the_probe_fails_in_one_line_when_no_broker_answers() -> None:
    result = _probe(f"127.0.0.1:{free_port()}", 0)
    assert result.returncode == 1
    assert result.stderr.startswith("not ready: broker at 127.0.0.1:")
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_restarted_broker_is_ready_only_once_back_in_the_isr(cluster_factory) -> None:
    cluster = cluster_factory(2, replica_lag_time_max_ms="2000",
                              offsets_topic_replication_factor="2")
    admin = AdminClient(cluster.bootstrap)
    try:
        admin.create_topics([NewTopic("probed", 2, 2)])
    finally:
        admin.close()
    follower = cluster.brokers[1]
    follower.stop()
    with Producer(cluster.brokers[0].bootstrap, acks=1) as producer:
        for n in range(2000):
            producer.send("probed", f"record-{n}".encode())
        producer.flush()

    def shrunk() -> bool:
        try:
            asyncio.run(check_broker_ready(cluster.brokers[0].bootstrap, 1, 5))
        except BrokerNotReady as exc:
            return "not registered" in str(exc)
        return False

    wait_until(shrunk, 30, "broker 1 to leave the live set", interval=0.2)
    follower.start()

    def ready() -> bool:
        try:
            asyncio.run(check_broker_ready(follower.bootstrap, 1, 5))
        except BrokerNotReady:
            return False
        return True

    wait_until(ready, 60, "broker 1 to be ready again", interval=0.2)
    metadata = asyncio.run(_describe(follower.bootstrap))
    isr = {p.isr for t in metadata.topics.values() if t.name == "probed"
           for p in t.partitions.values()}
    assert isr and all(1 in members for members in isr), f"ready but not in every ISR: {isr}"


async def _describe(bootstrap: str) -> ClusterMetadata:
    from odradek.client.admin import AsyncAdminClient

    async with AsyncAdminClient(bootstrap) as admin:
        return await admin.describe_cluster()
