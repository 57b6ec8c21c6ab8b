"""The hand-written OffsetCommit response against kio's encoder, byte for byte."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, response_module
from odradek.protocol.fetch_response import EncodedResponse, set_throttle
from odradek.protocol.messages import decode_response, encode_response
from odradek.protocol.offset_commit_response import (
    encode_offset_commit_response,
    throttle_offset,
)

_CODES = [ErrorCode.none, ErrorCode.unknown_topic_or_partition, ErrorCode.not_coordinator,
          ErrorCode.illegal_generation]

topics_strategy = st.lists(
    st.tuples(
        st.text(min_size=1, max_size=200),  # multi-byte names and varint lengths > 127
        st.lists(st.tuples(st.integers(0, 2**31 - 1), st.sampled_from(_CODES)), max_size=140),
    ),
    max_size=4,
)


def _kio_frame(version: int, correlation_id: int, topics: list, throttle_ms: int = 0) -> bytes:
    module = response_module(ApiKey.OFFSET_COMMIT, version)
    throttle = throttle_ms if throttle_ms else NO_THROTTLE
    body = build(module.OffsetCommitResponse, throttle_time=throttle, topics=tuple(
        build(module.OffsetCommitResponseTopic, name=name, partitions=tuple(
            build(module.OffsetCommitResponsePartition, partition_index=index, error_code=code)
            for index, code in partitions))
        for name, partitions in topics))
    return encode_response(correlation_id, body)


@pytest.mark.parametrize("version", range(2, 10))
@settings(max_examples=40, deadline=None)
@given(topics=topics_strategy, correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_matches_kio_byte_for_byte(version: int, topics: list, correlation_id: int) -> None:
    ours = encode_offset_commit_response(version, correlation_id, topics)
    assert ours == _kio_frame(version, correlation_id, topics)
    got_id, body = decode_response(ours[4:], ApiKey.OFFSET_COMMIT, version)
    decoded: Any = body  # kio's OffsetCommitResponse class differs per (parametrized) version
    assert got_id == correlation_id
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in decoded.topics] == [(n, list(ps)) for n, ps in topics]


@pytest.mark.parametrize("version", range(3, 10))
@settings(max_examples=20, deadline=None)
@given(topics=topics_strategy, throttle_ms=st.integers(1, 2**31 - 1))
def test_a_quota_written_in_place_is_kios_throttle_time(version: int, topics: list,
                                                         throttle_ms: int) -> None:
    offset = throttle_offset(version)
    assert offset is not None
    response = EncodedResponse([encode_offset_commit_response(version, 9, topics)],
                               throttle_at=(0, offset))
    set_throttle(response, throttle_ms)
    assert response == [_kio_frame(version, 9, topics, throttle_ms)]


def test_v2_has_no_throttle_field() -> None:
    assert throttle_offset(2) is None
