"""Hypothesis plays a fleet of KIP-848 clients against the sans-IO consumer group.

Each simulated client behaves as Kafka's consumer does: it heartbeats with its epoch and the
partitions it owns, and reconciles towards the last assignment it received *when it gets to
it* (a separate step, so a client may keep consuming partitions it must give up for a while,
as a real one does while its revocation callback commits); it rejoins with epoch 0 after
being fenced, leaves with epoch -1, and a static client (``group.instance.id``) leaves with
epoch -2 and comes back under a new member id. Topics grow partitions and subscriptions
change. Invariants checked after every step:

* a partition is never in two members' current assignment on the coordinator, and its
  index of owners agrees with them;
* a partition is never given to a client while another client still owns it (its previous
  owner has not acknowledged the revocation yet), and never owned by two clients at once;
* a client's member epoch never goes down while it stays in the group;
* a heartbeat with a member epoch the coordinator never gave out is FENCED_MEMBER_EPOCH;
* once every client keeps heartbeating and reconciling, the group converges: Stable, and
  every partition of the subscribed topics owned by exactly one client;
* the records written for every change, replayed from the start, rebuild the same group
  (what a new coordinator loads after a failover).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from odradek.config_sections import GroupCoordinatorConfig
from odradek.coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerGroupState,
    ConsumerHeartbeat,
    HeartbeatResult,
)
from odradek.coordinator.consumer_group_records import (
    changed_records,
    finish_load,
    replay_consumer_group_record,
    snapshot,
)
from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import Record
from odradek.types import TopicPartition

SESSION_MS = 1_000
CLIENTS = ("c0", "c1", "c2", "c3")
TOPIC_IDS = {"a": uuid.UUID(int=1), "b": uuid.UUID(int=2)}
CONFIG = GroupCoordinatorConfig(consumer_session_timeout_ms=SESSION_MS)


@dataclass
class Client:
    member_id: str
    epoch: int = 0
    owned: frozenset[TopicPartition] = frozenset()
    received: frozenset[TopicPartition] | None = None  # not reconciled yet
    topics: tuple[str, ...] = ("a",)
    assignor: str = "uniform"
    joined: bool = False
    instance_id: str | None = None  # group.instance.id: a static member
    history: list[int] = field(default_factory=list)


class ConsumerGroupModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.topics = {"a": 3, "b": 2}
        self.group = ConsumerGroup("g", CONFIG)
        self.clients = {name: Client(name) for name in CLIENTS}
        self.restarts = 0
        self.log: list[Record] = []

    def _fresh(self, name: str, restart: bool = False) -> None:
        """The client starts over with nothing owned and epoch 0: fenced (same member id) or
        restarted (a new process: a new member id, the same instance id)."""
        old = self.clients[name]
        self.restarts += 1
        member_id = f"{name}-{self.restarts}" if restart else old.member_id
        self.clients[name] = Client(member_id, topics=old.topics, assignor=old.assignor,
                                    instance_id=old.instance_id)

    def _send(self, request: ConsumerHeartbeat) -> HeartbeatResult:
        before = snapshot(self.group)
        result = self.group.heartbeat(self.now, request, self.topics)
        self.log += changed_records("g", before, snapshot(self.group), TOPIC_IDS, self.now)
        return result

    def _apply(self, name: str, result: HeartbeatResult) -> None:
        client = self.clients[name]
        if result.error in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id):
            self._fresh(name)  # its partitions are lost: it stops consuming them
            return
        assert result.error == ErrorCode.none, result
        if result.assignment is not None:
            given = result.assignment - client.owned
            for other_name, other in self.clients.items():
                clash = given & other.owned if other_name != name else frozenset()
                assert not clash, (f"{sorted(clash)} given to {name} while {other_name} "
                                   f"still owns them (revocation not acknowledged)")
            client.received = result.assignment
        assert result.member_epoch >= client.epoch, (name, client.epoch, result)
        client.epoch = result.member_epoch
        client.joined = True

    def _heartbeat(self, name: str) -> None:
        client = self.clients[name]
        if client.joined:
            request = ConsumerHeartbeat(client.member_id, client.epoch, owned=client.owned)
        else:
            request = ConsumerHeartbeat(client.member_id, 0, rebalance_timeout_ms=10_000,
                                        instance_id=client.instance_id,
                                        subscribed_topic_names=client.topics,
                                        server_assignor=client.assignor, owned=frozenset())
        self._apply(name, self._send(request))

    def _reconcile(self, name: str) -> None:
        """Revoke what is no longer assigned (after committing), take what is new."""
        client = self.clients[name]
        if client.received is not None:
            client.owned, client.received = client.received, None

    @rule(name=st.sampled_from(CLIENTS))
    def heartbeat(self, name: str) -> None:
        self._heartbeat(name)

    @rule(name=st.sampled_from(CLIENTS))
    def reconcile(self, name: str) -> None:
        self._reconcile(name)

    @rule(name=st.sampled_from(CLIENTS))
    def reconcile_and_acknowledge(self, name: str) -> None:
        self._reconcile(name)
        if self.clients[name].joined:
            self._heartbeat(name)

    @rule(name=st.sampled_from(CLIENTS))
    def becomes_static(self, name: str) -> None:
        """From its next join on, the client has a ``group.instance.id`` (its name)."""
        client = self.clients[name]
        if not client.joined:
            client.instance_id = name

    @rule(name=st.sampled_from(CLIENTS))
    def static_leave(self, name: str) -> None:
        """A static client closes (epoch -2): the coordinator keeps its partitions for it."""
        client = self.clients[name]
        if client.joined and client.instance_id is not None:
            result = self._send(ConsumerHeartbeat(client.member_id, -2,
                                                  instance_id=client.instance_id))
            assert result.error == ErrorCode.none, result
            self._fresh(name, restart=True)

    @rule(name=st.sampled_from(CLIENTS))
    def leave(self, name: str) -> None:
        client = self.clients[name]
        if client.joined:
            result = self._send(ConsumerHeartbeat(client.member_id, -1))
            assert result.error == ErrorCode.none
            self._fresh(name, restart=True)

    @rule(name=st.sampled_from(CLIENTS),
          topics=st.sampled_from([("a",), ("b",), ("a", "b")]),
          assignor=st.sampled_from(["uniform", "range"]))
    def change_subscription(self, name: str, topics: tuple[str, ...], assignor: str) -> None:
        client = self.clients[name]
        client.topics, client.assignor = topics, assignor
        if client.joined:
            request = ConsumerHeartbeat(client.member_id, client.epoch,
                                        subscribed_topic_names=topics,
                                        server_assignor=assignor, owned=client.owned)
            self._apply(name, self._send(request))

    @rule(topic=st.sampled_from(["a", "b"]))
    def add_partition(self, topic: str) -> None:
        self.topics[topic] += 1

    @rule(name=st.sampled_from(CLIENTS))
    def heartbeat_with_a_future_epoch_is_fenced(self, name: str) -> None:
        client = self.clients[name]
        if client.joined:
            result = self._send(ConsumerHeartbeat(client.member_id, client.epoch + 1,
                                                  owned=client.owned))
            assert result.error == ErrorCode.fenced_member_epoch, result

    @rule(name=st.sampled_from(CLIENTS))
    def session_expires(self, name: str) -> None:
        """Only ``name`` goes silent: everyone else heartbeats just in time."""
        self.now += SESSION_MS // 2
        for other in CLIENTS:
            if other != name and self.clients[other].joined:
                self._heartbeat(other)
        self.now += SESSION_MS // 2 + 1
        before = snapshot(self.group)
        expired = self.group.poll(self.now)
        self.log += changed_records("g", before, snapshot(self.group), TOPIC_IDS, self.now)
        by_member = {c.member_id: n for n, c in self.clients.items()}
        for member in expired:
            # The client's own session timer ran out too: it lost its partitions.
            if member in by_member:
                self._fresh(by_member[member])

    @precondition(lambda self: any(c.joined for c in self.clients.values()))
    @rule()
    def everyone_heartbeats_until_stable(self) -> None:
        # A static member that left is waited for by the group: its instance comes back.
        waiting = set(self.group.static_members)
        for _ in range(12):
            for name in CLIENTS:
                self._reconcile(name)
                client = self.clients[name]
                if client.joined or client.instance_id in waiting:
                    self._heartbeat(name)
        for name in CLIENTS:
            self._reconcile(name)
        assert self.group.state is ConsumerGroupState.STABLE, self.group.state
        subscribed = {t for c in self.clients.values() if c.joined for t in c.topics}
        expected = {TopicPartition(t, p) for t in subscribed for p in range(self.topics[t])}
        owned = [tp for c in self.clients.values() for tp in c.owned]
        assert sorted(owned) == sorted(expected)

    @invariant()
    def the_log_rebuilds_the_group(self) -> None:
        groups: dict[str, ConsumerGroup] = {}
        names = {topic_id: name for name, topic_id in TOPIC_IDS.items()}
        for record in self.log:
            assert record.key is not None
            replay_consumer_group_record(groups, lambda g: ConsumerGroup(g, CONFIG),
                                         record.key, record.value, names, self.now)
        finish_load(groups.values())
        loaded = groups.get("g")
        if loaded is None:
            assert not self.group.members and self.group.group_epoch == 0
            return
        assert snapshot(loaded) == snapshot(self.group)
        assert loaded.owners == self.group.owners

    @invariant()
    def the_coordinator_never_has_a_partition_in_two_current_assignments(self) -> None:
        seen: dict[TopicPartition, str] = {}
        for member in self.group.members.values():
            for tp in member.assignment.owned:
                assert tp not in seen, f"{tp} in {seen[tp]}'s and {member.member_id}'s"
                seen[tp] = member.member_id
        assert seen == self.group.owners

    @invariant()
    def no_partition_owned_twice(self) -> None:
        owned = [tp for c in self.clients.values() for tp in c.owned]
        assert len(owned) == len(set(owned)), {n: sorted(c.owned) for n, c in
                                               self.clients.items()}


ConsumerGroupModel.TestCase.settings = settings(max_examples=100, stateful_step_count=40,
                                                deadline=None)
TestConsumerGroupModel = ConsumerGroupModel.TestCase
