"""Lock-free reads racing appends, rolls, retention and compaction."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from odradek.protocol.errors import OffsetOutOfRange
from odradek.protocol.records import validate_batches
from odradek.storage.cleaner import clean_log
from odradek.storage.retention import apply_retention
from tests.storage.helpers import BASE_TS, batch, new_log, small_config


def test_readers_always_see_whole_valid_batches_while_the_log_changes(tmp_path: Path) -> None:
    config = small_config(
        segment_bytes=2048,
        retention_bytes=20_000,
        cleanup_policy="compact,delete",
        min_cleanable_dirty_ratio=0.0,
        file_delete_delay_ms=0,
    )
    log = new_log(tmp_path, config)
    stop = threading.Event()
    failures: list[BaseException] = []
    reads = 0

    def reader() -> None:
        nonlocal reads
        while not stop.is_set():
            try:
                start = log.log_start_offset
                result = log.read(start, 8192, isolation_high_watermark=False)
                if result.region is not None:
                    batches = validate_batches(result.region.read_bytes())
                    offsets = [h.base_offset for _p, h in batches]
                    assert offsets == sorted(offsets)
                    reads += 1
            except OffsetOutOfRange:
                continue  # retention moved the log start between our two calls
            except BaseException as exc:
                failures.append(exc)
                return

    def maintainer() -> None:
        while not stop.is_set():
            try:
                log.update_high_watermark(log.log_end_offset)
                apply_retention(log)
                clean_log(log, 0)
                log.remove_deleted_segments(force=True)
            except BaseException as exc:
                failures.append(exc)
                return

    threads = [threading.Thread(target=reader) for _ in range(2)]
    threads.append(threading.Thread(target=maintainer))
    for thread in threads:
        thread.start()
    # Bounded by work, not by time: on a loaded machine the readers can starve the writer
    # (85 appends in 3 s once), which says nothing about what a reader sees.
    deadline = time.monotonic() + 60
    i = 0
    try:
        while (i < 150 or reads <= 10) and time.monotonic() < deadline and not failures:
            log.append(
                batch([b"%d" % i], keys=[b"k%d" % (i % 7)], timestamp=BASE_TS), leader_epoch=0
            )
            i += 1
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    if failures:
        raise failures[0]
    assert reads > 10 and i >= 150, f"{reads} reads, {i} appends in 60 s"
