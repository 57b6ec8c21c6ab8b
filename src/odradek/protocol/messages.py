"""Request/response codec: header handling and dispatch to kio's per-version messages.

Kafka frames carry a request header whose layout depends on the API version:
header v1 (api key, version, correlation id, client id) for non-flexible versions and v2
(v1 plus tagged fields) for flexible ones. The client id is an int16-length string in
*both* — Kafka never made it compact. Response headers are v0 (correlation id) or v1
(plus tagged fields), except ApiVersions, which always answers with v0 so that a client
that guessed a too-new version can still read the error.

Message bodies are kio's frozen dataclasses; kio's native reader parses them straight
from the frame's memoryview.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import DecodeError
from kio.static.protocol import RequestPayload, ResponsePayload

from .api_versions import is_parseable
from .controlled_shutdown import SCHEMAS as _EXTRA_SCHEMAS  # APIs kio no longer generates
from .errors import MalformedRequest, UnsupportedApi
from .framing import size_prefix
from .length_guard import check_lengths
from .primitives import INT16, INT32, read_tagged_fields_end

__all__ = [
    "Request",
    "RequestHeader",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_body",
    "request_type",
    "response_type",
]

_FIXED_HEADER = 8  # api_key i16, api_version i16, correlation_id i32


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """The request header, whichever version it was sent in."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


@dataclass(frozen=True, slots=True)
class Request:
    header: RequestHeader
    body: RequestPayload


@cache
def request_type(api_key: int, api_version: int) -> type[RequestPayload]:
    extra = _EXTRA_SCHEMAS.get((api_key, api_version))
    if extra is not None:
        return cast(type[RequestPayload], extra[0])
    return load_request_schema(api_key, api_version)


@cache
def response_type(api_key: int, api_version: int) -> type[ResponsePayload]:
    extra = _EXTRA_SCHEMAS.get((api_key, api_version))
    if extra is not None:
        return cast(type[ResponsePayload], extra[1])
    return load_response_schema(api_key, api_version)


@cache
def _reader(entity: type) -> Callable[[memoryview, int], tuple[Any, int]]:
    return entity_reader(entity)


@cache
def _writer(entity: type) -> Callable[[Any, Any], None]:
    return entity_writer(entity)


def peek_ids(frame: memoryview | bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): the part of every header version that is fixed.

    :raises MalformedRequest: the frame is shorter than those 8 bytes.
    """
    if len(frame) < _FIXED_HEADER:
        raise MalformedRequest(f"frame of {len(frame)} bytes is too short for a request header")
    api_key = INT16.unpack_from(frame, 0)[0]
    api_version = INT16.unpack_from(frame, 2)[0]
    correlation_id = INT32.unpack_from(frame, 4)[0]
    return api_key, api_version, correlation_id


def decode_request_header(frame: memoryview | bytes, flexible: bool) -> tuple[RequestHeader, int]:
    """Parse a v1 (``flexible=False``) or v2 request header; return it and the body offset."""
    api_key, api_version, correlation_id = peek_ids(frame)
    offset = _FIXED_HEADER
    try:
        if len(frame) < offset + 2:
            raise ValueError("client id length missing")
        length = INT16.unpack_from(frame, offset)[0]
        offset += 2
        client_id: str | None = None
        if length >= 0:
            if offset + length > len(frame):
                raise ValueError("client id runs past the frame")
            client_id = bytes(frame[offset : offset + length]).decode("utf-8")
            offset += length
        elif length != -1:
            raise ValueError(f"client id length {length}")
        if flexible:
            offset = read_tagged_fields_end(frame, offset)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedRequest(f"bad request header: {exc}") from exc
    return RequestHeader(api_key, api_version, correlation_id, client_id), offset


def decode_request(frame: memoryview) -> Request:
    """Parse a whole request frame (without its size prefix).

    :raises UnsupportedApi: the API key or version has no codec here.
    :raises MalformedRequest: the header or body cannot be decoded.
    """
    api_key, api_version, _ = peek_ids(frame)
    if not is_parseable(api_key, api_version):
        raise UnsupportedApi(f"unsupported api key {api_key} version {api_version}")
    body_type = request_type(api_key, api_version)
    header, offset = decode_request_header(frame, body_type.__flexible__)
    try:
        # Before the native reader: it aborts the process on an impossible array length.
        check_lengths(body_type, frame, offset)
        body, _size = _reader(body_type)(frame, offset)
    # kio raises KeyError for a tagged field it does not know (the spec says to skip it;
    # no client we target sends one, so treat it as malformed rather than guess).
    # FrameLengthError is a ValueError.
    except (DecodeError, ValueError, KeyError, UnicodeDecodeError, OverflowError) as exc:
        raise MalformedRequest(
            f"cannot decode {body_type.__name__} v{api_version}: {type(exc).__name__}: {exc}"
        ) from exc
    return Request(header, body)


def _response_header_is_flexible(body_type: type[ResponsePayload]) -> bool:
    # kio records the header version per message; ApiVersions' is pinned to v0.
    return bool(body_type.__header_schema__.__flexible__)


def encode_response_body(body: ResponsePayload) -> bytes:
    """The body bytes alone (no header, no size prefix)."""
    buffer = io.BytesIO()
    _writer(type(body))(buffer, body)
    return buffer.getvalue()


def response_header_bytes(correlation_id: int, flexible: bool) -> bytes:
    """Response header v0 (``flexible=False``) or v1 (an empty tagged-field section)."""
    header = INT32.pack(correlation_id)
    return header + b"\x00" if flexible else header


def encode_response(correlation_id: int, body: ResponsePayload) -> bytes:
    """A complete response frame: size prefix, header of the right version, body."""
    payload = encode_response_body(body)
    header = response_header_bytes(correlation_id, _response_header_is_flexible(type(body)))
    return size_prefix(len(header) + len(payload)) + header + payload


def encode_request(
    body: RequestPayload, correlation_id: int, client_id: str | None = "odradek"
) -> bytes:
    """A complete request frame (used by tests and by odradek's own clients)."""
    flexible = body.__flexible__
    out = io.BytesIO()
    out.write(INT16.pack(body.__api_key__))
    out.write(INT16.pack(body.__version__))
    out.write(INT32.pack(correlation_id))
    if client_id is None:
        out.write(INT16.pack(-1))
    else:
        raw = client_id.encode()
        out.write(INT16.pack(len(raw)))
        out.write(raw)
    if flexible:
        out.write(b"\x00")
    _writer(type(body))(out, body)
    payload = out.getvalue()
    return size_prefix(len(payload)) + payload


def decode_response(
    frame: memoryview | bytes, api_key: int, api_version: int
) -> tuple[int, ResponsePayload]:
    """Parse a response frame (without size prefix): returns (correlation id, body).

    A response is as untrusted as a request (a client must survive a broken broker), so it
    is length-checked the same way before the native reader sees it.

    :raises ValueError: a length in the frame cannot fit (``length_guard.FrameLengthError``).
    """
    view = memoryview(frame)
    body_type = response_type(api_key, api_version)
    correlation_id = INT32.unpack_from(view, 0)[0]
    offset = 4
    if _response_header_is_flexible(body_type):
        offset = read_tagged_fields_end(view, offset)
    check_lengths(body_type, view, offset)
    body, _size = _reader(body_type)(view, offset)
    return correlation_id, body
