"""One transactional id's state and the coordinator's rules for changing it (sans-IO).

Why pure: every rule here decides what to write to ``__transaction_state`` and what to
answer, and the coordinator must apply exactly the same transitions when it serves a
request, when it replays the log after a failover, and when a timeout fires; keeping them
free of I/O lets tests drive every path without brokers.

The state machine is Kafka's (``TransactionState``; the table :data:`VALID_PREVIOUS` is
everything that constrains it)::

    Empty/CompleteCommit/CompleteAbort --AddPartitions--> Ongoing
    Ongoing --EndTxn(commit)--> PrepareCommit --markers written--> CompleteCommit
    Ongoing --EndTxn(abort) or timeout--> PrepareAbort --markers written--> CompleteAbort
    Ongoing --InitProducerId from a new instance--> PrepareEpochFence --> PrepareAbort

Each decision returns the metadata to write (the coordinator answers only once that record
is replicated) and, for Prepare*, the markers to send. Epochs: InitProducerId bumps the
epoch, so the previous instance's requests fail with PRODUCER_FENCED (its EndTxn/
AddPartitions) and INVALID_PRODUCER_EPOCH at the partitions; when the epoch would pass
``MAX_EPOCH`` a fresh producer id is taken at epoch 0. An id with an ongoing transaction
is fenced first: its transaction is aborted under a bumped epoch and the new instance is
told CONCURRENT_TRANSACTIONS, so it retries once the abort completes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from kio.schema.errors import ErrorCode

from odradek.types import TopicPartition

from .txn_log_format import TxnLogValue, TxnStatus

__all__ = [
    "MAX_EPOCH",
    "VALID_PREVIOUS",
    "TxnDecision",
    "TxnMetadata",
    "abort_timed_out",
    "add_partitions",
    "complete_end",
    "end_txn",
    "expire",
    "init_producer_id",
    "is_expired",
    "is_timed_out",
]

MAX_EPOCH = 2**15 - 2  # Kafka keeps Short.MaxValue for "bumped from the maximum"

S = TxnStatus
VALID_PREVIOUS: dict[TxnStatus, frozenset[TxnStatus]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
"""status -> the statuses it may be entered from."""

_COMPLETED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})
_PREPARING = frozenset({S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE})


class IllegalTransition(RuntimeError):
    """A transition :data:`VALID_PREVIOUS` forbids: a coordinator bug, never client input."""


@dataclass(frozen=True, slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: TxnStatus
    partitions: frozenset[TopicPartition] = frozenset()
    last_update_ms: int = -1
    start_ms: int = -1

    def to(self, status: TxnStatus, now_ms: int, **changes: object) -> TxnMetadata:
        if self.status not in VALID_PREVIOUS[status]:
            raise IllegalTransition(
                f"{self.transactional_id}: {self.status.name} -> {status.name}"
            )
        return replace(self, status=status, last_update_ms=now_ms, **changes)  # type: ignore[arg-type]

    def to_log_value(self) -> TxnLogValue:
        return TxnLogValue(self.producer_id, self.producer_epoch, self.timeout_ms, self.status,
                           self.partitions, self.last_update_ms, self.start_ms)

    @classmethod
    def from_log_value(cls, transactional_id: str, value: TxnLogValue) -> TxnMetadata:
        return cls(transactional_id, value.producer_id, value.producer_epoch,
                   value.timeout_ms, value.status, value.partitions, value.last_update_ms,
                   value.start_ms)


@dataclass(frozen=True, slots=True)
class TxnDecision:
    """What to answer, what to write first, and which markers to send after writing."""

    error: ErrorCode = ErrorCode.none
    write: TxnMetadata | None = None
    commit: bool | None = None  # markers to send for ``write.partitions`` (None: none)

    @property
    def sends_markers(self) -> bool:
        return self.commit is not None


def _refuse(error: ErrorCode) -> TxnDecision:
    return TxnDecision(error=error)


def init_producer_id(
    current: TxnMetadata | None,
    transactional_id: str,
    timeout_ms: int,
    now_ms: int,
    *,
    max_timeout_ms: int,
    new_producer_id: Callable[[], int],
    expected: tuple[int, int] | None = None,
) -> TxnDecision:
    """InitProducerId with a transactional id. ``expected`` is the (producer id, epoch) a
    v3+ client sends when it bumps its own epoch (KIP-360): it must be the current one, or
    the caller is a zombie (PRODUCER_FENCED) or not this id's producer at all."""
    if timeout_ms <= 0 or timeout_ms > max_timeout_ms:
        return _refuse(ErrorCode.invalid_transaction_timeout)
    if expected is not None and current is not None and current.status != S.DEAD:
        if expected[0] != current.producer_id:
            return _refuse(ErrorCode.invalid_producer_id_mapping)
        if expected[1] != current.producer_epoch:
            return _refuse(ErrorCode.producer_fenced)
    if current is None or current.status == S.DEAD:
        fresh = TxnMetadata(transactional_id, new_producer_id(), 0, timeout_ms, S.EMPTY,
                            last_update_ms=now_ms)
        return TxnDecision(write=fresh)
    if current.status in _PREPARING:
        return _refuse(ErrorCode.concurrent_transactions)
    if current.status == S.ONGOING:
        return _fence_and_abort(current, now_ms)
    if current.producer_epoch >= MAX_EPOCH:
        producer_id, epoch = new_producer_id(), 0
    else:
        producer_id, epoch = current.producer_id, current.producer_epoch + 1
    return TxnDecision(write=current.to(S.EMPTY, now_ms, producer_id=producer_id,
                                        producer_epoch=epoch, timeout_ms=timeout_ms,
                                        partitions=frozenset(), start_ms=-1))


