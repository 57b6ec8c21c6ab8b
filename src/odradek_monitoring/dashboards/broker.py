"""Broker detail: where a broker's time goes (request phases, purgatory, event loop, disk),
and its transactions (as coordinator, and open on the partitions it leads)."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from odradek.metrics import catalog as m

from .common import BROKERS, RATE, base_dashboard, quantile, rate_sum, timeseries_panel

PHASES = m.REQUEST_PHASE_DURATION.name


def _phases(api: str) -> tuple[str, str]:
    """Mean time per phase: stacked, the bars add up to the mean request time. Only where
    the window has requests (0/0 is NaN, not a time)."""
    selector = f'{BROKERS}, api="{api}"'
    return (f"sum by (phase) (rate({PHASES}_sum{{{selector}}}[{RATE}])) / "
            f"(sum by (phase) (rate({PHASES}_count{{{selector}}}[{RATE}])) > 0)", "{{phase}}")


def dashboard() -> Dashboard:
    return (
        base_dashboard("odradek-broker", "odradek / Broker",
                       "One broker (or a few) in detail: requests, purgatory, loop, disk.")
        .with_row(Row("Requests"))
        .with_panel(timeseries_panel(
            "Requests by API", "Requests per second.", "reqps",
            (rate_sum(m.REQUESTS.name, BROKERS, "api"), "{{api}}")))
        .with_panel(timeseries_panel(
            "Latency p99 by API", "Whole request time, 99th percentile.", "s",
            (quantile(0.99, m.REQUEST_DURATION.name, BROKERS, "api"), "{{api}}")))
        .with_panel(timeseries_panel(
            "Produce: mean time per phase",
            "queue: read to handler; local: handler; remote: purgatory (acks=all); "
            "send: waiting for earlier responses and writing.", "s", _phases("Produce"),
            stacked=True))
        .with_panel(timeseries_panel(
            "Fetch: mean time per phase", "remote is the long-poll wait (fetch.max.wait.ms).",
            "s", _phases("Fetch"), stacked=True))
        .with_panel(timeseries_panel(
            "Produce p99 per phase", "99th percentile of each phase.", "s",
            (quantile(0.99, PHASES, BROKERS + ', api="Produce"', "phase"), "{{phase}}")))
        .with_panel(timeseries_panel(
            "Errors by code", "Error codes returned per second.", "short",
            (rate_sum(m.REQUEST_ERRORS.name, BROKERS, "error"), "{{error}}")))
        .with_row(Row("Purgatory, connections, event loop"))
        .with_panel(timeseries_panel(
            "Purgatory size", "Delayed operations waiting.", "short",
            (f"sum by (broker, operation) ({m.PURGATORY_SIZE.name}{{{BROKERS}}})",
             "{{operation}} {{broker}}"),
            width=8))
        .with_panel(timeseries_panel(
            "Purgatory expirations", "Delayed operations ended by their timeout.", "ops",
            (rate_sum(m.PURGATORY_EXPIRATIONS.name, BROKERS, "operation"), "{{operation}}"),
            width=8))
        .with_panel(timeseries_panel(
            "Connection rate", "New connections per second, by listener.", "ops",
            (rate_sum(m.CONNECTIONS_OPENED.name, BROKERS, "listener"), "{{listener}}"),
            width=8))
        .with_panel(timeseries_panel(
            "Event-loop lag", "p50 and p99 of how late timers fire.", "s",
            (quantile(0.5, m.EVENT_LOOP_LAG.name, BROKERS, "broker"), "p50 {{broker}}"),
            (quantile(0.99, m.EVENT_LOOP_LAG.name, BROKERS, "broker"), "p99 {{broker}}")))
        .with_panel(timeseries_panel(
            "CPU and tasks", "CPU seconds per second, and tasks alive on the loop.", "short",
            (f"sum by (broker) (rate(process_cpu_seconds_total{{{BROKERS}}}[{RATE}]))",
             "cpu {{broker}}"),
            (f"sum by (broker) ({m.EVENT_LOOP_TASKS.name}{{{BROKERS}}})", "tasks {{broker}}")))
        .with_row(Row("Storage"))
        .with_panel(timeseries_panel(
            "Flush and fsync p99", "Disk latency seen by the log. Empty while nothing "
            "flushes: by default (log.flush.interval.* unset, as in Kafka) durability comes "
            "from replication; topics with flush.messages or flush.ms flush.", "s",
            (quantile(0.99, m.LOG_FLUSH_DURATION.name, BROKERS, "broker"), "flush {{broker}}"),
            (quantile(0.99, m.LOG_FSYNC_DURATION.name, BROKERS, "broker"), "fsync {{broker}}"),
            width=8))
        .with_panel(timeseries_panel(
            "Log size", "Bytes of all logs on the broker.", "bytes",
            (f"sum by (broker) ({m.LOG_SIZE.name}{{{BROKERS}}})", "{{broker}}"), width=8))
        .with_panel(timeseries_panel(
            "Memory", "Resident set size.", "bytes",
            (f"sum by (broker) (process_resident_memory_bytes{{{BROKERS}}})", "{{broker}}"),
            width=8))
        .with_panel(timeseries_panel(
            "Log cleaner", "Bytes read and written by compaction.", "Bps",
            (rate_sum(m.CLEANER_READ.name, BROKERS, "broker"), "read {{broker}}"),
            (rate_sum(m.CLEANER_WRITTEN.name, BROKERS, "broker"), "written {{broker}}"),
            width=8))
        .with_panel(timeseries_panel(
            "Since last compaction", "Seconds since the cleaner last finished a pass.", "s",
            (f"time() - max by (broker) "
             f"({m.CLEANER_LAST_RUN.name}{{{BROKERS}}} > 0)", "{{broker}}"), width=8))
        .with_panel(timeseries_panel(
            "Recovery at start", "How long loading the logs took at the last start.", "s",
            (f"max by (broker) ({m.LOG_RECOVERY_DURATION.name}{{{BROKERS}}})", "{{broker}}"),
            width=8))
        .with_row(Row("Transactions"))
        .with_panel(timeseries_panel(
            "Transactions ended", "Per second at the coordinators: committed, aborted, and "
            "aborted for outliving transaction.timeout.ms.", "ops",
            (rate_sum(m.TXN_STARTED.name, BROKERS, "broker"), "started {{broker}}"),
            (rate_sum(m.TXN_COMMITTED.name, BROKERS, "broker"), "committed {{broker}}"),
            (rate_sum(m.TXN_ABORTED.name, BROKERS, "broker"), "aborted {{broker}}"),
            (rate_sum(m.TXN_TIMED_OUT.name, BROKERS, "broker"), "timed out {{broker}}"),
            width=8))
        .with_panel(timeseries_panel(
            "Transactional ids by state", "Ids the brokers coordinate, by Kafka state.",
            "short",
            (f"sum by (state) ({m.TXN_IDS.name}{{{BROKERS}}})", "{{state}}"), width=8))
        .with_panel(timeseries_panel(
            "Marker write p99", "From Prepare{Commit,Abort} to every partition's marker: "
            "how long an ending transaction holds the LSO back.", "s",
            (quantile(0.99, m.TXN_MARKER_DURATION.name, BROKERS, "broker"), "{{broker}}"),
            width=8))
        .with_panel(timeseries_panel(
            "Open transactions", "Transactions without a marker yet on the partitions each "
            "broker leads (they hold read_committed consumers back).", "short",
            (f"sum by (broker) ({m.OPEN_TRANSACTIONS.name}{{{BROKERS}}})", "{{broker}}"),
            width=8))
        .with_panel(timeseries_panel(
            "Oldest open transaction", "Age of the oldest open transaction; past "
            "transaction.max.timeout.ms it is hanging (kafka-transactions find-hanging).", "s",
            (f"max by (broker) ({m.OLDEST_OPEN_TRANSACTION.name}{{{BROKERS}}})", "{{broker}}"),
            width=8))
        .with_panel(timeseries_panel(
            "LSO lag (per-topic labels on)", "Log end minus last stable offset, the "
            "partitions furthest behind.", "short",
            (f"topk(10, {m.PARTITION_LSO_LAG.name}{{{BROKERS}}})", "{{topic}}-{{partition}}"),
            width=8))
    )
