"""The /metrics HTTP server: beside the loop, one per broker, 0 = off."""

from __future__ import annotations

import asyncio
import urllib.request

from odradek.metrics import BrokerMetrics, MetricsOptions
from odradek.types import TopicPartition
from tests.harness.metrics_fakes import FakeReplicaManager, leader


def _get(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        return str(response.read().decode())


def test_two_brokers_in_one_process_export_their_own_numbers() -> None:
    async def main() -> None:
        first = BrokerMetrics(process_metrics=False)
        second = BrokerMetrics(process_metrics=False)
        first.attach(partitions=FakeReplicaManager([leader("t", 0, isr=3)]))
        second.attach(partitions=FakeReplicaManager([leader("t", 1, isr=1)]))
        first.start()
        second.start()
        ports = (first.serve("127.0.0.1", 0), second.serve("127.0.0.1", 0))
        try:
            first.traffic.produced("t", 111, 1)
            second.traffic.produced("t", 222, 2)
            one, two = await asyncio.gather(*(asyncio.to_thread(_get, p) for p in ports))
            assert "odradek_broker_bytes_in_total 111.0" in one
            assert "odradek_broker_bytes_in_total 222.0" in two
            assert 'odradek_partition_under_replicated{topic="t",partition="1"} 1.0' in two
            assert 'partition="1"' not in one
        finally:
            await first.stop()
            await second.stop()
        assert first.port is None

    asyncio.run(main())


def test_port_zero_in_the_options_serves_nothing() -> None:
    async def main() -> None:
        metrics = BrokerMetrics(MetricsOptions(port=0), process_metrics=False)
        metrics.start()
        assert metrics.port is None
        assert b"odradek_broker_bytes_in_total" in metrics.exposition()
        await metrics.stop()

    asyncio.run(main())


def test_the_configured_port_is_served_and_freed_on_stop() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main() -> None:
        for _ in range(2):  # the port is released on stop: a restarted broker binds it again
            metrics = BrokerMetrics(MetricsOptions(port=port), process_metrics=True)
            metrics.start()
            try:
                text = await asyncio.to_thread(_get, port)
                assert "process_resident_memory_bytes" in text
                assert "odradek_broker_info{" in text
            finally:
                await metrics.stop()

    asyncio.run(main())


def test_rendered_text_parses_back_to_the_same_samples() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from tests.harness.metrics_fakes import FakeCoordinator, FakeLog, FakeLogs

    metrics = BrokerMetrics(process_metrics=True)
    coordinator, logs = FakeCoordinator(), FakeLogs()
    metrics.attach(groups=coordinator, logs=logs)
    assert metrics.state.sources.lag is not None
    metrics.state.sources.lag._clock = lambda: 1000.0  # two collections, one lag_seconds
    logs.logs[TopicPartition("t", 0)] = FakeLog()
    logs.logs[TopicPartition("t", 0)].append(5, timestamp_ms=0)
    awkward = 'team "a"\\b\nc'  # group ids are user input: quotes, backslashes, newlines
    coordinator.set(awkward, "Stable", 1, {TopicPartition("t", 0): 2})
    metrics.requests.observe(0, 0.001, 0.002, 0.0, 0.0)
    metrics.storage.recovered(float("inf"), clean=1, unclean=0)
    expected = {(s.name, tuple(sorted(s.labels.items())), s.value)
                for family in metrics.registry.collect() for s in family.samples
                if not s.name.endswith("_created") and not s.name.startswith("process_")}
    parsed = {(s.name, tuple(sorted(s.labels.items())), s.value)
              for family in text_string_to_metric_families(metrics.exposition().decode())
              for s in family.samples if not s.name.startswith("process_")}
    assert parsed == expected
    assert ("odradek_consumer_group_lag_records",
            (("group", awkward), ("partition", "0"), ("topic", "t")), 3.0) in parsed


def test_gzip_when_asked_and_404_elsewhere() -> None:
    import gzip
    import urllib.error

    metrics = BrokerMetrics(process_metrics=False)
    port = metrics.serve("127.0.0.1", 0)
    try:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                         headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.headers["Content-Encoding"] == "gzip"
            assert b"odradek_broker_info" in gzip.decompress(response.read())
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/nope", timeout=10)
        except urllib.error.HTTPError as error:
            assert error.code == 404
        else:
            raise AssertionError("a path other than /metrics must be a 404")
    finally:
        asyncio.run(metrics.stop())
