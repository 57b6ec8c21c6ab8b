"""The Kafka paper's experiments: odradek and Apache Kafka beside RabbitMQ and ActiveMQ.

One broker per system (the paper ran one broker machine), 200-byte messages, one producer,
then one consumer, all on 127.0.0.1 and all driven from Python, the same language for every
system (clients in the ``client`` field of each row):

* odradek and Apache Kafka 3.9: confluent-kafka (librdkafka), a 1-partition topic;
* RabbitMQ 3.10 (Debian): pika, a durable queue, persistent messages (delivery_mode 2);
* ActiveMQ 5.17 (Debian): stomp.py over STOMP with TCP_NODELAY (without it, each receipt
  waits out a 40 ms delayed ACK), a queue, ``persistent: true`` messages, KahaDB.

Producer tests (``paper.produce.*``), as the paper ran them: the Kafka producer of the paper
did not wait for the broker's acknowledgement and sent batches of 1 or 50 messages, so the
Kafka-protocol systems run acks=0 with ``batch.num.messages`` 1 and 50; RabbitMQ and
ActiveMQ have no batch API (the paper takes their batch size as 1) and run fire-and-forget
(no publisher confirms / no receipts). For context, each is also run acknowledging every
message (acks=1 batch 50 for Kafka; confirm or receipt per message for the peers). A run
ends when the broker *holds* every message sent (log end offset, queue depth, or the
receipt of a final message, which STOMP answers in order), so unacknowledged sends are not
counted as done while they sit in a socket buffer.

Consumer test (``paper.consume``): one consumer reads the messages back with about 1000
messages / 200 KB per fetch (the paper's setting): Kafka fetch sizes of 200 KB; RabbitMQ
prefetch 1000 with automatic ack; ActiveMQ ``activemq.prefetchSize`` 1000, ack auto.

Java rows (``paper.produce.batch1.no_ack.java``, ``.batch50.no_ack.java``,
``paper.consume.java``; quick and full modes only): the same tests with each system's own
JIT-compiled load tool (:mod:`bench.peers.java_clients`), so at batch 1 the client is not
the limit. Each produce row adds ``client_seconds`` (the tool's own send phase; the rate
also counts the wait until the broker holds every message) and, for the Kafka protocol,
``log_batches`` / ``records_per_batch`` read back from the partition's segments.

Goal (the paper's claim): odradek ≥ 5x each peer in their paper configuration, checked for
the Python rows and the Java rows (``….vs_<peer>`` comparison rows).
"""

from __future__ import annotations

import contextlib
import resource
import socket
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import confluent_kafka

from bench.common import Context
from bench.peers import brokers as peers
from bench.peers import java_clients as java
from bench.series import Comparison, Series, alternate, measured
from bench.systems import (
    APACHE_KAFKA,
    ODRADEK,
    create_topic,
    kafka_cluster,
    odradek_cluster,
    zookeeper,
)
from odradek.storage.file_region import SegmentFile
from odradek.storage.segment import scan_headers
from tests.harness.apache_kafka import ApacheKafka

RABBITMQ = "rabbitmq"
ACTIVEMQ = "activemq"
SIZE = 200
PAYLOAD = b"m" * SIZE
STORED_TIMEOUT = 120.0


# ------------------------------------------------------------------------- kafka protocol


def kafka_produce(bootstrap: str, topic: str, count: int, seconds: float, batch: int,
                  acks: str) -> dict[str, Any]:
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "acks": acks, "batch.num.messages": batch,
        "linger.ms": 0 if batch == 1 else 10, "enable.idempotence": False,
        "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1 << 20,
    })
    start = time.monotonic()
    deadline = start + seconds
    sent = 0
    while sent < count and time.monotonic() < deadline:
        try:
            producer.produce(topic, PAYLOAD)
            sent += 1
        except BufferError:
            producer.poll(0.001)
    producer.flush(STORED_TIMEOUT)
    stored = _wait_stored(lambda: _log_end(bootstrap, topic), sent)
    return _rates(stored, time.monotonic() - start, sent)


