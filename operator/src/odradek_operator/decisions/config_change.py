"""Which broker config changes can be applied live and which need a rolling restart.

Apache Kafka marks every broker config with an update mode; the keys below are the ones whose
mode is ``cluster-wide``: an IncrementalAlterConfigs on the BROKER resource ``""`` (the cluster
default) changes them on every broker without a restart. Any other key is ``read-only`` (or
per-broker only) and takes effect only when a broker restarts with the new server.properties.

The operator therefore splits the desired config in two: the *static* part is hashed into the
pod template (a change restarts pods, one at a time), the *dynamic* part is sent through the
admin API. When the cluster refuses dynamic broker configs (an older broker), the dynamic part
joins the hash, so the change still lands, through the restart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["CLUSTER_WIDE_DYNAMIC_KEYS", "DynamicConfigPlan", "describe_config_changes",
           "plan_dynamic_config", "restart_relevant_config", "split_config"]

CLUSTER_WIDE_DYNAMIC_KEYS = frozenset({
    # log defaults (LogConfig synonyms Kafka lets a cluster change live)
    "log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms", "log.retention.ms",
    "log.retention.bytes", "log.flush.interval.messages", "log.flush.interval.ms",
    "log.index.interval.bytes", "log.index.size.max.bytes", "log.preallocate",
    "log.cleanup.policy", "log.segment.delete.delay.ms", "log.message.timestamp.type",
    "log.message.timestamp.difference.max.ms", "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms", "log.message.downconversion.enable",
    "log.local.retention.ms", "log.local.retention.bytes",
    "message.max.bytes", "min.insync.replicas", "compression.type",
    "unclean.leader.election.enable",
    # cleaner
    "log.cleaner.threads", "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.size",
    "log.cleaner.io.buffer.load.factor", "log.cleaner.backoff.ms",
    "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms", "log.cleaner.min.cleanable.ratio",
    # threads and connection limits
    "num.io.threads", "num.network.threads", "num.replica.fetchers",
    "num.recovery.threads.per.data.dir", "background.threads",
    "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
    "max.connection.creation.rate",
    "producer.id.expiration.ms", "transaction.partition.verification.enable",
})


def split_config(config: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(static, dynamic) parts of a broker config."""
    static = {k: v for k, v in config.items() if k not in CLUSTER_WIDE_DYNAMIC_KEYS}
    dynamic = {k: v for k, v in config.items() if k in CLUSTER_WIDE_DYNAMIC_KEYS}
    return static, dynamic


def restart_relevant_config(config: Mapping[str, str], dynamic_supported: bool
                            ) -> dict[str, str]:
    """The part of the config whose change must restart brokers."""
    static, _ = split_config(config)
    return static if dynamic_supported else dict(config)


@dataclass(frozen=True)
class DynamicConfigPlan:
    """IncrementalAlterConfigs operations for the cluster default: (key, op, value)."""

    operations: tuple[tuple[str, str, str | None], ...]

    @property
    def empty(self) -> bool:
        return not self.operations


def plan_dynamic_config(desired: Mapping[str, str], applied: Mapping[str, str]
                        ) -> DynamicConfigPlan:
    """Set what differs from what was last applied live, delete what the spec dropped (so the
    broker falls back to its server.properties value)."""
    _, wanted = split_config(desired)
    ops: list[tuple[str, str, str | None]] = [
        (key, "set", value) for key, value in sorted(wanted.items())
        if applied.get(key) != value]
    ops += [(key, "delete", None) for key in sorted(applied) if key not in wanted]
    return DynamicConfigPlan(tuple(ops))


def describe_config_changes(operations: Iterable[tuple[str, str, str | None]]) -> str:
    """IncrementalAlterConfigs operations (key, ``set``/``delete``, value) for an Event:
    ``set a, b; removed c`` — a removed key falls back to its default, which is not what
    setting it would mean."""
    ops = list(operations)
    parts = [f"{verb} {', '.join(key for key, op, _ in ops if op == kind)}"
             for kind, verb in (("set", "set"), ("delete", "removed"))
             if any(op == kind for _, op, _ in ops)]
    return "; ".join(parts)
