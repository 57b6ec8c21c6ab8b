"""Hypothesis plays a fleet of KIP-848 clients against the sans-IO consumer group.

Each simulated client behaves as Kafka's consumer does: it owns what the last assignment it
received said (revoking before it reports), heartbeats with its epoch and owned partitions,
rejoins with epoch 0 after being fenced, and leaves with epoch -1. Invariants checked after
every step:

* no partition is owned by two clients at any instant;
* a client's member epoch never goes down while it stays in the group;
* a heartbeat with a member epoch the coordinator never gave out is FENCED_MEMBER_EPOCH;
* once every client keeps heartbeating, the group converges: Stable, and every partition of
  the subscribed topics owned by exactly one client;
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
    epoch: int = 0
    owned: frozenset[TopicPartition] = frozenset()
    topics: tuple[str, ...] = ("a",)
    assignor: str = "uniform"
    joined: bool = False
    history: list[int] = field(default_factory=list)


class ConsumerGroupModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.topics = {"a": 3, "b": 2}
        self.group = ConsumerGroup("g", CONFIG)
        self.clients = {name: Client() for name in CLIENTS}
        self.log: list[Record] = []

    def _send(self, request: ConsumerHeartbeat) -> HeartbeatResult:
        before = snapshot(self.group)
        result = self.group.heartbeat(self.now, request, self.topics)
        self.log += changed_records("g", before, snapshot(self.group), TOPIC_IDS, self.now)
        return result

    def _apply(self, name: str, result: HeartbeatResult) -> None:
        client = self.clients[name]
        if result.error in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id):
            self.clients[name] = Client(topics=client.topics, assignor=client.assignor)
            return
        assert result.error == ErrorCode.none, result
        if result.assignment is not None:
            client.owned = result.assignment
        assert result.member_epoch >= client.epoch, (name, client.epoch, result)
        client.epoch = result.member_epoch
        client.joined = True

    def _heartbeat(self, name: str) -> None:
        client = self.clients[name]
        if client.joined:
            request = ConsumerHeartbeat(name, client.epoch, owned=client.owned)
        else:
            request = ConsumerHeartbeat(name, 0, rebalance_timeout_ms=10_000,
                                        subscribed_topic_names=client.topics,
                                        server_assignor=client.assignor, owned=frozenset())
        self._apply(name, self._send(request))

    @rule(name=st.sampled_from(CLIENTS))
    def heartbeat(self, name: str) -> None:
        self._heartbeat(name)

    @rule(name=st.sampled_from(CLIENTS))
    def leave(self, name: str) -> None:
        if self.clients[name].joined:
            result = self._send(ConsumerHeartbeat(name, -1))
            assert result.error == ErrorCode.none
            self.clients[name] = Client(topics=self.clients[name].topics)

    @rule(name=st.sampled_from(CLIENTS),
          topics=st.sampled_from([("a",), ("b",), ("a", "b")]),
          assignor=st.sampled_from(["uniform", "range"]))
    def change_subscription(self, name: str, topics: tuple[str, ...], assignor: str) -> None:
        client = self.clients[name]
        client.topics, client.assignor = topics, assignor
        if client.joined:
            request = ConsumerHeartbeat(name, client.epoch, subscribed_topic_names=topics,
                                        server_assignor=assignor, owned=client.owned)
            self._apply(name, self._send(request))

    @rule(topic=st.sampled_from(["a", "b"]))
    def add_partition(self, topic: str) -> None:
        self.topics[topic] += 1

    @rule(name=st.sampled_from(CLIENTS))
    def heartbeat_with_a_future_epoch_is_fenced(self, name: str) -> None:
        client = self.clients[name]
        if client.joined:
            result = self._send(ConsumerHeartbeat(name, client.epoch + 1, owned=client.owned))
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
        for member in expired:
            # The client's own session timer ran out too: it lost its partitions.
            self.clients[member] = Client(topics=self.clients[member].topics)

    @precondition(lambda self: any(c.joined for c in self.clients.values()))
    @rule()
    def everyone_heartbeats_until_stable(self) -> None:
        for _ in range(12):
            for name, client in self.clients.items():
                if client.joined:
                    self._heartbeat(name)
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
    def no_partition_owned_twice(self) -> None:
        owned = [tp for c in self.clients.values() for tp in c.owned]
        assert len(owned) == len(set(owned)), {n: sorted(c.owned) for n, c in
                                               self.clients.items()}


ConsumerGroupModel.TestCase.settings = settings(max_examples=100, stateful_step_count=40,
                                                deadline=None)
TestConsumerGroupModel = ConsumerGroupModel.TestCase
