"""Fakes of the sources a broker attaches to its metrics (the metrics side of the contracts).

These stand below real tests of the same path: the broker's real sources are
``odradek.broker.metrics_sources``, tested with real clients in ``test_broker_wiring.py`` and
on a live 3-broker cluster with a real Prometheus in ``test_cluster_live.py``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from odradek.metrics.lag import GroupOffsets, LogOffsets
from odradek.metrics.sources import ControllerState, ReplicaSnapshot
from odradek.types import TopicPartition


@dataclass
class FakeLog:
    """Offsets and timestamps of a log: ``runs`` are (first offset, timestamp ms) of appends."""

    start: int = 0
    end: int = 0
    runs: list[tuple[int, int]] = field(default_factory=list)

    def append(self, count: int, timestamp_ms: int) -> None:
        self.runs.append((self.end, timestamp_ms))
        self.end += count

    def delete_before(self, offset: int) -> None:
        self.start = offset

    def timestamp_at(self, offset: int) -> int | None:
        """Timestamp of the first record at or after ``offset`` (None past the end)."""
        offset = max(offset, self.start)
        if offset >= self.end:
            return None
        index = bisect_right(self.runs, (offset, float("inf"))) - 1
        return self.runs[index][1]


@dataclass
class FakeLogs:
    """Every log is local (a ``RemoteOffsetsSource`` with nothing to refresh: the broker's
    remote path is tested against real brokers in ``tests/broker/test_remote_offsets.py``)."""

    logs: dict[TopicPartition, FakeLog] = field(default_factory=dict)
    timestamp_reads: int = 0
    remote_age: float = 0.0

    def refresh(self, partitions: Collection[TopicPartition]) -> None:
        return None

    def end_offsets_age(self) -> float:
        return self.remote_age

    def offsets(
        self, partitions: Collection[TopicPartition]
    ) -> Mapping[TopicPartition, LogOffsets]:
        return {tp: LogOffsets(self.logs[tp].start, self.logs[tp].end)
                for tp in partitions if tp in self.logs}

    def timestamp_at(self, topic: str, partition: int, offset: int) -> int | None:
        self.timestamp_reads += 1
        log = self.logs.get(TopicPartition(topic, partition))
        return None if log is None else log.timestamp_at(offset)


@dataclass
class FakeCoordinator:
    groups_by_id: dict[str, GroupOffsets] = field(default_factory=dict)

    def set(self, group: str, state: str, members: int,
            committed: Mapping[TopicPartition, int], group_type: str = "classic",
            epoch: int = 0) -> None:
        self.groups_by_id[group] = GroupOffsets(group, state, members, dict(committed),
                                                group_type, epoch)

    def expire(self, group: str) -> None:
        del self.groups_by_id[group]

    def groups(self) -> Iterable[GroupOffsets]:
        return list(self.groups_by_id.values())


@dataclass
class FakeReplicaManager:
    states: list[ReplicaSnapshot] = field(default_factory=list)

    def partitions(self) -> Iterable[ReplicaSnapshot]:
        return self.states


@dataclass
class FakeController:
    state: ControllerState = field(default_factory=lambda: ControllerState(active=False))

    def controller_state(self) -> ControllerState:
        return self.state


@dataclass
class FakePurgatory:
    sizes: dict[str, int] = field(default_factory=dict)

    def purgatory_sizes(self) -> Mapping[str, int]:
        return self.sizes


def leader(topic: str, partition: int, *, isr: int, replicas: int = 3, min_isr: int = 2,
           end: int = 100) -> ReplicaSnapshot:
    return ReplicaSnapshot(topic, partition, size_bytes=end * 100, segments=1,
                          log_start_offset=0, log_end_offset=end, is_leader=True,
                          replicas=replicas, in_sync_replicas=isr,
                          min_insync_replicas=min_isr)


def follower(topic: str, partition: int, *, end: int, leader_end: int | None) -> ReplicaSnapshot:
    return ReplicaSnapshot(topic, partition, size_bytes=end * 100, segments=2,
                          log_start_offset=0, log_end_offset=end, is_leader=False,
                          replicas=3, in_sync_replicas=0, min_insync_replicas=2,
                          leader_end_offset=leader_end)
