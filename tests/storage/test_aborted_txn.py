"""The ``.txnindex`` entry codec and the pure LSO / aborted-range questions, against models."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.protocol.errors import CorruptRecord
from odradek.storage.aborted_txn import (
    ENTRY_SIZE,
    AbortedTxn,
    collect_aborted,
    decode_entries,
    encode_entry,
    last_stable_offset,
)
from odradek.storage.txn_index import TransactionIndex

offsets = st.integers(0, 2**63 - 1)
entries = st.builds(AbortedTxn, st.integers(-1, 2**63 - 1), offsets, offsets, offsets)


@given(st.lists(entries, max_size=20), st.integers(0, ENTRY_SIZE - 1))
def test_codec_round_trips_and_ignores_a_torn_tail(items: list[AbortedTxn], torn: int) -> None:
    data = b"".join(encode_entry(entry) for entry in items)
    tail = encode_entry(AbortedTxn(1, 2, 3, 4))[:torn]
    decoded, whole = decode_entries(data + tail)
    assert decoded == items
    assert whole == len(data)


def test_entry_is_kafkas_34_byte_layout() -> None:
    raw = encode_entry(AbortedTxn(producer_id=9, first_offset=10, last_offset=20,
                                  last_stable_offset=21))
    assert raw == struct.pack(">hqqqq", 0, 9, 10, 20, 21)
    assert ENTRY_SIZE == 34


def test_unknown_version_is_corrupt() -> None:
    with pytest.raises(CorruptRecord):
        decode_entries(struct.pack(">hqqqq", 1, 9, 10, 20, 21))


def test_index_file_appends_once_per_marker_and_truncates(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path)
    assert index.entries == ()
    assert index.append(AbortedTxn(1, 0, 5, 6))
    assert not index.append(AbortedTxn(1, 0, 5, 6))  # a replay of the same marker
    assert index.append(AbortedTxn(2, 3, 9, 10))
    path.write_bytes(path.read_bytes() + b"\x00\x00\x00")  # torn append from a crash
    reopened = TransactionIndex(path)
    assert reopened.entries == (AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 3, 9, 10))
    assert path.stat().st_size == 2 * ENTRY_SIZE  # the torn tail was cut on load
    reopened.truncate_to(9)
    assert TransactionIndex(path).entries == (AbortedTxn(1, 0, 5, 6),)
    reopened.reset()
    assert not path.exists() and reopened.entries == ()


# --------------------------------------------------------------- models of the queries


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[AbortedTxn], int]:
    """A log history of transactions, as an index would hold it: ABORT entries in marker
    order with Kafka's lastStableOffset, plus the log end offset."""
    offset = 0
    ongoing: dict[int, int] = {}
    index: list[AbortedTxn] = []
    for step in draw(st.lists(st.tuples(st.integers(0, 3), st.sampled_from("dca")),
                              max_size=40)):
        pid, action = step
        if action == "d":
            ongoing.setdefault(pid, offset)
            offset += draw(st.integers(1, 3))
        elif pid in ongoing:
            first = ongoing.pop(pid)
            if action == "a":
                lso = min(ongoing.values(), default=offset + 1)
                index.append(AbortedTxn(pid, first, offset, lso))
            offset += 1
    return index, offset


@given(histories(), st.data())
def test_collect_aborted_matches_a_brute_force_filter(
    history: tuple[list[AbortedTxn], int], data: st.DataObject
) -> None:
    index, end = history
    fetch = data.draw(st.integers(0, end + 1))
    upper = data.draw(st.integers(fetch, end + 1))
    # the index split into segments at arbitrary markers: the search walks them in order
    cuts = sorted(data.draw(st.lists(st.integers(0, len(index)), max_size=3)))
    segments = [index[a:b] for a, b in zip([0, *cuts], [*cuts, len(index)], strict=True)]
    found: list[AbortedTxn] = []
    for segment in segments:
        part, complete = collect_aborted(segment, fetch, upper)
        found += part
        if complete:
            break
    expected = [e for e in index if e.last_offset >= fetch and e.first_offset < upper]
    assert found == expected


@given(
    st.lists(st.tuples(st.integers(0, 100), st.integers(0, 120)), max_size=6),
    st.integers(0, 120),
)
def test_last_stable_offset_matches_its_definition(
    pairs: list[tuple[int, int]], high_watermark: int
) -> None:
    unstable = sorted((first, max(first, marker)) for first, marker in pairs)
    holding = [first for first, marker in unstable if marker >= high_watermark]
    assert last_stable_offset(high_watermark, unstable) == min([high_watermark, *holding])
