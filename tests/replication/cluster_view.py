"""The cluster view as plain values, and a replica manager on real logs, for unit tests.

What ZooKeeper would say about a partition (:class:`State`) is a frozen value here, and
its state znode (:class:`StateZnode`) an in-memory stand-in taking the leader's
conditional ISR writes; the same paths run against real ZooKeeper and broker processes in
the failover and network-partition suites.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.cluster.isr import IsrWriteResult
from odradek.config_sections import ReplicationConfig
from odradek.replication import (
    FetchParams,
    FetchRead,
    Partition,
    PartitionFetch,
    ReplicaManager,
)
from odradek.storage import LogManager, open_log
from odradek.types import BrokerId, LeaderEpoch, TopicPartition
from tests.storage.helpers import settings, small_config

TP = TopicPartition("t", 0)
ME = BrokerId(1)


@dataclass(frozen=True)
class State:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int = 0


@dataclass(frozen=True)
class Topic:
    partitions: dict[int, State] = field(default_factory=dict)
    topic_id: object = "id-1"


def view(state: State) -> dict[str, Topic]:
    """The cluster view holding one topic ``t`` with one partition in ``state``."""
    return {"t": Topic({0: state})}


def brokers(*ids: int) -> tuple[BrokerId, ...]:
    """Broker ids as a Partition holds its ISR and replicas."""
    return tuple(BrokerId(i) for i in ids)


def led_partition(directory: Path, *, isr: tuple[int, ...] = (1, 2, 3),
                  replicas: tuple[int, ...] = (1, 2, 3), min_insync_replicas: int = 1,
                  leader_epoch: int = 3) -> Partition:
    """:data:`ME` leading ``t-0`` on a fresh log in ``directory`` (close its log after)."""
    return Partition(
        "t", 0, open_log(directory / "t-0", small_config()), ME,
        leader_epoch=LeaderEpoch(leader_epoch), isr=brokers(*isr), replicas=brokers(*replicas),
        min_insync_replicas=min_insync_replicas, is_leader=True, leader=ME,
    )


def new_manager(tmp_path: Path, *, min_insync_replicas: int = 1,
                isr_writer: Any = None) -> tuple[ReplicaManager, LogManager]:
    """A replica manager for broker :data:`ME` on logs under ``tmp_path`` (shut the log
    manager down after)."""
    logs = LogManager(settings(tmp_path), small_config(), background=False)
    config = small_config(min_insync_replicas=min_insync_replicas)
    manager = ReplicaManager(ME, logs, lambda _topic: config, ReplicationConfig(),
                             isr_writer=isr_writer)
    return manager, logs


def consume(offset: int, *, replica_id: int = -1, max_wait_ms: int = 0, min_bytes: int = 1,
            current_leader_epoch: int = -1) -> FetchParams:
    """A Fetch of ``t-0`` from ``offset``: a consumer's, or a follower's (``replica_id``)."""
    return FetchParams(replica_id, min_bytes, 1 << 20, max_wait_ms,
                       (PartitionFetch("t", 0, offset, 1 << 20, current_leader_epoch),))


def partition_error(read: FetchRead) -> ErrorCode:
    return ErrorCode(read.topics[0].partitions[0].error_code)


@dataclass
class StateZnode:
    """``t-0``'s state znode: a write lands only at the version the writer read."""

    version: int = 0
    isr: tuple[int, ...] = ()
    writes: list[tuple[int, ...]] = field(default_factory=list)

    async def write_isr(self, topic: str, partition: int, *, leader: int, leader_epoch: int,
                        isr: Sequence[int], controller_epoch: int, zk_version: int,
                        replicas: Sequence[int]) -> IsrWriteResult:
        self.writes.append(tuple(isr))
        if zk_version != self.version:
            return IsrWriteResult(False)
        self.version += 1
        self.isr = tuple(isr)
        return IsrWriteResult(True, self.version)


async def written(partition: Partition) -> None:
    """Let the ISR write in flight finish (the in-memory znode answers at once)."""
    for _ in range(20):
        if partition.pending_isr is None:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"ISR write {partition.pending_isr} still in flight")
