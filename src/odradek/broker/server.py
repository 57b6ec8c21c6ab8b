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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Any

from odradek.coordinator import GroupCoordinator, GroupCoordinatorConfig
from odradek.coordinator.partitioning import CONSUMER_OFFSETS_TOPIC
from odradek.protocol.framing import DEFAULT_MAX_FRAME_BYTES

from .connection import Connection
from .context import BrokerServices
from .dispatch import handler_table
from .offsets_log import ReplicatedOffsetsLog
from .producer_ids import ProducerIdManager
from .reconfigure import DynamicBrokerConfig, standard_reconfigurables
from .replica_manager import ReplicaManager
from .replication_config import ReplicationConfig
from .socket_channel import SocketChannel

__all__ = ["Broker"]

log = logging.getLogger(__name__)

_SHUTDOWN_GRACE_S = 5.0
_VISIBLE_TIMEOUT_S = 30.0
_LISTEN_BACKLOG = 1024


class Broker:
    def __init__(self, config: Any, *, cluster: Any = None, log_manager: Any = None) -> None:
        self.config = config
        self.broker_id = int(config["broker.id"])
        self._cluster = cluster
        self._log_manager = log_manager
        self._listen_sockets: list[tuple[str, socket.socket]] = []
        self._accept_tasks: list[asyncio.Task[None]] = []
        self._connections: dict[asyncio.Task[None], Connection] = {}
        self._services: BrokerServices | None = None
        self._dynamic = DynamicBrokerConfig(config, self.broker_id)
        self._stopped = asyncio.Event()
        self.bound_ports: dict[str, int] = {}

    # Lifecycle ---------------------------------------------------------------------------
    @property
    def bound_port(self) -> int:
        """Port of the first listener (what tests connect to)."""
        return next(iter(self.bound_ports.values()))

    @property
    def bootstrap(self) -> str:
        host = self.config.advertised_listeners[0].host
        return f"{host}:{self.bound_port}"

    @property
    def services(self) -> BrokerServices:
        assert self._services is not None, "broker not started"
        return self._services

    async def start(self) -> None:
        config = self.config
        if self._log_manager is None:
            from odradek.storage.log_manager import LogManager

            self._log_manager = LogManager(
                config.log_dirs,
                config.log_config(),
                log_retention_check_interval_ms=int(config["log.retention.check.interval.ms"]),
                log_flush_offset_checkpoint_interval_ms=int(
                    config["log.flush.offset.checkpoint.interval.ms"]
                ),
                replica_high_watermark_checkpoint_interval_ms=int(
                    config["replica.high.watermark.checkpoint.interval.ms"]
                ),
                log_cleaner_enable=bool(config["log.cleaner.enable"]),
                log_cleaner_backoff_ms=int(config["log.cleaner.backoff.ms"]),
                log_cleaner_dedupe_buffer_size=int(config["log.cleaner.dedupe.buffer.size"]),
            )
        if self._cluster is None:
            from odradek.cluster import ZkCluster

            self._cluster = ZkCluster(
                config["zookeeper.connect"],
                self.broker_id,
                session_timeout_ms=int(config["zookeeper.session.timeout.ms"]),
                connection_timeout_ms=int(config["zookeeper.connection.timeout.ms"]),
                unclean_leader_election=bool(config["unclean.leader.election.enable"]),
                auto_leader_rebalance=bool(config["auto.leader.rebalance.enable"]),
                leader_imbalance_check_interval_s=float(
                    config["leader.imbalance.check.interval.seconds"]
                ),
                leader_imbalance_percentage=int(config["leader.imbalance.per.broker.percentage"]),
                fast_failover=bool(config["controller.fast.failover.enable"]),
                validate_config=config.log_config,
            )
        cluster = self._cluster
        await cluster.start()
        from .stray_logs import delete_stray_logs

        delete_stray_logs(self._log_manager, cluster.view.topics, self.broker_id)
        replica_manager = ReplicaManager(
            self.broker_id, self._log_manager, self._log_config_for,
            replication=ReplicationConfig.from_broker_config(config),
            isr_writer=getattr(cluster, "isr", None),
            broker_address=self._broker_address,
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
        )
        # Dynamic broker configs (/config/brokers): this broker first, then what applies them.
        self._dynamic.add_listener(self)
        for reconfigurable in standard_reconfigurables(self._log_manager, replica_manager,
                                                       cluster):
            self._dynamic.add_listener(reconfigurable)
        self._dynamic.follow(cluster.view.snapshot)
        cluster.view.add_listener(self._on_cluster_change)
        self._apply_view()
        self._bind()
        await cluster.register_broker(self._broker_info())
        await self._wait_until_visible()
        handlers = handler_table()
        for name, sock in self._listen_sockets:
            self._accept_tasks.append(
                asyncio.create_task(self._accept_loop(name, sock, handlers), name=f"accept {name}")
            )
        log.info("broker %d serving on %s", self.broker_id,
                 ", ".join(f"{n}:{p}" for n, p in self.bound_ports.items()))

    async def _wait_until_visible(self) -> None:
        """Serve only once our own view lists this broker (and, briefly, a controller).

        A Metadata answer without brokers or controller makes librdkafka's admin client
        wait for its whole timeout, so the first answer must already be complete.
        """
        view = self._cluster.view
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
        for task in self._accept_tasks:
            task.cancel()
        for _name, sock in self._listen_sockets:
            sock.close()
        for connection in self._connections.values():
            connection.stop_reading()
        if self._services is not None:
            self._services.replica_manager.fetch_purgatory.expire_all()
            self._services.replica_manager.produce_purgatory.expire_all()
            if self._services.group_coordinator is not None:
                # Answers parked JoinGroup/SyncGroup (NOT_COORDINATOR) so they do not hold
                # the shutdown grace period; members find the next coordinator.
                await self._services.group_coordinator.close()
        if self._connections:
            _done, pending = await asyncio.wait(
                list(self._connections), timeout=_SHUTDOWN_GRACE_S
            )
            for task in pending:
                task.cancel()
        if self._services is not None:
            self._services.producer_ids.close()
            self._cluster.view.remove_listener(self._on_cluster_change)
            await self._services.replica_manager.shutdown()
        if self._log_manager is not None:
            self._log_manager.shutdown()
        if self._cluster is not None:
            await self._cluster.stop()
        log.info("broker %d stopped", self.broker_id)

    async def _controlled_shutdown(self) -> None:
        """Hand leadership to other replicas while we still answer (clients follow the
        NOT_LEADER_OR_FOLLOWER hints), then stop following so no leader re-adds us to an
        ISR we are about to leave."""
        config = self.config
        if self._services is None or not bool(config["controlled.shutdown.enable"]):
            return
        from .controlled_shutdown import request_controlled_shutdown

        listener = config["inter.broker.listener.name"] or config["listeners"][0].name
        await request_controlled_shutdown(
            self._cluster, self.broker_id, listener,
            max_retries=int(config["controlled.shutdown.max.retries"]),
            backoff_s=int(config["controlled.shutdown.retry.backoff.ms"]) / 1000,
            timeout_s=int(config["request.timeout.ms"]) / 1000,
        )
        self._cluster.view.remove_listener(self._on_cluster_change)
        fetchers = getattr(self._services.replica_manager, "fetchers", None)
        if fetchers is not None:
            await fetchers.shutdown()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    # Network -----------------------------------------------------------------------------
    def _bind(self) -> None:
        for listener in self.config["listeners"]:
            host = listener.host or "0.0.0.0"
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._set_buffer_sizes(sock)
            sock.bind((host, listener.port))
            sock.listen(_LISTEN_BACKLOG)
            sock.setblocking(False)
            self._listen_sockets.append((listener.name, sock))
            self.bound_ports[listener.name] = sock.getsockname()[1]

    def _set_buffer_sizes(self, sock: socket.socket) -> None:
        send = int(self.config["socket.send.buffer.bytes"])
        receive = int(self.config["socket.receive.buffer.bytes"])
        if send > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send)
        if receive > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive)

    def _broker_info(self) -> Any:
        from odradek.cluster import BrokerInfo, Endpoint

        endpoints = []
        for listener in self.config.advertised_listeners:
            port = listener.port or self.bound_ports.get(listener.name, listener.port)
            endpoints.append(Endpoint(listener.name, listener.host, port))
        first = endpoints[0]
        return BrokerInfo(self.broker_id, first.host, first.port,
                          self.config["broker.rack"], tuple(endpoints))

    async def _accept_loop(self, name: str, server: socket.socket, handlers: Any) -> None:
        loop = asyncio.get_running_loop()
        max_frame = int(self.config["socket.request.max.bytes"] or DEFAULT_MAX_FRAME_BYTES)
        while True:
            try:
                sock, _address = await loop.sock_accept(server)
            except OSError as exc:
                if self._stopped.is_set():
                    return
                log.warning("accept on %s failed: %s", name, exc)
                await asyncio.sleep(0.1)  # e.g. EMFILE: back off instead of spinning
                continue
            channel = SocketChannel(sock)
            connection = Connection(
                channel, self.services, handlers, listener=name, peer=channel.peer,
                max_frame_bytes=max_frame,
            )
            task = asyncio.create_task(connection.run(), name=f"conn {channel.peer}")
            self._connections[task] = connection
            task.add_done_callback(self._connection_done)

    def _connection_done(self, task: asyncio.Task[None]) -> None:
        self._connections.pop(task, None)
        if not task.cancelled() and task.exception() is not None:
            log.error("connection task failed", exc_info=task.exception())

    # Cluster -----------------------------------------------------------------------------
    def _start_group_coordinator(self, replica_manager: ReplicaManager) -> GroupCoordinator:
        config = GroupCoordinatorConfig.from_broker_config(self.config)
        coordinator = GroupCoordinator(
            config,
            ReplicatedOffsetsLog(
                replica_manager, commit_timeout_ms=config.offset_commit_timeout_ms
            ),
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

    def _log_config_for(self, topic: str) -> Any:
        metadata = self._cluster.view.topics.get(topic)
        overrides = dict(metadata.config) if metadata is not None else {}
        try:
            return self.config.log_config(overrides)
        except Exception:
            log.exception("topic %s has invalid config overrides; using broker defaults", topic)
            return self.config.log_config()

    def _broker_address(self, broker_id: int) -> tuple[str, int] | None:
        """Where a follower reaches ``broker_id`` (its first advertised endpoint)."""
        info = self._cluster.view.brokers.get(broker_id)
        return (info.host, int(info.port)) if info is not None else None

    def reconfigure(self, config: Any, changed: frozenset[str]) -> None:
        """The effective config changed (dynamic broker configs): read from now on."""
        self.config = config
        if self._services is not None:
            self._services.config = config

    def _on_cluster_change(self, change: Any) -> None:
        if getattr(change, "broker_configs", None):
            self._dynamic.follow(self._cluster.view.snapshot)
        self._apply_view()
        replica_manager = self.services.replica_manager
        for topic in getattr(change, "configs", ()):
            with contextlib.suppress(Exception):
                replica_manager.update_topic_config(topic)

    def _apply_view(self) -> None:
        try:
            self.services.replica_manager.apply_cluster_view(self._cluster.view.topics)
        except Exception:
            log.exception("applying the cluster view failed")
