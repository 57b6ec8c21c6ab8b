"""Dynamic broker configuration: which broker configs change at runtime, at which level,
and how a broker's effective configuration is layered (pure; no I/O).

As in Kafka, an operator changes broker configs with IncrementalAlterConfigs/AlterConfigs
(``kafka-configs --entity-type brokers``); they are stored in ZooKeeper, per broker in
``/config/brokers/<id>`` and for the whole cluster in ``/config/brokers/<default>``, and
every broker computes its effective value of each key from four layers, highest first::

    DYNAMIC_BROKER_CONFIG          /config/brokers/<this broker's id>
    DYNAMIC_DEFAULT_BROKER_CONFIG  /config/brokers/<default>
    STATIC_BROKER_CONFIG           server.properties and --override
    DEFAULT_CONFIG                 the default in odradek.config_keys.BROKER_CONFIGS

Each key has an :class:`UpdateMode` (Kafka's "Update Mode" column): *read-only* keys only
change with a restart, *per-broker* keys may be set for one broker but not as a cluster
default, *cluster-wide* keys at either level. :data:`DYNAMIC_ONLY_CONFIGS` are the broker
configs that exist only dynamically (Kafka's ``DynamicConfig.Broker``: the replication
throttles). A stored value that is invalid (written past validation, e.g. by hand) is
skipped with a log line, as Kafka does, so a bad znode cannot stop a broker.

Which components apply which keys live is the broker's business
(:mod:`odradek.broker.reconfigure`); this module only says what may change.
"""

from __future__ import annotations

import enum
import itertools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek import kafka_catalog
from odradek.config import BrokerConfig
from odradek.config_keys import BROKER_CONFIGS
from odradek.config_types import LONG, LONG_MAX, ConfigDef, ConfigError
from odradek.kafka_catalog import synonym_group
from odradek.protocol.errors import InvalidConfig, InvalidRequest

__all__ = [
    "DEFAULT_ENTITY",
    "DYNAMIC_ONLY_CONFIGS",
    "UPDATE_MODES",
    "BrokerConfigLayers",
    "ConfigSource",
    "UpdateMode",
    "default_raw",
    "definition",
    "validate_update",
]

log = logging.getLogger(__name__)

DEFAULT_ENTITY = "<default>"
"""The ZooKeeper entity name of the cluster-wide default (``/config/brokers/<default>``);
the protocol names it with an empty resource name."""


class UpdateMode(enum.Enum):
    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    CLUSTER_WIDE = "cluster-wide"


class ConfigSource(enum.IntEnum):
    """Kafka's DescribeConfigs ``config_source`` values."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


DYNAMIC_ONLY_CONFIGS: dict[str, ConfigDef] = {
    definition.name: definition
    for definition in (
        ConfigDef("leader.replication.throttled.rate", LONG, LONG_MAX,
                  "Bytes/s a leader may send to the followers of its throttled replicas "
                  "(leader.replication.throttled.replicas) that are out of the ISR.",
                  at_least=0),
        ConfigDef("follower.replication.throttled.rate", LONG, LONG_MAX,
                  "Bytes/s a follower may fetch for its throttled replicas "
                  "(follower.replication.throttled.replicas) that have not caught up.",
                  at_least=0),
        ConfigDef("replica.alter.log.dirs.io.max.bytes.per.second", LONG, LONG_MAX,
                  "Bytes/s for moving replicas between log dirs (stored; no such moves).",
                  at_least=0),
    )
}

# Kafka: DynamicListenerConfig (per-broker; odradek reads them when it starts).
_PER_BROKER = frozenset({"listeners", "advertised.listeners", "listener.security.protocol.map"})
# Kafka: LogCleaner, DynamicThreadPool and DynamicLogConfig reconfigurables, plus every broker
# default of a topic config (log.retention.*, log.segment.*, ...).
_CLUSTER_WIDE = frozenset(
    {
        "log.cleaner.threads",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.backoff.ms",
        "num.replica.fetchers",
        "num.recovery.threads.per.data.dir",
        "log.roll.ms",
        "log.roll.hours",
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
        *(d.name for d in BROKER_CONFIGS.values() if d.topic_name is not None),
        *DYNAMIC_ONLY_CONFIGS,
    }
)

UPDATE_MODES: dict[str, UpdateMode] = {
    name: (
        UpdateMode.PER_BROKER if name in _PER_BROKER
        else UpdateMode.CLUSTER_WIDE if name in _CLUSTER_WIDE
        else UpdateMode.READ_ONLY
    )
    for name in (*BROKER_CONFIGS, *DYNAMIC_ONLY_CONFIGS)
}
"""Every broker config name and how it may be updated."""

def definition(name: str) -> ConfigDef | None:
    return BROKER_CONFIGS.get(name) or DYNAMIC_ONLY_CONFIGS.get(name)


def validate_update(config: Mapping[str, str], *, per_broker: bool) -> None:
    """Check a complete set of dynamic configs for one entity (a broker or the default):
    INVALID_CONFIG for an unknown key, INVALID_REQUEST for a key that cannot be updated
    there or a bad value — Kafka's answers for broker resources."""
    where = "broker" if per_broker else "default cluster"
    read_only = sorted(name for name in config
                       if UPDATE_MODES.get(name, UpdateMode.CLUSTER_WIDE) is UpdateMode.READ_ONLY)
    if read_only:  # Kafka's words (a Scala set)
        raise InvalidRequest(
            f"Cannot update these configs dynamically: Set({', '.join(read_only)})")
    for name, raw in sorted(config.items()):
        found = definition(name)
        if found is None:
            raise InvalidConfig(f"Unknown broker config: {name}")
        mode = UPDATE_MODES[name]
        if mode is UpdateMode.PER_BROKER and not per_broker:
            raise InvalidRequest(
                f"Cannot update these configs at default cluster level, broker id must be "
                f"specified: {name}"
            )
        if raw is None:
            raise InvalidRequest(f"Invalid value null for configuration {name}")
        try:
            found.convert(raw)
        except ConfigError as exc:
            raise InvalidRequest(f"Invalid {where} config value: {exc}") from None
    # Cross-key rules (e.g. cleanup policies) as the broker would apply them.
    try:
        BrokerConfigLayers(BrokerConfig.from_properties({}), {}, dict(config)).effective(
            strict=True
        )
    except ConfigError as exc:
        raise InvalidRequest(f"Invalid {where} config: {exc}") from None


