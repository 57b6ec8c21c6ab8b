"""Transactions benchmark: transactional produce throughput against idempotent-only.

One confluent-kafka producer writes to a 3-partition topic in units of 1, 100 and 1000
messages (100-byte values). *Transactional*: each unit is one transaction
(begin, produce, commit_transaction). *Idempotent*: the same units with
``enable.idempotence`` and a ``flush()`` after each, so both wait for every unit to be
acknowledged and the difference is the transaction protocol's cost (AddPartitionsToTxn,
EndTxn, the markers). Messages/s over a fixed number of units per size.

Measured on odradek and, in the same run when its jars are available, on Apache Kafka 3.9
(ZooKeeper mode, same single-node settings) as the reference. Benchmarks never assert; a
broker that fails is reported with ``value: null``.
"""

from __future__ import annotations

import time
import traceback
import uuid
from pathlib import Path
from typing import Any

import confluent_kafka

from bench.bench_broker import create_topics
from bench.bench_groups import running
from bench.common import Context
from odradek.local_cluster import (
    BrokerProcess,
    ManagedProcess,
    ZooKeeperProcess,
    free_port,
    wait_until,
)
from tests.harness.apache_kafka import ApacheKafka, broker_serving

PARTITIONS = 3
VALUE = b"v" * 100
SIZES = (1, 100, 1000)
SETTINGS = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "auto.create.topics.enable": "false",
}
START_TIMEOUT = 60.0


def start_odradek(zk_connect: str, port: int, data_dir: Path) -> ManagedProcess:
    process = BrokerProcess(0, port, data_dir, zk_connect, dict(SETTINGS))
    process.start()
    wait_until(lambda: broker_serving("127.0.0.1", port), START_TIMEOUT,
               f"odradek on port {port}", interval=0.2)
    return process


def start_apache_kafka(zk_connect: str, port: int, data_dir: Path) -> ManagedProcess:
    process = ApacheKafka().broker(zk_connect, port, data_dir / "kafka-logs",
                                   overrides=dict(SETTINGS))
    process.start(START_TIMEOUT)
    return process


def units_for(size: int, scale: str) -> int:
    """How many units of ``size`` messages one measurement writes."""
    messages = {"full": 20_000, "quick": 4_000, "tiny": 200}[scale]
    return max(3, min(messages // size, {"full": 400, "quick": 100, "tiny": 10}[scale]))


def throughput(bootstrap: str, size: int, units: int, transactional: bool) -> float:
    topic = f"bench-txn-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, {topic: PARTITIONS})
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "linger.ms": 5,
                              "enable.idempotence": True}
    if transactional:
        config["transactional.id"] = f"bench-{topic}"
    producer = confluent_kafka.Producer(config)
    if transactional:
        producer.init_transactions(60)
    # one unit outside the clock: metadata, coordinator lookup, first partition adds
    _unit(producer, topic, size, transactional)
    started = time.monotonic()
    for _ in range(units):
        _unit(producer, topic, size, transactional)
    elapsed = time.monotonic() - started
    return units * size / elapsed


def _unit(producer: confluent_kafka.Producer, topic: str, size: int,
          transactional: bool) -> None:
    if transactional:
        producer.begin_transaction()
    for i in range(size):
        producer.produce(topic, VALUE, partition=i % PARTITIONS)
    if transactional:
        producer.commit_transaction(60)
    else:
        producer.flush(60)


def measure(launch: Any, zk_connect: str, data_dir: Path, scale: str) -> dict[str, float]:
    found: dict[str, float] = {}
    with running(launch, zk_connect, data_dir) as bootstrap:
        for size in SIZES:
            units = units_for(size, scale)
            for mode, transactional in (("transactional", True), ("idempotent", False)):
                found[f"{mode}_{size}"] = throughput(bootstrap, size, units, transactional)
    return found


def _safe(label: str, launch: Any, zk_connect: str, scratch: Path,
          scale: str) -> dict[str, float] | None:
    try:
        return measure(launch, zk_connect + f"/{label}-{uuid.uuid4().hex[:6]}",
                       scratch / label, scale)
    except Exception:
        traceback.print_exc()
        return None


def run(ctx: Context) -> None:
    scratch = ctx.scratch_dir("transactions")
    zookeeper = ZooKeeperProcess(free_port(), scratch / "zookeeper")
    zookeeper.start()
    try:
        zookeeper.wait_ready(90)
        ours = _safe("odradek", start_odradek, zookeeper.connect, scratch, ctx.scale)
        kafka = ApacheKafka()
        theirs = None
        if kafka.fetch_jars() is not None and not ctx.tiny:
            theirs = _safe("kafka", start_apache_kafka, zookeeper.connect, scratch, ctx.scale)
        for size in SIZES:
            for mode in ("transactional", "idempotent"):
                key = f"{mode}_{size}"
                ctx.report(f"transactions.{mode}_produce_{size}_per_unit",
                           None if ours is None else ours[key], "msgs/s",
                           reference=None if theirs is None else theirs[key],
                           reference_name="apache-kafka-3.9", goal="higher is better",
                           unit_size=size, units=units_for(size, ctx.scale),
                           partitions=PARTITIONS, value_bytes=len(VALUE),
                           **({"error": "odradek run failed"} if ours is None else {}))
    finally:
        zookeeper.stop()
