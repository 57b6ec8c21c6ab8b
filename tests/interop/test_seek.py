"""Positioning a consumer: seek to an offset, and find offsets by timestamp (ListOffsets)."""

from __future__ import annotations

import time

import pytest

from tests.interop.clients import CLIENTS, IDEMPOTENT, Client, Message
from tests.interop.conftest import Target

COUNT = 1000
STEP_MS = 10


def spaced_messages(base_ts: int) -> list[Message]:
    return [Message(b"k%d" % (i % 7), b"v-%06d" % i, (("i", b"%d" % i),), base_ts + i * STEP_MS)
            for i in range(COUNT)]


@pytest.fixture
def filled_topic(target: Target) -> tuple[str, list[Message]]:
    """A one-partition topic holding COUNT messages 10 ms apart (CreateTime)."""
    topic = target.create_topic(1, prefix="seek")
    messages = spaced_messages(int(time.time() * 1000) - COUNT * STEP_MS - 60_000)
    deliveries = CLIENTS[0].produce(target.bootstrap, topic, messages, "none", IDEMPOTENT, 60)
    assert [d.offset for d in deliveries] == list(range(COUNT))
    return topic, messages


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.name)
def test_seek_to_offset(target: Target, client: Client,
                        filled_topic: tuple[str, list[Message]]) -> None:
    topic, messages = filled_topic
    for start in (0, 437, COUNT - 1):
        records = client.consume(target.bootstrap, topic, {0: start}, {0: COUNT}, 60)[0]
        assert [r.offset for r in records] == list(range(start, COUNT))
        assert [r.value for r in records] == [m.value for m in messages[start:]]


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.name)
def test_offsets_for_times(target: Target, client: Client,
                           filled_topic: tuple[str, list[Message]]) -> None:
    topic, messages = filled_topic
    base = messages[0].timestamp
    cases = {
        base - 1_000: 0,                       # before the first record: the first offset
        base: 0,
        base + 300 * STEP_MS: 300,             # exact match
        base + 300 * STEP_MS + 1: 301,         # between two records: the later one
        messages[-1].timestamp: COUNT - 1,
        messages[-1].timestamp + 1: None,      # after the last record: none
    }
    for ts, want in cases.items():
        found = client.offsets_for_times(target.bootstrap, topic, {0: ts}, 30)
        assert found == {0: want}, f"timestamp {ts - base:+d} ms from the first record"

    # Seek by timestamp: consume from the offset found and see the timestamps from there on.
    offset = client.offsets_for_times(target.bootstrap, topic, {0: base + 555 * STEP_MS}, 30)[0]
    assert offset is not None
    records = client.consume(target.bootstrap, topic, {0: offset}, {0: offset + 10}, 60)[0]
    assert [r.timestamp for r in records] == [m.timestamp for m in messages[555:565]]
