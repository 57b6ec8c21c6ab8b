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
import uuid
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.describe_configs.v4 import request as describing
from kio.schema.incremental_alter_configs.v1 import request as altering
from kio.static.primitive import i8

from tests.broker.wire import WireClient
from tests.harness import wait_until
from tests.harness.apache_kafka import (
    CONFIG_COMMAND,
    REASSIGN_PARTITIONS,
    TOPIC_COMMAND,
    ApacheKafka,
)
from tests.interop.conftest import Target, wait_for_leaders
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


def _describe_all(bootstrap: str, kind: int, name: str) -> dict[str, Any]:
    """DescribeConfigs v4 with synonyms on the wire: ``{key: (read_only, [(synonym,
    source)])}``."""
    host, port = bootstrap.rsplit(":", 1)
    body = describing.DescribeConfigsRequest(include_synonyms=True, resources=(
        describing.DescribeConfigsResource(resource_type=i8(kind), resource_name=name,
                                           configuration_keys=None),))
    with WireClient(int(port), host) as client:
        (result,) = client.request(body).results
    assert result.error_code == 0, result
    return {str(e.name): [(str(s.name), int(s.source)) for s in e.synonyms]
            for e in result.configs}


def _alter_for_comparison(bootstrap: str, topic: str, values: dict[str, str | None]) -> None:
    """The topic's retention.ms/segment.ms and the cluster default's log.retention.ms and
    log.roll.ms (None deletes the defaults again)."""
    host, port = bootstrap.rsplit(":", 1)
    topic_set = (("retention.ms", "1000"), ("segment.ms", "2000"))
    resources = [altering.AlterConfigsResource(resource_type=i8(4), resource_name="", configs=tuple(
        altering.AlterableConfig(name=k, config_operation=i8(0 if v else 1), value=v)
        for k, v in values.items()))]
    if topic:
        resources.append(altering.AlterConfigsResource(
            resource_type=i8(2), resource_name=topic, configs=tuple(
                altering.AlterableConfig(name=k, config_operation=i8(0), value=v)
                for k, v in topic_set)))
    with WireClient(int(port), host) as client:
        response = client.request(altering.IncrementalAlterConfigsRequest(
            validate_only=False, resources=tuple(resources)))
    assert all(r.error_code == 0 for r in response.responses), response


def _described_keys_and_synonyms(bootstrap: str, topic: str) -> dict[str, Any]:
    before = _describe_all(bootstrap, 2, topic)
    _alter_for_comparison(bootstrap, topic, {"log.retention.ms": "7200000",
                                             "log.roll.ms": "3600000"})
    try:
        def altered() -> dict[str, Any] | None:
            found = _describe_all(bootstrap, 2, topic)
            return found if len(found["segment.ms"]) == 3 else None

        after = cast(dict[str, Any], wait_until(
            altered, 30, f"{bootstrap} to describe the altered configs"))
        broker = _describe_all(bootstrap, 4, "0")
    finally:
        _alter_for_comparison(bootstrap, "", {"log.retention.ms": None, "log.roll.ms": None})
    return {"topic": before, "topic_altered": after, "broker": broker}


def test_describe_configs_lists_kafkas_keys_and_synonyms(
    target: Target, apache_kafka: ApacheKafka, tmp_path: Path
) -> None:
    """The same steps against the target and a live Apache Kafka 3.9.2: DescribeConfigs of a
    topic (fresh, then with topic and cluster-default overrides) and of the broker lists
    Kafka's keys with Kafka's synonyms (name and source; values differ with ports and
    paths). Broker keys either broker sets statically are left out of the synonym check
    (the two brokers are started with different properties)."""
    from odradek import kafka_catalog
    from tests.harness.apache_kafka import apache_kafka_cluster

    with apache_kafka_cluster(tmp_path, overrides={"log.cleaner.backoff.ms": "15000"}) as kafka:
        kafka_topic = f"compare-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        admin.create_topics([NewTopic(kafka_topic, 1, 1)])[kafka_topic].result(60)
        wait_for_leaders(admin, kafka_topic, 1, 60)
        expected = _described_keys_and_synonyms(kafka.bootstrap, kafka_topic)
    described = _described_keys_and_synonyms(target.bootstrap, target.create_topic(1))

    def static(synonyms: list[tuple[str, int]]) -> bool:
        return any(source == 4 for _name, source in synonyms)

    for part in ("topic", "topic_altered", "broker"):
        missing = sorted(set(expected[part]) - set(described[part]))
        assert not missing, f"{part}: keys Kafka describes and the target does not: {missing}"
        differ = {key: (described[part][key], synonyms)
                  for key, synonyms in expected[part].items()
                  if described[part][key] != synonyms
                  and not (part == "broker" and (static(synonyms)
                                                 or static(described[part][key])))}
        assert not differ, f"{part}: synonyms (target, Kafka) differ: {differ}"
    # the checked-in list is what the live Kafka describes
    assert set(expected["topic"]) == set(kafka_catalog.TOPIC_CONFIGS)
    assert {k for k in expected["broker"] if not k.startswith("listener.name.")} == set(
        kafka_catalog.BROKER_CONFIGS)


def test_config_errors_are_reported_in_kafkas_words(
    target: Target, apache_kafka: ApacheKafka
) -> None:
    """What kafka-topics and kafka-configs print for an unknown topic config, a bad value
    and a read-only broker config (the broker's error message, word for word)."""
    topic = target.create_topic(1, prefix="config-errors")
    bootstrap = ("--bootstrap-server", target.bootstrap)

    def refused(main_class: str, *args: str) -> str:
        proc = apache_kafka.run_java_tool(main_class, [*bootstrap, *args], TOOL_TIMEOUT)
        assert proc.returncode != 0, f"{args} was accepted:\n{proc.stdout}"
        return proc.stdout + proc.stderr

    out = refused(TOPIC_COMMAND, "--create", "--topic", f"{topic}-new", "--partitions", "1",
                  "--config", "no.such.key=1")
    assert "Unknown topic config name: no.such.key" in out, out[-2000:]
    out = refused(TOPIC_COMMAND, "--create", "--topic", f"{topic}-new", "--partitions", "1",
                  "--config", "retention.ms=abc")
    assert "Invalid value abc for configuration retention.ms: Not a number of type LONG" in out
    topic_entity = ("--entity-type", "topics", "--entity-name", topic, "--alter")
    out = refused(CONFIG_COMMAND, *topic_entity, "--add-config", "retention.ms=abc")
    assert (f"Invalid config value for resource ConfigResource(type=TOPIC, name='{topic}'): "
            "Invalid value abc for configuration retention.ms: Not a number of type LONG"
            ) in out, out[-2000:]
    out = refused(CONFIG_COMMAND, "--entity-type", "brokers", "--entity-name", "0", "--alter",
                  "--add-config", "broker.id=7")
    assert "Cannot update these configs dynamically: Set(broker.id)" in out, out[-2000:]
