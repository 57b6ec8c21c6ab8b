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
  ``offsets.retention.minutes`` expires them. A group's states are those of its type: a
  classic group's (Kafka's ``ClassicGroupState``) or a consumer-type (KIP-848) group's
  (``Assigning`` and ``Reconciling`` instead of the two rebalance states);
* **group epoch** and **type**: a consumer-type group's epoch is bumped by every change
  the assignment depends on (a classic group's generation by every rebalance), so
  ``changes()`` of it counts rebalances, as Kafka's ``consumer-group-rebalance-count``;
  the count of groups by type and state (Kafka's ``group-count`` and
  ``consumer-group-count``) is taken before any cap.

Groups that are not consumers are left out: the exactly-once Spark sink's marker groups
(:func:`is_sink_marker_group`) commit a micro-batch count, not a read position, so their "lag"
would be the whole topic, growing for as long as the query runs (and fire the lag alert).

Cardinality is capped (rows and groups, see :class:`~odradek.metrics.limits.SeriesLimit`);
refused series are counted in ``odradek_metrics_series_dropped_total``. Rows are admitted in
sorted (group, topic, partition) order so the set kept is stable from scrape to scrape.

The collector is written against two small protocols, :class:`GroupSource` (the
coordinator) and :class:`LogOffsetsSource` (the logs), both called on the event loop. A log
source that also caches the offsets of partitions hosted on other brokers
(:class:`RemoteOffsetsSource`) is asked to refresh them before each snapshot
(:meth:`LagCollector.refresh`); the age of the oldest such offset used is exported.
"""

from __future__ import annotations

import concurrent.futures
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar, runtime_checkable

from odradek.types import TopicPartition

from .catalog_types import Feed, Kind, MetricSpec
from .exposition import GaugeRows
from .limits import SeriesLimit

__all__ = [
    "CONSUMER_GROUP_STATES",
    "GROUP_STATES",
    "LAG_METRICS",
    "GroupOffsets",
    "GroupSource",
    "LagCollector",
    "LagInput",
    "LagRow",
    "LogOffsets",
    "LogOffsetsSource",
    "RemoteOffsetsSource",
    "clamped_lag",
    "is_sink_marker_group",
    "sink_marker_group",
]

_T = TypeVar("_T")
GROUP_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
CONSUMER_GROUP_STATES = ("Empty", "Assigning", "Reconciling", "Stable", "Dead")
_STATES_BY_TYPE = {"classic": GROUP_STATES, "consumer": CONSUMER_GROUP_STATES}
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
EPOCH = MetricSpec(
    "odradek_consumer_group_epoch", G,
    "The group's epoch: a consumer-type (KIP-848) group's group epoch, a classic group's "
    "generation; each increase is a rebalance.", ("group",), SCRAPED, "GroupSource.groups")
INFO = MetricSpec(
    "odradek_consumer_group_info", G,
    "Always 1; the type label says which protocol the group runs: classic or consumer "
    "(KIP-848).", ("group", "type"), SCRAPED, "GroupSource.groups")
GROUPS = MetricSpec(
    "odradek_group_coordinator_groups", G,
    "Groups this coordinator owns, by type (classic, consumer) and state.", ("type", "state"),
    SCRAPED, "GroupSource.groups")
END_OFFSETS_AGE = MetricSpec(
    "odradek_consumer_lag_end_offsets_age_seconds", G,
    "Age of the oldest log end offset read from another broker (ListOffsets to the leader) "
    "that this scrape's lag used; 0 when all are local or fresh.", (), SCRAPED,
    "RemoteOffsetsSource.end_offsets_age")
LAG_METRICS = (COMMITTED, END_OFFSET, LAG, LAG_SECONDS, MEMBERS, STATE, EPOCH, INFO, GROUPS,
               END_OFFSETS_AGE)


# The name is defined here, beside the rule that hides such groups, and not in
# odradek.spark (which the sink uses it from): importing that package imports pyspark, which
# a broker does not have.
_SINK_MARKER_GROUP = re.compile(
    r".+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-[0-9]+")


def sink_marker_group(prefix: str, query_id: str, partition: int) -> str:
    """The marker group (and ``transactional.id``) of one task of an exactly-once Spark sink
    (:mod:`odradek.spark.exactly_once`): ``<transactionalIdPrefix>-<queryId>-<partitionId>``,
    the query id being the UUID Spark keeps in the query's checkpoint."""
    return f"{prefix}-{query_id}-{partition}"


def is_sink_marker_group(group: str) -> bool:
    """Whether ``group`` is named like :func:`sink_marker_group`: its offset counts committed
    micro-batches, so it has no lag to report."""
    return _SINK_MARKER_GROUP.fullmatch(group) is not None


class GroupOffsets(NamedTuple):
    """One group owned by this coordinator: state, live members, committed offsets, type
    (``classic`` or ``consumer``) and epoch (a classic group's generation).

    This and the other records built on the event loop each scrape (:class:`LogOffsets`,
    :class:`LagRow`) are named tuples: a frozen dataclass costs several times as much to
    build, and the loop is the broker's."""

    group: str
    state: str
    members: int
    committed: Mapping[TopicPartition, int]
    group_type: str = "classic"
    epoch: int = 0


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


@runtime_checkable
class RemoteOffsetsSource(Protocol):
    """A :class:`LogOffsetsSource` that also serves partitions hosted elsewhere, from a cache
    it refreshes by asking their leaders."""

    def refresh(self, partitions: Collection[TopicPartition]
                ) -> concurrent.futures.Future[None] | None:
        """On the loop: start refreshing (if due); the future completes when the refresh in
        flight is done (bounded by its timeout), None when none is in flight."""
        ...

    def end_offsets_age(self) -> float:
        """Age (s) of the oldest remote offset the last :meth:`offsets` answer used."""
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
    end_offsets_age: float | None = None
    counts: tuple[tuple[str, str, int], ...] = ()  # (type, state, groups), every group


class LagInput(NamedTuple):
    """What :meth:`LagCollector.read` copies on the loop: the groups and the offsets of
    every partition they committed (sorting, capping and clamping happen off the loop)."""

    groups: list[GroupOffsets]
    offsets: Mapping[TopicPartition, LogOffsets]
    end_offsets_age: float | None


OnLoop = Callable[[Callable[[], _T]], _T | None]
"""Runs a function on the broker's loop and returns its result (None if the loop is stuck)."""


class LagCollector:
    """Consumer lag in three steps, so the broker's loop only copies numbers:

    1. :meth:`refresh` (on the loop): a remote-offsets source starts asking leaders;
    2. :meth:`read` (on the loop): groups and log offsets, copied;
    3. :meth:`compute` (scrape thread): sort, cap, clamp; the few record timestamps it
       needs are read in one more hop onto the loop. :meth:`families` renders the result.
    """

    def __init__(self, groups: GroupSource, logs: LogOffsetsSource, limit: SeriesLimit, *,
                 timestamp_reads: int, clock: Callable[[], float] = time.time) -> None:
        self._groups = groups
        self._logs = logs
        self._limit = limit
        self._timestamp_reads = timestamp_reads
        self._clock = clock
        # (group, topic, partition) -> (position, timestamp ms) of the last reading; used
        # only under _lock (two scrapes may compute at once, from two server threads)
        self._timestamps: dict[tuple[str, str, int], tuple[int, int]] = {}
        self._lock = threading.Lock()

    def refresh(self) -> concurrent.futures.Future[None] | None:
        """On the loop, before :meth:`read`: let a remote-offsets source refresh the
        partitions the groups committed (the scrape thread then waits for the future)."""
        logs = self._logs
        if not isinstance(logs, RemoteOffsetsSource):
            return None
        return logs.refresh({tp for group in self._consumer_groups() for tp in group.committed})

    def _consumer_groups(self) -> list[GroupOffsets]:
        return [g for g in self._groups.groups() if not is_sink_marker_group(g.group)]

    def read(self) -> LagInput:
        """On the loop: copies only (a set of the committed partitions, their offsets)."""
        groups = self._consumer_groups()
        logs = self._logs
        offsets = logs.offsets({tp for group in groups for tp in group.committed})
        age = logs.end_offsets_age() if isinstance(logs, RemoteOffsetsSource) else None
        return LagInput(groups, offsets, age)

    def compute(self, data: LagInput, on_loop: OnLoop[dict[int, int | None]]) -> LagSnapshot:
        """Off the loop: the rows admitted by the caps, in (group, topic, partition) order."""
        with self._lock:
            return self._compute(data, on_loop)

    def _compute(self, data: LagInput, on_loop: OnLoop[dict[int, int | None]]) -> LagSnapshot:
        groups = sorted(data.groups, key=lambda g: g.group)
        keys = sorted((g.group, tp[0], tp[1]) for g in groups for tp in g.committed)
        limit = self._limit
        limit.retain_only(LAG.name, keys)
        limit.retain_only(MEMBERS.name, (g.group for g in groups))
        admitted = set(limit.admit_all(MEMBERS.name, [g.group for g in groups]))
        kept_groups = tuple(g for g in groups if g.group in admitted)
        by_group = {g.group: g.committed for g in groups}
        kept = limit.admit_all(LAG.name, keys)
        offsets, timestamps = data.offsets, self._timestamps
        now, budget = self._clock(), self._timestamp_reads
        rows: list[LagRow] = []
        wanted: list[tuple[int, str, int, int]] = []  # (row index, topic, partition, position)
        for key in kept:
            group, topic, partition = key
            tp = TopicPartition(topic, partition)
            committed = by_group[group][tp]
            log = offsets.get(tp)
            if log is None:
                rows.append(LagRow(group, topic, partition, committed, None, None, None))
                continue
            position, lag = clamped_lag(committed, log)
            seconds: float | None = 0.0
            if lag:
                reading = timestamps.get(key)
                if (reading is None or reading[0] != position) and len(wanted) < budget:
                    wanted.append((len(rows), topic, partition, position))
                seconds = None if reading is None else max(0.0, now - reading[1] / 1000.0)
            rows.append(LagRow(group, topic, partition, committed, log.high_watermark, lag,
                               seconds))
        if wanted:
            read = self._logs.timestamp_at
            found = on_loop(lambda: {index: read(topic, partition, position)
                                     for index, topic, partition, position in wanted}) or {}
            for index, _topic, _partition, position in wanted:
                timestamp = found.get(index)
                if timestamp is not None:
                    row = rows[index]
                    timestamps[(row.group, row.topic, row.partition)] = (position, timestamp)
                    rows[index] = row._replace(
                        lag_seconds=max(0.0, now - timestamp / 1000.0))
        live = set(kept)
        for key in [key for key in timestamps if key not in live]:
            del timestamps[key]
        counts = Counter((g.group_type, g.state) for g in groups)
        return LagSnapshot(kept_groups, tuple(rows), data.end_offsets_age,
                           tuple((t, state, n) for (t, state), n in sorted(counts.items())))

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
        epoch, info, counts = GaugeRows(EPOCH), GaugeRows(INFO), GaugeRows(GROUPS)
        for group in snapshot.groups:
            members.add((group.group,), group.members)
            for name in _STATES_BY_TYPE.get(group.group_type, GROUP_STATES):
                state.add((group.group, name), 1.0 if name == group.state else 0.0)
            epoch.add((group.group,), group.epoch)
            info.add((group.group, group.group_type), 1.0)
        for group_type, group_state, count in snapshot.counts:
            counts.add((group_type, group_state), count)
        yield from (committed, end, lag, seconds, members, state, epoch, info, counts)
        if snapshot.end_offsets_age is not None:
            age = GaugeRows(END_OFFSETS_AGE)
            age.add((), snapshot.end_offsets_age)
            yield age
