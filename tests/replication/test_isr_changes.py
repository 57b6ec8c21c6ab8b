"""ISR expansion and shrink as the leader decides them (Kafka's rules, ZK mode).

* Shrink: an ISR follower that lacks some of the leader's log and has not caught up for
  more than ``replica.lag.time.max.ms`` leaves; "caught up" is reaching the leader's log
  end, or the log end the leader had at the follower's previous fetch (keeping pace with
  a busy leader). The leader never leaves.
* Expand: a follower outside the ISR joins once it reached the high watermark and the
  current leader epoch's start offset.
* ``min.insync.replicas`` bounds acks=all writes, not the ISR: the ISR may shrink to the
  leader alone; acks=all writes are then refused before appending.

ZooKeeper's state znode is an in-memory stand-in taking conditional writes (the real
writer runs against ZooKeeper in the failover and network-partition suites).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from kio.schema.errors import ErrorCode

from odradek.clock import monotonic_ms
from odradek.config_sections import ReplicationConfig
from odradek.replication import Acks, Partition, ReplicaManager
from tests.replication.cluster_view import (
    ME,
    TP,
    State,
    StateZnode,
    consume,
    led_partition,
    new_manager,
    view,
    written,
)
from tests.storage.helpers import batch

LAG_MS = ReplicationConfig().replica_lag_time_max_ms


def lead(manager: ReplicaManager, znode: StateZnode, isr: tuple[int, ...],
         replicas: tuple[int, ...] = (1, 2, 3), epoch: int = 3) -> Partition:
    znode.isr = isr
    manager.apply_cluster_view(view(State(ME, epoch, isr, replicas, znode.version)))
    return manager.partitions()[TP]


def shrink(manager: ReplicaManager, now: int) -> int:
    assert manager.isr_manager is not None
    return manager.isr_manager.shrink_lagging(now)


def test_a_follower_lagging_longer_than_replica_lag_time_max_ms_leaves_the_isr(
    manager: ReplicaManager, znode: StateZnode,
) -> None:
    async def body() -> None:
        partition = lead(manager, znode, isr=(1, 2, 3))
        started = monotonic_ms()
        manager.append_records({TP: batch([b"a", b"b"])}, acks=Acks.LEADER, timeout_ms=1000)
        partition.record_follower_fetch(2, 2, now=started + LAG_MS // 2)  # 2 caught up
        assert shrink(manager, started + LAG_MS // 2) == 0, "nobody lags long enough yet"
        assert shrink(manager, started + LAG_MS + 1) == 1
        await written(partition)
        assert partition.isr == znode.isr == (1, 2)
        assert partition.zk_version == znode.version == 1
        assert partition.high_watermark == 2, "the smaller ISR has everything"

    asyncio.run(body())


def test_a_follower_caught_up_exactly_replica_lag_time_max_ms_ago_stays(tmp_path: Path) -> None:
    partition = led_partition(tmp_path, isr=(1, 2))
    try:
        partition.record_follower_fetch(2, 0, now=1000)  # at our log end: caught up
        partition.append_as_leader(batch([b"v"]), acks=Acks.LEADER)  # now it lacks something
        assert partition.out_of_sync_replicas(1000 + LAG_MS, LAG_MS) == ()
        assert partition.out_of_sync_replicas(1000 + LAG_MS + 1, LAG_MS) == (2,)
    finally:
        partition.log.close()


def test_a_follower_with_our_whole_log_stays_in_sync_however_long_ago_it_fetched(
    tmp_path: Path,
) -> None:
    """Kafka's ``ReplicaState.isCaughtUp``: lag counts only while we have something the
    follower lacks, so an idle partition keeps its ISR (a dead follower is dropped by the
    controller when its ZooKeeper session ends, or by us once a write arrives)."""
    partition = led_partition(tmp_path, isr=(1, 2))
    try:
        partition.append_as_leader(batch([b"v"]), acks=Acks.LEADER)
        partition.record_follower_fetch(2, 1, now=0)
        assert partition.out_of_sync_replicas(10 * LAG_MS, LAG_MS) == ()
        partition.append_as_leader(batch([b"w"]), acks=Acks.LEADER)
        assert partition.out_of_sync_replicas(10 * LAG_MS, LAG_MS) == (2,)
    finally:
        partition.log.close()


def test_a_follower_keeping_pace_with_a_busy_leader_stays_in_sync(tmp_path: Path) -> None:
    """Kafka's rule: a fetch that reaches the log end the leader had at this follower's
    previous fetch means it was caught up then, though it never equals the current end."""
    partition = led_partition(tmp_path, isr=(1, 2, 3))
    try:
        partition.append_as_leader(batch([b"v"] * 3), acks=Acks.LEADER)
        end_at_previous_fetch = partition.log_end_offset
        now = 0
        for _ in range(5):
            now += LAG_MS // 2
            partition.append_as_leader(batch([b"v"] * 3), acks=Acks.LEADER)  # always ahead of 2
            partition.record_follower_fetch(2, end_at_previous_fetch, now=now)
            partition.record_follower_fetch(3, 1, now=now)  # stuck at offset 1
            end_at_previous_fetch = partition.log_end_offset
            assert partition.followers[2].log_end_offset < partition.log_end_offset
        assert partition.out_of_sync_replicas(now + 1, LAG_MS) == (3,)
    finally:
        partition.log.close()


def test_the_isr_never_shrinks_below_the_leader(
    manager: ReplicaManager, znode: StateZnode,
) -> None:
    async def body() -> None:
        partition = lead(manager, znode, isr=(1, 2, 3))
        late = monotonic_ms() + LAG_MS + 1
        assert partition.out_of_sync_replicas(late, LAG_MS) == (2, 3)
        assert shrink(manager, late) == 1
        await written(partition)
        assert partition.isr == (ME,)
        assert shrink(manager, late + 10 * LAG_MS) == 0, "the leader is never out of sync"
        assert partition.out_of_sync_replicas(late + 10 * LAG_MS, 0) == ()

    asyncio.run(body())


def test_a_follower_that_catches_up_to_the_high_watermark_rejoins(
    manager: ReplicaManager, znode: StateZnode,
) -> None:
    async def body() -> None:
        partition = lead(manager, znode, isr=(1, 2))
        manager.append_records({TP: batch([b"v"] * 4)}, acks=Acks.LEADER, timeout_ms=1000)
        manager.fetch(consume(4, replica_id=2))
        assert partition.high_watermark == 4
        manager.fetch(consume(2, replica_id=3))
        assert partition.pending_isr is None and znode.writes == [], "3 is below the HW"
        manager.append_records({TP: batch([b"v"] * 2)}, acks=Acks.LEADER, timeout_ms=1000)
        manager.fetch(consume(4, replica_id=3))  # at the HW, short of the log end: enough
        assert partition.pending_isr == (1, 2, 3)
        await written(partition)
        assert partition.isr == znode.isr == (1, 2, 3)

    asyncio.run(body())


def test_a_follower_must_reach_the_leader_epochs_start_offset_to_rejoin(
    manager: ReplicaManager, znode: StateZnode,
) -> None:
    """Kafka's second expansion condition: at the HW is not enough while the HW is still
    below where our epoch began (the follower may hold another leader's records there)."""

    async def body() -> None:
        partition = lead(manager, znode, isr=(1, 2))
        manager.append_records({TP: batch([b"v"] * 3)}, acks=Acks.LEADER, timeout_ms=1000)
        manager.fetch(consume(3, replica_id=2))
        manager.append_records({TP: batch([b"v"] * 2)}, acks=Acks.LEADER, timeout_ms=1000)
        partition = lead(manager, znode, isr=(1, 2), epoch=4)  # our epoch 4 starts at 5
        assert (partition.high_watermark, partition.leader_epoch_start_offset) == (3, 5)
        manager.fetch(consume(4, replica_id=3))
        assert not partition.can_join_isr(3) and znode.writes == []
        manager.fetch(consume(5, replica_id=3))
        await written(partition)
        assert partition.isr == (1, 2, 3)

    asyncio.run(body())


def test_a_failed_isr_write_changes_nothing_locally(
    manager: ReplicaManager, znode: StateZnode,
) -> None:
    """The controller changed the znode meanwhile (its version moved): the leader keeps
    its ISR, and waits ``replica.fetch.backoff.ms`` before trying again."""

    async def body() -> None:
        partition = lead(manager, znode, isr=(1, 2, 3))
        znode.version += 1
        late = monotonic_ms() + LAG_MS + 1
        assert shrink(manager, late) == 1
        await written(partition)
        assert partition.isr == (1, 2, 3) and znode.writes == [(ME,)]
        assert partition.isr_retry_after_ms > monotonic_ms()
        assert shrink(manager, monotonic_ms()) == 0, "backing off"

    asyncio.run(body())


def test_min_insync_replicas_bounds_acks_all_writes_not_the_isr(
    manager: ReplicaManager, znode: StateZnode,
) -> None:
    async def body() -> None:
        partition = lead(manager, znode, isr=(1, 2), replicas=(1, 2))
        assert shrink(manager, monotonic_ms() + LAG_MS + 1) == 1
        await written(partition)
        assert partition.isr == (ME,), "min.insync.replicas=2 does not stop a shrink"

        refused = manager.append_records({TP: batch([b"x"])}, acks=Acks.ALL, timeout_ms=1000)
        assert isinstance(refused, dict)
        assert refused[TP].error == ErrorCode.not_enough_replicas
        assert partition.log_end_offset == 0, "refused before appending"
        accepted = manager.append_records({TP: batch([b"y"])}, acks=Acks.LEADER, timeout_ms=1000)
        assert isinstance(accepted, dict) and accepted[TP].error == ErrorCode.none

        manager.fetch(consume(1, replica_id=2))  # caught up again: rejoins
        await written(partition)
        assert partition.isr == (1, 2)
        pending = manager.append_records({TP: batch([b"z"])}, acks=Acks.ALL, timeout_ms=5000)
        assert isinstance(pending, asyncio.Future) and not pending.done()
        manager.fetch(consume(2, replica_id=2))
        results = await asyncio.wait_for(pending, 1)
        assert results[TP].error == ErrorCode.none and results[TP].base_offset == 1

    asyncio.run(body())


def test_min_insync_replicas_above_the_replication_factor_counts_as_the_replication_factor(
    tmp_path: Path,
) -> None:
    """Kafka 3.9's ``Partition.effectiveMinIsr``: min(min.insync.replicas, replicas). A
    replication-factor-1 topic under a cluster-wide min.insync.replicas=2 still takes
    acks=all writes (the producers' default), as soon as all its replicas have them."""

    async def body() -> None:
        manager, logs = new_manager(tmp_path, min_insync_replicas=3)
        try:
            manager.apply_cluster_view(view(State(ME, 3, (ME,), (ME,))))
            alone = manager.append_records({TP: batch([b"x"])}, acks=Acks.ALL, timeout_ms=1000)
            assert isinstance(alone, dict), "the whole ISR has it at once"
            assert alone[TP].error == ErrorCode.none

            manager.apply_cluster_view(view(State(ME, 4, (ME, 2), (ME, 2), zk_version=1)))
            pending = manager.append_records({TP: batch([b"y"])}, acks=Acks.ALL, timeout_ms=5000)
            assert isinstance(pending, asyncio.Future)
            manager.fetch(consume(2, replica_id=2))
            results = await asyncio.wait_for(pending, 1)
            assert results[TP].error == ErrorCode.none

            manager.apply_cluster_view(view(State(ME, 4, (ME,), (ME, 2), zk_version=2)))
            refused = manager.append_records({TP: batch([b"z"])}, acks=Acks.ALL, timeout_ms=1000)
            assert isinstance(refused, dict)
            assert refused[TP].error == ErrorCode.not_enough_replicas, "2 of 2 are needed"
        finally:
            logs.shutdown()

    asyncio.run(body())
