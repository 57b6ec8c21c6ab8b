"""The hand-laid Metadata response against kio's encoder, byte for byte, at every version."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ADVERTISED, ApiKey
from odradek.protocol.builder import build, response_module
from odradek.protocol.fetch_response import EncodedResponse, set_throttle
from odradek.protocol.messages import encode_response
from odradek.protocol.metadata_response import (
    MAX_VERSION,
    MIN_VERSION,
    MetadataBroker,
    MetadataPartition,
    MetadataTopic,
    encode_metadata_response,
    throttle_offset,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
NODE = st.integers(-1, 2**31 - 1)
NODES = st.lists(NODE, max_size=5).map(tuple)
NAME = st.text(min_size=1, max_size=200)  # varint lengths > 127 too
brokers = st.lists(st.builds(MetadataBroker, node_id=NODE, host=NAME,
                             port=st.integers(0, 65535), rack=st.one_of(st.none(), NAME)),
                   max_size=4)
partitions = st.builds(
    MetadataPartition,
    error_code=st.sampled_from([ErrorCode.none, ErrorCode.leader_not_available,
                                ErrorCode.replica_not_available]),
    partition_index=st.integers(0, 2**31 - 1), leader_id=NODE, leader_epoch=INT32,
    replica_nodes=NODES, isr_nodes=NODES, offline_replicas=NODES)
topics = st.lists(st.builds(
    MetadataTopic,
    error_code=st.sampled_from([ErrorCode.none, ErrorCode.unknown_topic_or_partition,
                                ErrorCode.invalid_topic_exception]),
    name=NAME, topic_id=st.uuids(), is_internal=st.booleans(),
    partitions=st.lists(partitions, max_size=4), topic_authorized_operations=INT32),
    max_size=4)


def kio_frame(version: int, correlation_id: int, answer: dict[str, object]) -> bytes:
    module = response_module(ApiKey.METADATA, version)
    body = build(
        module.MetadataResponse,
        throttle_time=answer["throttle_ms"],
        brokers=tuple(build(module.MetadataResponseBroker, b._asdict())
                      for b in answer["brokers"]),  # type: ignore[attr-defined]
        cluster_id=answer["cluster_id"], controller_id=answer["controller_id"],
        topics=tuple(build(module.MetadataResponseTopic, t._asdict(), partitions=tuple(
            build(module.MetadataResponsePartition, p._asdict()) for p in t.partitions))
            for t in answer["topics"]),  # type: ignore[attr-defined]
        cluster_authorized_operations=answer["cluster_authorized_operations"])
    return encode_response(correlation_id, body)


def test_it_covers_every_advertised_version() -> None:
    advertised = ADVERTISED[ApiKey.METADATA]
    assert (advertised.min_version, advertised.max_version) == (MIN_VERSION, MAX_VERSION)


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
@settings(max_examples=30, deadline=None)
@given(correlation_id=INT32, brokers=brokers, cluster_id=st.one_of(st.none(), NAME),
       controller_id=NODE, topics=topics, cluster_authorized_operations=INT32,
       throttle_ms=st.integers(0, 2**31 - 1))
def test_matches_kio_byte_for_byte(version: int, correlation_id: int,
                                   brokers: list[MetadataBroker], cluster_id: str | None,
                                   controller_id: int, topics: list[MetadataTopic],
                                   cluster_authorized_operations: int,
                                   throttle_ms: int) -> None:
    ours = encode_metadata_response(
        version, correlation_id, brokers, cluster_id, controller_id, topics,
        cluster_authorized_operations=cluster_authorized_operations, throttle_ms=throttle_ms)
    assert ours == kio_frame(version, correlation_id, {
        "brokers": brokers, "cluster_id": cluster_id, "controller_id": controller_id,
        "topics": topics, "cluster_authorized_operations": cluster_authorized_operations,
        "throttle_ms": throttle_ms})


def test_a_topic_without_a_name_is_null_from_v12() -> None:
    unknown = MetadataTopic(ErrorCode.unknown_topic_id, None, uuid.uuid4(), False)
    ours = encode_metadata_response(12, 3, [], None, -1, [unknown])
    assert ours == kio_frame(12, 3, {
        "brokers": [], "cluster_id": None, "controller_id": -1, "topics": [unknown],
        "cluster_authorized_operations": -(2**31), "throttle_ms": 0})


@pytest.mark.parametrize("version", range(3, MAX_VERSION + 1))
def test_a_quota_written_in_place_is_kios_throttle_time(version: int) -> None:
    brokers = [MetadataBroker(1, "localhost", 9092)]
    topic = MetadataTopic(0, "t", uuid.UUID(int=7), False,
                          [MetadataPartition(0, 0, 1, 3, (1,), (1,))])
    frame = encode_metadata_response(version, 7, brokers, "c", 1, [topic])
    offset = throttle_offset(version)
    assert offset is not None
    response = EncodedResponse([frame], throttle_at=(0, offset))
    set_throttle(response, 1234)
    assert response == [kio_frame(version, 7, {
        "brokers": brokers, "cluster_id": "c", "controller_id": 1, "topics": [topic],
        "cluster_authorized_operations": -(2**31), "throttle_ms": 1234})]


def test_versions_without_a_throttle_time_and_outside_the_range() -> None:
    assert throttle_offset(2) is None
    for version in (MIN_VERSION - 1, MAX_VERSION + 1):
        with pytest.raises(ValueError, match="not in"):
            encode_metadata_response(version, 1, [], None, -1, [])
