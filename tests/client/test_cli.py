"""The client commands through ``python -m odradek`` subprocesses."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import uuid

from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest

from odradek.client import AdminClient, NewTopic
from odradek.local_cluster import BrokerProcess
from odradek.protocol.builder import build
from tests.broker.wire import WireClient

from .conftest import REPO, Target


def odradek(*args: str, input: str | None = None, timeout: float = 60
            ) -> subprocess.CompletedProcess[str]:
    """The command's output as a pipe gets it, whatever terminal size the test runs under."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run([sys.executable, "-m", "odradek", *args], input=input, env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


def test_topics_produce_consume_round_trip(target: Target) -> None:
    bs = ["--bootstrap-server", target.bootstrap]
    topic = f"cli-{uuid.uuid4().hex[:8]}"
    done = odradek("topics", *bs, "create", "--topic", topic, "--partitions", "2",
                   "--replication-factor", "1", "--config", "retention.ms=3600000")
    assert done.returncode == 0, done.stderr
    listed = odradek("topics", *bs, "--output", "json", "list")
    assert topic in json.loads(listed.stdout)
    described = json.loads(odradek("topics", *bs, "--output", "json", "describe",
                                   "--topic", topic).stdout)
    assert described[0]["partition_count"] == 2
    assert described[0]["configs"].get("retention.ms") == "3600000"
    done = odradek("produce", *bs, topic, "--property", "parse.key=true", "--property",
                   "key.separator=:", "--compression", "zstd", "--acks", "all",
                   input="a:1\nb:2\nc:3\n")
    assert done.returncode == 0, done.stderr
    done = odradek("consume", *bs, topic, "--from-beginning", "--max-messages", "3",
                   "--property", "print.key=true", "--property", "key.separator=:")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == ["a:1", "b:2", "c:3"]
    done = odradek("topics", *bs, "alter", "--topic", topic, "--partitions", "3")
    assert done.returncode == 0, done.stderr
    described = json.loads(odradek("topics", *bs, "--output", "json", "describe",
                                   "--topic", topic).stdout)
    assert described[0]["partition_count"] == 3
    assert odradek("topics", *bs, "delete", "--topic", topic).returncode == 0
    assert topic not in json.loads(odradek("topics", *bs, "--output", "json", "list").stdout)


def test_bad_input_is_one_line_and_nonzero(target: Target) -> None:
    bs = ["--bootstrap-server", target.bootstrap]
    missing = odradek("consume", *bs, f"nope-{uuid.uuid4().hex[:6]}", "--max-messages", "1")
    assert missing.returncode != 0 and "does not exist" in missing.stderr
    bad = odradek("produce", *bs, "x", "--property", "parse.key=true", "--property",
                  "bogus=1", input="")
    assert bad.returncode != 0 and "unknown property" in bad.stderr
    unreachable = odradek("topics", "--bootstrap-server", "127.0.0.1:1", "list", timeout=90)
    assert unreachable.returncode == 1
    assert unreachable.stderr.strip().startswith("Error:")
    assert len(unreachable.stderr.strip().splitlines()) == 1


def test_perf_produce_and_consume_report_rates(target: Target) -> None:
    bs = ["--bootstrap-server", target.bootstrap]
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    assert odradek("topics", *bs, "create", "--topic", topic, "--partitions", "1"
                   ).returncode == 0
    done = odradek("perf", *bs, "--output", "json", "produce", "--topic", topic,
                   "--num-records", "20000", "--record-size", "100")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["records"] == 20000 and result["records_per_sec"] > 0
    assert 0 < result["p50_latency_ms"] <= result["p99_latency_ms"]
    done = odradek("perf", *bs, "--output", "json", "consume", "--topic", topic,
                   "--messages", "20000")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] == 20000


def test_groups_describe_and_reset_offsets(apache_kafka) -> None:
    bs = ["--bootstrap-server", apache_kafka.bootstrap]
    topic = f"grp-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert odradek("topics", *bs, "create", "--topic", topic, "--partitions", "1"
                   ).returncode == 0
    assert odradek("produce", *bs, topic, input="x\ny\nz\n").returncode == 0
    done = odradek("consume", *bs, topic, "--group", group, "--from-beginning",
                   "--max-messages", "3")
    assert done.returncode == 0, done.stderr
    described = json.loads(odradek("groups", *bs, "--output", "json", "describe",
                                   "--group", group).stdout)
    assert described[0]["partitions"][0]["current_offset"] == 3
    assert described[0]["partitions"][0]["lag"] == 0
    plan = json.loads(odradek("groups", *bs, "--output", "json", "reset-offsets", "--group",
                              group, "--topic", topic, "--to-earliest").stdout)
    assert plan["executed"] is False and plan["offsets"][0]["new_offset"] == 0
    done = odradek("groups", *bs, "--output", "json", "reset-offsets", "--group", group,
                   "--topic", topic, "--shift-by", "-1", "--execute")
    assert json.loads(done.stdout)["offsets"][0]["new_offset"] == 2
    described = json.loads(odradek("groups", *bs, "--output", "json", "describe",
                                   "--group", group).stdout)
    assert described[0]["partitions"][0]["lag"] == 1
    listed = json.loads(odradek("groups", *bs, "--output", "json", "list").stdout)
    assert group in [g["group"] for g in listed]


