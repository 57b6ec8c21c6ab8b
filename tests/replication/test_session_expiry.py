"""A leader whose ZooKeeper session expires (a long pause) re-registers and rejoins."""

from __future__ import annotations

import signal
from typing import Any

from tests.harness import wait_until
from tests.harness.zk import zk_client

from .support import (
    FAST_FAILOVER,
    create_topic,
    partition_state,
    producer,
    read_all,
    wait_for_isr,
)


def test_paused_leader_loses_session_then_reregisters_and_rejoins_isr(
    cluster_factory: Any,
) -> None:
    cluster = cluster_factory(3, **FAST_FAILOVER)
    create_topic(cluster.bootstrap, "paused", replication=3,
                 config={"min.insync.replicas": "2"})
    p = producer(cluster.bootstrap)
    before = [f"b{i}".encode() for i in range(100)]
    for value in before:
        p.produce("paused", value)
    assert p.flush(30) == 0
    with zk_client(cluster.zookeeper_connect) as zk:
        leader = wait_for_isr(zk, "paused", 3)["leader"]
        process = cluster.brokers[leader].process
        process.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: zk.exists(f"/brokers/ids/{leader}") is None, 30,
                       "the paused broker's session to expire")
            wait_until(lambda: (partition_state(zk, "paused") or {}).get("leader")
                       not in (None, leader, -1), 30, "a new leader")
        finally:
            process.send_signal(signal.SIGCONT)
        after = [f"a{i}".encode() for i in range(100)]
        for value in after:
            p.produce("paused", value)
        assert p.flush(60) == 0
        wait_until(lambda: zk.exists(f"/brokers/ids/{leader}") is not None, 30,
                   "the resumed broker to register again")
        wait_until(lambda: leader in (partition_state(zk, "paused") or {}).get("isr", []),
                   40, f"broker {leader} back in the ISR")
    values = read_all(cluster.bootstrap, "paused")
    assert values == before + after
