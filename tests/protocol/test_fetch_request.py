"""The replica fetcher's Fetch encoder writes byte for byte what kio's encoder writes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.builder import build
from odradek.protocol.fetch_request import (
    MAX_VERSION,
    MIN_VERSION,
    FetchPosition,
    encode_fetch_request,
)
from odradek.protocol.messages import decode_request, encode_request, request_type

INT32 = st.integers(-(2**31), 2**31 - 1)
positions = st.builds(
    FetchPosition,
    partition=st.integers(0, 2**31 - 1),
    current_leader_epoch=INT32,
    fetch_offset=st.integers(-1, 2**63 - 1),
    log_start_offset=st.integers(-1, 2**63 - 1),
    partition_max_bytes=INT32,
    last_fetched_epoch=INT32,
)
topic_names = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=40)
topics = st.lists(st.tuples(topic_names, st.lists(positions, max_size=4)), max_size=4)
forgotten_topics = st.lists(
    st.tuples(topic_names, st.lists(st.integers(0, 2**31 - 1), max_size=4)), max_size=3)


def kio_frame(version: int, correlation_id: int, client_id: str | None, *, replica_id: int,
              max_wait_ms: int, min_bytes: int, max_bytes: int, isolation_level: int,
              rack_id: str, topics: list[tuple[str, list[FetchPosition]]],
              session_id: int = 0, session_epoch: int = -1,
              forgotten: list[tuple[str, list[int]]] | None = None) -> bytes:
    body = {
        "cluster_id": None, "replica_id": replica_id, "max_wait": max_wait_ms,
        "min_bytes": min_bytes, "max_bytes": max_bytes, "isolation_level": isolation_level,
        "session_id": session_id, "session_epoch": session_epoch, "rack_id": rack_id,
        "forgotten_topics_data": [{"topic": t, "partitions": p} for t, p in forgotten or []],
        "topics": [{"topic": name, "partitions": [p._asdict() for p in parts]}
                   for name, parts in topics],
    }
    return encode_request(build(request_type(1, version), body), correlation_id, client_id)


@settings(max_examples=300, deadline=None)
@given(version=st.integers(MIN_VERSION, MAX_VERSION), correlation_id=st.integers(0, 2**31 - 1),
       client_id=st.one_of(st.none(), topic_names), replica_id=INT32, max_wait_ms=INT32,
       min_bytes=INT32, max_bytes=INT32, isolation_level=st.sampled_from([0, 1]),
       rack_id=topic_names, topics=topics, session_id=INT32, session_epoch=INT32,
       forgotten=forgotten_topics)
def test_bytes_match_kio(version: int, correlation_id: int, client_id: str | None,
                         replica_id: int, max_wait_ms: int, min_bytes: int, max_bytes: int,
                         isolation_level: int, rack_id: str,
                         topics: list[tuple[str, list[FetchPosition]]], session_id: int,
                         session_epoch: int, forgotten: list[tuple[str, list[int]]]) -> None:
    fields = dict(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes,
                  max_bytes=max_bytes, isolation_level=isolation_level, rack_id=rack_id,
                  topics=topics, session_id=session_id, session_epoch=session_epoch,
                  forgotten=forgotten)
    ours = encode_fetch_request(version, correlation_id, client_id, **fields)  # type: ignore[arg-type]
    assert ours == kio_frame(version, correlation_id, client_id, **fields)  # type: ignore[arg-type]


def test_a_broker_reads_it_back() -> None:
    frame = encode_fetch_request(
        12, 7, "odradek-replica-1", replica_id=1, max_wait_ms=500, min_bytes=1,
        max_bytes=10 << 20, topics=[("events", [FetchPosition(2, 5, 1234, 17, 1 << 20)])])
    request = decode_request(memoryview(frame)[4:])
    assert request.header.correlation_id == 7
    assert type(request.body) is request_type(1, 12)
    body: Any = request.body
    [topic] = body.topics
    [part] = topic.partitions
    assert (topic.topic, int(part.partition), int(part.current_leader_epoch),
            int(part.fetch_offset), int(part.log_start_offset)) == ("events", 2, 5, 1234, 17)
    assert int(body.replica_id) == 1 and int(body.session_epoch) == -1


@pytest.mark.parametrize("version", [MIN_VERSION - 1, MAX_VERSION + 1])
def test_versions_outside_the_range_are_refused(version: int) -> None:
    with pytest.raises(ValueError, match="not in"):
        encode_fetch_request(version, 1, None, replica_id=1, max_wait_ms=0, min_bytes=1,
                             max_bytes=1, topics=[])
