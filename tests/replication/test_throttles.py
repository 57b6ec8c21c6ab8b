"""Replication throttles (Kafka's ReplicationQuotaManager): which replicas, how fast, and
where they apply — the leader's answers to followers and the follower's own fetches.

Pure: a fake clock drives the quotas; the leader side runs a replica manager on real logs
(no network), the follower side one fetcher's choice of partitions (no connection).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.config_sections import ReplicationConfig
from odradek.replication import Acks, FetchParams, PartitionFetch, ReplicaManager
from odradek.replication.fetcher import FollowerFetchState, ReplicaFetcher, ReplicaFetcherManager
from odradek.replication.throttles import UNLIMITED, ReplicationQuota, ThrottledReplicas
from odradek.storage import LogConfig, LogManager
from odradek.types import BrokerId, TopicPartition
from tests.replication.cluster_view import ME, State, Topic
from tests.storage.helpers import batch, settings, small_config

SAMPLES, WINDOW_MS = 11, 1000.0


class FakeClock:
    def __init__(self) -> None:
        self.now_ms = 0.0

    def __call__(self) -> float:
        return self.now_ms


def quota(bound: int = UNLIMITED, clock: FakeClock | None = None) -> ReplicationQuota:
    return ReplicationQuota(SAMPLES, WINDOW_MS, bound, clock_ms=clock or FakeClock())


# --- which replicas ----------------------------------------------------------------------
pairs = st.sets(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), max_size=20)


@given(pairs, st.sampled_from(["", " "]))
def test_a_partition_broker_list_throttles_exactly_the_replicas_it_names(
    named: set[tuple[int, int]], space: str,
) -> None:
    value = ",".join(f"{space}{p}:{b}{space}" for p, b in sorted(named))
    parsed = ThrottledReplicas.parse(value)
    assert parsed.replicas == named
    assert bool(parsed) == bool(named)
    for partition, broker in named:
        assert parsed.covers(partition, broker)
        assert not parsed.covers(partition, broker + 10_001)


@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_a_star_throttles_every_replica_and_an_empty_value_none(partition: int,
                                                                 broker: int) -> None:
    assert ThrottledReplicas.parse("*").covers(partition, broker)
    assert ThrottledReplicas.parse(" * ").covers(partition, broker)
    assert not ThrottledReplicas.parse("").covers(partition, broker)


def test_each_broker_reads_the_list_for_its_own_replicas() -> None:
    throttle = quota()
    throttle.set_topic("t", "0:1,1:2")
    assert throttle.is_throttled("t", 0, 1)
    assert throttle.is_throttled("t", 1, 2)
    assert not throttle.is_throttled("t", 0, 2)  # partition 0's replica on broker 2
    assert not throttle.is_throttled("other", 0, 1)
    throttle.set_topic("t", "")
    assert not throttle.is_throttled("t", 0, 1)


# --- how fast ------------------------------------------------------------------------------
@given(st.integers(1, 10**9), st.lists(st.integers(0, 10**8), min_size=1, max_size=30))
def test_the_quota_is_exceeded_once_the_windowed_rate_is_above_the_bound(
    bound: int, sizes: list[int],
) -> None:
    """Bytes recorded at one instant are measured over ``samples - 1`` whole windows (a
    rate that just started is not measured over a few milliseconds), as Kafka's Rate."""
    throttle = quota(bound)
    for size in sizes:
        throttle.record(size)
    rate = sum(sizes) * 1000.0 / ((SAMPLES - 1) * WINDOW_MS)
    assert throttle.is_quota_exceeded() == (rate > bound)


def test_an_exceeded_quota_recovers_once_its_samples_age_out() -> None:
    clock = FakeClock()
    throttle = quota(1000, clock)
    throttle.record(20_000)
    assert throttle.is_quota_exceeded()
    clock.now_ms = SAMPLES * WINDOW_MS
    assert not throttle.is_quota_exceeded()


def test_an_unlimited_quota_is_never_exceeded() -> None:
    throttle = quota()
    throttle.record(10**15)
    assert not throttle.is_quota_exceeded()


def test_a_new_rate_applies_to_what_was_already_recorded() -> None:
    throttle = quota()
    throttle.record(50_000)
    throttle.bound = 1000
    assert throttle.is_quota_exceeded()
    throttle.bound = UNLIMITED
    assert not throttle.is_quota_exceeded()


def test_every_recorded_size_is_reported() -> None:
    throttle = quota()
    told: list[int] = []
    throttle.on_record = told.append
    throttle.record(3)
    throttle.record(4)
    assert told == [3, 4]


