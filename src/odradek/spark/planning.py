"""Offset planning on the driver: which partitions, which offsets, how many Spark tasks.

The pure half — :func:`split_ranges` (``minPartitions``, ``maxRecordsPerPartition``),
:func:`rate_limit` (``maxOffsetsPerTrigger``, Spark's proportional split), the JSON form of
offsets Spark keeps in its checkpoint — needs no cluster. :class:`OffsetResolver` is the other
half: it asks the cluster (Metadata, ListOffsets) what the subscription covers and where
``earliest``/``latest``/a timestamp falls.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from itertools import pairwise
from typing import Any

from pyspark.sql.datasource import InputPartition

from ._internals import (
    EARLIEST,
    LATEST,
    AdminClient,
    BrokerResponseError,
    ErrorCode,
    KafkaClientError,
    TopicPartition,
)
from .options import OffsetSpec, OptionError, SourceOptions

__all__ = ["OffsetRange", "OffsetResolver", "from_json", "rate_limit", "split_ranges",
           "to_json"]

Offsets = dict[TopicPartition, int]


class OffsetRange(InputPartition):
    """One Spark task's share of one Kafka partition: offsets ``[start, end)``."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end

    @property
    def size(self) -> int:
        return self.end - self.start

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OffsetRange) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"OffsetRange({self.topic}-{self.partition} [{self.start}, {self.end}))"


# ---------------------------------------------------------------------- JSON (checkpoint)

def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{"topic": {"0": 42}}``, Spark's Kafka offset JSON (partitions in numeric order)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_json(data: Mapping[str, Mapping[str, int]] | str) -> Offsets:
    parsed = json.loads(data) if isinstance(data, str) else data
    return {TopicPartition(topic, int(p)): int(o)
            for topic, parts in parsed.items() for p, o in parts.items()}


# ---------------------------------------------------------------------- pure planning

def split_ranges(ranges: list[OffsetRange], *, min_partitions: int | None = None,
                 max_records: int | None = None) -> list[OffsetRange]:
    """Spark's ``KafkaOffsetRangeCalculator``: empty ranges dropped; each range cut into
    pieces of at most ``max_records`` offsets; and when fewer than ``min_partitions`` ranges
    result, large ranges split further in proportion to their size."""
    ranges = [r for r in ranges if r.size > 0]
    if max_records:
        ranges = [piece for r in ranges for piece in _cut(r, math.ceil(r.size / max_records))]
    if min_partitions and len(ranges) < min_partitions:
        total = sum(r.size for r in ranges)
        ideal = total / min_partitions
        ranges = [piece for r in ranges
                  for piece in _cut(r, max(round(r.size / ideal), 1) if ideal else 1)]
    return ranges


def _cut(r: OffsetRange, parts: int) -> list[OffsetRange]:
    parts = max(1, min(parts, r.size))
    bounds = [r.start + r.size * i // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, a, b) for a, b in pairwise(bounds)]


def rate_limit(starts: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               limit: int) -> Offsets:
    """At most ~``limit`` offsets in total past ``starts``, shared in proportion to each
    partition's backlog (a small backlog still gets at least one), as Spark's Kafka source
    does for ``maxOffsetsPerTrigger``."""
    sizes = {tp: latest[tp] - starts.get(tp, latest[tp]) for tp in latest}
    total = sum(s for s in sizes.values() if s > 0)
    if total <= limit:
        return dict(latest)
    out: Offsets = {}
    for tp, end in latest.items():
        begin = starts.get(tp, end)
        size = sizes[tp]
        if size <= 0:
            out[tp] = end
            continue
        share = limit * (size / total)
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, begin + step)
    return out


# ---------------------------------------------------------------------- the cluster side

