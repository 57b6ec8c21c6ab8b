"""Exactly once under SIGKILL: a consume-transform-produce worker (a real librdkafka
process) is killed at random moments and restarted until it has drained its input; the
output then holds every input exactly once (read_committed)."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.slow  # about a minute: repeated kills and restarts

INPUT = 10000
PARTITIONS = 3
ROOT = Path(__file__).resolve().parents[2]


def _read_committed(bootstrap: str, topic: str) -> Counter[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "checker",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen: Counter[bytes] = Counter()
    quiet_since = time.monotonic()
    try:
        while time.monotonic() - quiet_since < 3:
            batch = consumer.consume(num_messages=1000, timeout=0.5)
            for message in batch:
                if message.error() is None and message.value() is not None:
                    seen[message.value()] += 1  # type: ignore[index]
            if batch:
                quiet_since = time.monotonic()
    finally:
        consumer.close()
    return seen


def test_killed_and_restarted_worker_writes_every_input_exactly_once(broker: Any) -> None:
    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics(
        [NewTopic(topic, PARTITIONS, 1) for topic in ("eos-in", "eos-out")])
    for future in created.values():
        future.result(30)
    feeder = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(INPUT):
        feeder.produce("eos-in", value=b"%d" % i, partition=i % PARTITIONS)
    assert feeder.flush(60) == 0
    rng = random.Random(17)
    argv = [sys.executable, "-m", "tests.broker.eos_worker", bootstrap, "eos-in", "eos-out",
            "eos-group", str(PARTITIONS)]
    kills = 0
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        worker = subprocess.Popen(argv, cwd=ROOT)
        try:
            worker.wait(timeout=rng.uniform(0.8, 3.0) if kills < 8 else 120)
        except subprocess.TimeoutExpired:
            worker.kill()  # SIGKILL: mid-transaction, mid-commit, wherever it is
            worker.wait(10)
            kills += 1
            continue
        assert worker.returncode == 0
        break
    else:
        pytest.fail("the worker never drained its input")
    assert kills >= 3, "the worker must have been killed mid-run several times"
    seen = _read_committed(bootstrap, "eos-out")
    expected = {b"out-%d" % i for i in range(INPUT)}
    duplicates = {value: n for value, n in seen.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} values written more than once"
    assert set(seen) == expected, f"{len(expected - set(seen))} inputs missing"
