"""Reading partitions for a Fetch: which offsets, how many bytes, what errors.

Rules clients depend on (COMPAT.md): the answer holds exactly the requested partitions; an
offset beyond the log end (or below the log start) is OFFSET_OUT_OF_RANGE, one at or past
the fetchable end but inside the log is simply empty (a consumer between the HW and the log
end: Kafka's rule, since a new leader's HW lags); ``max_bytes`` bounds the answer except
that the first partition with data always gets at least one whole batch (KIP-74). Consumers
(``replica_id == -1``) read below the high watermark; followers (``replica_id >= 0``) up to
the log end, and their fetch offset — once checked to lie inside our log — is their log end
offset, reported through ``on_follower_fetch`` (it may move the HW and bring the follower
into the ISR). A follower's partition that the leader's replication throttle holds back
(``held_back``, :mod:`.throttles`) is answered with its offsets and no records: the
follower fetches the same offset again.

Records stay in the page cache: a partition's answer carries a file region, which the
connection sends with ``sendfile``.

Two hooks come from the Fetch handler: ``authorized(topic)``, the consumer's READ permission
(a refused partition is answered TOPIC_AUTHORIZATION_FAILED, and, as in Kafka, does not by
itself end a long poll), and ``session``, an incremental fetch session's view: which of its
partitions to visit at all (those that may have changed, ``to_read``), and its test that the
client already knows everything a partition with nothing to read would say (``unchanged``):
such a partition is left out of the answer without being read (:mod:`.fetch_session`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kio.schema.errors import ErrorCode

from odradek.protocol.errors import response_error
from odradek.protocol.fetch_response import FetchPartitionResult, FetchTopicResult

from .partition import Partition

__all__ = [
    "FetchParams",
    "FetchRead",
    "HeldBack",
    "PartitionFetch",
    "SessionReads",
    "has_new_data",
    "read_partitions",
]

log = logging.getLogger(__name__)

LeaderLookup = Callable[[str, int, int], Partition]
"""``(topic, partition, current_leader_epoch) -> Partition`` we lead; raises Kafka's
errors otherwise (the epoch fenced first)."""

FollowerFetchListener = Callable[[Partition, int, int], None]
"""``(partition, replica_id, fetch_offset)``: a follower's position, checked in range."""

Authorized = Callable[[str], bool]
"""``topic -> bool``: may the client read it."""

HeldBack = Callable[[Partition, int], bool]
"""``(partition, replica_id) -> bool``: leave the records out of this follower's answer."""


@dataclass(frozen=True, slots=True)
class PartitionFetch:
    topic: str
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1


class SessionReads(Protocol):
    """What an incremental fetch session decides about a read (:class:`.FetchContext`)."""

    @property
    def watch_key(self) -> Hashable:
        """The one key a parked fetch of the session watches (woken by any change to one
        of the session's partitions)."""
        ...

    def to_read(self, authorized: Authorized | None = None) -> Sequence[PartitionFetch]:
        """The partitions of ``FetchParams.partitions`` to visit now, in order."""
        ...

    def unchanged(self, wanted: PartitionFetch, high_watermark: int, last_stable_offset: int,
                  log_start_offset: int) -> bool:
        """For a partition with nothing to read: True when the client knows it all
        already (skip it)."""
        ...


@dataclass(frozen=True, slots=True)
class FetchParams:
    replica_id: int
    min_bytes: int
    max_bytes: int
    max_wait_ms: int
    partitions: tuple[PartitionFetch, ...]
    isolation_level: int = 0  # 1: read_committed

    @property
    def from_follower(self) -> bool:
        return self.replica_id >= 0

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == 1 and self.replica_id < 0


@dataclass(frozen=True, slots=True)
class FetchRead:
    topics: list[FetchTopicResult]
    total_bytes: int
    errored: bool  # some partition answers with an error (an answer worth sending now)

    def satisfies(self, params: FetchParams) -> bool:
        return self.total_bytes >= params.min_bytes or self.errored


