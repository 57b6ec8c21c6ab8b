"""Group APIs on the wire, version by version: what each version's fields turn into.

An in-process broker answers hand-built kio requests, so the per-version mapping (v0's
missing rebalance timeout, v4's MEMBER_ID_REQUIRED, LeaveGroup v0's top-level error,
OffsetCommit's retention and leader epoch, OffsetFetch's null topic list, FindCoordinator
v4's batched keys, ListGroups v4's state filter) is checked byte-exactly, without clients
that would paper over a wrong answer by retrying.
"""

from __future__ import annotations

import datetime
import sys
import time
import uuid
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from odradek.coordinator import partition_for_group
from odradek.local_cluster import ZooKeeperProcess, wait_until
from tests.broker.helpers import create_topic
from tests.broker.inprocess import InProcessBroker, broker_config
from tests.broker.wire import WireClient

FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC = 10, 11, 12, 13, 14
COMMIT, FETCH, DESCRIBE, LIST, DELETE_GROUPS, OFFSET_DELETE = 8, 9, 15, 16, 42, 47
SECONDS_10 = datetime.timedelta(seconds=10)


def schema(api_key: int, version: int) -> ModuleType:
    return sys.modules[load_request_schema(api_key, version).__module__]


def request(api_key: int, version: int, **fields: Any) -> Any:
    cls = load_request_schema(api_key, version)
    names = cls.__dataclass_fields__
    return cls(**{k: v for k, v in fields.items() if k in names})


@pytest.fixture(scope="module")
def broker(zookeeper: ZooKeeperProcess,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessBroker]:
    connect = f"{zookeeper.connect}/t-{uuid.uuid4().hex[:12]}"
    config = broker_config(connect, tmp_path_factory.mktemp("logs"),
                           group_initial_rebalance_delay_ms="0",
                           group_min_session_timeout_ms="1000",
                           offsets_topic_num_partitions="3")
    started = InProcessBroker(config).start()
    create_topic(started, "t", partitions=4)
    # One group id per offsets partition: every partition must have its coordinator.
    keys = tuple({partition_for_group(f"k{i}", 3): f"k{i}" for i in range(50)}.values())
    with WireClient(started.port) as client:
        def coordinators_ready() -> bool:
            found = client.request(request(FIND_COORDINATOR, 4, key_type=0,
                                           coordinator_keys=keys))
            return all(c.error_code == ErrorCode.none for c in found.coordinators)

        wait_until(coordinators_ready, 30, "a coordinator for every offsets partition")
        # Every offsets partition must be loaded, not just the warm-up group's.
        wait_until(lambda: _list(client, 4).error_code == ErrorCode.none, 30,
                   "every offsets partition to be loaded")
    yield started
    started.stop()


@pytest.fixture
def client(broker: InProcessBroker) -> Iterator[WireClient]:
    with WireClient(broker.port) as wire:
        yield wire


def _list(client: WireClient, version: int, states: tuple[str, ...] = ()) -> Any:
    return client.request(request(LIST, version, states_filter=states))


def group_name() -> str:
    return f"wire-{uuid.uuid4().hex[:8]}"


def join(client: WireClient, version: int, group: str, member_id: str = "") -> Any:
    protocol = schema(JOIN, version).JoinGroupRequestProtocol(name="range", metadata=b"sub")
    return client.request(request(
        JOIN, version, group_id=group, session_timeout=SECONDS_10,
        rebalance_timeout=SECONDS_10, member_id=member_id, group_instance_id=None,
        protocol_type="consumer", protocols=(protocol,)))


def sync(client: WireClient, version: int, group: str, member_id: str, generation: int,
         assignment: bytes) -> Any:
    entry = schema(SYNC, version).SyncGroupRequestAssignment(member_id=member_id,
                                                             assignment=assignment)
    return client.request(request(
        SYNC, version, group_id=group, generation_id=generation, member_id=member_id,
        group_instance_id=None, protocol_type="consumer", protocol_name="range",
        assignments=(entry,)))


def commit(client: WireClient, version: int, group: str, offsets: dict[int, int],
           topic: str = "t", generation: int = -1, member_id: str = "",
           leader_epoch: int = -1) -> dict[int, ErrorCode]:
    module = schema(COMMIT, version)
    partitions = tuple(
        request_part(module.OffsetCommitRequestPartition, partition_index=p,
                     committed_offset=o, committed_leader_epoch=leader_epoch,
                     committed_metadata="meta")
        for p, o in offsets.items())
    response = client.request(request(
        COMMIT, version, group_id=group, generation_id_or_member_epoch=generation,
        member_id=member_id, group_instance_id=None,
        retention_time=datetime.timedelta(milliseconds=-1),
        topics=(module.OffsetCommitRequestTopic(name=topic, partitions=partitions),)))
    return {p.partition_index: p.error_code for t in response.topics for p in t.partitions}


