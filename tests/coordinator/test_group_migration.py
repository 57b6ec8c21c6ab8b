"""Online migration between classic and consumer groups (KIP-848), on the sans-IO shard:
upgrade when a member joins a classic group with ConsumerGroupHeartbeat, classic members
served inside the consumer group, downgrade when the last consumer-protocol member leaves,
the migration policy, and the records: replaying them gives the same group and offsets."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.config_sections import GroupCoordinatorConfig, migration_policy
from odradek.config_types import ConfigError
from odradek.coordinator.consumer_group import (
    ClassicMetadata,
    ConsumerGroup,
    ConsumerHeartbeat,
    HeartbeatResult,
)
from odradek.coordinator.consumer_group_records import (
    changed_records,
    replay_consumer_group_record,
    snapshot,
)
from odradek.coordinator.group import Group
from odradek.coordinator.group_conversion import classic_from_consumer, consumer_from_classic
from odradek.coordinator.group_state import GroupState
from odradek.coordinator.member import Member
from odradek.coordinator.offsets import OffsetCommitEntry
from odradek.coordinator.results import (
    AppendRecords,
    JoinResult,
    Output,
    Reply,
    StoreGroup,
    SyncResult,
)
from odradek.coordinator.shard import CoordinatorShard
from odradek.protocol.consumer_protocol import (
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import Record
from odradek.types import TopicPartition

from .helpers import CONFIG, GROUP, join_request

TOPICS = {"t": 4}
TOPIC_IDS = {"t": uuid.UUID(int=7)}
NONE, REBALANCING = ErrorCode.none, ErrorCode.rebalance_in_progress


def subscription(owned: frozenset[TopicPartition] = frozenset()) -> bytes:
    return encode_subscription(Subscription(["t"], owned_partitions=sorted(owned)))


@dataclass
class Cluster:
    """One shard and every record it wrote, in order (the ``__consumer_offsets`` partition)."""

    config: GroupCoordinatorConfig = CONFIG
    now: int = 1_000_000
    shard: CoordinatorShard = field(init=False)
    log: list[Record] = field(default_factory=list)
    replies: dict[int, JoinResult | SyncResult] = field(default_factory=dict)
    token: int = 0

    def __post_init__(self) -> None:
        self.shard = CoordinatorShard(0, self.config, lambda: f"id{self.token}")

    def take(self, outputs: list[Output]) -> None:
        for output in outputs:
            if isinstance(output, Reply):
                self.replies[output.token] = output.result
                continue
            if isinstance(output, StoreGroup):
                self.log.append(output.record)
            elif isinstance(output, AppendRecords):
                self.log.extend(output.records)
            for reply in output.replies:
                self.replies[reply.token] = reply.result

    def join(self, member_id: str, owned: frozenset[TopicPartition] = frozenset(),
             names: tuple[str, ...] = ("range",)) -> JoinResult:
        self.token += 1
        request = replace(join_request(member_id, client_id=member_id or "c", names=names),
                          protocols=tuple((n, subscription(owned)) for n in names))
        self.take(self.shard.join(self.now, self.token, GROUP, request, TOPICS, TOPIC_IDS))
        result = self.replies[self.token]
        assert isinstance(result, JoinResult)
        return result

    def sync(self, member_id: str, generation: int,
             assignments: dict[str, bytes] | None = None) -> SyncResult | None:
        """The answer, or None while the SyncGroup is parked (waiting for the leader)."""
        self.token += 1
        self.take(self.shard.sync(self.now, self.token, GROUP, member_id, None, generation,
                                  assignments or {}))
        result = self.replies.get(self.token)
        assert result is None or isinstance(result, SyncResult)
        return result

    def beat(self, member_id: str, epoch: int,
             owned: frozenset[TopicPartition] | None = None) -> HeartbeatResult:
        request = ConsumerHeartbeat(member_id, epoch, rebalance_timeout_ms=30_000,
                                    subscribed_topic_names=("t",) if epoch == 0 else None,
                                    owned=owned)
        result, records, out = self.shard.consumer_heartbeat(self.now, GROUP, request, TOPICS,
                                                             TOPIC_IDS)
        self.log.extend(records)
        self.take(out)
        return result

    def commit(self, member_id: str, generation: int, partition: int, offset: int) -> ErrorCode:
        plan = self.shard.prepare_offset_commit(
            self.now, GROUP, member_id, None, generation,
            [OffsetCommitEntry("t", partition, offset)])
        self.log.extend(plan.records)
        self.shard.apply_offset_commit(plan, self.now)
        return plan.errors[TopicPartition("t", partition)]

    def reloaded(self) -> CoordinatorShard:
        """A new coordinator's shard, loaded from the records."""
        shard = CoordinatorShard(0, CONFIG, lambda: "reloaded")
        shard.replay(self.log, self.now, loading=True,
                     topic_names={v: k for k, v in TOPIC_IDS.items()})
        return shard


