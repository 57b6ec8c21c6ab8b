"""The broker process in one object: listeners, connections, and the parts they share.

``Broker.start()`` opens the logs, joins the cluster (ZooKeeper session, view, controller
candidacy), binds every listener, registers the broker under ``/brokers/ids`` with its
advertised endpoints, and starts accepting. ``Broker.stop()`` is the clean shutdown:
stop accepting, let connections answer what they already read (delayed operations are
completed early), close the logs, then leave the cluster (our ephemeral znode vanishes).

Leadership follows the cluster view: every view change is applied to the replica manager,
which opens logs for partitions this broker now leads and stops serving those it no longer
does. The group coordinator listens to the replica manager: leading a ``__consumer_offsets``
partition means coordinating its groups (loaded from the log), losing it means dropping them.

Every broker owns one :class:`~odradek.metrics.BrokerMetrics` (``broker.metrics``, also what
tests read in-process); it serves ``/metrics`` on ``metrics.port`` from the start of
:meth:`Broker.start` to the end of :meth:`Broker.stop`, and reads the broker's state through
the adapters in :mod:`.metrics_sources` when scraped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import TYPE_CHECKING

from odradek.config import BrokerConfig
from odradek.config_sections import BrokerSections
from odradek.config_security import authorizer_enabled
from odradek.coordinator import GroupCoordinator
from odradek.coordinator.partitioning import CONSUMER_OFFSETS_TOPIC
from odradek.metrics import BrokerMetrics, MetricsOptions
from odradek.quota import QuotaManager, parse_stored
from odradek.replication import ReplicaManager
from odradek.storage.log_config import LogConfig
from odradek.types import BrokerId

from .authorizer import Authorizer
from .context import BrokerServices
from .dispatch import handler_table
from .inter_broker import inter_broker_endpoint, inter_broker_security
from .listeners import Listeners
from .metrics_sources import (
    BrokerLogOffsets,
    ClusterController,
    CoordinatorGroups,
    ReplicaPartitions,
    StorageObserver,
)
from .offsets_log import ReplicatedOffsetsLog
from .producer_ids import ProducerIdManager
from .reconfigure import ConfigUpdate, DynamicBrokerConfig, standard_reconfigurables
from .remote_offsets import RemoteLogOffsets

if TYPE_CHECKING:
    from odradek.cluster import BrokerInfo, ZkCluster
    from odradek.cluster.acls import AclCache
    from odradek.cluster.view import ClusterChange
    from odradek.storage import LogManager

    from .txn_marker_writer import ClusterMarkerWriter

__all__ = ["Broker"]

log = logging.getLogger(__name__)

_SHUTDOWN_GRACE_S = 5.0
_VISIBLE_TIMEOUT_S = 30.0


class Broker:
    def __init__(
        self, config: BrokerConfig, *, cluster: ZkCluster | None = None,
        log_manager: LogManager | None = None,
    ) -> None:
        self.config = config
        self.broker_id = BrokerId(config.broker_id)
        self._dynamic = DynamicBrokerConfig(config, self.broker_id)
        self.sections: BrokerSections = self._dynamic.sections
        self._cluster = cluster
        self._log_manager = log_manager
        self._services: BrokerServices | None = None
        self._remote_offsets: RemoteLogOffsets | None = None
        self._stopped = asyncio.Event()
        self._marker_writer: ClusterMarkerWriter | None = None  # once started
        self._acl_cache: AclCache | None = None  # with an authorizer
        self.metrics = BrokerMetrics(MetricsOptions.from_section(self.sections.metrics))
        self.listeners = Listeners(lambda: self.sections, self.metrics, self._user_config)
        self._inter_broker_security = inter_broker_security(self.sections)
        self.quotas = QuotaManager(self.sections.quotas.window_num,
                                   self.sections.quotas.window_size_seconds)

    # Lifecycle ---------------------------------------------------------------------------
    @property
    def bound_ports(self) -> dict[str, int]:
        """Listener name -> the port it is bound to (known once started)."""
        return self.listeners.bound_ports

    @property
    def bound_port(self) -> int:
        """Port of the first listener (what tests connect to)."""
        return next(iter(self.bound_ports.values()))

    @property
    def bootstrap(self) -> str:
        host = self.sections.network.advertised_listeners[0].host
        return f"{host}:{self.bound_port}"

    @property
    def cluster(self) -> ZkCluster:
        """The cluster this broker joined (from the start of :meth:`start`)."""
        assert self._cluster is not None, "broker not started"
        return self._cluster

    @property
    def services(self) -> BrokerServices:
        assert self._services is not None, "broker not started"
        return self._services

    @property
    def metrics_url(self) -> str | None:
        """``http://host:port/metrics`` while the endpoint is served (``metrics.port`` > 0)."""
        port = self.metrics.port
        if port is None:
            return None
        host = self.sections.metrics.host
        if host in ("0.0.0.0", "::"):
            host = self.sections.network.advertised_listeners[0].host
        return f"http://{host}:{port}/metrics"

    async def start(self) -> None:
        config, sections = self.config, self.sections
        metrics = self.metrics
        metrics.start()
        if self._log_manager is None:
            # no cycle: hoist when issue 23 reworks this module
            from odradek.storage.log_manager import LogManager

            self._log_manager = LogManager(sections.log,
                                           LogConfig.for_topic(config.topic_defaults()),
                                           observer=StorageObserver(metrics))
        if self._cluster is None:
            # no cycle: hoist when issue 23 reworks this module
            from odradek.cluster import ZkCluster

            zookeeper = sections.zookeeper
            self._cluster = ZkCluster(
                zookeeper.connect,
                self.broker_id,
                session_timeout_ms=zookeeper.session_timeout_ms,
                connection_timeout_ms=zookeeper.connection_timeout_ms,
                controller=sections.controller,
                validate_config=functools.partial(LogConfig.for_topic, config.topic_defaults()),
            )
        cluster = self._cluster
        self._observe_cluster(cluster)
        await cluster.start()
        metrics.describe(cluster_id=getattr(cluster, "cluster_id", None) or None,
                         rack=config.rack)
        # no cycle: hoist when issue 23 reworks this module
        from .stray_logs import delete_stray_logs

        delete_stray_logs(self._log_manager, cluster.view.topics, self.broker_id)
        replica_manager = ReplicaManager(
            self.broker_id, self._log_manager, self._log_config_for, sections.replication,
            isr_writer=getattr(cluster, "isr", None),
            broker_address=self._broker_address,
            metrics=metrics,
            security=self._inter_broker_security,
        )
        await replica_manager.start()
        self._services = BrokerServices(
            broker_id=self.broker_id,
            config=config,
            cluster=cluster,
            replica_manager=replica_manager,
            producer_ids=ProducerIdManager(cluster.allocate_producer_id_block),
            log_manager=self._log_manager,
            group_coordinator=self._start_group_coordinator(replica_manager),
            dynamic_config=self._dynamic,
            metrics=metrics,
            quotas=self.quotas,
            authorizer=await self._start_authorizer(cluster),
        )
        # no cycle: hoist when issue 23 reworks this module
        from .txn_coordination import start_transaction_coordinator

        transaction_coordinator, self._marker_writer = start_transaction_coordinator(
            self._services, self._stopped, self._inter_broker_security)
        self._services.attach_transaction_coordinator(transaction_coordinator)
        self._attach_metrics()
        # Dynamic broker configs (/config/brokers): this broker first, then what applies them.
        self._dynamic.add_listener(self)
        for reconfigurable in standard_reconfigurables(self._log_manager, replica_manager,
                                                       cluster):
            self._dynamic.add_listener(reconfigurable)
        self._dynamic.follow(cluster.view.snapshot)
        self._apply_quotas()
        cluster.view.add_listener(self._on_cluster_change)
        self._apply_view()
        self.listeners.bind()
        await cluster.register_broker(self._broker_info())
        await self._wait_until_visible()
        self.listeners.start(self.services, handler_table())
        log.info("broker %d serving on %s", self.broker_id,
                 ", ".join(f"{n}:{p}" for n, p in self.bound_ports.items()))

    async def _start_authorizer(self, cluster: ZkCluster) -> Authorizer | None:
        """With ``authorizer.class.name``: the ACL cache, filled before the first request."""
        security = self.sections.security
        if not authorizer_enabled(security.authorizer_class_name):
            return None
        # the authorizer's modules only with authorizer.class.name
        from odradek.cluster.acls import AclCache

        self._acl_cache = acl_cache = AclCache(cluster.session)
        await acl_cache.start()
        return Authorizer(security, acl_cache, self.metrics)


    async def _wait_until_visible(self) -> None:
        """Serve only once our own view lists this broker (and, briefly, a controller).

        A Metadata answer without brokers or controller makes librdkafka's admin client
        wait for its whole timeout, so the first answer must already be complete.
        """
        view = self.cluster.view
        await view.wait_for(lambda snapshot: self.broker_id in snapshot.brokers,
                            _VISIBLE_TIMEOUT_S)
        with contextlib.suppress(TimeoutError):
            await view.wait_for(lambda snapshot: snapshot.controller_id is not None,
                                _VISIBLE_TIMEOUT_S)

    async def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        log.info("broker %d shutting down", self.broker_id)
        await self._controlled_shutdown()
        if self._cluster is not None:  # hand the controller role over while still serving
            await self._cluster.resign_controller()
        self.listeners.stop_accepting()
        if self._services is not None:
            self._services.replica_manager.complete_delayed_now()
            # Answers parked JoinGroup/SyncGroup (NOT_COORDINATOR) so they do not hold
            # the shutdown grace period; members find the next coordinator.
            await self._services.group_coordinator.close()
            if self._marker_writer is not None:  # the transaction coordinator started
                await self._services.transaction_coordinator.close()
                await self._marker_writer.close()
        await self.listeners.close_connections(_SHUTDOWN_GRACE_S)
        if self._services is not None:
            self._services.producer_ids.close()
            self.cluster.view.remove_listener(self._on_cluster_change)
            await self._services.replica_manager.shutdown()
        if self._log_manager is not None:
            self._log_manager.shutdown()
        if self._remote_offsets is not None:
            await self._remote_offsets.close()
        if self._acl_cache is not None:
            await self._acl_cache.stop()
        if self._cluster is not None:
            await self._cluster.stop()
        await self.metrics.stop()
        log.info("broker %d stopped", self.broker_id)

    async def _controlled_shutdown(self) -> None:
        """Hand leadership to other replicas while we still answer (clients follow the
        NOT_LEADER_OR_FOLLOWER hints), then stop following so no leader re-adds us to an
        ISR we are about to leave."""
        settings, network = self.sections.controlled_shutdown, self.sections.network
        if self._services is None or not settings.enable:
            return
        # no cycle: hoist when issue 23 reworks this module
        from .controlled_shutdown import request_controlled_shutdown

        await request_controlled_shutdown(
            self.cluster, self.broker_id, network.inter_broker_listener,
            max_retries=settings.max_retries,
            backoff_s=settings.retry_backoff_ms / 1000,
            timeout_s=network.request_timeout_ms / 1000,
            security=self._inter_broker_security,
        )
        self.cluster.view.remove_listener(self._on_cluster_change)
        fetchers = getattr(self._services.replica_manager, "fetchers", None)
        if fetchers is not None:
            await fetchers.shutdown()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    # Network -----------------------------------------------------------------------------
    def _broker_info(self) -> BrokerInfo:
        # no cycle: hoist when issue 23 reworks this module
        from odradek.cluster import BrokerInfo, Endpoint

        endpoints = []
        security = self.sections.security
        for listener in self.sections.network.advertised_listeners:
            port = listener.port or self.bound_ports.get(listener.name, listener.port)
            endpoints.append(Endpoint(listener.name, listener.host, port,
                                      security.protocol_of(listener.name)))
        first = endpoints[0]
        return BrokerInfo(self.broker_id, first.host, first.port,
                          self.config.rack, tuple(endpoints))

    async def _user_config(self, user: str) -> dict[str, str]:
        """A user's ``/config/users`` entry (SCRAM credentials) for SASL logins."""
        return await self.cluster.user_config(user)

    # Metrics -----------------------------------------------------------------------------
    def _observe_cluster(self, cluster: ZkCluster) -> None:
        """Record ZooKeeper session state and latency and controller events (when the
        cluster is the ZooKeeper one; tests may inject another)."""
        session = getattr(cluster, "session", None)
        zookeeper = self.metrics.zookeeper
        if session is not None and hasattr(session, "on_request"):
            # no cycle: hoist when issue 23 reworks this module
            from odradek.cluster.zk import SessionEvent

            states = {SessionEvent.NEW_SESSION: "connected", SessionEvent.RECONNECTED:
                      "connected", SessionEvent.SUSPENDED: "suspended",
                      SessionEvent.EXPIRED: "lost"}
            session.on_request = zookeeper.request
            session.add_listener(lambda event: zookeeper.state_changed(states[event]))
        controller = getattr(cluster, "controller", None)
        if controller is not None and hasattr(controller, "pending_events"):
            recorder = self.metrics.controller
            controller.context.on_leader_change = recorder.leader_elected
            controller.on_event_taken = recorder.event_dequeued
            controller.add_listener(
                lambda: recorder.activated() if controller.is_active else None)

    def _attach_metrics(self) -> None:
        services = self.services
        partitions = ReplicaPartitions(services.replica_manager)
        controller = None
        if hasattr(getattr(self._cluster, "controller", None), "pending_events"):
            controller = ClusterController(self.cluster)
        options = self.metrics.options
        self._remote_offsets = RemoteLogOffsets(
            self.broker_id, self._leader_of, self._broker_address,
            timeout=options.end_offsets_timeout_ms / 1000,
            interval=options.end_offsets_refresh_ms / 1000,
            max_age=options.end_offsets_max_age_ms / 1000,
            security=self._inter_broker_security)
        logs = BrokerLogOffsets(services.replica_manager, self._remote_offsets)
        self.metrics.attach(
            partitions=partitions, purgatory=partitions, controller=controller,
            quotas=self.quotas, transactions=services.transaction_coordinator,
            groups=CoordinatorGroups(services.group_coordinator),
            logs=logs, log_dirs=[str(d) for d in self.sections.log.log_dirs],
        )

    def _leader_of(self, key: tuple[str, int]) -> int | None:
        """A partition's leader in the cluster view (consumer lag of partitions led elsewhere)."""
        topic = self.cluster.view.topics.get(key[0])
        state = topic.partitions.get(key[1]) if topic is not None else None
        return int(state.leader) if state is not None else None

    # Cluster -----------------------------------------------------------------------------
    def _start_group_coordinator(self, replica_manager: ReplicaManager) -> GroupCoordinator:
        config = self.sections.group_coordinator
        view = self.cluster.view
        coordinator = GroupCoordinator(
            config,
            ReplicatedOffsetsLog(
                replica_manager, commit_timeout_ms=config.offset_commit_timeout_ms
            ),
            topic_ids=lambda: {name: t.topic_id for name, t in view.topics.items()},
            partition_counts=lambda: {name: len(t.partitions) for name, t in view.topics.items()},
        )

        def on_leadership(topic: str, partition: int, is_leader: bool) -> None:
            if topic != CONSUMER_OFFSETS_TOPIC or self._stopped.is_set():
                return  # once stopping, the coordinator is closed: load nothing new
            if is_leader:
                coordinator.on_become_leader(partition)
            else:
                coordinator.on_resign(partition)

        replica_manager.add_leadership_listener(on_leadership)
        coordinator.start()
        return coordinator

    def _log_config_for(self, topic: str) -> LogConfig:
        metadata = self.cluster.view.topics.get(topic)
        overrides = dict(metadata.config) if metadata is not None else {}
        try:
            return LogConfig.for_topic(self.config.topic_defaults(), overrides)
        except Exception:
            log.exception("topic %s has invalid config overrides; using broker defaults", topic)
            return LogConfig.for_topic(self.config.topic_defaults())

    def _broker_address(self, broker_id: int) -> tuple[str, int] | None:
        """Where a follower reaches ``broker_id``: its endpoint on the inter-broker listener
        (else its first advertised one)."""
        info = self.cluster.view.brokers.get(broker_id)
        if info is None:
            return None
        return inter_broker_endpoint(info, self.sections.network.inter_broker_listener)

    def reconfigure(self, update: ConfigUpdate) -> None:
        """The effective config changed (dynamic broker configs): the broker and its
        handlers read the new config and sections from now on; the components that apply
        a section live get theirs from :func:`standard_reconfigurables`."""
        self.config, self.sections = update.config, update.sections
        if self._services is not None:
            self._services.use_config(update.config, update.sections)

    def _on_cluster_change(self, change: ClusterChange) -> None:
        if getattr(change, "broker_configs", None):
            self._dynamic.follow(self.cluster.view.snapshot)
        if getattr(change, "client_quotas", False):
            self._apply_quotas()
        self._apply_view()
        replica_manager = self.services.replica_manager
        for topic in getattr(change, "configs", ()):
            with contextlib.suppress(Exception):
                replica_manager.update_topic_config(topic)

    def _apply_quotas(self) -> None:
        """Client quotas from ZooKeeper, live (/config/users, /config/clients)."""
        stored = getattr(self.cluster.view.snapshot, "client_quotas", {})
        self.quotas.configure(parse_stored(stored))

    def _apply_view(self) -> None:
        try:
            self.services.replica_manager.apply_cluster_view(self.cluster.view.topics)
        except Exception:
            log.exception("applying the cluster view failed")
