"""Consumer lag from the group coordinator that owns the offsets.

An exporter that polls brokers from outside reads committed offsets and end offsets at
different moments and from different brokers, so it reports negative lag, loses groups with
no live members, and lags itself. Here the coordinator reports the groups it owns, at scrape
time, from its own state:

* **committed offset**: the group's last commit for the partition;
* **log end offset**: the partition's high watermark, i.e. what a consumer can read (Kafka's
  ``LOG-END-OFFSET`` column shows the same thing);
* **lag** = end - position, where position is the committed offset clamped into
  ``[log start, log end]``, so lag is never negative:

  - committed > end: the commit is ahead of the end offset we know (the end offsets were read
    a moment before the commit landed, or a client committed an offset beyond the end, which
    Kafka does not forbid): nothing is left to read, lag 0;
  - committed < log start: retention deleted the records the group had not read; it cannot
    read them any more (its consumer will reset by ``auto.offset.reset``), so what is left to
    read is everything from log start: lag = end - start;

* **lag in seconds** = now - timestamp of the record at the position (the oldest record the
  group has not consumed yet), 0 when lag is 0. Reading a timestamp costs a log read, so it
  is bounded: a timestamp is read again only when the position moved, at most
  ``timestamp_reads`` per collection; positions beyond that budget reuse their last reading
  (which can only overstate the lag, never hide it), and a row with no reading yet has no
  ``lag_seconds`` sample until one is made;
* **group state and members** for every group, including groups with no live members
  (``Empty``): they are reported as long as the coordinator keeps their offsets, i.e. until
  ``offsets.retention.minutes`` expires them.

Cardinality is capped (rows and groups, see :class:`~odradek.metrics.limits.SeriesLimit`);
refused series are counted in ``odradek_metrics_series_dropped_total``. Rows are admitted in
sorted (group, topic, partition) order so the set kept is stable from scrape to scrape.

The collector is written against two small protocols, :class:`GroupSource` (the
coordinator) and :class:`LogOffsetsSource` (the logs), both called on the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

from .catalog_types import Feed, Kind, MetricSpec
from .exposition import GaugeRows
from .limits import SeriesLimit

__all__ = [
    "GROUP_STATES",
    "LAG_METRICS",
    "GroupOffsets",
    "GroupSource",
    "LagCollector",
    "LagRow",
    "LogOffsets",
    "LogOffsetsSource",
    "clamped_lag",
]

TopicPartition = tuple[str, int]
GROUP_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
ROW = ("group", "topic", "partition")
G, SCRAPED = Kind.GAUGE, Feed.SCRAPED

COMMITTED = MetricSpec(
    "odradek_consumer_group_committed_offset", G, "The group's committed offset.", ROW,
    SCRAPED, "GroupSource.groups")
END_OFFSET = MetricSpec(
    "odradek_consumer_group_log_end_offset", G,
    "High watermark of the partition when the lag was computed (what the group can read).",
    ROW, SCRAPED, "LogOffsetsSource.offsets")
LAG = MetricSpec(
    "odradek_consumer_group_lag_records", G,
    "Records the group has not consumed: end - committed, clamped into [log start, end].",
    ROW, SCRAPED, "GroupSource + LogOffsetsSource")
LAG_SECONDS = MetricSpec(
    "odradek_consumer_group_lag_seconds", G,
    "Age of the oldest record the group has not consumed (0 when caught up).", ROW, SCRAPED,
    "LogOffsetsSource.timestamp_at")
MEMBERS = MetricSpec(
    "odradek_consumer_group_members", G, "Live members of the group.", ("group",), SCRAPED,
    "GroupSource.groups")
STATE = MetricSpec(
    "odradek_consumer_group_state", G,
    "1 for the group's current state, 0 for the others (Empty = no live members).",
    ("group", "state"), SCRAPED, "GroupSource.groups")
LAG_METRICS = (COMMITTED, END_OFFSET, LAG, LAG_SECONDS, MEMBERS, STATE)


class GroupOffsets(NamedTuple):
    """One group owned by this coordinator: state, live members, committed offsets.

    This and the other records built on the event loop each scrape (:class:`LogOffsets`,
    :class:`LagRow`) are named tuples: a frozen dataclass costs several times as much to
    build, and the loop is the broker's."""

    group: str
    state: str
    members: int
    committed: Mapping[TopicPartition, int]


@runtime_checkable
class GroupSource(Protocol):
    """The coordinator: every group it owns that has a state or committed offsets."""

    def groups(self) -> Iterable[GroupOffsets]: ...