def _log_end(bootstrap: str, topic: str) -> int:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap,
                                         "group.id": "odradek-bench-paper-watermarks"})
    try:
        return int(consumer.get_watermark_offsets(
            confluent_kafka.TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def kafka_consume(bootstrap: str, topic: str, count: int, seconds: float) -> dict[str, Any]:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": "odradek-bench-paper",
        "enable.auto.commit": False, "fetch.max.bytes": 204_800,
        "max.partition.fetch.bytes": 204_800,
        "message.max.bytes": 204_800,  # librdkafka requires fetch.max.bytes >= this
    })
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    received = 0
    start = time.monotonic()
    try:
        while received < count and time.monotonic() - start < seconds:
            received += sum(1 for m in consumer.consume(10_000, 0.2) if m.error() is None)
    finally:
        consumer.close()
    return _rates(received, time.monotonic() - start, count)


# ------------------------------------------------------------------------------ rabbitmq


def _rabbit_channel(port: int) -> Any:
    import pika

    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port))
    return connection, connection.channel()


def rabbit_produce(port: int, queue: str, count: int, seconds: float,
                   confirm: bool) -> dict[str, Any]:
    import pika

    connection, channel = _rabbit_channel(port)
    channel.queue_declare(queue, durable=True)
    if confirm:
        channel.confirm_delivery()  # basic_publish now waits for each confirm
    persistent = pika.BasicProperties(delivery_mode=2)
    start = time.monotonic()
    deadline = start + seconds
    sent = 0
    try:
        while sent < count and time.monotonic() < deadline:
            channel.basic_publish("", queue, PAYLOAD, persistent)
            sent += 1
        stored = _wait_stored(lambda: channel.queue_declare(
            queue, durable=True, passive=True).method.message_count, sent)
        elapsed = time.monotonic() - start
    finally:
        connection.close()
    return _rates(stored, elapsed, sent)


def rabbit_consume(port: int, queue: str, count: int, seconds: float) -> dict[str, Any]:
    connection, channel = _rabbit_channel(port)
    channel.basic_qos(prefetch_count=1000)
    received = 0
    start = time.monotonic()
    try:
        for method, _props, _body in channel.consume(queue, auto_ack=True,
                                                     inactivity_timeout=5):
            if method is None:
                break
            received += 1
            if received >= count or time.monotonic() - start > seconds:
                break
        elapsed = time.monotonic() - start
        channel.cancel()
    finally:
        connection.close()
    return _rates(received, elapsed, count)


# ------------------------------------------------------------------------------ activemq


class _StompListener:
    def __init__(self) -> None:
        self.receipts: set[str] = set()
        self.messages = 0
        self.cond = threading.Condition()

    def on_receipt(self, frame: Any) -> None:
        with self.cond:
            self.receipts.add(frame.headers.get("receipt-id", ""))
            self.cond.notify_all()

    def on_message(self, frame: Any) -> None:
        with self.cond:
            self.messages += 1
            self.cond.notify_all()

    def wait_receipt(self, receipt: str, timeout: float) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: receipt in self.receipts, timeout):
                raise TimeoutError(f"no STOMP receipt {receipt} in {timeout:.0f}s")
            self.receipts.discard(receipt)


@contextlib.contextmanager
def _stomp(port: int) -> Iterator[tuple[Any, _StompListener]]:
    import stomp

    conn = stomp.Connection([("127.0.0.1", port)], auto_decode=False)
    listener = _StompListener()
    conn.set_listener("bench", listener)
    conn.connect(wait=True)
    # stomp.py leaves Nagle on: every receipt would wait out the 40 ms delayed ACK.
    conn.transport.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        yield conn, listener
    finally:
        conn.disconnect()


def activemq_produce(port: int, queue: str, count: int, seconds: float,
                     confirm: bool) -> dict[str, Any]:
    destination = f"/queue/{queue}"
    headers = {"persistent": "true"}
    with _stomp(port) as (conn, listener):
        start = time.monotonic()
        deadline = start + seconds
        sent = 0
        while sent < count and time.monotonic() < deadline:
            if confirm:
                conn.send(destination, PAYLOAD, headers=headers, receipt=f"r{sent}")
                listener.wait_receipt(f"r{sent}", 60)
            else:
                conn.send(destination, PAYLOAD, headers=headers)
            sent += 1
        # STOMP frames of one connection are handled in order: the receipt of one more
        # (not counted) message means the broker has taken every message before it.
        conn.send(destination, PAYLOAD, headers=headers, receipt="last")
        listener.wait_receipt("last", STORED_TIMEOUT)
        elapsed = time.monotonic() - start
    return _rates(sent, elapsed, sent)


