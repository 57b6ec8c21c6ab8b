"""The Produce response (v3-v9), encoded directly to its frame.

A producer that sends one record per request (the paper's unbatched producer, or any
client at ``linger.ms=0`` under a light load) gets one Produce response per record, and
building it as kio entities and running kio's generic writer cost about as much as the
append itself. Like the Fetch and OffsetCommit responses (:mod:`.fetch_response`,
:mod:`.offset_commit_response`), it is laid out with ``struct`` in one pass. Layout:

* per partition: ``index int32, error_code int16, base_offset int64,
  log_append_time_ms int64`` (-1 unless the topic uses LogAppendTime), ``log_start_offset
  int64`` (v5+), then from v8 ``record_errors`` (always empty here: odradek refuses a batch
  whole) and ``error_message`` (nullable string);
* per topic: ``name string`` and the partitions array;
* after the topics: ``throttle_time_ms int32``;
* v9 (flexible): compact strings and arrays (unsigned varint of length + 1, 0 = null), an
  empty tagged-field section after each struct and at the end, and a response header v1
  (one more empty tagged-field section after the correlation id). v10's tagged
  ``current_leader`` is not offered (Produce is advertised up to v9).

``tests/protocol/test_produce_response.py`` checks it byte for byte against kio.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

from .framing import size_prefix
from .primitives import array_length, string_field

__all__ = ["FIRST_FLEXIBLE_VERSION", "PartitionProduceResult", "encode_produce_response",
           "throttle_offset"]

MIN_VERSION = 3
MAX_VERSION = 9
FIRST_FLEXIBLE_VERSION = 9
_NO_TAGS = b"\x00"

_I32 = struct.Struct(">i")
_PARTITION_V3 = struct.Struct(">ihqq")  # index, error, base offset, log append time
_PARTITION_V5 = struct.Struct(">ihqqq")  # ... log start offset
_EMPTY_RECORD_ERRORS = b"\x00\x00\x00\x00"
_NULL_STRING = b"\xff\xff"
_NULL_COMPACT = b"\x00"
_EMPTY_COMPACT_ARRAY = b"\x01"


class PartitionProduceResult(NamedTuple):
    """What one partition of a Produce request answers."""

    partition_index: int
    error_code: int
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None


def encode_produce_response(
    version: int, correlation_id: int,
    topics: Sequence[tuple[str, Sequence[PartitionProduceResult]]], throttle_ms: int = 0,
) -> bytes:
    """The whole response frame: size prefix, header, body."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"produce response version {version} not in "
                         f"{MIN_VERSION}..{MAX_VERSION}")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    with_errors = version >= 8
    fixed = _PARTITION_V5 if version >= 5 else _PARTITION_V3
    out = bytearray(_I32.pack(correlation_id))
    if flexible:
        out += _NO_TAGS
    out += array_length(len(topics), flexible)
    for name, partitions in topics:
        out += string_field(name, flexible)
        out += array_length(len(partitions), flexible)
        for p in partitions:
            if fixed is _PARTITION_V5:
                out += fixed.pack(p.partition_index, p.error_code, p.base_offset,
                                  p.log_append_time_ms, p.log_start_offset)
            else:
                out += fixed.pack(p.partition_index, p.error_code, p.base_offset,
                                  p.log_append_time_ms)
            if with_errors:
                message = p.error_message
                if flexible:
                    out += _EMPTY_COMPACT_ARRAY
                    out += _NULL_COMPACT if message is None else string_field(message, True)
                    out += _NO_TAGS
                else:
                    out += _EMPTY_RECORD_ERRORS
                    out += _NULL_STRING if message is None else string_field(message, False)
        if flexible:
            out += _NO_TAGS
    out += _I32.pack(throttle_ms)
    if flexible:
        out += _NO_TAGS
    return size_prefix(len(out)) + bytes(out)


def throttle_offset(version: int, frame: bytes) -> int:
    """Where ``throttle_time_ms`` lies in ``frame``: the body's last field (before v9's
    final tagged-field byte); a quota decided later is written there."""
    return len(frame) - (5 if version >= FIRST_FLEXIBLE_VERSION else 4)
