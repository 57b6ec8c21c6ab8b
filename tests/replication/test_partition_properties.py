"""Property test: a leader's replica state under any interleaving of appends, follower
fetches, time, and ISR changes keeps Kafka's replication invariants.

The machine drives a :class:`Partition` on a real log the way the broker does (the replica
manager after each append and fetch, the ISR manager for shrinks and expansions, whose
ZooKeeper write lands, fails, or is overtaken by the controller's), and checks it against
a model that knows each follower's real log end and when it last caught up:

* the high watermark never decreases, never passes the log end of a replica in the ISR
  (nor of one joining it), and is as high as the followers' reported positions allow;
* the leader is always in the ISR, and the ISR holds only assigned replicas, once each;
* shrinks remove exactly the followers that lack some of the log and have not caught up
  for more than ``replica.lag.time.max.ms``; a follower joins exactly when it reached the HW and the
  epoch's start offset;
* an acks=all write is acknowledged only when every ISR member has it and the ISR has
  ``min.insync.replicas`` members (at most all replicas, Kafka's effective minimum); it is
  refused up front when the ISR is smaller, and
  answered NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below it by the time every
  member had it; until then it stays undecided.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from kio.schema.errors import ErrorCode

from odradek.protocol.errors import NotEnoughReplicas
from odradek.replication import Acks, AppendResult, Partition
from odradek.replication.delayed_produce import AwaitingReplication, settle
from odradek.replication.partition import FollowerProgress
from odradek.types import LeaderEpoch, TopicPartition
from tests.replication.cluster_view import ME, TP, brokers, led_partition
from tests.storage.helpers import batch

FOLLOWERS = (2, 3)
REPLICAS = (ME, *FOLLOWERS)
LAG_MS = 1_000


@dataclass
class WaitingWrite:
    """An acks=all write the machine is waiting on, as the produce purgatory holds it."""

    required_offset: int
    results: dict[TopicPartition, AppendResult]
    waiting: dict[TopicPartition, AwaitingReplication]


class LeaderMachine(RuleBasedStateMachine):
    """Broker 1 leading ``t-0`` (replicas 1, 2, 3), and the model of its followers."""

    def __init__(self) -> None:
        super().__init__()
        # In memory when the machine has it: the checkpoint fsyncs would dominate the run.
        memory = "/dev/shm" if Path("/dev/shm").is_dir() else None
        self.tmp = Path(tempfile.mkdtemp(prefix="odradek-leader-prop-", dir=memory))
        self.partition: Partition | None = None
        self.now = 0
        self.follower_end = dict.fromkeys(FOLLOWERS, 0)  # the follower's real log end
        self.reported = dict.fromkeys(FOLLOWERS, -1)  # its last fetch offset, this term
        self.caught_up_ms = dict.fromkeys(FOLLOWERS, 0)
        self.end_at_last_fetch = dict.fromkeys(FOLLOWERS, -1)
        self.last_fetch_ms = dict.fromkeys(FOLLOWERS, 0)
        self.pending_write_stale = False  # the controller moved the znode past our write
        self.writes: list[WaitingWrite] = []
        self.highest_high_watermark = 0
        self.min_insync = 1  # what min.insync.replicas means for it: capped at 3 replicas

    def teardown(self) -> None:
        if self.partition is not None:
            self.partition.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def leader(self) -> Partition:
        assert self.partition is not None
        return self.partition

    # Becoming leader ----------------------------------------------------------------------
    @initialize(in_sync=st.sets(st.sampled_from(FOLLOWERS)), min_insync=st.integers(1, 4),
                data=st.data())
    def lead(self, in_sync: set[int], min_insync: int, data: st.DataObject) -> None:
        """We become leader of a log that may hold earlier terms' records, with the HW we
        had as a follower; ISR followers have at least that HW, the others anything."""
        isr = (ME, *sorted(in_sync))
        self.partition = led_partition(self.tmp, isr=isr, replicas=REPLICAS,
                                       min_insync_replicas=min_insync)
        leader = self.leader
        self.min_insync = min(min_insync, len(REPLICAS))
        earlier = data.draw(st.integers(0, 5), "records from earlier terms")
        if earlier:
            leader.log.append(batch([b"old"] * earlier), leader_epoch=1)
        high_watermark = data.draw(st.integers(0, earlier), "high watermark")
        leader.log.update_high_watermark(high_watermark)
        self.highest_high_watermark = high_watermark
        for follower in FOLLOWERS:
            lowest = high_watermark if follower in in_sync else 0
            self.follower_end[follower] = data.draw(st.integers(lowest, earlier),
                                                    f"log end of {follower}")
        # As the replica manager does for a new term: each follower known, none fetched,
        # the ISR given a full lag period from now, the epoch starting at our log end.
        leader.followers = {r: FollowerProgress(last_caught_up_ms=self.now) for r in FOLLOWERS}
        leader.leader_epoch_start_offset = leader.log_end_offset
        leader.log.leader_epoch_cache.assign(leader.leader_epoch, leader.log_end_offset)
        leader.maybe_advance_high_watermark()

    # What the broker does ------------------------------------------------------------------
    @rule(count=st.integers(1, 3), acks=st.sampled_from([Acks.LEADER, Acks.ALL]))
    def append(self, count: int, acks: Acks) -> None:
        leader = self.leader
        end = leader.log_end_offset
        if acks is Acks.ALL and len(leader.isr) < self.min_insync:
            try:
                leader.append_as_leader(batch([b"v"] * count), acks)
            except NotEnoughReplicas:
                assert leader.log_end_offset == end, "refused, yet appended"
                return
            raise AssertionError(f"acks=all accepted with ISR {leader.isr}")
        info = leader.append_as_leader(batch([b"v"] * count), acks)
        assert (info.first_offset, info.last_offset) == (end, end + count - 1)
        leader.maybe_advance_high_watermark()
        if acks is Acks.ALL:
            self.writes.append(WaitingWrite(
                info.last_offset + 1, {TP: AppendResult(base_offset=info.first_offset)},
                {TP: AwaitingReplication.after(leader, info.last_offset)},
            ))
        self.settle_writes()

    @rule(follower=st.sampled_from(FOLLOWERS), data=st.data())
    def follower_fetches(self, follower: int, data: st.DataObject) -> None:
        """The follower fetches from its log end, then appends what the answer brought:
        usually everything up to our log end, sometimes less (its fetch size)."""
        offset, leader_end = self.follower_end[follower], self.leader.log_end_offset
        self.fetch(follower)
        self.follower_end[follower] = data.draw(
            st.one_of(st.just(leader_end), st.integers(offset, leader_end)), "received up to")

    @rule(count=st.integers(1, 3), ms=st.integers(0, LAG_MS // 2),
          fetching=st.sets(st.sampled_from(FOLLOWERS)))
    def busy_round(self, count: int, ms: int, fetching: set[int]) -> None:
        """Steady traffic: an append, some time, then a fetch by each follower still
        fetching, which gets everything — followers keep pace, yet every fetch arrives
        below our (new) log end."""
        self.append(count, 1)
        self.now += ms
        for follower in sorted(fetching):
            leader_end = self.leader.log_end_offset
            self.fetch(follower)
            self.follower_end[follower] = leader_end

    def fetch(self, follower: int) -> None:
        """A Fetch from the follower's log end, checked against the model's lag rules."""
        leader = self.leader
        leader_end = leader.log_end_offset
        offset = self.follower_end[follower]
        if offset >= leader_end:
            self.caught_up_ms[follower] = max(self.caught_up_ms[follower], self.now)
        elif offset >= self.end_at_last_fetch[follower] >= 0:  # keeping pace
            self.caught_up_ms[follower] = max(self.caught_up_ms[follower],
                                              self.last_fetch_ms[follower])
        self.reported[follower] = offset
        self.end_at_last_fetch[follower] = leader_end
        self.last_fetch_ms[follower] = self.now

        leader.record_follower_fetch(follower, offset, now=self.now)
        joins = (follower not in leader.isr and offset >= leader.high_watermark
                 and offset >= leader.leader_epoch_start_offset)
        assert leader.can_join_isr(follower) == joins, (
            f"follower {follower} at {offset}: HW {leader.high_watermark}, epoch start "
            f"{leader.leader_epoch_start_offset}, ISR {leader.isr}")
        if joins and leader.pending_isr is None:  # the ISR manager's expansion
            self.start_isr_write((*leader.isr, follower))
        self.settle_writes()

    @rule(ms=st.one_of(st.sampled_from([1, LAG_MS // 2, LAG_MS]), st.integers(0, 2 * LAG_MS)))
    def time_passes(self, ms: int) -> None:
        self.now += ms

    @precondition(lambda self: self.partition is not None and self.partition.pending_isr is None)
    @rule()
    def shrink_check(self) -> None:
        """The ISR manager's periodic pass."""
        leader = self.leader
        lagging = leader.out_of_sync_replicas(self.now, LAG_MS)
        expected = {r for r in leader.isr if r != ME
                    and self.reported[r] != leader.log_end_offset
                    and self.now - self.caught_up_ms[r] > LAG_MS}
        assert set(lagging) == expected, f"at {self.now}: caught up {self.caught_up_ms}"
        if lagging:
            self.start_isr_write(tuple(r for r in leader.isr if r not in lagging))

    @precondition(lambda self: self.partition is not None
                  and self.partition.pending_isr is not None)
    @rule(reachable=st.booleans())
    def isr_write_ends(self, reachable: bool) -> None:
        """ZooKeeper answers the write in flight: it lands, unless ZooKeeper could not be
        reached or the controller changed the znode since we read it."""
        leader = self.leader
        new_isr = leader.pending_isr
        assert new_isr is not None
        leader.pending_isr = None
        if reachable and not self.pending_write_stale:
            leader.isr = new_isr
        self.pending_write_stale = False
        leader.maybe_advance_high_watermark()
        self.settle_writes()

    @precondition(lambda self: self.partition is not None and len(self.partition.isr) > 1)
    @rule(data=st.data())
    def controller_removes_a_follower(self, data: st.DataObject) -> None:
        """A newer state znode in our epoch: the controller dropped a (dead) follower."""
        leader = self.leader
        removed = data.draw(st.sampled_from([r for r in leader.isr if r != ME]), "removed")
        leader.isr = tuple(r for r in leader.isr if r != removed)
        self.pending_write_stale = leader.pending_isr is not None
        leader.maybe_advance_high_watermark()
        self.settle_writes()

    @rule()
    def reelected_at_a_new_epoch(self) -> None:
        """The controller re-elects us at epoch + 1 (same ISR): the new epoch starts at our
        log end, a write in flight belongs to the old epoch and is dropped."""
        leader = self.leader
        leader.leader_epoch = LeaderEpoch(leader.leader_epoch + 1)
        leader.pending_isr = None
        self.pending_write_stale = False
        leader.leader_epoch_start_offset = leader.log_end_offset
        leader.log.leader_epoch_cache.assign(leader.leader_epoch, leader.log_end_offset)
        leader.maybe_advance_high_watermark()
        self.settle_writes()

    def start_isr_write(self, new_isr: tuple[int, ...]) -> None:
        self.leader.pending_isr = brokers(*new_isr)
        self.pending_write_stale = False

    def settle_writes(self) -> None:
        """The produce purgatory re-testing each waiting write, with the model's verdict."""
        leader = self.leader
        for write in list(self.writes):
            if not settle(write.results, write.waiting):
                assert leader.high_watermark < write.required_offset, "replicated, undecided"
                continue
            self.writes.remove(write)
            error = write.results[TP].error
            assert leader.high_watermark >= write.required_offset
            has_it = [r for r in leader.maximal_isr
                      if r != ME and self.follower_end[r] < write.required_offset]
            assert not has_it, f"ISR members {has_it} lack offset {write.required_offset - 1}"
            enough = len(leader.isr) >= self.min_insync
            expected = ErrorCode.none if enough else ErrorCode.not_enough_replicas_after_append
            assert error == expected, f"ISR {leader.isr}: {error!r}"

    # Invariants ----------------------------------------------------------------------------
    @invariant()
    def high_watermark_is_safe_and_as_high_as_allowed(self) -> None:
        if self.partition is None:
            return
        leader = self.partition
        high_watermark = leader.high_watermark
        assert high_watermark >= self.highest_high_watermark, "the HW moved back"
        self.highest_high_watermark = high_watermark
        assert high_watermark <= leader.log_end_offset
        behind = {r: self.follower_end[r] for r in leader.maximal_isr
                  if r != ME and self.follower_end[r] < high_watermark}
        assert not behind, f"HW {high_watermark} passed the log end of ISR members {behind}"
        behind = {r: self.reported[r] for r in leader.maximal_isr
                  if r != ME and 0 <= self.reported[r] < high_watermark}
        assert not behind, f"HW {high_watermark} passed fetch offsets of ISR members {behind}"
        allowed = min([leader.log_end_offset,
                       *(self.reported[r] for r in leader.maximal_isr if r != ME)])
        assert high_watermark >= allowed, f"HW {high_watermark} held below {allowed}"

    @invariant()
    def isr_holds_the_leader_and_only_assigned_replicas(self) -> None:
        if self.partition is None:
            return
        isr = self.partition.isr
        assert ME in isr
        assert set(isr) <= set(REPLICAS) and len(set(isr)) == len(isr), isr
        assert set(self.partition.maximal_isr) <= set(REPLICAS)


LeaderMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLeaderPartition = LeaderMachine.TestCase
