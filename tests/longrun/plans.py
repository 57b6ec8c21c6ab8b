"""The mixed load both long runs put on the cluster, and the knobs read from the environment.

Three topics of different widths (RF 3, min.insync.replicas 2); idempotent acks=all
producers of both clients (librdkafka with and without compression, odradek's own client);
two consumer groups with members of both clients, one eager (``range``) and one incremental
(``cooperative-sticky``), whose members come and go every half minute to two minutes.
Rates are modest on purpose: the machine is small and shared, and the point is hours of
faults, not throughput.
"""

from __future__ import annotations

import os
import time

from tests.longrun.workload import Slot

__all__ = ["env_number", "mixed_load", "run_seed", "topics"]


def env_number(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value else default


def run_seed(variable: str) -> int:
    """The seed from ``variable`` when set (to replay a run), else a fresh one."""
    value = os.environ.get(variable)
    return int(value) if value else int(time.time() * 1000) % 1_000_000_007


def topics(prefix: str) -> list[dict[str, object]]:
    config = {"min.insync.replicas": "2"}
    return [
        {"name": f"{prefix}-events", "partitions": 6, "replication": 3, "config": config},
        {"name": f"{prefix}-metrics", "partitions": 3, "replication": 3, "config": config},
        {"name": f"{prefix}-audit", "partitions": 1, "replication": 3, "config": config},
    ]


def mixed_load(bootstrap: str, prefix: str, rate: float, delivery_timeout_s: float,
               colocated_broker: int | None = None) -> tuple[list[Slot], list[Slot]]:
    """(producer slots, member slots); ``rate`` is records per second per producer. With
    ``colocated_broker``, one more producer runs inside that broker's network namespace."""
    events, metrics, audit = (f"{prefix}-{t}" for t in ("events", "metrics", "audit"))
    everything = [events, metrics, audit]
    base = {"bootstrap": bootstrap, "rate": rate, "delivery_timeout_s": delivery_timeout_s,
            "max_records": int(rate * 3600)}
    producers = [
        Slot("confA", "produce-confluent", {**base, "topics": everything,
                                            "compression": "none"}, (90, 300)),
        Slot("confB", "produce-confluent", {**base, "topics": [events, metrics],
                                            "compression": "lz4"}, (90, 300)),
        Slot("odrA", "produce-odradek", {**base, "topics": everything,
                                         "compression": "gzip"}, (90, 300)),
    ]
    if colocated_broker is not None:
        producers.append(Slot("nearB", "produce-confluent",
                              {**base, "topics": [events, audit], "compression": "none"},
                              (60, 180), near_broker=colocated_broker))
    eager = {"bootstrap": bootstrap, "group": f"{prefix}-range", "strategy": "range",
             "topics": [events, audit]}
    coop = {"bootstrap": bootstrap, "group": f"{prefix}-coop",
            "strategy": "cooperative-sticky", "topics": [events, metrics]}
    members = [
        Slot("rangeC", "consume-confluent", eager, (30, 120)),
        Slot("rangeO", "consume-odradek", eager, (30, 120)),
        Slot("coopC", "consume-confluent", coop, (30, 120)),
        Slot("coopO", "consume-odradek", coop, (30, 120)),
    ]
    return producers, members
