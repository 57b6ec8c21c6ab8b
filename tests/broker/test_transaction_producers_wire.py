"""DescribeProducers on the wire: a partition leader reports its producer state (the
transactional producer's open transaction, an idempotent producer, a hanging transaction
no coordinator knows) and per-partition errors for what it does not lead."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Producer
from kio.schema.describe_producers.v0.request import DescribeProducersRequest, TopicRequest
from kio.schema.describe_producers.v0.response import PartitionResponse
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i32

from odradek.protocol.records import Record, encode_batch

from .conftest import BrokerStarter
from .helpers import create_topic, produce_request
from .inprocess import InProcessBroker
from .wire import WireClient


def _describe(client: WireClient, topic: str, *partitions: int) -> dict[int, PartitionResponse]:
    response = client.request(DescribeProducersRequest(topics=(
        TopicRequest(name=TopicName(topic), partition_indexes=tuple(i32(p) for p in partitions)),
    )))
    (found,) = response.topics
    assert found.name == topic
    return {int(part.partition_index): part for part in found.partitions}


def test_describe_producers_reports_open_transactions_and_idempotent_producers(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name, partitions=3)
    transactional = Producer({"bootstrap.servers": shared_broker.bootstrap,
                              "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    transactional.init_transactions(30)
    transactional.begin_transaction()
    transactional.produce(topic_name, value=b"in-txn", partition=0)
    transactional.flush(30)
    idempotent = Producer({"bootstrap.servers": shared_broker.bootstrap,
                           "enable.idempotence": True})
    for _ in range(3):
        idempotent.produce(topic_name, value=b"idem", partition=1)
    idempotent.flush(30)
    hanging_pid = 7_000_000 + int(uuid.uuid4().int % 1_000_000)
    before = int(time.time() * 1000)
    hanging = encode_batch([Record(timestamp=before, key=None, value=b"hang")],
                           producer_id=hanging_pid, producer_epoch=3, base_sequence=0,
                           is_transactional=True)
    with WireClient(shared_broker.port) as client:
        produced = client.request(produce_request(topic_name, hanging, partition=2))
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.none
        parts = _describe(client, topic_name, 0, 1, 2, 9)
        assert {p: part.error_code for p, part in parts.items()} == {
            0: ErrorCode.none, 1: ErrorCode.none, 2: ErrorCode.none,
            9: ErrorCode.unknown_topic_or_partition}
        (in_txn,) = parts[0].active_producers
        assert in_txn.current_txn_start_offset == 0 and in_txn.last_sequence == 0
        assert in_txn.producer_epoch == 0 and in_txn.last_timestamp >= before - 60_000
        (idem,) = parts[1].active_producers
        assert (idem.last_sequence, idem.current_txn_start_offset) == (2, -1)
        assert idem.producer_id != in_txn.producer_id
        (hung,) = parts[2].active_producers
        assert (hung.producer_id, hung.producer_epoch, hung.current_txn_start_offset,
                hung.last_timestamp, hung.coordinator_epoch) == (hanging_pid, 3, 0, before, -1)
        transactional.commit_transaction(30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            (after,) = _describe(client, topic_name, 0)[0].active_producers
            if after.current_txn_start_offset == -1:
                break
            time.sleep(0.1)
        assert after.current_txn_start_offset == -1
        assert after.coordinator_epoch >= 0  # the marker's coordinator epoch
        assert int(after.last_timestamp) >= int(in_txn.last_timestamp)


def test_idle_transactional_ids_and_producers_expire(start_broker: BrokerStarter,
                                                     topic_name: str) -> None:
    """transactional.id.expiration.ms and producer.id.expiration.ms with small values: the
    finished id is removed from the coordinator (a tombstone) while the one with an open
    transaction stays; the idle idempotent producer leaves the partition's producer state
    while the open transaction's producer stays."""
    from kio.schema.list_transactions.v1.request import ListTransactionsRequest
    from kio.static.primitive import i64

    broker = start_broker(transactional_id_expiration_ms="1500",
                          transaction_remove_expired_transaction_cleanup_interval_ms="200",
                          producer_id_expiration_ms="1500",
                          producer_id_expiration_check_interval_ms="200")
    create_topic(broker, topic_name, partitions=1)
    done_id, open_id = f"done-{uuid.uuid4().hex[:8]}", f"open-{uuid.uuid4().hex[:8]}"
    finished = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": done_id})
    finished.init_transactions(30)
    finished.begin_transaction()
    finished.produce(topic_name, value=b"done", partition=0)
    finished.commit_transaction(30)
    hanging = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": open_id,
                        "transaction.timeout.ms": 60_000})
    hanging.init_transactions(30)
    hanging.begin_transaction()
    hanging.produce(topic_name, value=b"open", partition=0)
    hanging.flush(30)
    coordinator = broker.broker.services.transaction_coordinator  # type: ignore[union-attr]
    assert coordinator is not None
    assert coordinator.describe(done_id)[1] is not None

    def listed(client: WireClient) -> set[str]:
        response = client.request(ListTransactionsRequest(
            state_filters=(), producer_id_filters=(), duration_filter=i64(-1)))
        return {str(t.transactional_id) for t in response.transaction_states}

    with WireClient(broker.port) as client:
        assert {done_id, open_id} <= listed(client)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (
                done_id in listed(client)
                or len(_describe(client, topic_name, 0)[0].active_producers) > 1):
            time.sleep(0.2)
        assert listed(client) >= {open_id} and done_id not in listed(client)
        (left,) = _describe(client, topic_name, 0)[0].active_producers
        assert left.current_txn_start_offset >= 0  # the open transaction's producer stays
    assert coordinator.describe(done_id)[0] == ErrorCode.transactional_id_not_found
    # the expired id starts afresh
    again = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": done_id})
    again.init_transactions(30)
    state = coordinator.describe(done_id)[1]
    assert state is not None and state.producer_epoch == 0
    hanging.abort_transaction(30)


