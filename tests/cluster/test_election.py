"""Leader election rules (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from odradek.cluster.election import (
    LeaderAndIsr,
    initial_leader_and_isr,
    is_unclean,
    next_leader_and_isr,
)
from odradek.cluster.model import NO_LEADER, PartitionRegistration


def state(
    leader: int, isr: tuple[int, ...], replicas: tuple[int, ...], epoch: int = 4
) -> PartitionRegistration:
    return PartitionRegistration(leader, epoch, isr, replicas, controller_epoch=1, zk_version=3)


def test_new_partition_prefers_first_live_replica() -> None:
    assert initial_leader_and_isr((3, 1, 2), {1, 2}) == LeaderAndIsr(1, 0, (1, 2))
    assert initial_leader_and_isr((3,), {1}) is None


def test_live_leader_keeps_leading_while_dead_followers_leave_isr() -> None:
    assert next_leader_and_isr(state(1, (1, 2, 3), (1, 2, 3)), {1, 3}) == LeaderAndIsr(1, 5, (1, 3))
    assert next_leader_and_isr(state(1, (1, 2), (1, 2, 3)), {1, 2}) is None


def test_dead_leader_is_replaced_by_first_live_isr_member_in_assignment_order() -> None:
    current = state(1, (1, 3, 2), (1, 2, 3))
    assert next_leader_and_isr(current, {2, 3}) == LeaderAndIsr(2, 5, (3, 2))


def test_without_live_isr_partition_goes_offline_keeping_last_leader_in_isr() -> None:
    current = state(1, (1, 2), (1, 2, 3))
    offline = next_leader_and_isr(current, {3})
    assert offline == LeaderAndIsr(NO_LEADER, 5, (1,))
    again = state(NO_LEADER, (1,), (1, 2, 3), epoch=5)
    assert next_leader_and_isr(again, {3}) is None, "offline stays offline without a write"
    assert next_leader_and_isr(again, {1, 3}) == LeaderAndIsr(1, 6, (1,))


def test_unclean_election_takes_any_live_replica() -> None:
    current = state(1, (1,), (1, 2, 3))
    assert next_leader_and_isr(current, {3}, unclean=True) == LeaderAndIsr(3, 5, (3,))


def test_an_election_is_unclean_only_when_the_new_leader_was_outside_the_isr() -> None:
    current = state(1, (1, 2), (1, 2, 3))
    assert not is_unclean(current, LeaderAndIsr(2, 5, (2,)))  # clean failover
    assert not is_unclean(current, LeaderAndIsr(1, 5, (1,)))  # ISR shrink, same leader
    assert not is_unclean(current, LeaderAndIsr(NO_LEADER, 5, (1,)))  # offline
    assert is_unclean(current, LeaderAndIsr(3, 5, (3,)))
    offline = state(NO_LEADER, (1,), (1, 2))
    assert is_unclean(offline, LeaderAndIsr(2, 5, (2,)))
    assert not is_unclean(offline, LeaderAndIsr(1, 5, (1,)))  # the last ISR member returns


@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=5, unique=True),
    st.sets(st.integers(0, 6)),
    st.data(),
    st.booleans(),
)
def test_elected_leader_is_live_replica_and_in_isr_unless_unclean(
    replicas: list[int], live: set[int], data: st.DataObject, unclean: bool
) -> None:
    isr = data.draw(st.lists(st.sampled_from(replicas), min_size=1, unique=True))
    leader = data.draw(st.sampled_from([NO_LEADER, *isr]))
    current = state(leader, tuple(isr), tuple(replicas))
    decided = next_leader_and_isr(current, live, unclean=unclean)
    if decided is None:
        return
    assert decided.leader_epoch == current.leader_epoch + 1
    if decided.leader != NO_LEADER:
        assert decided.leader in live and decided.leader in replicas
        assert set(decided.isr) <= live and decided.leader in decided.isr
        if not unclean:
            assert decided.leader in isr
    else:
        assert decided.isr, "an offline partition must remember its last ISR"
