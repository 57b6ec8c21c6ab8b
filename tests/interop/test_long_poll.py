"""Long-poll fetch: the broker parks a Fetch until min_bytes arrive or max_wait_ms passes.

Three observable consequences, checked with real clients:

* An idle consumer does not spin: librdkafka's request counters (statistics callback) show
  about one Fetch per ``fetch.wait.max.ms``, not thousands.
* A parked fetch completes as soon as data arrives (well before ``fetch.wait.max.ms``).
* With ``fetch.min.bytes`` unreachable, the fetch still returns by ``fetch.wait.max.ms``,
  with the data there is.
"""

from __future__ import annotations

import json
import threading
import time

import confluent_kafka
import kafka
import pytest

from tests.interop.conftest import Target

SLACK_S = 1.5  # scheduling, client poll granularity and a loaded 2-core machine


def _consumer(target: Target, topic: str, **config: object) -> confluent_kafka.Consumer:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": target.bootstrap,
        "group.id": "odradek-interop-assign-only",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        **config,
    })
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    return consumer


def _produce_one(target: Target, topic: str, value: bytes) -> float:
    """Produce one message with acks=all; returns the monotonic time of the ack."""
    producer = confluent_kafka.Producer({"bootstrap.servers": target.bootstrap, "acks": -1,
                                         "linger.ms": 0})
    done: list[float] = []
    producer.produce(topic, value, on_delivery=lambda err, msg: done.append(time.monotonic())
                     if err is None else None)
    assert producer.flush(30) == 0 and done, "the message was not acknowledged"
    return done[0]


def _poll_until_message(consumer: confluent_kafka.Consumer, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = consumer.poll(0.05)
        if msg is not None:
            assert msg.error() is None, msg.error()
            return msg, time.monotonic()
    raise AssertionError(f"no message within {timeout}s")


def test_idle_consumer_fetches_once_per_max_wait(target: Target) -> None:
    topic = target.create_topic(1, prefix="longpoll-idle")
    fetches: list[int] = []

    def on_stats(raw: str) -> None:
        stats = json.loads(raw)
        fetches.append(sum(b.get("req", {}).get("Fetch", 0)
                           for b in stats["brokers"].values() if b.get("nodeid", -1) >= 0))

    max_wait_ms = 1000
    consumer = _consumer(target, topic, **{"fetch.wait.max.ms": max_wait_ms,
                                           "statistics.interval.ms": 500,
                                           "stats_cb": on_stats})
    try:
        # Warm up until fetching has started, then count Fetch requests over an idle window.
        deadline = time.monotonic() + 30
        while (not fetches or fetches[-1] == 0) and time.monotonic() < deadline:
            assert consumer.poll(0.1) is None
        assert fetches and fetches[-1] > 0, "the consumer never fetched"
        first, window_start = fetches[-1], time.monotonic()
        while time.monotonic() - window_start < 4.0:
            assert consumer.poll(0.1) is None
        count = fetches[-1] - first
        elapsed = time.monotonic() - window_start
    finally:
        consumer.close()
    # ~4 parked fetches of 1 s each, plus the stats lag of one interval either side.
    assert 1 <= count <= elapsed / (max_wait_ms / 1000) + 3, (
        f"{count} Fetch requests in {elapsed:.1f}s of idle consumption with "
        f"fetch.wait.max.ms={max_wait_ms}: the broker does not hold fetches")


def test_parked_fetch_completes_when_data_arrives(target: Target) -> None:
    topic = target.create_topic(1, prefix="longpoll-wake")
    consumer = _consumer(target, topic, **{"fetch.wait.max.ms": 10_000, "fetch.min.bytes": 1})
    try:
        # Let the consumer reach the (empty) partition and park a fetch.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            assert consumer.poll(0.1) is None
            if consumer.position([confluent_kafka.TopicPartition(topic, 0)])[0].offset == 0:
                break
        acked = _produce_one(target, topic, b"wake up")
        msg, received = _poll_until_message(consumer, 15)
    finally:
        consumer.close()
    assert msg.value() == b"wake up"
    assert received - acked < SLACK_S, (
        f"message arrived {received - acked:.2f}s after its ack with fetch.wait.max.ms=10000:"
        " the parked fetch was not completed by the append")


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_fetch_returns_by_max_wait_when_min_bytes_unmet(target: Target, client: str) -> None:
    topic = target.create_topic(1, prefix="longpoll-maxwait")
    max_wait_ms = 1000
    if client == "confluent":
        consumer = _consumer(target, topic, **{"fetch.wait.max.ms": max_wait_ms,
                                               "fetch.min.bytes": 10_000_000})
        assert consumer.poll(0.5) is None
        acked = _produce_one(target, topic, b"small")
        try:
            msg, received = _poll_until_message(consumer, 15)
        finally:
            consumer.close()
        value = msg.value()
    else:
        kp = kafka.KafkaConsumer(bootstrap_servers=target.bootstrap, group_id=None,
                                 enable_auto_commit=False, fetch_min_bytes=10_000_000,
                                 fetch_max_wait_ms=max_wait_ms, request_timeout_ms=30_000)
        try:
            kp.assign([kafka.TopicPartition(topic, 0)])
            kp.seek(kafka.TopicPartition(topic, 0), 0)
            assert not kp.poll(timeout_ms=500)
            acked = _produce_one(target, topic, b"small")
            value, received = None, 0.0
            deadline = time.monotonic() + 15
            while value is None and time.monotonic() < deadline:
                for batch in kp.poll(timeout_ms=50).values():
                    value, received = batch[0].value, time.monotonic()
        finally:
            kp.close()
        assert value is not None, "no message within 15s"
    assert value == b"small"
    assert received - acked < max_wait_ms / 1000 + SLACK_S, (
        f"fetch with unmet min_bytes returned {received - acked:.2f}s after the data arrived;"
        f" fetch.wait.max.ms={max_wait_ms}")


def test_fetch_wait_does_not_block_other_requests(target: Target) -> None:
    """A parked fetch on one connection must not delay metadata or produce on others."""
    topic = target.create_topic(1, prefix="longpoll-other")
    consumer = _consumer(target, topic, **{"fetch.wait.max.ms": 10_000})
    stop = threading.Event()

    def poll_loop() -> None:
        deadline = time.monotonic() + 30
        while not stop.is_set() and time.monotonic() < deadline:
            consumer.poll(0.1)

    thread = threading.Thread(target=poll_loop)
    thread.start()
    try:
        started = time.monotonic()
        _produce_one(target, topic, b"meanwhile")
        assert time.monotonic() - started < 5.0
    finally:
        stop.set()
        thread.join(35)
        consumer.close()