def request_part(cls: type, **fields: Any) -> Any:
    names = cls.__dataclass_fields__  # type: ignore[attr-defined]
    return cls(**{k: v for k, v in fields.items() if k in names})


def fetch(client: WireClient, version: int, group: str,
          partitions: list[int] | None, topic: str = "t") -> Any:
    module = schema(FETCH, version)
    topics = None if partitions is None else (
        module.OffsetFetchRequestTopic(name=topic, partition_indexes=tuple(partitions)),)
    return client.request(request(FETCH, version, group_id=group, topics=topics,
                                  require_stable=False))


def test_find_coordinator_v0_and_v4_batched_keys(client: WireClient,
                                                 broker: InProcessBroker) -> None:
    single = client.request(request(FIND_COORDINATOR, 0, key="some-group"))
    assert (single.error_code, single.node_id, single.port) == (ErrorCode.none, 0, broker.port)
    batched = client.request(request(FIND_COORDINATOR, 4, key_type=0,
                                     coordinator_keys=("a", "b", "c")))
    assert [(c.key, c.error_code, c.node_id) for c in batched.coordinators] == [
        ("a", ErrorCode.none, 0), ("b", ErrorCode.none, 0), ("c", ErrorCode.none, 0)]
    # Transactional ids: the first lookup creates __transaction_state (retriable
    # COORDINATOR_NOT_AVAILABLE meanwhile), then the leader of the id's partition answers.
    deadline = time.monotonic() + 30
    while True:
        transactions = client.request(request(FIND_COORDINATOR, 4, key_type=1,
                                              coordinator_keys=("txn",)))
        found = transactions.coordinators[0]
        if found.error_code == ErrorCode.none or time.monotonic() > deadline:
            break
        assert found.error_code == ErrorCode.coordinator_not_available
        time.sleep(0.1)
    assert (found.error_code, found.node_id, found.port) == (ErrorCode.none, 0, broker.port)


def test_join_v4_requires_a_member_id_and_v0_does_not(client: WireClient) -> None:
    group = group_name()
    first = join(client, 4, group)
    assert first.error_code == ErrorCode.member_id_required
    assert first.member_id, "MEMBER_ID_REQUIRED must hand out the member id to use"
    joined = join(client, 4, group, first.member_id)
    assert (joined.error_code, joined.generation_id, joined.leader) == (
        ErrorCode.none, 1, first.member_id)
    assert [(m.member_id, m.metadata) for m in joined.members] == [(first.member_id, b"sub")]

    old = join(client, 0, group_name())
    assert old.error_code == ErrorCode.none and old.generation_id == 1
    assert old.protocol_name == "range"


def test_sync_heartbeat_describe_leave_v0(client: WireClient) -> None:
    group = group_name()
    joined = join(client, 0, group)
    member = joined.member_id
    synced = sync(client, 0, group, member, joined.generation_id, b"assignment")
    assert (synced.error_code, synced.assignment) == (ErrorCode.none, b"assignment")
    beat = client.request(request(HEARTBEAT, 0, group_id=group, generation_id=1,
                                  member_id=member))
    assert beat.error_code == ErrorCode.none
    stale = client.request(request(HEARTBEAT, 0, group_id=group, generation_id=7,
                                   member_id=member))
    assert stale.error_code == ErrorCode.illegal_generation

    described = client.request(request(DESCRIBE, 0, groups=(group,))).groups[0]
    assert (described.group_state, described.protocol_type, described.protocol_data) == (
        "Stable", "consumer", "range")
    (described_member,) = described.members
    assert described_member.client_host == "/127.0.0.1"
    assert described_member.client_id == "wire-test"
    assert (described_member.member_metadata, described_member.member_assignment) == (
        b"sub", b"assignment")

    unknown = client.request(request(LEAVE, 0, group_id=group, member_id="nobody"))
    assert unknown.error_code == ErrorCode.unknown_member_id, "v0 carries it at the top"
    left = client.request(request(LEAVE, 0, group_id=group, member_id=member))
    assert left.error_code == ErrorCode.none
    assert client.request(request(DESCRIBE, 5, groups=(group,),
                                  include_authorized_operations=False)).groups[0].group_state \
        == "Empty"