def test_a_follower_describes_the_producers_of_the_replicas_it_holds(
        start_broker: BrokerStarter, topic_name: str) -> None:
    """``kafka-transactions find-hanging --broker-id N`` asks broker N about every partition
    it holds a replica of: a follower answers from its own producer state, as Kafka's does;
    a partition the broker holds no replica of is still NOT_LEADER_OR_FOLLOWER."""
    from confluent_kafka.admin import AdminClient, NewTopic

    first = start_broker(0, replica_fetch_backoff_ms="100")
    second = start_broker(1, replica_fetch_backoff_ms="100")
    elsewhere = f"{topic_name}-only-on-0"
    admin = AdminClient({"bootstrap.servers": first.bootstrap})
    created = admin.create_topics([NewTopic(topic_name, 1, replica_assignment=[[0, 1]]),
                                   NewTopic(elsewhere, 1, replica_assignment=[[0]])])
    for future in created.values():
        future.result(30)
    producer_id = 8_000_000 + int(uuid.uuid4().int % 1_000_000)
    records = encode_batch([Record(timestamp=int(time.time() * 1000), key=None, value=b"v")],
                           producer_id=producer_id, producer_epoch=2, base_sequence=0,
                           is_transactional=True)
    with WireClient(first.port) as leader:
        deadline = time.monotonic() + 30
        while True:  # the leader is elected by the controller shortly after creation
            produced = leader.request(produce_request(topic_name, records))
            code = produced.responses[0].partition_responses[0].error_code
            if code == ErrorCode.none or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert code == ErrorCode.none
    with WireClient(second.port) as follower:
        deadline = time.monotonic() + 30
        while True:  # until the follower has fetched the batch
            part = _describe(follower, topic_name, 0)[0]
            if part.active_producers or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert part.error_code == ErrorCode.none, part
        (found,) = part.active_producers
        assert (found.producer_id, found.producer_epoch, found.current_txn_start_offset) == (
            producer_id, 2, 0)
        not_here = _describe(follower, elsewhere, 0)[0]
        assert not_here.error_code == ErrorCode.not_leader_or_follower