def _fence_and_abort(current: TxnMetadata, now_ms: int) -> TxnDecision:
    """Abort ``current``'s transaction under a bumped epoch (Kafka goes through
    PrepareEpochFence in memory; what it writes is PrepareAbort with the new epoch), so the
    old instance is fenced at every partition by the markers themselves."""
    epoch = min(current.producer_epoch + 1, MAX_EPOCH + 1)
    fenced = current.to(S.PREPARE_EPOCH_FENCE, now_ms, producer_epoch=epoch)
    abort = fenced.to(S.PREPARE_ABORT, now_ms)
    return TxnDecision(error=ErrorCode.concurrent_transactions, write=abort, commit=False)


def _check_producer(current: TxnMetadata | None, producer_id: int,
                    epoch: int) -> ErrorCode | None:
    if current is None or current.status == S.DEAD:
        return ErrorCode.invalid_producer_id_mapping
    if current.producer_id != producer_id:
        return ErrorCode.invalid_producer_id_mapping
    if current.producer_epoch != epoch:
        return ErrorCode.producer_fenced
    return None


def add_partitions(
    current: TxnMetadata | None,
    producer_id: int,
    epoch: int,
    partitions: Iterable[TopicPartition],
    now_ms: int,
) -> TxnDecision:
    """AddPartitionsToTxn (and AddOffsetsToTxn, with the group's offsets partition)."""
    error = _check_producer(current, producer_id, epoch)
    if error is not None:
        return _refuse(error)
    assert current is not None
    if current.status in _PREPARING:
        return _refuse(ErrorCode.concurrent_transactions)
    wanted = frozenset(partitions)
    if current.status == S.ONGOING and wanted <= current.partitions:
        return TxnDecision()  # a retry: nothing new to write
    start = current.start_ms if current.status == S.ONGOING else now_ms
    return TxnDecision(write=current.to(S.ONGOING, now_ms, partitions=current.partitions | wanted,
                                        start_ms=start))


def end_txn(
    current: TxnMetadata | None, producer_id: int, epoch: int, commit: bool, now_ms: int
) -> TxnDecision:
    """EndTxn: Ongoing -> Prepare{Commit,Abort} and markers; retries of a finished end
    succeed; anything else is INVALID_TXN_STATE or, while an end is in flight,
    CONCURRENT_TRANSACTIONS."""
    error = _check_producer(current, producer_id, epoch)
    if error is not None:
        return _refuse(error)
    assert current is not None
    status = current.status
    if status == S.ONGOING:
        target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        return TxnDecision(write=current.to(target, now_ms), commit=commit)
    finished = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
    preparing = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
    if status == finished:
        return TxnDecision()
    if status == preparing:
        return _refuse(ErrorCode.concurrent_transactions)
    return _refuse(ErrorCode.invalid_txn_state)


def complete_end(current: TxnMetadata, now_ms: int) -> TxnMetadata:
    """Every marker of a Prepare{Commit,Abort} is written: the transaction is complete."""
    if current.status == S.PREPARE_COMMIT:
        return current.to(S.COMPLETE_COMMIT, now_ms, partitions=frozenset())
    return current.to(S.COMPLETE_ABORT, now_ms, partitions=frozenset())


def is_timed_out(current: TxnMetadata, now_ms: int) -> bool:
    """An Ongoing transaction older than its ``transaction.timeout.ms``."""
    return current.status == S.ONGOING and now_ms - current.start_ms > current.timeout_ms


def abort_timed_out(current: TxnMetadata, now_ms: int) -> TxnDecision:
    """The coordinator aborts a timed-out transaction under a bumped epoch, so the producer
    that let it time out is fenced if it comes back (Kafka does the same)."""
    decision = _fence_and_abort(current, now_ms)
    return replace(decision, error=ErrorCode.none)


def is_expired(current: TxnMetadata, now_ms: int, expiration_ms: int) -> bool:
    """``transactional.id.expiration.ms``: an id with no transaction in progress whose state
    was last written that long ago (Kafka measures from the last update, too)."""
    return current.status in _COMPLETED and current.last_update_ms <= now_ms - expiration_ms


def expire(current: TxnMetadata, now_ms: int) -> TxnMetadata:
    """The id's last state, Dead: what it is while its tombstone is written (the tombstone,
    not this state, is what ``__transaction_state`` stores; once written the id is gone and
    a later InitProducerId starts afresh with a new producer id)."""
    return current.to(S.DEAD, now_ms)
