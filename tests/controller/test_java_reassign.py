"""kafka-reassign-partitions (Apache Kafka's own tool) moves partitions between brokers of
a 3-broker odradek cluster under a replication throttle; ``--verify`` reports completion and
clears the throttles it set on brokers and topics (exit 0 only if both alters succeed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.controller.support import FAST, produce_all, read_all, wait_for_state, write_topic
from tests.harness import wait_until
from tests.harness.apache_kafka import REASSIGN_PARTITIONS, ApacheKafka
from tests.harness.zk import read_json, zk_client

pytestmark = pytest.mark.java

TOOL_TIMEOUT = 120.0


def _tool(kafka: ApacheKafka, *args: str) -> str:
    proc = kafka.run_java_tool(REASSIGN_PARTITIONS, list(args), TOOL_TIMEOUT)
    assert proc.returncode == 0, (
        f"kafka-reassign-partitions {' '.join(args)} exited {proc.returncode}\n"
        f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-3000:]}")
    return proc.stdout


def _throttles(zk: Any) -> dict[str, dict[str, str]]:
    found = {}
    for entity in zk.get_children("/config/brokers"):
        config = read_json(zk, f"/config/brokers/{entity}")["config"]
        found[f"brokers/{entity}"] = {k: v for k, v in config.items() if "throttled" in k}
    topic = read_json(zk, "/config/topics/moving")["config"]
    found["topics/moving"] = {k: v for k, v in topic.items() if "throttled" in k}
    return {k: v for k, v in found.items() if v}


def test_reassign_with_throttle_then_verify_exits_0_and_clears_throttles(
    cluster_factory: Any, kafka_jars: ApacheKafka, tmp_path: Path
) -> None:
    cluster = cluster_factory(3, **FAST)
    values = [b"v%d" % i for i in range(200)]
    with zk_client(cluster.zookeeper_connect) as zk:
        write_topic(zk, "moving", {0: [0], 1: [1]})
        for p in range(2):
            wait_for_state(zk, "moving", p, "a leader", lambda s: s["leader"] >= 0)
        produce_all(cluster.bootstrap, "moving", values, partition=0)
        plan = tmp_path / "plan.json"
        target = {0: [1, 2], 1: [2, 0]}
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": "moving", "partition": p, "replicas": r} for p, r in target.items()]}))
        bootstrap = ("--bootstrap-server", cluster.bootstrap)
        out = _tool(kafka_jars, *bootstrap, "--execute", "--reassignment-json-file", str(plan),
                    "--throttle", "10000000")
        assert "Successfully started partition reassignment" in out, out
        assert _throttles(zk), "--execute --throttle set no throttle"

        def verified() -> str | None:
            text = _tool(kafka_jars, *bootstrap, "--verify", "--reassignment-json-file",
                         str(plan))
            return text if "Clearing broker-level throttles" in text else None

        text = str(wait_until(verified, 90, "--verify to report the reassignment complete"))
        for p in target:
            assert f"Reassignment of partition moving-{p} is completed" in text, text
        assert _throttles(zk) == {}, "--verify left throttles behind"
        assignment = read_json(zk, "/brokers/topics/moving")["partitions"]
        assert {int(p): r for p, r in assignment.items()} == target
    moved = ",".join(cluster.brokers[b].bootstrap for b in (1, 2))
    assert read_all(moved, "moving", partitions=2) == values
