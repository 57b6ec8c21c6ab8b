"""Frames with impossible length prefixes, shared by the protocol and broker tests."""

from __future__ import annotations

# The frame from the crash report: IncrementalAlterConfigs v1, correlation 1, client "f",
# then a compact array claiming ~32 billion resources.
CRASH_FRAME = bytes.fromhex(
    "002c000100000001000166"
    "0096a1a99878" "60fa735ba441b62aecd0c41cbd10a32ac22310bcb84652b974dfe0263f4cf8"
)

# Length prefixes no frame can satisfy: 5-byte varints (compact lengths) and int32s.
HOSTILE = [
    bytes.fromhex("96a1a99878"),
    bytes.fromhex("ffffffff0f"),
    bytes.fromhex("8080808001"),
    bytes.fromhex("7fffffff"),
    bytes.fromhex("40000000"),
    bytes.fromhex("00ffffff"),
]