def read_partitions(
    params: FetchParams, lookup: LeaderLookup, on_follower_fetch: FollowerFetchListener,
    *, session: SessionReads | None = None, authorized: Authorized | None = None,
    held_back: HeldBack | None = None,
) -> FetchRead:
    """Read every wanted partition (with a ``session``: those it says to visit), in request
    order, within the byte limits. A partition ``held_back`` from a follower adds nothing
    to ``total_bytes``, so a long poll waits on (Kafka's DelayedFetch)."""
    remaining = params.max_bytes
    total = 0
    errored = False
    first_with_data = True
    refused = 0
    topics: list[FetchTopicResult] = []
    by_topic: dict[str, list[FetchPartitionResult]] = {}
    unchanged = None
    visit: Sequence[PartitionFetch] = params.partitions
    if session is not None:
        unchanged = session.unchanged
        visit = session.to_read(authorized)
    for wanted in visit:
        parts = by_topic.get(wanted.topic)
        if parts is None:
            parts = by_topic[wanted.topic] = []
            topics.append(FetchTopicResult(wanted.topic, parts))
        if authorized is not None and not authorized(wanted.topic):
            parts.append(FetchPartitionResult(wanted.partition,
                                              ErrorCode.topic_authorization_failed))
            refused += 1
            continue
        try:
            result, size = _read_one(
                params, wanted, min(remaining, wanted.partition_max_bytes), first_with_data,
                lookup, on_follower_fetch, unchanged, held_back,
            )
        except Exception as exc:
            errored = True
            code, _message = response_error(exc, f"fetch from {wanted.topic}-{wanted.partition}")
            result, size = FetchPartitionResult(wanted.partition, code), 0
        if result is None:
            continue
        parts.append(result)
        if size:
            first_with_data = False
            total += size
            remaining = max(remaining - size, 0)
    if session is not None:
        topics = [topic for topic in topics if topic.partitions]
    if refused and refused == len(params.partitions):
        errored = True  # nothing it may read: no reason to wait
    return FetchRead(topics, total, errored)


def _read_one(
    params: FetchParams,
    wanted: PartitionFetch,
    max_bytes: int,
    min_one_batch: bool,
    lookup: LeaderLookup,
    on_follower_fetch: FollowerFetchListener,
    unchanged: Callable[[PartitionFetch, int, int, int], bool] | None,
    held_back: HeldBack | None,
) -> tuple[FetchPartitionResult | None, int]:
    partition = lookup(wanted.topic, wanted.partition, wanted.current_leader_epoch)
    from_follower = params.from_follower
    read_committed = params.read_committed
    fetch_offset = wanted.fetch_offset
    upper = partition.check_fetch_offset(fetch_offset, from_follower, read_committed)
    if from_follower:
        # Only an offset inside our log is the follower's LEO: one past our end would be
        # a diverged follower, and must never count towards the high watermark.
        on_follower_fetch(partition, params.replica_id, fetch_offset)
    partition_log = partition.log
    # A follower outside the ISR is not skipped: each of its fetches must try its way back
    # in (an expansion refused or deferred is retried), so it never turns clean.
    if (unchanged is not None and fetch_offset >= upper
            and (not from_follower or params.replica_id in partition.isr)
            and unchanged(wanted, partition_log.high_watermark,
                          partition_log.last_stable_offset, partition_log.log_start_offset)):
        return None, 0
    region = None
    aborted: list[tuple[int, int]] | None = [] if read_committed else None
    if (fetch_offset < upper and (max_bytes > 0 or min_one_batch)
            and not (from_follower and held_back is not None
                     and held_back(partition, params.replica_id))):
        read = partition_log.read(fetch_offset, max_bytes,
                                  isolation_high_watermark=not from_follower,
                                  min_one_batch=min_one_batch, read_committed=read_committed)
        region = read.region
        if region is not None and read_committed:
            aborted = [
                (txn.producer_id, txn.first_offset)
                for txn in partition_log.aborted_transactions(fetch_offset, read.next_offset)
            ]
    result = FetchPartitionResult(
        partition_index=wanted.partition,
        error_code=ErrorCode.none,
        high_watermark=partition_log.high_watermark,
        last_stable_offset=partition_log.last_stable_offset,
        log_start_offset=partition_log.log_start_offset,
        records=region,
        aborted_transactions=aborted,
    )
    return result, (region.length if region is not None else 0)


def has_new_data(params: FetchParams, lookup: LeaderLookup,
                 session: SessionReads | None = None) -> bool:
    """Cheap pre-check before re-reading: did any wanted partition (with a ``session``: any
    it would visit) move past its offset (or out from under it: an error is an answer too)?"""
    for wanted in params.partitions if session is None else session.to_read():
        try:
            partition = lookup(wanted.topic, wanted.partition, wanted.current_leader_epoch)
            partition.check_fetch_offset(wanted.fetch_offset, params.from_follower)
        except Exception:
            return True  # an error is an answer
        end = partition.fetchable_end(params.from_follower, params.read_committed)
        if end > wanted.fetch_offset:
            return True
    return False
