"""Hostile length prefixes get an exception, never a process abort (kio's native reader).

kio's Rust reader allocates an array's storage from its length prefix before reading an
element; an impossible prefix used to abort the broker ("memory allocation of 258106098856
bytes failed"). Frames are decoded in a child process (``decode_worker``), so a regression
fails the test with the frame that did it instead of killing pytest.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import subprocess
import sys
import tempfile
import types
import typing
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import Records

from odradek.protocol.api_versions import PARSEABLE
from odradek.protocol.errors import MalformedRequest
from odradek.protocol.length_guard import FrameLengthError, check_lengths
from odradek.protocol.messages import (
    decode_request,
    encode_request,
    encode_response,
    request_type,
    response_type,
)

from .decode_worker import _HEADER
from .hostile_frames import CRASH_FRAME, HOSTILE
from .strategies import messages

REPO = Path(__file__).resolve().parents[2]

VERSIONS = [
    (int(key), version)
    for key, versions in sorted(PARSEABLE.items())
    for version in range(versions.min_version, versions.max_version + 1)
]

class DecodeWorker:
    """One long-lived ``decode_worker`` child; restarted after it dies."""

    def __init__(self, stderr: typing.BinaryIO) -> None:
        self._stderr = stderr
        self._process: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._stderr.seek(0)
            self._stderr.truncate()
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.protocol.decode_worker"], cwd=REPO,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        return self._process

    def decode(self, kind: bytes, api_key: int, version: int, frame: bytes) -> bytes:
        """``d`` decoded or ``e`` rejected; fails the test if the child died on the frame."""
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(_HEADER.pack(kind, api_key, version, len(frame)) + frame)
            process.stdin.flush()
            answer = process.stdout.read(1)
        except BrokenPipeError:
            answer = b""
        if answer in (b"d", b"e"):
            return answer
        process.wait(10)
        self._stderr.seek(0)
        tail = self._stderr.read().decode(errors="replace").strip().splitlines()[:3]
        pytest.fail(
            f"decoding api {api_key} v{version} ({'request' if kind == b'q' else 'response'})"
            f" killed the process (exit {process.returncode}: {tail}); frame {frame.hex()}"
        )

    def close(self) -> None:
        if self._process is not None:
            if self._process.stdin is not None:
                self._process.stdin.close()
            self._process.wait(10)


@pytest.fixture(scope="module")
def worker() -> Iterator[DecodeWorker]:
    with tempfile.TemporaryFile() as stderr:
        decoder = DecodeWorker(stderr)
        yield decoder
        decoder.close()


def hostile_variants(frame: bytes, start: int) -> Iterator[bytes]:
    """``frame`` with each hostile length written over it at every offset from ``start``."""
    for offset in range(start, len(frame)):
        for pattern in HOSTILE:
            yield frame[:offset] + pattern + frame[offset + len(pattern):]


# ------------------------------------------------------------------- the reported crash


def test_reported_crash_frame_is_rejected_not_fatal(worker: DecodeWorker) -> None:
    assert worker.decode(b"q", 44, 1, CRASH_FRAME) == b"e"
    with pytest.raises(MalformedRequest, match="does not fit"):
        decode_request(memoryview(CRASH_FRAME))


def test_array_longer_than_the_frame_is_rejected_by_the_guard() -> None:
    body = memoryview(CRASH_FRAME)[12:]  # after the v2 request header (and its tag byte)
    with pytest.raises(FrameLengthError, match="32263262357 elements"):
        check_lengths(request_type(44, 1), body, 0)


def _produce_frame(version: int, topic_data_length: bytes) -> memoryview:
    """A Produce request whose topic_data array has the given (raw) length prefix."""
    flexible = version >= 9
    header = struct.pack(">hhih", 0, version, 1, 1) + b"c" + (b"\x00" if flexible else b"")
    transactional_id = b"\x00" if flexible else struct.pack(">h", -1)  # null: nullable
    tail = b"\x00" if flexible else b""  # the body's tagged-field section
    return memoryview(header + transactional_id + struct.pack(">hi", 1, 1000)
                      + topic_data_length + tail)


@pytest.mark.parametrize(("version", "null"), [(3, struct.pack(">i", -1)), (9, b"\x00")])
def test_null_for_a_non_nullable_array_is_malformed(version: int, null: bytes) -> None:
    # kio itself would decode it as None, and the handler would iterate None (found by
    # tests/broker/test_fuzz.py): Kafka's reader refuses it, and so does the guard.
    with pytest.raises(MalformedRequest, match="null for the non-nullable array topic_data"):
        decode_request(_produce_frame(version, null))


def test_null_for_a_nullable_array_is_still_read() -> None:
    # Metadata v1+: topics null means every topic (and a null transactional id above).
    header = struct.pack(">hhih", 3, 4, 1, 1) + b"c"
    request = decode_request(memoryview(header + struct.pack(">i", -1) + b"\x00"))
    assert request.body.topics is None  # type: ignore[union-attr]


# --------------------------------------------------- one full sample of every message


def sample(entity: type) -> Any:
    """An instance of a kio message class with every field set (arrays of one element,
    tagged fields off their defaults), so its encoding holds every length it can hold."""
    values = {field.name: _sample_value(field) for field in dataclasses.fields(entity)}
    return entity(**values)


def _sample_value(field: dataclasses.Field[Any]) -> Any:
    field_type: Any = field.type
    if typing.get_origin(field_type) in (types.UnionType, typing.Union):
        field_type = next(a for a in typing.get_args(field_type) if a is not type(None))
    if typing.get_origin(field_type) is tuple:
        element = typing.get_args(field_type)[0]
        if dataclasses.is_dataclass(element):
            return (sample(typing.cast(type, element)),)
        return (_primitive(field.metadata["kafka_type"]),)
    if dataclasses.is_dataclass(field_type):
        return sample(typing.cast(type, field_type))
    return _primitive(field.metadata["kafka_type"])


def _primitive(kafka_type: str) -> Any:
    match kafka_type:
        case "string":
            return "ab"
        case "bytes":
            return b"ab"
        case "records":
            return Records(b"ab")
        case "bool":
            return True
        case "float64":
            return 1.5
        case "uuid":
            return uuid.UUID(int=7)
        case "error_code":
            return ErrorCode.none
        case "timedelta_i32" | "timedelta_i64":
            return datetime.timedelta(milliseconds=3)
        case "datetime_i64":
            return datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
        case _:
            return 1


def request_frame(api_key: int, version: int, body: Any) -> bytes:
    return encode_request(body, 1, client_id="f")[4:]


def response_frame(body: Any) -> bytes:
    return encode_response(1, body)[4:]


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
def test_guard_walks_each_sample_to_its_exact_end(api_key: int, version: int) -> None:
    """The guard reads a valid message field for field as kio writes it: it ends exactly
    where the message ends (a guard that lost its place would check the wrong bytes)."""
    for message_type in (request_type(api_key, version), response_type(api_key, version)):
        buffer = io.BytesIO()
        entity_writer(message_type)(buffer, sample(message_type))
        raw = buffer.getvalue()
        assert check_lengths(message_type, raw, 0) == len(raw), message_type.__name__


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
def test_guard_and_kio_reader_end_each_message_at_the_same_byte(api_key: int,
                                                                 version: int) -> None:
    """The guard mirrors kio's private codec rules (the reason kio is pinned below its next
    minor in pyproject.toml): on every message, with trailing bytes after it, kio's own
    reader and the guard must stop at the same byte. A kio upgrade that changes a rule
    fails here instead of reopening the abort the guard exists to prevent."""
    for message_type in (request_type(api_key, version), response_type(api_key, version)):
        buffer = io.BytesIO()
        entity_writer(message_type)(buffer, sample(message_type))
        message = buffer.getvalue()
        raw = memoryview(b"\x07" + message + b"\xff" * 9)
        value, kio_size = entity_reader(message_type)(raw, 1)  # (value, bytes read)
        assert value == sample(message_type), message_type.__name__
        guard_end = check_lengths(message_type, raw, 1)
        assert guard_end == 1 + kio_size == 1 + len(message), (
            f"{message_type.__name__}: guard ends at {guard_end}, kio's reader at "
            f"{1 + kio_size}, the message at {1 + len(message)}")


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
def test_hostile_length_at_any_offset_of_a_full_request_is_survived(
    worker: DecodeWorker, api_key: int, version: int
) -> None:
    frame = request_frame(api_key, version, sample(request_type(api_key, version)))
    assert worker.decode(b"q", api_key, version, frame) == b"d"
    for variant in hostile_variants(frame, start=8):
        worker.decode(b"q", api_key, version, variant)


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
def test_hostile_length_at_any_offset_of_a_full_response_is_survived(
    worker: DecodeWorker, api_key: int, version: int
) -> None:
    frame = response_frame(sample(response_type(api_key, version)))
    assert worker.decode(b"r", api_key, version, frame) == b"d"
    for variant in hostile_variants(frame, start=4):
        worker.decode(b"r", api_key, version, variant)


# ----------------------------------------------------------------- random shapes, too

# No shrinking: every failing example restarts the child, and the message names the frame.
HOSTILE_PROPERTY = settings(
    max_examples=5, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
@HOSTILE_PROPERTY
@given(data=st.data())
def test_decode_request_survives_hostile_lengths(
    worker: DecodeWorker, api_key: int, version: int, data: st.DataObject
) -> None:
    body = data.draw(messages(request_type(api_key, version)))
    frame = request_frame(api_key, version, body)
    edits = data.draw(st.lists(
        st.tuples(st.integers(8, len(frame) - 1), st.sampled_from(HOSTILE)),
        min_size=1, max_size=12))
    for offset, pattern in edits:
        worker.decode(b"q", api_key, version,
                      frame[:offset] + pattern + frame[offset + len(pattern):])