def joined(cluster: Cluster, token: int) -> JoinResult:
    result = cluster.replies[token]
    assert isinstance(result, JoinResult), result
    return result


def classic_group(cluster: Cluster, members: int = 2) -> tuple[list[str], int]:
    """A Stable classic group of ``members`` members (range over topic t), each assigned
    partitions round-robin by the leader; (member ids, generation)."""
    ids = []
    for i in range(members):
        cluster.token += 1
        request = replace(join_request(client_id=f"c{i}"),
                          protocols=(("range", subscription()),))
        cluster.take(cluster.shard.join(cluster.now, cluster.token, GROUP, request))
        ids.append(joined(cluster, cluster.token).member_id)
    tokens = []
    for member_id in ids:
        cluster.token += 1
        tokens.append(cluster.token)
        request = replace(join_request(member_id, client_id="c"),
                          protocols=(("range", subscription()),))
        cluster.take(cluster.shard.join(cluster.now, cluster.token, GROUP, request))
    first = joined(cluster, tokens[0])
    generation, leader = first.generation_id, first.leader
    plan = {m: encode_assignment([TopicPartition("t", p) for p in range(4)
                                  if p % members == i]) for i, m in enumerate(ids)}
    for member_id in [m for m in ids if m != leader] + [leader]:
        cluster.sync(member_id, generation, plan if member_id == leader else None)
    return ids, generation


def consumer(cluster: Cluster) -> ConsumerGroup:
    group = cluster.shard.consumer_groups.get(GROUP)
    assert group is not None, "not a consumer group"
    return group


def owned_by(group: ConsumerGroup) -> dict[str, set[int]]:
    return {m.member_id: {tp.partition for tp in m.assignment.owned}
            for m in group.members.values()}


# ------------------------------------------------------------------------------ upgrade


def test_a_classic_group_upgrades_when_a_member_joins_with_the_consumer_protocol() -> None:
    cluster = Cluster()
    (a, b), generation = classic_group(cluster)
    assert cluster.commit(a, generation, 0, 42) is NONE
    before = len(cluster.log)

    result = cluster.beat("new", 0)

    assert result.error is NONE, result
    group = consumer(cluster)
    # Converted at the classic generation, then bumped by the joining member.
    assert group.group_epoch == generation + 1
    assert group.members[a].classic is not None and group.members["new"].classic is None
    # The classic members keep what their leader gave them until they rejoin.
    assert owned_by(group)[a] == {0, 2} and owned_by(group)[b] == {1, 3}
    assert owned_by(group)["new"] == set()
    written = cluster.log[before:]
    assert written[0].value is None, "the classic group's metadata is tombstoned first"
    assert cluster.shard.fetch_offsets(GROUP, None)[0].offset == 42


def test_classic_members_rejoin_and_hand_partitions_over_without_double_ownership() -> None:
    cluster = Cluster()
    (a, b), generation = classic_group(cluster)
    cluster.beat("new", 0)
    assert cluster.shard.heartbeat(cluster.now, GROUP, a, None, generation) is REBALANCING

    joined = cluster.join(a)  # eager: revoked everything before rejoining
    assert joined.error is NONE and joined.leader == "" and not joined.members
    epoch = joined.generation_id
    assert epoch == generation + 1
    synced = cluster.sync(a, epoch)
    assert synced is not None and synced.error is NONE
    kept = {tp.partition for tp in decode_assignment(synced.assignment)}
    group = consumer(cluster)
    assert kept == owned_by(group)[a]
    assert cluster.shard.heartbeat(cluster.now, GROUP, a, None, epoch) is NONE
    assert cluster.commit(a, epoch, min(kept), 7) is NONE
    # A classic client knows generations, not member epochs: its stale commit is refused
    # the classic way, which makes it rejoin.
    assert cluster.commit(a, generation, min(kept), 7) is ErrorCode.illegal_generation

    cluster.join(b)
    new = cluster.beat("new", group.members["new"].assignment.member_epoch, frozenset())
    assert new.assignment, "the partitions the classic members released go to the new one"
    owners = owned_by(group)
    assert sum(len(p) for p in owners.values()) == 4
    assert set.union(*owners.values()) == {0, 1, 2, 3}


