"""The hand-laid Heartbeat response against kio's encoder, byte for byte, at every version."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ADVERTISED, ApiKey
from odradek.protocol.builder import build, response_module
from odradek.protocol.fetch_response import EncodedResponse, set_throttle
from odradek.protocol.heartbeat_response import (
    MAX_VERSION,
    MIN_VERSION,
    encode_heartbeat_response,
    throttle_offset,
)
from odradek.protocol.messages import encode_response

_CODES = st.sampled_from([ErrorCode.none, ErrorCode.rebalance_in_progress,
                          ErrorCode.unknown_member_id, ErrorCode.illegal_generation,
                          ErrorCode.fenced_instance_id, ErrorCode.coordinator_not_available])


def kio_frame(version: int, correlation_id: int, error_code: int, throttle_ms: int) -> bytes:
    module = response_module(ApiKey.HEARTBEAT, version)
    return encode_response(correlation_id, build(module.HeartbeatResponse,
                                                 throttle_time=throttle_ms,
                                                 error_code=error_code))


def test_it_covers_every_advertised_version() -> None:
    advertised = ADVERTISED[ApiKey.HEARTBEAT]
    assert (advertised.min_version, advertised.max_version) == (MIN_VERSION, MAX_VERSION)


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
@settings(max_examples=30, deadline=None)
@given(correlation_id=st.integers(-(2**31), 2**31 - 1), error_code=_CODES,
       throttle_ms=st.integers(0, 2**31 - 1))
def test_matches_kio_byte_for_byte(version: int, correlation_id: int, error_code: int,
                                   throttle_ms: int) -> None:
    ours = encode_heartbeat_response(version, correlation_id, error_code, throttle_ms)
    assert ours == kio_frame(version, correlation_id, error_code, throttle_ms)


@pytest.mark.parametrize("version", range(1, MAX_VERSION + 1))
def test_a_quota_written_in_place_is_kios_throttle_time(version: int) -> None:
    frame = encode_heartbeat_response(version, 7, ErrorCode.none)
    offset = throttle_offset(version)
    assert offset is not None
    response = EncodedResponse([frame], throttle_at=(0, offset))
    set_throttle(response, 1234)
    assert response == [kio_frame(version, 7, ErrorCode.none, 1234)]


def test_v0_has_no_throttle_time_and_other_versions_are_refused() -> None:
    assert throttle_offset(0) is None
    for version in (MIN_VERSION - 1, MAX_VERSION + 1):
        with pytest.raises(ValueError, match="not in"):
            encode_heartbeat_response(version, 1, 0)
