"""Per-log configuration: Kafka's topic-level config names, meanings, defaults and checks.

Storage owns the topic-level configs, as Kafka's ``LogConfig`` does: every field of
:class:`LogConfig` is a Kafka topic config name in snake case (``segment.bytes`` ->
``segment_bytes``). :meth:`LogConfig.from_topic_config` is the one place that parses user
input; unknown names and bad values raise :class:`InvalidConfig` with a message that names
the key. The broker configuration sits above: its ``log.*`` properties are the broker-wide
defaults of these (``odradek.config.BrokerConfig.topic_defaults``), and
:meth:`LogConfig.for_topic` lays a topic's own overrides over them. Nothing here knows
broker property names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from odradek.kafka_catalog import TOPIC_CONFIGS
from odradek.protocol.errors import InvalidConfig

__all__ = ["LONG_MAX", "InvalidConfigValue", "LogConfig"]

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

# Kafka's names of its number types (DescribeConfigs config_type codes)
_KAFKA_NUMBER_TYPES = {3: "INT", 4: "SHORT", 5: "LONG", 6: "DOUBLE"}


class InvalidConfigValue(InvalidConfig):
    """A known topic config with a value it cannot take (AlterConfigs names the resource)."""


_CLEANUP_POLICIES = {"delete", "compact", "compact,delete"}
_TIMESTAMP_TYPES = {"CreateTime", "LogAppendTime"}
_COMPRESSION_TYPES = {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_index_bytes: int = 10485760
    index_interval_bytes: int = 4096
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_ms: int = 604800000
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 86400000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    message_timestamp_difference_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60000
    segment_jitter_ms: int = 0
    preallocate: bool = False
    compression_type: str = "producer"
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    message_downconversion_enable: bool = True
    # Replication throttles (kafka-reassign-partitions --throttle): stored, not enforced yet.
    leader_replication_throttled_replicas: str = ""
    follower_replication_throttled_replicas: str = ""

    # name -> (field, type, doc); the order is what DescribeConfigs lists.
    TOPIC_CONFIG_NAMES: ClassVar[dict[str, tuple[str, type, str]]] = {
        "segment.bytes": ("segment_bytes", int, "Size at which a new segment file is rolled."),
        "segment.ms": ("segment_ms", int, "Age of the active segment at which it is rolled."),
        "segment.index.bytes": (
            "segment_index_bytes",
            int,
            "Preallocated size of each offset/time index; a full index rolls the segment.",
        ),
        "index.interval.bytes": (
            "index_interval_bytes",
            int,
            "Bytes of batches between two offset index entries.",
        ),
        "flush.messages": ("flush_messages", int, "Messages appended between two fsyncs."),
        "flush.ms": ("flush_ms", int, "Maximum time data stays unflushed."),
        "retention.ms": ("retention_ms", int, "Age after which old segments are deleted (-1 off)."),
        "retention.bytes": (
            "retention_bytes",
            int,
            "Size above which old segments of a partition are deleted (-1 off).",
        ),
        "cleanup.policy": ("cleanup_policy", str, "delete, compact or compact,delete."),
        "delete.retention.ms": (
            "delete_retention_ms",
            int,
            "How long tombstones survive compaction.",
        ),
        "min.compaction.lag.ms": (
            "min_compaction_lag_ms",
            int,
            "Minimum age of a record before it may be compacted.",
        ),
        "max.compaction.lag.ms": (
            "max_compaction_lag_ms",
            int,
            "Maximum age of a record before the log is eligible for compaction regardless of "
            "the dirty ratio.",
        ),
        "min.cleanable.dirty.ratio": (
            "min_cleanable_dirty_ratio",
            float,
            "Dirty/total ratio above which the cleaner compacts the log.",
        ),
        "max.message.bytes": (
            "max_message_bytes",
            int,
            "Largest record batch size accepted.",
        ),
        "message.timestamp.type": (
            "message_timestamp_type",
            str,
            "CreateTime or LogAppendTime.",
        ),
        "message.timestamp.difference.max.ms": (
            "message_timestamp_difference_max_ms",
            int,
            "Largest allowed difference between a CreateTime timestamp and the broker's clock.",
        ),
        "message.timestamp.before.max.ms": (
            "message_timestamp_before_max_ms",
            int,
            "How far in the past a CreateTime timestamp may be.",
        ),
        "message.timestamp.after.max.ms": (
            "message_timestamp_after_max_ms",
            int,
            "How far in the future a CreateTime timestamp may be.",
        ),
        "file.delete.delay.ms": (
            "file_delete_delay_ms",
            int,
            "Delay between renaming a deleted segment to .deleted and removing it.",
        ),
        "segment.jitter.ms": (
            "segment_jitter_ms",
            int,
            "Random jitter subtracted from segment.ms.",
        ),
        "preallocate": ("preallocate", bool, "Preallocate segment files."),
        "compression.type": (
            "compression_type",
            str,
            "producer (keep the producer's codec), uncompressed, gzip, snappy, lz4 or zstd.",
        ),
        "min.insync.replicas": (
            "min_insync_replicas",
            int,
            "Replicas that must acknowledge an acks=all produce.",
        ),
        "unclean.leader.election.enable": (
            "unclean_leader_election_enable",
            bool,
            "Allow an out-of-sync replica to become leader.",
        ),
        "message.downconversion.enable": (
            "message_downconversion_enable",
            bool,
            "Accepted for compatibility; odradek never down-converts.",
        ),
        "leader.replication.throttled.replicas": (
            "leader_replication_throttled_replicas",
            str,
            "Leader replicas (partition:broker,... or *) whose sending to out-of-sync "
            "followers leader.replication.throttled.rate limits.",
        ),
        "follower.replication.throttled.replicas": (
            "follower_replication_throttled_replicas",
            str,
            "Follower replicas (partition:broker,... or *) whose fetching "
            "follower.replication.throttled.rate limits until they catch up.",
        ),
    }

    def __post_init__(self) -> None:
        for name, check in _CHECKS.items():
            field_name = self.TOPIC_CONFIG_NAMES[name][0]
            problem = check(getattr(self, field_name))
            if problem:
                raise InvalidConfigValue(f"Invalid value {getattr(self, field_name)} for "
                                         f"configuration {name}: {problem}")

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_topic_config(
        cls, overrides: Mapping[str, str | int | float | bool], defaults: LogConfig | None = None
    ) -> LogConfig:
        """``defaults`` (or Kafka's) with ``overrides`` keyed by Kafka topic config name."""
        changes: dict[str, Any] = {}
        for name, raw in overrides.items():
            try:
                field_name, kind, _doc = cls.TOPIC_CONFIG_NAMES[name]
            except KeyError:
                raise InvalidConfig(f"Unknown topic config name: {name}") from None
            changes[field_name] = _parse(name, kind, raw)
        return dataclasses.replace(defaults or cls(), **changes)

    @classmethod
    def for_topic(
        cls,
        broker_defaults: Mapping[str, str | int | float | bool],
        overrides: Mapping[str, str | int | float | bool] | None = None,
    ) -> LogConfig:
        """A topic's config: its ``overrides`` over ``broker_defaults`` (the broker's values
        of topic configs, keyed by topic config name), over Kafka's defaults."""
        base = cls.from_topic_config(broker_defaults)
        return cls.from_topic_config(overrides, base) if overrides else base

    def to_topic_config(self) -> dict[str, str]:
        """Kafka-style string values by config name (what DescribeConfigs shows)."""
        out = {}
        for name, (field_name, kind, _doc) in self.TOPIC_CONFIG_NAMES.items():
            value = getattr(self, field_name)
            out[name] = str(value).lower() if kind is bool else str(value)
        return out


def _invalid(name: str, raw: object, reason: str) -> InvalidConfigValue:
    return InvalidConfigValue(f"Invalid value {raw} for configuration {name}: {reason}")


def _not_a_number(name: str, raw: object) -> InvalidConfigValue:
    kafka = TOPIC_CONFIGS.get(name)
    kind = _KAFKA_NUMBER_TYPES.get(kafka.config_type if kafka is not None else 5, "LONG")
    return _invalid(name, raw, f"Not a number of type {kind}")


def _parse(name: str, kind: type, raw: str | int | float | bool) -> Any:
    """``raw`` as ``kind``; a bad value is refused in Kafka's words (the tools print them)."""
    if kind is bool:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("true", "false"):
            return text == "true"
        raise _invalid(name, raw, "Expected value to be either true or false")
    if kind is int:
        if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
            raise _not_a_number(name, raw)
        try:
            return int(str(raw).strip()) if not isinstance(raw, (int, float)) else int(raw)
        except ValueError:
            raise _not_a_number(name, raw) from None
    if kind is float:
        try:
            return float(raw)
        except ValueError:
            raise _not_a_number(name, raw) from None
    text = str(raw).strip()
    if name == "cleanup.policy":
        parts = sorted({part.strip() for part in text.split(",") if part.strip()})
        return ",".join(parts)
    return text


def _at_least(minimum: int | float) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value >= minimum else f"{value} is below the minimum {minimum}"

    return check


def _one_of(allowed: set[str]) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in allowed else f"{value!r} is not one of {sorted(allowed)}"

    return check


def _throttled_replicas(value: Any) -> str | None:
    """Kafka's ThrottledReplicaListValidator: empty, ``*``, or ``partition:broker,...``."""
    entries = [entry.strip() for entry in str(value).split(",") if entry.strip()]
    if entries == ["*"] or all(
        len(parts := entry.split(":")) == 2 and all(p.strip().isdigit() for p in parts)
        for entry in entries
    ):
        return None
    return f"{value!r} is not * or a list of partition:broker"


def _ratio(value: Any) -> str | None:
    return None if 0.0 <= value <= 1.0 else f"{value} is not between 0 and 1"


_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "segment.bytes": _at_least(14),
    "segment.ms": _at_least(1),
    "segment.index.bytes": _at_least(12),
    "index.interval.bytes": _at_least(0),
    "flush.messages": _at_least(1),
    "flush.ms": _at_least(0),
    "retention.ms": _at_least(-1),
    "retention.bytes": _at_least(-1),
    "cleanup.policy": _one_of(_CLEANUP_POLICIES),
    "delete.retention.ms": _at_least(0),
    "min.compaction.lag.ms": _at_least(0),
    "max.compaction.lag.ms": _at_least(1),
    "min.cleanable.dirty.ratio": _ratio,
    "max.message.bytes": _at_least(0),
    "message.timestamp.type": _one_of(_TIMESTAMP_TYPES),
    "file.delete.delay.ms": _at_least(0),
    "segment.jitter.ms": _at_least(0),
    "compression.type": _one_of(_COMPRESSION_TYPES),
    "min.insync.replicas": _at_least(1),
    "leader.replication.throttled.replicas": _throttled_replicas,
    "follower.replication.throttled.replicas": _throttled_replicas,
}
