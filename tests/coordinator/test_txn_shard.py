"""Rebuilding transaction state from ``__transaction_state``: replay, compaction, failover
work (markers to resend, timeouts) and ListTransactions filters."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.coordinator.txn_log_format import TxnStatus, encode_txn_key
from odradek.coordinator.txn_shard import TxnShard, kafka_state_name, txn_record
from odradek.coordinator.txn_state import (
    TxnMetadata,
    add_partitions,
    complete_end,
    end_txn,
    init_producer_id,
)
from odradek.protocol.records import Record, decode_batches, encode_batch
from odradek.storage import LogConfig, PartitionLog, open_log
from odradek.storage.cleaner import clean_log
from odradek.types import TopicPartition

TP = TopicPartition("out", 0)


def _write(log: PartitionLog, meta: TxnMetadata, now: int) -> None:
    log.append(encode_batch([txn_record(meta, now)]), leader_epoch=0)


def _replay(log: PartitionLog, partition: int = 0) -> TxnShard:
    shard = TxnShard(partition)
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        region = log.read(offset, 1 << 20, isolation_high_watermark=False).region
        assert region is not None
        for header, records in decode_batches(region.read_bytes()):
            shard.replay(records)
            offset = header.next_offset
    return shard


def _history(ids: itertools.count[int], transactional_id: str, steps: int,
             now: int) -> list[TxnMetadata]:
    """The records a coordinator writes for one id: init, then add/commit/abort rounds."""
    written: list[TxnMetadata] = []
    decision = init_producer_id(None, transactional_id, 1000, now, max_timeout_ms=10_000,
                                new_producer_id=lambda: next(ids))
    assert decision.write is not None
    meta = decision.write
    written.append(meta)
    for step in range(steps):
        now += 10
        added = add_partitions(meta, meta.producer_id, meta.producer_epoch, [TP], now).write
        assert added is not None
        written.append(added)
        prepared = end_txn(added, meta.producer_id, meta.producer_epoch, step % 2 == 0, now)
        assert prepared.write is not None
        written.append(prepared.write)
        meta = complete_end(prepared.write, now + 1)
        written.append(meta)
    return written


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=5), st.integers(0, 3))
def test_replay_and_compaction_rebuild_the_last_committed_state(
    steps_per_id: list[int], cut: int
) -> None:
    """Whatever was written, a new coordinator replaying the log - before or after the
    cleaner compacted it - has each id's last state; an id whose last record is a
    PrepareCommit is reported as unfinished, so its markers are sent again."""
    import tempfile

    ids = itertools.count(1)
    with tempfile.TemporaryDirectory() as tmp:
        config = LogConfig(segment_bytes=1024, cleanup_policy="compact",
                           min_cleanable_dirty_ratio=0.0)
        log = open_log(Path(tmp) / "__transaction_state-0", config)
        expected: dict[str, TxnMetadata] = {}
        for number, steps in enumerate(steps_per_id):
            history = _history(ids, f"tx-{number}", steps, 1_000 * number)
            if number == 0 and steps and cut:
                history = history[: len(history) - (cut % 2) - 1]  # stop mid-transaction
            for meta in history:
                _write(log, meta, meta.last_update_ms)
            expected[meta.transactional_id] = history[-1]
        shard = _replay(log)
        assert shard.transactions == expected
        log.roll()
        log.update_high_watermark(log.log_end_offset)
        clean_log(log, 0)
        assert _replay(log).transactions == expected
        unfinished = {m.transactional_id for m in shard.unfinished()}
        assert unfinished == {t for t, m in expected.items()
                              if m.status in (TxnStatus.PREPARE_COMMIT, TxnStatus.PREPARE_ABORT)}
        log.close()


def test_tombstones_remove_ids_and_undecodable_records_are_skipped() -> None:
    shard = TxnShard(3)
    meta = TxnMetadata("gone", 5, 0, 1000, TxnStatus.EMPTY, last_update_ms=1)
    shard.apply(txn_record(meta, 1))
    assert shard.get("gone") == meta
    shard.apply(Record(key=b"\x00\x07junk", value=b"x"))  # unknown key version
    shard.apply(Record(key=encode_txn_key("bad"), value=b"\x00\x00\x01"))  # truncated value
    shard.apply(Record(key=None, value=b"x"))
    assert set(shard.transactions) == {"gone"}
    shard.apply(Record(key=encode_txn_key("gone"), value=None))
    assert shard.transactions == {}


def test_timed_out_and_listing_filters() -> None:
    shard = TxnShard(0)
    ongoing = TxnMetadata("a", 1, 0, 1000, TxnStatus.ONGOING, frozenset({TP}), 0, 0)
    empty = TxnMetadata("b", 2, 0, 1000, TxnStatus.EMPTY, last_update_ms=0)
    committing = TxnMetadata("c", 3, 0, 1000, TxnStatus.PREPARE_COMMIT, frozenset({TP}), 0, 0)
    for meta in (ongoing, empty, committing):
        shard.apply(txn_record(meta, 0))
    assert [m.transactional_id for m in shard.timed_out(1001)] == ["a"]
    assert list(shard.timed_out(1000)) == []
    assert {m.transactional_id for m in shard.listing()} == {"a", "b", "c"}
    assert [m.transactional_id for m in shard.listing(states=["Ongoing"])] == ["a"]
    assert [m.transactional_id for m in shard.listing(producer_ids=[2, 3],
                                                      states=["PrepareCommit"])] == ["c"]
    assert list(shard.listing(states=["NoSuchState"])) == []
    assert kafka_state_name(TxnStatus.PREPARE_EPOCH_FENCE) == "PrepareEpochFence"
