""""Constant time is enough": throughput while one partition's stored log grows.

The paper's claim: appends and sequential reads cost the same however much a partition
holds, so data can be kept for days. Here one broker per system (odradek, then Apache Kafka
3.9, one after the other, each deleting its data before the next starts), a 1-partition
topic with 128 MiB segments (so the log rolls many segments and index files), 1,000-byte
records, in chunks of 1 GB: ProducerPerformance (Java, acks=1, batch.size 64 KiB, linger.ms
5) appends one chunk, then a consumer (librdkafka from Python, assigned by offset, 1 MiB
fetches) reads that chunk back before the next chunk is written. Each chunk's produce and
consume rates are a row with ``stored_gb`` (the log size after the chunk), so the plot is
throughput per GB stored; a flat line is the claim.

Size: 20 GB in full mode, 2 GB quick (250 MB chunks, 32 MiB segments), 60 MB tiny;
``ODRADEK_BENCH_LOG_GB`` overrides the target. Growth stops early, with a ``note`` row
saying why, when the disk would keep less than ``KEEP_FREE_GB`` free or the per-system
time budget (``ODRADEK_BENCH_LOG_SECONDS``; 1800 s full, 300 s quick) is spent. The
``flatness`` row per system and direction is the median rate of the last quarter of the
chunks over that of the first quarter (1.0 is flat; goal ≥ 0.8).
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import confluent_kafka

from bench import kafka_tools as tools
from bench.common import Context
from bench.systems import (
    APACHE_KAFKA,
    ODRADEK,
    ProcessSampler,
    create_topic,
    kafka_cluster,
    odradek_cluster,
    zookeeper,
)
from tests.harness.apache_kafka import ApacheKafka

RECORD = 1000
CHUNK_BYTES = 1_000_000_000
# Kafka's default segment.bytes is 1 GiB: 20 GB would be only 20 segments. A smaller
# segment makes "many segments" (and as many index files) reachable on this machine's disk.
SEGMENT_BYTES = 128 * 1024 * 1024
KEEP_FREE_GB = 20.0
TOPIC = "growth"


def _free_gb(path: Path) -> float:
    usage = shutil.disk_usage(path)
    return usage.free / 1e9


def _consume_range(bootstrap: str, start: int, count: int, timeout: float
                   ) -> dict[str, Any]:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": "odradek-bench-growth",
        "enable.auto.commit": False, "fetch.max.bytes": 1 << 20,
        "max.partition.fetch.bytes": 1 << 20, "queued.max.messages.kbytes": 256 * 1024,
    })
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, start)])
    received = 0
    began = time.monotonic()
    try:
        while received < count and time.monotonic() - began < timeout:
            received += sum(1 for m in consumer.consume(10_000, 0.2) if m.error() is None)
    finally:
        consumer.close()
    elapsed = time.monotonic() - began
    return {"msgs_per_s": received / elapsed, "mb_per_s": received * RECORD / elapsed / 1e6,
            "records": received, "truncated": received < count}


def _grow(ctx: Context, system: str, scratch: Path, target_gb: float, chunk_bytes: int,
          segment_bytes: int, budget_s: float) -> None:
    kafka = ApacheKafka()
    launch = odradek_cluster if system == ODRADEK else kafka_cluster
    per_chunk = chunk_bytes // RECORD
    params = {"brokers": 1, "partitions": 1, "replication": 1, "record_bytes": RECORD,
              "chunk_gb": chunk_bytes / 1e9, "target_gb": target_gb, "budget_s": budget_s,
              "segment_bytes": segment_bytes,
              "producer": f"Apache Kafka {kafka.version} ProducerPerformance (Java), acks=1",
              "consumer": "confluent-kafka (librdkafka), Python"}
    rows: dict[str, list[dict[str, Any]]] = {"produce": [], "consume": []}
    began = time.monotonic()
    with zookeeper(scratch) as zk, launch(scratch / system, f"{zk.connect}/{system}",
                                          1) as cluster:
        create_topic(cluster.bootstrap, TOPIC, 1, 1, {"segment.bytes": str(segment_bytes)})
        chunk = 0
        while (chunk + 1) * chunk_bytes / 1e9 <= target_gb + 1e-9:
            reason = None
            if _free_gb(scratch) - chunk_bytes / 1e9 < KEEP_FREE_GB:
                reason = f"disk: keeping {KEEP_FREE_GB} GB free"
            elif time.monotonic() - began > budget_s:
                reason = f"time: the {budget_s:.0f} s budget is spent"
            if reason is not None:
                ctx.report(f"log_growth.stopped.{system}", chunk * chunk_bytes / 1e9, "GB",
                           system=system, test="log_growth.stopped", kind="note",
                           reason=reason)
                break
            with ProcessSampler(cluster.pids) as sampler:
                produced = tools.producer_performance(
                    kafka, cluster.bootstrap, TOPIC, per_chunk, RECORD,
                    {"acks": "1", "batch.size": 65536, "linger.ms": 5}, timeout=budget_s)
            stored_gb = (chunk + 1) * chunk_bytes / 1e9
            rows["produce"].append(ctx.measurement(
                system, "log_growth.produce", params, kind="run", stored_gb=stored_gb,
                chunk=chunk, **produced, **sampler.fields()))
            with ProcessSampler(cluster.pids) as sampler:
                consumed = _consume_range(cluster.bootstrap, chunk * per_chunk, per_chunk,
                                          budget_s)
            rows["consume"].append(ctx.measurement(
                system, "log_growth.consume", params, kind="run", stored_gb=stored_gb,
                chunk=chunk, **consumed, **sampler.fields()))
            chunk += 1
    for what, series in rows.items():
        if len(series) < 2:
            continue
        rates = [r["mb_per_s"] for r in series]
        head = statistics.median(rates[: max(1, len(rates) // 4)])
        tail = statistics.median(rates[-max(1, len(rates) // 4):])
        ctx.report(f"log_growth.{what}.flatness.{system}", tail / head if head else None,
                   "ratio", system=system, test=f"log_growth.{what}", kind="flatness",
                   params=params, first_quarter_mb_per_s=head, last_quarter_mb_per_s=tail,
                   stored_gb=series[-1]["stored_gb"], chunks=len(series),
                   goal="≥ 0.8", ratio=tail / head if head else None)


def run(ctx: Context) -> None:
    target = float(os.environ.get("ODRADEK_BENCH_LOG_GB") or ctx.pick(20, 2, 0.06))
    budget = float(os.environ.get("ODRADEK_BENCH_LOG_SECONDS") or ctx.pick(1800, 300, 120))
    chunk_bytes = ctx.pick(CHUNK_BYTES, CHUNK_BYTES // 4, CHUNK_BYTES // 50)
    for system in (ODRADEK, APACHE_KAFKA):
        scratch = ctx.scratch_dir(f"growth-{system}")
        try:
            _grow(ctx, system, scratch, target, chunk_bytes,
                  ctx.pick(SEGMENT_BYTES, SEGMENT_BYTES // 4, 4 * 1024 * 1024), budget)
        except Exception as exc:  # reported; the next system still runs
            ctx.report(f"log_growth.error.{system}", None, "GB", system=system,
                       test="log_growth", kind="error",
                       error=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
