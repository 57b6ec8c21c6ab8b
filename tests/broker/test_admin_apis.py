"""Admin and metadata APIs through real admin clients and the wire."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from kio.schema.delete_records.v2.request import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v4.request import MetadataRequest as MetadataRequestV4
from kio.schema.metadata.v4.request import MetadataRequestTopic as MetadataTopicV4
from kio.schema.offset_for_leader_epoch.v3.request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.schema.types import BrokerId, ProducerId, TopicName
from kio.static.primitive import i8, i16, i32, i64

from .helpers import batch, create_topic, ms, partition_response, produce_request
from .inprocess import InProcessBroker
from .wire import WireClient


def admin(broker: InProcessBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def test_create_describe_alter_delete_topic(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    client = admin(shared_broker)
    futures = client.create_topics(
        [NewTopic(topic_name, 2, 1, config={"retention.ms": "3600000"})], request_timeout=20
    )
    futures[topic_name].result(20)
    metadata = client.list_topics(topic_name, timeout=10)
    assert sorted(metadata.topics[topic_name].partitions) == [0, 1]
    assert metadata.controller_id == 0

    duplicate = client.create_topics([NewTopic(topic_name, 1, 1)])[topic_name]
    with pytest.raises(Exception, match="TOPIC_ALREADY_EXISTS"):
        duplicate.result(20)

    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name)
    described = client.describe_configs([resource])[resource].result(20)
    assert described["retention.ms"].value == "3600000"
    assert described["segment.bytes"].value == "1073741824"

    change = ConfigResource(
        ConfigResource.Type.TOPIC, topic_name,
        incremental_configs=[ConfigEntry("cleanup.policy", "compact",
                                         incremental_operation=AlterConfigOpType.SET)],
    )
    client.incremental_alter_configs([change])[change].result(20)
    shared_broker_view = shared_broker.broker.services.cluster.view  # type: ignore[union-attr]

    def altered() -> bool:
        return shared_broker_view.topics[topic_name].config.get("cleanup.policy") == "compact"

    shared_broker.run(shared_broker_view.wait_for(lambda _s: altered(), 10))
    described = client.describe_configs([resource])[resource].result(20)
    assert described["cleanup.policy"].value == "compact"
    assert described["retention.ms"].value == "3600000"  # incremental kept the other override

    client.create_partitions([NewPartitions(topic_name, 4)])[topic_name].result(20)
    assert len(client.list_topics(topic_name, timeout=10).topics[topic_name].partitions) == 4

    client.delete_topics([topic_name], operation_timeout=20)[topic_name].result(30)
    assert topic_name not in client.list_topics(timeout=10).topics


def test_invalid_topic_config_is_rejected(shared_broker: InProcessBroker, topic_name: str) -> None:
    client = admin(shared_broker)  # keep a reference: the handle dies with it
    future = client.create_topics(
        [NewTopic(topic_name, 1, 1, config={"retention.ms": "soon"})]
    )[topic_name]
    with pytest.raises(Exception, match="INVALID_CONFIG"):
        future.result(20)


def test_metadata_auto_creates_only_when_allowed(
    start_broker: object, topic_name: str
) -> None:
    broker = start_broker(auto_create_topics_enable="true")  # type: ignore[operator]
    with WireClient(broker.port) as client:
        refused = client.request(MetadataRequestV4(
            topics=(MetadataTopicV4(name=TopicName(topic_name + "-no")),),
            allow_auto_topic_creation=False))
        assert refused.topics[0].error_code == 3
        first = client.request(MetadataRequestV4(
            topics=(MetadataTopicV4(name=TopicName(topic_name)),), allow_auto_topic_creation=True))
        assert first.topics[0].error_code in (0, 5)  # created; leader maybe not yet elected
        view = broker.broker.services.cluster.view
        broker.run(view.wait_for(lambda s: topic_name in s.topics, 20))
        assert (topic_name + "-no") not in view.topics


def test_offset_for_leader_epoch_and_delete_records(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        for _ in range(3):
            client.request(produce_request(topic_name, batch(b"a", b"b")))
        epochs = client.request(OffsetForLeaderEpochRequest(
            replica_id=BrokerId(-1),
            topics=(OffsetForLeaderTopic(topic=TopicName(topic_name), partitions=(
                OffsetForLeaderPartition(
                    partition=i32(0), current_leader_epoch=i32(-1), leader_epoch=i32(0)),
            )),),
        ))
        result = epochs.topics[0].partitions[0]
        assert (result.error_code, result.leader_epoch, result.end_offset) == (0, 0, 6)

        deleted = client.request(DeleteRecordsRequest(
            topics=(DeleteRecordsTopic(name=TopicName(topic_name), partitions=(
                DeleteRecordsPartition(partition_index=i32(0), offset=i64(4)),)),),
            timeout=ms(5000),
        ))
        part = deleted.topics[0].partitions[0]
        assert (part.error_code, part.low_watermark) == (0, 4)
        too_far = client.request(DeleteRecordsRequest(
            topics=(DeleteRecordsTopic(name=TopicName(topic_name), partitions=(
                DeleteRecordsPartition(partition_index=i32(0), offset=i64(99)),)),),
            timeout=ms(5000),
        ))
        assert too_far.topics[0].partitions[0].error_code == 1


def test_sasl_handshake_on_a_plaintext_listener_is_an_illegal_state(
        shared_broker: InProcessBroker) -> None:
    with WireClient(shared_broker.port) as client:
        response = client.request(SaslHandshakeRequest(mechanism="PLAIN"))
        assert response.error_code == 34  # ILLEGAL_SASL_STATE, as Kafka answers
        assert response.mechanisms == ()
        again = client.request(SaslHandshakeRequest(mechanism="PLAIN"))  # still connected
        assert again.error_code == 34


def test_producer_ids_are_unique_across_brokers(start_broker: object) -> None:
    from kio.schema.init_producer_id.v4.request import InitProducerIdRequest

    first = start_broker(broker_id=0)  # type: ignore[operator]
    second = start_broker(broker_id=1)  # type: ignore[operator]
    ids = []
    for broker in (first, second, first, second):
        with WireClient(broker.port) as client:
            response = client.request(InitProducerIdRequest(
                transactional_id=None, transaction_timeout=ms(60_000),
                producer_id=ProducerId(-1), producer_epoch=i16(-1)))
            assert response.error_code == 0
            ids.append(response.producer_id)
    assert len(set(ids)) == 4, ids


def test_idempotent_duplicate_batch_gets_original_offsets(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    records = batch(b"once", producer_id=4242, producer_epoch=0, base_sequence=0)
    with WireClient(shared_broker.port) as client:
        first = partition_response(client.request(produce_request(topic_name, records)))
        again = partition_response(client.request(produce_request(topic_name, records)))
        assert first.error_code == again.error_code == 0
        assert again.base_offset == first.base_offset
        from .helpers import fetch_request, values_of

        fetched = partition_response(client.request(fetch_request(topic_name, 0)))
        assert values_of(fetched.records) == [b"once"]


def test_electing_every_partition_omits_those_that_need_no_election(
        shared_broker: InProcessBroker, topic_name: str) -> None:
    """Kafka's answer to ElectLeaders with null topic_partitions (``kafka-leader-election
    --all-topic-partitions``) leaves out partitions whose preferred leader already leads;
    named partitions still report ELECTION_NOT_NEEDED."""
    from kio.schema.elect_leaders.v2.request import ElectLeadersRequest, TopicPartitions

    create_topic(shared_broker, topic_name, partitions=2)
    with WireClient(shared_broker.port) as client:
        everything = client.request(ElectLeadersRequest(
            election_type=i8(0), topic_partitions=None, timeout=ms(5000)))
        assert everything.error_code == 0
        assert [(str(r.topic), [p.partition_id for p in r.partition_result])
                for r in everything.replica_election_results] == []
        named = client.request(ElectLeadersRequest(
            election_type=i8(0), timeout=ms(5000), topic_partitions=(
                TopicPartitions(topic=TopicName(topic_name), partitions=(i32(0), i32(1))),)))
        (result,) = named.replica_election_results
        assert [(p.partition_id, p.error_code) for p in result.partition_result] == [
            (0, ErrorCode.election_not_needed), (1, ErrorCode.election_not_needed)]
