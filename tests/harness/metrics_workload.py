"""Traffic for a live cluster whose metrics are looked at (the live metrics tests and
``make dashboards``): a producer, a committing consumer group and a transactional producer
(commits and the odd abort) at a modest, bounded rate, and a compacted topic with keyed
records in small segments so the cleaner has work."""

from __future__ import annotations

import itertools
import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

FLUSHED_TOPIC_CONFIG = {"flush.messages": "200"}
"""For the workload's topic: a flush every 200 records (a per-topic choice users make for data
they want on disk before replication acknowledges it). By default nothing flushes (Kafka's
log.flush.interval.* unset), and the flush and fsync panel would have nothing to show."""
TRANSACTION_EVERY = 10  # rounds: about one transaction a second
ABORT_EVERY = 4  # transactions: every fourth one aborts, so both endings show


class Workload:
    """Produce and consume with a committing group until stopped, at most ``limit_s``; about
    once a second a transaction of a few records ends (committed, or every fourth aborted).

    The transactions go to ``topic`` too. Faults the live tests inject (a killed broker, a
    frozen controller) can fail one: it is aborted, or its producer replaced, and the next
    round goes on."""

    def __init__(self, bootstrap: str, topic: str, group: str, limit_s: float) -> None:
        self.bootstrap, self.topic, self.group, self.limit_s = bootstrap, topic, group, limit_s
        self.produced = 0
        self.transactions_ended = 0
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="workload", daemon=True)

    def start(self) -> Workload:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30) -> None:
        self.stopping.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20,
                             "acks": "all"})
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                             "auto.offset.reset": "earliest", "auto.commit.interval.ms": 1000})
        consumer.subscribe([self.topic])
        transactional: Producer | None = None
        deadline = time.monotonic() + self.limit_s
        try:
            for round_ in itertools.count():
                if self.stopping.is_set() or time.monotonic() >= deadline:
                    break
                for i in range(50):
                    producer.produce(self.topic, f"event-{i}".encode())
                self.produced += 50
                producer.poll(0)
                consumer.poll(0.1)
                if round_ % TRANSACTION_EVERY == 0:
                    transactional = self._transaction(transactional, round_)
                self.stopping.wait(0.1)  # about 500 records/s: traffic, not a load test
        finally:
            producer.flush(10)
            consumer.close()

    def _transaction(self, producer: Producer | None, round_: int) -> Producer | None:
        """One transaction of five records; the producer to use next time (None: a new one)."""
        try:
            if producer is None:
                producer = Producer({"bootstrap.servers": self.bootstrap,
                                     "transactional.id": f"{self.group}-transactions",
                                     "transaction.timeout.ms": 30000})
                producer.init_transactions(10)
            producer.begin_transaction()
            for i in range(5):
                producer.produce(self.topic, f"transaction-{round_}-{i}".encode())
            if (self.transactions_ended + 1) % ABORT_EVERY == 0:
                producer.abort_transaction(10)
            else:
                producer.commit_transaction(10)
            self.transactions_ended += 1
            return producer
        except KafkaException as exc:
            if producer is not None and exc.args[0].txn_requires_abort():
                try:
                    producer.abort_transaction(10)
                    return producer
                except KafkaException:
                    pass
            return None  # fatal, or an abort that failed too: init_transactions again


def create_compacted_topic(bootstrap: str, topic: str = "compacted") -> None:
    """Keyed records in 4 KiB segments of a compacted topic: the cleaner has work."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3, config={
        "cleanup.policy": "compact", "segment.bytes": "4096",
        "min.cleanable.dirty.ratio": "0.01"})])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "batch.size": 1000})
    for i in range(600):
        producer.produce(topic, f"value-{i}".encode() * 4, key=f"key-{i % 10}".encode())
    assert producer.flush(30) == 0
