"""Consumer groups and lag, as reported by the coordinator that owns each group."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from odradek.metrics import catalog as m
from odradek.metrics import lag

from .common import CLUSTER, RATE, base_dashboard, table_panel, timeseries_panel

GROUPS = CLUSTER + ', group=~"$group", topic=~"$topic"'
GROUP_ONLY = CLUSTER + ', group=~"$group"'


def dashboard() -> Dashboard:
    return (
        base_dashboard(
            "odradek-consumer-groups", "odradek / Consumer groups & lag",
            "Lag in records and seconds, computed by the group coordinator (never negative; "
            "groups without members stay until their offsets expire).",
            brokers=False,
            extra=(("group", f"label_values({lag.MEMBERS.name}{{{CLUSTER}}}, group)"),
                   ("topic", f'label_values({lag.LAG.name}{{{CLUSTER}, group=~"$group"}}, '
                             "topic)")))
        .with_row(Row("Lag"))
        .with_panel(timeseries_panel(
            "Lag (records)", "Records not yet consumed, per group and topic.", "short",
            (f"sum by (group, topic) ({lag.LAG.name}{{{GROUPS}}})", "{{group}} {{topic}}")))
        .with_panel(timeseries_panel(
            "Lag (seconds)", "Age of the oldest record not yet consumed (worst partition).",
            "s", (f"max by (group, topic) ({lag.LAG_SECONDS.name}{{{GROUPS}}})",
                  "{{group}} {{topic}}")))
        .with_panel(timeseries_panel(
            "Consumption rate", "Committed offsets advancing, records per second.", "short",
            (f"sum by (group, topic) (rate({lag.COMMITTED.name}{{{GROUPS}}}[{RATE}]))",
             "{{group}} {{topic}}")))
        .with_panel(timeseries_panel(
            "Production rate", "End offsets advancing on the same partitions.", "short",
            (f"sum by (group, topic) (rate({lag.END_OFFSET.name}{{{GROUPS}}}[{RATE}]))",
             "{{group}} {{topic}}")))
        .with_row(Row("Groups"))
        .with_panel(timeseries_panel(
            "Members", "Live members per group (0 = Empty, offsets kept until expiry).",
            "short", (f"max by (group) ({lag.MEMBERS.name}{{{GROUP_ONLY}}})", "{{group}}"),
            width=8))
        .with_panel(table_panel(
            "State", "Current state and type of each group (classic, or consumer: KIP-848).",
            "none",
            f"(max by (group, state) ({lag.STATE.name}{{{GROUP_ONLY}}}) == 1) "
            f"* on (group) group_left (type) max by (group, type) "
            f"({lag.INFO.name}{{{GROUP_ONLY}}})", width=8))
        .with_panel(timeseries_panel(
            "Series dropped by caps", "Lag or group series refused by a cardinality cap.",
            "short", (f"sum by (metric) (increase({m.SERIES_DROPPED.name}{{{CLUSTER}}}[1h]))",
                      "{{metric}}"), width=8))
        .with_panel(timeseries_panel(
            "Groups by type and state", "Groups the coordinators own: classic and "
            "consumer-type (KIP-848), by state.", "short",
            (f"sum by (type, state) ({lag.GROUPS.name}{{{CLUSTER}}})", "{{type}} {{state}}"),
            width=8))
        .with_panel(timeseries_panel(
            "Group epoch", "A consumer-type group's epoch (a classic group's generation): "
            "it moves at every rebalance.", "short",
            (f"max by (group) ({lag.EPOCH.name}{{{GROUP_ONLY}}})", "{{group}}"), width=8))
        .with_panel(timeseries_panel(
            "Rebalances", "Epoch bumps per group over the last hour (members joining or "
            "leaving, subscriptions or partitions changing).", "short",
            (f"max by (group) (changes({lag.EPOCH.name}{{{GROUP_ONLY}}}[1h]))", "{{group}}"),
            width=8))
        .with_panel(table_panel(
            "Lag by partition", "Committed offset, end offset and lag of every partition.",
            "short", f"max by (group, topic, partition) ({lag.LAG.name}{{{GROUPS}}})"))
    )
