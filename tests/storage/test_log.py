"""PartitionLog: appends, reads, lookups, rolling, truncation, epochs."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from odradek.protocol.errors import (
    CorruptRecord,
    InvalidConfig,
    InvalidRecord,
    InvalidTimestamp,
    MessageTooLarge,
    OffsetOutOfRange,
    RecordListTooLarge,
)
from odradek.protocol.legacy_records import encode_legacy_message
from odradek.protocol.records import (
    Record,
    decode_batch,
    encode_batch,
    iter_batch_headers,
    parse_batch_header,
)
from odradek.storage import LogConfig, open_log
from odradek.storage.segment import segment_file_name
from tests.storage.helpers import BASE_TS, all_records, batch, new_log, read_all, small_config


def test_append_assigns_consecutive_offsets_and_rewrites_base_offset(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    first = log.append(batch([b"a", b"b", b"c"]), leader_epoch=3)
    second = log.append(batch([b"d"]), leader_epoch=3)
    assert (first.first_offset, first.last_offset, first.record_count) == (0, 2, 3)
    assert (second.first_offset, second.last_offset) == (3, 3)
    assert log.log_end_offset == 4
    raw = (log.dir / segment_file_name(0, ".log")).read_bytes()
    headers = [h for _p, h in iter_batch_headers(raw)]
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 3), (3, 3)]
    assert [r.value for r in all_records(log)] == [b"a", b"b", b"c", b"d"]


def test_read_respects_high_watermark_and_bounds(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    for i in range(5):
        log.append(batch([b"x%d" % i]), leader_epoch=0)
    assert log.read(0, 1000).region is None  # high watermark still 0
    log.update_high_watermark(3)
    result = log.read(0, 1 << 20)
    assert result.region is not None
    offsets = [h.base_offset for _p, h in iter_batch_headers(result.region.read_bytes())]
    assert offsets == [0, 1, 2], "a read must stop at the high watermark"
    assert log.read(3, 1000).region is None  # at the high watermark: empty
    assert log.read(4, 1000).region is None  # between hw and log end: empty, not an error
    with pytest.raises(OffsetOutOfRange):
        log.read(6, 1000)
    assert log.read(5, 1000, isolation_high_watermark=False).region is None
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 1000)


def test_read_is_aligned_to_batches_and_returns_first_batch_even_if_too_large(
    tmp_path: Path,
) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=1 << 20))
    sizes = []
    for i in range(20):
        data = batch([bytes(100 + i)])
        sizes.append(len(data))
        log.append(data, leader_epoch=0)
    tiny = log.read(0, 10, isolation_high_watermark=False)
    assert tiny.region is not None and tiny.region.length == sizes[0]
    assert log.read(0, 10, isolation_high_watermark=False, min_one_batch=False).region is None
    budget = sizes[0] + sizes[1] + sizes[2] + 5
    result = log.read(0, budget, isolation_high_watermark=False)
    assert result.region is not None
    assert result.region.length == sizes[0] + sizes[1] + sizes[2]
    assert result.next_offset == 3


def test_read_inside_a_batch_returns_that_whole_batch(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    log.append(batch([b"a", b"b", b"c"]), leader_epoch=0)
    log.append(batch([b"d"]), leader_epoch=0)
    result = log.read(1, 1 << 20, isolation_high_watermark=False)
    assert result.first_offset == 0
    assert result.region is not None
    header, records = decode_batch(result.region.read_bytes())
    assert header.base_offset == 0 and [r.offset for r in records] == [0, 1, 2]


def test_region_can_be_sent_with_sendfile(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    log.append(batch([b"payload"] * 10), leader_epoch=0)
    result = log.read(0, 1 << 20, isolation_high_watermark=False)
    assert result.region is not None
    left, right = socket.socketpair()
    with left, right:
        sent = os.sendfile(
            left.fileno(), result.region.fileno(), result.region.position, result.region.length
        )
        assert sent == result.region.length
        assert right.recv(1 << 16) == result.region.read_bytes()


def test_segments_roll_by_size_and_offsets_are_found_in_any_segment(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=1024))
    for i in range(200):
        log.append(batch([b"v%03d" % i]), leader_epoch=0)
    assert len(log.segments) > 10
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(bases)
    for offset in (0, 1, 57, 100, 199):
        result = log.read(offset, 1, isolation_high_watermark=False)
        assert result.region is not None
        header, records = decode_batch(result.region.read_bytes())
        assert header.base_offset == offset and records[0].value == b"v%03d" % offset
    files = sorted(p.name for p in log.dir.glob("*.log"))
    assert files == [segment_file_name(b, ".log") for b in bases]


def test_roll_trims_indexes_and_keeps_them_usable(tmp_path: Path) -> None:
    config = small_config(segment_bytes=2048, index_interval_bytes=64, segment_index_bytes=8192)
    log = new_log(tmp_path, config)
    for i in range(60):
        log.append(batch([b"%04d" % i]), leader_epoch=0)
    old, active = log.segments[0], log.segments[-1]
    assert old.index_path.stat().st_size == old.offset_index.entries * 8 > 0
    assert old.time_index_path.stat().st_size == old.time_index.entries * 12
    assert active.index_path.stat().st_size == 8192  # preallocated while active


def test_roll_when_index_is_full(tmp_path: Path) -> None:
    config = small_config(segment_bytes=1 << 20, index_interval_bytes=1, segment_index_bytes=48)
    log = new_log(tmp_path, config)
    for i in range(30):
        log.append(batch([b"%d" % i]), leader_epoch=0)
    assert len(log.segments) >= 4, "a full offset index (6 entries) must roll the segment"


def test_roll_by_segment_ms(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(segment_ms=1, segment_bytes=1 << 20))
    log.append(batch([b"a"]), leader_epoch=0)
    log.active_segment.created_ms -= 10
    log.append(batch([b"b"]), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0, 1]


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=1024))
    for i in range(100):
        log.append(batch([b"a", b"b"], timestamp=BASE_TS + 10 * i), leader_epoch=0)
    assert log.offset_for_timestamp(BASE_TS) == (0, BASE_TS)
    assert log.offset_for_timestamp(BASE_TS + 1) == (1, BASE_TS + 1)
    assert log.offset_for_timestamp(BASE_TS + 505) == (102, BASE_TS + 510)
    assert log.offset_for_timestamp(BASE_TS + 992) is None
    assert log.offset_for_timestamp(-2) == (0, -1)
    assert log.offset_for_timestamp(-1) == (200, -1)
    assert log.offset_for_timestamp(-3) == (199, BASE_TS + 991)


def test_max_timestamp_is_the_first_record_holding_it(tmp_path: Path) -> None:
    """ListOffsets -3 (MAX_TIMESTAMP): Kafka answers the lowest offset among the records
    sharing the largest timestamp, whether they share a batch, or come in later batches
    and segments."""
    log = new_log(tmp_path, small_config(segment_bytes=300))
    top = BASE_TS + 1000

    def records(*timestamps: int) -> bytes:
        return encode_batch([Record(timestamp=ts, key=None, value=b"v" * 40)
                             for ts in timestamps])

    log.append(records(BASE_TS, BASE_TS + 5), leader_epoch=0)        # offsets 0-1
    log.append(records(BASE_TS + 7, top, top, top), leader_epoch=0)  # 2-5: max at 3
    log.append(records(top, top), leader_epoch=0)                    # 6-7, later batch
    for _ in range(3):
        log.append(records(top - 1, top), leader_epoch=0)            # later segments
    assert len(log.segments) > 1
    assert log.offset_for_timestamp(-3) == (3, top)


def test_size_limits(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(max_message_bytes=200, segment_bytes=1024))
    with pytest.raises(MessageTooLarge):
        log.append(batch([bytes(300)]), leader_epoch=0)
    many = b"".join(batch([bytes(150)]) for _ in range(6))
    with pytest.raises(RecordListTooLarge):
        log.append(many, leader_epoch=0)
    assert log.log_end_offset == 0


def test_corrupt_or_malformed_input_is_rejected(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    good = bytearray(batch([b"hello"]))
    flipped = bytearray(good)
    flipped[-1] ^= 0xFF
    with pytest.raises(CorruptRecord):
        log.append(bytes(flipped), leader_epoch=0)
    with pytest.raises(CorruptRecord):
        log.append(bytes(good[:-3]), leader_epoch=0)
    with pytest.raises(InvalidRecord):
        log.append(b"", leader_epoch=0)
    lying = encode_batch([Record(value=b"x")], last_offset_delta=5)
    with pytest.raises(InvalidRecord):
        log.append(lying, leader_epoch=0)
    assert log.log_end_offset == 0


def test_timestamp_bounds_are_enforced(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(message_timestamp_difference_max_ms=1000))
    with pytest.raises(InvalidTimestamp):
        log.append(batch([b"old"], timestamp=BASE_TS), leader_epoch=0, now_ms=BASE_TS + 5000)
    log.append(batch([b"ok"], timestamp=BASE_TS), leader_epoch=0, now_ms=BASE_TS + 500)


def test_log_append_time_rewrites_max_timestamp_and_crc(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(message_timestamp_type="LogAppendTime"))
    info = log.append(batch([b"a", b"b"], timestamp=5), leader_epoch=0, now_ms=BASE_TS)
    assert info.log_append_time == BASE_TS
    header, records = read_all(log)[0]  # read_all validates the CRC
    assert header.timestamp_type == 1 and header.max_timestamp == BASE_TS
    assert [r.timestamp for r in records] == [BASE_TS, BASE_TS]


def test_compression_type_config_recompresses(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(compression_type="gzip"))
    log.append(batch([b"abc" * 50] * 4), leader_epoch=0)
    header, records = read_all(log)[0]
    assert header.compression == 1
    assert [r.value for r in records] == [b"abc" * 50] * 4


def test_legacy_message_sets_are_converted_to_v2(tmp_path: Path) -> None:
    log = new_log(tmp_path)
    legacy = encode_legacy_message(b"k1", b"v1", magic=1, timestamp=BASE_TS)
    legacy += encode_legacy_message(None, b"v2", magic=0)
    info = log.append(legacy, leader_epoch=0)
    assert (info.first_offset, info.last_offset) == (0, 1)
    header, records = read_all(log)[0]
    assert header.magic == 2
    assert [(r.key, r.value, r.timestamp) for r in records] == [
        (b"k1", b"v1", BASE_TS),
        (None, b"v2", -1),
    ]


def test_truncate_to_removes_batches_at_and_after_offset(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=1024))
    for i in range(100):
        log.append(batch([b"%d" % i]), leader_epoch=i // 10)
    log.update_high_watermark(100)
    log.truncate_to(42)
    assert log.log_end_offset == 42
    assert log.high_watermark == 42
    assert [r.value for r in all_records(log)] == [b"%d" % i for i in range(42)]
    assert log.leader_epoch_cache.latest_epoch == 4
    assert log.end_offset_for_leader_epoch(3) == (3, 40)
    info = log.append(batch([b"new"]), leader_epoch=11)
    assert info.first_offset == 42
    assert log.end_offset_for_leader_epoch(4) == (4, 42)
    assert log.end_offset_for_leader_epoch(11) == (11, 43)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (500, 500, 500)
    assert log.append(batch([b"x"]), leader_epoch=12).first_offset == 500
    assert [s.base_offset for s in log.segments] == [500]


def test_delete_records_advances_log_start(tmp_path: Path) -> None:
    log = new_log(tmp_path, small_config(segment_bytes=1024))
    for i in range(100):
        log.append(batch([b"%d" % i]), leader_epoch=0)
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(50)  # above the high watermark
    log.update_high_watermark(100)
    assert log.delete_records_before(50) == 50
    assert log.segments[0].base_offset <= 50 < log.segments[0].next_offset or (
        log.segments[0].base_offset == 50
    )
    with pytest.raises(OffsetOutOfRange):
        log.read(49, 100)
    assert log.read(50, 100).first_offset <= 50


def test_follower_append_keeps_leader_offsets_and_checks_contiguity(tmp_path: Path) -> None:
    leader = new_log(tmp_path, name="leader-0")
    for i in range(5):
        leader.append(batch([b"%d" % i, b"x"]), leader_epoch=7)
    fetched = leader.read(0, 1 << 20, isolation_high_watermark=False).region
    assert fetched is not None
    follower = new_log(tmp_path, name="follower-0")
    info = follower.append_as_follower(fetched.read_bytes())
    assert (info.first_offset, info.last_offset) == (0, 9)
    assert follower.log_end_offset == 10
    assert follower.leader_epoch_cache.entries == [(7, 0)]
    with pytest.raises(OffsetOutOfRange):
        follower.append_as_follower(fetched.read_bytes())


def test_config_names_and_validation() -> None:
    config = LogConfig.from_topic_config(
        {"segment.bytes": "2048", "cleanup.policy": "delete,compact"}
    )
    assert config.segment_bytes == 2048 and config.compact and config.delete
    with pytest.raises(InvalidConfig, match="nope"):
        LogConfig.from_topic_config({"nope": 1})
    with pytest.raises(InvalidConfig, match=r"segment\.bytes"):
        LogConfig.from_topic_config({"segment.bytes": "abc"})
    with pytest.raises(InvalidConfig, match=r"cleanup\.policy"):
        LogConfig.from_topic_config({"cleanup.policy": "shred"})
    assert LogConfig().to_topic_config()["preallocate"] == "false"


def test_reopen_after_close_sees_the_same_log(tmp_path: Path) -> None:
    config = small_config(segment_bytes=1024)
    log = new_log(tmp_path, config)
    for i in range(50):
        log.append(batch([b"%d" % i]), leader_epoch=2)
    log.close()
    reopened = open_log(tmp_path / "topic-0", config, had_clean_shutdown=True, recovery_point=50)
    assert reopened.log_end_offset == 50
    assert [r.value for r in all_records(reopened)] == [b"%d" % i for i in range(50)]
    assert reopened.append(batch([b"more"]), leader_epoch=2).first_offset == 50
    region = reopened.read(50, 100, isolation_high_watermark=False).region
    assert region is not None
    assert parse_batch_header(region.read_bytes()).base_offset == 50
