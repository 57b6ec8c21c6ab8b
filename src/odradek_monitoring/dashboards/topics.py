"""Topics: traffic and size per topic, offsets per partition.

Traffic per topic needs per-topic labels (``metrics.topic.labels.enable``); the
"appended records" panel works without them, from the log end offsets.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from odradek.metrics import catalog as m

from .common import CLUSTER, RATE, base_dashboard, rate_sum, table_panel, timeseries_panel

TOPICS = CLUSTER + ', topic=~"$topic"'


def dashboard() -> Dashboard:
    return (
        base_dashboard(
            "odradek-topics", "odradek / Topics", "Traffic, size and offsets per topic.",
            brokers=False,
            extra=(("topic", f"label_values({m.LOG_END_OFFSET.name}{{{CLUSTER}}}, topic)"),))
        .with_row(Row("Traffic"))
        .with_panel(timeseries_panel(
            "Bytes in", "Produced bytes per topic (needs per-topic labels).", "Bps",
            (rate_sum(m.TOPIC_BYTES_IN.name, TOPICS, "topic"), "{{topic}}"), width=8))
        .with_panel(timeseries_panel(
            "Bytes out", "Bytes fetched by consumers per topic (needs per-topic labels).",
            "Bps", (rate_sum(m.TOPIC_BYTES_OUT.name, TOPICS, "topic"), "{{topic}}"), width=8))
        .with_panel(timeseries_panel(
            "Messages in", "Records produced per topic (needs per-topic labels).", "short",
            (rate_sum(m.TOPIC_MESSAGES_IN.name, TOPICS, "topic"), "{{topic}}"), width=8))
        .with_panel(timeseries_panel(
            "Appended records",
            "Growth of the log end offsets (one replica per partition): works without "
            "per-topic labels.", "short",
            (f"sum by (topic) (max by (topic, partition) "
             f"(rate({m.LOG_END_OFFSET.name}{{{TOPICS}}}[{RATE}])))", "{{topic}}")))
        .with_panel(timeseries_panel(
            "Size on disk", "Bytes of the topic's logs, all replicas.", "bytes",
            (f"sum by (topic) ({m.LOG_SIZE.name}{{{TOPICS}}})", "{{topic}}")))
        .with_row(Row("Partitions"))
        .with_panel(table_panel(
            "End offsets", "Log end offset per partition (highest replica).", "none",
            f"max by (topic, partition) ({m.LOG_END_OFFSET.name}{{{TOPICS}}})", width=8))
        .with_panel(table_panel(
            "Start offsets", "First offset still stored (retention moves it).", "none",
            f"max by (topic, partition) ({m.LOG_START_OFFSET.name}{{{TOPICS}}})", width=8))
        .with_panel(table_panel(
            "Segments", "Segments per partition and broker.", "none",
            f"sum by (topic, partition, broker) ({m.LOG_SEGMENTS.name}{{{TOPICS}}})",
            width=8))
    )