class OffsetResolver:
    """Metadata and ListOffsets for one source's subscription (driver side)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        settings = {k: v for k, v in options.client.items()
                    if k in ("client_id", "request_timeout_ms")}
        settings.setdefault("client_id", "odradek-spark-driver")
        settings.update(options.security)
        try:
            self.admin = AdminClient(options.bootstrap_servers, **settings)
        except ValueError as exc:
            raise OptionError("kafka.bootstrap.servers", str(exc)) from None

    def close(self) -> None:
        self.admin.close()

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        """Retries like Spark's ``fetchOffset.numRetries``; an unreachable cluster becomes
        an error naming ``kafka.bootstrap.servers``."""
        attempts = self.options.fetch_retries + 1
        for attempt in range(attempts):
            try:
                return fn()
            except KafkaClientError as exc:
                if attempt + 1 >= attempts:
                    if "no broker reachable" in str(exc) or "metadata refresh failed" in \
                            str(exc):
                        raise OptionError("kafka.bootstrap.servers",
                                          f"no broker reachable at "
                                          f"{self.options.bootstrap_servers} ({what}): {exc}"
                                          ) from None
                    raise
                time.sleep(self.options.fetch_retry_interval_ms / 1000)
        raise AssertionError("unreachable")

    def partitions(self) -> list[TopicPartition]:
        """The partitions the subscription covers right now (sorted). A subscribed topic or
        an assigned partition that does not exist fails, as in Spark's Kafka source (which
        raises Kafka's UnknownTopicOrPartitionException): reading it as empty would hide a
        typo or a deleted topic."""
        opts = self.options
        topics = self._call("Metadata", lambda: self.admin.list_topics())
        if opts.assign:
            _fail_if_missing("assign", [f"partition {t}-{p}" for t, p in opts.assign
                                        if t not in topics or p not in topics[t].partitions])
            return [TopicPartition(t, p) for t, p in opts.assign]
        if opts.subscribe:
            _fail_if_missing("subscribe", [f"topic {t!r}" for t in opts.subscribe
                                           if t not in topics])
            names: Iterable[str] = opts.subscribe
        else:
            pattern = re.compile(opts.subscribe_pattern or "")
            names = [t for t in topics if pattern.fullmatch(t)]
        return sorted({TopicPartition(t, p) for t in names for p in topics[t].partitions})

    def list_offsets(self, query: Mapping[TopicPartition, int]
                     ) -> dict[TopicPartition, int | None]:
        if not query:
            return {}
        # read_committed plans up to the last stable offset: the reader cannot pass it
        isolation = 1 if self.options.client.get("isolation_level") == "read_committed" else 0
        found = self._call("ListOffsets", lambda: self.admin.list_offsets(
            dict(query), isolation_level=isolation))
        return {tp: (value.offset if value is not None else None)
                for tp, value in found.items()}

    def earliest(self, tps: Iterable[TopicPartition]) -> Offsets:
        return {tp: o or 0 for tp, o in self.list_offsets({tp: EARLIEST for tp in tps}).items()}

    def latest(self, tps: Iterable[TopicPartition]) -> Offsets:
        return {tp: o or 0 for tp, o in self.list_offsets({tp: LATEST for tp in tps}).items()}

    def resolve(self, spec: OffsetSpec, tps: list[TopicPartition]) -> Offsets:
        """Concrete offsets for ``spec`` on ``tps``."""
        if spec.kind == "earliest":
            return self.earliest(tps)
        if spec.kind == "latest":
            return self.latest(tps)
        if spec.kind == "offsets":
            wanted = {TopicPartition(t, p): o for (t, p), o in spec.offsets.items()}
            missing = [tp for tp in tps if tp not in wanted]
            if missing:
                raise OptionError(spec.option, f"must give every partition of the "
                                  f"subscription; missing {_names(missing)} (use -2 for "
                                  f"earliest, -1 for latest)")
            specials = {tp: o for tp, o in wanted.items() if o < 0 and tp in tps}
            resolved = self.list_offsets(specials)
            return {tp: (resolved[tp] or 0) if wanted[tp] < 0 else wanted[tp] for tp in tps}
        if spec.kind == "timestamp":
            query = {tp: spec.timestamp for tp in tps}
        else:
            query = {TopicPartition(t, p): ts for (t, p), ts in spec.offsets.items()}
            missing = [tp for tp in tps if tp not in query]
            if missing:
                raise OptionError(spec.option, f"must give every partition of the "
                                  f"subscription; missing {_names(missing)}")
            query = {tp: ts for tp, ts in query.items() if tp in tps}
        found = self.list_offsets(query)
        unmatched = [tp for tp, o in found.items() if o is None]
        if unmatched and self.options.timestamp_strategy == "error" and \
                spec.option.startswith("starting"):
            raise OptionError(spec.option, f"no record at or after the timestamp in "
                              f"{_names(unmatched)} (set startingOffsetsByTimestampStrategy="
                              f"latest to start at the end instead)")
        ends = self.latest(unmatched)
        return {tp: (o if o is not None else ends[tp]) for tp, o in found.items()}


def _fail_if_missing(option: str, missing: list[str]) -> None:
    if missing:
        raise BrokerResponseError(ErrorCode.unknown_topic_or_partition, option,
                                  f"This server does not host this topic-partition "
                                  f"(unknown: {', '.join(missing)})")


def _names(tps: Iterable[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(tps))
