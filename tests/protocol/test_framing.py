"""FrameReader: reassembly across arbitrary splits and rejection of bad length prefixes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.errors import FrameSizeInvalid
from odradek.protocol.framing import FrameReader, size_prefix


def frames_of(payloads: list[bytes]) -> bytes:
    return b"".join(size_prefix(len(p)) + p for p in payloads)


@settings(max_examples=200, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=10),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=20),
)
def test_frames_survive_any_split(payloads: list[bytes], cuts: list[int]) -> None:
    stream = frames_of(payloads)
    points = sorted({c for c in cuts if c < len(stream)} | {0, len(stream)})
    reader = FrameReader(max_frame_bytes=1000)
    got: list[bytes] = []
    for start, end in itertools.pairwise(points):
        reader.receive_data(stream[start:end])
        while (frame := reader.next_frame()) is not None:
            got.append(bytes(frame))
    assert got == payloads
    assert reader.buffered_bytes == 0


def test_incomplete_frame_waits_for_more() -> None:
    reader = FrameReader()
    reader.receive_data(size_prefix(5) + b"abc")
    assert reader.next_frame() is None
    reader.receive_data(b"de")
    frame = reader.next_frame()
    assert frame is not None and bytes(frame) == b"abcde"


def test_returned_frame_stays_valid_after_more_data() -> None:
    reader = FrameReader()
    reader.receive_data(frames_of([b"first", b"second"]))
    first = reader.next_frame()
    reader.receive_data(frames_of([b"x" * 100_000]))  # forces the buffer to move
    assert first is not None and bytes(first) == b"first"


@pytest.mark.parametrize("size", [-1, -(2**31), 1001])
def test_bad_length_prefix_is_rejected_before_buffering(size: int) -> None:
    reader = FrameReader(max_frame_bytes=1000)
    reader.receive_data(size.to_bytes(4, "big", signed=True))
    with pytest.raises(FrameSizeInvalid, match=str(size)):
        reader.next_frame()


def test_frame_of_exactly_the_limit_is_accepted() -> None:
    reader = FrameReader(max_frame_bytes=10)
    reader.receive_data(frames_of([b"0123456789"]))
    frame = reader.next_frame()
    assert frame is not None and len(frame) == 10
