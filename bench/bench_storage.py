"""Storage engine benchmarks, each against a raw-I/O reference measured in the same run.

* append throughput of 1 MiB batches vs raw sequential ``write()`` of the same bytes;
* offset lookup latency in a 1,000-segment log vs a 10-segment log;
* read throughput: ``os.sendfile`` of the regions ``PartitionLog.read`` returns to a loopback
  socket vs ``os.sendfile`` of the segment file itself;
* recovery: opening a large log after a clean shutdown, and after a crash (no marker) with an
  unflushed tail, reported against the tail size;
* compaction throughput and peak memory per distinct key.

``ctx.quick`` shrinks every size (the shapes of the measurements stay the same).
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import statistics
import threading
import time
import tracemalloc
from pathlib import Path

from bench.common import Context
from odradek.config_sections import LogManagerConfig
from odradek.protocol.records import Record, encode_batch
from odradek.storage import LogConfig, LogManager, open_log
from odradek.storage.cleaner import clean_log

MiB = 1024 * 1024


def _batch_of(size: int, record_size: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    payload = rng.randbytes(record_size)
    count = max(1, size // (record_size + 20))
    return encode_batch(
        [Record(timestamp=1_700_000_000_000 + i, value=payload) for i in range(count)]
    )


def _median_of(runs: int, measure) -> float:  # type: ignore[no-untyped-def]
    return statistics.median(measure() for _ in range(runs))


# --------------------------------------------------------------------------- append


def bench_append(ctx: Context) -> None:
    batches = 64 if ctx.quick else 512
    data = _batch_of(MiB, 1000)
    total_mb = batches * len(data) / 1e6

    def ours() -> float:
        directory = ctx.scratch_dir("append")
        log = open_log(directory / "bench-0", LogConfig(segment_bytes=1 << 30))
        # steady state: the first append of a leader epoch fsyncs leader-epoch-checkpoint
        log.append(data, leader_epoch=0)
        started = time.perf_counter()
        for _ in range(batches):
            log.append(data, leader_epoch=0)
        elapsed = time.perf_counter() - started
        log.close()
        shutil.rmtree(directory, ignore_errors=True)
        return total_mb / elapsed

    def raw() -> float:
        directory = ctx.scratch_dir("append-raw")
        fd = os.open(directory / "raw.log", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, data)
        started = time.perf_counter()
        for _ in range(batches):
            os.write(fd, data)
        elapsed = time.perf_counter() - started
        os.close(fd)
        shutil.rmtree(directory, ignore_errors=True)
        return total_mb / elapsed

    # interleaved so that page-cache and writeback state hit both alike
    pairs = [(raw(), ours()) for _ in range(5)]
    reference = statistics.median(pair[0] for pair in pairs)
    value = statistics.median(pair[1] for pair in pairs)
    ctx.report(
        "storage.append_1mib_batches",
        value,
        "MB/s",
        reference=reference,
        reference_name="raw sequential write() of the same bytes",
        goal="ratio >= 0.7",
        batches=batches,
    )


# --------------------------------------------------------------------------- lookup


def _log_with_segments(directory: Path, segments: int, batches_per_segment: int):  # type: ignore[no-untyped-def]
    data = _batch_of(1024, 100)
    config = LogConfig(
        segment_bytes=len(data) * batches_per_segment,
        index_interval_bytes=4096,
        segment_index_bytes=1024 * 1024,
    )
    log = open_log(directory, config)
    for _ in range(segments * batches_per_segment):
        log.append(data, leader_epoch=0)
    return log


def bench_offset_lookup(ctx: Context) -> None:
    # Same data (20,000 one-KiB batches) cut into 10 or 1,000 segments, so the comparison
    # isolates the cost of the segment count from the cost of touching more bytes.
    total_batches = 20_000
    lookups = 5000 if ctx.quick else 20000
    root = ctx.scratch_dir("lookup")
    results = {}
    for segments in (10, 1000):
        per_segment = total_batches // segments
        log = _log_with_segments(root / f"lookup{segments}-0", segments, per_segment)
        rng = random.Random(1)
        end = log.log_end_offset
        offsets = [rng.randrange(0, end) for _ in range(lookups)]
        for offset in offsets[:2000]:  # warm: lazily opened indexes, page cache
            log.read(offset, 1, isolation_high_watermark=False)
        started = time.perf_counter()
        for offset in offsets:
            log.read(offset, 1, isolation_high_watermark=False)
        results[segments] = (time.perf_counter() - started) / lookups * 1e6
        log.close()
    shutil.rmtree(root, ignore_errors=True)
    ctx.report(
        "storage.offset_lookup_1000_segments",
        results[1000],
        "us",
        reference=results[10],
        reference_name="same lookups, same data, in a 10-segment log",
        goal="ratio <= 1.5",
    )


# --------------------------------------------------------------------------- sendfile


def _drain(connection: socket.socket, total: int) -> None:
    buffer = bytearray(4 * MiB)
    received = 0
    while received < total:
        count = connection.recv_into(buffer)
        if not count:
            return
        received += count


def _send_all(sock: socket.socket, fd: int, position: int, length: int) -> None:
    while length:
        sent = os.sendfile(sock.fileno(), fd, position, length)
        position += sent
        length -= sent


def _over_loopback(total: int, sender) -> float:  # type: ignore[no-untyped-def]
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    connection, _address = server.accept()
    receiver = threading.Thread(target=_drain, args=(connection, total))
    receiver.start()
    started = time.perf_counter()
    sender(client)
    receiver.join()
    elapsed = time.perf_counter() - started
    for sock in (client, connection, server):
        sock.close()
    return total / elapsed / 1e6


def bench_sendfile(ctx: Context) -> None:
    size = (64 if ctx.quick else 512) * MiB
    directory = ctx.scratch_dir("sendfile")
    data = _batch_of(64 * 1024, 4000)
    log = open_log(directory / "read-0", LogConfig(segment_bytes=1 << 30))
    while log.size_bytes() < size:
        log.append(data, leader_epoch=0)
    log.flush()
    segment = log.segments[0]
    total = segment.size
    fetch_bytes = MiB

    def ours(sock: socket.socket) -> None:
        offset = 0
        while offset < log.log_end_offset:
            result = log.read(offset, fetch_bytes, isolation_high_watermark=False)
            region = result.region
            assert region is not None
            _send_all(sock, region.fileno(), region.position, region.length)
            offset = result.next_offset

    def raw(sock: socket.socket) -> None:
        fd = os.open(segment.log_path, os.O_RDONLY)
        position = 0
        while position < total:
            length = min(fetch_bytes, total - position)
            _send_all(sock, fd, position, length)
            position += length
        os.close(fd)

    reference = _median_of(3, lambda: _over_loopback(total, raw))
    value = _median_of(3, lambda: _over_loopback(total, ours))
    log.close()
    shutil.rmtree(directory, ignore_errors=True)
    ctx.report(
        "storage.read_sendfile",
        value,
        "MB/s",
        reference=reference,
        reference_name="os.sendfile of the segment file, same chunk size",
        goal="ratio >= 0.8",
        fetch_max_bytes=fetch_bytes,
    )


# --------------------------------------------------------------------------- recovery


def bench_recovery(ctx: Context) -> None:
    size = (256 if ctx.quick else 1536) * MiB
    tails = [16 * MiB, 64 * MiB] if ctx.quick else [64 * MiB, 256 * MiB]
    directory = ctx.scratch_dir("recovery")
    config = LogConfig(segment_bytes=256 * MiB)
    data = _batch_of(MiB, 1000)
    manager = LogManager(LogManagerConfig(log_dirs=(directory,)), config, background=False)
    log = manager.get_or_create_log("big", 0)
    while log.size_bytes() < size:
        log.append(data, leader_epoch=0)
    manager.shutdown()

    started = time.perf_counter()
    manager = LogManager(LogManagerConfig(log_dirs=(directory,)), config, background=False)
    clean_seconds = time.perf_counter() - started
    ctx.report(
        "storage.recovery_after_clean_shutdown",
        clean_seconds,
        "s",
        goal="<= 1 s",
        log_bytes=size,
    )
    for tail in tails:
        log = manager.get_log("big", 0)
        assert log is not None
        log.flush()
        manager.checkpoint()
        written = 0
        while written < tail:
            log.append(data, leader_epoch=0)
            written += len(data)
        # "kill -9": no flush, no checkpoint, no marker; the files are what a killed process
        # leaves (the page cache keeps what was written).
        abandoned = manager
        started = time.perf_counter()
        manager = LogManager(LogManagerConfig(log_dirs=(directory,)), config, background=False)
        seconds = time.perf_counter() - started
        del abandoned
        ctx.report(
            "storage.recovery_after_crash",
            seconds,
            "s",
            unflushed_tail_bytes=written,
            scan_rate_mb_s=written / seconds / 1e6,
            log_bytes=manager.get_log("big", 0).size_bytes(),  # type: ignore[union-attr]
        )
    manager.shutdown()
    shutil.rmtree(directory, ignore_errors=True)


# --------------------------------------------------------------------------- compaction


def _key(rng: random.Random, keys: int) -> bytes:
    return b"key-%08d" % rng.randrange(keys)


def _compacted_log(directory: Path, records: int, keys: int):  # type: ignore[no-untyped-def]
    config = LogConfig(segment_bytes=16 * MiB, cleanup_policy="compact")
    log = open_log(directory, config)
    rng = random.Random(7)
    value = rng.randbytes(100)
    per_batch = 100
    for _batch_number in range(records // per_batch):
        log.append(
            encode_batch(
                [
                    Record(timestamp=1_700_000_000_000, key=_key(rng, keys), value=value)
                    for _ in range(per_batch)
                ]
            ),
            leader_epoch=0,
        )
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    return log


def bench_compaction(ctx: Context) -> None:
    records, keys = (100_000, 10_000) if ctx.quick else (500_000, 50_000)
    root = ctx.scratch_dir("compaction")
    log = _compacted_log(root / "compact-0", records, keys)
    before = log.size_bytes()
    started = time.perf_counter()
    buffer_size = int(keys * 24 / 0.9 * 1.05)  # map sized for the keys, as an operator would
    result = clean_log(log, 0, dedupe_buffer_size=buffer_size)
    seconds = time.perf_counter() - started
    assert result is not None
    log.close()
    ctx.report(
        "storage.compaction_throughput",
        before / seconds / 1e6,
        "MB/s",
        log_bytes=before,
        bytes_after=result.bytes_written,
        records=records,
        distinct_keys=keys,
    )
    # peak memory per distinct key: a fresh log, traced
    log = _compacted_log(root / "compact-1", records, keys)
    tracemalloc.start()
    clean_log(log, 0, dedupe_buffer_size=buffer_size)
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    log.close()
    shutil.rmtree(root, ignore_errors=True)
    ctx.report(
        "storage.compaction_peak_memory_per_key",
        peak / keys,
        "bytes",
        reference=24.0,
        reference_name="Kafka SkimpyOffsetMap bytes per entry",
        distinct_keys=keys,
        peak_bytes=peak,
        offset_map_bytes=buffer_size,
    )


def run(ctx: Context) -> None:
    bench_append(ctx)
    bench_offset_lookup(ctx)
    bench_sendfile(ctx)
    bench_recovery(ctx)
    bench_compaction(ctx)
