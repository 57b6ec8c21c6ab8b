"""The transactional producer's state machine (sans-IO): which call is legal when, which
partitions still need AddPartitionsToTxn, and what a broker error does to the transaction.

Kept apart from the requests (:mod:`.transactions`) so the rules can be tested alone, against
a model, and so the sender and the application threads consult one object. The states and
transitions are the Java client's ``TransactionManager``'s:

* ``UNINITIALIZED`` → ``READY`` once InitProducerId answered (``init_transactions``);
* ``READY`` → ``IN_TRANSACTION`` (``begin_transaction``);
* ``IN_TRANSACTION`` → ``COMMITTING`` / ``ABORTING`` (``commit_transaction`` /
  ``abort_transaction``), and back to ``READY`` when EndTxn succeeded;
* an *abortable* error (a failed batch, an AddPartitionsToTxn refused, a commit whose flush
  failed) moves ``IN_TRANSACTION`` or ``COMMITTING`` to ``ABORTABLE_ERROR``, from which only
  ``abort_transaction`` leads on (to ``ABORTING``);
* a *fatal* error (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH: another producer with the same
  ``transactional.id`` took over) moves any state to ``FATAL_ERROR``, which is final: the
  producer can only be closed.

A commit or abort whose EndTxn did not get through in time stays ``COMMITTING`` /
``ABORTING``; calling the same method again resumes it (calling the other one is illegal),
as with the Java client.
"""

from __future__ import annotations

import enum

from kio.schema.errors import ErrorCode

from .errors import BrokerResponseError, KafkaClientError
from .metadata import TopicPartition

__all__ = [
    "FATAL_CODES",
    "RETRIABLE_CODES",
    "IllegalTransactionState",
    "TransactionAbortable",
    "TransactionFatal",
    "TxnState",
    "TxnStateMachine",
    "classify",
]


class TxnState(enum.Enum):
    UNINITIALIZED = "Uninitialized"
    READY = "Ready"
    IN_TRANSACTION = "InTransaction"
    COMMITTING = "Committing"
    ABORTING = "Aborting"
    ABORTABLE_ERROR = "AbortableError"
    FATAL_ERROR = "FatalError"


S = TxnState

#: state -> the states it may move to (FATAL_ERROR is reachable from everywhere).
_TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    S.UNINITIALIZED: frozenset({S.READY}),
    S.READY: frozenset({S.IN_TRANSACTION}),
    S.IN_TRANSACTION: frozenset({S.COMMITTING, S.ABORTING, S.ABORTABLE_ERROR}),
    S.COMMITTING: frozenset({S.READY, S.ABORTABLE_ERROR}),
    S.ABORTING: frozenset({S.READY}),
    S.ABORTABLE_ERROR: frozenset({S.ABORTING, S.ABORTABLE_ERROR}),
    S.FATAL_ERROR: frozenset(),
}

#: The producer was fenced or its epoch is stale: nothing it sends can be accepted again.
FATAL_CODES = frozenset({
    ErrorCode.producer_fenced, ErrorCode.invalid_producer_epoch,
    ErrorCode.transactional_id_authorization_failed, ErrorCode.invalid_producer_id_mapping,
    ErrorCode.unsupported_version, ErrorCode.invalid_txn_state,
    ErrorCode.cluster_authorization_failed,
})

#: Retried with backoff (the coordinator is busy, moving or loading; the connection broke).
RETRIABLE_CODES = frozenset({
    ErrorCode.concurrent_transactions, ErrorCode.coordinator_load_in_progress,
    ErrorCode.not_coordinator, ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out, ErrorCode.network_exception,
    ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
    ErrorCode.not_enough_replicas_after_append, ErrorCode.not_leader_or_follower,
})

#: Answers that need the coordinator looked up again before the retry.
REDISCOVER_CODES = frozenset({ErrorCode.not_coordinator, ErrorCode.coordinator_not_available})


def classify(code: int) -> str:
    """``"ok"``, ``"retry"``, ``"fatal"`` or ``"abortable"`` for a coordinator's answer."""
    if code == ErrorCode.none:
        return "ok"
    error = ErrorCode(code)
    if error in FATAL_CODES:
        return "fatal"
    if error in RETRIABLE_CODES:
        return "retry"
    return "abortable"


class IllegalTransactionState(KafkaClientError):
    """A transactional call made in a state that does not allow it (e.g. ``send`` outside a
    transaction, ``commit_transaction`` after an abortable error)."""


class TransactionAbortable(KafkaClientError):
    """The transaction failed and must be aborted (``abort_transaction``); the producer
    stays usable. ``__cause__`` is the error that failed it."""


