"""Scrape-time state: partitions, controller, purgatory, log dirs, read on the event loop."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from odradek.metrics import BrokerMetrics
from odradek.metrics.sources import ControllerState
from tests.harness.metrics_fakes import (
    FakeController,
    FakeCoordinator,
    FakeLogs,
    FakePurgatory,
    FakeReplicaManager,
    follower,
    leader,
)


def test_replication_counts_come_from_the_partitions_led_here() -> None:
    metrics = BrokerMetrics(process_metrics=False)
    replicas = FakeReplicaManager([
        leader("a", 0, isr=3),
        leader("a", 1, isr=2),          # under-replicated, at min ISR
        leader("b", 0, isr=1),          # under-replicated, under min ISR
        follower("a", 2, end=90, leader_end=100),
        follower("b", 1, end=50, leader_end=None),
    ])
    metrics.attach(partitions=replicas)
    assert metrics.sample("odradek_broker_partitions") == 5
    assert metrics.sample("odradek_broker_leader_partitions") == 3
    assert metrics.sample("odradek_broker_under_replicated_partitions") == 2
    assert metrics.sample("odradek_broker_under_min_isr_partitions") == 1
    assert metrics.sample("odradek_broker_at_min_isr_partitions") == 1
    assert metrics.sample("odradek_replica_fetcher_max_lag_records") == 10
    b0, a1 = {"topic": "b", "partition": "0"}, {"topic": "a", "partition": "1"}
    assert metrics.sample("odradek_partition_under_replicated", b0) == 1
    assert metrics.sample("odradek_partition_in_sync_replicas", a1) == 2
    # replication series only from the leader: a cluster-wide sum counts each partition once
    assert metrics.sample("odradek_partition_replicas", {"topic": "a", "partition": "2"}) is None
    assert metrics.sample("odradek_log_end_offset", {"topic": "a", "partition": "2"}) == 90
    assert metrics.sample("odradek_log_segments", {"topic": "b", "partition": "1"}) == 2
    replicas.states[2] = leader("b", 0, isr=3)  # state is read at scrape time: no stale gauge
    assert metrics.sample("odradek_broker_under_min_isr_partitions") == 0


def test_controller_counts_only_on_the_active_controller() -> None:
    metrics = BrokerMetrics(process_metrics=False)
    controller = FakeController(ControllerState(active=False, offline_partitions=4, topics=2,
                                                partitions=9, event_queue_size=1))
    metrics.attach(controller=controller, purgatory=FakePurgatory({"produce": 3, "fetch": 7}))
    assert metrics.sample("odradek_controller_active") == 0
    assert metrics.sample("odradek_controller_offline_partitions") == 0
    controller.state = ControllerState(active=True, offline_partitions=4, topics=2, partitions=9)
    assert metrics.sample("odradek_controller_active") == 1
    assert metrics.sample("odradek_controller_offline_partitions") == 4
    assert metrics.sample("odradek_controller_partitions") == 9
    assert metrics.sample("odradek_purgatory_size", {"operation": "fetch"}) == 7


def test_log_dir_space_is_the_filesystems(tmp_path: Path) -> None:
    metrics = BrokerMetrics(process_metrics=False)
    metrics.attach(log_dirs=[str(tmp_path)])
    capacity = metrics.sample("odradek_log_dir_capacity_bytes", {"log_dir": str(tmp_path)})
    free = metrics.sample("odradek_log_dir_free_bytes", {"log_dir": str(tmp_path)})
    assert capacity is not None and free is not None and 0 < free <= capacity


def test_a_failing_source_costs_only_its_own_families() -> None:
    class Broken:
        def partitions(self):
            raise RuntimeError("replica manager is being rebuilt")

    metrics = BrokerMetrics(process_metrics=False)
    metrics.attach(partitions=Broken(), purgatory=FakePurgatory({"produce": 1}))
    text = metrics.exposition().decode()
    assert "odradek_broker_partitions" not in text
    assert 'odradek_purgatory_size{operation="produce"} 1.0' in text


def test_sources_are_read_on_the_event_loop_thread() -> None:
    """A scrape from another thread hops onto the loop; it never reads loop state itself."""
    seen: list[int] = []

    class Recording(FakeReplicaManager):
        def partitions(self):
            seen.append(threading.get_ident())
            return super().partitions()

    async def main() -> None:
        metrics = BrokerMetrics(process_metrics=False)
        metrics.attach(partitions=Recording([leader("t", 0, isr=3)]))
        metrics.start()
        try:
            text = await asyncio.to_thread(metrics.exposition)
            assert "odradek_broker_leader_partitions 1.0" in text.decode()
            assert "odradek_event_loop_tasks" in text.decode()
            assert seen == [threading.get_ident()]
        finally:
            await metrics.stop()

    asyncio.run(main())


def test_a_stuck_loop_still_gets_recorded_metrics(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        metrics = BrokerMetrics(process_metrics=False)
        metrics.state._timeout = 0.3
        metrics.attach(partitions=FakeReplicaManager([leader("t", 0, isr=3)]),
                       groups=FakeCoordinator(), logs=FakeLogs())
        metrics.start()
        metrics.traffic.produced("t", 10, 1)
        result: list[bytes] = []
        took: list[float] = []

        def scrape() -> None:
            started = time.monotonic()
            result.append(metrics.exposition())
            took.append(time.monotonic() - started)

        thread = threading.Thread(target=scrape)
        thread.start()
        time.sleep(1.0)  # block the loop: the scrape must give up on state, not hang
        thread.join()
        assert took[0] < 0.55, "one timeout (0.3 s), not one per hop onto the loop"
        await metrics.stop()
        text = result[0].decode()
        assert "odradek_broker_bytes_in_total 10.0" in text
        assert "odradek_broker_partitions" not in text

    asyncio.run(main())
    assert "did not answer" in caplog.text


def test_quota_sensors_are_exported_per_quota_entity() -> None:
    from odradek.quota import QuotaEntity, QuotaManager, QuotaType

    now = [0.0]
    quotas = QuotaManager(2, 1, lambda: now[0])
    quotas.configure({QuotaEntity(None, "app"): {"producer_byte_rate": 1000.0},
                      QuotaEntity("alice"): {"request_percentage": 10.0}})
    metrics = BrokerMetrics(process_metrics=False)
    metrics.attach(quotas=quotas)
    assert quotas.record(QuotaType.PRODUCE, "bob", "app", 3000.0) == 1000  # capped
    quotas.record(QuotaType.REQUEST, "alice", "x", 5.0)  # 50 ms of a thread
    now[0] = 500.0
    app, alice = {"user": "", "client_id": "app"}, {"user": "alice", "client_id": ""}
    # measured over at least one full window plus the current one's elapsed half
    assert metrics.sample("odradek_quota_produce_bytes_per_second", app) == 2000.0
    assert metrics.sample("odradek_quota_request_time_ratio", alice) == pytest.approx(0.05 / 1.5)
    assert metrics.sample("odradek_quota_throttle_time_seconds_total",
                          {"quota": "produce", **app}) == 1.0
    assert metrics.sample("odradek_quota_throttled_responses_total",
                          {"quota": "produce", **app}) == 1
    assert metrics.sample("odradek_quota_fetch_bytes_per_second", app) is None
