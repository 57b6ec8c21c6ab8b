"""odradek's transactional producer against Apache Kafka 3.9 (the reference) and odradek's
broker: committed transactions are visible to read_committed consumers (odradek's and
librdkafka's), aborted ones never; a second producer with the same transactional.id fences
the first; offsets sent to a transaction become the group's only when it commits."""

from __future__ import annotations

import time
import uuid

import pytest

from odradek.client import (
    AdminClient,
    Consumer,
    IllegalTransactionState,
    Producer,
    TopicPartition,
    TransactionFatal,
)
from tests.harness.kafka import read_values

from .conftest import Target, create_topic


def _txn_producer(bootstrap: str, transactional_id: str, **extra: object) -> Producer:
    return Producer(bootstrap, transactional_id=transactional_id, linger_ms=5,
                    max_block_ms=20_000, **extra)


def _odradek_values(bootstrap: str, topic: str, isolation: str, want: int,
                    partitions: int = 2) -> list[bytes]:
    """Every value in ``topic``; also checks the consumer's position ends at the log end,
    past the last marker (which is never a record)."""
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                        isolation_level=isolation)
    values: list[bytes] = []
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        deadline = time.monotonic() + 20
        while len(values) < want and time.monotonic() < deadline:
            values += [r.value for r in consumer.poll(300) if r.value is not None]
        values += [r.value for r in consumer.poll(700) if r.value is not None]  # no more
        ends = consumer.end_offsets(tps)
        assert {tp: consumer.position(tp) for tp in tps} == ends
    finally:
        consumer.close()
    return sorted(values)


def test_committed_transactions_visible_aborted_never(target: Target, topic_name: str
                                                      ) -> None:
    bootstrap = target.bootstrap
    create_topic(bootstrap, topic_name, partitions=2)
    producer = _txn_producer(bootstrap, f"tx-{uuid.uuid4().hex[:8]}")
    committed: list[bytes] = []
    everything: list[bytes] = []
    try:
        with pytest.raises(IllegalTransactionState):
            producer.begin_transaction()  # before init_transactions
        producer.init_transactions()
        with pytest.raises(IllegalTransactionState):
            producer.send(topic_name, b"outside")  # outside a transaction
        for round_ in range(4):
            producer.begin_transaction()
            values = [b"r%d-%d" % (round_, i) for i in range(20)]
            futures = [producer.send(topic_name, value, partition=i % 2)
                       for i, value in enumerate(values)]
            everything += values
            if round_ % 2 == 0:
                producer.commit_transaction()
                assert all(f.get(0).offset >= 0 for f in futures)
                committed += values
            else:
                producer.flush()  # on the broker, then aborted
                producer.abort_transaction()
        producer.begin_transaction()
        producer.commit_transaction()  # an empty transaction needs no EndTxn
    finally:
        producer.close()
    assert _odradek_values(bootstrap, topic_name, "read_committed",
                           len(committed)) == sorted(committed)
    assert read_values(bootstrap, topic_name, 2, want=len(committed),
                       settle=0.7) == sorted(committed)
    assert _odradek_values(bootstrap, topic_name, "read_uncommitted",
                           len(everything)) == sorted(everything)


def test_a_second_producer_with_the_same_id_fences_the_first(target: Target,
                                                             topic_name: str) -> None:
    bootstrap = target.bootstrap
    create_topic(bootstrap, topic_name, partitions=2)
    transactional_id = f"tx-{uuid.uuid4().hex[:8]}"
    zombie = _txn_producer(bootstrap, transactional_id)
    successor = _txn_producer(bootstrap, transactional_id)
    try:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send(topic_name, b"zombie-1", partition=0).get(20)  # in its open txn
        successor.init_transactions()  # bumps the epoch, aborts the zombie's transaction
        successor.begin_transaction()
        successor.send(topic_name, b"successor", partition=1)
        zombie.send(topic_name, b"zombie-2", partition=0)
        with pytest.raises(TransactionFatal) as fenced:
            zombie.commit_transaction()
        assert "PRODUCER_FENCED" in str(fenced.value) or \
            "INVALID_PRODUCER_EPOCH" in str(fenced.value)
        with pytest.raises(TransactionFatal):
            zombie.begin_transaction()  # unusable for good
        successor.commit_transaction()
    finally:
        zombie.close(5)
        successor.close()
    assert _odradek_values(bootstrap, topic_name, "read_committed", 1) == [b"successor"]
    assert read_values(bootstrap, topic_name, 2, want=1, settle=0.7) == [b"successor"]


def test_offsets_sent_to_a_transaction_count_only_once_it_commits(target: Target,
                                                                  topic_name: str) -> None:
    bootstrap = target.bootstrap
    create_topic(bootstrap, topic_name, partitions=2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition(topic_name, 0)
    producer = _txn_producer(bootstrap, f"tx-{uuid.uuid4().hex[:8]}")
    admin = AdminClient(bootstrap)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic_name, b"out-1", partition=1)
        producer.send_offsets_to_transaction({tp: 5}, group)
        assert admin.list_group_offsets(group, [tp]) == {}  # pending, not committed
        producer.commit_transaction()
        assert _wait_for_offsets(admin, group, tp, 5) == {tp: 5}

        producer.begin_transaction()
        producer.send_offsets_to_transaction({tp: 9}, group)  # offsets alone, no records
        producer.abort_transaction()
        assert admin.list_group_offsets(group, [tp]) == {tp: 5}

        producer.begin_transaction()
        producer.send_offsets_to_transaction({tp: 12}, group)
        producer.commit_transaction()
        assert _wait_for_offsets(admin, group, tp, 12) == {tp: 12}
    finally:
        producer.close()
        admin.close()
    # The group's consumers see the offset committed with the last transaction.
    consumer = Consumer(topic_name, bootstrap_servers=bootstrap, group_id=group,
                        enable_auto_commit=False)
    try:
        assert consumer.committed(tp) == 12
    finally:
        consumer.close(commit=False)


def _wait_for_offsets(admin: AdminClient, group: str, tp: TopicPartition, offset: int
                      ) -> dict[TopicPartition, int]:
    """The markers are written after EndTxn is answered: the offsets land a moment later."""
    deadline = time.monotonic() + 10
    while True:
        offsets = admin.list_group_offsets(group, [tp])
        if offsets.get(tp) == offset or time.monotonic() > deadline:
            return offsets
        time.sleep(0.05)
