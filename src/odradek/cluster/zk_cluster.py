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

With ``controller.fast.failover.enable`` (the ``controller`` section's
``fast_failover_enable``), failures of processes are acted on before ZooKeeper notices them
(:mod:`odradek.cluster.liveness`): the controller fails a broker whose connections are
refused, and every other broker deposes a controller whose connections are refused, so
that a killed controller is replaced as quickly as a killed broker.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kazoo.exceptions import KazooException

from odradek.cluster.assignment import Assignment
from odradek.cluster.broker_configs import Update, alter_broker_config
from odradek.cluster.client_quotas import alter_client_quotas
from odradek.cluster.controller import Controller
from odradek.cluster.controller.candidacy import depose_dead_controller
from odradek.cluster.isr import IsrWriter
from odradek.cluster.liveness import ConnectionProbes, ProbeTarget
from odradek.cluster.model import BrokerInfo, TopicMetadata
from odradek.cluster.producer_ids import DEFAULT_BLOCK_SIZE, allocate_producer_id_block
from odradek.cluster.registry import BrokerRegistry
from odradek.cluster.topics import ConfigValidator, TopicAdmin
from odradek.cluster.user_credentials import alter_user_config, list_users, read_user_config
from odradek.cluster.view import ClusterView
from odradek.cluster.zk import ZkSession
from odradek.config_sections import ControllerConfig
from odradek.quota.entities import QuotaEntity

log = logging.getLogger(__name__)

STANDALONE_CONTROLLER = ControllerConfig(fast_failover_enable=False)
"""The controller settings of a ZkCluster built without a broker's: Kafka's defaults, but
no fast failover, which probes the brokers' listeners and so needs brokers that serve the
endpoints they register (a broker passes its own ``controller`` section)."""


class ZkCluster:
    def __init__(
        self,
        connect: str,
        broker_id: int,
        *,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
        controller: ControllerConfig = STANDALONE_CONTROLLER,
        validate_config: ConfigValidator | None = None,
        controller_enabled: bool = True,
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
        self.controller = Controller(self.session, broker_id, controller)
        self._controller_enabled = controller_enabled
        self.cluster_id = ""
        # Probes the controller while another broker holds the role.
        self._controller_probe: ConnectionProbes | None = None
        self._deposing: set[asyncio.Task[Any]] = set()
        if controller.fast_failover_enable and controller_enabled:
            self._controller_probe = ConnectionProbes(self._on_controller_dead)
            self.view.add_listener(self._follow_controller)
            self.controller.add_listener(self._follow_controller)

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

    async def alter_broker_config(
        self, entity: str, update: Update, validate_only: bool = False
    ) -> dict[str, str]:
        """Rewrite the dynamic configs of ``entity`` (a broker id or ``<default>``) as
        ``update(current)``; conditional on what was read, retried on a concurrent write."""
        return await self.session.call(
            alter_broker_config, self.session.client, entity, update, validate_only
        )

    async def user_config(self, name: str) -> dict[str, str]:
        """``/config/users/<name>`` (SCRAM credentials; empty if none)."""
        return await self.session.call(read_user_config, self.session.client, name)

    async def alter_user_config(
        self, name: str, update: Callable[[Mapping[str, str]], Mapping[str, str]]
    ) -> dict[str, str]:
        return await self.session.call(alter_user_config, self.session.client, name, update)

    async def users(self) -> list[str]:
        """Users with a ``/config/users`` znode."""
        return await self.session.call(list_users, self.session.client)

    async def alter_client_quotas(
        self, entity: QuotaEntity, update: Update, validate_only: bool = False
    ) -> dict[str, str]:
        """Rewrite the stored config of a quota entity as ``update(current)``, like
        :meth:`alter_broker_config` (:mod:`odradek.cluster.client_quotas`)."""
        return await self.session.call(
            alter_client_quotas, self.session.client, entity, update, validate_only
        )

    async def allocate_producer_id_block(self, block_size: int = DEFAULT_BLOCK_SIZE) -> range:
        return await allocate_producer_id_block(self.session, self.broker_id, block_size)

    async def resign_controller(self) -> None:
        """Leave the controller election now (resigning if active), ahead of :meth:`stop`:
        a stopping broker hands the role over while it still serves."""
        await self.controller.stop()

    async def stop(self) -> None:
        """Leave the cluster: stop watching and close the session (ephemerals vanish)."""
        if self._controller_probe is not None:
            await self._controller_probe.close()
        for task in list(self._deposing):
            task.cancel()
        await self.controller.stop()
        await self.view.stop()
        await self.session.stop()

    # -- the controller's liveness, seen from the other brokers -------------------------------

    def _follow_controller(self, _change: object = None) -> None:
        probes = self._controller_probe
        if probes is None:
            return
        snapshot = self.view.snapshot
        controller_id = snapshot.controller_id
        info = snapshot.brokers.get(controller_id) if controller_id is not None else None
        epoch = snapshot.broker_epochs.get(controller_id) if controller_id is not None else None
        if (
            self.controller.is_active
            or controller_id is None
            or controller_id == self.broker_id
            or info is None
            or epoch is None
        ):
            probes.update(())
            return
        probes.update([ProbeTarget(controller_id, epoch, info.host, info.port)])

    def _on_controller_dead(self, target: ProbeTarget) -> None:
        task = asyncio.create_task(self._depose(target), name="depose dead controller")
        self._deposing.add(task)
        task.add_done_callback(self._deposing.discard)

    async def _depose(self, target: ProbeTarget) -> None:
        try:
            await self.session.call(
                depose_dead_controller, self.session.client, target.broker_id, target.epoch
            )
        except KazooException as exc:  # the session timeout remains the fallback
            log.warning("could not depose dead controller %d: %r", target.broker_id, exc)
