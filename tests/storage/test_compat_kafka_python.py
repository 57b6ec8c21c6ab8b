"""Byte compatibility with an independent Kafka implementation (kafka-python's record module).

kafka-python in this environment has gzip only (no python-snappy, lz4 or zstandard). For
snappy we give it a stand-in ``snappy`` module backed by cramjam's raw snappy, so its own
xerial framing code is exercised against ours. lz4 and zstd cannot be checked against
kafka-python here (it would only call the same frame libraries we do); those tests skip.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import cramjam
import pytest

kafka_codec = pytest.importorskip("kafka.codec")
from kafka.record import MemoryRecords, MemoryRecordsBuilder  # noqa: E402

from odradek.protocol.records import Record, encode_batch  # noqa: E402
from tests.storage.helpers import BASE_TS, all_records, new_log, small_config  # noqa: E402

UNAVAILABLE = {3: "lz4", 4: "zstd"}


@pytest.fixture
def codec_support(monkeypatch: pytest.MonkeyPatch) -> None:
    if not kafka_codec.has_snappy():
        fake = SimpleNamespace(
            compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data))),
            decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))),
        )
        monkeypatch.setattr(kafka_codec, "snappy", fake)


def _skip_unavailable(codec: int) -> None:
    if codec in UNAVAILABLE:
        pytest.skip(f"kafka-python here has no {UNAVAILABLE[codec]} library to compare with")


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_kafka_python_reads_segments_written_by_odradek(
    tmp_path: Path, codec: int, codec_support: None
) -> None:
    _skip_unavailable(codec)
    log = new_log(tmp_path, small_config(segment_bytes=1 << 20))
    expected = []
    for b in range(10):
        records = [
            Record(
                timestamp=BASE_TS + b * 10 + i,
                key=None if i == 0 else b"key-%d-%d" % (b, i),
                value=None if i == 1 else b"value-%d-%d" % (b, i) * 5,
                headers=[("h", b"x%d" % i), ("empty", None)],
            )
            for i in range(4)
        ]
        info = log.append(encode_batch(records, compression=codec), leader_epoch=5)
        for i, record in enumerate(records):
            expected.append(
                (info.first_offset + i, record.timestamp, record.key, record.value, record.headers)
            )
    log.close()
    segment = (log.dir / "00000000000000000000.log").read_bytes()
    parsed = []
    memory = MemoryRecords(segment)
    while memory.has_next():
        batch = memory.next_batch()
        assert batch.validate_crc()
        for record in batch:
            parsed.append(
                (record.offset, record.timestamp, record.key, record.value, list(record.headers))
            )
    assert parsed == expected


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_batches_built_by_kafka_python_are_appended_and_read_back(
    tmp_path: Path, codec: int, codec_support: None
) -> None:
    _skip_unavailable(codec)
    log = new_log(tmp_path, small_config(segment_bytes=1 << 20))
    expected = []
    for b in range(5):
        builder = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 20)
        for i in range(6):
            key, value = b"k%d" % i, b"v-%d-%d" % (b, i) * 20
            builder.append(BASE_TS + i, key, value, [("hdr", b"%d" % i)])
            expected.append((key, value, [("hdr", b"%d" % i)], BASE_TS + i))
        builder.close()
        info = log.append(bytes(builder.buffer()), leader_epoch=0)
        assert info.record_count == 6
    got = [(r.key, r.value, r.headers, r.timestamp) for r in all_records(log)]
    assert got == expected
    assert [r.offset for r in all_records(log)] == list(range(30))
