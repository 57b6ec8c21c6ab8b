"""Typed, frozen sections of the broker configuration: each component takes exactly its own.

:data:`odradek.config_keys.BROKER_CONFIGS` stays the one source of names, types, defaults and
docs; a section only lists which properties it holds (:func:`setting` names the property,
and the field's default is the table's). ``BrokerSections.from_config(config)`` cuts one
:class:`~odradek.config.BrokerConfig` into all of them.

Sections are values, built for live updates: a configuration change (dynamic broker
configs) builds a new ``BrokerConfig`` and new sections, and a component that applies a
change live is handed its new section whole — nothing is mutated in place, and
``old != new`` tells whether a component is concerned at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Self

from odradek.config_keys import BROKER_CONFIGS
from odradek.config_security import parse_protocol_map
from odradek.config_types import ConfigError, Listener

__all__ = [
    "BrokerSections",
    "ControlledShutdownConfig",
    "ControllerConfig",
    "GroupCoordinatorConfig",
    "LogManagerConfig",
    "MetricsConfig",
    "NetworkConfig",
    "PropertySource",
    "QuotaConfig",
    "ReplicationConfig",
    "Section",
    "SecurityConfig",
    "TopicCreationConfig",
    "TransactionCoordinatorConfig",
    "ZooKeeperConfig",
    "setting",
]


class PropertySource(Protocol):
    """What sections are cut from: :class:`odradek.config.BrokerConfig` (named by a Protocol
    here because that class validates itself on these sections: no import cycle, not even
    for type checking)."""

    listener_configs: Mapping[str, Mapping[str, str]]

    def __getitem__(self, key: str, /) -> Any: ...
    def for_listener(self, listener: str, /) -> PropertySource: ...
    @property
    def log_dirs(self) -> list[Path]: ...
    @property
    def advertised_listeners(self) -> list[Listener]: ...


def setting(name: str, convert: Callable[[Any], Any] | None = None) -> Any:
    """A section field read from broker property ``name`` (optionally converted, e.g.
    minutes to milliseconds); its default is the property's default in the table."""
    default = BROKER_CONFIGS[name].default
    return field(default=_frozen(default if convert is None else convert(default)),
                 metadata={"config": name, "convert": convert})


MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


def migration_policy(value: str) -> str:
    """``group.consumer.migration.policy``, case-insensitive as Kafka's
    ``ConsumerGroupMigrationPolicy.parse``: which online conversions between classic and
    consumer groups are allowed."""
    policy = value.strip().lower()
    if policy not in MIGRATION_POLICIES:
        raise ConfigError(f"invalid value {value!r} for group.consumer.migration.policy: "
                          f"expected one of {', '.join(MIGRATION_POLICIES)}")
    return policy


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class Section:
    """Base of the typed sections: :meth:`from_config` reads every :func:`setting` field;
    a subclass adds derived fields (computed from several properties) in :meth:`derived`."""

    __slots__ = ()

    @classmethod
    def from_config(cls, config: PropertySource) -> Self:
        values = dict(cls.derived(config))
        for item in dataclasses.fields(cls):  # type: ignore[arg-type]
            name = item.metadata.get("config")
            if name is None:
                continue
            value = config[name]
            convert = item.metadata["convert"]
            values[item.name] = _frozen(value if convert is None else convert(value))
        return cls(**values)

    @classmethod
    def derived(cls, config: PropertySource) -> Mapping[str, Any]:
        return {}


@dataclass(frozen=True, slots=True)
class LogManagerConfig(Section):
    """Storage: where logs live and the background work on them (``LogManager``)."""

    log_dirs: tuple[Path, ...] = (Path(BROKER_CONFIGS["log.dir"].default),)
    retention_check_interval_ms: int = setting("log.retention.check.interval.ms")
    recovery_point_checkpoint_interval_ms: int = setting(
        "log.flush.offset.checkpoint.interval.ms")
    high_watermark_checkpoint_interval_ms: int = setting(
        "replica.high.watermark.checkpoint.interval.ms")
    cleaner_enable: bool = setting("log.cleaner.enable")
    cleaner_backoff_ms: int = setting("log.cleaner.backoff.ms")
    cleaner_dedupe_buffer_size: int = setting("log.cleaner.dedupe.buffer.size")
    producer_id_expiration_ms: int = setting("producer.id.expiration.ms")
    producer_id_expiration_check_interval_ms: int = setting(
        "producer.id.expiration.check.interval.ms")
    # Not broker properties: the cadence of odradek's own background checks. (Kafka's
    # log.flush.scheduler.interval.ms only feeds topics' flush.ms default here.)
    flush_check_interval_ms: int = 1000
    log_start_checkpoint_interval_ms: int = 60000
    file_delete_check_interval_ms: int = 1000

    @classmethod
    def derived(cls, config: PropertySource) -> Mapping[str, Any]:
        return {"log_dirs": tuple(config.log_dirs)}


