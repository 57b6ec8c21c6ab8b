"""Consumer lag computed from the coordinator's offsets and the logs (fakes of both)."""

from __future__ import annotations

from odradek.metrics import BrokerMetrics, MetricsOptions
from odradek.metrics.lag import (
    LogOffsets,
    clamped_lag,
    is_sink_marker_group,
    sink_marker_group,
)
from odradek.types import TopicPartition
from tests.harness.metrics_fakes import FakeCoordinator, FakeLog, FakeLogs

NOW = 1_700_000_000.0


def _metrics(options: MetricsOptions | None = None) -> tuple[BrokerMetrics, FakeCoordinator,
                                                             FakeLogs]:
    metrics = BrokerMetrics(options, process_metrics=False)
    coordinator, logs = FakeCoordinator(), FakeLogs()
    metrics.attach(groups=coordinator, logs=logs)
    assert metrics.state.sources.lag is not None
    metrics.state.sources.lag._clock = lambda: NOW
    return metrics, coordinator, logs


def _row(group: str, topic: str, partition: int) -> dict[str, str]:
    return {"group": group, "topic": topic, "partition": str(partition)}


def test_lag_is_produced_minus_committed() -> None:
    metrics, coordinator, logs = _metrics()
    log = logs.logs[TopicPartition("events", 0)] = FakeLog()
    log.append(100, timestamp_ms=int((NOW - 60) * 1000))
    log.append(50, timestamp_ms=int((NOW - 10) * 1000))
    coordinator.set("billing", "Stable", 2, {TopicPartition("events", 0): 70})
    row = _row("billing", "events", 0)
    assert metrics.sample("odradek_consumer_group_committed_offset", row) == 70
    assert metrics.sample("odradek_consumer_group_log_end_offset", row) == 150
    assert metrics.sample("odradek_consumer_group_lag_records", row) == 80
    # the oldest unconsumed record (offset 70) was written 60 s ago
    assert metrics.sample("odradek_consumer_group_lag_seconds", row) == 60.0
    assert metrics.sample("odradek_consumer_group_members", {"group": "billing"}) == 2
    assert metrics.sample("odradek_consumer_group_state",
                          {"group": "billing", "state": "Stable"}) == 1
    assert metrics.sample("odradek_consumer_group_state",
                          {"group": "billing", "state": "Empty"}) == 0


def test_caught_up_group_has_zero_lag_and_zero_seconds() -> None:
    metrics, coordinator, logs = _metrics()
    logs.logs[TopicPartition("events", 0)] = FakeLog()
    logs.logs[TopicPartition("events", 0)].append(10, timestamp_ms=0)
    coordinator.set("g", "Stable", 1, {TopicPartition("events", 0): 10})
    assert metrics.sample("odradek_consumer_group_lag_records", _row("g", "events", 0)) == 0
    assert metrics.sample("odradek_consumer_group_lag_seconds", _row("g", "events", 0)) == 0
    assert logs.timestamp_reads == 0  # nothing to read when caught up


def test_lag_never_negative_across_retention_and_commits_past_the_end() -> None:
    # retention deleted what the group had not read: it can only read from log start
    assert clamped_lag(5, LogOffsets(log_start_offset=40, high_watermark=100)) == (40, 60)
    # the commit is ahead of the end offset we know: nothing left to read
    assert clamped_lag(120, LogOffsets(log_start_offset=0, high_watermark=100)) == (100, 0)
    metrics, coordinator, logs = _metrics()
    log = logs.logs[TopicPartition("events", 0)] = FakeLog()
    log.append(100, timestamp_ms=int((NOW - 30) * 1000))
    coordinator.set("slow", "Stable", 1, {TopicPartition("events", 0): 5})
    log.delete_before(40)
    row = _row("slow", "events", 0)
    assert metrics.sample("odradek_consumer_group_lag_records", row) == 60
    assert metrics.sample("odradek_consumer_group_committed_offset", row) == 5
    coordinator.set("slow", "Stable", 1, {TopicPartition("events", 0): 500})
    assert metrics.sample("odradek_consumer_group_lag_records", row) == 0


def test_group_without_members_is_reported_until_its_offsets_expire() -> None:
    metrics, coordinator, logs = _metrics()
    logs.logs[TopicPartition("events", 0)] = FakeLog()
    logs.logs[TopicPartition("events", 0)].append(30, timestamp_ms=int(NOW * 1000))
    coordinator.set("gone", "Empty", 0, {TopicPartition("events", 0): 10})
    assert metrics.sample("odradek_consumer_group_lag_records", _row("gone", "events", 0)) == 20
    assert metrics.sample("odradek_consumer_group_members", {"group": "gone"}) == 0
    assert metrics.sample("odradek_consumer_group_state",
                          {"group": "gone", "state": "Empty"}) == 1
    coordinator.expire("gone")
    assert metrics.sample("odradek_consumer_group_lag_records", _row("gone", "events", 0)) is None
    assert metrics.sample("odradek_consumer_group_members", {"group": "gone"}) is None