def activemq_consume(port: int, queue: str, count: int, seconds: float) -> dict[str, Any]:
    with _stomp(port) as (conn, listener):
        start = time.monotonic()
        conn.subscribe(f"/queue/{queue}", id="bench", ack="auto",
                       headers={"activemq.prefetchSize": "1000"})
        with listener.cond:
            listener.cond.wait_for(lambda: listener.messages >= count, seconds)
            received = listener.messages
        elapsed = time.monotonic() - start
        conn.unsubscribe("bench")
    return _rates(received, elapsed, count)


# --------------------------------------------------------------------------------- shared


def _wait_stored(stored: Callable[[], int], sent: int) -> int:
    deadline = time.monotonic() + STORED_TIMEOUT
    held = stored()
    while held < sent and time.monotonic() < deadline:
        time.sleep(0.02)
        held = stored()
    return held


def _rates(done: int, seconds: float, expected: int) -> dict[str, Any]:
    rate = done / seconds if seconds > 0 else 0.0
    return {"msgs_per_s": rate, "mb_per_s": rate * SIZE / 1e6, "messages": done,
            "seconds": seconds, "truncated": done < expected}


CLIENTS = {
    ODRADEK: f"confluent-kafka {confluent_kafka.version()[0]} (librdkafka), Python",
    APACHE_KAFKA: f"confluent-kafka {confluent_kafka.version()[0]} (librdkafka), Python",
    RABBITMQ: "pika (AMQP 0-9-1), Python",
    ACTIVEMQ: "stomp.py (STOMP 1.1, TCP_NODELAY), Python",
}


