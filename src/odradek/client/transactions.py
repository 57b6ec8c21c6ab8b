"""The transactional producer's requests: InitProducerId with a ``transactional.id``,
AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn, and the calls built on them
(``init_transactions`` ... ``abort_transaction``).

Every decision about *whether* a call is legal and what an error does to the transaction is
:mod:`.txn_state`'s; this module does the I/O. The transaction coordinator is found with
FindCoordinator key type 1 (TRANSACTION) and looked up again after NOT_COORDINATOR or
COORDINATOR_NOT_AVAILABLE; CONCURRENT_TRANSACTIONS (the previous transaction's markers are
still being written) and COORDINATOR_LOAD_IN_PROGRESS are retried with backoff, all within
``max.block.ms`` (then :class:`TimeoutError`; the call may be repeated).

How it fits the sender (:mod:`.sender`): the sender asks :meth:`TransactionManager.add_partitions`
for the partitions it is about to drain that the transaction does not hold yet, all at once
per send round (the Java client's batching), and drains only those the coordinator accepted.
Produce requests carry the ``transactional.id``, batches the transactional bit and the
sequence numbers of the idempotent path under the epoch InitProducerId returned. A failed
batch makes the transaction abortable; PRODUCER_FENCED / INVALID_PRODUCER_EPOCH make the
producer unusable.

After an abort the producer asks InitProducerId for a new epoch (KIP-360, passing its id and
epoch so it is not treated as a new instance): batches failed or dropped in the aborted
transaction may have used sequence numbers the broker never saw, and a new epoch starts every
partition's sequence at 0 again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kio.schema.errors import ErrorCode

from odradek.clock import monotonic_s
from odradek.protocol.api_versions import ApiKey

from .errors import BrokerResponseError, KafkaClientError
from .metadata import TopicPartition
from .txn_state import (
    REDISCOVER_CODES,
    TransactionAbortable,
    TxnState,
    TxnStateMachine,
    classify,
    fatal_error,
)

if TYPE_CHECKING:
    from .cluster_client import ClusterClient


class ProducerIdHolder(Protocol):
    """What the transaction manager needs of the sender (:class:`.sender.Sender`): the
    producer id and epoch its batches carry. A Protocol, since the sender holds this manager
    in turn: no import cycle, not even for type checking."""

    producer_id: int
    producer_epoch: int

    def use_producer_id(self, producer_id: int, producer_epoch: int) -> None: ...

__all__ = ["ConsumerGroupMetadata", "ProducerIdHolder", "TransactionManager"]

log = logging.getLogger(__name__)

#: FindCoordinator key types.
_GROUP, _TRANSACTION = 0, 1

#: Group coordinator answers to TxnOffsetCommit that are retried (after a new lookup for the
#: first two).
_GROUP_RETRY = frozenset({
    ErrorCode.not_coordinator, ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_load_in_progress, ErrorCode.concurrent_transactions,
    ErrorCode.unknown_topic_or_partition, ErrorCode.request_timed_out,
    ErrorCode.unstable_offset_commit,
})


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """What ``send_offsets_to_transaction`` needs of the consuming group: its id and, for a
    group member, the generation and member id (so a member that was rebalanced out cannot
    commit: ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID abort the transaction)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class TransactionManager:
    """The I/O of one transactional producer (owned by :class:`~.producer.AsyncProducer`)."""

    def __init__(self, transactional_id: str, transaction_timeout_ms: int,
                 client: ClusterClient, sender: ProducerIdHolder, max_block_ms: int,
                 retry_backoff_ms: int) -> None:
        self.machine = TxnStateMachine(transactional_id)
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.client = client
        self.sender = sender
        self.max_block = max_block_ms / 1000
        self.backoff = retry_backoff_ms / 1000
        self._coordinator: int | None = None
        #: One transactional call at a time (the sender's AddPartitionsToTxn included).
        self.lock = asyncio.Lock()

    # ------------------------------------------------------------------ requests

    async def _coordinator_node(self, key: str, key_type: int) -> int:
        if key_type == _TRANSACTION and self._coordinator is not None:
            return self._coordinator
        node = await self.client.find_coordinator(key, key_type=key_type)
        if key_type == _TRANSACTION:
            self._coordinator = node
        return node

    async def _call(self, what: str, api_key: int, body: Mapping[str, Any],
                    error_of: Callable[[Any], int], *, key: str | None = None,
                    key_type: int = _TRANSACTION,
                    retry: frozenset[ErrorCode] | None = None) -> Any:
        """Send to the coordinator until the answer is not retriable or ``max.block.ms``
        passes. Returns the response once its error (``error_of``) is NONE; raises
        :class:`BrokerResponseError` for any other answer."""
        deadline = monotonic_s() + self.max_block
        attempt = 0
        last: BaseException | None = None
        while True:
            code = ErrorCode.none
            try:
                node = await self._coordinator_node(key or self.transactional_id, key_type)
                response = await self.client.send(node, api_key, body)
                code = ErrorCode(error_of(response))
            except KafkaClientError as exc:
                if not exc.retriable:
                    raise
                last = exc
                if key_type == _TRANSACTION:
                    self._coordinator = None
            else:
                if code == ErrorCode.none:
                    return response
                error = BrokerResponseError(code, what)
                retriable = code in retry if retry is not None else classify(code) == "retry"
                if not retriable:
                    raise error
                last = error
                if code in REDISCOVER_CODES and key_type == _TRANSACTION:
                    self._coordinator = None
            attempt += 1
            delay = min(self.backoff * attempt, 1.0)
            if monotonic_s() + delay >= deadline:
                raise TimeoutError(f"{what} for transactional.id {self.transactional_id!r} "
                                   f"not done within max.block.ms: {last}")
            log.debug("%s: %s; retrying in %.2fs", what, last, delay)
            await asyncio.sleep(delay)

    async def _init_producer_id(self, expected: tuple[int, int] | None) -> None:
        pid, epoch = expected if expected is not None else (-1, -1)
        response = await self._call("InitProducerId", ApiKey.INIT_PRODUCER_ID, {
            "transactional_id": self.transactional_id,
            "transaction_timeout": self.transaction_timeout_ms,
            "producer_id": pid, "producer_epoch": epoch,
        }, lambda r: int(r.error_code))
        self.sender.use_producer_id(int(response.producer_id), int(response.producer_epoch))
        log.info("transactional.id %r: producer id %d epoch %d", self.transactional_id,
                 self.sender.producer_id, self.sender.producer_epoch)

    def _ids(self) -> dict[str, Any]:
        return {"transactional_id": self.transactional_id,
                "producer_id": self.sender.producer_id,
                "producer_epoch": self.sender.producer_epoch}

    async def add_partitions(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        """Add ``tps`` to the open transaction (one AddPartitionsToTxn); returns those the
        transaction now holds. Called by the sender before it drains them; an error that
        is not retriable fails the transaction (abortable or fatal) and returns []."""
        missing = self.machine.missing(tps)
        if not missing:
            return list(tps)
        if self.machine.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            return []
        by_topic: dict[str, list[int]] = {}
        for tp in missing:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        body = {**self._ids(), "v3_and_below_transactional_id": self.transactional_id,
                "v3_and_below_producer_id": self.sender.producer_id,
                "v3_and_below_producer_epoch": self.sender.producer_epoch,
                "v3_and_below_topics": [{"name": t, "partitions": p}
                                        for t, p in by_topic.items()]}
        try:
            async with self.lock:
                await self._call("AddPartitionsToTxn", ApiKey.ADD_PARTITIONS_TO_TXN, body,
                                 _add_partitions_error)
        except BrokerResponseError as exc:
            self.machine.on_error(exc)
            return []
        except (TimeoutError, KafkaClientError) as exc:
            self.machine.abortable(exc)
            return []
        self.machine.added(missing)
        return list(tps)

    # ------------------------------------------------------------------ the API

    async def init_transactions(self) -> None:
        self.machine.require(TxnState.UNINITIALIZED, action="init_transactions")
        async with self.lock:
            try:
                await self._init_producer_id(None)
            except BrokerResponseError as exc:
                if classify(exc.code) == "fatal":
                    self.machine.fatal(exc)
                    raise fatal_error(exc) from exc
                raise
        self.machine.initialized()

    def begin_transaction(self) -> None:
        self.machine.begin()

    async def send_offsets_to_transaction(
            self, offsets: Mapping[TopicPartition, int],
            group_metadata: ConsumerGroupMetadata | str) -> None:
        """AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to the
        group's coordinator: the offsets become the group's committed offsets only if the
        transaction commits."""
        group = (group_metadata if isinstance(group_metadata, ConsumerGroupMetadata)
                 else ConsumerGroupMetadata(group_metadata))
        self.machine.check_sendable()
        async with self.lock:
            try:
                await self._call("AddOffsetsToTxn", ApiKey.ADD_OFFSETS_TO_TXN,
                                 {**self._ids(), "group_id": group.group_id},
                                 lambda r: int(r.error_code))
                self.machine.offsets_added = True
                topics: dict[str, list[dict[str, Any]]] = {}
                for tp, offset in offsets.items():
                    topics.setdefault(tp.topic, []).append({
                        "partition_index": tp.partition, "committed_offset": offset,
                        "committed_leader_epoch": -1, "committed_metadata": ""})
                await self._call("TxnOffsetCommit", ApiKey.TXN_OFFSET_COMMIT, {
                    **self._ids(), "group_id": group.group_id,
                    "generation_id": group.generation_id, "member_id": group.member_id,
                    "group_instance_id": group.group_instance_id,
                    "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
                }, _txn_offset_commit_error, key=group.group_id, key_type=_GROUP,
                    retry=_GROUP_RETRY)
            except BrokerResponseError as exc:
                self.machine.on_error(exc)
                raise self._failure(exc) from exc

    async def commit_transaction(self, flush: Callable[[], Awaitable[None]]) -> None:
        """Flush every record of the transaction, then EndTxn(commit)."""
        self.machine.begin_commit()
        try:
            await flush()
        except TimeoutError as exc:
            self.machine.abortable(exc)
        # A batch that failed made the transaction abortable: this raises that error.
        self.machine.require(TxnState.COMMITTING, action="commit_transaction")
        await self._end(commit=True)

    async def abort_transaction(self, drop_queued: Callable[[BaseException], None],
                                wait_in_flight: Callable[[], Awaitable[None]]) -> None:
        """Fail what is still queued, wait for what is in flight, then EndTxn(abort) and a
        new epoch (see the module docstring)."""
        self.machine.begin_abort()
        drop_queued(TransactionAbortable("the transaction was aborted"))
        await wait_in_flight()
        await self._end(commit=False)

    async def _end(self, commit: bool) -> None:
        what = "EndTxn(commit)" if commit else "EndTxn(abort)"
        async with self.lock:
            try:
                if self.machine.needs_end_txn:
                    await self._call(what, ApiKey.END_TXN, {**self._ids(), "committed": commit},
                                     lambda r: int(r.error_code))
                if not commit:
                    await self._init_producer_id((self.sender.producer_id,
                                                  self.sender.producer_epoch))
            except BrokerResponseError as exc:
                if classify(exc.code) == "fatal":
                    self.machine.fatal(exc)
                    raise fatal_error(exc) from exc
                if commit:
                    self.machine.abortable(exc)
                    raise self._failure(exc) from exc
                raise
        self.machine.completed()

    def _failure(self, exc: BrokerResponseError) -> KafkaClientError:
        if self.machine.state is TxnState.FATAL_ERROR:
            return fatal_error(exc)
        abortable = TransactionAbortable(f"transaction must be aborted: {exc}")
        abortable.__cause__ = exc
        return abortable


def _add_partitions_error(response: Any) -> int:
    """The first partition error of an AddPartitionsToTxn answer (v0-v3); one refusal
    refuses them all (the others say OPERATION_NOT_ATTEMPTED)."""
    codes = [int(part.partition_error_code)
             for topic in response.results_by_topic_v3_and_below
             for part in topic.results_by_partition]
    real = [c for c in codes if c not in (ErrorCode.none, ErrorCode.operation_not_attempted)]
    return real[0] if real else (codes[0] if codes and codes[0] else ErrorCode.none)


def _txn_offset_commit_error(response: Any) -> int:
    for topic in response.topics:
        for part in topic.partitions:
            if int(part.error_code):
                return int(part.error_code)
    return ErrorCode.none
