"""Cluster overview: is the cluster healthy, how busy is it, is anything about to run out."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from odradek.metrics import catalog as m

from .common import (
    BROKERS,
    CLUSTER,
    base_dashboard,
    quantile,
    rate_sum,
    stat_panel,
    timeseries_panel,
)


def dashboard() -> Dashboard:
    return (
        base_dashboard("odradek-overview", "odradek / Cluster overview",
                       "Health, throughput and headroom of one odradek cluster.")
        .with_row(Row("Health"))
        .with_panel(stat_panel("Brokers", "Brokers exporting metrics.", "short",
                               f"count({m.BROKER_INFO.name}{{{CLUSTER}}})"))
        .with_panel(stat_panel("Active controllers", "Must be exactly 1.", "short",
                               f"sum({m.CONTROLLER_ACTIVE.name}{{{CLUSTER}}})"))
        .with_panel(stat_panel("Offline partitions", "Partitions with no live leader.",
                               "short", f"sum({m.OFFLINE_PARTITIONS.name}{{{CLUSTER}}})"))
        .with_panel(stat_panel("Under-replicated", "Partitions whose ISR is short.", "short",
                               f"sum({m.UNDER_REPLICATED.name}{{{CLUSTER}}})"))
        .with_panel(stat_panel("Under min ISR", "acks=all produce fails on these.", "short",
                               f"sum({m.UNDER_MIN_ISR.name}{{{CLUSTER}}})"))
        .with_panel(stat_panel("Partitions", "Partitions in the cluster.", "short",
                               f"sum({m.CONTROLLER_PARTITIONS.name}{{{CLUSTER}}})"))
        .with_row(Row("Throughput"))
        .with_panel(timeseries_panel(
            "Bytes in / out", "Client traffic (replication excluded), per broker.", "Bps",
            (rate_sum(m.BYTES_IN.name, BROKERS, "broker"), "in {{broker}}"),
            (rate_sum(m.BYTES_OUT.name, BROKERS, "broker"), "out {{broker}}")))
        .with_panel(timeseries_panel(
            "Messages in", "Records appended from Produce requests, per broker.", "short",
            (rate_sum(m.MESSAGES_IN.name, BROKERS, "broker"), "{{broker}}")))
        .with_panel(timeseries_panel(
            "Requests", "Requests per second, by API.", "reqps",
            (rate_sum(m.REQUESTS.name, BROKERS, "api"), "{{api}}")))
        .with_panel(timeseries_panel(
            "Errors", "Error codes returned per second, by API and error.", "short",
            (rate_sum(m.REQUEST_ERRORS.name, BROKERS, "api, error"), "{{api}} {{error}}")))
        .with_row(Row("Latency and headroom"))
        .with_panel(timeseries_panel(
            "Produce / Fetch latency p99", "Whole request time, 99th percentile.", "s",
            (quantile(0.99, m.REQUEST_DURATION.name, BROKERS + ', api="Produce"', "broker"),
             "Produce {{broker}}"),
            (quantile(0.99, m.REQUEST_DURATION.name, BROKERS + ', api="Fetch"', "broker"),
             "Fetch {{broker}}")))
        .with_panel(timeseries_panel(
            "Event-loop lag p99", "How late the broker's event loop runs: its saturation.",
            "s", (quantile(0.99, m.EVENT_LOOP_LAG.name, BROKERS, "broker"), "{{broker}}")))
        .with_panel(timeseries_panel(
            "Free disk", "Free fraction of the fullest log dir of each broker.", "percentunit",
            (f"min by (broker) ({m.LOG_DIR_FREE.name}{{{BROKERS}}} / "
             f"{m.LOG_DIR_CAPACITY.name}{{{BROKERS}}})", "{{broker}}")))
        .with_panel(timeseries_panel(
            "Connections", "Open client connections per broker.", "short",
            (f"sum by (broker) ({m.CONNECTIONS.name}{{{BROKERS}}})", "{{broker}}")))
    )
