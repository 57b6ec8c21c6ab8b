"""Consumer-group arithmetic: lag, and the offsets a declarative reset computes.

Lag of a partition is ``end offset - committed offset`` (the high watermark minus where the
group will resume); a partition the group never committed has no lag to report. A reset is
computed for the partitions the group has committed (restricted to the reset's topics) plus
every partition of an explicitly named topic, and every target is clamped into
``[log start, high watermark]`` — Kafka would otherwise reset an out-of-range offset on the
consumer's next fetch by ``auto.offset.reset``, silently undoing the reset.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..spec import ResetSpec

__all__ = ["PartitionLag", "ResetMove", "compute_lag", "compute_reset", "reset_partitions"]

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None
    end: int | None

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.end is None:
            return None
        return max(0, self.end - self.committed)


def compute_lag(committed: Mapping[TopicPartitionKey, int],
                end_offsets: Mapping[TopicPartitionKey, int | None],
                topics: Iterable[str] = ()) -> tuple[list[PartitionLag], int]:
    """Per-partition lag rows (sorted) and the total over partitions with a known lag."""
    wanted = set(topics)
    keys = {tp for tp in set(committed) | set(end_offsets) if not wanted or tp[0] in wanted}
    rows = [PartitionLag(t, p, committed.get((t, p)), end_offsets.get((t, p)))
            for t, p in sorted(keys)]
    return rows, sum(row.lag or 0 for row in rows)


def reset_partitions(reset: ResetSpec, group_topics: Iterable[str],
                     committed: Mapping[TopicPartitionKey, int],
                     topic_partitions: Mapping[str, Iterable[int]]) -> list[TopicPartitionKey]:
    """The partitions a reset touches: every partition of the named topics (or, when none
    are named, of the topics the group has committed / was told to watch)."""
    topics = set(reset.topics) or set(group_topics) or {t for t, _ in committed}
    return sorted((t, p) for t in topics for p in topic_partitions.get(t, ()))


@dataclass(frozen=True)
class ResetMove:
    topic: str
    partition: int
    current: int | None
    target: int


def compute_reset(reset: ResetSpec, partitions: Iterable[TopicPartitionKey],
                  committed: Mapping[TopicPartitionKey, int],
                  earliest: Mapping[TopicPartitionKey, int],
                  latest: Mapping[TopicPartitionKey, int],
                  by_timestamp: Mapping[TopicPartitionKey, int | None] | None = None
                  ) -> list[ResetMove]:
    """Target offset per partition for ``reset.strategy``.

    ``by_timestamp[tp]`` is the ListOffsets answer for ``reset.timestamp_ms`` (None: no record
    that new, so the target is the end). ``shiftBy`` moves from the committed offset (from the
    end for a partition never committed).
    """
    moves = []
    for tp in partitions:
        low, high = earliest.get(tp, 0), latest.get(tp, 0)
        current = committed.get(tp)
        if reset.strategy == "earliest":
            target = low
        elif reset.strategy == "latest":
            target = high
        elif reset.strategy == "offset":
            assert reset.offset is not None
            target = reset.offset
        elif reset.strategy == "shiftBy":
            assert reset.shift_by is not None
            target = (current if current is not None else high) + reset.shift_by
        elif reset.strategy == "timestamp":
            found = (by_timestamp or {}).get(tp)
            target = high if found is None else found
        else:  # pragma: no cover - ResetSpec.parse admits only the strategies above
            raise ValueError(f"unknown reset strategy {reset.strategy!r}")
        moves.append(ResetMove(tp[0], tp[1], current, min(max(target, low), high)))
    return moves
