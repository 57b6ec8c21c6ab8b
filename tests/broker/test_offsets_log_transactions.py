"""Loading ``__consumer_offsets`` with transactional offset commits: committed ones are
replayed at their COMMIT marker, aborted ones never, open ones handed back as pending."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from odradek.broker.offsets_log import ReplicatedOffsetsLog
from odradek.protocol.control_records import ControlType, TxnMarker, encode_marker_batch
from odradek.protocol.records import Record, encode_batch
from odradek.storage import LogConfig, PartitionLog, open_log
from odradek.types import TopicPartition


class _LocalLogs:
    """The one method ReplicatedOffsetsLog reads through: the local log of a partition."""

    def __init__(self, log: PartitionLog) -> None:
        self.log = log

    def local_log(self, key: TopicPartition) -> PartitionLog | None:
        return self.log if key.partition == 0 else None


def _txn(log: PartitionLog, pid: int, value: bytes) -> None:
    log.append(encode_batch([Record(timestamp=1, key=b"k-" + value, value=value)],
                            producer_id=pid, producer_epoch=0, is_transactional=True),
               leader_epoch=0)


def _end(log: PartitionLog, pid: int, commit: bool) -> None:
    marker = TxnMarker(pid, 0, ControlType.COMMIT if commit else ControlType.ABORT, 0)
    log.append(encode_marker_batch(marker, 1), leader_epoch=0, from_coordinator=True)


def test_replay_applies_committed_drops_aborted_and_returns_open(tmp_path: Path) -> None:
    log = open_log(tmp_path / "__consumer_offsets-0", LogConfig())
    log.append(encode_batch([Record(timestamp=1, key=b"k-plain", value=b"plain")]),
               leader_epoch=0)
    _txn(log, 1, b"committed")
    _txn(log, 2, b"aborted")
    _txn(log, 3, b"open")
    _end(log, 2, commit=False)
    _end(log, 1, commit=True)
    offsets_log = ReplicatedOffsetsLog(_LocalLogs(log))  # type: ignore[arg-type]
    replayed: list[Any] = [record.value for record in offsets_log.read_all(0)]
    assert replayed == [b"plain", b"committed"]
    open_txns = offsets_log.open_transactions(0)
    assert {pid: [r.value for r in records] for pid, records in open_txns.items()} == {
        3: [b"open"]}
    assert offsets_log.open_transactions(0) == {}  # handed over once
