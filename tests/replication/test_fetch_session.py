"""Incremental fetch sessions (KIP-227), sans I/O: the wire rules, eviction, and a model.

The model test plays a client that keeps a session the way Apache Kafka's Java consumer
(``FetchSessionHandler``) does against the broker's cache, while partitions grow, their
high watermark and log start move, leadership moves (and a new leader's log is shorter),
READ permission comes and goes, partitions join and leave and sessions are evicted: after
every answer the client must know exactly what a sessionless full fetch would have told it,
and the answer must be the one a walk over every partition of the session would give,
though the fetch visited only the dirty ones.
The real Java consumer and odradek's own follower run against a broker in
tests/broker/test_fetch_sessions_wire.py.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule
from kio.schema.errors import ErrorCode

from odradek.protocol.fetch_request import FetchPosition
from odradek.protocol.fetch_response import FetchPartitionResult, FetchTopicResult
from odradek.replication.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchContext,
    FetchSessionCache,
    SessionError,
    next_epoch,
)
from odradek.replication.fetch_session_handler import FetchSessionHandler
from odradek.replication.reads import PartitionFetch
from odradek.types import TopicPartition

Key = tuple[str, int]  # the client's own key: the broker's are TopicPartition


def fetch(topic: str, partition: int, offset: int = 0) -> PartitionFetch:
    return PartitionFetch(topic, partition, offset, 1 << 20)


def answer(*results: tuple[str, int, int]) -> list[FetchTopicResult]:
    """Results as (topic, partition, high watermark), no records."""
    topics: dict[str, list[FetchPartitionResult]] = {}
    for topic, index, high_watermark in results:
        topics.setdefault(topic, []).append(
            FetchPartitionResult(index, high_watermark=high_watermark,
                                 last_stable_offset=high_watermark, log_start_offset=0))
    return [FetchTopicResult(t, parts) for t, parts in topics.items()]


def context(cache: FetchSessionCache, session_id: int, epoch: int,
            wanted: tuple[PartitionFetch, ...] = (), forgotten: tuple[Key, ...] = (),
            *, follower: bool = False, now_ms: int = 0) -> FetchContext:
    found = cache.new_context(session_id=session_id, epoch=epoch, wanted=wanted,
                              forgotten=[TopicPartition(*k) for k in forgotten],
                              replica_id=2 if follower else -1, now_ms=now_ms)
    assert isinstance(found, FetchContext), found
    return found


def open_session(cache: FetchSessionCache, *keys: Key, follower: bool = False,
                 now_ms: int = 0) -> int:
    full = context(cache, 0, INITIAL_EPOCH, tuple(fetch(*k) for k in keys),
                   follower=follower, now_ms=now_ms)
    _topics, session_id = full.respond(answer(*((*k, 5) for k in keys)))
    return session_id


# ----------------------------------------------------------------------- the wire rules

def test_a_sessionless_full_fetch_opens_no_session() -> None:
    cache = FetchSessionCache()
    full = context(cache, 0, FINAL_EPOCH, (fetch("t", 0),))
    topics, session_id = full.respond(answer(("t", 0, 5)))
    assert session_id == 0 and not cache.sessions
    assert [p.partition_index for t in topics for p in t.partitions] == [0]


def test_a_full_fetch_at_epoch_0_opens_a_session_that_expects_epoch_1() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, ("t", 0), ("t", 1))
    assert session_id != 0 and cache.sessions[session_id].epoch == 1
    assert list(cache.sessions[session_id].partitions) == [("t", 0), ("t", 1)]


def test_unknown_session_and_wrong_epoch_are_kafkas_errors() -> None:
    cache = FetchSessionCache()
    missing = cache.new_context(session_id=12345, epoch=1, wanted=(), forgotten=(),
                                replica_id=-1, now_ms=0)
    assert isinstance(missing, SessionError)
    assert missing.code == ErrorCode.fetch_session_id_not_found
    session_id = open_session(cache, ("t", 0))
    wrong = cache.new_context(session_id=session_id, epoch=2, wanted=(), forgotten=(),
                              replica_id=-1, now_ms=0)
    assert isinstance(wrong, SessionError)
    assert wrong.code == ErrorCode.invalid_fetch_session_epoch


def test_an_incremental_fetch_reads_the_whole_session_and_answers_only_changes() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, ("t", 0), ("t", 1), ("u", 0))
    step = context(cache, session_id, 1)  # nothing named: every partition still read
    assert [(p.topic, p.partition) for p in step.partitions] == [("t", 0), ("t", 1), ("u", 0)]
    assert step.unchanged(fetch("t", 0), 5, 5, 0)
    assert not step.unchanged(fetch("t", 0), 6, 6, 0)  # a new high watermark
    topics, same_id = step.respond(answer(("t", 0, 5), ("t", 1, 7), ("u", 0, 5)))
    assert same_id == session_id
    assert [(t.topic, [p.partition_index for p in t.partitions]) for t in topics] == [
        ("t", [1])]
    # The answered partition moved to the end of the session's order (fairness).
    assert list(cache.sessions[session_id].partitions) == [("t", 0), ("u", 0), ("t", 1)]
    assert cache.sessions[session_id].epoch == 2


def test_a_partition_named_in_the_request_is_never_skipped() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, ("t", 0))
    step = context(cache, session_id, 1, (fetch("t", 0, 3),))
    assert not step.unchanged(fetch("t", 0, 3), 5, 5, 0)
    assert step.partitions == (fetch("t", 0, 3),)


def test_an_error_is_always_answered_and_the_partition_again_once_it_clears() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, ("t", 0))
    step = context(cache, session_id, 1)
    failed = [FetchTopicResult("t", [FetchPartitionResult(0, ErrorCode.not_leader_or_follower)])]
    assert step.respond(failed)[0] == failed
    step = context(cache, session_id, 2)
    assert not step.unchanged(fetch("t", 0), 5, 5, 0), "the recovered state must be re-sent"
    assert step.respond(answer(("t", 0, 5)))[0] == answer(("t", 0, 5))


def test_forgetting_every_partition_closes_the_session() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, ("t", 0), ("t", 1))
    step = context(cache, session_id, 1, forgotten=(("t", 0),))
    assert [(p.topic, p.partition) for p in step.partitions] == [("t", 1)]
    last = context(cache, session_id, 2, forgotten=(("t", 1),))
    assert last.respond([])[1] == 0 and not cache.sessions


def test_a_full_fetch_naming_a_session_closes_it() -> None:
    cache = FetchSessionCache()
    first = open_session(cache, ("t", 0))
    context(cache, first, FINAL_EPOCH, (fetch("t", 0),)).respond(answer(("t", 0, 5)))
    assert first not in cache.sessions and not cache.sessions
    second = open_session(cache, ("t", 0))
    renewed = context(cache, second, INITIAL_EPOCH, (fetch("t", 0),))
    _topics, third = renewed.respond(answer(("t", 0, 5)))
    assert list(cache.sessions) == [third] and third != second


def test_epochs_wrap_to_one_never_zero() -> None:
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_a_throttled_answer_makes_every_partition_answer_again() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, ("t", 0))
    assert context(cache, session_id, 1).throttled() == session_id
    assert not context(cache, session_id, 2).unchanged(fetch("t", 0), 5, 5, 0)


def test_zero_slots_turns_sessions_off() -> None:
    cache = FetchSessionCache(max_slots=0)
    assert open_session(cache, ("t", 0)) == 0 and not cache.sessions


def test_metrics_hooks_see_sessions_partitions_and_evictions() -> None:
    seen: list[tuple[int, int]] = []
    evictions: list[None] = []
    cache = FetchSessionCache(max_slots=1, on_change=lambda s, p: seen.append((s, p)),
                              on_evict=lambda: evictions.append(None))
    open_session(cache, ("t", 0), ("t", 1))
    assert seen[-1] == (1, 2)
    open_session(cache, ("t", 0), now_ms=10**6)  # the first is stale by then
    assert seen[-1] == (1, 1) and len(evictions) == 1


# --------------------------------------------------------------------------- eviction

def test_a_full_cache_evicts_a_stale_session_first() -> None:
    cache = FetchSessionCache(max_slots=2, eviction_ms=1000)
    old = open_session(cache, ("a", 0), follower=True, now_ms=0)
    busy = open_session(cache, ("b", 0), now_ms=900)
    new = open_session(cache, ("c", 0), now_ms=1500)  # ``old`` unused for 1500 ms
    assert set(cache.sessions) == {busy, new} and old not in cache.sessions


def test_a_follower_evicts_a_consumer_but_a_consumer_never_a_recent_session() -> None:
    cache = FetchSessionCache(max_slots=1, eviction_ms=1000)
    consumer = open_session(cache, ("a", 0), ("a", 1), now_ms=0)
    assert open_session(cache, ("b", 0), ("b", 1), ("b", 2), now_ms=10) == 0
    context(cache, consumer, 1, now_ms=500).respond([])  # used: not stale
    follower = open_session(cache, ("c", 0), follower=True, now_ms=600)
    assert list(cache.sessions) == [follower]
    # An old consumer session gives way to a bigger consumer session, not to a smaller one.
    cache = FetchSessionCache(max_slots=1, eviction_ms=1000)
    small = open_session(cache, ("a", 0), now_ms=0)
    context(cache, small, 1, now_ms=1100).respond([])
    assert open_session(cache, ("b", 0), now_ms=1200) == 0, "equal worth evicts nothing"
    bigger = open_session(cache, ("b", 0), ("b", 1), now_ms=1300)
    assert list(cache.sessions) == [bigger]


def test_a_consumer_cannot_evict_a_follower() -> None:
    cache = FetchSessionCache(max_slots=1, eviction_ms=1000)
    follower = open_session(cache, ("a", 0), follower=True, now_ms=0)
    context(cache, follower, 1, now_ms=1500).respond([])
    assert open_session(cache, *((("b", i)) for i in range(50)), now_ms=1600) == 0
    assert list(cache.sessions) == [follower]


# ----------------------------------------------------------- a client against the cache

@dataclass
class Truth:
    """One partition as the leader has it."""

    end: int = 0
    high_watermark: int = 0
    log_start: int = 0
    leader: bool = True


@dataclass
class Known:
    """What the client holds for one partition."""

    position: int = 0
    high_watermark: int = -1
    log_start: int = -1


@dataclass
class Client:
    """A session the way the Java consumer's FetchSessionHandler keeps one."""

    session_id: int = 0
    epoch: int = INITIAL_EPOCH
    known: dict[Key, Known] = field(default_factory=dict)
    sent: dict[Key, int] = field(default_factory=dict)  # the position the broker holds
    # Unsubscribed but not yet forgotten by a request: still in the session, so what the
    # client knew of it still stands if it comes back before the next fetch.
    parked: dict[Key, Known] = field(default_factory=dict)

    def request(self) -> tuple[tuple[PartitionFetch, ...], tuple[Key, ...]]:
        if self.session_id == 0:
            return tuple(fetch(*k, v.position) for k, v in self.known.items()), ()
        changed = tuple(fetch(*k, v.position) for k, v in self.known.items()
                        if self.sent.get(k) != v.position)
        forgotten = tuple(k for k in self.sent if k not in self.known)
        return changed, forgotten


