"""Read RecordBatch headers straight from a partition directory's segment files.

Used to check what the target broker stored (e.g. the producer's compression codec), which
no client API exposes. Only the fixed batch header is parsed (byte offsets as in Kafka's
RecordBatch v2: length at 8, magic at 16, attributes at 21)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@dataclass(frozen=True)
class BatchHeader:
    base_offset: int
    magic: int
    codec: int
    record_count: int


def batch_headers(partition_dir: Path) -> list[BatchHeader]:
    headers: list[BatchHeader] = []
    for segment in sorted(partition_dir.glob("*.log")):
        data = segment.read_bytes()
        position = 0
        while position + 61 <= len(data):
            base_offset, length = struct.unpack_from(">qi", data, position)
            if length <= 0:  # preallocated or torn tail
                break
            magic = data[position + 16]
            (attributes,) = struct.unpack_from(">h", data, position + 21)
            (count,) = struct.unpack_from(">i", data, position + 57)
            headers.append(BatchHeader(base_offset, magic, attributes & 0x7, count))
            position += 12 + length
    return headers