def run(ctx: Context) -> None:
    scratch = ctx.scratch_dir("paper")
    repeats = ctx.pick(3, 1, 1)
    count, seconds = ctx.pick((300_000, 15.0), (30_000, 6.0), (3_000, 3.0))
    with contextlib.ExitStack() as stack:
        targets: dict[str, tuple[list[int], Any]] = {}
        starts: list[tuple[str, Callable[[], tuple[list[int], Any]]]] = []
        zk = stack.enter_context(zookeeper(scratch))
        for name, launch in ((ODRADEK, odradek_cluster), (APACHE_KAFKA, kafka_cluster)):
            def start_kafka(name: str = name, launch: Any = launch) -> tuple[list[int], Any]:
                cluster = stack.enter_context(launch(scratch / name, f"{zk.connect}/{name}", 1))
                return cluster.pids, cluster.bootstrap
            starts.append((name, start_kafka))
        for name, launch_peer in ((RABBITMQ, peers.rabbitmq), (ACTIVEMQ, peers.activemq)):
            def start_peer(name: str = name, launch: Any = launch_peer,
                           ) -> tuple[list[int], Any]:
                peer = stack.enter_context(launch(scratch / name))
                return [peer.process.pid], peer
            starts.append((name, start_peer))
        for name, start in starts:
            try:
                targets[name] = start()
            except Exception as exc:  # reported, and the other systems still run
                ctx.report(f"paper.start.{name}", None, "s", system=name,
                           test="paper.start", kind="error",
                           error=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
        _measure(ctx, targets, repeats, count, seconds)
        if not ctx.tiny:  # a JVM start per load: too slow for the default suite's size
            # Batch 50 sends 10x more: a fresh JVM needs seconds of load before its JIT
            # has compiled the send path (at 100k messages it ran at a third of its speed).
            count = ctx.pick(300_000, 100_000, 0)
            _measure_java(ctx, targets, repeats, {1: count, 50: 10 * count}, scratch)


def _measure(ctx: Context, targets: dict[str, tuple[list[int], Any]], repeats: int,
             count: int, seconds: float) -> None:
    counter = iter(range(1_000_000))
    base = {"message_bytes": SIZE, "brokers": 1, "max_messages": count,
            "max_seconds": seconds}
    kafka_like = [s for s in (ODRADEK, APACHE_KAFKA) if s in targets]
    peer_systems = [s for s in (RABBITMQ, ACTIVEMQ) if s in targets]

    def series(test: str, **params: Any) -> Series:
        return Series(ctx, test, {**base, **params}, comparisons=[Comparison("msgs_per_s")])

    produce = {
        "b1": series("paper.produce.batch1.no_ack", batch=1, acks="0 / none"),
        "b50": series("paper.produce.batch50.no_ack", batch=50, acks="0 / none"),
        "b50_ack": series("paper.produce.batch50.acks1", batch=50, acks="1"),
        "peer_ack": series("paper.produce.batch1.ack_each", batch=1,
                           acks="confirm / receipt per message"),
    }
    produce["peer"] = produce["b1"]  # one test: batch 1, nothing acknowledged, 4 systems
    consume = series("paper.consume", fetch="~1000 messages / 200 KB")
    for repeat in range(repeats):
        for system in alternate([*kafka_like, *peer_systems], repeat):
            pids, address = targets[system]
            client = CLIENTS[system]
            name = f"paper{next(counter)}"
            if system in kafka_like:
                topics = [f"{name}-{k}" for k in ("b1", "b50", "b50a")]
                for t in topics:
                    create_topic(address, t, 1, 1)
                for key, t, batch, acks in (("b1", topics[0], 1, "0"),
                                            ("b50", topics[1], 50, "0"),
                                            ("b50_ack", topics[2], 50, "1")):
                    produce[key].run_once(system, partial(
                        measured, pids, kafka_produce, address, t, count, seconds, batch, acks,
                        client=client), repeat)
                stored = _log_end(address, topics[1])
                consume.run_once(system, partial(
                    measured, pids, kafka_consume, address, topics[1], stored, seconds,
                    client=client), repeat)
            else:
                produce_fn = rabbit_produce if system == RABBITMQ else activemq_produce
                consume_fn = rabbit_consume if system == RABBITMQ else activemq_consume
                row = produce["peer"].run_once(system, partial(
                    measured, pids, produce_fn, address.port, f"{name}-a", count, seconds,
                    False, client=client), repeat)
                produce["peer_ack"].run_once(system, partial(
                    measured, pids, produce_fn, address.port, f"{name}-b", count, seconds,
                    True, client=client), repeat)
                held = int(row["messages"]) if row else count
                consume.run_once(system, partial(
                    measured, pids, consume_fn, address.port, f"{name}-a", held, seconds,
                    client=client), repeat)
    medians: dict[str, dict[str, dict[str, Any]]] = {}
    for key in ("b1", "b50", "b50_ack", "peer_ack"):
        medians[key] = produce[key].finish()
    medians["consume"] = consume.finish()
    _goals(ctx, medians, peer_systems)


def _goals(ctx: Context, medians: dict[str, dict[str, dict[str, Any]]],
           peer_systems: list[str], suffix: str = "") -> None:
    """odradek over each peer, paper configuration, goal ≥ 5x."""
    for key, test in (("b1", "paper.produce.batch1.no_ack"),
                      ("b50", "paper.produce.batch50.no_ack"), ("consume", "paper.consume")):
        ours = medians[key].get(ODRADEK, {}).get("msgs_per_s")
        for peer in peer_systems:
            # Producer rows compare against the peer's only (batch 1) fire-and-forget run.
            theirs_key = "b1" if key.startswith("b") else key
            theirs = medians[theirs_key].get(peer, {}).get("msgs_per_s")
            ctx.report(f"{test}{suffix}.vs_{peer}", ours, "msgs/s", reference=theirs,
                       reference_name=peer, goal="≥ 5", system=ODRADEK, test=test + suffix,
                       metric="msgs_per_s", kind="comparison", has_goal=True,
                       versus=peer)


# ------------------------------------------------------------------ each system's Java tool


def _measure_java(ctx: Context, targets: dict[str, tuple[list[int], Any]], repeats: int,
                  counts: dict[int, int], scratch: Path) -> None:
    """The ``.java`` rows: the same tests, each system driven by its own Java load tool
    (:mod:`bench.peers.java_clients`), so the client does not bound the broker."""
    kafka = ApacheKafka()
    counter = iter(range(1_000_000))
    base = {"message_bytes": SIZE, "brokers": 1}
    kafka_like = [s for s in (ODRADEK, APACHE_KAFKA) if s in targets]
    peer_systems = [s for s in (RABBITMQ, ACTIVEMQ) if s in targets]
    count = counts[1]

    def series(test: str, **params: Any) -> Series:
        return Series(ctx, test, {**base, **params}, comparisons=[Comparison("msgs_per_s")])

    produce = {
        f"b{batch}": series(f"paper.produce.batch{batch}.no_ack.java", batch=batch,
                            acks="0 / none", max_messages=counts[batch]) for batch in (1, 50)}
    consume = series("paper.consume.java", fetch="~1000 messages / 200 KB",
                     max_messages=f"{counts[50]} (Kafka protocol: the batch-50 topic) / "
                                  f"{count} (peers)")
    for repeat in range(repeats):
        for system in alternate([*kafka_like, *peer_systems], repeat):
            pids, address = targets[system]
            name = f"paperjava{next(counter)}"
            if system in kafka_like:
                for key, batch in (("b1", 1), ("b50", 50)):
                    topic = f"{name}-{key}"
                    create_topic(address, topic, 1, 1)
                    produce[key].run_once(system, partial(
                        measured, pids, _java_kafka_produce, kafka, address, topic,
                        counts[batch], batch, scratch / system,
                        client="java:ProducerPerformance"), repeat)
                topic = f"{name}-b50"
                consume.run_once(system, partial(
                    measured, pids, _java_done, partial(
                        java.kafka_consume, kafka, address, topic, _log_end(address, topic),
                        SIZE), None, client="java:ConsumerPerformance"), repeat)
                continue
            queue = f"{name}-a"
            if system == RABBITMQ:
                load: Callable[[], dict[str, Any]] = partial(
                    _java_rabbit_produce, address.port, queue, count)
                tool = f"java:PerfTest {java.PERF_TEST_VERSION}"
            else:
                load = partial(_java_done, partial(
                    java.activemq_produce, address.openwire_port, queue, count, SIZE), None)
                tool = "java:activemq-producer"
            row = produce["b1"].run_once(system, partial(measured, pids, load, client=tool),
                                         repeat)
            held = int(row["messages"]) if row else count
            if system == RABBITMQ:
                run = partial(java.rabbitmq_consume, address.port, queue, held)
            else:
                run = partial(java.activemq_consume, address.openwire_port, queue, held)
                tool = "java:activemq-consumer"
            consume.run_once(system, partial(measured, pids, _java_done, run, None,
                                             client=tool), repeat)
    medians = {key: series.finish() for key, series in produce.items()}
    medians["consume"] = consume.finish()
    _goals(ctx, medians, peer_systems, ".java")


def _java_done(tool: Callable[[], java.ToolRun],
               stored: Callable[[], int] | None) -> dict[str, Any]:
    """Run the tool; its rate over its own send (or receive) phase plus the time until the
    broker holds what it sent (``stored``; None when the tool's exit already says so).
    ``client_cpu_s``: the tool's CPU seconds (JVM start included), beside the broker's."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = tool()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    drain = time.monotonic()
    held = _wait_stored(stored, run.messages) if stored else run.messages
    seconds = run.seconds + time.monotonic() - drain
    client_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {**_rates(held, seconds, run.messages), "client_seconds": run.seconds,
            "client_cpu_s": round(client_cpu, 2)}


def _java_kafka_produce(kafka: ApacheKafka, bootstrap: str, topic: str, count: int,
                        batch: int, logs: Path) -> dict[str, Any]:
    fields = _java_done(partial(java.kafka_produce, kafka, bootstrap, topic, count, batch,
                                SIZE), lambda: _log_end(bootstrap, topic))
    batches, records = log_batches(logs, topic)
    return {**fields, "log_batches": batches,
            "records_per_batch": records / batches if batches else None}


def _java_rabbit_produce(port: int, queue: str, count: int) -> dict[str, Any]:
    connection, channel = _rabbit_channel(port)  # opened first: not part of the drain time
    try:
        return _java_done(partial(java.rabbitmq_produce, port, queue, count, SIZE),
                          lambda: channel.queue_declare(
                              queue, durable=True, passive=True).method.message_count)
    finally:
        connection.close()


def log_batches(root: Path, topic: str) -> tuple[int, int]:
    """(batches, records) in partition 0 of ``topic`` under a broker's data directory, read
    from the segments' batch headers: how the producer grouped what it sent."""
    batches = records = 0
    for path in sorted(root.glob(f"**/{topic}-0/*.log")):
        segment = SegmentFile(path, create=False)
        try:
            for _position, header in scan_headers(segment, 0, segment.size()):
                batches += 1
                records += header.record_count
        finally:
            segment.close()
    return batches, records