def test_leave_v3_batches_members_with_per_member_errors(client: WireClient) -> None:
    group = group_name()
    joined = join(client, 0, group)
    identity = schema(LEAVE, 3).MemberIdentity
    response = client.request(request(LEAVE, 3, group_id=group, members=(
        identity(member_id=joined.member_id, group_instance_id=None),
        identity(member_id="ghost", group_instance_id=None))))
    assert response.error_code == ErrorCode.none
    assert [(m.member_id, m.error_code) for m in response.members] == [
        (joined.member_id, ErrorCode.none), ("ghost", ErrorCode.unknown_member_id)]


def test_offset_commit_and_fetch_across_versions(client: WireClient) -> None:
    group = group_name()
    assert commit(client, 2, group, {0: 5, 1: 6}) == {0: ErrorCode.none, 1: ErrorCode.none}
    assert commit(client, 8, group, {2: 9}, leader_epoch=4) == {2: ErrorCode.none}

    v1 = fetch(client, 1, group, [0, 3])
    assert [(p.partition_index, p.committed_offset, p.metadata, p.error_code)
            for p in v1.topics[0].partitions] == [
        (0, 5, "meta", ErrorCode.none), (3, -1, "", ErrorCode.none)]
    everything = fetch(client, 2, group, None)
    assert everything.error_code == ErrorCode.none
    assert sorted((p.partition_index, p.committed_offset)
                  for t in everything.topics for p in t.partitions) == [(0, 5), (1, 6), (2, 9)]
    v7 = fetch(client, 7, group, [2])
    assert (v7.topics[0].partitions[0].committed_offset,
            v7.topics[0].partitions[0].committed_leader_epoch) == (9, 4)


def test_commits_to_unknown_partitions_are_refused_per_partition(client: WireClient) -> None:
    group = group_name()
    assert commit(client, 8, group, {0: 1, 9: 1}) == {
        0: ErrorCode.none, 9: ErrorCode.unknown_topic_or_partition}
    assert commit(client, 2, group, {0: 1}, topic="no-such-topic") == {
        0: ErrorCode.unknown_topic_or_partition}
    assert fetch(client, 2, group, None).topics[0].partitions[0].partition_index == 0


def test_group_level_commit_errors_are_repeated_per_partition(client: WireClient) -> None:
    group = group_name()
    joined = join(client, 0, group)
    sync(client, 0, group, joined.member_id, 1, b"")
    errors = commit(client, 2, group, {0: 1, 1: 1}, generation=5, member_id=joined.member_id)
    assert errors == {0: ErrorCode.illegal_generation, 1: ErrorCode.illegal_generation}
    assert commit(client, 8, group, {0: 1}, generation=1, member_id=joined.member_id) == {
        0: ErrorCode.none}


def test_list_groups_v4_filters_by_state_and_delete_groups(client: WireClient) -> None:
    stable, empty = group_name(), group_name()
    joined = join(client, 0, stable)
    sync(client, 0, stable, joined.member_id, 1, b"")
    commit(client, 2, empty, {0: 1})
    names_by_state = {
        states: {g.group_id for g in _list(client, 4, states).groups}
        for states in (("Stable",), ("empty",), ())
    }
    assert stable in names_by_state[("Stable",)] and empty not in names_by_state[("Stable",)]
    assert empty in names_by_state[("empty",)] and stable not in names_by_state[("empty",)]
    assert {stable, empty} <= names_by_state[()]

    deleted = client.request(request(DELETE_GROUPS, 2, groups_names=(stable, empty)))
    assert {r.group_id: r.error_code for r in deleted.results} == {
        stable: ErrorCode.non_empty_group, empty: ErrorCode.none}
    assert empty not in {g.group_id for g in _list(client, 0).groups}


def test_offset_delete_of_an_unsubscribed_partition(client: WireClient) -> None:
    group = group_name()
    commit(client, 2, group, {0: 3, 1: 4})
    module = schema(OFFSET_DELETE, 0)
    response = client.request(request(OFFSET_DELETE, 0, group_id=group, topics=(
        module.OffsetDeleteRequestTopic(name="t", partitions=(
            module.OffsetDeleteRequestPartition(partition_index=0),)),)))
    assert response.error_code == ErrorCode.none
    assert [(p.partition_index, p.error_code) for p in response.topics[0].partitions] == [
        (0, ErrorCode.none)]
    remaining = fetch(client, 2, group, None)
    assert [(p.partition_index, p.committed_offset)
            for t in remaining.topics for p in t.partitions] == [(1, 4)]
