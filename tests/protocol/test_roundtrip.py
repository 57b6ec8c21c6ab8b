"""Every request and response we parse or send survives encode -> decode unchanged."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol.api_versions import PARSEABLE
from odradek.protocol.messages import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_type,
    response_type,
)

from .strategies import messages

VERSIONS = [
    (int(key), version)
    for key, versions in sorted(PARSEABLE.items())
    for version in range(versions.min_version, versions.max_version + 1)
]

ROUND_TRIP = settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
@ROUND_TRIP
@given(data=st.data())
def test_request_round_trips(api_key: int, version: int, data: st.DataObject) -> None:
    body = data.draw(messages(request_type(api_key, version)))
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    frame = encode_request(body, correlation_id, client_id="c")
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    request = decode_request(memoryview(frame)[4:])
    assert request.header.api_key == api_key
    assert request.header.api_version == version
    assert request.header.correlation_id == correlation_id
    assert request.header.client_id == "c"
    assert request.body == body


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
@ROUND_TRIP
@given(data=st.data())
def test_response_round_trips(api_key: int, version: int, data: st.DataObject) -> None:
    body = data.draw(messages(response_type(api_key, version)))
    frame = encode_response(7, body)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    correlation_id, decoded = decode_response(memoryview(frame)[4:], api_key, version)
    assert correlation_id == 7
    assert decoded == body
