"""Typed, validated views of the resources' ``spec`` (DESIGN.md §4).

The API server already enforces the CRD schema and fills its defaults; these parsers repeat
the defaults (an object written before a default existed has none) and check what a schema
cannot express, raising :class:`~.errors.InvalidSpec` with a message a person can act on.
Everything here is pure: dict in, frozen dataclass out.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .decisions.rebalance import DEFAULT_GOALS, Goal, Mode
from .errors import InvalidSpec
from .listener_spec import check_external_listeners
from .security_spec import (
    Authentication,
    Listener,
    TlsSpec,
    parse_authentication,
    parse_listeners,
    parse_tls,
    uses_sasl,
    uses_tls,
)

__all__ = [
    "OPERATOR_OWNED_BROKER_KEYS",
    "BrokerClusterSpec",
    "ClusterRef",
    "ConsumerGroupSpec",
    "ManagedZooKeeper",
    "RebalanceSpec",
    "ResetSpec",
    "TopicSpec",
    "UserAcl",
    "UserSpec",
    "config_values",
]

#: Broker keys the operator derives per pod or per cluster; a user value would break the pod
#: (the security ones follow spec.listeners, spec.tls and spec.authentication).
OPERATOR_OWNED_BROKER_KEYS = frozenset({
    "broker.id", "listeners", "advertised.listeners", "log.dirs", "zookeeper.connect",
    "listener.security.protocol.map", "inter.broker.listener.name", "ssl.keystore.location",
    "ssl.truststore.location", "ssl.client.auth", "sasl.enabled.mechanisms",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config",
})
RESET_STRATEGIES = ("earliest", "latest", "timestamp", "offset", "shiftBy")


def config_values(raw: Mapping[str, Any] | None, what: str) -> dict[str, str]:
    """A config map with every value as Kafka's string form (``true``, ``604800000``)."""
    out: dict[str, str] = {}
    for key, value in (raw or {}).items():
        if isinstance(value, bool):
            out[str(key)] = "true" if value else "false"
        elif isinstance(value, int | float | str):
            out[str(key)] = str(value)
        else:
            raise InvalidSpec(f"{what}.{key}: expected a string or number, got {value!r}")
    return out


