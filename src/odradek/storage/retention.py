"""Time- and size-based retention: deleting whole old segments (never the active one).

Kafka's three rules, applied oldest segment first and stopping at the first segment that
must stay (so the log stays a contiguous suffix):

* ``retention.ms`` (>= 0): a segment whose largest record timestamp (or, without
  timestamps, its file mtime) is older than ``now - retention.ms``;
* ``retention.bytes`` (>= 0): while the log is larger than ``retention.bytes`` by at least
  the oldest segment's size;
* log start offset: a segment all of whose offsets are below the log start (DeleteRecords).

The first two apply only when ``cleanup.policy`` contains ``delete``. Deletion itself is the
log's :meth:`~odradek.storage.log_deletion.SegmentDeletion.delete_oldest_segments`: files
are renamed to ``.deleted`` at once and unlinked after ``file.delete.delay.ms``, so fetches
holding regions of them finish undisturbed.
"""

from __future__ import annotations

from odradek.clock import wall_ms
from odradek.storage.log import PartitionLog

__all__ = ["apply_retention"]


def apply_retention(log: PartitionLog, now: int | None = None) -> int:
    """Delete what the log's retention settings allow; returns the number of segments deleted."""
    now = now if now is not None else wall_ms()
    deleted = log.delete_segments_below_log_start()
    config = log.config
    if not config.delete:
        return deleted
    if config.retention_ms >= 0:
        horizon = now - config.retention_ms
        segments = log.segments
        count = 0
        for segment in segments[:-1]:
            if segment.largest_timestamp_for_retention() < horizon:
                count += 1
            else:
                break
        deleted += log.delete_oldest_segments(
            count, f"retention.ms={config.retention_ms}", decided_on=segments
        )
    if config.retention_bytes >= 0:
        segments = log.segments
        excess = sum(segment.size for segment in segments) - config.retention_bytes
        count = 0
        for segment in segments[:-1]:
            if excess - segment.size < 0:
                break
            excess -= segment.size
            count += 1
        deleted += log.delete_oldest_segments(
            count, f"retention.bytes={config.retention_bytes}", decided_on=segments
        )
    return deleted
