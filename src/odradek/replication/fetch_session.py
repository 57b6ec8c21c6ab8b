"""Incremental fetch sessions (KIP-227): a fetch names only what changed, and so does its answer.

Without a session every Fetch lists every partition its sender follows or consumes, and the
leader reads every one of them: a follower of the default 50-partition ``__consumer_offsets``
asks about 50 idle partitions on each of its fetches, hundreds of times a second. With a
session the leader remembers, per partition, the fetch position and what it last told the
client; a request then lists only partitions whose position changed (plus those to add, and
``forgotten_topics_data`` to drop), and the answer carries only partitions with something to
say: records, an error, or a new high watermark, last stable offset or log start offset. A
partition with nothing new is not even read (:meth:`FetchContext.unchanged`).

The wire rules, as Kafka's ``FetchManager`` applies them (``session_id``, ``session_epoch``):

============  =====  ======================================================================
session id    epoch  meaning
============  =====  ======================================================================
0             -1     a full fetch without a session (every pre-KIP-227 client, and odradek's
                     own until a session is offered)
0             0      a full fetch that asks for a new session: the answer carries its id (0
                     when the cache has no room), and the next request uses epoch 1
id            -1     close session ``id``; answer this fetch in full, without a session
id            0      close session ``id`` and open a new one (a full fetch)
id            n > 0  an incremental fetch: ``n`` must be the session's next epoch, else
                     INVALID_FETCH_SESSION_EPOCH; an unknown id is FETCH_SESSION_ID_NOT_FOUND
============  =====  ======================================================================

The epoch goes 1, 2, ..., 2^31-1, then wraps to 1. A session left with no partition is
closed (the answer then carries session id 0). Answers with a session error carry no
partitions; the client starts over with a full fetch.

**The cache** holds at most ``max.incremental.fetch.session.cache.slots`` sessions (Kafka's
default 1000; 0 turns sessions off). When it is full a new session may evict, in this order:
any session unused for :data:`EVICTION_MS` (2 minutes, as Kafka's fixed
``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS``); else the least valuable session that is not
recently created, where follower sessions are privileged over consumer sessions and, between
equals, the one with fewer partitions is worth less — a new session evicts it only if it is
worth more. A follower session evicts a consumer session even if that one is new. An evicted
client gets FETCH_SESSION_ID_NOT_FOUND and opens a new session with a full fetch.

Incremental answers move each partition they include to the end of the session's order, so
that under ``max_bytes`` a busy partition does not starve the ones behind it.

This module holds no I/O and no clock of its own: times come in as arguments.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from odradek.protocol.fetch_response import FetchPartitionResult, FetchTopicResult
from odradek.types import TopicPartition

from .reads import PartitionFetch

__all__ = [
    "EVICTION_MS",
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "INVALID_SESSION_ID",
    "FetchContext",
    "FetchSession",
    "FetchSessionCache",
    "SessionError",
    "next_epoch",
]

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_MS = 120_000
_MAX_EPOCH = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (1 after the initial full fetch; wraps to 1, never 0)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    """One partition of a session: where the client reads, and what it was last told.

    ``high_watermark`` is -1 after an error was sent, so the partition is answered again
    once the error is gone."""

    fetch: PartitionFetch
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1

    def told(self, result: FetchPartitionResult) -> bool:
        """Record what ``result`` tells the client; True if it must be sent (it has records,
        an error, a diverging epoch, or offsets the client does not know yet)."""
        must_send = bool(result.error_code) or result.diverging_epoch is not None
        records = result.records
        if records is not None and (len(records) if isinstance(records, bytes)
                                    else records.length):
            must_send = True
        if result.error_code:
            self.high_watermark = -1
            return True
        if (result.high_watermark != self.high_watermark
                or result.last_stable_offset != self.last_stable_offset
                or result.log_start_offset != self.log_start_offset):
            self.high_watermark = result.high_watermark
            self.last_stable_offset = result.last_stable_offset
            self.log_start_offset = result.log_start_offset
            must_send = True
        return must_send


@dataclass(eq=False)
class FetchSession:
    """One client's session: its partitions in fetch order, and the epoch it expects."""

    id: int
    privileged: bool  # a follower's session
    partitions: dict[TopicPartition, CachedPartition]
    created_ms: int
    last_used_ms: int
    epoch: int = 1

    def worth(self) -> tuple[bool, int]:
        """What a session is worth keeping (privileged first, then more partitions)."""
        return self.privileged, len(self.partitions)

    def update(self, wanted: Iterable[PartitionFetch],
               forgotten: Iterable[TopicPartition]) -> set[TopicPartition]:
        """Apply an incremental request: new positions, new partitions (at the end), and
        forgotten ones removed. Returns the keys the request named."""
        touched: set[TopicPartition] = set()
        partitions = self.partitions
        for fetch in wanted:
            key = TopicPartition(fetch.topic, fetch.partition)
            touched.add(key)
            cached = partitions.get(key)
            if cached is None:
                partitions[key] = CachedPartition(fetch)
            else:
                cached.fetch = fetch
        for key in forgotten:
            partitions.pop(key, None)
            touched.discard(key)
        return touched


