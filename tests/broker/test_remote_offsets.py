"""The coordinator's cache of end offsets of partitions led elsewhere (ListOffsets to leaders).

A real in-process broker answers; a leader that hangs is a real TCP peer that accepts the
connection and never answers (what a stopped or partitioned broker looks like). The whole
path through scrapes of a 3-broker cluster is in ``tests/metrics/test_remote_lag.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.broker.remote_offsets import RemoteLogOffsets
from odradek.metrics.lag import LogOffsets
from odradek.types import TopicPartition
from tests.broker.inprocess import InProcessBroker


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rounds_are_paced_and_a_hung_leader_costs_one_timeout_then_ages_out(
        start_broker: Callable[..., InProcessBroker], topic_name: str) -> None:
    broker = start_broker()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce(topic_name, b"x", partition=i % 2)
    assert producer.flush(30) == 0
    first, second = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
    wanted = [first, second]

    async def scenario() -> None:
        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(1 << 16)  # reads the request, never answers
            await asyncio.sleep(30)

        hung = await asyncio.start_server(silent, "127.0.0.1", 0)
        hung_port = hung.sockets[0].getsockname()[1]
        addresses = {0: ("127.0.0.1", broker.port), 1: ("127.0.0.1", hung_port)}
        leaders = dict.fromkeys(wanted, 0)
        clock = Clock()
        remote = RemoteLogOffsets(7, leaders.get, addresses.get, timeout=0.5, interval=5.0,
                                  max_age=60.0, clock=clock)
        round_done = remote.refresh(wanted)
        assert round_done is not None
        await asyncio.wrap_future(round_done)
        found, age = remote.offsets(wanted)
        assert found == {first: LogOffsets(0, 5), second: LogOffsets(0, 5)}
        assert age == 0.0
        clock.now += 1
        assert remote.refresh(wanted) is None  # paced: within the interval, the cache serves

        # The leader of partition 1 hangs: its round ends after one timeout, the last value
        # is served with its age, and dropped once older than max_age.
        clock.now += 5
        leaders[second] = 1
        started = time.monotonic()
        round_done = remote.refresh(wanted)
        assert round_done is not None
        await asyncio.wrap_future(round_done)
        assert time.monotonic() - started < 2.0
        found, age = remote.offsets(wanted)
        assert found[second] == LogOffsets(0, 5) and age == 6.0
        clock.now += 55
        found, age = remote.offsets(wanted)
        assert list(found) == [first] and age == 55.0  # partition 0 was refreshed
        assert remote.refresh([first]) is not None  # forgets what is not wanted
        assert remote.offsets(wanted)[0].keys() == {first}
        await remote.close()
        hung.close()

    asyncio.run(scenario())
