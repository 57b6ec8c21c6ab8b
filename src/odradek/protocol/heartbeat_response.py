"""The Heartbeat response (v0-v4), encoded directly to its frame.

Every member of every consumer group sends one every ``heartbeat.interval.ms`` (3 s by
default), so a broker coordinating many groups answers them all the time; building a kio
entity and running kio's generic writer for two fields cost more than the heartbeat itself.
Layout: ``throttle_time_ms int32`` (v1+), ``error_code int16``; v4 is flexible: a response
header v1 (an empty tagged-field section after the correlation id) and an empty tagged-field
section at the end.

``tests/protocol/test_heartbeat_response.py`` checks it byte for byte against kio.
"""

from __future__ import annotations

import struct

__all__ = ["MAX_VERSION", "MIN_VERSION", "encode_heartbeat_response", "throttle_offset"]

MIN_VERSION = 0
MAX_VERSION = 4
_FIRST_FLEXIBLE_VERSION = 4
_SIZE_AND_HEADER = 8  # size prefix and correlation id

_V0 = struct.Struct(">iih")  # size, correlation id, error code
_V1 = struct.Struct(">iiih")  # size, correlation id, throttle time, error code
_V4 = struct.Struct(">iixihx")  # ... with v4's three (empty) tagged-field sections


def encode_heartbeat_response(version: int, correlation_id: int, error_code: int,
                              throttle_ms: int = 0) -> bytes:
    """The whole response frame: size prefix, header, body."""
    if version >= _FIRST_FLEXIBLE_VERSION:
        if version > MAX_VERSION:
            raise ValueError(f"heartbeat response version {version} not in "
                             f"{MIN_VERSION}..{MAX_VERSION}")
        return _V4.pack(_V4.size - 4, correlation_id, throttle_ms, error_code)
    if version >= 1:
        return _V1.pack(_V1.size - 4, correlation_id, throttle_ms, error_code)
    if version < MIN_VERSION:
        raise ValueError(f"heartbeat response version {version} not in "
                         f"{MIN_VERSION}..{MAX_VERSION}")
    return _V0.pack(_V0.size - 4, correlation_id, error_code)


def throttle_offset(version: int) -> int | None:
    """Where ``throttle_time_ms`` lies in the frame (None before v1, which has none)."""
    if version < 1:
        return None
    return _SIZE_AND_HEADER + (1 if version >= _FIRST_FLEXIBLE_VERSION else 0)