@dataclass(frozen=True)
class BrokerConfigLayers:
    """One broker's view of its configuration: static config plus the two dynamic layers
    (raw strings as stored in ZooKeeper)."""

    static: BrokerConfig
    default: Mapping[str, str] = field(default_factory=dict)  # /config/brokers/<default>
    broker: Mapping[str, str] = field(default_factory=dict)  # /config/brokers/<id>

    def _usable(self, layer: Mapping[str, str], per_broker: bool) -> dict[str, str]:
        """The entries of ``layer`` a broker applies; the rest is logged and skipped."""
        usable: dict[str, str] = {}
        for name, raw in layer.items():
            found = definition(name)
            mode = UPDATE_MODES.get(name, UpdateMode.READ_ONLY)
            problem = None
            if found is None or mode is UpdateMode.READ_ONLY:
                problem = "not a dynamic broker config"
            elif mode is UpdateMode.PER_BROKER and not per_broker:
                problem = "only settable per broker"
            else:
                try:
                    found.convert(raw)
                except ConfigError as exc:
                    problem = str(exc)
            if problem is None:
                usable[name] = raw
            else:
                log.error("ignoring dynamic broker config %s=%r: %s", name, raw, problem)
        return usable

    def effective(self, *, strict: bool = False) -> BrokerConfig:
        """The BrokerConfig this broker runs with (dynamic-only keys excluded: see
        :meth:`dynamic_only`). With ``strict`` a cross-key error raises ConfigError."""
        properties = {name: self.static.raw(name) for name in BROKER_CONFIGS
                      if self.static.is_explicit(name)}
        properties.update(self.static.listener_properties())
        for layer, per_broker in ((self.default, False), (self.broker, True)):
            usable = layer if strict else self._usable(layer, per_broker)
            properties.update({k: v for k, v in usable.items() if k in BROKER_CONFIGS})
        try:
            return BrokerConfig.from_properties(properties)
        except ConfigError:
            if strict:
                raise
            log.exception("dynamic broker configs rejected as a whole; using static config")
            return self.static

    def dynamic_only(self) -> dict[str, Any]:
        """Current values of :data:`DYNAMIC_ONLY_CONFIGS` (the throttles)."""
        values: dict[str, Any] = {n: d.default for n, d in DYNAMIC_ONLY_CONFIGS.items()}
        for layer, per_broker in ((self.default, False), (self.broker, True)):
            for name, raw in self._usable(layer, per_broker).items():
                if name in DYNAMIC_ONLY_CONFIGS:
                    values[name] = DYNAMIC_ONLY_CONFIGS[name].convert(raw)
        return values

    def synonyms(
        self, name: str, *, per_broker: bool = True
    ) -> list[tuple[str, str | None, ConfigSource]]:
        """``(name, value, source)`` for every layer that sets ``name`` or one of its
        synonyms, highest precedence first (Kafka's DescribeConfigs synonyms). As Kafka
        lists them: layer by layer, then from the first entry named ``name`` on (so
        ``log.retention.ms`` lists nothing while only ``log.retention.hours`` is set).
        Describing the cluster default leaves out the per-broker layer."""
        names = synonym_group(name)
        dynamic = [(self.broker, ConfigSource.DYNAMIC_BROKER_CONFIG)] if per_broker else []
        dynamic.append((self.default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
        found: list[tuple[str, str | None, ConfigSource]] = [
            (synonym, layer[synonym], source)
            for layer, source in dynamic for synonym in names if synonym in layer
        ]
        found += [(synonym, self.static.raw(synonym), ConfigSource.STATIC_BROKER_CONFIG)
                  for synonym in names
                  if synonym in BROKER_CONFIGS and self.static.is_explicit(synonym)]
        found += [(synonym, default, ConfigSource.DEFAULT_CONFIG)
                  for synonym in names if (default := default_raw(synonym)) is not None]
        return list(itertools.dropwhile(lambda entry: entry[0] != name, found))

    def source_of(self, name: str) -> ConfigSource:
        synonyms = self.synonyms(name)
        return synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG


_DEFAULTS = BrokerConfig.from_properties({})


def default_raw(name: str) -> str | None:
    """The default of broker key ``name`` as a properties string; None when it has none.
    A key Kafka knows has none where Kafka has none (Kafka then lists no DEFAULT_CONFIG
    synonym); a key odradek does not implement has Kafka's."""
    kafka = kafka_catalog.BROKER_CONFIGS.get(name)
    if kafka is not None and kafka.default is None:
        return None
    if name in DYNAMIC_ONLY_CONFIGS:
        return str(DYNAMIC_ONLY_CONFIGS[name].default)
    if name in BROKER_CONFIGS and _DEFAULTS[name] is not None:
        return _DEFAULTS.raw(name)
    return kafka.default if kafka is not None else None
