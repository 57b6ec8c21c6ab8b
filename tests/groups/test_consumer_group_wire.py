"""The group APIs around a consumer-type (KIP-848) group, on the wire, as Kafka 4 answers
them: OffsetFetch v8-v10 (batched groups, member epochs, topic ids), DescribeGroups (such a
group is not a classic one: Dead), ListGroups v5's type filter, and DeleteGroups,
OffsetDelete and LeaveGroup refusing what would break a live group."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from tests.broker.inprocess import InProcessBroker
from tests.broker.wire import WireClient
from tests.groups.test_wire_versions import (  # the module's broker, and its request helpers
    DELETE_GROUPS,
    DESCRIBE,
    FETCH,
    LEAVE,
    LIST,
    OFFSET_DELETE,
    broker,
    commit,
    group_name,
    request,
    schema,
)

__all__ = ["broker"]

HEARTBEAT = 68


@pytest.fixture
def client(broker: InProcessBroker) -> Iterator[WireClient]:
    with WireClient(broker.port) as wire:
        yield wire


@pytest.fixture
def topic_id(broker: InProcessBroker) -> uuid.UUID:
    assert broker.broker is not None
    topic: uuid.UUID = broker.broker.services.cluster.view.topics["t"].topic_id
    return topic


def join(client: WireClient, group: str, member: str) -> int:
    """Join ``member`` to consumer group ``group`` (subscribed to ``t``): its epoch."""
    response = client.request(request(
        HEARTBEAT, 1, group_id=group, member_id=member, member_epoch=0,
        rebalance_timeout=datetime.timedelta(seconds=30), subscribed_topic_names=("t",),
        topic_partitions=()))
    assert response.error_code == ErrorCode.none, response
    return int(response.member_epoch)


def fetch_groups(client: WireClient, version: int, groups: list[dict[str, Any]]) -> Any:
    module = schema(FETCH, version)
    built = []
    for group in groups:
        topics = group.pop("topics", None)
        if topics is not None:
            key = "topic_id" if version >= 10 else "name"
            topics = tuple(module.OffsetFetchRequestTopics(
                **{key: topic}, partition_indexes=tuple(parts)) for topic, parts in topics)
        fields = {"member_id": None, "member_epoch": -1, **group, "topics": topics}
        if version < 9:
            fields.pop("member_id"), fields.pop("member_epoch")
        built.append(module.OffsetFetchRequestGroup(**fields))
    return client.request(request(FETCH, version, groups=tuple(built), require_stable=False))


def offsets(group: Any) -> list[tuple[Any, int, int, ErrorCode]]:
    return [(getattr(t, "topic_id", None) or t.name, p.partition_index, p.committed_offset,
             p.error_code) for t in group.topics for p in t.partitions]


def consumer_group(client: WireClient) -> tuple[str, str, int]:
    """A consumer group with offset 5 committed on t-0, and one member: (group, member,
    epoch)."""
    group, member = group_name(), uuid.uuid4().hex
    assert commit(client, 8, group, {0: 5}) == {0: ErrorCode.none}
    return group, member, join(client, group, member)


def test_offset_fetch_v9_checks_a_consumer_group_members_epoch(client: WireClient) -> None:
    group, member, epoch = consumer_group(client)
    asked = [("t", [0])]
    answer = fetch_groups(client, 9, [{"group_id": group, "member_id": member,
                                       "member_epoch": epoch, "topics": asked}]).groups[0]
    assert (answer.error_code, offsets(answer)) == (ErrorCode.none, [("t", 0, 5, ErrorCode.none)])
    for member_id, member_epoch, error in ((member, epoch - 1, ErrorCode.stale_member_epoch),
                                           (member, epoch + 1, ErrorCode.stale_member_epoch),
                                           ("ghost", epoch, ErrorCode.unknown_member_id)):
        refused = fetch_groups(client, 9, [{"group_id": group, "member_id": member_id,
                                            "member_epoch": member_epoch,
                                            "topics": asked}]).groups[0]
        assert (refused.error_code, refused.topics) == (error, ()), (member_id, member_epoch)
    # No member and no epoch: an admin's fetch, answered whatever the group's members.
    admin = fetch_groups(client, 9, [{"group_id": group, "topics": None}]).groups[0]
    assert offsets(admin) == [("t", 0, 5, ErrorCode.none)]


def test_offset_fetch_v8_answers_each_group_on_its_own(client: WireClient) -> None:
    group, _, _ = consumer_group(client)
    unknown = group_name()
    response = fetch_groups(client, 8, [{"group_id": group, "topics": [("t", [0, 1])]},
                                        {"group_id": unknown, "topics": None}])
    assert [(g.group_id, g.error_code) for g in response.groups] == [
        (group, ErrorCode.none), (unknown, ErrorCode.none)]
    assert offsets(response.groups[0]) == [("t", 0, 5, ErrorCode.none),
                                           ("t", 1, -1, ErrorCode.none)]
    assert response.groups[1].topics == ()


def test_offset_fetch_v10_names_topics_by_id(client: WireClient, topic_id: uuid.UUID) -> None:
    group, member, epoch = consumer_group(client)
    ghost = uuid.UUID(int=12345)
    response = fetch_groups(client, 10, [{"group_id": group, "member_id": member,
                                          "member_epoch": epoch,
                                          "topics": [(topic_id, [0]), (ghost, [3])]}])
    assert offsets(response.groups[0]) == [(topic_id, 0, 5, ErrorCode.none),
                                           (ghost, 3, -1, ErrorCode.unknown_topic_id)]
    everything = fetch_groups(client, 10, [{"group_id": group, "topics": None}])
    assert offsets(everything.groups[0]) == [(topic_id, 0, 5, ErrorCode.none)]


def test_describe_groups_does_not_describe_a_consumer_group(client: WireClient) -> None:
    # Kafka's describeGroups reads classic groups only: another type is "Dead" (before v6,
    # which adds GROUP_ID_NOT_FOUND); the admin client asks ConsumerGroupDescribe first.
    group, _, _ = consumer_group(client)
    described = client.request(request(DESCRIBE, 5, groups=(group,),
                                       include_authorized_operations=False)).groups[0]
    assert (described.error_code, described.group_state, described.protocol_type,
            described.members) == (ErrorCode.none, "Dead", "", ())


def test_list_groups_v5_filters_by_type_and_by_the_new_states(client: WireClient) -> None:
    group, _, _ = consumer_group(client)
    classic = group_name()
    commit(client, 8, classic, {0: 1})

    def listed(types: tuple[str, ...] = (), states: tuple[str, ...] = ()) -> dict[str, Any]:
        response = client.request(request(LIST, 5, states_filter=states, types_filter=types))
        return {g.group_id: (g.group_type, g.group_state, g.protocol_type)
                for g in response.groups}

    assert listed()[group] == ("consumer", "Stable", "consumer")
    assert group in listed(types=("Consumer",)) and classic not in listed(types=("consumer",))
    assert classic in listed(types=("classic",)) and group not in listed(types=("classic",))
    assert group in listed(states=("stable",)) and group not in listed(states=("empty",))


def test_a_live_consumer_group_keeps_its_offsets_and_its_members(client: WireClient) -> None:
    group, member, _ = consumer_group(client)
    deleted = client.request(request(DELETE_GROUPS, 2, groups_names=(group,)))
    assert deleted.results[0].error_code == ErrorCode.non_empty_group

    module = schema(OFFSET_DELETE, 0)
    response = client.request(request(OFFSET_DELETE, 0, group_id=group, topics=(
        module.OffsetDeleteRequestTopic(name="t", partitions=(
            module.OffsetDeleteRequestPartition(partition_index=0),)),)))
    assert (response.error_code, response.topics[0].partitions[0].error_code) == (
        ErrorCode.none, ErrorCode.group_subscribed_to_topic)

    # A KIP-848 member is not a classic member: LeaveGroup does not know it.
    leave = schema(LEAVE, 4)
    left = client.request(request(LEAVE, 4, group_id=group, members=(
        leave.MemberIdentity(member_id=member, group_instance_id=None),)))
    assert (left.error_code, [m.error_code for m in left.members]) == (
        ErrorCode.none, [ErrorCode.unknown_member_id])
    assert join(client, group, uuid.uuid4().hex) > 0  # the first member is still there