def _int(raw: Mapping[str, Any], key: str, default: int | None, what: str, *,
         minimum: int | None = None) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSpec(f"{what}.{key} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise InvalidSpec(f"{what}.{key} must be at least {minimum}, got {value}")
    return value


@dataclass(frozen=True)
class ClusterRef:
    """Where a Topic or ConsumerGroup lives: a BrokerCluster in the same namespace, or any
    Kafka-protocol cluster by its bootstrap servers."""

    name: str | None = None
    bootstrap_servers: str | None = None

    #: The CRDs' message for a missing clusterRef (crds/topics.odradek.dev.yaml), repeated for
    #: an object the API server did not validate (written before the rule existed).
    MISSING = ("spec.clusterRef: Required value: set clusterRef.name (a BrokerCluster in this "
               "namespace) or clusterRef.bootstrapServers (host:port,...)")

    @classmethod
    def parse(cls, raw: Any) -> ClusterRef:
        if not isinstance(raw, Mapping):
            raise InvalidSpec(cls.MISSING)
        name, servers = raw.get("name"), raw.get("bootstrapServers")
        if bool(name) == bool(servers):
            raise InvalidSpec("set exactly one of spec.clusterRef.name or "
                              "spec.clusterRef.bootstrapServers")
        return cls(str(name) if name else None, str(servers) if servers else None)


ZOOKEEPER_RESOURCES: Mapping[str, Any] = {"requests": {"cpu": "100m", "memory": "256Mi"}}
"""What a managed ZooKeeper requests when the spec says nothing: without requests it would be
BestEffort, the first pod starved of CPU on a busy node, and every broker waits on it."""


@dataclass(frozen=True)
class ManagedZooKeeper:
    replicas: int = 3
    image: str = "odradek/zookeeper:0.2.0"
    storage_size: str = "1Gi"
    storage_class: str | None = None
    chroot: str | None = None
    delete_claim: bool = False
    resources: Mapping[str, Any] = field(default_factory=lambda: dict(ZOOKEEPER_RESOURCES))


@dataclass(frozen=True)
class BrokerClusterSpec:
    replicas: int
    image: str
    image_pull_policy: str
    storage_size: str
    storage_class: str | None
    delete_claim: bool
    resources: Mapping[str, Any]
    config: Mapping[str, str]
    listeners: tuple[Listener, ...]
    inter_broker_listener: str
    legacy_listeners: bool  # the single-port form (one PLAINTEXT listener, port "kafka")
    metrics_enabled: bool
    metrics_port: int
    rack_topology_key: str | None
    rebalance_on_scale_up: bool
    zookeeper_connect: str | None
    managed_zookeeper: ManagedZooKeeper | None
    tls: TlsSpec | None = None
    authentication: Authentication = field(default_factory=Authentication)

    @property
    def inter_broker(self) -> Listener:
        """The brokers' own listener: replication, the operator and the readiness probe."""
        return next(listener for listener in self.listeners
                    if listener.name == self.inter_broker_listener)

    @property
    def external_listeners(self) -> tuple[Listener, ...]:
        """The listeners clients outside the cluster reach (nodeport, loadbalancer, ingress)."""
        return tuple(item for item in self.listeners if item.external is not None)

    @property
    def port(self) -> int:
        """The port the operator (and Topic/ConsumerGroup reconciles) connect to."""
        return self.inter_broker.port

    @property
    def operator_uses_sasl(self) -> bool:
        return uses_sasl(self.inter_broker.protocol)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> BrokerClusterSpec:
        storage = raw.get("storage") or {}
        config = config_values(raw.get("config"), "spec.config")
        owned = sorted(OPERATOR_OWNED_BROKER_KEYS & set(config))
        if owned:
            raise InvalidSpec(f"spec.config sets {', '.join(owned)}: the operator sets these "
                              "per pod; remove them")
        zk = raw.get("zookeeper") or {}
        connect, managed_raw = zk.get("connect"), zk.get("managed")
        if bool(connect) == (managed_raw is not None):
            raise InvalidSpec("set exactly one of spec.zookeeper.connect or "
                              "spec.zookeeper.managed")
        managed = None
        if managed_raw is not None:
            zk_storage = managed_raw.get("storage") or {}
            zk_replicas = _int(managed_raw, "replicas", 3, "spec.zookeeper.managed", minimum=1)
            if zk_replicas % 2 == 0:
                raise InvalidSpec("spec.zookeeper.managed.replicas must be odd (1, 3 or 5): "
                                  "an even ensemble tolerates no more failures than one less")
            managed = ManagedZooKeeper(
                replicas=zk_replicas,
                image=str(managed_raw.get("image") or ManagedZooKeeper.image),
                storage_size=str(zk_storage.get("size") or "1Gi"),
                storage_class=zk_storage.get("storageClassName"),
                chroot=managed_raw.get("chroot"),
                delete_claim=bool(zk_storage.get("deleteClaim", False)),
                resources=dict(managed_raw.get("resources") or ZOOKEEPER_RESOURCES))
        metrics = raw.get("metrics") or {}
        rack = raw.get("rack")
        metrics_enabled = bool(metrics.get("enabled", True))
        metrics_port = _int(metrics, "port", 9404, "spec.metrics")
        listeners, inter, legacy = parse_listeners(raw.get("listeners"),
                                                   metrics_port if metrics_enabled else None)
        tls = parse_tls(raw.get("tls"))
        authentication = parse_authentication(raw.get("authentication"))
        tls_listeners = [item.name for item in listeners if uses_tls(item.protocol)]
        if tls is not None and not tls_listeners:
            raise InvalidSpec("spec.tls is set but no listener uses SSL or SASL_SSL: name "
                              "the listeners in spec.listeners.named")
        if tls_listeners and tls is None:
            raise InvalidSpec(f"listener(s) {', '.join(tls_listeners)} use TLS: set "
                              "spec.tls.secretName (a Secret with tls.crt and tls.key)")
        if uses_sasl(next(item.protocol for item in listeners if item.name == inter)) \
                and authentication.operator_secret is None:
            raise InvalidSpec(f"the inter-broker listener {inter} uses SASL: set "
                              "spec.authentication.operatorSecretRef (the brokers' and the "
                              "operator's user)")
        replicas = _int(raw, "replicas", 3, "spec", minimum=1)
        check_external_listeners(listeners, inter, replicas)
        if authentication.users and not any(uses_sasl(item.protocol) for item in listeners):
            raise InvalidSpec("spec.authentication.users are SASL users, but no listener "
                              "uses SASL_PLAINTEXT or SASL_SSL")
        return cls(
            replicas=replicas,
            image=str(raw.get("image") or "odradek/broker:0.2.0"),
            image_pull_policy=str(raw.get("imagePullPolicy") or "IfNotPresent"),
            storage_size=str(storage.get("size") or "10Gi"),
            storage_class=storage.get("storageClassName"),
            delete_claim=bool(storage.get("deleteClaim", False)),
            resources=dict(raw.get("resources") or {}),
            config=config,
            listeners=listeners,
            inter_broker_listener=inter,
            legacy_listeners=legacy,
            metrics_enabled=metrics_enabled,
            metrics_port=metrics_port,
            rack_topology_key=(str(rack.get("topologyKey") or "topology.kubernetes.io/zone")
                               if isinstance(rack, Mapping) else None),
            rebalance_on_scale_up=bool(raw.get("rebalanceOnScaleUp", False)),
            zookeeper_connect=str(connect) if connect else None,
            managed_zookeeper=managed,
            tls=tls,
            authentication=authentication,
        )


@dataclass(frozen=True)
class TopicSpec:
    cluster: ClusterRef
    topic_name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str]
    deletion_policy: str = "Delete"

    @classmethod
    def parse(cls, raw: Mapping[str, Any], resource_name: str) -> TopicSpec:
        policy = str(raw.get("deletionPolicy") or "Delete")
        if policy not in ("Delete", "Retain"):
            raise InvalidSpec(f"spec.deletionPolicy must be Delete or Retain, got {policy!r}")
        return cls(
            cluster=ClusterRef.parse(raw.get("clusterRef")),
            topic_name=str(raw.get("topicName") or resource_name),
            partitions=_int(raw, "partitions", None, "spec", minimum=1),
            replication_factor=_int(raw, "replicationFactor", None, "spec", minimum=1),
            config=config_values(raw.get("config"), "spec.config"),
            deletion_policy=policy,
        )


