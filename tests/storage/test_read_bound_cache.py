"""The reader's cached byte position of the high watermark is used only on the segment it
was computed on: a reader racing a cleaner swap can store an entry computed on the old
segment list just after the swap cleared the cache, and the cleaned segment that replaced it
keeps the base offset but not the byte layout. Using the entry would bound a Fetch at the old
layout's position: past the high watermark (uncommitted records served) or short of it."""

from __future__ import annotations

from typing import Any, cast

from odradek.storage.log_reader import LogReader, LogState


class Segment:
    """What the read bound uses of a segment: its offsets, size and offset → position."""

    def __init__(self, base_offset: int, next_offset: int, positions: dict[int, int]) -> None:
        self.base_offset, self.next_offset = base_offset, next_offset
        self.positions = positions
        self.size = max(positions.values()) + 100

    def translate_offset(self, offset: int, max_position: int) -> tuple[int, int] | None:
        return (self.positions[offset], 0) if offset in self.positions else None


def test_a_position_computed_before_a_cleaner_swap_is_not_used_after_it() -> None:
    old = Segment(0, 100, {50: 5000})
    active = Segment(100, 120, {110: 100})
    reader = LogReader("t-0", LogState.of(cast(Any, (old, active))), log_start_offset=0,
                       high_watermark=50, leader_epoch_cache=cast(Any, None),
                       producer_state=cast(Any, None))
    state_before = reader.state
    assert reader._end_position(state_before, 50) == (0, 5000)
    stale = reader._hw_position

    cleaned = Segment(0, 100, {50: 1200})  # compaction: same base offset, fewer bytes
    reader.publish(cast(Any, (cleaned, active)))
    reader._hw_position = stale  # the racing reader's late write
    assert reader._end_position(reader.state, 50) == (0, 1200)
