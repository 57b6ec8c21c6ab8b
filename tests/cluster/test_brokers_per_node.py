"""One broker per core: four brokers on two emulated nodes (``LocalCluster(nodes=2)``, what
``odradek cluster --nodes 2`` and ``make run NODES=2`` start) place every partition's replicas
on distinct nodes, so losing a machine loses one replica of each partition, never two."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from odradek.client.admin import AsyncAdminClient, NewTopic
from odradek.local_cluster import LocalCluster, ZooKeeperProcess, free_port


def test_replicas_of_a_partition_never_share_an_emulated_node(
        zookeeper: ZooKeeperProcess, tmp_path: Path) -> None:
    cluster = LocalCluster(4, tmp_path, external_zookeeper=zookeeper.connect,
                           chroot=f"/t-{uuid.uuid4().hex[:12]}",
                           ports=[free_port() for _ in range(4)], nodes=2,
                           overrides={"offsets.topic.replication.factor": "1"})
    cluster.start()
    try:
        async def placement() -> tuple[dict[int, str | None], list[tuple[int, ...]]]:
            async with AsyncAdminClient(cluster.bootstrap) as admin:
                await admin.create_topics([NewTopic("events", 12, 2)])
                metadata = await admin.describe_cluster()
                info = (await admin.describe_topics(["events"]))["events"]
                racks = {b: node.rack for b, node in metadata.brokers.items()}
                return racks, [p.replicas for p in info.partitions.values()]

        racks, replicas = asyncio.run(placement())
        assert racks == {0: "node-0", 1: "node-1", 2: "node-0", 3: "node-1"}
        assert len(replicas) == 12
        for replica_set in replicas:
            assert {racks[b] for b in replica_set} == {"node-0", "node-1"}, replica_set
    finally:
        cluster.stop()
