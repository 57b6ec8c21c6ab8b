"""The machine's limits, measured in the same run as the systems, for the fraction rows.

What a broker on this machine cannot beat, whatever its language:

* ``limits.loopback_tcp``: bytes pushed through loopback TCP from one process to another
  (plain ``sendall``/``recv_into``, 64 KiB writes) — every produced byte crosses it at least
  once, and with replication factor 3 three times;
* ``limits.sequential_append``: 1 MiB ``write()`` calls appending to one file, no fsync
  (what Kafka's and odradek's default flush policy asks of the disk: the page cache);
* ``limits.sendfile``: ``os.sendfile`` of a file already in the page cache to a loopback
  socket, 1 MiB at a time (the zero-copy consumer path);
* ``limits.crc32c``: CRC32C of 1 MiB buffers (the ``crc32c`` package, hardware) — every
  produced batch is checked.

Each is the median of 3. The report step (:mod:`bench.report`) divides every system's
median MB/s by these, per test (``kind: "fraction"`` rows).
"""

from __future__ import annotations

import os
import shutil
import statistics
import time

import crc32c

from bench.bench_broker import raw_loopback
from bench.bench_storage import _over_loopback, _send_all
from bench.common import Context

MiB = 1 << 20


def _append(directory: str, total: int) -> float:
    chunk = os.urandom(MiB)
    path = os.path.join(directory, "append.log")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    try:
        start = time.perf_counter()
        for _ in range(total // MiB):
            os.write(fd, chunk)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        os.unlink(path)
    return total / elapsed / 1e6


def _sendfile(directory: str, total: int) -> float:
    path = os.path.join(directory, "segment.log")
    with open(path, "wb") as f:
        for _ in range(total // MiB):
            f.write(os.urandom(MiB))
    fd = os.open(path, os.O_RDONLY)
    try:
        def send(sock) -> None:  # type: ignore[no-untyped-def]
            position = 0
            while position < total:
                _send_all(sock, fd, position, min(MiB, total - position))
                position += MiB

        _over_loopback(total, send)  # warm the page cache
        return statistics.median(_over_loopback(total, send) for _ in range(3))
    finally:
        os.close(fd)
        os.unlink(path)


def _crc(total: int) -> float:
    buf = os.urandom(MiB)
    start = time.perf_counter()
    for _ in range(total // MiB):
        crc32c.crc32c(buf)
    return total / (time.perf_counter() - start) / 1e6


def run(ctx: Context) -> None:
    size = ctx.pick(1024, 256, 32) * MiB
    directory = ctx.scratch_dir("limits")
    try:
        limits = {
            "loopback_tcp": statistics.median(size / raw_loopback(size) / 1e6
                                              for _ in range(3)),
            "sequential_append": statistics.median(_append(str(directory), size)
                                                   for _ in range(3)),
            "sendfile": _sendfile(str(directory), size),
            "crc32c": statistics.median(_crc(size * 4) for _ in range(3)),
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    for name, mb in limits.items():
        ctx.report(f"limits.{name}", mb, "MB/s", system="limit", test=f"limits.{name}",
                   kind="limit", mb_per_s=mb, bytes=size)
    ctx.shared["limits"] = limits