@dataclass(frozen=True)
class ResetSpec:
    id: str
    strategy: str
    topics: tuple[str, ...] = ()
    timestamp_ms: int | None = None
    offset: int | None = None
    shift_by: int | None = None
    dry_run: bool = False

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> ResetSpec:
        reset_id, strategy = raw.get("id"), raw.get("strategy")
        if not reset_id:
            raise InvalidSpec("spec.reset.id is required: a reset runs once per id")
        if strategy not in RESET_STRATEGIES:
            raise InvalidSpec(f"spec.reset.strategy must be one of {', '.join(RESET_STRATEGIES)}")
        timestamp_ms = None
        if strategy == "timestamp":
            timestamp_ms = _parse_timestamp(raw.get("timestamp"))
        offset = _int(raw, "offset", None, "spec.reset", minimum=0) \
            if strategy == "offset" else None
        shift_by = _int(raw, "shiftBy", None, "spec.reset") if strategy == "shiftBy" else None
        return cls(str(reset_id), str(strategy), tuple(raw.get("topics") or ()), timestamp_ms,
                   offset, shift_by, bool(raw.get("dryRun", False)))


def _parse_timestamp(value: Any) -> int:
    if not isinstance(value, str):
        raise InvalidSpec("spec.reset.timestamp (RFC 3339) is required for strategy timestamp")
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidSpec(f"spec.reset.timestamp {value!r} is not RFC 3339") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return int(parsed.timestamp() * 1000)


@dataclass(frozen=True)
class ConsumerGroupSpec:
    cluster: ClusterRef
    group_id: str
    topics: tuple[str, ...] = ()
    reset: ResetSpec | None = field(default=None)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], resource_name: str) -> ConsumerGroupSpec:
        reset_raw = raw.get("reset")
        return cls(
            cluster=ClusterRef.parse(raw.get("clusterRef")),
            group_id=str(raw.get("groupId") or resource_name),
            topics=tuple(raw.get("topics") or ()),
            reset=ResetSpec.parse(reset_raw) if isinstance(reset_raw, Mapping) else None,
        )


@dataclass(frozen=True)
class RebalanceSpec:
    """A Rebalance: which brokers may give or take replicas, toward which goals, and how
    fast replicas may be copied (bytes/s per broker; 0 = unthrottled)."""

    cluster: ClusterRef
    mode: str
    brokers: tuple[int, ...]
    goals: tuple[str, ...]
    replication_throttle: int

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> RebalanceSpec:
        mode = str(raw.get("mode") or Mode.FULL)
        if mode not in set(Mode):
            raise InvalidSpec(f"spec.mode must be one of {', '.join(Mode)}, got {mode!r}")
        brokers = raw.get("brokers") or []
        if not isinstance(brokers, list) or not all(
                isinstance(b, int) and not isinstance(b, bool) for b in brokers):
            raise InvalidSpec(f"spec.brokers must be a list of broker ids, got {brokers!r}")
        if (mode == Mode.FULL) == bool(brokers):
            raise InvalidSpec("spec.brokers lists the brokers to add or remove: required for "
                              "modes add-brokers and remove-brokers, not allowed for full")
        goals = tuple(str(g) for g in raw.get("goals") or DEFAULT_GOALS)
        unknown = [g for g in goals if g not in set(Goal)]
        if unknown:
            raise InvalidSpec(f"spec.goals: unknown goal(s) {', '.join(unknown)}; known: "
                              f"{', '.join(Goal)}")
        return cls(cluster=ClusterRef.parse(raw.get("clusterRef")), mode=mode,
                   brokers=tuple(sorted(set(brokers))), goals=goals,
                   replication_throttle=_int(raw, "replicationThrottle", 0, "spec", minimum=0))


