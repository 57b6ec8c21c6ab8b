"""What the broker's request path asks of the cluster: :class:`ClusterFacade`.

The broker holds one :class:`odradek.cluster.ZkCluster`; handlers and the broker's helpers
see it through this Protocol, which names exactly what they use (the view, the admin
coroutines, the controller, the ZooKeeper session for ACL writes). It states the seam between
the broker and ZooKeeper coordination: a handler that needs more of the cluster adds it here,
where a reader sees the whole surface at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from odradek.cluster.assignment import Assignment
    from odradek.cluster.broker_configs import Update
    from odradek.cluster.controller import Controller
    from odradek.cluster.model import TopicMetadata
    from odradek.cluster.view import ClusterView
    from odradek.cluster.zk import ZkSession
    from odradek.quota.entities import QuotaEntity

__all__ = ["ClusterFacade"]


class ClusterFacade(Protocol):
    @property
    def view(self) -> ClusterView:
        """The live cluster metadata (brokers, topics, controller) read from ZooKeeper."""

    @property
    def session(self) -> ZkSession:
        """The ZooKeeper session (ACL writes go through it)."""

    @property
    def controller(self) -> Controller:
        """This broker's controller candidate (``is_active`` on the one active controller)."""

    @property
    def is_controller(self) -> bool: ...

    @property
    def broker_epoch(self) -> int | None: ...

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        config: Mapping[str, str] | None = None,
        assignment: Mapping[int, Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata: ...

    async def delete_topic(self, name: str) -> None: ...

    async def create_partitions(
        self,
        name: str,
        total_count: int,
        assignment: Sequence[Sequence[int]] | Mapping[int, Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> Assignment: ...

    async def alter_topic_config(
        self, name: str, config: Mapping[str, str], validate_only: bool = False
    ) -> None: ...

    async def alter_broker_config(
        self, entity: str, update: Update, validate_only: bool = False
    ) -> dict[str, str]: ...

    async def user_config(self, name: str) -> dict[str, str]: ...

    async def alter_user_config(self, name: str, update: Update) -> dict[str, str]: ...

    async def users(self) -> list[str]: ...

    async def alter_client_quotas(
        self, entity: QuotaEntity, update: Update, validate_only: bool = False
    ) -> dict[str, str]: ...
