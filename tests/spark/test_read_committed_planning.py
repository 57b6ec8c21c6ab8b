"""The Spark source plans read_committed reads up to the last stable offset: an open
transaction's records are not in the batch (the reader could not reach past them)."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Producer

from odradek.client import AdminClient, NewTopic, TopicPartition
from odradek.spark.options import parse_source
from odradek.spark.planning import OffsetResolver


def test_latest_is_the_lso_for_read_committed(broker: Any) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(broker.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1, {})])
    finally:
        admin.close()
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(3):
        plain.produce(topic, b"%d" % i, partition=0)
    assert plain.flush(30) == 0
    open_txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": topic})
    open_txn.init_transactions(30)
    open_txn.begin_transaction()
    open_txn.produce(topic, b"undecided", partition=0)
    assert open_txn.flush(30) == 0
    tp = TopicPartition(topic, 0)
    latest = {}
    for isolation in ("read_committed", "read_uncommitted"):
        resolver = OffsetResolver(parse_source(
            {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic,
             "kafka.isolation.level": isolation}, streaming=False))
        try:
            latest[isolation] = resolver.latest([tp])[tp]
        finally:
            resolver.close()
    assert latest == {"read_committed": 3, "read_uncommitted": 4}
    open_txn.abort_transaction(30)
