"""Transactional offset commits of one offsets partition, held until their marker (sans-IO).

A TxnOffsetCommit is validated like an OffsetCommit and written at once, as part of the
producer's transaction, but its offsets must not be seen until the transaction commits:
Kafka's ``pendingTransactionalOffsetCommits``. So its records wait here, per producer id,
until the transaction's marker reaches the offsets partition: COMMIT hands them back to be
replayed into the groups, ABORT drops them. Meanwhile OffsetFetch with ``require_stable``
answers their partitions UNSTABLE_OFFSET_COMMIT (:meth:`PendingTxnOffsets.unstable`), so a
consumer taking over a partition waits for the transaction instead of reading the offset
from before it.

On load, the transactions still open in the partition's log become pending again
(:meth:`~odradek.coordinator.offsets_log.OffsetsLog.open_transactions`).
"""

from __future__ import annotations

from odradek.protocol.records import Record
from odradek.types import TopicPartition

from .offsets_topic_format import OffsetCommitKey, decode_key

__all__ = ["PendingTxnOffsets"]


class PendingTxnOffsets:
    def __init__(self, by_producer: dict[int, list[Record]] | None = None) -> None:
        self._by_producer: dict[int, list[Record]] = by_producer or {}

    def add(self, producer_id: int, records: list[Record]) -> None:
        """Records of ``producer_id``'s open transaction, written to the log."""
        self._by_producer.setdefault(producer_id, []).extend(records)

    def complete(self, producer_id: int, commit: bool) -> list[Record]:
        """The transaction's marker is in the log: its records to replay if it committed
        (none if it aborted); either way they are no longer pending."""
        records = self._by_producer.pop(producer_id, [])
        return records if commit else []

    def unstable(self, group_id: str) -> set[TopicPartition]:
        """Partitions of ``group_id`` with a transactional commit still pending."""
        unstable = set()
        for records in self._by_producer.values():
            for record in records:
                key = decode_key(record.key) if record.key is not None else None
                if isinstance(key, OffsetCommitKey) and key.group == group_id:
                    unstable.add(TopicPartition(key.topic, key.partition))
        return unstable
