"""Incremental fetch sessions with the clients that use them: Apache Kafka's Java consumer
(which opens a session with every broker by default) and odradek's own follower fetcher.

The session rules themselves are tested sans I/O in tests/replication/test_fetch_session.py.
"""

from __future__ import annotations

import subprocess
import threading
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness.apache_kafka import CONSOLE_CONSUMER, ApacheKafka

from .conftest import BrokerStarter, wait_until_true
from .inprocess import InProcessBroker


def sessions(broker: InProcessBroker) -> tuple[float, float]:
    """(sessions, partitions cached) as the broker exports them."""
    assert broker.broker is not None and broker.broker.metrics is not None
    metrics = broker.broker.metrics
    return (metrics.sample("odradek_fetch_sessions") or 0.0,
            metrics.sample("odradek_fetch_session_partitions") or 0.0)


def produce(bootstrap: str, topic: str, values: list[bytes], partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for index, value in enumerate(values):
        producer.produce(topic, value, partition=index % partitions)
    assert producer.flush(30) == 0


def test_the_java_consumer_reads_everything_through_a_session_and_survives_its_eviction(
    start_broker: BrokerStarter, topic_name: str, kafka_jars: ApacheKafka,
) -> None:
    broker = start_broker(0)
    bootstrap = broker.bootstrap
    partitions = 6
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic_name, partitions, 1)])[topic_name].result(30)
    rounds = [[b"r%d-%03d" % (r, i) for i in range(60)] for r in range(6)]
    total = sum(len(r) for r in rounds)
    consumer = subprocess.Popen(
        kafka_jars.java_command(CONSOLE_CONSUMER, [
            "--bootstrap-server", bootstrap, "--topic", topic_name, "--from-beginning",
            "--max-messages", str(total), "--timeout-ms", "90000",
            "--consumer-property", "fetch.max.wait.ms=200"]),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert broker.broker is not None and broker.broker._services is not None
    cache = broker.broker._services.replica_manager.fetch_sessions
    try:
        produce(bootstrap, topic_name, rounds[0], partitions)
        # The consumer keeps one session with the broker, holding all six partitions.
        wait_until_true(lambda: sessions(broker) == (1, partitions), 60,
                        "the Java consumer's fetch session")
        evicted: set[int] = set()

        def evict_all() -> None:
            evicted.update(cache.sessions)
            for session_id in evicted:
                cache.remove(session_id)

        def replaced() -> bool:
            return (bool(cache.sessions) and not evicted & set(cache.sessions)
                    and sessions(broker) == (1, partitions))

        for number, values in enumerate(rounds[1:], start=1):
            if number == 3:  # evict it, as a full cache would: FETCH_SESSION_ID_NOT_FOUND
                broker.call(evict_all)
            produce(bootstrap, topic_name, values, partitions)
            if number == 3:  # the consumer starts over with a full fetch and a new session
                wait_until_true(replaced, 60, "a new session after the eviction")
            time.sleep(0.3)
        out, err = consumer.communicate(timeout=120)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    assert consumer.returncode == 0, err[-3000:]
    got = out.splitlines()
    want = [v.decode() for r in rounds for v in r]
    assert sorted(got) == sorted(want), (
        f"{len(got)} records, {len(set(want) - set(got))} missing, "
        f"{len(got) - len(set(got))} duplicated")


def test_a_full_session_cache_leaves_the_second_consumer_sessionless_but_served(
    start_broker: BrokerStarter, topic_name: str, kafka_jars: ApacheKafka,
) -> None:
    broker = start_broker(0, max_incremental_fetch_session_cache_slots="1")
    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(30)
    values = [b"v%03d" % i for i in range(200)]
    produce(bootstrap, topic_name, values, 2)
    outputs: list[str] = []

    def consume() -> None:
        proc = kafka_jars.run_java_tool(CONSOLE_CONSUMER, [
            "--bootstrap-server", bootstrap, "--topic", topic_name, "--from-beginning",
            "--max-messages", str(len(values)), "--timeout-ms", "60000"], 120)
        outputs.append(proc.stdout if proc.returncode == 0 else f"exit {proc.returncode}")

    threads = [threading.Thread(target=consume) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(150)
    want = sorted(v.decode() for v in values)
    assert [sorted(o.splitlines()) for o in outputs] == [want, want]
    assert sessions(broker)[0] <= 1