# --- the leader ----------------------------------------------------------------------------
THROTTLED, FREE = "throttled", "free"
PAYLOAD = [b"x" * 100] * 5


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[ReplicaManager]:
    """:data:`ME` (broker 1) leading ``throttled-0`` (leader list ``*``) and ``free-0``,
    both on brokers 1, 2, 3 with ISR 1, 2: follower 3 is out of sync. The leader quota is
    1 byte/s and already exceeded."""
    logs = LogManager(settings(tmp_path), small_config(), background=False)
    configs = {THROTTLED: small_config(leader_replication_throttled_replicas="*"),
               FREE: small_config()}

    def config_for(topic: str) -> LogConfig:
        return configs[topic]

    manager = ReplicaManager(ME, logs, config_for, ReplicationConfig())
    state = State(ME, 3, (1, 2), (1, 2, 3))
    manager.apply_cluster_view({THROTTLED: Topic({0: state}, "id-1"),
                                FREE: Topic({0: state}, "id-2")})
    for topic in (THROTTLED, FREE):
        manager.append_records({TopicPartition(topic, 0): batch(PAYLOAD)}, acks=Acks.LEADER,
                               timeout_ms=1000)
    manager.throttles.set_rates(leader=1, follower=UNLIMITED)
    manager.throttles.leader.record(1000)
    yield manager
    logs.shutdown()


def follower_fetch(manager: ReplicaManager, replica_id: int) -> dict[str, int]:
    """Record bytes per topic in the answer to ``replica_id``'s fetch of both partitions."""
    params = FetchParams(replica_id, 1, 1 << 20, 0, (
        PartitionFetch(THROTTLED, 0, 0, 1 << 20), PartitionFetch(FREE, 0, 0, 1 << 20)))
    read = manager.fetch(params)
    assert not isinstance(read, asyncio.Future)
    return {topic.topic: sum(p.records_size for p in topic.partitions) for topic in read.topics}


def test_the_leader_holds_back_a_throttled_partition_from_an_out_of_sync_follower(
    leader: ReplicaManager,
) -> None:
    sizes = follower_fetch(leader, 3)
    assert sizes[THROTTLED] == 0, "throttled-0 sent to follower 3 while over quota"
    assert sizes[FREE] > 0, "an unthrottled partition was held back"


def test_the_leader_never_holds_back_an_in_sync_follower(leader: ReplicaManager) -> None:
    sizes = follower_fetch(leader, 2)
    assert sizes[THROTTLED] > 0 and sizes[FREE] > 0


def test_the_leader_sends_again_once_under_its_rate(leader: ReplicaManager) -> None:
    leader.throttles.set_rates(leader=UNLIMITED, follower=UNLIMITED)
    assert follower_fetch(leader, 3)[THROTTLED] > 0


def test_the_leader_records_what_it_sends_for_throttled_partitions_in_sync_or_not(
    leader: ReplicaManager,
) -> None:
    recorded: list[int] = []
    leader.throttles.leader.on_record = recorded.append
    sizes = follower_fetch(leader, 2)  # in sync: sent, and counted
    assert recorded == [sizes[THROTTLED]]
    leader.throttles.set_rates(leader=UNLIMITED, follower=UNLIMITED)
    sizes = follower_fetch(leader, 3)
    assert recorded[1:] == [sizes[THROTTLED]], "only the throttled partition's bytes count"


def test_a_topic_config_change_moves_the_throttle(leader: ReplicaManager) -> None:
    assert leader.throttles.leader.is_throttled(THROTTLED, 0, ME)
    leader._log_config_for = lambda _topic: small_config()
    leader.update_topic_config(THROTTLED)
    assert follower_fetch(leader, 3)[THROTTLED] > 0


# --- the follower --------------------------------------------------------------------------
def test_the_follower_leaves_out_its_throttled_partitions_until_they_catch_up(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        logs = LogManager(settings(tmp_path), small_config(), background=False)
        try:
            follower_quota = quota(1)
            follower_quota.set_topic(THROTTLED, f"0:{ME}")
            manager = ReplicaFetcherManager(ME, ReplicationConfig(), lambda _id: None,
                                            throttle=follower_quota)
            fetcher = ReplicaFetcher(manager, 2, 0, lambda _id: None)
            replicas = ReplicaManager(ME, logs, lambda _t: small_config(), ReplicationConfig())
            following = State(2, 3, (1, 2), (1, 2))  # no fetchers: nothing runs
            replicas.apply_cluster_view({THROTTLED: Topic({0: following}, "id-1"),
                                         FREE: Topic({0: following}, "id-2")})
            states = {}
            for key, partition in replicas.partitions().items():
                states[key.topic] = FollowerFetchState(partition, BrokerId(2), 3,
                                                       truncating=False, leader_high_watermark=10)
                fetcher.add(states[key.topic])

            def ready() -> set[str]:
                for state in states.values():
                    state.delayed_until = 0.0
                return {s.partition.topic for s in fetcher._ready_states()}

            assert ready() == {THROTTLED, FREE}, "left out while within the quota"
            follower_quota.record(1000)
            assert ready() == {FREE}
            states[THROTTLED].leader_high_watermark = 0  # caught up: lag 0
            assert ready() == {THROTTLED, FREE}
        finally:
            logs.shutdown()

    asyncio.run(body())

