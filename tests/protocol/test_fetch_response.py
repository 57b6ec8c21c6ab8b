"""The zero-copy Fetch encoder produces exactly what a Kafka reader (kio) expects."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.fetch_response import (
    FetchPartitionResult,
    FetchTopicResult,
    chunks_size,
    encode_fetch_response,
    set_throttle,
)
from odradek.protocol.messages import decode_response


@dataclass(frozen=True)
class FakeRegion:
    """Stands in for storage's FileRegion: the encoder only reads ``length``."""

    data: bytes

    @property
    def length(self) -> int:
        return len(self.data)


def materialize(chunks: Sequence[object]) -> bytes:
    return b"".join(c if isinstance(c, bytes) else c.data for c in chunks)  # type: ignore[attr-defined]


partitions = st.builds(
    FetchPartitionResult,
    partition_index=st.integers(0, 2**31 - 1),
    error_code=st.sampled_from([0, 1, 3, 6]),
    high_watermark=st.integers(-1, 2**63 - 1),
    last_stable_offset=st.integers(-1, 2**63 - 1),
    log_start_offset=st.integers(-1, 2**63 - 1),
    records=st.one_of(
        st.none(), st.binary(max_size=50), st.binary(max_size=300).map(FakeRegion)
    ),
    aborted_transactions=st.one_of(
        st.none(), st.lists(st.tuples(st.integers(0, 2**62), st.integers(0, 2**62)), max_size=3)
    ),
    preferred_read_replica=st.integers(-1, 100),
    diverging_epoch=st.one_of(st.none(), st.tuples(st.integers(0, 1000), st.integers(0, 2**40))),
)
topics = st.lists(
    st.builds(FetchTopicResult, topic=st.text(min_size=1, max_size=20),
              partitions=st.lists(partitions, max_size=4)),
    max_size=4,
)


@pytest.mark.parametrize("version", range(4, 13))
@settings(max_examples=40, deadline=None)
@given(topics=topics, throttle=st.integers(0, 1000), session_id=st.integers(0, 2**31 - 1))
def test_encoder_matches_kafka_layout(
    version: int, topics: list[FetchTopicResult], throttle: int, session_id: int
) -> None:
    chunks = encode_fetch_response(version, 99, topics, throttle_time_ms=throttle,
                                   session_id=session_id)
    frame = materialize(chunks)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4 == chunks_size(chunks) - 4
    correlation_id, decoded = decode_response(frame[4:], 1, version)
    body: Any = decoded  # kio's FetchResponse class differs per (parametrized) version
    assert correlation_id == 99
    assert int(body.throttle_time.total_seconds() * 1000) == throttle
    if version >= 7:
        assert body.session_id == session_id
    assert [t.topic for t in body.responses] == [t.topic for t in topics]
    for got_topic, want_topic in zip(body.responses, topics, strict=True):
        for got, want in zip(got_topic.partitions, want_topic.partitions, strict=True):
            assert got.partition_index == want.partition_index
            assert got.error_code == want.error_code
            assert got.high_watermark == want.high_watermark
            assert got.last_stable_offset == want.last_stable_offset
            if version >= 5:
                assert got.log_start_offset == want.log_start_offset
            want_records = (
                want.records.data if isinstance(want.records, FakeRegion) else want.records or b""
            )
            assert bytes(got.records or b"") == want_records
            want_aborted = (
                None if want.aborted_transactions is None else list(want.aborted_transactions)
            )
            got_aborted = (
                None if got.aborted_transactions is None
                else [(a.producer_id, a.first_offset) for a in got.aborted_transactions]
            )
            assert got_aborted == want_aborted
            if version >= 11:
                assert got.preferred_read_replica == want.preferred_read_replica
            if version >= 12 and want.diverging_epoch is not None:
                assert (got.diverging_epoch.epoch, got.diverging_epoch.end_offset) == (
                    want.diverging_epoch
                )


def test_record_regions_are_separate_chunks_never_copied() -> None:
    region = FakeRegion(b"R" * 1000)
    chunks = encode_fetch_response(
        12, 1, [FetchTopicResult("t", [FetchPartitionResult(0, records=region)])]
    )
    assert any(chunk is region for chunk in chunks)
    assert all(isinstance(c, bytes) or c is region for c in chunks)


@pytest.mark.parametrize(("version", "prefix"), [(11, (1000).to_bytes(4, "big")),
                                                 (12, bytes([0xE9, 0x07]))])
def test_records_size_prefix(version: int, prefix: bytes) -> None:
    region = FakeRegion(b"R" * 1000)
    chunks = encode_fetch_response(
        version, 1, [FetchTopicResult("t", [FetchPartitionResult(0, records=region)])]
    )
    before = chunks[chunks.index(region) - 1]
    assert isinstance(before, bytes) and before.endswith(prefix)  # 1001 as varint = e9 07


def test_the_encoded_frame_lists_its_error_codes() -> None:
    """What the broker counts in odradek_request_errors_total without parsing its bytes."""
    topics = [FetchTopicResult("t", [FetchPartitionResult(0), FetchPartitionResult(1, 1),
                                     FetchPartitionResult(2, 6)]),
              FetchTopicResult("u", [FetchPartitionResult(0, 1)])]
    assert encode_fetch_response(12, 1, topics).error_codes == [1, 6, 1]
    assert encode_fetch_response(12, 1, [], error_code=71).error_codes == [71]
    assert encode_fetch_response(12, 1, topics[:0]).error_codes == []


@pytest.mark.parametrize("version", range(4, 13))
def test_a_quota_written_in_place_is_the_encoded_throttle_time(version: int) -> None:
    """A request quota decided after the handler encoded the frame is written at
    ``throttle_at``, as if the encoder had been given it."""
    region = FakeRegion(b"R" * 100)
    topics = [FetchTopicResult("t", [FetchPartitionResult(0, records=region)])]
    patched = encode_fetch_response(version, 3, topics)
    set_throttle(patched, 750)
    assert patched == encode_fetch_response(version, 3, topics, throttle_time_ms=750)