class LogOffsets(NamedTuple):
    log_start_offset: int
    high_watermark: int


@runtime_checkable
class LogOffsetsSource(Protocol):
    """The logs' offsets and record timestamps, local or cached from the leaders."""

    def offsets(
        self, partitions: Collection[TopicPartition]
    ) -> Mapping[TopicPartition, LogOffsets]:
        """Offsets of the partitions known; a partition missing from the answer has no lag row
        this time (its committed offset is still reported)."""
        ...

    def timestamp_at(self, topic: str, partition: int, offset: int) -> int | None:
        """Timestamp (ms) of the first record at or after ``offset``, or None if unknown."""
        ...


class LagRow(NamedTuple):
    group: str
    topic: str
    partition: int
    committed: int
    end: int | None
    lag: int | None
    lag_seconds: float | None


def clamped_lag(committed: int, offsets: LogOffsets) -> tuple[int, int]:
    """(position, lag): the committed offset clamped into [log start, end], and end - position."""
    start, end = offsets.log_start_offset, offsets.high_watermark
    position = min(max(committed, start), end)
    return position, end - position


@dataclass(frozen=True, slots=True)
class LagSnapshot:
    groups: tuple[GroupOffsets, ...]
    rows: tuple[LagRow, ...]


class LagCollector:
    """Computes the lag rows on the event loop (:meth:`snapshot`) and turns them into
    metric families off the loop (:meth:`families`)."""

    def __init__(self, groups: GroupSource, logs: LogOffsetsSource, limit: SeriesLimit, *,
                 timestamp_reads: int, clock: Callable[[], float] = time.time) -> None:
        self._groups = groups
        self._logs = logs
        self._limit = limit
        self._timestamp_reads = timestamp_reads
        self._clock = clock
        # (group, topic, partition) -> (position, timestamp ms) of the last reading
        self._timestamps: dict[tuple[str, str, int], tuple[int, int]] = {}

    def snapshot(self) -> LagSnapshot:
        groups = sorted(self._groups.groups(), key=lambda g: g.group)
        keys = sorted((g.group, tp[0], tp[1]) for g in groups for tp in g.committed)
        self._limit.retain_only(LAG.name, keys)
        self._limit.retain_only(MEMBERS.name, (g.group for g in groups))
        admitted = set(self._limit.admit_all(MEMBERS.name, [g.group for g in groups]))
        kept_groups = tuple(g for g in groups if g.group in admitted)
        by_group = {g.group: g for g in groups}
        kept = self._limit.admit_all(LAG.name, keys)
        offsets = self._logs.offsets({(topic, partition) for _, topic, partition in kept})
        now, reads = self._clock(), self._timestamp_reads
        rows = []
        for key in kept:
            group, topic, partition = key
            committed = by_group[group].committed[(topic, partition)]
            log = offsets.get((topic, partition))
            if log is None:
                rows.append(LagRow(group, topic, partition, committed, None, None, None))
                continue
            position, lag = clamped_lag(committed, log)
            seconds: float | None = 0.0
            if lag:
                reading = self._timestamps.get(key)
                if (reading is None or reading[0] != position) and reads > 0:
                    reads -= 1
                    timestamp = self._logs.timestamp_at(topic, partition, position)
                    if timestamp is not None:
                        reading = self._timestamps[key] = (position, timestamp)
                seconds = None if reading is None else max(0.0, now - reading[1] / 1000.0)
            rows.append(LagRow(group, topic, partition, committed, log.high_watermark, lag,
                               seconds))
        live = set(kept)
        for key in [key for key in self._timestamps if key not in live]:
            del self._timestamps[key]
        return LagSnapshot(kept_groups, tuple(rows))

    @staticmethod
    def families(snapshot: LagSnapshot) -> Iterator[GaugeRows]:
        committed, end, lag, seconds, members, state = (
            GaugeRows(spec) for spec in (COMMITTED, END_OFFSET, LAG, LAG_SECONDS, MEMBERS, STATE))
        for row in snapshot.rows:
            labels = (row.group, row.topic, str(row.partition))
            committed.add(labels, row.committed)
            if row.end is not None:
                end.add(labels, row.end)
            if row.lag is not None:
                lag.add(labels, row.lag)
            if row.lag_seconds is not None:
                seconds.add(labels, row.lag_seconds)
        for group in snapshot.groups:
            members.add((group.group,), group.members)
            for name in GROUP_STATES:
                state.add((group.group, name), 1.0 if name == group.state else 0.0)
        yield from (committed, end, lag, seconds, members, state)
