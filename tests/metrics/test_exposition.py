"""The /metrics HTTP server: beside the loop, one per broker, 0 = off."""

from __future__ import annotations

import asyncio
import urllib.request

from odradek.metrics import BrokerMetrics, MetricsOptions

from .fakes import FakeReplicaManager, leader


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
            assert 'odradek_partition_under_replicated{partition="1",topic="t"} 1.0' in two
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
