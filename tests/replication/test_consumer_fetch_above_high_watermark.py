"""A consumer fetching between the leader's high watermark and its log end gets an empty
answer (Kafka's rule: only an offset beyond the log *end* is OFFSET_OUT_OF_RANGE).

Found by the soak (tests/longrun, seed 463175900): a preferred-leader election moved
soak-events-5 to a broker whose high watermark still lagged the old leader's; a librdkafka
consumer at the old high watermark (4402, the new leader's log end) got OFFSET_OUT_OF_RANGE
and reset to the beginning (with ``auto.offset.reset=latest``, Kafka clients' default, it
would have skipped records instead). odradek's consumer did the same on soak-audit-0.
Kafka's ``LocalLog.read`` throws only for ``startOffset > logEndOffset`` and returns an empty
read above the high watermark, because a new leader's HW lags until its followers fetch.

Here the lag is made to last: a paused follower keeps the HW where it was while acks=1
writes move the log end.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from tests.harness.zk import zk_client

from .support import FAST_FAILOVER, create_topic, producer, wait_for_isr

TOPIC = "hw-lag"


def test_fetch_between_high_watermark_and_log_end_is_empty_not_out_of_range(
    cluster_factory: Any,
) -> None:
    cluster = cluster_factory(3, **{**FAST_FAILOVER, "replica_lag_time_max_ms": "30000"})
    create_topic(cluster.bootstrap, TOPIC, replication=3)
    with zk_client(cluster.zookeeper_connect) as zk:
        state = wait_for_isr(zk, TOPIC, 3)
    leader = state["leader"]
    follower = next(b for b in state["isr"] if b != leader)
    paused = cluster.brokers[follower].process
    assert paused is not None
    os.kill(paused.pid, signal.SIGSTOP)  # in the ISR for 30 s more, fetching nothing
    try:
        writer = producer(cluster.brokers[leader].bootstrap,
                          **{"acks": "1", "enable.idempotence": False})
        for i in range(10):
            writer.produce(TOPIC, f"v{i}".encode())
        assert writer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": cluster.brokers[leader].bootstrap,
                             "group.id": "hw-lag", "enable.auto.commit": False,
                             "auto.offset.reset": "error"})
        try:
            _low, log_end = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0),
                                                           timeout=10, cached=False)
            consumer.assign([TopicPartition(TOPIC, 0, 5)])  # above the HW, below the end
            errors: list[str] = []
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                message = consumer.poll(0.2)
                error = message.error() if message is not None else None
                if error is not None:
                    errors.append(f"{error.name()}: {error.str()}")
        finally:
            consumer.close()
    finally:
        os.kill(paused.pid, signal.SIGCONT)
    assert not errors, (
        f"a fetch at offset 5 (log end {log_end}, high watermark held below it by the "
        f"paused follower {follower}) failed: {errors[:2]}")
