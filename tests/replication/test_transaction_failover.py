"""Transaction coordinator failure: kill -9 of the coordinator broker mid-commit in a
3-broker cluster still ends with every transaction fully committed or fully aborted."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.static.primitive import i8

from tests.broker.wire import WireClient

from .support import FAST_FAILOVER, create_topic

PER_TXN = 30
PARTITIONS = 3


def _coordinator_of(cluster: Any, transactional_id: str) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for broker in cluster.brokers:
            if not broker.running:
                continue
            try:
                with WireClient(broker.port) as client:
                    response = client.request(FindCoordinatorRequest(
                        key_type=i8(1), coordinator_keys=(transactional_id,)))
            except OSError:
                continue
            found = response.coordinators[0]
            if found.error_code == 0:
                return int(found.node_id)
        time.sleep(0.2)
    raise AssertionError(f"no coordinator for {transactional_id}")


def _producer(cluster: Any, transactional_id: str) -> Producer:
    return Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": transactional_id,
                     "transaction.timeout.ms": 30000, "linger.ms": 5})


def _run_txn(producer: Producer, number: int) -> None:
    producer.begin_transaction()
    for i in range(PER_TXN):
        producer.produce("eos", value=b"%d:%d" % (number, i), partition=i % PARTITIONS)


def _committed_counts(bootstrap: str) -> Counter[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition("eos", p, 0) for p in range(PARTITIONS)])
    counts: Counter[int] = Counter()
    quiet_since = time.monotonic()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() - quiet_since < 3 and time.monotonic() < deadline:
            batch = consumer.consume(num_messages=1000, timeout=0.5)
            for message in batch:
                value = message.value()
                if message.error() is None and value is not None:
                    counts[int(value.split(b":")[0])] += 1
            if batch:
                quiet_since = time.monotonic()
    finally:
        consumer.close()
    return counts


def test_killing_the_coordinator_mid_commit_leaves_every_transaction_whole(
    cluster_factory: Any,
) -> None:
    cluster = cluster_factory(3, **FAST_FAILOVER, transaction_state_log_num_partitions="3")
    create_topic(cluster.bootstrap, "eos", partitions=PARTITIONS, replication=3)
    transactional_id = "eos-writer"
    producer = _producer(cluster, transactional_id)
    producer.init_transactions(60)
    for number in range(3):
        _run_txn(producer, number)
        producer.commit_transaction(60)
    coordinator = _coordinator_of(cluster, transactional_id)
    _run_txn(producer, 3)
    assert producer.flush(60) == 0
    outcome: list[BaseException | None] = []

    def commit() -> None:
        try:
            producer.commit_transaction(20)
            outcome.append(None)
        except BaseException as exc:  # the commit may fail: that is the test
            outcome.append(exc)

    committer = threading.Thread(target=commit)
    committer.start()
    cluster.brokers[coordinator].kill()  # SIGKILL while EndTxn/markers are in flight
    committer.join(60)
    assert not committer.is_alive(), "commit_transaction must return"
    # A successor with the same id: its init waits for the new coordinator to finish (or
    # abort) transaction 3, then its own transaction commits through the new coordinator.
    successor = _producer(cluster, transactional_id)
    successor.init_transactions(90)
    _run_txn(successor, 4)
    successor.commit_transaction(60)
    counts = _committed_counts(cluster.bootstrap)
    assert {n: counts[n] for n in (0, 1, 2, 4)} == dict.fromkeys((0, 1, 2, 4), PER_TXN)
    assert counts[3] in (0, PER_TXN), f"transaction 3 is torn: {counts[3]} of {PER_TXN}"
    if outcome == [None]:
        assert counts[3] == PER_TXN, "a commit that returned success must be visible"