KEYS: list[Key] = [("t", 0), ("t", 1), ("u", 0), ("v", 3)]


class SessionModel(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.cache = FetchSessionCache(max_slots=1)
        self.truth = {key: Truth() for key in KEYS}
        self.client = Client(known={key: Known() for key in KEYS})
        self.denied: set[str] = set()
        self.now = 0

    # Each change to a partition tells the cache, as the replica manager does.
    @rule(key=st.sampled_from(KEYS), records=st.integers(1, 3))
    def append(self, key: Key, records: int) -> None:
        self.truth[key].end += records
        self.cache.partition_changed(TopicPartition(*key))

    @rule(key=st.sampled_from(KEYS))
    def replicate(self, key: Key) -> None:
        truth = self.truth[key]
        truth.high_watermark = truth.end
        self.cache.partition_changed(TopicPartition(*key))

    @rule(key=st.sampled_from(KEYS))
    def retention(self, key: Key) -> None:
        truth = self.truth[key]
        truth.log_start = truth.high_watermark
        self.cache.partition_changed(TopicPartition(*key))

    @rule(key=st.sampled_from(KEYS))
    def lose_leadership(self, key: Key) -> None:
        self.truth[key].leader = False
        self.cache.partition_changed(TopicPartition(*key))

    @rule(key=st.sampled_from(KEYS), shorter_by=st.integers(0, 3))
    def elect(self, key: Key, shorter_by: int) -> None:
        """Leadership comes back, on a log truncated towards its high watermark."""
        truth = self.truth[key]
        truth.leader = True
        truth.end = max(truth.high_watermark, truth.end - shorter_by)
        self.cache.partition_changed(TopicPartition(*key))

    @rule(topic=st.sampled_from(sorted({t for t, _ in KEYS})), allowed=st.booleans())
    def authorize(self, topic: str, allowed: bool) -> None:
        """READ on a topic is granted or revoked (ACLs tell no partition)."""
        if allowed:
            self.denied.discard(topic)
        else:
            self.denied.add(topic)

    @rule(key=st.sampled_from(KEYS))
    def subscribe(self, key: Key) -> None:
        client = self.client
        if key not in client.known:
            client.known[key] = client.parked.pop(key, Known())

    @rule(key=st.sampled_from(KEYS))
    def unsubscribe(self, key: Key) -> None:
        client = self.client
        if len(client.known) > 1 and key in client.known:
            client.parked[key] = client.known.pop(key)

    @rule()
    def evict(self) -> None:
        """Another client's session takes the only slot (ours is stale by then), then
        closes, leaving the slot free for our next full fetch."""
        self.now += 10**6
        other = open_session(self.cache, ("other", 0), ("other", 1), now_ms=self.now)
        assert other and self.client.session_id not in self.cache.sessions
        self.cache.remove(other)

    @rule()
    def fetch_once(self) -> None:
        client = self.client
        wanted, forgotten = client.request()
        self.now += 1
        found = self.cache.new_context(session_id=client.session_id, epoch=client.epoch,
                                       wanted=wanted,
                                       forgotten=[TopicPartition(*k) for k in forgotten],
                                       replica_id=-1, now_ms=self.now)
        if isinstance(found, SessionError):  # evicted: start over with a full fetch
            client.session_id, client.epoch, client.sent = 0, INITIAL_EPOCH, {}
            return
        walk_all = copy.deepcopy(found)  # the same session, read in full
        topics, session_id = found.respond(self._read(found, found.to_read(self._authorized)))
        expected, expected_id = walk_all.respond(self._read(walk_all, walk_all.partitions))
        assert topics == expected, "visiting only dirty partitions answered differently"
        assert session_id == expected_id or not found.incremental  # a new one: random ids
        full = client.session_id == 0
        client.parked.clear()  # forgotten now (or never in a new session)
        out_of_range: set[Key] = set()
        failed: set[Key] = set()
        for topic in topics:
            for part in topic.partitions:
                key = (topic.topic, part.partition_index)
                known = client.known.get(key)
                assert known is not None, f"answered {key}, which the client does not fetch"
                if part.error_code == ErrorCode.offset_out_of_range:
                    out_of_range.add(key)
                    continue
                if part.error_code in (ErrorCode.not_leader_or_follower,
                                       ErrorCode.topic_authorization_failed):
                    failed.add(key)  # the client keeps its position and retries
                    continue
                assert not part.error_code, part
                assert part.records is None or isinstance(part.records, bytes)
                known.position += len(part.records or b"")
                known.high_watermark = part.high_watermark
                known.log_start = part.log_start_offset
        if full:
            client.session_id = session_id
            client.epoch = next_epoch(INITIAL_EPOCH) if session_id else INITIAL_EPOCH
            client.sent = {(p.topic, p.partition): p.fetch_offset for p in wanted}
        elif session_id == 0:  # the session closed
            client.session_id, client.epoch, client.sent = 0, INITIAL_EPOCH, {}
        else:
            client.epoch = next_epoch(client.epoch)
            for p in wanted:
                client.sent[(p.topic, p.partition)] = p.fetch_offset
            for key in forgotten:
                client.sent.pop(key, None)
        # Nothing changed on the leader since the read: the client must now know exactly
        # what a sessionless full fetch would have told it.
        for key, known in client.known.items():
            truth = self.truth[key]
            if key in out_of_range:
                known.position = truth.log_start  # auto.offset.reset=earliest
                continue
            if key in failed:
                continue
            assert (known.position, known.high_watermark, known.log_start) == (
                truth.end, truth.high_watermark, truth.log_start), (key, known, truth)

    @rule()
    def fetch_twice(self) -> None:
        """Back to back (the second one finds partitions clean): twice as many fetches as
        any other step, so that changes meet sessions with clean partitions often."""
        self.fetch_once()
        self.fetch_once()

    def _authorized(self, topic: str) -> bool:
        return topic not in self.denied

    def _read(self, found: FetchContext,
              visit: Sequence[PartitionFetch]) -> list[FetchTopicResult]:
        """What the reads layer does over ``visit``: a refused topic, a partition we do not
        lead and an offset out of range are errors; nothing new and nothing the client does
        not know is skipped; otherwise the records up to the end."""
        topics: dict[str, list[FetchPartitionResult]] = {}
        for wanted in visit:
            truth = self.truth[(wanted.topic, wanted.partition)]
            if wanted.topic in self.denied:
                result = FetchPartitionResult(wanted.partition,
                                              ErrorCode.topic_authorization_failed)
            elif not truth.leader:
                result = FetchPartitionResult(wanted.partition,
                                              ErrorCode.not_leader_or_follower)
            elif not truth.log_start <= wanted.fetch_offset <= truth.end:
                result = FetchPartitionResult(wanted.partition, ErrorCode.offset_out_of_range)
            elif (wanted.fetch_offset >= truth.end and found.incremental and found.unchanged(
                    wanted, truth.high_watermark, truth.high_watermark, truth.log_start)):
                continue
            else:
                records = b"r" * (truth.end - wanted.fetch_offset)
                result = FetchPartitionResult(
                    wanted.partition, high_watermark=truth.high_watermark,
                    last_stable_offset=truth.high_watermark, log_start_offset=truth.log_start,
                    records=records)
            topics.setdefault(wanted.topic, []).append(result)
        return [FetchTopicResult(t, parts) for t, parts in topics.items()]


SessionModel.TestCase.settings = settings(max_examples=100, stateful_step_count=40,
                                          deadline=None)
test_a_client_keeps_a_lossless_view_through_a_session = SessionModel.TestCase


# ------------------------------------------------------- the follower's side of a session

def position(offset: int, partition: int = 0, epoch: int = 3) -> FetchPosition:
    return FetchPosition(partition, epoch, offset, 0, 1 << 20)


def test_the_fetcher_names_only_what_moved_and_forgets_what_it_dropped() -> None:
    handler = FetchSessionHandler()
    a, b, c = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
    first = handler.build({a: position(5), b: position(7, 1)})
    assert (first.session_id, first.epoch, first.full) == (0, INITIAL_EPOCH, True)
    assert first.topics == [("t", [position(5), position(7, 1)])]
    assert handler.handle_response(0, 42)
    second = handler.build({a: position(9), b: position(7, 1), c: position(0)})
    assert (second.session_id, second.epoch) == (42, 1)
    assert second.topics == [("t", [position(9)]), ("u", [position(0)])]
    assert handler.handle_response(0, 42)
    third = handler.build({a: position(9), c: position(0, epoch=4)})
    assert (third.epoch, third.topics, third.forgotten) == (
        2, [("u", [position(0, epoch=4)])], [("t", [1])])


def test_a_session_error_starts_over_and_closes_the_old_session() -> None:
    handler = FetchSessionHandler()
    key = TopicPartition("t", 0)
    handler.build({key: position(5)})
    handler.handle_response(0, 42)
    handler.build({key: position(5)})
    assert not handler.handle_response(ErrorCode.fetch_session_id_not_found, 0)
    again = handler.build({key: position(5)})
    assert (again.session_id, again.epoch, again.topics) == (42, INITIAL_EPOCH,
                                                             [("t", [position(5)])])
    assert handler.handle_response(0, 43) and handler.session_id == 43


def test_a_follower_and_the_leaders_cache_agree_through_a_session() -> None:
    """The two halves together: the follower's requests against the leader's cache."""
    cache = FetchSessionCache()
    handler = FetchSessionHandler()
    keys = [TopicPartition("t", i) for i in range(50)]
    ends = {key: 0 for key in keys}

    def fetch_round(leo: dict[TopicPartition, int]) -> list[FetchTopicResult]:
        request = handler.build({k: position(v, k.partition) for k, v in leo.items()})
        wanted = tuple(PartitionFetch(t, p.partition, p.fetch_offset, p.partition_max_bytes,
                                      p.current_leader_epoch)
                       for t, parts in request.topics for p in parts)
        found = cache.new_context(session_id=request.session_id, epoch=request.epoch,
                                  wanted=wanted, forgotten=[
                                      TopicPartition(t, i)
                                      for t, ids in request.forgotten for i in ids],
                                  replica_id=2, now_ms=0)
        assert isinstance(found, FetchContext)
        read = []
        for want in found.partitions:
            end = ends[TopicPartition(want.topic, want.partition)]
            if want.fetch_offset >= end and found.unchanged(want, end, end, 0):
                continue
            read.append(FetchTopicResult(want.topic, [FetchPartitionResult(
                want.partition, high_watermark=end, last_stable_offset=end, log_start_offset=0,
                records=b"x" * (end - want.fetch_offset))]))
        topics, session_id = found.respond(read)
        assert handler.handle_response(0, session_id)
        return topics

    leo = dict.fromkeys(keys, 0)
    assert len(fetch_round(leo)) == 50  # the full fetch answers everything
    assert fetch_round(leo) == []  # nothing new: nothing named, nothing read, nothing said
    ends[keys[7]] = 3
    [answered] = fetch_round(leo)
    assert (answered.partitions[0].partition_index, answered.partitions[0].records) == (
        7, b"xxx")
    leo[keys[7]] = 3
    assert fetch_round(leo) == []
