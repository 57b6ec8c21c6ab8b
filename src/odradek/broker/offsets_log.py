"""The group coordinator's :class:`~odradek.coordinator.OffsetsLog` on real partitions.

``append`` writes one RecordBatch v2 to the local leader of a ``__consumer_offsets``
partition through the replica manager, exactly as an acks=-1 Produce would (refused up front
when the ISR is below ``min.insync.replicas``), and resolves only once the high watermark
covers the batch: an offset commit or a SyncGroup assignment acknowledged before that could
vanish on failover. The wait is a delayed operation in the produce purgatory, so follower
fetches that move the high watermark wake it; losing leadership meanwhile fails it with
NOT_LEADER_OR_FOLLOWER (the coordinator turns that into NOT_COORDINATOR).

``read_all`` replays the local log up to its *log end*, not the high watermark. That is what
Kafka's GroupMetadataManager does and the only safe choice right after a failover: a newly
elected leader's high watermark can lag records the old leader had already committed (the
follower learns the HW one fetch later), and stopping at it would forget acknowledged
commits. Everything in a new leader's log stays: followers truncate to the leader, never
the other way round.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from odradek.coordinator.partitioning import CONSUMER_OFFSETS_TOPIC
from odradek.protocol.errors import NotLeaderOrFollower
from odradek.protocol.records import Record, decode_batches, encode_batch
from odradek.types import TopicPartition

from .delayed import DelayedOperation
from .replica_manager import Partition, ReplicaManager

__all__ = ["ReplicatedOffsetsLog"]

_READ_CHUNK_BYTES = 1 << 20


class _DelayedOffsetsAppend(DelayedOperation[bool]):
    """Completes True once the HW reaches ``required``, False if leadership moved — even if
    it came back: our log may have been truncated in between (same rule as acks=-1)."""

    def __init__(self, partition: Partition, required: int) -> None:
        super().__init__()
        self._partition = partition
        self._required = required
        self._generation = _leader_generation(partition)

    def try_complete(self) -> bool:
        partition = self._partition
        if not partition.is_leader or _leader_generation(partition) != self._generation:
            self.complete(False)
            return True
        if self._partition.log.high_watermark >= self._required:
            self.complete(True)
            return True
        return False

    def on_expire(self) -> None:
        # The coordinator bounds the wait itself (offsets.commit.timeout.ms); this timer is
        # only a backstop, and an unfinished append counts as not committed.
        self.complete(False)


def _leader_generation(partition: Partition) -> int:
    return int(getattr(partition, "leader_generation", 0))


class ReplicatedOffsetsLog:
    """``__consumer_offsets`` as the broker's replica manager holds it."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        *,
        topic: str = CONSUMER_OFFSETS_TOPIC,
        commit_timeout_ms: int = 5_000,
    ) -> None:
        self._replica_manager = replica_manager
        self._topic = topic
        self._commit_timeout_s = commit_timeout_ms / 1000

    async def append(self, partition: int, records: list[Record]) -> None:
        replica_manager = self._replica_manager
        leader = replica_manager.leader_partition(self._topic, partition)
        leader.check_enough_replicas()
        info = leader.log.append(encode_batch(records), leader_epoch=leader.leader_epoch)
        replica_manager.after_append(leader)
        required = info.last_offset + 1
        if leader.log.high_watermark >= required:
            return
        operation = _DelayedOffsetsAppend(leader, required)
        committed = await replica_manager.produce_purgatory.try_complete_else_watch(
            operation, [leader.key], self._commit_timeout_s
        )
        if not committed:
            raise NotLeaderOrFollower(
                f"{self._topic}-{partition}: append at {info.first_offset} not committed "
                "before leadership moved or the commit timeout passed"
            )

    def read_all(self, partition: int) -> Iterator[Record]:
        found = self._replica_manager.partitions().get(TopicPartition(self._topic, partition))
        if found is None:
            return iter(())
        return _records_until_end(found.log)


def _records_until_end(log: Any) -> Iterator[Record]:
    """Every data record of ``log`` from its start to the log end at the time of the call."""
    end = int(log.log_end_offset)
    offset = int(log.log_start_offset)
    while offset < end:
        result = log.read(offset, _READ_CHUNK_BYTES, isolation_high_watermark=False)
        if result.region is None:
            return
        next_offset = offset
        for header, records in decode_batches(result.region.read_bytes()):
            next_offset = header.last_offset + 1
            if header.is_control:
                continue
            for record in records:
                if offset <= record.offset < end:
                    yield record
        if next_offset <= offset:
            return
        offset = next_offset
