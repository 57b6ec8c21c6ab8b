"""Client throughput: odradek's client vs confluent-kafka (librdkafka) and kafka-python,
producing and consuming the same records on the same broker in one run.

The broker is Apache Kafka 3.9 when its jars are available (so the broker is never the
bottleneck being measured), else odradek's own. Goals: odradek ≥ 50% of confluent-kafka and
≥ 2x kafka-python, for 100-byte records, acks=1, no compression, batch 64 KiB, linger 5 ms.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from bench.common import Context

RECORD = b"x" * 100


def _odradek_produce(bootstrap: str, topic: str, n: int) -> None:
    from odradek.client import Producer

    with Producer(bootstrap, acks=1, batch_size=65536, linger_ms=5) as producer:
        for _ in range(n):
            producer.send(topic, RECORD)
        producer.flush()


def _confluent_produce(bootstrap: str, topic: str, n: int) -> None:
    import confluent_kafka

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": 1,
                                         "batch.size": 65536, "linger.ms": 5,
                                         "queue.buffering.max.messages": 1_000_000})
    for _ in range(n):
        try:
            producer.produce(topic, RECORD)
        except BufferError:
            producer.poll(0.01)
            producer.produce(topic, RECORD)
    producer.flush()


def _kafka_python_produce(bootstrap: str, topic: str, n: int) -> None:
    import kafka

    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks=1, batch_size=65536,
                                   linger_ms=5)
    for _ in range(n):
        producer.send(topic, RECORD)
    producer.flush()
    producer.close()


def _odradek_consume(bootstrap: str, topic: str, n: int) -> None:
    from odradek.client import Consumer, TopicPartition

    consumer = Consumer(bootstrap_servers=bootstrap, max_poll_records=5000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    seen = 0
    while seen < n:
        seen += len(consumer.poll(1000))
    consumer.close()


def _confluent_consume(bootstrap: str, topic: str, n: int) -> None:
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                                         "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    seen = 0
    while seen < n:
        seen += len(consumer.consume(5000, 1.0))
    consumer.close()


def _kafka_python_consume(bootstrap: str, topic: str, n: int) -> None:
    import kafka

    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = kafka.TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    seen = 0
    while seen < n:
        seen += sum(len(v) for v in consumer.poll(1000, max_records=5000).values())
    consumer.close()


def _timed(fn: Callable[[str, str, int], None], bootstrap: str, topic: str, n: int) -> float:
    start = time.perf_counter()
    fn(bootstrap, topic, n)
    return n / (time.perf_counter() - start)


def _broker(stack: ExitStack, ctx: Context) -> tuple[str, str]:
    scratch = ctx.scratch_dir("client")
    try:
        from tests.harness.apache_kafka import ApacheKafka, apache_kafka_cluster

        if ApacheKafka().fetch_jars() is not None:
            broker: Any = stack.enter_context(apache_kafka_cluster(scratch))
            return broker.bootstrap, "apache-kafka"
    except ImportError:
        pass
    from odradek.local_cluster import LocalCluster

    cluster = LocalCluster(1, scratch)
    cluster.start()
    stack.callback(cluster.stop)
    return cluster.bootstrap, "odradek"


def run(ctx: Context) -> None:
    from odradek.client import AdminClient, NewTopic

    n = 100_000 if ctx.quick else 500_000
    with ExitStack() as stack:
        bootstrap, broker_name = _broker(stack, ctx)
        admin = AdminClient(bootstrap)
        topics = {name: f"bench-{name}-{uuid.uuid4().hex[:6]}"
                  for name in ("odradek", "confluent", "kafka_python")}
        admin.create_topics([NewTopic(t, 1, 1) for t in topics.values()])
        admin.close()
        produce = {
            "odradek": _timed(_odradek_produce, bootstrap, topics["odradek"], n),
            "confluent": _timed(_confluent_produce, bootstrap, topics["confluent"], n),
            "kafka_python": _timed(_kafka_python_produce, bootstrap, topics["kafka_python"],
                                   n // 5),
        }
        # Every client reads the same records (written by confluent).
        consume = {
            "odradek": _timed(_odradek_consume, bootstrap, topics["confluent"], n),
            "confluent": _timed(_confluent_consume, bootstrap, topics["confluent"], n),
            "kafka_python": _timed(_kafka_python_consume, bootstrap, topics["confluent"],
                                   n // 5),
        }
    for what, rates in (("produce", produce), ("consume", consume)):
        ctx.report(f"client.{what}.vs_confluent", rates["odradek"], "msgs/s",
                   reference=rates["confluent"], reference_name="confluent-kafka",
                   goal=">= 0.5", broker=broker_name, records=n)
        ctx.report(f"client.{what}.vs_kafka_python", rates["odradek"], "msgs/s",
                   reference=rates["kafka_python"], reference_name="kafka-python",
                   goal=">= 2.0", broker=broker_name)
