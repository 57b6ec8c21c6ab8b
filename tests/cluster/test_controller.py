"""Controller election, failover, fencing and partition leader election on real ZooKeeper."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from odradek.cluster import ZkCluster
from odradek.cluster.controller import ControllerMoved
from odradek.cluster.view import ClusterSnapshot
from odradek.cluster.znodes import encode_entity_config, encode_topic_assignment
from odradek.config_sections import ControllerConfig
from tests.cluster.support import DEADLINE, group, run
from tests.harness.zk import read_json, zk_client


def write_topic(
    connect: str, name: str, partitions: dict[int, list[int]], config: dict[str, str]
) -> None:
    """Create a topic the way any Kafka admin tool would, bypassing our own validation."""
    with zk_client(connect) as zk:
        zk.create(f"/config/topics/{name}", encode_entity_config(config))
        zk.create(f"/brokers/topics/{name}", encode_topic_assignment(uuid.uuid4(), partitions))


async def controller_is(cluster: ZkCluster, broker_id: int) -> ClusterSnapshot:
    return await cluster.view.wait_for(lambda s: s.controller_id == broker_id, DEADLINE)


async def state_of(cluster: ZkCluster, topic: str, partition: int, **expected: object) -> None:
    """Wait until the view shows ``topic-partition`` with the expected state fields."""

    def matches(snapshot: ClusterSnapshot) -> bool:
        meta = snapshot.topics.get(topic)
        state = meta.partitions.get(partition) if meta else None
        return state is not None and all(getattr(state, k) == v for k, v in expected.items())

    try:
        await cluster.view.wait_for(matches, DEADLINE)
    except TimeoutError:
        meta = cluster.view.topics.get(topic)
        actual = meta.partitions.get(partition) if meta else None
        raise AssertionError(f"{topic}-{partition}: wanted {expected}, have {actual}") from None


def test_first_broker_wins_and_successor_takes_over_with_next_epoch(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(1)
            await controller_is(a, 1)
            b = await g.cluster(2)
            await controller_is(b, 1)
            assert a.is_controller and not b.is_controller
            with zk_client(zk_connect) as zk:
                registration = read_json(zk, "/controller")
                assert zk.get("/controller_epoch")[0] == b"1"
            assert registration.pop("timestamp").isdigit()
            assert registration == {"version": 2, "brokerid": 1, "kraftControllerEpoch": -1}

            await a.stop()
            await controller_is(b, 2)
            await asyncio.wait_for(_until(lambda: b.is_controller), DEADLINE)
            assert b.controller.epoch == 2
            with zk_client(zk_connect) as zk:
                assert zk.get("/controller_epoch")[0] == b"2"

    run(body())


async def _until(check: object) -> None:
    assert callable(check)
    while not check():
        await asyncio.sleep(0.01)


def test_controller_resigns_and_reelects_after_its_session_expires(zk_connect: str) -> None:
    from tests.cluster.support import expire_session

    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(1)
            await asyncio.wait_for(_until(lambda: a.is_controller), DEADLINE)
            await asyncio.to_thread(expire_session, zk_connect, a.session)
            await asyncio.wait_for(_until(lambda: a.controller.epoch == 2), DEADLINE)

    run(body())


def test_new_partitions_get_first_live_replica_as_leader(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(1)
            await g.broker(2)
            await controller_is(a, 1)
            # Written as a pre-2.8 Kafka tool would (version 2, no topic id), naming brokers
            # that are not up: the controller must cope with both.
            legacy = {"version": 2, "partitions": {"0": [2, 1], "1": [3, 1], "2": [4]}}
            with zk_client(zk_connect) as zk:
                zk.create("/brokers/topics/t", json.dumps(legacy).encode())
            await state_of(a, "t", 0, leader=2, isr=(2, 1), leader_epoch=0)
            await state_of(a, "t", 1, leader=1, isr=(1,), leader_epoch=0)
            with zk_client(zk_connect) as zk:
                stored = read_json(zk, "/brokers/topics/t/partitions/0/state")
                assert zk.exists("/brokers/topics/t/partitions/2/state") is None
                assignment = read_json(zk, "/brokers/topics/t")
            assert assignment["version"] == 3 and len(assignment["topic_id"]) == 22
            assert stored == {
                "controller_epoch": 1,
                "leader": 2,
                "version": 1,
                "leader_epoch": 0,
                "isr": [2, 1],
            }
            await g.broker(4)  # partition 2's only replica arrives: now it can be led
            await state_of(a, "t", 2, leader=4, isr=(4,), controller_epoch=1)

    run(body())


def test_broker_loss_moves_leadership_within_the_isr(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(1)
            two = await g.broker(2)
            await g.broker(3)
            await controller_is(a, 1)
            await a.create_topic("t", -1, -1, assignment={0: [2, 3, 1], 1: [3, 2, 1]})
            await state_of(a, "t", 0, leader=2, isr=(2, 3, 1))
            await two.stop()
            await state_of(a, "t", 0, leader=3, isr=(3, 1), leader_epoch=1)
            await state_of(a, "t", 1, leader=3, isr=(3, 1), leader_epoch=1)

    run(body())


@pytest.mark.parametrize(
    ("controller_unclean", "topic_config", "expected_leader", "expected_isr"),
    [
        (False, {}, -1, (2,)),
        (True, {}, 3, (3,)),
        (False, {"unclean.leader.election.enable": "true"}, 3, (3,)),
        (True, {"unclean.leader.election.enable": "false"}, -1, (2,)),
    ],
)
def test_losing_the_whole_isr_elects_outside_it_only_when_unclean(
    zk_connect: str,
    controller_unclean: bool,
    topic_config: dict[str, str],
    expected_leader: int,
    expected_isr: tuple[int, ...],
) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(
                1, controller=ControllerConfig(unclean_leader_election_enable=controller_unclean,
                                               fast_failover_enable=False)
            )
            two = await g.broker(2)
            await controller_is(a, 1)
            write_topic(zk_connect, "t", {0: [2, 3]}, topic_config)  # 3 is not registered
            await state_of(a, "t", 0, leader=2, isr=(2,))  # 3 not up yet: not in the ISR
            await g.broker(3)
            await a.view.wait_for(lambda s: 3 in s.brokers, DEADLINE)
            await two.stop()
            await state_of(a, "t", 0, leader=expected_leader, isr=expected_isr, leader_epoch=1)
            if expected_leader == -1:
                await g.broker(2)  # the last ISR member returns: clean election again
                await state_of(a, "t", 0, leader=2, isr=(2,), leader_epoch=2)

    run(body())


def test_deleted_topic_loses_all_its_znodes(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(1)
            await controller_is(a, 1)
            await a.create_topic("gone", 2, 1, {"retention.ms": "5"})
            await state_of(a, "gone", 1, leader=1)
            await a.delete_topic("gone")
            await a.view.wait_for(lambda s: "gone" not in s.topics, DEADLINE)
            with zk_client(zk_connect) as zk:
                assert zk.exists("/brokers/topics/gone") is None
                assert zk.exists("/config/topics/gone") is None
                assert zk.get_children("/admin/delete_topics") == []
            await a.create_topic("gone", 1, 1)  # the name is free again
            await state_of(a, "gone", 0, leader=1)

    run(body())


def test_writes_of_a_superseded_controller_are_fenced(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(1)
            await asyncio.wait_for(_until(lambda: a.is_controller), DEADLINE)
            await a.create_topic("t", 1, 1)
            await state_of(a, "t", 0, leader=1)
            path = "/brokers/topics/t/partitions/0/state"
            with zk_client(zk_connect) as zk:
                before, stat = zk.get(path)
                zk.set("/controller_epoch", b"7")  # what a successor's election does
            with pytest.raises(ControllerMoved):
                await a.session.call(a.controller.context.set_fenced, path, b"{}", stat.version)
            with zk_client(zk_connect) as zk:
                assert zk.get(path)[0] == before, "a fenced controller must not write"

    run(body())