@dataclass(frozen=True, slots=True)
class SessionError:
    """The request's session cannot be used: answer ``code`` with no partitions."""

    code: ErrorCode
    message: str


SessionListener = Callable[[int, int], None]
"""``(sessions, partitions cached)``: the cache's size changed (the metrics' gauges)."""


@dataclass
class FetchSessionCache:
    """The broker's sessions, bounded by ``max_slots`` (see the module doc for eviction)."""

    max_slots: int = 1000
    eviction_ms: int = EVICTION_MS
    random_id: Callable[[], int] = field(
        default=lambda: random.randint(1, _MAX_EPOCH), repr=False)
    on_change: SessionListener | None = None
    on_evict: Callable[[], None] | None = None
    sessions: dict[int, FetchSession] = field(default_factory=dict)

    @property
    def partitions_cached(self) -> int:
        return sum(len(s.partitions) for s in self.sessions.values())

    def new_context(self, *, session_id: int, epoch: int, wanted: Sequence[PartitionFetch],
                    forgotten: Sequence[TopicPartition], from_follower: bool,
                    now_ms: int) -> FetchContext | SessionError:
        """The context of one Fetch request (see the table in the module doc)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):  # a full fetch
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)
            if epoch == FINAL_EPOCH or self.max_slots <= 0:
                return FetchContext(tuple(wanted))
            return FetchContext(tuple(wanted), cache=self, privileged=from_follower,
                                now_ms=now_ms)
        session = self.sessions.get(session_id)
        if session is None:
            return SessionError(ErrorCode.fetch_session_id_not_found,
                                f"fetch session {session_id} not found")
        if session.epoch != epoch:
            return SessionError(ErrorCode.invalid_fetch_session_epoch,
                                f"fetch session {session_id} expected epoch {session.epoch}, "
                                f"got {epoch}")
        touched = session.update(wanted, forgotten)
        if not session.partitions:
            self.remove(session_id)
            return FetchContext(())
        session.epoch = next_epoch(session.epoch)
        session.last_used_ms = now_ms
        self._changed()
        return FetchContext(tuple(c.fetch for c in session.partitions.values()),
                            session=session, touched=touched)

    def create(self, privileged: bool, partitions: dict[TopicPartition, CachedPartition],
               now_ms: int) -> FetchSession | None:
        """A new session, if there is room or a session to evict; None otherwise."""
        if len(self.sessions) >= self.max_slots and not self._evict_for(
                (privileged, len(partitions)), now_ms):
            return None
        session_id = self.random_id()
        while session_id in self.sessions or session_id == INVALID_SESSION_ID:
            session_id = self.random_id()
        session = FetchSession(session_id, privileged, partitions, now_ms, now_ms)
        self.sessions[session_id] = session
        self._changed()
        return session

    def remove(self, session_id: int) -> None:
        if self.sessions.pop(session_id, None) is not None:
            self._changed()

    def _evict_for(self, worth: tuple[bool, int], now_ms: int) -> bool:
        sessions = self.sessions.values()
        stalest = min(sessions, key=lambda s: s.last_used_ms, default=None)
        if stalest is not None and now_ms - stalest.last_used_ms > self.eviction_ms:
            return self._evict(stalest)
        privileged = worth[0]
        candidates = [
            s for s in sessions
            if now_ms - s.created_ms > self.eviction_ms or (privileged and not s.privileged)
        ]
        if not candidates:
            return False
        cheapest = min(candidates, key=lambda s: (*s.worth(), s.id))
        if worth <= cheapest.worth():
            return False
        return self._evict(cheapest)

    def _evict(self, session: FetchSession) -> bool:
        del self.sessions[session.id]
        if self.on_evict is not None:
            self.on_evict()
        return True

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(len(self.sessions), self.partitions_cached)


class FetchContext:
    """What one Fetch reads and how its answer is cut to its session.

    Three kinds, by the constructor's arguments: sessionless (no ``cache``, no
    ``session``), a full fetch that opens a session (``cache``), and an incremental fetch
    (``session``)."""

    __slots__ = ("_cache", "_now_ms", "_privileged", "_session", "_touched", "partitions")

    def __init__(self, partitions: tuple[PartitionFetch, ...], *,
                 cache: FetchSessionCache | None = None, privileged: bool = False,
                 now_ms: int = 0, session: FetchSession | None = None,
                 touched: set[TopicPartition] | None = None) -> None:
        self.partitions = partitions
        self._cache = cache
        self._privileged = privileged
        self._now_ms = now_ms
        self._session = session
        self._touched = touched or set()

    @property
    def incremental(self) -> bool:
        return self._session is not None

    def unchanged(self, fetch: PartitionFetch, high_watermark: int, last_stable_offset: int,
                  log_start_offset: int) -> bool:
        """For an incremental fetch: the client already knows all the partition would say
        (it has nothing to read at ``fetch``, which is called only then): skip reading it."""
        session = self._session
        if session is None:
            return False
        key = TopicPartition(fetch.topic, fetch.partition)
        if key in self._touched:
            return False
        cached = session.partitions.get(key)
        return (cached is not None and cached.high_watermark == high_watermark
                and cached.last_stable_offset == last_stable_offset
                and cached.log_start_offset == log_start_offset)

    def respond(self, topics: list[FetchTopicResult]) -> tuple[list[FetchTopicResult], int]:
        """The answer to send and its session id; updates the session with what it tells."""
        session = self._session
        if session is not None:
            return self._incremental(session, topics), session.id
        cache = self._cache
        if cache is None:
            return topics, INVALID_SESSION_ID
        partitions: dict[TopicPartition, CachedPartition] = {}
        results = {TopicPartition(t.topic, p.partition_index): p
                   for t in topics for p in t.partitions}
        for fetch in self.partitions:
            key = TopicPartition(fetch.topic, fetch.partition)
            cached = partitions[key] = CachedPartition(fetch)
            result = results.get(key)
            if result is not None:
                cached.told(result)
        created = cache.create(self._privileged, partitions, self._now_ms)
        return topics, created.id if created is not None else INVALID_SESSION_ID

    def throttled(self) -> int:
        """The session id of an answer emptied by a quota: the client was told nothing, so
        every partition is answered again at its next fetch."""
        session = self._session
        if session is None:
            return INVALID_SESSION_ID
        for cached in session.partitions.values():
            cached.high_watermark = -1
        return session.id

    def _incremental(self, session: FetchSession,
                     topics: list[FetchTopicResult]) -> list[FetchTopicResult]:
        partitions = session.partitions
        kept: list[FetchTopicResult] = []
        for topic in topics:
            name = topic.topic
            sent = []
            for result in topic.partitions:
                key = TopicPartition(name, result.partition_index)
                cached = partitions.get(key)
                if cached is None or cached.told(result):
                    sent.append(result)
                    if cached is not None:  # answered: to the end of the order
                        del partitions[key]
                        partitions[key] = cached
            if sent:
                kept.append(FetchTopicResult(name, sent))
        return kept
