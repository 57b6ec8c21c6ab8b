"""Failover ahead of ZooKeeper: a killed broker's leaderships move when its connections are
refused, long before its session expires; a paused one (SIGSTOP) keeps them until then.

The sessions here time out after 30 s (resp. 10 s), so a recovery measured in a few
seconds can only come from the connection-refused path, and the killed broker's
registration is checked to still exist when its successor leads.
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

import pytest

from odradek.cluster.znodes import (
    encode_entity_config,
    encode_topic_assignment,
    random_kafka_uuid,
)
from tests.harness import wait_until
from tests.harness.zk import zk_client

from .support import FAST_FAILOVER, AcksAllLoad, partition_state, read_all, wait_for_isr

SLOW_SESSION = {**FAST_FAILOVER, "zookeeper_session_timeout_ms": "30000"}
PAUSE_SESSION_S = 10.0
RECOVERY_LIMIT_S = 6.0


def _controller(zk: Any) -> int:
    wait_until(lambda: zk.exists("/controller"), 30, "a controller")
    return int(json.loads(zk.get("/controller")[0])["brokerid"])


def _topic_led_by(zk: Any, name: str, leader: int, brokers: int = 3) -> None:
    """An RF=3 topic whose preferred (so initial) leader is ``leader``."""
    others = [b for b in range(brokers) if b != leader]
    zk.create(f"/config/topics/{name}", encode_entity_config({"min.insync.replicas": "2"}))
    zk.create(f"/brokers/topics/{name}",
              encode_topic_assignment(random_kafka_uuid(), {0: [leader, *others]}))
    state = wait_for_isr(zk, name, brokers)
    assert state["leader"] == leader, state


@pytest.mark.parametrize("victim", ["leader", "controller_and_leader"])
def test_kill_9_of_a_leader_under_acks_all_load_fails_over_before_session_expiry(
    cluster_factory: Any, victim: str
) -> None:
    cluster = cluster_factory(3, **SLOW_SESSION)
    topic = f"killed-{victim}"
    with zk_client(cluster.zookeeper_connect) as zk:
        controller = _controller(zk)
        leader = controller if victim == "controller_and_leader" else (controller + 1) % 3
        _topic_led_by(zk, topic, leader)
        with AcksAllLoad(cluster.bootstrap, topic) as load:
            wait_until(lambda: len(load.acked) >= 300, 60, "300 acknowledged before the kill")
            cluster.brokers[leader].kill()
            killed_at = time.monotonic()
            acked_at_kill = len(load.acked)
            new_state = wait_until(
                lambda: (s := partition_state(zk, topic)) and s["leader"] not in (leader, -1)
                and s, 30, "a new leader")
            assert zk.exists(f"/brokers/ids/{leader}") is not None, (
                "the new leader came from the session expiry, not from the refused connections")
            assert leader not in new_state["isr"]  # type: ignore[index]
            wait_until(lambda: len(load.acked) >= acked_at_kill + 300, 30,
                       "300 more acknowledged by the new leader")
            recovered_in = load.acked_at[acked_at_kill + 100] - killed_at
            load.stop()
    survivors = ",".join(b.bootstrap for i, b in enumerate(cluster.brokers) if i != leader)
    values = read_all(survivors, topic)
    missing = set(load.acked) - set(values)
    assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {sorted(missing)[:5]}"
    assert len(values) == len(set(values)), "duplicates in the log"
    assert not load.errors, f"delivery errors: {load.errors[:5]}"
    assert recovered_in < RECOVERY_LIMIT_S, f"acks resumed only {recovered_in:.2f}s after kill"


@pytest.mark.parametrize("victim", ["leader", "controller"])
def test_a_paused_broker_is_not_failed_before_its_session_expires(
    cluster_factory: Any, victim: str
) -> None:
    session_ms = str(int(PAUSE_SESSION_S * 1000))
    cluster = cluster_factory(3, **{**FAST_FAILOVER, "zookeeper_session_timeout_ms": session_ms})
    with zk_client(cluster.zookeeper_connect) as zk:
        controller = _controller(zk)
        paused = controller if victim == "controller" else (controller + 1) % 3
        _topic_led_by(zk, "paused", paused)
        process = cluster.brokers[paused].process
        assert process is not None
        os.kill(process.pid, signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            # Well inside the session timeout nothing may move: a paused process still
            # accepts connections (its kernel does), so it must not look dead.
            while time.monotonic() - stopped_at < PAUSE_SESSION_S * 0.6:
                state = partition_state(zk, "paused")
                assert state is not None and state["leader"] == paused, state
                assert _controller(zk) == controller
                time.sleep(0.1)
            # The session timeout stays the fallback for silent failures.
            wait_until(lambda: (s := partition_state(zk, "paused")) and s["leader"] != paused,
                       PAUSE_SESSION_S * 3, "a new leader after the session expired")
            assert time.monotonic() - stopped_at >= PAUSE_SESSION_S * 0.8
        finally:
            os.kill(process.pid, signal.SIGCONT)