def test_groups_commands_take_the_group_as_argument_or_option(broker: BrokerProcess) -> None:
    bs = ["--bootstrap-server", broker.bootstrap]
    topic = f"pos-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert odradek("topics", *bs, "create", "--topic", topic, "--partitions", "1"
                   ).returncode == 0
    assert odradek("produce", *bs, topic, input="x\ny\n").returncode == 0
    done = odradek("consume", *bs, topic, "--group", group, "--from-beginning",
                   "--max-messages", "2")
    assert done.returncode == 0, done.stderr
    for form in ([group], ["--group", group]):
        done = odradek("groups", *bs, "--output", "json", "describe", *form)
        assert done.returncode == 0, f"groups describe {form}: {done.stderr}"
        assert json.loads(done.stdout)[0]["partitions"][0]["current_offset"] == 2
    done = odradek("groups", *bs, "--output", "json", "reset-offsets", group, "--topic", topic,
                   "--to-earliest", "--execute")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["offsets"][0]["new_offset"] == 0
    done = odradek("topics", *bs, "--output", "json", "describe", topic)
    assert done.returncode == 0, done.stderr
    assert [t["topic"] for t in json.loads(done.stdout)] == [topic]
    done = odradek("groups", *bs, "delete", group)
    assert done.returncode == 0, done.stderr
    assert group not in [g["group"] for g in json.loads(
        odradek("groups", *bs, "--output", "json", "list").stdout)]
    missing = odradek("groups", *bs, "describe")
    assert missing.returncode == 2 and "GROUP or --group GROUP" in missing.stderr


def test_piped_tables_keep_long_names_whole(broker: BrokerProcess) -> None:
    bs = ["--bootstrap-server", broker.bootstrap]
    topic = f"a-topic-name-far-longer-than-a-terminal-is-wide-{'t' * 100}-{uuid.uuid4().hex[:8]}"
    group = f"a-group-name-far-longer-than-a-terminal-is-wide-{'g' * 100}-{uuid.uuid4().hex[:8]}"
    assert odradek("topics", *bs, "create", "--topic", topic, "--partitions", "1"
                   ).returncode == 0
    assert odradek("produce", *bs, topic, input="x\n").returncode == 0
    assert odradek("consume", *bs, topic, "--group", group, "--from-beginning",
                   "--max-messages", "1").returncode == 0
    for command in (["groups", *bs, "list"], ["groups", *bs, "describe", "--group", group],
                    ["topics", *bs, "describe", "--topic", topic]):
        done = odradek(*command)  # stdout is a pipe, as under grep or > file
        assert done.returncode == 0, done.stderr
        assert "…" not in done.stdout, done.stdout
        name = group if command[0] == "groups" else topic
        assert name in done.stdout, f"{' '.join(command[3:])} cut {name}:\n{done.stdout}"


def test_groups_list_and_describe_show_a_consumer_type_group(broker: BrokerProcess) -> None:
    """A KIP-848 group (one member, joined through ConsumerGroupHeartbeat): its type, group
    and assignment epochs, assignor, and each member's epoch with its current vs. target
    assignment, in JSON and in the ``--members --verbose`` table."""
    bs = ["--bootstrap-server", broker.bootstrap]
    topic = f"kip848-cli-{uuid.uuid4().hex[:8]}"
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    with AdminClient(broker.bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 2, 1)])
        admin.describe_groups([group])  # FindCoordinator: the offsets topic, loaded
    member = uuid.uuid4().hex
    with WireClient(broker.port) as wire:
        joined = wire.request(build(
            ConsumerGroupHeartbeatRequest, group_id=group, member_id=member, member_epoch=0,
            rebalance_timeout=datetime.timedelta(seconds=30), subscribed_topic_names=(topic,),
            topic_partitions=()))
    assert joined.error_code == 0 and joined.member_epoch == 1, joined

    listed = json.loads(odradek("groups", *bs, "--output", "json", "list").stdout)
    assert {"group": group, "type": "consumer", "protocol_type": "consumer",
            "state": "Stable"} in listed
    described = json.loads(odradek("groups", *bs, "--output", "json", "describe",
                                   group).stdout)[0]
    assert {k: described[k] for k in ("type", "state", "group_epoch", "assignment_epoch",
                                      "assignor", "members")} == {
        "type": "consumer", "state": "Stable", "group_epoch": 1, "assignment_epoch": 1,
        "assignor": "uniform", "members": 1}
    assert described["member_details"] == [{
        "member_id": member, "group_instance_id": None, "client_id": "wire-test",
        "host": "/127.0.0.1", "partitions": 2, "member_epoch": 1,
        "assignment": f"{topic}:0,1", "target_assignment": f"{topic}:0,1"}]
    assert [row["member_id"] for row in described["partitions"]] == [member, member]

    table = odradek("groups", *bs, "describe", group, "--members", "--verbose")
    assert table.returncode == 0, table.stderr
    assert "type=consumer" in table.stdout and "group-epoch=1" in table.stdout
    for column in ("Member epoch", "Target epoch", "Target assignment", member,
                   f"{topic}:0,1"):
        assert column in table.stdout, table.stdout
