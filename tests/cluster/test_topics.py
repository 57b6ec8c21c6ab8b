"""Topic administration writes Kafka's znodes and refuses what Kafka refuses."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from odradek.cluster import validate_topic_name
from odradek.cluster.znodes import uuid_to_base64
from odradek.protocol.errors import (
    InvalidConfig,
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    InvalidRequest,
    InvalidTopic,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
)
from tests.cluster.support import group, run
from tests.harness.zk import read_json, zk_client


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "has space", "sl/ash", "ümlaut"])
def test_illegal_topic_names_are_rejected(name: str) -> None:
    with pytest.raises(InvalidTopic):
        validate_topic_name(name)


@pytest.mark.parametrize("name", ["a", "a" * 249, "Orders.v1_x-2", "..."])
def test_legal_topic_names_pass(name: str) -> None:
    validate_topic_name(name)


def test_create_topic_writes_config_then_assignment_in_kafka_json(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            cluster = await g.cluster(1, controller_enabled=False)
            await g.broker(2)
            created = await cluster.create_topic(
                "orders", -1, -1, {"retention.ms": "1000"}, assignment={0: [1, 2], 1: [2, 1]}
            )
            with zk_client(zk_connect) as zk:
                assignment = read_json(zk, "/brokers/topics/orders")
                config = read_json(zk, "/config/topics/orders")
        assert assignment == {
            "version": 3,
            "partitions": {"0": [1, 2], "1": [2, 1]},
            "topic_id": uuid_to_base64(created.topic_id),
            "adding_replicas": {},
            "removing_replicas": {},
        }
        assert config == {"version": 1, "config": {"retention.ms": "1000"}}
        assert created.partitions[1].replicas == (2, 1)
        assert created.partitions[0].leader == -1, "leaders are the controller's job"

    run(body())


def test_create_topic_errors_match_kafka(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            cluster = await g.cluster(1, controller_enabled=False)
            await cluster.create_topic("t.x", 1, 1)
            with pytest.raises(TopicAlreadyExists):
                await cluster.create_topic("t.x", 1, 1)
            with pytest.raises(InvalidTopic, match="collides"):
                await cluster.create_topic("t_x", 1, 1)
            with pytest.raises(InvalidReplicationFactor, match="larger than available brokers: 1"):
                await cluster.create_topic("big", 1, 2)
            with pytest.raises(InvalidPartitions):
                await cluster.create_topic("none", 0, 1)
            with pytest.raises(InvalidReplicaAssignment, match="Unknown broker"):
                await cluster.create_topic("ghost", -1, -1, assignment={0: [9]})
            with pytest.raises(InvalidRequest):
                await cluster.create_topic("both", 3, 1, assignment={0: [1]})
            with zk_client(zk_connect) as zk:
                assert sorted(zk.get_children("/brokers/topics")) == ["t.x"]

    run(body())


def test_validate_only_and_config_validator_write_nothing(zk_connect: str) -> None:
    def validator(config: Mapping[str, str]) -> None:
        if "bogus" in config:
            raise ValueError("Unknown topic config name: bogus")

    async def body() -> None:
        async with group(zk_connect) as g:
            cluster = await g.cluster(1, controller_enabled=False, validate_config=validator)
            result = await cluster.create_topic("dry", 4, 1, validate_only=True)
            assert sorted(result.partitions) == [0, 1, 2, 3]
            with pytest.raises(InvalidConfig, match="bogus"):
                await cluster.create_topic("bad", 1, 1, {"bogus": "1"})
            with zk_client(zk_connect) as zk:
                assert zk.get_children("/brokers/topics") == []
                assert zk.get_children("/config/topics") == []

    run(body())


def test_delete_topic_writes_the_admin_marker(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            cluster = await g.cluster(1, controller_enabled=False)
            await cluster.create_topic("doomed", 1, 1)
            await cluster.delete_topic("doomed")
            await cluster.delete_topic("doomed")  # idempotent while pending
            with pytest.raises(UnknownTopicOrPartition):
                await cluster.delete_topic("never")
            with pytest.raises(TopicAlreadyExists):
                await cluster.create_topic("doomed", 1, 1)
            with zk_client(zk_connect) as zk:
                assert zk.get_children("/admin/delete_topics") == ["doomed"]

    run(body())


def test_create_partitions_extends_the_assignment(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            cluster = await g.cluster(1, controller_enabled=False)
            await g.broker(2)
            created = await cluster.create_topic("grow", -1, -1, assignment={0: [1, 2]})
            added = await cluster.create_partitions("grow", 3)
            assert sorted(added) == [1, 2]
            assert all(len(set(r)) == 2 for r in added.values())
            await cluster.create_partitions("grow", 4, assignment=[[2, 1]])
            with pytest.raises(InvalidPartitions, match="already has 4"):
                await cluster.create_partitions("grow", 4)
            with pytest.raises(InvalidPartitions, match="higher than"):
                await cluster.create_partitions("grow", 2)
            with pytest.raises(InvalidReplicaAssignment):
                await cluster.create_partitions("grow", 5, assignment=[[1]])
            with pytest.raises(UnknownTopicOrPartition):
                await cluster.create_partitions("nope", 5)
            with zk_client(zk_connect) as zk:
                stored = read_json(zk, "/brokers/topics/grow")
        assert stored["partitions"]["0"] == [1, 2]
        assert stored["partitions"]["3"] == [2, 1]
        assert sorted(stored["partitions"]) == ["0", "1", "2", "3"]
        assert stored["topic_id"] == uuid_to_base64(created.topic_id), "topic id must survive"

    run(body())


def test_alter_config_rewrites_config_and_notifies(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            cluster = await g.cluster(1, controller_enabled=False)
            await cluster.create_topic("conf", 1, 1, {"retention.ms": "1"})
            await cluster.alter_topic_config("conf", {"cleanup.policy": "compact"})
            await cluster.alter_topic_config("conf", {"x": "y"}, validate_only=True)
            with pytest.raises(UnknownTopicOrPartition):
                await cluster.alter_topic_config("missing", {})
            with zk_client(zk_connect) as zk:
                config = read_json(zk, "/config/topics/conf")
                changes = zk.get_children("/config/changes")
                notification = read_json(zk, f"/config/changes/{changes[0]}")
        assert config == {"version": 1, "config": {"cleanup.policy": "compact"}}
        assert changes == ["config_change_0000000000"]
        assert notification == {"version": 2, "entity_path": "topics/conf"}

    run(body())
