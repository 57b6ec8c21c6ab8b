"""A follower sends its next Fetch in the turn the leader's answer arrives.

The leader's high watermark, and so every acks=all write and every consumer's view of a
record, waits for the followers' *next* Fetch after the one that carried the record. When
the answer was handed from the connection's read loop to the fetcher's task, each round trip
paid one more event-loop hand-off, a millisecond or more on a busy broker (measured with the
open-loop latency probe at 1k msgs/s, RF 3: 3.6 ms median at load 7). Two in-process brokers
on real ZooKeeper replicate a topic with acks=all, and every follower Fetch records which
task laid it out.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.replication import fetcher as fetcher_module

from .conftest import BrokerStarter

_FETCHER_TASK_PREFIX = "replica-fetcher-"


def test_the_follower_sends_its_next_fetch_from_the_read_loop_that_got_the_answer(
    start_broker: BrokerStarter, topic_name: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    leader = start_broker(0)
    follower = start_broker(1, replica_fetch_wait_max_ms="200")
    bootstrap = f"{leader.bootstrap},{follower.bootstrap}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(topic_name, 1, replica_assignment=[[0, 1]],
                     config={"min.insync.replicas": "2"})
    admin.create_topics([topic])[topic_name].result(30)

    real_encode = fetcher_module.encode_fetch_request
    senders: list[str] = []

    def encode_recording_the_task(*args: Any, **kwargs: Any) -> bytes:
        task = asyncio.current_task()
        senders.append(task.get_name() if task is not None else "no task")
        return real_encode(*args, **kwargs)

    monkeypatch.setattr(fetcher_module, "encode_fetch_request", encode_recording_the_task)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "message.timeout.ms": 20_000})
    delivered: list[Any] = []
    for index in range(10):  # one at a time: each record is one replication round trip
        producer.produce(topic_name, b"%d" % index,
                         on_delivery=lambda err, _msg: delivered.append(err))
        assert producer.flush(10) == 0
    assert delivered == [None] * 10, f"acks=all deliveries failed: {delivered}"

    from_task = [name for name in senders if name.startswith(_FETCHER_TASK_PREFIX)]
    chained = len(senders) - len(from_task)
    assert len(senders) >= 10, f"only {len(senders)} follower fetches for 10 records"
    # The fetcher's task sends the Fetch that starts a chain (here the one in flight when
    # the spy was installed); every later one leaves from the read loop.
    assert len(from_task) <= 1 and chained >= 9, (
        f"{len(from_task)} of {len(senders)} follower Fetches were sent from the fetcher's "
        f"task, a loop turn after their answer arrived ({senders})")