def test_exactly_once_sink_marker_groups_have_no_lag_series() -> None:
    """A marker group's offset counts micro-batches: as lag it would grow for as long as the
    query runs and fire OdradekConsumerGroupLagGrowing."""
    metrics, coordinator, logs = _metrics()
    log = logs.logs[TopicPartition("metrics", 0)] = FakeLog()
    log.append(4_000, timestamp_ms=int((NOW - 900) * 1000))
    marker = sink_marker_group("page-metrics", "5f0c3f5e-3c1d-4b9e-9a43-2b7e8c1d0a6f", 1)
    assert is_sink_marker_group(marker)
    coordinator.set(marker, "Empty", 0, {TopicPartition("metrics", 0): 12})
    coordinator.set("dashboards", "Stable", 1, {TopicPartition("metrics", 0): 3_900})
    text = metrics.exposition().decode()
    assert f'group="{marker}"' not in text
    assert metrics.sample("odradek_consumer_group_lag_records",
                          _row("dashboards", "metrics", 0)) == 100
    # named like one only by the query id's shape: ordinary names keep their series
    for group in ("page-metrics", "page-metrics-7", "console-consumer-41234",
                  "spark-kafka-source-5f0c3f5e-3c1d-4b9e-9a43-2b7e8c1d0a6f--1"):
        assert not is_sink_marker_group(group), group


def test_unknown_end_offsets_still_report_the_commit_but_no_lag() -> None:
    metrics, coordinator, _ = _metrics()
    coordinator.set("g", "Stable", 1, {TopicPartition("elsewhere", 3): 42})
    row = _row("g", "elsewhere", 3)
    assert metrics.sample("odradek_consumer_group_committed_offset", row) == 42
    assert metrics.sample("odradek_consumer_group_lag_records", row) is None


def test_cap_keeps_a_stable_set_and_counts_what_it_dropped() -> None:
    metrics, coordinator, logs = _metrics(MetricsOptions(max_lag_series=3, max_groups=10))
    for partition in range(5):
        logs.logs[TopicPartition("t", partition)] = FakeLog()
        logs.logs[TopicPartition("t", partition)].append(10, timestamp_ms=int(NOW * 1000))
    coordinator.set("g", "Stable", 1, {TopicPartition("t", p): 5 for p in range(5)})
    dropped = {"metric": "odradek_consumer_group_lag_records"}
    for _ in range(3):  # the same rows scrape after scrape, each refused row counted once
        kept = [p for p in range(5)
                if metrics.sample("odradek_consumer_group_lag_records", _row("g", "t", p))
                is not None]
        assert kept == [0, 1, 2]
        assert metrics.sample("odradek_metrics_series_dropped_total", dropped) == 2
    # commits on 0-2 expired
    coordinator.set("g", "Stable", 1, {TopicPartition("t", p): 5 for p in (3, 4)})
    kept = [p for p in range(5)
            if metrics.sample("odradek_consumer_group_lag_records", _row("g", "t", p))
            is not None]
    assert kept == [3, 4]


def test_timestamp_reads_are_bounded_and_reused_while_the_position_stands() -> None:
    metrics, coordinator, logs = _metrics(MetricsOptions(lag_timestamp_reads=2))
    for partition in range(4):
        logs.logs[TopicPartition("t", partition)] = FakeLog()
        logs.logs[TopicPartition("t", partition)].append(10, timestamp_ms=int((NOW - 5) * 1000))
    coordinator.set("g", "Stable", 1, {TopicPartition("t", p): 0 for p in range(4)})
    def seconds() -> list[float | None]:
        text = metrics.exposition().decode()  # one scrape
        values: list[float | None] = []
        for p in range(4):
            prefix = f'odradek_consumer_group_lag_seconds{{group="g",topic="t",partition="{p}"}} '
            found = [line for line in text.splitlines() if line.startswith(prefix)]
            values.append(float(found[0].split()[-1]) if found else None)
        return values

    assert seconds() == [5.0, 5.0, None, None]  # the budget: 2 reads; no reading, no sample
    assert logs.timestamp_reads == 2
    assert seconds() == [5.0, 5.0, 5.0, 5.0]
    assert logs.timestamp_reads == 4
    assert seconds() == [5.0, 5.0, 5.0, 5.0]  # positions unchanged: readings reused
    assert logs.timestamp_reads == 4
    coordinator.set("g", "Stable", 1,
                    {TopicPartition("t", p): 3 if p == 0 else 0 for p in range(4)})
    seconds()
    assert logs.timestamp_reads == 5  # only the row whose position moved


def test_a_consumer_type_group_reports_its_own_states_epoch_and_type() -> None:
    metrics, coordinator, logs = _metrics()
    logs.logs[TopicPartition("events", 0)] = FakeLog()
    coordinator.set("kip848", "Reconciling", 2, {TopicPartition("events", 0): 0},
                    "consumer", 7)
    coordinator.set("classic", "Stable", 1, {}, "classic", 3)
    state = "odradek_consumer_group_state"
    assert metrics.sample(state, {"group": "kip848", "state": "Reconciling"}) == 1
    assert metrics.sample(state, {"group": "kip848", "state": "Stable"}) == 0
    # each type shows only its own states
    assert metrics.sample(state, {"group": "kip848", "state": "PreparingRebalance"}) is None
    assert metrics.sample(state, {"group": "classic", "state": "Assigning"}) is None
    assert metrics.sample("odradek_consumer_group_epoch", {"group": "kip848"}) == 7
    assert metrics.sample("odradek_consumer_group_epoch", {"group": "classic"}) == 3
    assert metrics.sample("odradek_consumer_group_info",
                          {"group": "kip848", "type": "consumer"}) == 1
    counts = "odradek_group_coordinator_groups"
    assert metrics.sample(counts, {"type": "consumer", "state": "Reconciling"}) == 1
    assert metrics.sample(counts, {"type": "classic", "state": "Stable"}) == 1
