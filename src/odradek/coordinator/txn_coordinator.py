"""The asyncio face of the transaction coordinator: per-id serialization, log writes,
markers, timeouts and failover.

All decisions are the pure rules of :mod:`odradek.coordinator.txn_state`; this adapter

* serializes the requests of one transactional id (one ``asyncio.Lock`` each), so a
  decision is always taken on the state the log last committed;
* writes each decided state to ``__transaction_state`` (acks=all, through the same
  :class:`~odradek.coordinator.offsets_log.OffsetsLog` the group coordinator uses) and
  applies it to the :class:`~odradek.coordinator.txn_shard.TxnShard` only once written —
  a request is answered after its record is replicated, never before;
* ends transactions in the background, as Kafka does: EndTxn is answered once
  PrepareCommit/PrepareAbort is written; the markers are then written to every partition
  (:class:`MarkerWriter`, retried until done) and CompleteCommit/CompleteAbort recorded.
  Meanwhile the id answers CONCURRENT_TRANSACTIONS, which clients retry;
* aborts transactions older than their timeout every
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms``;
* removes ids idle for ``transactional.id.expiration.ms`` (no transaction in progress) every
  ``transaction.remove.expired.transaction.cleanup.interval.ms``: the id goes Dead, its
  tombstone is written (acks=all) and only then is it dropped from the shard, so a failed
  write leaves the id as it was;
* loads a partition's shard when this broker becomes its leader and resumes whatever the
  previous coordinator left prepared (markers are idempotent per partition), and drops it
  on resignation (NOT_COORDINATOR).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from odradek.clock import monotonic_s, wall_ms
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.types import TopicPartition

from .append_errors import append_error_to_coordinator_error
from .offsets_log import OffsetsLog
from .partitioning import partition_for_transactional_id
from .txn_log_format import TxnStatus
from .txn_shard import TxnShard, kafka_state_name, txn_record, txn_tombstone
from .txn_state import (
    MAX_EPOCH,
    TxnDecision,
    TxnMetadata,
    abort_timed_out,
    add_partitions,
    complete_end,
    end_txn,
    expire,
    init_producer_id,
)

__all__ = ["MarkerWriter", "TransactionCoordinator", "TxnCoordinatorConfig", "TxnObserver"]

log = logging.getLogger(__name__)


class MarkerWriter(Protocol):
    """Writes one transaction's markers to all its partitions; returns when every partition
    has it (or no longer needs it), retrying meanwhile."""

    async def write_markers(self, producer_id: int, producer_epoch: int, commit: bool,
                            coordinator_epoch: int,
                            partitions: frozenset[TopicPartition]) -> None: ...


class TxnObserver(Protocol):
    """What the coordinator reports as it goes (the broker's transaction metrics)."""

    def started(self) -> None: ...

    def completed(self, *, committed: bool) -> None: ...

    def timed_out(self) -> None: ...

    def markers_written(self, seconds: float) -> None: ...


class _NoObserver:
    def started(self) -> None:
        pass

    def completed(self, *, committed: bool) -> None:
        pass

    def timed_out(self) -> None:
        pass

    def markers_written(self, seconds: float) -> None:
        pass


@dataclass(frozen=True, slots=True)
class TxnCoordinatorConfig:
    num_partitions: int = 50
    max_timeout_ms: int = 900_000
    cleanup_interval_ms: int = 10_000
    transactional_id_expiration_ms: int = 604_800_000
    remove_expired_interval_ms: int = 3_600_000


@dataclass
class _Slot:
    shard: TxnShard
    loaded: bool = False
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    def lock(self, transactional_id: str) -> asyncio.Lock:
        found = self.locks.get(transactional_id)
        if found is None:
            found = self.locks[transactional_id] = asyncio.Lock()
        return found


@dataclass(frozen=True, slots=True)
class InitResult:
    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


class TransactionCoordinator:
    def __init__(
        self,
        config: TxnCoordinatorConfig,
        txn_log: OffsetsLog,
        markers: MarkerWriter,
        new_producer_id: Callable[[], Awaitable[int]],
        coordinator_epoch: Callable[[int], int],
        observer: TxnObserver | None = None,
    ) -> None:
        self.config = config
        self._observer: TxnObserver = observer or _NoObserver()
        self._log = txn_log
        self._markers = markers
        self._new_producer_id = new_producer_id
        self._coordinator_epoch = coordinator_epoch
        self._slots: dict[int, _Slot] = {}
        self._periodic: list[asyncio.Task[None]] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._periodic = [
            loop.create_task(self._every(self.config.cleanup_interval_ms,
                                         self.abort_timed_out_once,
                                         "aborting timed-out transactions")),
            loop.create_task(self._every(self.config.remove_expired_interval_ms,
                                         self.remove_expired_once,
                                         "removing expired transactional ids")),
        ]

    async def close(self) -> None:
        tasks = [task for slot in self._slots.values() for task in slot.tasks]
        tasks += self._periodic
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._slots.clear()

    # Leadership ----------------------------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        return partition_for_transactional_id(transactional_id, self.config.num_partitions)

    def on_become_leader(self, partition: int) -> None:
        """Load the partition in the background (COORDINATOR_LOAD_IN_PROGRESS meanwhile)."""
        slot = self._slots[partition] = _Slot(TxnShard(partition))
        self._spawn(slot, self._load(slot))

    async def _load(self, slot: _Slot) -> None:
        partition = slot.shard.partition
        for count, record in enumerate(self._log.read_all(partition), 1):
            slot.shard.apply(record)
            if count % 1000 == 0:
                await asyncio.sleep(0)  # a large partition must not stall other requests
        if self._slots.get(partition) is not slot:
            return
        slot.loaded = True
        log.info("loaded %d transactional ids from __transaction_state-%d",
                 len(slot.shard.transactions), partition)
        for meta in list(slot.shard.unfinished()):
            log.info("__transaction_state-%d: resuming %s of %s", partition, meta.status.name,
                     meta.transactional_id)
            self._spawn(slot, self._complete(slot, meta))

    def on_resign(self, partition: int) -> None:
        slot = self._slots.pop(partition, None)
        if slot is not None:
            for task in slot.tasks:
                task.cancel()

    def _slot(self, transactional_id: str) -> _Slot:
        slot = self._slots.get(self.partition_for(transactional_id))
        if slot is None:
            raise _Refused(ErrorCode.not_coordinator)
        if not slot.loaded:
            raise _Refused(ErrorCode.coordinator_load_in_progress)
        return slot

    # Requests ------------------------------------------------------------------------------
    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None = None) -> InitResult:
        try:
            slot = self._slot(transactional_id)
            async with slot.lock(transactional_id):
                current = slot.shard.get(transactional_id)
                fresh = -1
                if current is None or current.producer_epoch >= MAX_EPOCH:
                    fresh = await self._new_producer_id()
                decision = init_producer_id(
                    current, transactional_id, timeout_ms, wall_ms(),
                    max_timeout_ms=self.config.max_timeout_ms, new_producer_id=lambda: fresh,
                    expected=expected,
                )
                await self._apply(slot, decision)
        except _Refused as refused:
            return InitResult(refused.error)
        if decision.error != ErrorCode.none or decision.write is None:
            return InitResult(decision.error)
        return InitResult(ErrorCode.none, decision.write.producer_id,
                          decision.write.producer_epoch)

    async def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                             partitions: Iterable[TopicPartition]) -> ErrorCode:
        wanted = frozenset(partitions)
        return await self._decide(
            transactional_id,
            lambda current: add_partitions(current, producer_id, epoch, wanted, wall_ms()),
        )

    async def end_txn(self, transactional_id: str, producer_id: int, epoch: int,
                      commit: bool) -> ErrorCode:
        return await self._decide(
            transactional_id,
            lambda current: end_txn(current, producer_id, epoch, commit, wall_ms()),
        )

    async def _decide(self, transactional_id: str,
                      rule: Callable[[TxnMetadata | None], TxnDecision]) -> ErrorCode:
        try:
            slot = self._slot(transactional_id)
            async with slot.lock(transactional_id):
                decision = rule(slot.shard.get(transactional_id))
                await self._apply(slot, decision)
        except _Refused as refused:
            return refused.error
        return decision.error

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TxnMetadata | None]:
        try:
            slot = self._slot(transactional_id)
        except _Refused as refused:
            return refused.error, None
        found = slot.shard.get(transactional_id)
        return (ErrorCode.none, found) if found is not None else (
            ErrorCode.transactional_id_not_found, None)

    def listing(self, states: Iterable[str], producer_ids: Iterable[int]
                ) -> Iterator[TxnMetadata]:
        states, producer_ids = list(states), list(producer_ids)
        for slot in list(self._slots.values()):
            if slot.loaded:
                yield from slot.shard.listing(states, producer_ids)

    def transaction_states(self) -> dict[str, int]:
        """Transactional ids by Kafka state name over the loaded partitions (metrics)."""
        counts: Counter[str] = Counter()
        for slot in list(self._slots.values()):
            if slot.loaded:
                counts.update(kafka_state_name(meta.status)
                              for meta in slot.shard.transactions.values())
        return dict(counts)

    # Writing and ending ----------------------------------------------------------------------
    async def _apply(self, slot: _Slot, decision: TxnDecision) -> None:
        """Write the decided state (under the id's lock); start its markers once written."""
        meta = decision.write
        if meta is None:
            return
        previous = slot.shard.get(meta.transactional_id)
        await self._write(slot, meta)
        if meta.status == TxnStatus.ONGOING and (
                previous is None or previous.status != TxnStatus.ONGOING):
            self._observer.started()
        if decision.sends_markers:
            self._spawn(slot, self._complete(slot, meta))

    async def _write(self, slot: _Slot, meta: TxnMetadata) -> None:
        record = txn_record(meta, wall_ms())
        try:
            await self._log.append(slot.shard.partition, [record])
        except KafkaError as exc:
            log.warning("writing %s of %s failed: %s", meta.status.name,
                        meta.transactional_id, exc)
            raise _Refused(append_error_to_coordinator_error(exc.code)) from exc
        if self._slots.get(slot.shard.partition) is slot:
            slot.shard.apply(record)

    async def _complete(self, slot: _Slot, prepared: TxnMetadata) -> None:
        """Markers for a Prepare{Commit,Abort}, then Complete{Commit,Abort}."""
        commit = prepared.status == TxnStatus.PREPARE_COMMIT
        began = monotonic_s()
        await self._markers.write_markers(
            prepared.producer_id, prepared.producer_epoch, commit,
            self._coordinator_epoch(slot.shard.partition), prepared.partitions,
        )
        self._observer.markers_written(monotonic_s() - began)
        async with slot.lock(prepared.transactional_id):
            current = slot.shard.get(prepared.transactional_id)
            if current != prepared:
                return  # resigned or changed meanwhile: the new owner finishes it
            with contextlib.suppress(_Refused):  # resumed by the next coordinator
                await self._write(slot, complete_end(current, wall_ms()))
                self._observer.completed(committed=commit)

    async def abort_timed_out_once(self) -> int:
        """Abort every timed-out transaction this broker coordinates; returns how many."""
        count = 0
        now = wall_ms()
        for slot in list(self._slots.values()):
            if not slot.loaded:
                continue
            for meta in list(slot.shard.timed_out(now)):
                async with slot.lock(meta.transactional_id):
                    if slot.shard.get(meta.transactional_id) != meta:
                        continue
                    log.info("aborting timed-out transaction of %s (producer %d)",
                             meta.transactional_id, meta.producer_id)
                    with contextlib.suppress(_Refused):
                        await self._apply(slot, abort_timed_out(meta, now))
                        self._observer.timed_out()
                        count += 1
        return count

    async def remove_expired_once(self) -> int:
        """Write a tombstone for every id idle past ``transactional.id.expiration.ms``
        (state Dead meanwhile) and forget it; returns how many were removed."""
        count = 0
        now = wall_ms()
        expiration = self.config.transactional_id_expiration_ms
        for slot in list(self._slots.values()):
            if not slot.loaded:
                continue
            for meta in list(slot.shard.expired(now, expiration)):
                async with slot.lock(meta.transactional_id):
                    if slot.shard.get(meta.transactional_id) != meta:
                        continue  # used meanwhile
                    dead = expire(meta, now)
                    tombstone = txn_tombstone(dead.transactional_id, now)
                    try:
                        await self._log.append(slot.shard.partition, [tombstone])
                    except KafkaError as exc:
                        log.warning("expiring %s failed: %s", dead.transactional_id, exc)
                        continue
                    if self._slots.get(slot.shard.partition) is slot:
                        slot.shard.apply(tombstone)
                    log.info("transactional id %s expired (idle since %d)",
                             dead.transactional_id, meta.last_update_ms)
                    count += 1
        return count

    async def _every(self, period_ms: int, task: Callable[[], Awaitable[int]],
                     what: str) -> None:
        while True:
            await asyncio.sleep(period_ms / 1000)
            try:
                await task()
            except Exception:
                log.exception("%s failed", what)

    def _spawn(self, slot: _Slot, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        slot.tasks.add(task)
        task.add_done_callback(slot.tasks.discard)
        task.add_done_callback(_log_failure)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("transaction completion failed", exc_info=task.exception())


class _Refused(Exception):
    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error
