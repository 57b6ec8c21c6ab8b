"""Incremental fetch sessions (KIP-227): a fetch names only what changed, and so does its answer.

Without a session every Fetch lists every partition its sender follows or consumes, and the
leader reads every one of them: a follower of the default 50-partition ``__consumer_offsets``
asks about 50 idle partitions on each of its fetches, hundreds of times a second. With a
session the leader remembers, per partition, the fetch position and what it last told the
client; a request then lists only partitions whose position changed (plus those to add, and
``forgotten_topics_data`` to drop), and the answer carries only partitions with something to
say: records, an error, or a new high watermark, last stable offset or log start offset.

**Dirty partitions.** A partition with nothing new is not even looked at. Each session
keeps the set of its partitions that may have something to say (``FetchSession.dirty``);
an incremental fetch visits only those (:meth:`FetchContext.to_read`). A partition is
dirty when it joins the session, when the request names it (its position moved), and
whenever the partition changes (:meth:`FetchSessionCache.partition_changed`: an append, a
new high watermark or log start, a change of leadership or epoch — the replica manager
calls it wherever it wakes waiting fetches). It becomes clean only when a visit finds
that the client already knows everything it would say and there is nothing to read
(:meth:`FetchContext.unchanged`); a partition answered (records, an error, new offsets)
is dirty again. So the answer is the one a walk over every partition would give.

A follower's fetch also tells the leader where the follower is (the ISR's "caught up"
rule, :meth:`~.partition.Partition.record_follower_fetch`). A clean partition in a
follower's session is one where the follower had the leader's whole log at its last visit,
and nothing changed since: the follower was caught up at every fetch of the session since
then. That is recorded lazily, once, when the partition turns dirty or the session ends
(``on_caught_up`` with the session's last fetch time), instead of on every fetch.

The cache's methods run on the broker's event loop (a change on another thread is handed
to it by the caller).

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
from collections.abc import Callable, Hashable, Iterable, Sequence
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
        if result.records_size:
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
    replica_id: int  # a follower's broker id; -1 for a consumer
    partitions: dict[TopicPartition, CachedPartition]
    created_ms: int
    last_used_ms: int
    epoch: int = 1
    dirty: set[TopicPartition] = field(default_factory=set)  # see the module doc

    @property
    def privileged(self) -> bool:
        """A follower's session (worth more than a consumer's when the cache is full)."""
        return self.replica_id >= 0

    def worth(self) -> tuple[bool, int]:
        """What a session is worth keeping (privileged first, then more partitions)."""
        return self.privileged, len(self.partitions)

    def update(self, wanted: Iterable[PartitionFetch],
               forgotten: Iterable[TopicPartition]) -> set[TopicPartition]:
        """Apply an incremental request: new positions, new partitions (at the end), and
        forgotten ones removed. Returns the keys the request named (all dirty now)."""
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
            self.dirty.discard(key)
        self.dirty |= touched
        return touched


@dataclass(frozen=True, slots=True)
class SessionError:
    """The request's session cannot be used: answer ``code`` with no partitions."""

    code: ErrorCode
    message: str


SessionListener = Callable[[int, int], None]
"""``(sessions, partitions cached)``: the cache's size changed (the metrics' gauges)."""

CaughtUpListener = Callable[[TopicPartition, int, int], None]
"""``(partition, replica_id, at_ms)``: the follower ``replica_id`` had the partition's whole
log at each of its fetches up to ``at_ms`` (see "dirty partitions" in the module doc)."""