def test_a_cooperative_classic_member_keeps_its_partitions_until_it_revokes_them() -> None:
    cluster = Cluster()
    classic_group(cluster)
    cluster.beat("new", 0)
    group = consumer(cluster)
    # The classic member that must give a partition up to the new member.
    giver = next(m for m in group.classic_members if group.target[m.member_id] < m.assignment.owned)
    owned = giver.assignment.owned
    joined = cluster.join(giver.member_id, owned=owned, names=("cooperative-sticky", "range"))
    assert joined.error is NONE
    assert owned_by(group)[giver.member_id] == {tp.partition for tp in owned}
    assert cluster.shard.heartbeat(cluster.now, GROUP, giver.member_id, None,
                                   joined.generation_id) is REBALANCING
    kept = group.target[giver.member_id]
    cluster.join(giver.member_id, owned=kept, names=("cooperative-sticky", "range"))
    assert owned_by(group)[giver.member_id] == {tp.partition for tp in kept}


def test_the_upgrade_and_the_consumer_group_survive_a_reload() -> None:
    cluster = Cluster()
    (a, b), generation = classic_group(cluster)
    cluster.commit(b, generation, 1, 11)
    cluster.beat("new", 0)
    cluster.join(a)

    loaded = cluster.reloaded()

    group, again = consumer(cluster), loaded.consumer_groups[GROUP]
    assert again.group_epoch == group.group_epoch
    assert owned_by(again) == owned_by(group)
    assert {m: x.classic for m, x in again.members.items()} == {
        m: x.classic for m, x in group.members.items()}
    assert loaded.fetch_offsets(GROUP, None) == cluster.shard.fetch_offsets(GROUP, None)


def test_the_migration_policy_can_refuse_the_upgrade() -> None:
    cluster = Cluster(config=replace(CONFIG, consumer_migration_policy="downgrade"))
    classic_group(cluster)
    result = cluster.beat("new", 0)
    assert result.error is ErrorCode.group_id_not_found
    assert result.message == (f"Cannot upgrade classic group {GROUP} to consumer group "
                              f"because the online upgrade is disabled.")
    assert GROUP not in cluster.shard.consumer_groups


# ------------------------------------------------------------------------------ downgrade


def test_the_group_downgrades_when_its_last_consumer_protocol_member_leaves() -> None:
    cluster = Cluster()
    (a, b), generation = classic_group(cluster)
    cluster.commit(a, generation, 0, 5)
    cluster.beat("new", 0)
    epoch = consumer(cluster).members["new"].assignment.member_epoch

    left = cluster.beat("new", -1)

    assert left.error is NONE and left.member_epoch == -1
    assert GROUP not in cluster.shard.consumer_groups
    classic = cluster.shard.group(GROUP)
    assert classic is not None and set(classic.members) == {a, b}
    assert classic.state is GroupState.PREPARING_REBALANCE
    assert classic.generation_id == epoch
    assert cluster.shard.fetch_offsets(GROUP, None)[0].offset == 5
    # Replayed, the log gives the classic group (and its offsets) back, not a consumer one.
    loaded = cluster.reloaded()
    assert GROUP not in loaded.consumer_groups
    reloaded = loaded.group(GROUP)
    assert reloaded is not None and set(reloaded.members) == {a, b}
    assert loaded.fetch_offsets(GROUP, None)[0].offset == 5


def test_a_classic_leave_group_of_the_last_consumer_member_is_no_downgrade() -> None:
    """LeaveGroup of a classic member leaves a consumer-protocol member: no downgrade."""
    cluster = Cluster()
    (a, b), _ = classic_group(cluster)
    cluster.beat("new", 0)
    top, errors, out = cluster.shard.leave(cluster.now, GROUP, [(a, None), ("nobody", None)],
                                           TOPIC_IDS)
    cluster.take(out)
    assert top is NONE and errors == [NONE, ErrorCode.unknown_member_id]
    assert set(consumer(cluster).members) == {b, "new"}


def test_no_downgrade_when_the_policy_allows_only_upgrades() -> None:
    cluster = Cluster(config=replace(CONFIG, consumer_migration_policy="upgrade"))
    classic_group(cluster)
    cluster.beat("new", 0)
    cluster.beat("new", -1)
    assert len(consumer(cluster).members) == 2