@dataclass(frozen=True, slots=True)
class ReplicationConfig(Section):
    """Leaders' ISR rules, followers' fetchers and the replication throttles' windows."""

    replica_lag_time_max_ms: int = setting("replica.lag.time.max.ms")
    replica_fetch_wait_max_ms: int = setting("replica.fetch.wait.max.ms")
    replica_fetch_min_bytes: int = setting("replica.fetch.min.bytes")
    replica_fetch_max_bytes: int = setting("replica.fetch.max.bytes")
    replica_fetch_response_max_bytes: int = setting("replica.fetch.response.max.bytes")
    replica_fetch_backoff_ms: int = setting("replica.fetch.backoff.ms")
    replica_socket_timeout_ms: int = setting("replica.socket.timeout.ms")
    num_replica_fetchers: int = setting("num.replica.fetchers")
    max_incremental_fetch_session_cache_slots: int = setting(
        "max.incremental.fetch.session.cache.slots")
    replication_quota_window_num: int = setting("replication.quota.window.num")
    replication_quota_window_size_seconds: int = setting(
        "replication.quota.window.size.seconds")


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig(Section):
    """Consumer groups and their offsets (``__consumer_offsets``)."""

    min_session_timeout_ms: int = setting("group.min.session.timeout.ms")
    max_session_timeout_ms: int = setting("group.max.session.timeout.ms")
    initial_rebalance_delay_ms: int = setting("group.initial.rebalance.delay.ms")
    max_group_size: int = setting("group.max.size")
    consumer_session_timeout_ms: int = setting("group.consumer.session.timeout.ms")
    consumer_heartbeat_interval_ms: int = setting("group.consumer.heartbeat.interval.ms")
    consumer_max_size: int = setting("group.consumer.max.size")
    consumer_assignors: tuple[str, ...] = setting("group.consumer.assignors", tuple)
    consumer_migration_policy: str = setting("group.consumer.migration.policy",
                                             migration_policy)
    offsets_topic_num_partitions: int = setting("offsets.topic.num.partitions")
    offsets_topic_replication_factor: int = setting("offsets.topic.replication.factor")
    offsets_topic_segment_bytes: int = setting("offsets.topic.segment.bytes")
    offsets_retention_ms: int = setting("offsets.retention.minutes", lambda m: m * 60_000)
    offsets_retention_check_interval_ms: int = setting("offsets.retention.check.interval.ms")
    offset_metadata_max_bytes: int = setting("offset.metadata.max.bytes")
    offset_commit_timeout_ms: int = setting("offsets.commit.timeout.ms")
    # Not configurable in Kafka either (GroupCoordinator.NewMemberJoinTimeoutMs): a member
    # that joined without a member id and vanished must not hold up rebalances forever.
    new_member_join_timeout_ms: int = 300_000


