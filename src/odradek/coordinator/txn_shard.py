"""Every transactional id of one ``__transaction_state`` partition (sans-IO).

Why a shard: as with groups (:mod:`odradek.coordinator.shard`), the broker leading
transaction-state partition *p* coordinates exactly the ids that hash to *p*
(:func:`~odradek.coordinator.partitioning.partition_for_transactional_id`), so the shard
is what is rebuilt when leadership arrives. State is only ever changed by applying the
records that were written to the log (:meth:`TxnShard.apply`), so the cache and the log
cannot disagree, and a new coordinator after a failover has exactly the state the old one
had committed.

After loading, :meth:`TxnShard.unfinished` names the work the previous coordinator may
have left half done: transactions in PrepareCommit/PrepareAbort whose markers must be
(re)sent before they can be completed — markers are idempotent per partition, so sending
them again is safe — and :meth:`TxnShard.timed_out` the ongoing transactions to abort.
:meth:`TxnShard.expired` the idle ids ``transactional.id.expiration.ms`` removes, and
:meth:`TxnShard.listing` answers ListTransactions' filters.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from odradek.protocol.records import Record

from .txn_log_format import (
    MalformedTransactionRecord,
    TxnStatus,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
)
from .txn_state import TxnMetadata, is_expired, is_timed_out

__all__ = ["TxnShard", "kafka_state_name", "txn_record", "txn_tombstone"]

log = logging.getLogger(__name__)

_PREPARED = (TxnStatus.PREPARE_COMMIT, TxnStatus.PREPARE_ABORT)


def txn_record(meta: TxnMetadata, timestamp_ms: int) -> Record:
    """The ``__transaction_state`` record that stores ``meta`` (keyed by its id)."""
    return Record(timestamp=timestamp_ms, key=encode_txn_key(meta.transactional_id),
                  value=encode_txn_value(meta.to_log_value()))


def txn_tombstone(transactional_id: str, timestamp_ms: int) -> Record:
    """The record that removes an expired id (compaction later drops its older values)."""
    return Record(timestamp=timestamp_ms, key=encode_txn_key(transactional_id), value=None)


@dataclass
class TxnShard:
    partition: int
    transactions: dict[str, TxnMetadata] = field(default_factory=dict)

    def apply(self, record: Record) -> None:
        """Replay one record: a value sets the id's state, a tombstone removes the id. A
        record this coordinator cannot decode is logged and skipped (another writer's
        newer format must not stop the partition from loading)."""
        if record.key is None:
            return
        try:
            transactional_id = decode_txn_key(record.key)
            if record.value is None:
                self.transactions.pop(transactional_id, None)
                return
            value = decode_txn_value(record.value)
        except MalformedTransactionRecord as exc:
            log.warning("__transaction_state-%d: skipping record at %d: %s",
                        self.partition, record.offset, exc)
            return
        self.transactions[transactional_id] = TxnMetadata.from_log_value(transactional_id,
                                                                          value)

    def replay(self, records: Iterable[Record]) -> None:
        for record in records:
            self.apply(record)

    def get(self, transactional_id: str) -> TxnMetadata | None:
        return self.transactions.get(transactional_id)

    def unfinished(self) -> Iterator[TxnMetadata]:
        """Transactions whose markers may not all be written (PrepareCommit/PrepareAbort)."""
        return (meta for meta in self.transactions.values() if meta.status in _PREPARED)

    def timed_out(self, now_ms: int) -> Iterator[TxnMetadata]:
        return (meta for meta in self.transactions.values() if is_timed_out(meta, now_ms))

    def expired(self, now_ms: int, expiration_ms: int) -> Iterator[TxnMetadata]:
        return (meta for meta in self.transactions.values()
                if is_expired(meta, now_ms, expiration_ms))

    def listing(
        self, states: Iterable[str] = (), producer_ids: Iterable[int] = ()
    ) -> Iterator[TxnMetadata]:
        """ListTransactions: empty filters match everything; states are Kafka's names
        (``Ongoing``, ``PrepareCommit``, ...), unknown ones match nothing."""
        wanted_states = {_status_by_name(name) for name in states}
        wanted_pids = set(producer_ids)
        for meta in self.transactions.values():
            if wanted_states and meta.status not in wanted_states:
                continue
            if wanted_pids and meta.producer_id not in wanted_pids:
                continue
            yield meta


_KAFKA_NAMES = {
    TxnStatus.EMPTY: "Empty",
    TxnStatus.ONGOING: "Ongoing",
    TxnStatus.PREPARE_COMMIT: "PrepareCommit",
    TxnStatus.PREPARE_ABORT: "PrepareAbort",
    TxnStatus.COMPLETE_COMMIT: "CompleteCommit",
    TxnStatus.COMPLETE_ABORT: "CompleteAbort",
    TxnStatus.DEAD: "Dead",
    TxnStatus.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}


def kafka_state_name(status: TxnStatus) -> str:
    """The name DescribeTransactions/ListTransactions report for ``status``."""
    return _KAFKA_NAMES[status]


def _status_by_name(name: str) -> TxnStatus | None:
    for status, kafka_name in _KAFKA_NAMES.items():
        if kafka_name == name:
            return status
    return None
