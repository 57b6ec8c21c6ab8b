"""The transaction coordinator's asyncio adapter: answers only after writes, markers then
Complete, resuming a predecessor's prepared transactions, timeouts, leadership."""

from __future__ import annotations

import asyncio
import itertools

from kio.schema.errors import ErrorCode

from odradek.coordinator.offsets_log import InMemoryOffsetsLog
from odradek.coordinator.txn_coordinator import TransactionCoordinator, TxnCoordinatorConfig
from odradek.coordinator.txn_log_format import TxnStatus
from odradek.coordinator.txn_shard import TxnShard, txn_record
from odradek.coordinator.txn_state import TxnMetadata
from odradek.protocol.errors import NotLeaderOrFollower
from odradek.types import TopicPartition

TP = TopicPartition("out", 0)


class RecordingMarkers:
    def __init__(self) -> None:
        self.sent: list[tuple[int, int, bool, int, frozenset[TopicPartition]]] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def write_markers(self, producer_id: int, producer_epoch: int, commit: bool,
                            coordinator_epoch: int,
                            partitions: frozenset[TopicPartition]) -> None:
        await self.gate.wait()
        self.sent.append((producer_id, producer_epoch, commit, coordinator_epoch, partitions))


def _coordinator(log: InMemoryOffsetsLog, markers: RecordingMarkers,
                 **config: int) -> TransactionCoordinator:
    ids = itertools.count(500)

    async def new_id() -> int:
        return next(ids)

    return TransactionCoordinator(TxnCoordinatorConfig(num_partitions=1, **config), log,
                                  markers, new_id, lambda partition: 7)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def _states(log: InMemoryOffsetsLog) -> list[TxnStatus]:
    shard = TxnShard(0)
    out = []
    for record in log.partitions[0]:
        shard.apply(record)
        out.append(next(iter(shard.transactions.values())).status)
    return out


def test_commit_writes_prepare_markers_then_complete() -> None:
    async def scenario() -> None:
        log, markers = InMemoryOffsetsLog(), RecordingMarkers()
        coordinator = _coordinator(log, markers)
        coordinator.on_become_leader(0)
        await _settle()
        init = await coordinator.init_producer_id("tx", 60_000)
        assert (init.error, init.producer_id, init.producer_epoch) == (ErrorCode.none, 500, 0)
        assert await coordinator.add_partitions("tx", 500, 0, [TP]) == ErrorCode.none
        markers.gate.clear()
        assert await coordinator.end_txn("tx", 500, 0, True) == ErrorCode.none
        # answered once PrepareCommit is written; the id is busy until the markers land
        assert _states(log)[-1] == TxnStatus.PREPARE_COMMIT
        assert await coordinator.add_partitions("tx", 500, 0, [TP]) == (
            ErrorCode.concurrent_transactions)
        markers.gate.set()
        await _settle()
        assert markers.sent == [(500, 0, True, 7, frozenset({TP}))]
        assert _states(log) == [TxnStatus.EMPTY, TxnStatus.ONGOING, TxnStatus.PREPARE_COMMIT,
                                TxnStatus.COMPLETE_COMMIT]
        await coordinator.close()

    asyncio.run(scenario())


def test_a_new_coordinator_resumes_prepared_transactions_from_the_log() -> None:
    async def scenario() -> None:
        log, markers = InMemoryOffsetsLog(), RecordingMarkers()
        prepared = TxnMetadata("tx", 9, 3, 60_000, TxnStatus.PREPARE_ABORT, frozenset({TP}),
                               5, 1)
        await log.append(0, [txn_record(prepared, 5)])
        coordinator = _coordinator(log, markers)
        coordinator.on_become_leader(0)
        await _settle()
        await _settle()
        assert markers.sent == [(9, 3, False, 7, frozenset({TP}))]
        assert _states(log)[-1] == TxnStatus.COMPLETE_ABORT
        await coordinator.close()

    asyncio.run(scenario())


