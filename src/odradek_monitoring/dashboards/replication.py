"""Replication and the controller: ISR health, leadership balance, elections."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from odradek.metrics import catalog as m

from .common import (
    BROKERS,
    CLUSTER,
    base_dashboard,
    quantile,
    rate_sum,
    table_panel,
    timeseries_panel,
)


def _per_broker(spec: m.MetricSpec) -> tuple[str, str]:
    return f"sum by (broker) ({spec.name}{{{BROKERS}}})", "{{broker}}"


def dashboard() -> Dashboard:
    return (
        base_dashboard("odradek-replication", "odradek / Replication",
                       "ISR health, leadership balance, replica fetchers and the controller.")
        .with_row(Row("ISR"))
        .with_panel(timeseries_panel(
            "Under-replicated partitions", "Led by each broker, ISR shorter than replicas.",
            "short", _per_broker(m.UNDER_REPLICATED), width=8))
        .with_panel(timeseries_panel(
            "Under / at min ISR", "Under: acks=all fails. At: one more loss and it fails.",
            "short", (f"sum by (broker) ({m.UNDER_MIN_ISR.name}{{{BROKERS}}})", "under {{broker}}"),
            (f"sum by (broker) ({m.AT_MIN_ISR.name}{{{BROKERS}}})", "at {{broker}}"), width=8))
        .with_panel(timeseries_panel(
            "ISR shrinks / expands", "Replicas leaving and rejoining ISRs per second.", "ops",
            (rate_sum(m.ISR_SHRINKS.name, BROKERS, "broker"), "shrink {{broker}}"),
            (rate_sum(m.ISR_EXPANDS.name, BROKERS, "broker"), "expand {{broker}}"), width=8))
        .with_panel(table_panel(
            "Partitions with a short ISR", "Partitions whose ISR is short, with their leader.",
            "short",
            f"{m.PARTITION_ISR.name}{{{BROKERS}}} "
            f"< on (namespace, cluster, broker, topic, partition) "
            f"{m.PARTITION_REPLICAS.name}{{{BROKERS}}}"))
        .with_row(Row("Leadership and fetchers"))
        .with_panel(timeseries_panel(
            "Leaders per broker", "Partitions each broker leads (balance).", "short",
            _per_broker(m.LEADER_PARTITIONS), width=8))
        .with_panel(timeseries_panel(
            "Replicas per broker", "Partition replicas each broker hosts.", "short",
            _per_broker(m.PARTITIONS), width=8))
        .with_panel(timeseries_panel(
            "Replica fetcher max lag", "Records the furthest-behind followed partition lags.",
            "short", _per_broker(m.FETCHER_MAX_LAG), width=8))
        .with_panel(timeseries_panel(
            "Replication traffic", "Bytes replicated in (followers) and out (leaders).", "Bps",
            (rate_sum(m.REPLICATION_BYTES_IN.name, BROKERS, "broker"), "in {{broker}}"),
            (rate_sum(m.REPLICATION_BYTES_OUT.name, BROKERS, "broker"), "out {{broker}}")))
        .with_panel(timeseries_panel(
            "Offline partitions", "Reported by the active controller.", "short",
            (f"sum({m.OFFLINE_PARTITIONS.name}{{{CLUSTER}}})", "offline")))
        .with_row(Row("Controller"))
        .with_panel(timeseries_panel(
            "Active controller", "1 on the broker that is the controller.", "short",
            _per_broker(m.CONTROLLER_ACTIVE), width=8))
        .with_panel(timeseries_panel(
            "Leader elections", "Per second; unclean ones may lose data.", "ops",
            (f"sum(rate({m.LEADER_ELECTIONS.name}{{{CLUSTER}}}[$__rate_interval]))", "all"),
            (f"sum(rate({m.UNCLEAN_LEADER_ELECTIONS.name}{{{CLUSTER}}}[$__rate_interval]))",
             "unclean"), width=8))
        .with_panel(timeseries_panel(
            "Controller changes", "Times a broker became the controller.", "short",
            (f"sum by (broker) (increase({m.CONTROLLER_ACTIVATIONS.name}{{{BROKERS}}}[1h]))",
             "{{broker}}"), width=8))
        .with_panel(timeseries_panel(
            "Controller event queue", "Events waiting, and how long they wait (p99).", "short",
            (f"sum by (broker) ({m.CONTROLLER_QUEUE_SIZE.name}{{{BROKERS}}})",
             "waiting {{broker}}")))
        .with_panel(timeseries_panel(
            "Controller event wait p99", "Time an event waited before processing.", "s",
            (quantile(0.99, m.CONTROLLER_QUEUE_TIME.name, BROKERS, "broker"), "{{broker}}")))
    )
