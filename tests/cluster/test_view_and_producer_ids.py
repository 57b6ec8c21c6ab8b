"""ClusterView follows ZooKeeper; producer id blocks never overlap."""

from __future__ import annotations

import asyncio

from odradek.cluster import ClusterChange, TopicPartition
from odradek.cluster.view import ClusterSnapshot
from tests.cluster.support import DEADLINE, group, run
from tests.harness.zk import read_json, zk_client


def test_view_of_a_non_controller_follows_brokers_topics_configs_and_controller(
    zk_connect: str,
) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(1)
            b = await g.cluster(2)
            changes: list[ClusterChange] = []
            b.view.add_listener(changes.append)
            snap = await b.view.wait_for(
                lambda s: s.controller_id == 1 and set(s.brokers) == {1, 2}, DEADLINE
            )
            assert snap.brokers[2].port == 9092 and snap.cluster_id == a.cluster_id

            created = await a.create_topic("v", -1, -1, {"retention.ms": "9"}, {0: [2, 1]})

            def led(s: ClusterSnapshot) -> bool:
                meta = s.topics.get("v")
                return meta is not None and meta.partitions[0].leader == 2

            snap = await b.view.wait_for(led, DEADLINE)
            meta = snap.topics["v"]
            assert meta.topic_id == created.topic_id
            assert meta.partitions[0].replicas == (2, 1) and meta.partitions[0].isr == (2, 1)
            assert meta.config == {"retention.ms": "9"}
            assert any(TopicPartition("v", 0) in c.partitions for c in changes)

            await a.alter_topic_config("v", {"retention.ms": "10"})
            await b.view.wait_for(lambda s: s.topics["v"].config == {"retention.ms": "10"}, 10)
            assert any("v" in c.configs for c in changes)

            await a.create_partitions("v", 2)
            await b.view.wait_for(
                lambda s: 1 in s.topics["v"].partitions and s.topics["v"].partitions[1].online,
                DEADLINE,
            )

            await a.stop()
            # The new controller (2) drops the dead broker 1 from the ISR, bumping the epoch.
            snap = await b.view.wait_for(
                lambda s: s.controller_id == 2 and s.topics["v"].partitions[0].isr == (2,),
                DEADLINE,
            )
            assert set(snap.brokers) == {2}
            state = snap.topics["v"].partitions[0]
            assert (state.leader, state.leader_epoch, state.controller_epoch) == (2, 1, 2)

    run(body())


def test_view_snapshots_are_immutable(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(1)
            snap = await a.view.wait_for(lambda s: 1 in s.brokers, DEADLINE)
            try:
                snap.brokers[5] = snap.brokers[1]  # type: ignore[index]
            except TypeError:
                pass
            else:
                raise AssertionError("a published snapshot could be mutated")
            assert 5 not in a.view.brokers

    run(body())


def test_view_wait_for_times_out(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            a = await g.cluster(1, controller_enabled=False)
            try:
                await a.view.wait_for(lambda s: 99 in s.brokers, 0.2)
            except TimeoutError:
                return
            raise AssertionError("wait_for returned for a predicate that never holds")

    run(body())


def test_producer_id_blocks_are_unique_under_concurrency(zk_connect: str) -> None:
    async def body() -> None:
        async with group(zk_connect) as g:
            clusters = [await g.cluster(i, controller_enabled=False) for i in (1, 2, 3)]
            blocks = await asyncio.gather(
                *(c.allocate_producer_id_block() for c in clusters for _ in range(8))
            )
            with zk_client(zk_connect) as zk:
                latest = read_json(zk, "/latest_producer_id_block")
        ids = [i for block in blocks for i in block]
        assert len(ids) == len(set(ids)) == 24 * 1000, "producer id blocks overlapped"
        assert sorted(b.start for b in blocks) == list(range(0, 24000, 1000))
        assert latest["version"] == 1 and latest["broker"] in (1, 2, 3)
        assert (latest["block_start"], latest["block_end"]) == ("23000", "23999")

    run(body())
