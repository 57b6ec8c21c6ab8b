"""Dynamic broker configs and partition reassignment with Apache Kafka's own tools.

kafka-configs (ConfigCommand) alters broker configs per broker (``--entity-name 0``) and for
the whole cluster (``--entity-default``) and describes them with their sources;
kafka-reassign-partitions ``--execute --throttle`` sets replication throttles on brokers and
topics and ``--verify`` clears them again (it fails when broker configs cannot be altered).
Like every interop test, these also run against Apache Kafka itself
(``ODRADEK_INTEROP_TARGET=apache``), which checks the expectations.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.harness import wait_until
from tests.harness.apache_kafka import CONFIG_COMMAND, REASSIGN_PARTITIONS, ApacheKafka
from tests.interop.conftest import Target
from tests.interop.test_java_tools import TOOL_TIMEOUT, run_tool

pytestmark = pytest.mark.java


def _configs(kafka: ApacheKafka, target: Target, *args: str) -> str:
    return run_tool(kafka, CONFIG_COMMAND, "--bootstrap-server", target.bootstrap,
                    "--entity-type", "brokers", *args)


def test_kafka_configs_alters_and_describes_broker_and_default_configs(
    target: Target, apache_kafka: ApacheKafka
) -> None:
    broker = ("--entity-name", "0")
    default = ("--entity-default",)
    try:
        out = _configs(apache_kafka, target, *broker, "--alter",
                       "--add-config", "log.cleaner.threads=2")
        assert "Completed updating config for broker 0." in out, out
        out = _configs(apache_kafka, target, *default, "--alter",
                       "--add-config", "log.cleaner.threads=3,log.retention.ms=7200000")
        assert "Completed updating default config for brokers in the cluster." in out, out

        def described() -> str | None:
            text = _configs(apache_kafka, target, *broker, "--describe")
            return text if "log.cleaner.threads=2" in text else None

        text = str(wait_until(described, 30, "broker 0's dynamic config described"))
        assert "Dynamic configs for broker 0 are:" in text, text
        line = next(ln for ln in text.splitlines() if "log.cleaner.threads=2" in ln)
        assert "DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2" in line, line
        assert "DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=3" in line, line
        assert "DEFAULT_CONFIG:log.cleaner.threads=1" in line, line

        text = _configs(apache_kafka, target, *default, "--describe")
        assert "Default configs for brokers in the cluster are:" in text, text
        assert re.search(r"log\.retention\.ms=7200000 .*DYNAMIC_DEFAULT_BROKER_CONFIG", text), text
        assert "DYNAMIC_BROKER_CONFIG" not in text, text  # per-broker values are not defaults

        # The effective value of a cluster-wide key with no per-broker value is the default's.
        text = _configs(apache_kafka, target, *broker, "--describe", "--all")
        assert re.search(r"^\s*log\.retention\.ms=7200000 .*DYNAMIC_DEFAULT_BROKER_CONFIG",
                         text, re.M), text

        # Refused: a read-only key, a bad value.
        for bad in ("broker.id=7", "log.cleaner.threads=many"):
            proc = apache_kafka.run_java_tool(
                CONFIG_COMMAND, ["--bootstrap-server", target.bootstrap, "--entity-type",
                                 "brokers", *broker, "--alter", "--add-config", bad],
                TOOL_TIMEOUT)
            assert proc.returncode != 0, f"{bad} was accepted:\n{proc.stdout}"
            assert "InvalidRequestException" in proc.stdout + proc.stderr, proc.stderr[-2000:]
    finally:
        for entity in (broker, default):
            text = _configs(apache_kafka, target, *entity, "--describe")
            keys = re.findall(r"^\s+([a-z.]+)=", text, re.M)
            if keys:
                _configs(apache_kafka, target, *entity, "--alter", "--delete-config",
                         ",".join(keys))


def test_kafka_reassign_partitions_execute_with_throttle_then_verify(
    target: Target, apache_kafka: ApacheKafka, tmp_path: Path
) -> None:
    topic = target.create_topic(2, prefix="tools-reassign")
    plan = tmp_path / "reassign.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": [0]} for p in range(2)]}))
    bootstrap = ("--bootstrap-server", target.bootstrap)
    out = run_tool(apache_kafka, REASSIGN_PARTITIONS, *bootstrap, "--execute",
                   "--reassignment-json-file", str(plan), "--throttle", "50000000")
    assert "Successfully started partition reassignment" in out, out
    assert "throttle" in out.lower(), out

    def verified() -> str | None:
        text = run_tool(apache_kafka, REASSIGN_PARTITIONS, *bootstrap, "--verify",
                        "--reassignment-json-file", str(plan))
        return text if "Clearing broker-level throttles" in text else None

    text = str(wait_until(verified, 60, "--verify to find the reassignment done"))
    assert f"Reassignment of partition {topic}-0 is completed" in text, text
    assert "Clearing topic-level throttles" in text, text
    described = _configs(apache_kafka, target, "--entity-name", "0", "--describe")
    assert "throttled.rate" not in described, described