@dataclass
class FetchSessionCache:
    """The broker's sessions, bounded by ``max_slots`` (see the module doc for eviction)."""

    max_slots: int = 1000
    eviction_ms: int = EVICTION_MS
    random_id: Callable[[], int] = field(
        default=lambda: random.randint(1, _MAX_EPOCH), repr=False)
    on_change: SessionListener | None = None
    on_evict: Callable[[], None] | None = None
    on_caught_up: CaughtUpListener | None = None
    sessions: dict[int, FetchSession] = field(default_factory=dict)
    # partition -> the sessions holding it, told when it changes
    _watchers: dict[TopicPartition, set[FetchSession]] = field(default_factory=dict, repr=False)

    @property
    def partitions_cached(self) -> int:
        return sum(len(s.partitions) for s in self.sessions.values())

    def new_context(self, *, session_id: int, epoch: int, wanted: Sequence[PartitionFetch],
                    forgotten: Sequence[TopicPartition], replica_id: int,
                    now_ms: int) -> FetchContext | SessionError:
        """The context of one Fetch request (see the table in the module doc);
        ``replica_id``: the follower's broker id, -1 for a consumer."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):  # a full fetch
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)
            if epoch == FINAL_EPOCH or self.max_slots <= 0:
                return FetchContext(tuple(wanted))
            return FetchContext(tuple(wanted), cache=self, replica_id=replica_id,
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
        self._unwatch(session, forgotten)
        if not session.partitions:
            self.remove(session_id)
            return FetchContext(())
        self._watch(session, touched)
        session.epoch = next_epoch(session.epoch)
        session.last_used_ms = now_ms
        self._changed()
        return FetchContext(tuple(c.fetch for c in session.partitions.values()),
                            session=session, touched=touched)

    def create(self, replica_id: int, partitions: dict[TopicPartition, CachedPartition],
               now_ms: int) -> FetchSession | None:
        """A new session, if there is room or a session to evict; None otherwise. All its
        partitions start dirty."""
        if len(self.sessions) >= self.max_slots and not self._evict_for(
                (replica_id >= 0, len(partitions)), now_ms):
            return None
        session_id = self.random_id()
        while session_id in self.sessions or session_id == INVALID_SESSION_ID:
            session_id = self.random_id()
        session = FetchSession(session_id, replica_id, partitions, now_ms, now_ms,
                               dirty=set(partitions))
        self.sessions[session_id] = session
        self._watch(session, partitions)
        self._changed()
        return session

    def remove(self, session_id: int) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self._drop(session)
            self._changed()

    def partition_changed(self, key: TopicPartition) -> tuple[FetchSession, ...]:
        """``key`` changed (see the module doc): every session holding it visits it again
        at its next fetch. Returns those sessions (a fetch of theirs parked in the fetch
        purgatory watches the session: :attr:`FetchContext.watch_key`)."""
        watching = self._watchers.get(key)
        if not watching:
            return ()
        caught_up = self.on_caught_up
        for session in watching:
            dirty = session.dirty
            if key not in dirty:
                dirty.add(key)
                if caught_up is not None and session.replica_id >= 0:
                    caught_up(key, session.replica_id, session.last_used_ms)
        return tuple(watching)

    def _watch(self, session: FetchSession, keys: Iterable[TopicPartition]) -> None:
        watchers = self._watchers
        for key in keys:
            found = watchers.get(key)
            if found is None:
                watchers[key] = {session}
            else:
                found.add(session)

    def _unwatch(self, session: FetchSession, keys: Iterable[TopicPartition]) -> None:
        watchers = self._watchers
        for key in keys:
            found = watchers.get(key)
            if found is not None:
                found.discard(session)
                if not found:
                    del watchers[key]

    def _drop(self, session: FetchSession) -> None:
        """A session leaves the cache: what its clean partitions said of a follower stands
        (see the module doc), and no partition tells it of changes any more."""
        caught_up = self.on_caught_up
        if caught_up is not None and session.replica_id >= 0:
            for key in session.partitions:
                if key not in session.dirty:
                    caught_up(key, session.replica_id, session.last_used_ms)
        self._unwatch(session, session.partitions)

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
        self._drop(session)
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

    __slots__ = ("_cache", "_now_ms", "_replica_id", "_session", "_touched", "partitions")

    def __init__(self, partitions: tuple[PartitionFetch, ...], *,
                 cache: FetchSessionCache | None = None, replica_id: int = -1,
                 now_ms: int = 0, session: FetchSession | None = None,
                 touched: set[TopicPartition] | None = None) -> None:
        self.partitions = partitions  # everything the fetch is about (the session's all)
        self._cache = cache
        self._replica_id = replica_id
        self._now_ms = now_ms
        self._session = session
        self._touched = touched or set()

    @property
    def incremental(self) -> bool:
        return self._session is not None

    @property
    def watch_key(self) -> Hashable:
        """What a parked incremental fetch watches in the fetch purgatory instead of each of
        its partitions: the session, which every change to one of them wakes."""
        return self._session

    def to_read(self, authorized: Callable[[str], bool] | None = None
                ) -> Sequence[PartitionFetch]:
        """The partitions to visit now, in fetch order: for an incremental fetch the dirty
        ones, and those of topics ``authorized`` refuses (each is answered with its error,
        as a walk over every partition would); otherwise all of :attr:`partitions`."""
        session = self._session
        if session is None:
            return self.partitions
        dirty = session.dirty
        items = session.partitions.items()
        if authorized is not None:
            topics = {t for t, _ in session.partitions}
            refused = {t for t in topics if not authorized(t)}
            if refused:
                return [c.fetch for k, c in items if k in dirty or k[0] in refused]
        if not dirty:
            return ()
        return [c.fetch for k, c in items if k in dirty]

    def unchanged(self, fetch: PartitionFetch, high_watermark: int, last_stable_offset: int,
                  log_start_offset: int) -> bool:
        """For an incremental fetch: the client already knows all the partition would say
        (it has nothing to read at ``fetch``, which is called only then): skip reading it,
        and leave it out of the session's next fetches until it changes."""
        session = self._session
        if session is None:
            return False
        key = TopicPartition(fetch.topic, fetch.partition)
        if key in self._touched:
            return False
        cached = session.partitions.get(key)
        if (cached is not None and cached.high_watermark == high_watermark
                and cached.last_stable_offset == last_stable_offset
                and cached.log_start_offset == log_start_offset):
            session.dirty.discard(key)
            return True
        return False

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
        created = cache.create(self._replica_id, partitions, self._now_ms)
        return topics, created.id if created is not None else INVALID_SESSION_ID

    def throttled(self) -> int:
        """The session id of an answer emptied by a quota: the client was told nothing, so
        every partition is answered again at its next fetch."""
        session = self._session
        if session is None:
            return INVALID_SESSION_ID
        for cached in session.partitions.values():
            cached.high_watermark = -1
        session.dirty.update(session.partitions)
        return session.id

    def _incremental(self, session: FetchSession,
                     topics: list[FetchTopicResult]) -> list[FetchTopicResult]:
        partitions = session.partitions
        dirty = session.dirty
        kept: list[FetchTopicResult] = []
        for topic in topics:
            name = topic.topic
            sent = []
            for result in topic.partitions:
                key = TopicPartition(name, result.partition_index)
                cached = partitions.get(key)
                if cached is None or cached.told(result):
                    sent.append(result)
                    if cached is not None:
                        # Answered: to the end of the order, and visited again next time
                        # (a READ refused on a clean partition must be taken back too).
                        del partitions[key]
                        partitions[key] = cached
                        dirty.add(key)
            if sent:
                kept.append(FetchTopicResult(name, sent))
        return kept
