"""Opening a partition directory: finishing interrupted operations, then recovery.

Order of work, and why:

1. Leftovers of interrupted operations. ``*.tmp`` (half-written checkpoints/snapshots) and
   ``*.cleaned`` (a cleaner output not yet complete) are deleted: the originals are still in
   place. ``*.swap`` files are a *complete*, fsynced cleaner output whose swap was cut short:
   the segments they replace (base offsets inside the swap's offset range) are deleted and the
   swap files renamed into place, finishing the swap. ``*.deleted`` files were already
   removed from the log and are deleted.
2. Segments are opened in base-offset order.
3. After a clean shutdown (the log dir's ``.kafka_cleanshutdown`` marker) nothing is scanned:
   indexes were trimmed and flushed on close; only a missing index is rebuilt.
   After an unclean shutdown, every segment from the one holding the recovery point on is
   scanned batch by batch (:meth:`LogSegment.recover`): CRCs are checked, the first torn or
   corrupt batch and everything after it - including later segments - is truncated away and
   logged, and the indexes are rebuilt. Segments before the recovery point were fsynced
   before the checkpoint was written; only their indexes are sanity-checked (and rebuilt if
   damaged or missing).
4. Producer state is loaded from the newest snapshot and completed from batch headers;
   the replay also re-indexes aborted transactions (``.txnindex``). After an unclean
   shutdown the ``.txnindex`` of every recovered segment is reset first (it is not fsynced
   before the log and may miss entries or hold ones for truncated markers), and the replay
   starts from a snapshot no later than the first recovered segment, so every ABORT marker
   in those segments is indexed again.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
from pathlib import Path

from odradek.protocol.errors import CorruptRecord
from odradek.storage.log import PartitionLog
from odradek.storage.log_config import LogConfig
from odradek.storage.producer_state import ProducerStateManager
from odradek.storage.scheduler import Scheduler
from odradek.storage.segment import LogSegment, check_index_or_rebuild

__all__ = ["open_log"]

log = logging.getLogger(__name__)

_SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex)(\.swap)?$")


def _cleanup_leftovers(directory: Path) -> None:
    for path in directory.iterdir():
        name = path.name
        if name.endswith((".tmp", ".cleaned", ".deleted")):
            log.info("removing leftover %s", path)
            path.unlink(missing_ok=True)


def _finish_swaps(directory: Path, config: LogConfig) -> None:
    for swap_log in sorted(directory.glob("*.log.swap")):
        base = int(swap_log.name[:20])
        swapped = LogSegment(
            directory,
            base,
            index_interval_bytes=config.index_interval_bytes,
            max_index_size=config.segment_index_bytes,
            suffix=".swap",
        )
        try:
            swapped.load_next_offset()
        except CorruptRecord:
            swapped.recover()
        end = swapped.next_offset
        swapped.close()
        for path in directory.iterdir():
            match = _SEGMENT_FILE.match(path.name)
            if match and not match[3] and base <= int(match[1]) < max(end, base + 1):
                log.info("finishing interrupted swap: deleting replaced %s", path)
                path.unlink()
        for kind in ("log", "index", "timeindex", "txnindex"):
            source = directory / f"{base:020d}.{kind}.swap"
            if source.exists():
                os.replace(source, directory / f"{base:020d}.{kind}")


def open_log(
    directory: Path,
    config: LogConfig,
    *,
    recovery_point: int = 0,
    log_start_offset: int = 0,
    high_watermark: int = 0,
    had_clean_shutdown: bool = False,
    scheduler: Scheduler | None = None,
) -> PartitionLog:
    """Open (creating if needed) the partition log in ``directory``, recovering as needed."""
    directory.mkdir(parents=True, exist_ok=True)
    _cleanup_leftovers(directory)
    _finish_swaps(directory, config)
    bases = sorted(
        int(path.name[:20]) for path in directory.glob("*.log") if _SEGMENT_FILE.match(path.name)
    )
    # Orphan indexes (no .log) are stale; drop them.
    for path in directory.iterdir():
        match = _SEGMENT_FILE.match(path.name)
        if match and match[2] != "log" and int(match[1]) not in bases:
            path.unlink(missing_ok=True)
    segments = [
        LogSegment(
            directory,
            base,
            index_interval_bytes=config.index_interval_bytes,
            max_index_size=config.segment_index_bytes,
        )
        for base in bases
    ]
    # Upper bounds for inactive segments (exact for the last one is computed below).
    for previous, following in itertools.pairwise(segments):
        previous.next_offset = following.base_offset
    replay_from_at_most: int | None = None
    if had_clean_shutdown:
        for segment in segments:
            if not segment.index_path.exists() or not segment.time_index_path.exists():
                log.warning("segment %s: index missing, rebuilding", segment.log_path)
                segment.rebuild_indexes()
        if segments:
            last = segments[-1]
            check_index_or_rebuild(last, is_last=True)
    else:
        segments, replay_from_at_most = _recover(segments, recovery_point)
    if not segments:
        segment = LogSegment(
            directory,
            log_start_offset,
            index_interval_bytes=config.index_interval_bytes,
            max_index_size=config.segment_index_bytes,
        )
        segments = [segment]
    segments[-1].make_active()
    if segments[-1].size and segments[-1].next_offset == segments[-1].base_offset:
        segments[-1].load_next_offset()
    partition_log = PartitionLog(
        directory,
        config,
        segments,
        log_start_offset=log_start_offset,
        recovery_point=recovery_point,
        high_watermark=high_watermark,
        producer_state=ProducerStateManager(directory),
        scheduler=scheduler,
    )
    start = partition_log.producer_state.load_latest_snapshot(
        partition_log.log_start_offset, partition_log.log_end_offset, at_most=replay_from_at_most
    )
    partition_log.scan_producer_state_from(start)
    return partition_log


def _recover(
    segments: list[LogSegment], recovery_point: int
) -> tuple[list[LogSegment], int | None]:
    """Scan segments from the one holding the recovery point; cut at the first damage.
    Returns the segments kept and the base of the first one recovered (None if none)."""
    first_unflushed = 0
    for index, segment in enumerate(segments):
        if segment.base_offset <= recovery_point:
            first_unflushed = index
    for segment in segments[:first_unflushed]:
        check_index_or_rebuild(segment)
    kept = list(segments[:first_unflushed])
    first_recovered = segments[first_unflushed].base_offset if segments else None
    for index in range(first_unflushed, len(segments)):
        segment = segments[index]
        segment.txn_index.reset()
        truncated = segment.recover()
        segment.on_become_inactive()
        kept.append(segment)
        if truncated:
            for later in segments[index + 1 :]:
                log.warning(
                    "deleting segment %s: it follows damage in %s", later.log_path, segment.log_path
                )
                later.delete_files()
            break
    return kept, first_recovered
