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
from collections.abc import Awaitable, Iterator

from kio.schema.errors import ErrorCode

from odradek.coordinator.partitioning import CONSUMER_OFFSETS_TOPIC
from odradek.protocol.control_records import ControlType, control_type_of_key
from odradek.protocol.errors import error_for_code
from odradek.protocol.records import Record, decode_batches, encode_batch
from odradek.replication import Acks, AppendResults, ReplicaManager
from odradek.storage import PartitionLog
from odradek.types import TopicPartition

__all__ = ["ReplicatedOffsetsLog"]

_READ_CHUNK_BYTES = 1 << 20


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
        self._open: dict[int, dict[int, list[Record]]] = {}

    async def append(self, partition: int, records: list[Record],
                     producer: tuple[int, int] | None = None) -> None:
        pending = self.start_append(partition, records, producer)
        if pending is not None:
            await pending

    def start_append(self, partition: int, records: list[Record],
                     producer: tuple[int, int] | None = None) -> Awaitable[None] | None:
        key = TopicPartition(self._topic, partition)
        if producer is None:
            batch = encode_batch(records)
        else:  # TxnOffsetCommit: Kafka writes it with the producer's id, no sequence
            batch = encode_batch(records, producer_id=producer[0], producer_epoch=producer[1],
                                 is_transactional=True)
        outcome = self._replica_manager.append_records(
            {key: batch}, acks=Acks.ALL, timeout_ms=self._commit_timeout_ms,
            from_coordinator=True,  # no producer sequence on a TxnOffsetCommit batch
        )
        if isinstance(outcome, asyncio.Future):
            return self._committed(key, outcome)
        _raise_if_failed(key, outcome)
        return None

    async def _committed(self, key: TopicPartition,
                         outcome: asyncio.Future[AppendResults]) -> None:
        _raise_if_failed(key, await outcome)

    def read_all(self, partition: int) -> Iterator[Record]:
        found = self._replica_manager.local_log(TopicPartition(self._topic, partition))
        open_txns = self._open[partition] = {}
        if found is None:
            return iter(())
        return _records_until_end(found, open_txns)

    def open_transactions(self, partition: int) -> dict[int, list[Record]]:
        return self._open.pop(partition, {})


def _raise_if_failed(key: TopicPartition, results: AppendResults) -> None:
    result = results[key]
    if result.error != ErrorCode.none:
        raise error_for_code(
            result.error,
            f"{key}: offsets append not committed ({result.message or result.error.name})",
        )


def _records_until_end(log: PartitionLog, open_txns: dict[int, list[Record]]
                       ) -> Iterator[Record]:
    """Every data record of ``log`` from its start to the log end at the time of the call;
    a transaction's records only at its COMMIT marker (dropped at ABORT); the records of
    transactions still open at the end are left in ``open_txns``."""
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
                buffered = open_txns.pop(header.producer_id, [])
                if records and control_type_of_key(records[0].key) == ControlType.COMMIT:
                    yield from buffered
                continue
            wanted = [record for record in records if offset <= record.offset < end]
            if header.is_transactional:
                open_txns.setdefault(header.producer_id, []).extend(wanted)
            else:
                yield from wanted
        if next_offset <= offset:
            return
        offset = next_offset
