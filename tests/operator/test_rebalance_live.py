"""A Rebalance resource's reconcile against REAL odradek brokers (harness processes).

The handler's reconcile runs unchanged; this test plays the API server's part (status,
annotations, generation written back between turns) and the person's (the approve
annotation). A topic lives on two brokers of three; an add-brokers Rebalance proposes moves
onto the third, moves nothing before approval, throttles replication while moving, ends with
the proposed assignment, the throttles removed and every record still readable.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import kopf
from confluent_kafka import Producer
from odradek_operator.decisions.rebalance_phase import ANNOTATION
from odradek_operator.handlers import rebalance

from odradek.client.admin import RESOURCE_BROKER, RESOURCE_TOPIC, AsyncAdminClient, NewTopic
from odradek.client.metadata import TopicPartition
from tests.harness import wait_until


class Resource:
    """What the API server keeps of one Rebalance between reconciles."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.raw: dict[str, Any] = {"metadata": {"name": "grow", "generation": 1,
                                                 "annotations": {}},
                                    "spec": spec, "status": {}}

    def reconcile(self) -> Any:
        body = kopf.Body(self.raw)  # type: ignore[arg-type]  # a plain dict is a raw body
        result = asyncio.run(rebalance._reconcile(body, "default", "grow"))
        self.raw["status"].update(result.status)
        self.raw["status"]["observedGeneration"] = self.raw["metadata"]["generation"]
        for key, value in result.annotations.items():
            if value is None:
                self.raw["metadata"]["annotations"].pop(key, None)
            else:
                self.raw["metadata"]["annotations"][key] = value
        return result

    @property
    def state(self) -> str:
        return str(self.raw["status"].get("state"))


async def _assignment(bootstrap: str) -> dict[tuple[str, int], tuple[int, ...]]:
    async with AsyncAdminClient(bootstrap) as admin:
        info = (await admin.describe_topics(["events"]))["events"]
        return {("events", p.partition): p.replicas for p in info.partitions.values()}


async def _configs(bootstrap: str, resource: int, name: str, keys: list[str]
                   ) -> dict[str, str | None]:
    async with AsyncAdminClient(bootstrap) as admin:
        entries = await admin.describe_configs(resource, name, keys)
        return {k: e.value for k, e in entries.items() if e.source != "DEFAULT_CONFIG"}


def test_an_approved_add_brokers_rebalance_moves_throttled_and_loses_nothing(cluster_factory):
    cluster = cluster_factory(3, offsets_topic_replication_factor="1")
    bootstrap = cluster.bootstrap

    async def create() -> list[int]:
        async with AsyncAdminClient(bootstrap) as admin:
            brokers = sorted((await admin.describe_cluster()).brokers)
            old = brokers[:2]
            await admin.create_topics([NewTopic("events", replica_assignment={
                p: [old[p % 2], old[(p + 1) % 2]] for p in range(6)})])
            return brokers

    brokers = asyncio.run(create())
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(3000):
        producer.produce("events", value=b"x" * 200, key=str(i).encode(), partition=i % 6)
    assert producer.flush(30) == 0

    resource = Resource({"clusterRef": {"bootstrapServers": bootstrap}, "mode": "add-brokers",
                         "brokers": [brokers[2]], "replicationThrottle": 50_000_000})
    resource.reconcile()
    proposal = resource.raw["status"]["proposal"]
    assert resource.state == "ProposalReady", resource.raw["status"]
    assert proposal["partitionsToMove"] >= 3 and proposal["dataToMoveBytes"] > 0
    assert all(brokers[2] in m["to"] and brokers[2] not in m["from"] for m in proposal["moves"])
    assert proposal["before"]["replicasPerBroker"] == {"min": 0, "max": 6}
    time.sleep(1)
    resource.reconcile()  # no approval yet: nothing moves
    assert resource.state == "ProposalReady"
    assert all(brokers[2] not in r for r in asyncio.run(_assignment(bootstrap)).values())

    resource.raw["metadata"]["annotations"][ANNOTATION] = "approve"
    started = resource.reconcile()
    assert ANNOTATION not in resource.raw["metadata"]["annotations"]
    assert resource.state == "Rebalancing", resource.raw["status"]
    assert started.requeue_after == rebalance.POLL_INTERVAL_S
    rates = asyncio.run(_configs(bootstrap, RESOURCE_BROKER, str(brokers[2]),
                                 ["leader.replication.throttled.rate",
                                  "follower.replication.throttled.rate"]))
    assert set(rates.values()) == {"50000000"}, rates

    deadline = time.monotonic() + 90
    while resource.state == "Rebalancing" and time.monotonic() < deadline:
        time.sleep(1)
        resource.reconcile()
    assert resource.state == "Ready", resource.raw["status"]
    expected = {(m["topic"], m["partition"]): tuple(m["to"]) for m in proposal["moves"]}
    wait_until(lambda: all(asyncio.run(_assignment(bootstrap))[tp] == r
                           for tp, r in expected.items()), 30, "the proposed assignment")
    # The throttles were deleted through one broker; the others learn it from ZooKeeper's
    # config-change notification, so a read through any broker converges, not at once.
    wait_until(lambda: not any(asyncio.run(_configs(bootstrap, RESOURCE_TOPIC, "events", [
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas"])).values()), 20, "topic throttles removed")
    wait_until(lambda: not any(asyncio.run(_configs(bootstrap, RESOURCE_BROKER, str(brokers[2]), [
        "leader.replication.throttled.rate"])).values()), 20, "broker throttle removed")

    async def end_offsets() -> int:
        async with AsyncAdminClient(bootstrap) as admin:
            ends = await admin.list_offsets({TopicPartition("events", p): -1 for p in range(6)})
            return sum(end.offset for end in ends.values() if end is not None)

    assert asyncio.run(end_offsets()) == 3000

    resource.raw["metadata"]["annotations"][ANNOTATION] = "refresh"
    resource.reconcile()
    assert resource.state == "ProposalReady"
    assert resource.raw["status"]["proposal"]["partitionsToMove"] == 0