def test_timed_out_transactions_are_aborted_and_the_producer_fenced() -> None:
    async def scenario() -> None:
        log, markers = InMemoryOffsetsLog(), RecordingMarkers()
        coordinator = _coordinator(log, markers)
        coordinator.on_become_leader(0)
        await _settle()
        init = await coordinator.init_producer_id("tx", 1)
        await coordinator.add_partitions("tx", init.producer_id, 0, [TP])
        await asyncio.sleep(0.01)
        assert await coordinator.abort_timed_out_once() == 1
        await _settle()
        assert markers.sent == [(500, 1, False, 7, frozenset({TP}))]
        assert await coordinator.end_txn("tx", 500, 0, True) == ErrorCode.producer_fenced
        await coordinator.close()

    asyncio.run(scenario())


def test_requests_outside_leadership_and_failed_writes() -> None:
    async def scenario() -> None:
        log, markers = InMemoryOffsetsLog(), RecordingMarkers()
        coordinator = _coordinator(log, markers)
        assert (await coordinator.init_producer_id("tx", 1000)).error == (
            ErrorCode.not_coordinator)
        coordinator.on_become_leader(0)
        await _settle()
        log.fail_next.append(NotLeaderOrFollower("moved"))
        assert (await coordinator.init_producer_id("tx", 1000)).error == (
            ErrorCode.not_coordinator)
        assert coordinator.describe("tx") == (ErrorCode.transactional_id_not_found, None)
        assert (await coordinator.init_producer_id("tx", 1000)).error == ErrorCode.none
        coordinator.on_resign(0)
        assert coordinator.describe("tx")[0] == ErrorCode.not_coordinator
        await coordinator.close()

    asyncio.run(scenario())


def test_requests_wait_for_the_partition_to_load() -> None:
    async def scenario() -> None:
        coordinator = _coordinator(InMemoryOffsetsLog(), RecordingMarkers())
        coordinator.on_become_leader(0)
        assert (await coordinator.init_producer_id("tx", 1000)).error == (
            ErrorCode.coordinator_load_in_progress)
        await _settle()
        assert (await coordinator.init_producer_id("tx", 1000)).error == ErrorCode.none
        await coordinator.close()

    asyncio.run(scenario())


def test_idle_transactional_ids_expire_with_a_tombstone_and_ongoing_ones_stay() -> None:
    async def scenario() -> None:
        log, markers = InMemoryOffsetsLog(), RecordingMarkers()
        coordinator = _coordinator(log, markers, transactional_id_expiration_ms=5)
        coordinator.on_become_leader(0)
        await _settle()
        idle = await coordinator.init_producer_id("idle", 60_000)
        busy = await coordinator.init_producer_id("busy", 60_000)
        assert await coordinator.add_partitions("busy", busy.producer_id, 0, [TP]) == (
            ErrorCode.none)
        await asyncio.sleep(0.02)
        assert await coordinator.remove_expired_once() == 1
        tombstone = log.partitions[0][-1]
        assert tombstone.value is None
        assert coordinator.describe("idle") == (ErrorCode.transactional_id_not_found, None)
        assert coordinator.describe("busy")[1] is not None
        # a reloaded coordinator sees the same: the tombstone removed the id
        shard = TxnShard(0)
        shard.replay(log.partitions[0])
        assert set(shard.transactions) == {"busy"}
        # the expired id starts afresh with a new producer id
        again = await coordinator.init_producer_id("idle", 60_000)
        assert again.error == ErrorCode.none and again.producer_id != idle.producer_id
        assert again.producer_epoch == 0
        await coordinator.close()

    asyncio.run(scenario())


def test_a_failed_tombstone_write_keeps_the_id() -> None:
    async def scenario() -> None:
        log, markers = InMemoryOffsetsLog(), RecordingMarkers()
        coordinator = _coordinator(log, markers, transactional_id_expiration_ms=1)
        coordinator.on_become_leader(0)
        await _settle()
        await coordinator.init_producer_id("tx", 60_000)
        await asyncio.sleep(0.01)
        log.fail_next.append(NotLeaderOrFollower("moved"))
        assert await coordinator.remove_expired_once() == 0
        assert coordinator.describe("tx")[0] == ErrorCode.none
        await coordinator.close()

    asyncio.run(scenario())
