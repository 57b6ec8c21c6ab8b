"""ZkCluster: the one object a broker holds to take part in a ZooKeeper-coordinated cluster.

It owns one ZooKeeper session and composes the parts that share it::

    cluster = ZkCluster("localhost:2181/odradek", broker_id=1)
    await cluster.start()                       # session, top-level znodes, cluster id, view
    await cluster.register_broker(BrokerInfo(1, "localhost", 9092))
    cluster.view.topics["orders"].partitions[0].leader
    await cluster.create_topic("orders", 3, 1, {})
    await cluster.stop()                        # session closed: our ephemerals vanish

Every broker runs a controller candidate; exactly one is active cluster-wide
(``cluster.is_controller``). Admin calls may run on any broker.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from odradek.cluster.assignment import Assignment
from odradek.cluster.controller import Controller
from odradek.cluster.isr import IsrWriter
from odradek.cluster.model import BrokerInfo, TopicMetadata
from odradek.cluster.producer_ids import DEFAULT_BLOCK_SIZE, allocate_producer_id_block
from odradek.cluster.registry import BrokerRegistry
from odradek.cluster.topics import ConfigValidator, TopicAdmin
from odradek.cluster.view import ClusterView
from odradek.cluster.zk import ZkSession


class ZkCluster:
    def __init__(
        self,
        connect: str,
        broker_id: int,
        *,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
        unclean_leader_election: bool = False,
        validate_config: ConfigValidator | None = None,
        controller_enabled: bool = True,
        auto_leader_rebalance: bool = False,
        leader_imbalance_check_interval_s: float = 300.0,
        leader_imbalance_percentage: int = 10,
        rng: random.Random | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.session = ZkSession(
            connect,
            session_timeout_ms=session_timeout_ms,
            connection_timeout_ms=connection_timeout_ms,
        )
        self.registry = BrokerRegistry(self.session, broker_id)
        self.view = ClusterView(self.session)
        self.isr = IsrWriter(self.session)  # leaders' conditional ISR updates
        self.admin = TopicAdmin(self.session, validate_config=validate_config, rng=rng)
        self.controller = Controller(
            self.session,
            broker_id,
            unclean_leader_election=unclean_leader_election,
            auto_leader_rebalance=auto_leader_rebalance,
            leader_imbalance_check_interval_s=leader_imbalance_check_interval_s,
            leader_imbalance_percentage=leader_imbalance_percentage,
        )
        self._controller_enabled = controller_enabled
        self.cluster_id = ""

    @property
    def is_controller(self) -> bool:
        return self.controller.is_active

    @property
    def broker_epoch(self) -> int | None:
        return self.registry.broker_epoch

    async def start(self) -> None:
        """Connect (raises ZooKeeperUnavailable), create Kafka's layout, load the view and
        join the controller election."""
        await self.session.start()
        await self.registry.ensure_layout()
        self.cluster_id = await self.registry.ensure_cluster_id()
        await self.view.start()
        if self._controller_enabled:
            await self.controller.start()

    async def register_broker(self, info: BrokerInfo) -> int:
        """Announce this broker as alive (raises BrokerIdInUse); returns the broker epoch."""
        return await self.registry.register(info)

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        config: Mapping[str, str] | None = None,
        assignment: Mapping[int, Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata:
        """Write the topic; partitions have no leader until the controller elects one
        (``await cluster.view.wait_for(...)`` to see it)."""
        return await self.admin.create_topic(
            name, num_partitions, replication_factor, config, assignment, validate_only
        )

    async def delete_topic(self, name: str) -> None:
        await self.admin.delete_topic(name)

    async def create_partitions(
        self,
        name: str,
        total_count: int,
        assignment: Sequence[Sequence[int]] | Mapping[int, Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> Assignment:
        return await self.admin.create_partitions(name, total_count, assignment, validate_only)

    async def alter_topic_config(
        self, name: str, config: Mapping[str, str], validate_only: bool = False
    ) -> None:
        await self.admin.alter_topic_config(name, config, validate_only)

    async def allocate_producer_id_block(self, block_size: int = DEFAULT_BLOCK_SIZE) -> range:
        return await allocate_producer_id_block(self.session, self.broker_id, block_size)

    async def stop(self) -> None:
        """Leave the cluster: stop watching and close the session (ephemerals vanish)."""
        await self.controller.stop()
        await self.view.stop()
        await self.session.stop()