def test_a_classic_member_joining_an_empty_consumer_group_makes_it_classic() -> None:
    cluster = Cluster()
    cluster.beat("gone", 0)
    cluster.commit("gone", 1, 0, 9)
    cluster.beat("gone", -1)
    assert consumer(cluster).members == {}

    cluster.token += 1
    cluster.take(cluster.shard.join(cluster.now, cluster.token, GROUP,
                                    join_request(require_known=False), TOPICS, TOPIC_IDS))

    assert GROUP not in cluster.shard.consumer_groups
    [listing] = cluster.shard.list_groups()
    assert (listing.group_type, listing.state) == ("classic", GroupState.COMPLETING_REBALANCE)
    loaded = cluster.reloaded()
    assert GROUP not in loaded.consumer_groups
    assert loaded.fetch_offsets(GROUP, None)[0].offset == 9


# ------------------------------------------------------------------------------ conversion


def _classic(assignments: list[frozenset[int]], generation: int) -> Group:
    group = Group(GROUP, CONFIG, 0, lambda: "x")
    group.generation_id, group.protocol_type = generation, "consumer"
    group.protocol_name, group.state = "range", GroupState.STABLE
    for i, partitions in enumerate(assignments):
        group.membership.add(Member(
            f"m{i}", f"i{i}" if i % 2 else None, f"c{i}", "/h", 30_000, 10_000, "consumer",
            (("range", subscription()), ("cooperative-sticky", subscription())),
            encode_assignment([TopicPartition("t", p) for p in sorted(partitions)]),
        ))
    return group


@st.composite
def classic_groups(draw: st.DrawFn) -> Group:
    """A classic group whose members hold disjoint parts of 8 partitions."""
    members = draw(st.integers(1, 5))
    owner = draw(st.lists(st.integers(0, members), min_size=8, max_size=8))
    return _classic([frozenset(p for p in range(8) if owner[p] == i) for i in range(members)],
                    draw(st.integers(1, 1000)))


@settings(max_examples=60, deadline=None)
@given(classic_groups())
def test_conversion_round_trip_keeps_members_and_assignments(classic: Group) -> None:
    converted = consumer_from_classic(classic, CONFIG, 0)
    assert converted.group_epoch == converted.assignment_epoch == classic.generation_id
    assert converted.state.value == "Stable"
    back = classic_from_consumer(converted, (), CONFIG, 0, lambda: "x")
    assert back.generation_id == classic.generation_id
    assert list(back.members) == list(classic.members)
    for member_id, member in classic.members.items():
        again = back.members[member_id]
        assert sorted(decode_assignment(again.assignment)) == sorted(
            decode_assignment(member.assignment))
        assert (again.group_instance_id, again.protocols, again.session_timeout_ms) == (
            member.group_instance_id, member.protocols, member.session_timeout_ms)
    assert back.protocol_name == "range"


def test_the_migration_policy_is_one_of_kafkas_four() -> None:
    assert migration_policy(" Bidirectional") == "bidirectional"
    with pytest.raises(ConfigError, match=r"group\.consumer\.migration\.policy"):
        migration_policy("sideways")


# A ConsumerGroupMemberMetadataValue Kafka 4.4 wrote for a classic member of a group it had
# upgraded (read from its __consumer_offsets log): two protocols, range and
# cooperative-sticky, each with a ConsumerProtocolSubscription v3 of topic "t".
_SUBSCRIPTION = "000300000001000174ffffffff0000000000000001ffff"
KAFKA_CLASSIC_MEMBER_VALUE = bytes.fromhex(
    "0000" "00" "00" "0263" "0268" "020274" "01" "000493e0" "00"  # ... regex "", assignor
    "01" "00" "52"  # one tagged field: tag 0, 82 bytes
    "01" "0000afc8" "03"  # present; session timeout 45000; two protocols
    "0672616e6765" "18" + _SUBSCRIPTION + "00"
    "13636f6f70657261746976652d737469636b79" "18" + _SUBSCRIPTION + "00"
    "00")  # the struct's own (empty) tagged fields


def test_classic_member_metadata_is_read_and_written_as_kafka_does() -> None:
    key = b"\x00\x05" + b"\x00\x01g" + b"\x00\x01m"
    groups: dict[str, ConsumerGroup] = {}
    replay_consumer_group_record(groups, lambda g: ConsumerGroup(g, CONFIG), key,
                                 KAFKA_CLASSIC_MEMBER_VALUE, {}, 0)
    member = groups["g"].members["m"]
    subscription = bytes.fromhex(_SUBSCRIPTION)
    assert member.classic == ClassicMetadata(
        45000, (("range", subscription), ("cooperative-sticky", subscription)))
    assert member.session_timeout_ms(CONFIG) == 45000
    member.subscribed_topic_regex = ""  # Kafka writes "" for a classic member, odradek null
    written = changed_records("g", snapshot(None), snapshot(groups["g"]), {}, 0)[0].value
    assert written == KAFKA_CLASSIC_MEMBER_VALUE