SCRAM_TYPES = {"scram-sha-512": "SCRAM-SHA-512", "scram-sha-256": "SCRAM-SHA-256"}
ACL_RESOURCE_TYPES = ("topic", "group", "cluster", "transactionalId")
ACL_OPERATIONS = ("All", "Read", "Write", "Create", "Delete", "Alter", "Describe",
                  "ClusterAction", "DescribeConfigs", "AlterConfigs", "IdempotentWrite")
USER_QUOTAS = {"producerByteRate": "producer_byte_rate",
               "consumerByteRate": "consumer_byte_rate",
               "requestPercentage": "request_percentage"}


@dataclass(frozen=True)
class UserAcl:
    """One ACL rule in Kafka's terms (Strimzi's KafkaUser shape): each operation becomes a
    binding for the user's principal."""

    resource_type: str  # topic | group | cluster | transactionalId
    name: str
    pattern_type: str  # literal | prefixed
    operations: tuple[str, ...]
    host: str = "*"
    allow: bool = True


@dataclass(frozen=True)
class UserSpec:
    """A Kafka user: SCRAM credentials (password from a Secret, or generated into one), the
    ACLs of its principal ``User:<name>`` and its client quotas."""

    cluster: ClusterRef
    user_name: str
    mechanism: str | None  # None: no credentials managed (ACLs and quotas only)
    password_ref: tuple[str, str] | None  # (Secret, key); None: generated
    acls: tuple[UserAcl, ...]
    quotas: Mapping[str, float]  # Kafka's keys (producer_byte_rate, ...)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], resource_name: str) -> UserSpec:
        auth = raw.get("authentication")
        mechanism, ref = None, None
        if isinstance(auth, Mapping):
            kind = str(auth.get("type") or "scram-sha-512")
            if kind not in SCRAM_TYPES:
                raise InvalidSpec(f"spec.authentication.type must be one of "
                                  f"{', '.join(SCRAM_TYPES)}, got {kind!r}")
            mechanism = SCRAM_TYPES[kind]
            secret = ((auth.get("password") or {}).get("valueFrom") or {}).get("secretKeyRef")
            if isinstance(secret, Mapping):
                if not secret.get("name"):
                    raise InvalidSpec("spec.authentication.password.valueFrom.secretKeyRef "
                                      "needs a name")
                ref = (str(secret["name"]), str(secret.get("key") or "password"))
        acls = tuple(_user_acl(rule, f"spec.authorization.acls[{index}]")
                     for index, rule in enumerate(
                         (raw.get("authorization") or {}).get("acls") or ()))
        quotas: dict[str, float] = {}
        for key, value in (raw.get("quotas") or {}).items():
            if key not in USER_QUOTAS:
                raise InvalidSpec(f"spec.quotas.{key}: unknown quota; known: "
                                  f"{', '.join(USER_QUOTAS)}")
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise InvalidSpec(f"spec.quotas.{key} must be a non-negative number")
            quotas[USER_QUOTAS[key]] = float(value)
        return cls(cluster=ClusterRef.parse(raw.get("clusterRef")),
                   user_name=str(raw.get("userName") or resource_name), mechanism=mechanism,
                   password_ref=ref, acls=acls, quotas=quotas)


def _user_acl(raw: Any, what: str) -> UserAcl:
    if not isinstance(raw, Mapping):
        raise InvalidSpec(f"{what} must be an object")
    resource = raw.get("resource") or {}
    kind = str(resource.get("type") or "")
    if kind not in ACL_RESOURCE_TYPES:
        raise InvalidSpec(f"{what}.resource.type must be one of {', '.join(ACL_RESOURCE_TYPES)}")
    name = "kafka-cluster" if kind == "cluster" else str(resource.get("name") or "")
    if not name:
        raise InvalidSpec(f"{what}.resource.name is required for type {kind} ('*': all)")
    pattern = str(resource.get("patternType") or "literal")
    if pattern not in ("literal", "prefixed"):
        raise InvalidSpec(f"{what}.resource.patternType must be literal or prefixed")
    operations = tuple(str(op) for op in raw.get("operations") or ())
    unknown = [op for op in operations if op not in ACL_OPERATIONS]
    if not operations or unknown:
        raise InvalidSpec(f"{what}.operations: list one or more of {', '.join(ACL_OPERATIONS)}"
                          + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    permission = str(raw.get("type") or "allow")
    if permission not in ("allow", "deny"):
        raise InvalidSpec(f"{what}.type must be allow or deny")
    return UserAcl(kind, name, pattern, operations, str(raw.get("host") or "*"),
                   permission == "allow")
