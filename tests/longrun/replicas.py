"""Every replica's copy of a partition, read from its segment files on disk.

The read-back goes through the leader, so it cannot see a follower whose log diverged below
the high watermark, which would serve different records after the next failover. Followers
copy the leader's batches byte for byte, so below the high watermark each replica must hold
the same batches: same offsets and the same CRC-32C (which covers everything but the base
offset and leader epoch). Each batch's CRC is also recomputed, to catch on-disk corruption
that recovery after a kill -9 let through.

The same pass reads who wrote each batch (producer id and epoch): the checker needs it to
tell a broker that failed to deduplicate from a client that re-sent a record under a new
producer epoch (see ``duplicate`` in :mod:`tests.longrun.invariants`).

Written against Kafka's documented RecordBatch v2 layout (the first 21 bytes: base offset,
length, leader epoch, magic, CRC; then attributes, the last offset delta, two timestamps,
producer id and epoch), not odradek's own parser: this is the check of that code, not a user
of it.
"""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c

from tests.longrun.invariants import BatchWriter, ReplicaBatch

__all__ = ["read_replica"]

_PREFIX = struct.Struct(">qiibI")  # base offset, length, leader epoch, magic, crc
_LAST_DELTA = struct.Struct(">i")  # at byte 23, after the 2-byte attributes
_WRITER = struct.Struct(">qh")  # producer id and epoch, at byte 43 after the two timestamps
_CRC_START = 21


def read_replica(log_dir: Path, topic: str, partition: int
                 ) -> tuple[list[ReplicaBatch], list[BatchWriter]]:
    """The batches of ``topic-partition`` in ``log_dir`` and their writers, in offset order
    (empty when this broker holds no replica). Stops at a torn tail, as recovery would."""
    directory = log_dir / f"{topic}-{partition}"
    batches: list[ReplicaBatch] = []
    writers: list[BatchWriter] = []
    for segment in sorted(directory.glob("*.log")):
        data = segment.read_bytes()
        position = 0
        while len(data) - position >= _PREFIX.size + 6:
            base, length, _epoch, _magic, crc = _PREFIX.unpack_from(data, position)
            end = position + 12 + length
            if length < 49 or end > len(data):
                break
            (last_delta,) = _LAST_DELTA.unpack_from(data, position + 23)
            valid = crc32c.crc32c(data[position + _CRC_START:end]) == crc
            batches.append((base, base + last_delta, crc, valid))
            writers.append(BatchWriter(base, base + last_delta,
                                       *_WRITER.unpack_from(data, position + 43)))
            position = end
    return batches, writers