class TransactionFatal(KafkaClientError):
    """The producer can no longer be used (fenced by a newer instance with the same
    ``transactional.id``, or not authorized): close it. ``__cause__`` says why."""


def fatal_error(error: BaseException) -> TransactionFatal:
    if isinstance(error, TransactionFatal):
        return error
    fatal = TransactionFatal(f"transactional producer failed fatally: {error}")
    fatal.__cause__ = error
    return fatal


class TxnStateMachine:
    """The state, the partitions of the open transaction, and the error that ended it."""

    def __init__(self, transactional_id: str) -> None:
        self.transactional_id = transactional_id
        self.state = S.UNINITIALIZED
        #: Partitions the coordinator knows are in the transaction.
        self.partitions: set[TopicPartition] = set()
        #: Whether AddOffsetsToTxn added a group (EndTxn is needed even with no partition).
        self.offsets_added = False
        self.error: BaseException | None = None

    # ------------------------------------------------------------------ transitions

    def _move(self, to: TxnState) -> None:
        if to is not S.FATAL_ERROR and to not in _TRANSITIONS[self.state]:
            raise IllegalTransactionState(
                f"transactional.id {self.transactional_id!r}: cannot go from "
                f"{self.state.value} to {to.value}")
        self.state = to

    def require(self, *states: TxnState, action: str) -> None:
        """Raise unless in one of ``states``: the fatal error, the abortable error, or
        :class:`IllegalTransactionState` naming ``action``."""
        if self.state in states:
            return
        if self.state is S.FATAL_ERROR:
            raise fatal_error(self.error or KafkaClientError("fatal error"))
        if self.state is S.ABORTABLE_ERROR and S.ABORTABLE_ERROR not in states:
            abortable = TransactionAbortable(
                f"cannot {action}: the transaction failed and must be aborted "
                f"({self.error})")
            abortable.__cause__ = self.error
            raise abortable
        raise IllegalTransactionState(
            f"cannot {action} in state {self.state.value} "
            f"(transactional.id {self.transactional_id!r})")

    def initialized(self) -> None:
        self.require(S.UNINITIALIZED, action="init_transactions")
        self._move(S.READY)

    def begin(self) -> None:
        self.require(S.READY, action="begin_transaction")
        self._move(S.IN_TRANSACTION)
        self.partitions.clear()
        self.offsets_added = False

    def check_sendable(self) -> None:
        """``send`` is legal only inside a transaction that has not failed."""
        self.require(S.IN_TRANSACTION, action="send")

    def begin_commit(self) -> None:
        if self.state is S.COMMITTING:
            return  # resuming a commit that timed out
        self.require(S.IN_TRANSACTION, action="commit_transaction")
        self._move(S.COMMITTING)

    def begin_abort(self) -> None:
        if self.state is S.ABORTING:
            return  # resuming an abort that timed out
        self.require(S.IN_TRANSACTION, S.ABORTABLE_ERROR, action="abort_transaction")
        self._move(S.ABORTING)

    def completed(self) -> None:
        """EndTxn succeeded (or was not needed): ready for the next transaction."""
        self._move(S.READY)
        self.partitions.clear()
        self.offsets_added = False
        self.error = None

    @property
    def may_drain(self) -> bool:
        """May the sender send batches now (a live transaction, or one being committed)?"""
        return self.state in (S.IN_TRANSACTION, S.COMMITTING)

    @property
    def needs_end_txn(self) -> bool:
        """Did the coordinator learn of this transaction (else EndTxn would be refused)?"""
        return bool(self.partitions) or self.offsets_added

    # ------------------------------------------------------------------ errors

    def abortable(self, error: BaseException) -> None:
        """A failure the application recovers from by aborting. Ignored once fatal, and
        while aborting (the abort discards that work anyway)."""
        if self.state in (S.IN_TRANSACTION, S.COMMITTING, S.ABORTABLE_ERROR):
            if self.state is not S.ABORTABLE_ERROR or self.error is None:
                self.error = error
            self._move(S.ABORTABLE_ERROR)

    def fatal(self, error: BaseException) -> None:
        if self.state is not S.FATAL_ERROR:
            self.error = error
        self._move(S.FATAL_ERROR)

    def on_error(self, error: BrokerResponseError) -> None:
        """Apply a broker answer that failed the transaction (not a retriable one)."""
        if classify(error.code) == "fatal":
            self.fatal(error)
        else:
            self.abortable(error)

    # ------------------------------------------------------------------ partitions

    def missing(self, tps: set[TopicPartition] | list[TopicPartition]) -> list[TopicPartition]:
        """Those of ``tps`` not yet added to the transaction, in a stable order."""
        return sorted(set(tps) - self.partitions)

    def added(self, tps: list[TopicPartition]) -> None:
        self.partitions.update(tps)
