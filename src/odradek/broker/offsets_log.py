"""The group coordinator's :class:`~odradek.coordinator.OffsetsLog` on real partitions.

``append`` writes one RecordBatch v2 to the local leader of a ``__consumer_offsets``
partition through the replica manager, exactly as an acks=-1 Produce does
(:meth:`ReplicaManager.append_records`: refused up front when the ISR is below
``min.insync.replicas``, resolved once the high watermark covers the batch). An offset
commit or a SyncGroup assignment acknowledged before that could vanish on failover. A
failed append raises the partition's error as a :class:`KafkaError` (losing leadership
meanwhile is NOT_LEADER_OR_FOLLOWER; the coordinator turns that into NOT_COORDINATOR).

``read_all`` replays the local log up to its *log end*, not the high watermark. That is what
Kafka's GroupMetadataManager does and the only safe choice right after a failover: a newly
elected leader's high watermark can lag records the old leader had already committed (the
follower learns the HW one fetch later), and stopping at it would forget acknowledged
commits. Everything in a new leader's log stays: followers truncate to the leader, never
the other way round.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from kio.schema.errors import ErrorCode

from odradek.coordinator.partitioning import CONSUMER_OFFSETS_TOPIC
from odradek.protocol.errors import error_for_code
from odradek.protocol.records import Record, decode_batches, encode_batch
from odradek.replication import ReplicaManager
from odradek.storage import PartitionLog
from odradek.types import TopicPartition

__all__ = ["ReplicatedOffsetsLog"]

_READ_CHUNK_BYTES = 1 << 20
_ALL_IN_SYNC = -1


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
        self._commit_timeout_ms = commit_timeout_ms

    async def append(self, partition: int, records: list[Record]) -> None:
        key = TopicPartition(self._topic, partition)
        outcome = self._replica_manager.append_records(
            {key: encode_batch(records)}, acks=_ALL_IN_SYNC, timeout_ms=self._commit_timeout_ms
        )
        results = await outcome if isinstance(outcome, asyncio.Future) else outcome
        result = results[key]
        if result.error != ErrorCode.none:
            raise error_for_code(
                result.error,
                f"{key}: offsets append not committed ({result.message or result.error.name})",
            )

    def read_all(self, partition: int) -> Iterator[Record]:
        found = self._replica_manager.local_log(TopicPartition(self._topic, partition))
        if found is None:
            return iter(())
        return _records_until_end(found)


def _records_until_end(log: PartitionLog) -> Iterator[Record]:
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
