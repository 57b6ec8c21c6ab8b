"""The hand-laid Produce response against kio's encoder, byte for byte, at every version."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ADVERTISED, ApiKey
from odradek.protocol.builder import build, response_module, timestamp_or_none
from odradek.protocol.fetch_response import EncodedResponse, set_throttle
from odradek.protocol.messages import decode_response, encode_response
from odradek.protocol.produce_response import (
    MAX_VERSION,
    MIN_VERSION,
    PartitionProduceResult,
    encode_produce_response,
    throttle_offset,
)

_CODES = [ErrorCode.none, ErrorCode.not_leader_or_follower, ErrorCode.not_enough_replicas,
          ErrorCode.corrupt_message]
INT64 = st.integers(-1, 2**63 - 1)
results = st.builds(
    PartitionProduceResult,
    partition_index=st.integers(0, 2**31 - 1),
    error_code=st.sampled_from(_CODES),
    base_offset=INT64,
    log_append_time_ms=st.one_of(st.just(-1), st.integers(0, 2**41)),
    log_start_offset=INT64,
    error_message=st.one_of(st.none(), st.text(max_size=200)),  # varint lengths > 127 too
)
topics_strategy = st.lists(
    st.tuples(st.text(min_size=1, max_size=200), st.lists(results, max_size=5)), max_size=4)


def kio_frame(version: int, correlation_id: int, topics: list[Any], throttle_ms: int) -> bytes:
    module = response_module(ApiKey.PRODUCE, version)
    body = build(module.ProduceResponse, throttle_time=throttle_ms, responses=tuple(
        build(module.TopicProduceResponse, name=name, partition_responses=tuple(
            build(module.PartitionProduceResponse, index=p.partition_index,
                  error_code=p.error_code,
                  base_offset=p.base_offset,
                  log_append_time=timestamp_or_none(p.log_append_time_ms),
                  log_start_offset=p.log_start_offset, record_errors=(),
                  error_message=p.error_message)
            for p in partitions))
        for name, partitions in topics))
    return encode_response(correlation_id, body)


def test_it_covers_every_advertised_version() -> None:
    advertised = ADVERTISED[ApiKey.PRODUCE]
    assert (advertised.min_version, advertised.max_version) == (MIN_VERSION, MAX_VERSION)


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
@settings(max_examples=40, deadline=None)
@given(topics=topics_strategy, correlation_id=st.integers(-(2**31), 2**31 - 1),
       throttle_ms=st.integers(0, 2**31 - 1))
def test_matches_kio_byte_for_byte(version: int, topics: list[Any], correlation_id: int,
                                   throttle_ms: int) -> None:
    ours = encode_produce_response(version, correlation_id, topics, throttle_ms)
    assert ours == kio_frame(version, correlation_id, topics, throttle_ms)
    got_id, body = decode_response(ours[4:], ApiKey.PRODUCE, version)
    decoded: Any = body
    assert got_id == correlation_id
    assert [(t.name, [int(p.index) for p in t.partition_responses])
            for t in decoded.responses] == [
                (n, [p.partition_index for p in ps]) for n, ps in topics]


@pytest.mark.parametrize("version", [MIN_VERSION - 1, MAX_VERSION + 1])
def test_versions_outside_the_range_are_refused(version: int) -> None:
    with pytest.raises(ValueError, match="not in"):
        encode_produce_response(version, 1, [])


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
@settings(max_examples=20, deadline=None)
@given(topics=topics_strategy, throttle_ms=st.integers(1, 2**31 - 1))
def test_a_quota_written_in_place_is_kios_throttle_time(version: int, topics: list[Any],
                                                         throttle_ms: int) -> None:
    """A client quota is decided after the handler encoded the frame: the broker writes it
    at :func:`throttle_offset` (the answer must say it, or the client does not back off)."""
    frame = encode_produce_response(version, 5, topics)
    response = EncodedResponse([frame], throttle_at=(0, throttle_offset(version, frame)))
    set_throttle(response, throttle_ms)
    assert response == [kio_frame(version, 5, topics, throttle_ms)]
    set_throttle(response, throttle_ms - 1)  # never lowered
    assert response == [kio_frame(version, 5, topics, throttle_ms)]
