"""The typed recording calls the broker makes, read back through the exposition."""

from __future__ import annotations

import asyncio

import pytest

from odradek.metrics import BrokerMetrics, MetricsOptions
from odradek.metrics.recorders import api_name, error_name
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.errors import ErrorCode


def test_request_phases_and_total() -> None:
    metrics = BrokerMetrics(process_metrics=False)
    metrics.requests.observe(ApiKey.PRODUCE, 0.001, 0.002, 0.5, 0.003)
    metrics.requests.observe(ApiKey.PRODUCE, 0.0, 0.001, 0.0, 0.0)
    produce = {"api": "Produce"}
    assert metrics.sample("odradek_requests_total", produce) == 2
    assert metrics.sample("odradek_request_duration_seconds_sum", produce) == pytest.approx(0.507)
    assert metrics.sample("odradek_request_phase_duration_seconds_sum",
                          {"api": "Produce", "phase": "remote"}) == pytest.approx(0.5)
    assert metrics.sample("odradek_request_phase_duration_seconds_bucket",
                          {"api": "Produce", "phase": "remote", "le": "0.25"}) == 1
    assert metrics.sample("odradek_request_phase_duration_seconds_count",
                          {"api": "Produce", "phase": "queue"}) == 2


def test_errors_by_kafka_names() -> None:
    metrics = BrokerMetrics(process_metrics=False)
    metrics.requests.error(ApiKey.FETCH, ErrorCode.not_leader_or_follower, count=3)
    assert metrics.sample("odradek_request_errors_total",
                          {"api": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER"}) == 3
    assert api_name(ApiKey.LIST_OFFSETS) == "ListOffsets"
    assert api_name(ApiKey.OFFSET_FOR_LEADER_EPOCH) == "OffsetForLeaderEpoch"
    assert api_name(9999) == "9999"
    assert error_name(9999) == "9999"


def test_per_topic_traffic_is_off_by_default() -> None:
    metrics = BrokerMetrics(process_metrics=False)
    metrics.traffic.produced("events", 1000, 10)
    metrics.traffic.fetched("events", 400)
    assert metrics.sample("odradek_broker_bytes_in_total") == 1000
    assert metrics.sample("odradek_broker_messages_in_total") == 10
    assert metrics.sample("odradek_broker_bytes_out_total") == 400
    lines = metrics.exposition().decode().splitlines()
    assert not [line for line in lines if line.startswith("odradek_topic_")]


def test_per_topic_traffic_is_capped_and_released_on_delete() -> None:
    metrics = BrokerMetrics(MetricsOptions(topic_labels=True, max_topics=2),
                            process_metrics=False)
    for topic in ("a", "b", "c", "c"):
        metrics.traffic.produced(topic, 100, 1)
    assert metrics.sample("odradek_broker_bytes_in_total") == 400  # the total is never capped
    assert metrics.sample("odradek_topic_bytes_in_total", {"topic": "b"}) == 100
    assert metrics.sample("odradek_topic_bytes_in_total", {"topic": "c"}) is None
    assert metrics.sample("odradek_metrics_series_dropped_total",
                          {"metric": "odradek_topic_bytes_in_total"}) == 1
    metrics.traffic.forget_topic("a")
    metrics.traffic.produced("d", 5, 1)
    assert metrics.sample("odradek_topic_bytes_in_total", {"topic": "a"}) is None
    assert metrics.sample("odradek_topic_messages_in_total", {"topic": "d"}) == 1


def test_connections_open_is_opened_minus_closed() -> None:
    metrics = BrokerMetrics(process_metrics=False)
    for _ in range(3):
        metrics.connections.opened("PLAINTEXT")
    metrics.connections.closed("PLAINTEXT")
    assert metrics.sample("odradek_connections", {"listener": "PLAINTEXT"}) == 2
    assert metrics.sample("odradek_connections_opened_total", {"listener": "PLAINTEXT"}) == 3


def test_zookeeper_state_is_one_hot_and_lost_counts_an_expiry() -> None:
    metrics = BrokerMetrics(process_metrics=False)
    # before the first connection every state is 0: the session-lost alert sees "not connected"
    assert metrics.sample("odradek_zookeeper_session_state", {"state": "connected"}) == 0
    for state in ("CONNECTED", "SUSPENDED", "LOST", "CONNECTED"):
        metrics.zookeeper.state_changed(state)
    assert metrics.sample("odradek_zookeeper_session_state", {"state": "connected"}) == 1
    assert metrics.sample("odradek_zookeeper_session_state", {"state": "lost"}) == 0
    assert metrics.sample("odradek_zookeeper_session_expirations_total") == 1
    with pytest.raises(ValueError):
        metrics.zookeeper.state_changed("CONFUSED")


def test_storage_cleaner_controller_and_replication_recorders() -> None:
    metrics = BrokerMetrics(process_metrics=False)
    metrics.storage.fsynced(0.004)
    metrics.storage.flushed(0.0002)
    metrics.storage.recovered(1.5, clean=10, unclean=2)
    metrics.cleaner.ran(2.0, read_bytes=1000, written_bytes=600, ended_at=123.0)
    metrics.replication.isr_shrunk()
    metrics.controller.leader_elected(unclean=True, partitions=3)
    metrics.purgatory.expired("fetch")
    assert metrics.sample("odradek_log_fsync_duration_seconds_count") == 1
    assert metrics.sample("odradek_log_recovery_partitions", {"clean": "false"}) == 2
    assert metrics.sample("odradek_log_cleaner_written_bytes_total") == 600
    assert metrics.sample("odradek_log_cleaner_last_run_timestamp_seconds") == 123.0
    assert metrics.sample("odradek_isr_shrinks_total") == 1
    assert metrics.sample("odradek_controller_unclean_leader_elections_total") == 3
    assert metrics.sample("odradek_purgatory_expirations_total", {"operation": "fetch"}) == 1


def test_event_loop_lag_probe_sees_a_blocked_loop() -> None:
    async def main() -> BrokerMetrics:
        metrics = BrokerMetrics(MetricsOptions(loop_lag_interval_seconds=0.01),
                                process_metrics=False)
        metrics.start()
        await asyncio.sleep(0.05)
        import time

        time.sleep(0.3)  # a handler that blocks the loop
        await asyncio.sleep(0.05)
        await metrics.stop()
        return metrics

    metrics = asyncio.run(main())
    assert metrics.sample("odradek_event_loop_lag_seconds_count", {}) >= 2  # type: ignore[operator]
    # the blocked 0.3 s shows up as one observation above 0.25 s
    above = (metrics.sample("odradek_event_loop_lag_seconds_count")  # type: ignore[operator]
             - metrics.sample("odradek_event_loop_lag_seconds_bucket", {"le": "0.25"}))
    assert above == 1
