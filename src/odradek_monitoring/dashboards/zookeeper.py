"""ZooKeeper as the brokers see it: sessions and request latency."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from odradek.metrics import catalog as m

from .common import BROKERS, RATE, base_dashboard, quantile, table_panel, timeseries_panel

ZK_COUNT = f"{m.ZK_REQUEST_DURATION.name}_count"


def dashboard() -> Dashboard:
    return (
        base_dashboard("odradek-zookeeper", "odradek / ZooKeeper",
                       "Each broker's ZooKeeper session and the latency of its requests.")
        .with_row(Row("Sessions"))
        .with_panel(timeseries_panel(
            "Connected", "1 while the broker's session is connected.", "short",
            (f'max by (broker) ({m.ZK_SESSION_STATE.name}{{{BROKERS}, state="connected"}})',
             "{{broker}}"), width=8))
        .with_panel(table_panel(
            "Session state", "Current state of every broker's session.", "none",
            f"max by (broker, state) ({m.ZK_SESSION_STATE.name}{{{BROKERS}}}) == 1", width=8))
        .with_panel(timeseries_panel(
            "Session expirations", "Sessions lost in the last hour.", "short",
            (f"sum by (broker) (increase({m.ZK_EXPIRATIONS.name}{{{BROKERS}}}[1h]))",
             "{{broker}}"), width=8))
        .with_row(Row("Requests"))
        .with_panel(timeseries_panel(
            "Request rate", "ZooKeeper requests per second, by operation.", "reqps",
            (f"sum by (operation) (rate({ZK_COUNT}{{{BROKERS}}}[{RATE}]))", "{{operation}}")))
        .with_panel(timeseries_panel(
            "Request latency p99", "By operation.", "s",
            (quantile(0.99, m.ZK_REQUEST_DURATION.name, BROKERS, "operation"),
             "{{operation}}")))
    )