@dataclass(frozen=True, slots=True)
class TransactionCoordinatorConfig(Section):
    """Transactions and their log (``__transaction_state``)."""

    state_log_num_partitions: int = setting("transaction.state.log.num.partitions")
    state_log_replication_factor: int = setting("transaction.state.log.replication.factor")
    state_log_min_isr: int = setting("transaction.state.log.min.isr")
    state_log_segment_bytes: int = setting("transaction.state.log.segment.bytes")
    max_timeout_ms: int = setting("transaction.max.timeout.ms")
    abort_timed_out_cleanup_interval_ms: int = setting(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms")
    transactional_id_expiration_ms: int = setting("transactional.id.expiration.ms")
    remove_expired_cleanup_interval_ms: int = setting(
        "transaction.remove.expired.transaction.cleanup.interval.ms")


@dataclass(frozen=True, slots=True)
class ZooKeeperConfig(Section):
    connect: str = setting("zookeeper.connect")
    session_timeout_ms: int = setting("zookeeper.session.timeout.ms")
    connection_timeout_ms: int = setting("zookeeper.connection.timeout.ms")


@dataclass(frozen=True, slots=True)
class ControllerConfig(Section):
    """What the controller decides with (elections, preferred-leader rebalancing)."""

    unclean_leader_election_enable: bool = setting("unclean.leader.election.enable")
    auto_leader_rebalance_enable: bool = setting("auto.leader.rebalance.enable")
    leader_imbalance_check_interval_s: float = setting(
        "leader.imbalance.check.interval.seconds", float)
    leader_imbalance_per_broker_percentage: int = setting(
        "leader.imbalance.per.broker.percentage")
    fast_failover_enable: bool = setting("controller.fast.failover.enable")


@dataclass(frozen=True, slots=True)
class ControlledShutdownConfig(Section):
    enable: bool = setting("controlled.shutdown.enable")
    max_retries: int = setting("controlled.shutdown.max.retries")
    retry_backoff_ms: int = setting("controlled.shutdown.retry.backoff.ms")


@dataclass(frozen=True, slots=True)
class NetworkConfig(Section):
    """Listeners, sockets and request limits."""

    listeners: tuple[Listener, ...] = setting("listeners")
    # The default listener's host is an address, so it is advertised as it is.
    advertised_listeners: tuple[Listener, ...] = tuple(BROKER_CONFIGS["listeners"].default)
    inter_broker_listener_name: str | None = setting("inter.broker.listener.name")
    security_inter_broker_protocol: str | None = setting("security.inter.broker.protocol")
    socket_request_max_bytes: int = setting("socket.request.max.bytes")
    socket_send_buffer_bytes: int = setting("socket.send.buffer.bytes")
    socket_receive_buffer_bytes: int = setting("socket.receive.buffer.bytes")
    connections_max_idle_ms: int = setting("connections.max.idle.ms")
    request_timeout_ms: int = setting("request.timeout.ms")

    @classmethod
    def derived(cls, config: PropertySource) -> Mapping[str, Any]:
        return {"advertised_listeners": tuple(config.advertised_listeners)}

    @property
    def inter_broker_listener(self) -> str:
        """The listener other brokers reach us on (default: the first one)."""
        return (self.inter_broker_listener_name or self.security_inter_broker_protocol
                or self.listeners[0].name)


@dataclass(frozen=True, slots=True)
class SecurityConfig(Section):
    """Listeners' security protocols, TLS material and SASL (docs/security.md)."""

    # listener.security.protocol.map as {LISTENER: PROTOCOL}
    protocol_map: Mapping[str, str] = field(default_factory=lambda: parse_protocol_map(
        BROKER_CONFIGS["listener.security.protocol.map"].default))
    ssl_keystore_type: str = setting("ssl.keystore.type")
    ssl_keystore_location: str | None = setting("ssl.keystore.location")
    ssl_keystore_password: str | None = setting("ssl.keystore.password")
    ssl_key_password: str | None = setting("ssl.key.password")
    ssl_keystore_certificate_chain: str | None = setting("ssl.keystore.certificate.chain")
    ssl_keystore_key: str | None = setting("ssl.keystore.key")
    ssl_truststore_type: str = setting("ssl.truststore.type")
    ssl_truststore_location: str | None = setting("ssl.truststore.location")
    ssl_truststore_certificates: str | None = setting("ssl.truststore.certificates")
    ssl_client_auth: str = setting("ssl.client.auth")
    ssl_endpoint_identification_algorithm: str = setting("ssl.endpoint.identification.algorithm")
    sasl_enabled_mechanisms: tuple[str, ...] = setting("sasl.enabled.mechanisms")
    sasl_mechanism_inter_broker_protocol: str = setting("sasl.mechanism.inter.broker.protocol")
    sasl_jaas_config: str | None = setting("sasl.jaas.config")
    failed_authentication_delay_ms: int = setting("connection.failed.authentication.delay.ms")
    sasl_server_max_receive_size: int = setting("sasl.server.max.receive.size")
    connections_max_reauth_ms: int = setting("connections.max.reauth.ms")
    authorizer_class_name: str = setting("authorizer.class.name")
    super_users: str = setting("super.users")
    allow_everyone_if_no_acl_found: bool = setting("allow.everyone.if.no.acl.found")
    # The listeners with listener.name.<listener>.* configs: their own settings, whole
    # (odradek.listener_overrides); of_listener picks.
    listeners: Mapping[str, SecurityConfig] = field(default_factory=dict)

    @classmethod
    def derived(cls, config: PropertySource) -> Mapping[str, Any]:
        return {
            "protocol_map": parse_protocol_map(config["listener.security.protocol.map"]),
            "listeners": {listener: cls.from_config(config.for_listener(listener))
                          for listener in config.listener_configs},
        }

    def of_listener(self, listener: str) -> SecurityConfig:
        """The settings ``listener`` sees: its own where it has them."""
        return self.listeners.get(listener.upper(), self)

    def protocol_of(self, listener: str) -> str:
        """The security protocol of ``listener`` (validated to exist by the config)."""
        return self.protocol_map.get(listener.upper(), "PLAINTEXT")

    def tls_properties(self) -> dict[str, str | None]:
        """The TLS settings by Kafka's names (what :class:`odradek.security.tls.TlsSettings`
        reads, from a broker section or a client's properties alike)."""
        return {
            "ssl.keystore.location": self.ssl_keystore_location,
            "ssl.keystore.password": self.ssl_keystore_password,
            "ssl.key.password": self.ssl_key_password,
            "ssl.keystore.certificate.chain": self.ssl_keystore_certificate_chain,
            "ssl.keystore.key": self.ssl_keystore_key,
            "ssl.truststore.location": self.ssl_truststore_location,
            "ssl.truststore.certificates": self.ssl_truststore_certificates,
            "ssl.client.auth": self.ssl_client_auth,
            "ssl.endpoint.identification.algorithm":
                self.ssl_endpoint_identification_algorithm,
        }


@dataclass(frozen=True, slots=True)
class QuotaConfig(Section):
    """How client quotas measure a rate (``odradek.quota``)."""

    window_num: int = setting("quota.window.num")
    window_size_seconds: int = setting("quota.window.size.seconds")


@dataclass(frozen=True, slots=True)
class TopicCreationConfig(Section):
    """Defaults and switches for creating and deleting topics (admin requests, Metadata
    auto-creation)."""

    num_partitions: int = setting("num.partitions")
    default_replication_factor: int = setting("default.replication.factor")
    auto_create_topics_enable: bool = setting("auto.create.topics.enable")
    delete_topic_enable: bool = setting("delete.topic.enable")
    transaction_state_log_num_partitions: int = setting("transaction.state.log.num.partitions")


@dataclass(frozen=True, slots=True)
class MetricsConfig(Section):
    """The ``/metrics`` endpoint and the caps on series users can multiply."""

    port: int = setting("metrics.port")
    host: str = "127.0.0.1"
    topic_labels_enable: bool = setting("metrics.topic.labels.enable")
    topic_labels_max: int = setting("metrics.topic.labels.max")
    consumer_lag_series_max: int = setting("metrics.consumer.lag.series.max")
    consumer_groups_max: int = setting("metrics.consumer.groups.max")
    consumer_lag_timestamp_reads_max: int = setting("metrics.consumer.lag.timestamp.reads.max")
    lag_end_offsets_timeout_ms: int = setting("metrics.consumer.lag.end.offsets.timeout.ms")
    lag_end_offsets_refresh_ms: int = setting("metrics.consumer.lag.end.offsets.refresh.ms")
    lag_end_offsets_max_age_ms: int = setting("metrics.consumer.lag.end.offsets.max.age.ms")

    @classmethod
    def derived(cls, config: PropertySource) -> Mapping[str, Any]:
        # Served where the first listener is bound: loopback in the dev cluster, every
        # interface in a pod (an empty host means all interfaces, as for listeners).
        listeners = config["listeners"]
        host = listeners[0].host if listeners else "127.0.0.1"
        return {"host": host or "0.0.0.0"}


@dataclass(frozen=True, slots=True)
class BrokerSections:
    """One configuration, cut into the sections the broker's components take."""

    log: LogManagerConfig = LogManagerConfig()
    replication: ReplicationConfig = ReplicationConfig()
    group_coordinator: GroupCoordinatorConfig = GroupCoordinatorConfig()
    transactions: TransactionCoordinatorConfig = TransactionCoordinatorConfig()
    zookeeper: ZooKeeperConfig = ZooKeeperConfig()
    controller: ControllerConfig = ControllerConfig()
    controlled_shutdown: ControlledShutdownConfig = ControlledShutdownConfig()
    network: NetworkConfig = NetworkConfig()
    topics: TopicCreationConfig = TopicCreationConfig()
    metrics: MetricsConfig = MetricsConfig()
    security: SecurityConfig = SecurityConfig()
    quotas: QuotaConfig = QuotaConfig()

    def security_of(self, listener: str) -> SecurityConfig:
        """The security settings of ``listener``: its own where it has them."""
        return self.security.of_listener(listener)

    @classmethod
    def from_config(cls, config: PropertySource) -> BrokerSections:
        return cls(
            log=LogManagerConfig.from_config(config),
            replication=ReplicationConfig.from_config(config),
            group_coordinator=GroupCoordinatorConfig.from_config(config),
            transactions=TransactionCoordinatorConfig.from_config(config),
            zookeeper=ZooKeeperConfig.from_config(config),
            controller=ControllerConfig.from_config(config),
            controlled_shutdown=ControlledShutdownConfig.from_config(config),
            network=NetworkConfig.from_config(config),
            topics=TopicCreationConfig.from_config(config),
            metrics=MetricsConfig.from_config(config),
            security=SecurityConfig.from_config(config),
            quotas=QuotaConfig.from_config(config),
        )
