"""Apache Kafka's own tool (``kafka.tools.DumpLogSegments`` 3.9) reads our segments and indexes.

Needs Java and Apache Kafka's jars (fetched once from Maven Central by the test harness);
skips with the reason when they are unavailable.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from odradek.protocol.records import Record, encode_batch
from odradek.storage import LogConfig, open_log
from odradek.storage.cleaner import clean_log
from tests.harness.apache_kafka import ApacheKafka

pytestmark = pytest.mark.java


@pytest.fixture(scope="module")
def kafka_libs() -> Path:
    kafka = ApacheKafka()
    libs = kafka.fetch_jars()
    if libs is None:
        pytest.skip(f"Apache Kafka tools unavailable: {kafka.unavailable_reason}")
    return libs


def _dump(libs: Path, *files: Path) -> str:
    proc = subprocess.run(
        [
            "java",
            "-cp",
            f"{libs}/*",
            "kafka.tools.DumpLogSegments",
            "--deep-iteration",
            "--print-data-log",
            "--files",
            ",".join(str(f) for f in files),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_kafka_dump_log_reads_every_codec_and_our_indexes(tmp_path: Path, kafka_libs: Path) -> None:
    log = open_log(tmp_path / "dump-0", LogConfig(segment_bytes=1 << 20, index_interval_bytes=200))
    for i in range(25):
        records = [
            Record(timestamp=1_700_000_000_000 + i, key=b"k%d-%d" % (i, j), value=b"v%d" % i * 50)
            for j in range(3)
        ]
        log.append(
            encode_batch(
                records, compression=i % 5, producer_id=7, producer_epoch=0, base_sequence=3 * i
            ),
            leader_epoch=2,
        )
    log.close()
    base = tmp_path / "dump-0" / "00000000000000000000"
    out = _dump(
        kafka_libs,
        base.with_suffix(".log"),
        base.with_suffix(".index"),
        base.with_suffix(".timeindex"),
    )
    batches = re.findall(r"baseOffset: (\d+) lastOffset: (\d+) count: 3 .*isvalid: true", out)
    assert [(int(a), int(b)) for a, b in batches] == [(3 * i, 3 * i + 2) for i in range(25)]
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert f"compresscodec: {codec}" in out
    assert len(re.findall(r"^\| offset: \d+ .*key: k", out, re.MULTILINE)) == 75
    assert "payload: v24" in out
    assert "partitionLeaderEpoch: 2" in out
    assert "Mismatches" not in out and "mismatch" not in out.lower()
    assert re.search(r"^offset: \d+ position: \d+$", out, re.MULTILINE), "offset index entries"
    assert re.search(r"^timestamp: \d+ offset: \d+$", out, re.MULTILINE), "time index entries"


def test_kafka_dump_log_reads_compacted_segments(tmp_path: Path, kafka_libs: Path) -> None:
    config = LogConfig(segment_bytes=4096, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)
    log = open_log(tmp_path / "compacted-0", config)
    for i in range(60):
        records = [
            Record(timestamp=1_700_000_000_000 + i, key=b"key-%d" % ((i + j) % 7), value=b"%d" % i)
            for j in range(3)
        ]
        log.append(encode_batch(records, compression=i % 5), leader_epoch=0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert clean_log(log, 0) is not None
    log.close()
    files = sorted((tmp_path / "compacted-0").glob("*.log"))
    out = _dump(kafka_libs, *files)
    assert "isvalid: false" not in out
    keys = re.findall(r"^\| offset: \d+ .*key: (key-\d)", out, re.MULTILINE)
    assert sorted(keys) == sorted({f"key-{k}" for k in range(7)}), "one record per key"


def test_kafka_dump_log_reads_markers_txn_index_and_snapshot(
    tmp_path: Path, kafka_libs: Path
) -> None:
    """Our control batches, ``.txnindex`` and transactional ``.snapshot`` entries, as Kafka's
    tool decodes them (its own classes for EndTransactionMarker, AbortedTxn, snapshots)."""
    from odradek.protocol.control_records import ControlType, TxnMarker, encode_marker_batch

    log = open_log(tmp_path / "txn-0", LogConfig(segment_bytes=1 << 20))

    def data(pid: int, seq: int) -> bytes:
        return encode_batch([Record(timestamp=1_700_000_000_000, key=b"k", value=b"v")],
                            producer_id=pid, producer_epoch=1, base_sequence=seq,
                            is_transactional=True)

    log.append(data(41, 0), leader_epoch=0)  # offset 0
    log.append(data(42, 0), leader_epoch=0)  # offset 1
    abort = encode_marker_batch(TxnMarker(41, 1, ControlType.ABORT, 6), 1_700_000_000_001)
    log.append(abort, leader_epoch=0, from_coordinator=True)  # offset 2
    log.append(data(43, 0), leader_epoch=0)  # offset 3, left open
    log.close()  # writes 00000000000000000004.snapshot
    directory = tmp_path / "txn-0"
    out = _dump(kafka_libs, directory / "00000000000000000000.log",
                directory / "00000000000000000000.txnindex",
                directory / "00000000000000000004.snapshot")
    assert "isvalid: false" not in out
    assert re.search(r"baseOffset: 2 .*producerId: 41 producerEpoch: 1 .*isTransactional: true "
                     r"isControl: true", out), out
    assert re.search(r"endTxnMarker: ABORT coordinatorEpoch: 6", out), out
    assert re.search(r"version: 0 producerId: 41 firstOffset: 0 lastOffset: 2 "
                     r"lastStableOffset: 1", out), out
    assert "producerId: 41 producerEpoch: 1 coordinatorEpoch: 6 currentTxnFirstOffset: " \
        "OptionalLong.empty" in out  # its transaction ended with the abort
    assert "producerId: 43 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: " \
        "OptionalLong[3]" in out
