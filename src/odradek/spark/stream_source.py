"""``spark.readStream.format("odradek")``: micro-batches over per-partition offset ranges.

Offsets are Spark's Kafka JSON (``{"topic": {"0": 42}}``) and live only in Spark's checkpoint:
Spark writes a batch's end offsets to its offset log *before* running it, so a restarted query
re-plans an unfinished batch from the very same start and end, and — the log being immutable —
reads the very same records. Nothing is committed to the cluster.

Each trigger: the subscription is re-listed (partitions of new topics and new partitions of
known ones start at their earliest offset, as in Spark), the end is the high watermark, cut
down by ``maxOffsetsPerTrigger`` in proportion to each partition's backlog, or held back while
fewer than ``minOffsetsPerTrigger`` are waiting (until ``maxTriggerDelay`` passes). With
``Trigger.AvailableNow`` the end never passes what was there when the query started.

Data loss — a partition that went away, offsets that went backwards (topic recreated), offsets
deleted by retention before they were read — fails the query, or with ``failOnDataLoss=false``
is logged and skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from odradek.clock import monotonic_s

from ._internals import TopicPartition
from .options import SourceOptions
from .planning import (
    OffsetRange,
    OffsetResolver,
    Offsets,
    from_json,
    rate_limit,
    split_ranges,
    to_json,
)

__all__ = ["StreamReader"]

log = logging.getLogger(__name__)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.opts = options
        self._resolver: OffsetResolver | None = None
        self._target: Offsets | None = None  # Trigger.AvailableNow's end
        self._last_batch = monotonic_s()

    # Spark pickles the reader to ship ``read`` to executors: no sockets in the pickle.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_resolver"] = None
        return state

    @property
    def resolver(self) -> OffsetResolver:
        if self._resolver is None:
            self._resolver = OffsetResolver(self.opts)
        return self._resolver

    # ------------------------------------------------------------------ offsets

    def initialOffset(self) -> dict:
        tps = self.resolver.partitions()
        return to_json(self.resolver.resolve(self.opts.starting, tps))

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.opts.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.resolver.latest(self.resolver.partitions())

    def _latest(self, tps: list[TopicPartition], base: Offsets) -> Offsets:
        latest = self.resolver.latest(tps)
        if self._target is not None:
            target = self._target
            latest = {tp: min(end, target[tp]) if tp in target else base[tp]
                      for tp, end in latest.items()}
        return latest

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_json(start)
        tps = self.resolver.partitions()
        new = [tp for tp in tps if tp not in begin]
        base = {tp: begin[tp] for tp in tps if tp in begin}
        base.update(self.resolver.earliest(new))
        latest = self._latest(tps, base)
        waiting = sum(max(0, latest[tp] - base[tp]) for tp in tps)
        now = monotonic_s()
        minimum = self.opts.min_offsets_per_trigger
        if (minimum and not isinstance(limit, ReadAllAvailable) and waiting < minimum
                and (now - self._last_batch) * 1000 < self.opts.max_trigger_delay_ms):
            return start
        end = rate_limit(base, latest, limit.max_rows) if isinstance(limit, ReadMaxRows) \
            else latest
        # Partitions that disappeared stay out of ``end``: ``partitions()`` reports them.
        result = to_json(end)
        if result != start:
            self._last_batch = now
        return result

    def reportLatestOffset(self) -> dict | None:
        tps = self.resolver.partitions()
        return to_json(self.resolver.latest(tps)) if tps else None

    # ------------------------------------------------------------------ planning

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin = from_json(start)
        finish = from_json(end)
        gone = sorted(tp for tp in begin if tp not in finish)
        if gone:
            self._data_loss(f"{', '.join(f'{t}-{p}' for t, p in gone)} disappeared "
                            f"(topic or partitions deleted)")
        new = [tp for tp in finish if tp not in begin]
        starts = dict(begin)
        starts.update(self.resolver.earliest(new) if new else {})
        ranges = []
        for tp in sorted(finish):
            first, last = starts[tp], finish[tp]
            if last < first:
                self._data_loss(f"The offset of {tp.topic}-{tp.partition} went back from "
                                f"{first} to {last}")
                continue
            ranges.append(OffsetRange(tp.topic, tp.partition, first, last))
        return split_ranges(ranges, min_partitions=self.opts.min_partitions,
                            max_records=self.opts.max_records_per_partition)

    def _data_loss(self, detail: str) -> None:
        # the client only in steps that talk to the cluster (spark/source.py)
        from .reading import DataLossError, data_loss_message

        if self.opts.fail_on_data_loss:
            raise DataLossError(data_loss_message(detail))
        log.warning("%s; skipping (failOnDataLoss=false)", detail)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # Imported here: the decoder (numba) is for executors, not the driver's planner.
        from .reading import read_range

        if not isinstance(partition, OffsetRange):
            return iter(())  # no ranges planned: Spark still runs one empty partition
        return read_range(self.opts, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, not in the cluster."""

    def stop(self) -> None:
        if self._resolver is not None:
            self._resolver.close()
            self._resolver = None
