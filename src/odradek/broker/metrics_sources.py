"""The broker's state as the metrics read it at scrape time (the metrics source protocols).

:mod:`odradek.metrics` reads partitions, purgatories, the controller and consumer groups
through small protocols (:mod:`odradek.metrics.sources`, :mod:`odradek.metrics.lag`) so that
it knows nothing of the broker's classes. These adapters implement them over the replica
manager, the cluster and the group coordinator. Every method runs on the broker's event
loop, once per scrape, and only copies numbers: nothing here is on the request path (the
offsets of partitions hosted elsewhere come from :mod:`.remote_offsets`' cache).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING

from odradek.metrics.lag import GroupOffsets, LogOffsets
from odradek.metrics.sources import ControllerState, ReplicaSnapshot
from odradek.types import TopicPartition

if TYPE_CHECKING:
    import concurrent.futures

    from odradek.cluster import ZkCluster
    from odradek.coordinator import GroupCoordinator
    from odradek.metrics import BrokerMetrics
    from odradek.replication import ReplicaManager

    from .remote_offsets import RemoteLogOffsets

__all__ = [
    "BrokerLogOffsets",
    "ClusterController",
    "CoordinatorGroups",
    "ReplicaPartitions",
    "StorageObserver",
]

log = logging.getLogger(__name__)

# Record batch v2 header: baseOffset(8) length(4) leaderEpoch(4) magic(1) crc(4)
# attributes(2) lastOffsetDelta(4) baseTimestamp(8): the first record's timestamp.
_BASE_TIMESTAMP = struct.Struct(">q")
_BASE_TIMESTAMP_AT = 27
_NO_LEADER = -1


class ReplicaPartitions:
    """:class:`~odradek.metrics.sources.PartitionSource` and ``PurgatorySource`` over the
    replica manager: every partition replica this broker hosts, and its two purgatories."""

    def __init__(self, replica_manager: ReplicaManager) -> None:
        self._replicas = replica_manager

    def partitions(self) -> list[ReplicaSnapshot]:
        """On the loop, once per scrape and partition: positional fields, no keyword
        matching, nothing but attribute reads (this is the part of a scrape that holds the
        broker's event loop)."""
        fetchers = self._replicas.fetchers
        leader_ends = fetchers.leader_end_offsets() if fetchers is not None else {}
        states: list[ReplicaSnapshot] = []
        append = states.append
        for key, partition in self._replicas.partitions().items():
            partition_log = partition.log
            leader = partition.is_leader
            if leader:
                producers = partition_log.producer_state
                append(ReplicaSnapshot(
                    partition.topic, partition.index, partition_log.size_bytes(),
                    len(partition_log.segments), partition_log.log_start_offset,
                    partition_log.log_end_offset, True, len(partition.replicas),
                    len(partition.isr), partition.effective_min_insync_replicas, None,
                    partition_log.last_stable_offset, producers.open_transactions,
                    producers.oldest_open_txn_timestamp))
                continue
            append(ReplicaSnapshot(
                partition.topic, partition.index, partition_log.size_bytes(),
                len(partition_log.segments), partition_log.log_start_offset,
                partition_log.log_end_offset, False, len(partition.replicas),
                len(partition.isr), partition.effective_min_insync_replicas, leader_ends.get(key)))
        return states

    def purgatory_sizes(self) -> Mapping[str, int]:
        replicas = self._replicas
        return {"produce": len(replicas.produce_purgatory),
                "fetch": len(replicas.fetch_purgatory)}


class ClusterController:
    """:class:`~odradek.metrics.sources.ControllerSource` over the ZooKeeper cluster facade:
    whether this broker is the active controller and, if so, what it sees in the view."""

    def __init__(self, cluster: ZkCluster) -> None:
        self._cluster = cluster

    def controller_state(self) -> ControllerState:
        cluster = self._cluster
        controller = cluster.controller
        pending = controller.pending_events()
        if not controller.is_active:
            return ControllerState(active=False, event_queue_size=pending)
        snapshot = cluster.view.snapshot
        live = snapshot.brokers
        topics = snapshot.topics
        partitions = offline = 0
        for topic in topics.values():
            for state in topic.partitions.values():
                partitions += 1
                if state.leader == _NO_LEADER or state.leader not in live:
                    offline += 1
        return ControllerState(active=True, offline_partitions=offline, topics=len(topics),
                               partitions=partitions, event_queue_size=pending)


class CoordinatorGroups:
    """:class:`~odradek.metrics.lag.GroupSource` over the group coordinator: every group of
    the offsets partitions it has loaded, with or without live members."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self._coordinator = coordinator

    def groups(self) -> Iterator[GroupOffsets]:
        """Classic groups as they are; a consumer-type group (KIP-848) with the state,
        members and epoch of its consumer group, and the offsets that the classic entry of
        the same id holds for it (once something was committed)."""
        coordinator = self._coordinator
        holders = {group.group_id: group for group in coordinator.loaded_groups()}
        for listing in coordinator.list_groups()[1]:
            holder = holders.get(listing.group_id)
            offsets = {} if holder is None else {
                tp: offset.offset for tp, offset in holder.offsets.items()}
            if listing.group_type == "consumer":
                group = coordinator.describe_consumer_group(listing.group_id)[1]
                if group is not None:
                    yield GroupOffsets(listing.group_id, group.state.value, len(group.members),
                                       offsets, "consumer", group.group_epoch)
            elif holder is not None:
                yield GroupOffsets(listing.group_id, holder.state.value, len(holder.members),
                                   offsets, "classic", holder.generation_id)


class BrokerLogOffsets:
    """:class:`~odradek.metrics.lag.LogOffsetsSource` (and ``RemoteOffsetsSource``): the
    replicas this broker hosts first, then the leaders' answers cached by ``remote``.

    A partition this broker leads gives its high watermark; one it follows gives the high
    watermark the leader last sent (at most one fetch behind, so lag is understated by at
    most that much, never made negative). A partition not hosted here gives what its leader
    answered to ListOffsets (:class:`~.remote_offsets.RemoteLogOffsets`), while that answer
    is recent enough; otherwise it has no lag row this time (its committed offset is still
    reported): see docs/observability.md.
    """

    def __init__(self, replica_manager: ReplicaManager,
                 remote: RemoteLogOffsets | None = None) -> None:
        self._replicas = replica_manager
        self._remote = remote
        self._age = 0.0

    def refresh(self, partitions: Collection[TopicPartition]
                ) -> concurrent.futures.Future[None] | None:
        if self._remote is None:
            return None
        hosted = self._replicas.partitions()
        return self._remote.refresh([key for key in partitions if key not in hosted])

    def offsets(self, partitions: Collection[TopicPartition]
                ) -> Mapping[TopicPartition, LogOffsets]:
        hosted = self._replicas.partitions()
        found = {}
        elsewhere = []
        for key in partitions:
            partition = hosted.get(key)
            if partition is not None:
                partition_log = partition.log
                found[key] = LogOffsets(partition_log.log_start_offset,
                                        partition_log.high_watermark)
            else:
                elsewhere.append(key)
        self._age = 0.0
        if elsewhere and self._remote is not None:
            remote, self._age = self._remote.offsets(elsewhere)
            found.update(remote)
        return found

    def end_offsets_age(self) -> float:
        return self._age

    def timestamp_at(self, topic: str, partition: int, offset: int) -> int | None:
        """The base timestamp of the batch holding ``offset``: the header's 8 bytes, not the
        batch (a timestamp at or before the record's, so lag in seconds is never hidden)."""
        hosted = self._replicas.partitions().get((topic, partition))  # type: ignore[call-overload]
        if hosted is None:
            return None
        try:
            region = hosted.log.read(offset, 1, isolation_high_watermark=True,
                                     min_one_batch=True).region
            if region is None or region.length < _BASE_TIMESTAMP_AT + 8:
                return None
            header = region.file.pread(8, region.position + _BASE_TIMESTAMP_AT)
        except Exception as exc:  # deleted by retention meanwhile, or a closed segment
            log.debug("metrics: no timestamp for %s-%d@%d: %s", topic, partition, offset, exc)
            return None
        return int(_BASE_TIMESTAMP.unpack(header)[0]) if len(header) == 8 else None


class StorageObserver:
    """The log manager's :class:`~odradek.storage.log_manager.LogManagerObserver`: flush and
    fsync latency, recovery at start-up and cleaner passes, into the broker's recorders."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        storage, cleaner = metrics.storage, metrics.cleaner
        self.flushed = storage.flushed
        self.fsynced = storage.fsynced
        self.recovered = storage.recovered
        self._cleaner = cleaner

    def cleaned(self, seconds: float, *, read_bytes: int, written_bytes: int) -> None:
        self._cleaner.ran(seconds, read_bytes=read_bytes, written_bytes=written_bytes)

    def cleaner_failed(self) -> None:
        self._cleaner.failed()
