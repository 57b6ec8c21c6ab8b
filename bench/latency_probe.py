"""Open-loop end-to-end latency: a producer at a fixed rate, a consumer timing each record.

Two processes (spawned, so neither waits on the other's GIL): the producer sends 100-byte
records at ``rate`` msgs/s, ``ceil(rate / 1000)`` per millisecond tick (as
ProducerPerformance's throttle does), each carrying ``time.monotonic_ns()`` at the send call;
the consumer, assigned to every partition at its log end before the producer starts, takes
``monotonic_ns()`` when the record is handed to it. CLOCK_MONOTONIC is one clock for the
whole machine, so the difference is the produce → broker → (replication, high watermark)
→ fetch → consumer latency, including librdkafka's own queues, the same for both systems.
Records sent during the warm-up are received but not counted.

Client settings are the low-latency ones a latency-sensitive user sets: linger.ms 0, Nagle
off; the consumer keeps librdkafka's fetch defaults (fetch.wait.max.ms 500, fetch.min.bytes
1), so a broker that answers a waiting fetch only at its timeout shows up here.
"""

from __future__ import annotations

import multiprocessing
import struct
import time
from typing import Any

from bench.common import percentile

_STAMP = struct.Struct(">qB")


def _consume(bootstrap: str, topic: str, partitions: int, ready: Any, stop: Any,
             results: Any) -> None:
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": "odradek-bench-latency",
        "enable.auto.commit": False, "auto.offset.reset": "latest",
        "socket.nagle.disable": True,
    })
    # Start at each partition's log end, read as explicit offsets: with OFFSET_END,
    # librdkafka's position() stays invalid until a record arrives, so there is nothing to
    # wait on. A few polls then open the fetch connections before the producer starts.
    ends = [consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p),
                                           timeout=30)[1] for p in range(partitions)]
    consumer.assign([confluent_kafka.TopicPartition(topic, p, end)
                     for p, end in enumerate(ends)])
    for _ in range(5):
        consumer.consume(num_messages=1000, timeout=0.1)
    ready.set()
    latencies: list[int] = []
    warmup = errors = 0
    idle_since = None
    while True:
        # consume(n, timeout) waits out its whole timeout to fill n (measured here with
        # confluent-kafka 2.16: 50 ms every call at 1k msgs/s), which would add up to the
        # timeout to every record; poll returns as soon as one is there, and the records
        # already queued behind it are drained without waiting.
        first = consumer.poll(0.05)
        messages = [] if first is None else [
            first, *consumer.consume(num_messages=10_000, timeout=0)]
        now = time.monotonic_ns()
        for msg in messages:
            if msg.error() is not None:
                errors += 1
                continue
            sent, measured = _STAMP.unpack_from(msg.value())
            if measured:
                latencies.append(now - sent)
            else:
                warmup += 1
        if messages:
            idle_since = None
        elif stop.is_set():
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 1.0:
                break
    consumer.close()
    latencies.sort()
    ms = [x / 1e6 for x in latencies]
    results.put({"received": len(ms), "warmup_received": warmup, "errors": errors,
                 "p50_ms": percentile(ms, 0.50), "p99_ms": percentile(ms, 0.99),
                 "p999_ms": percentile(ms, 0.999), "max_ms": ms[-1] if ms else None})


def _produce(bootstrap: str, topic: str, rate: int, warmup_s: float, measure_s: float,
             acks: str, record_bytes: int, results: Any) -> None:
    import confluent_kafka

    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 0,
        "enable.idempotence": False, "socket.nagle.disable": True,
        "queue.buffering.max.messages": 1_000_000,
    })
    padding = b"v" * (record_bytes - _STAMP.size)
    failed = 0

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal failed
        if err is not None:
            failed += 1

    producer.produce(topic, _STAMP.pack(time.monotonic_ns(), 0) + padding)
    producer.flush(30)
    start = time.monotonic()
    measure_from = start + warmup_s
    end = measure_from + measure_s
    sent = measured = behind = 0
    while (now := time.monotonic()) < end:
        due = int((now - start) * rate)
        if due - sent > rate // 10:
            behind += 1  # more than 100 ms behind schedule: the producer is the bottleneck
        flag = 1 if now >= measure_from else 0
        while sent < due:
            try:
                producer.produce(topic, _STAMP.pack(time.monotonic_ns(), flag) + padding,
                                 on_delivery=on_delivery)
            except BufferError:
                producer.poll(0.001)
                continue
            sent += 1
            measured += flag
        producer.poll(0)
        time.sleep(0.0005)
    producer.flush(60)
    results.put({"sent": sent, "measured_sent": measured, "failed": failed,
                 "behind_ticks": behind, "achieved_rate": measured / measure_s})


def measure(bootstrap: str, topic: str, partitions: int, rate: int, acks: str,
            warmup_s: float, measure_s: float, record_bytes: int = 100) -> dict[str, Any]:
    """One fixed-rate run; the row's latency fields plus what was sent and received."""
    mp = multiprocessing.get_context("spawn")
    ready, stop = mp.Event(), mp.Event()
    consumed, produced = mp.Queue(), mp.Queue()
    consumer = mp.Process(target=_consume, args=(bootstrap, topic, partitions, ready, stop,
                                                 consumed), daemon=True)
    consumer.start()
    producer = None
    try:
        if not ready.wait(90):
            raise RuntimeError("latency consumer did not get its positions in 90 s")
        producer = mp.Process(target=_produce, args=(bootstrap, topic, rate, warmup_s,
                                                     measure_s, acks, record_bytes, produced),
                              daemon=True)
        producer.start()
        sent = produced.get(timeout=warmup_s + measure_s + 120)
        stop.set()
        received = consumed.get(timeout=120)
    finally:
        stop.set()
        for proc in (producer, consumer):
            if proc is not None:
                proc.join(10)
                if proc.is_alive():
                    proc.kill()
                    proc.join(5)
    return {**received, **sent, "msgs_per_s": sent["achieved_rate"],
            "mb_per_s": sent["achieved_rate"] * record_bytes / 1e6,
            "lost": sent["measured_sent"] - received["received"]}
