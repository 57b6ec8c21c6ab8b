"""Byte compatibility with an independent Kafka implementation (kafka-python's record module).

kafka-python compresses with its own libraries (python-snappy with xerial framing, lz4,
zstandard — dev dependencies), independent of the cramjam codecs odradek uses, so every codec
is checked both ways.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.record import MemoryRecords, MemoryRecordsBuilder

from odradek.protocol.records import Record, encode_batch
from tests.storage.helpers import BASE_TS, all_records, new_log, small_config


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_kafka_python_reads_segments_written_by_odradek(
    tmp_path: Path, codec: int
) -> None:
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
    tmp_path: Path, codec: int
) -> None:
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
