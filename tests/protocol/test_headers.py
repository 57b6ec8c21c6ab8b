"""Golden bytes for request/response headers and the ApiVersions quirks clients rely on."""

from __future__ import annotations

import pytest
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v3.response import ApiVersionsResponse as ApiVersionsResponseV3
from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v9.response import MetadataResponse as MetadataResponseV9
from kio.schema.types import BrokerId
from kio.static.primitive import i32

from odradek.protocol.api_versions import ADVERTISED, ApiKey
from odradek.protocol.errors import MalformedRequest, UnsupportedApi
from odradek.protocol.messages import (
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)
from odradek.protocol.negotiation import api_versions_response, unsupported_api_versions_frame


def test_flexible_request_header_keeps_int16_client_id_then_tagged_fields() -> None:
    frame = encode_request(
        ApiVersionsRequestV3(client_software_name="k", client_software_version="1"),
        correlation_id=1,
        client_id="ab",
    )
    assert frame.hex() == (
        "00000012"  # size 18
        "0012" "0003" "00000001"  # api key 18, version 3, correlation id 1
        "0002" "6162"  # client id: int16 length 2, "ab" (never compact)
        "00"  # header tagged fields: none
        "026b" "0231" "00"  # body: compact "k", compact "1", no tags
    )


def test_non_flexible_request_header_is_v1() -> None:
    frame = encode_request(MetadataRequestV1(topics=None), correlation_id=9, client_id=None)
    assert frame.hex() == "0000000e" "0003" "0001" "00000009" "ffff" "ffffffff"


def test_header_with_null_client_id_parses() -> None:
    frame = bytes.fromhex("0012000000000005ffff")
    header, offset = decode_request_header(frame, flexible=False)
    assert (header.api_key, header.api_version, header.correlation_id) == (18, 0, 5)
    assert header.client_id is None
    assert offset == len(frame)


def test_flexible_header_skips_unknown_tagged_fields() -> None:
    # one tagged field: tag 5, 2 bytes of data
    frame = bytes.fromhex("0012000300000005" "0001" "78" "01" "05" "02" "abcd") + b"\x00\x00\x00"
    header, offset = decode_request_header(frame, flexible=True)
    assert header.client_id == "x"
    assert offset == len(frame) - 3


@pytest.mark.parametrize(
    "frame",
    [
        b"\x00\x12",  # shorter than the fixed header
        bytes.fromhex("001200000000000500"),  # client id length cut off
        bytes.fromhex("0012000000000005" "0009" "6162"),  # client id runs past the frame
        bytes.fromhex("0012000000000005" "fffe"),  # negative length other than -1
    ],
)
def test_truncated_headers_are_malformed(frame: bytes) -> None:
    with pytest.raises(MalformedRequest):
        decode_request_header(frame, flexible=False)


def test_truncated_body_is_malformed() -> None:
    frame = encode_request(MetadataRequestV1(topics=None), correlation_id=1)
    with pytest.raises(MalformedRequest):
        decode_request(memoryview(frame)[4:-2])


def test_unknown_api_is_unsupported() -> None:
    with pytest.raises(UnsupportedApi):
        decode_request(memoryview(bytes.fromhex("03e7000000000001ffff")))


def test_api_versions_v3_response_uses_header_v0() -> None:
    frame = encode_response(0x0A0B0C0D, api_versions_response(3))
    # size, then the correlation id and immediately the body (error code 0): no tag byte
    assert frame[4:10].hex() == "0a0b0c0d" "0000"
    _, body = decode_response(frame[4:], ApiKey.API_VERSIONS, 3)
    assert isinstance(body, ApiVersionsResponseV3)
    listed = {entry.api_key: (entry.min_version, entry.max_version) for entry in body.api_keys}
    assert listed == {int(k): (r.min_version, r.max_version) for k, r in ADVERTISED.items()}


def test_flexible_response_uses_header_v1() -> None:
    body = MetadataResponseV9(
        throttle_time=__import__("datetime").timedelta(0), brokers=(), cluster_id=None,
        controller_id=BrokerId(1), topics=(), cluster_authorized_operations=i32(0),
    )
    frame = encode_response(1, body)
    assert frame[4:9].hex() == "00000001" "00"


def test_unsupported_api_versions_answer_is_v0_with_error_35_and_own_range() -> None:
    frame = unsupported_api_versions_frame(42)
    assert frame.hex() == (
        "00000010"  # size 16
        "0000002a"  # correlation id 42, header v0
        "0023"  # error 35 UNSUPPORTED_VERSION
        "00000001"  # one entry (non-compact array: the v0 layout)
        "0012" "0000" "0003"  # ApiVersions 0..3
    )
    # and a v0 reader understands it
    _, body = decode_response(frame[4:], ApiKey.API_VERSIONS, 0)
    assert isinstance(body, ApiVersionsResponseV0)
    assert body.error_code == 35
    assert [(e.api_key, e.min_version, e.max_version) for e in body.api_keys] == [(18, 0, 3)]


def test_api_versions_v0_request_round_trip() -> None:
    request = decode_request(memoryview(encode_request(ApiVersionsRequestV0(), 3))[4:])
    assert request.header.correlation_id == 3
