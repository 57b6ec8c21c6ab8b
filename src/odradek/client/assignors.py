"""Partition assignors of the classic consumer protocol.

The group leader (one consumer) runs the assignor the coordinator chose and ships each member
its share through SyncGroup. Assignors are pure functions of the members' subscriptions and the
topics' partition counts, so they are unit-tested without a broker.

* ``range`` — the paper's Algorithm 1, per topic: sort the partitions, sort the consumers
  subscribed to the topic, split the partitions into contiguous ranges, one per consumer; the
  first ``P mod C`` consumers take one extra partition (Kafka's ``RangeAssignor``).
* ``roundrobin`` — every partition of every subscribed topic, sorted, dealt to the sorted
  consumers in turn (skipping a consumer not subscribed to that topic).
* ``cooperative-sticky`` — balanced like round-robin but keeps each member's owned partitions
  where balance allows; a partition that must move is first only *revoked* (assigned to nobody
  this round) and given to its new owner in the follow-up rebalance the revoking member
  triggers (KIP-429), so no partition is ever owned twice and the rest keep being consumed.

The subscription and assignment bytes are :mod:`odradek.protocol.consumer_protocol`'s
(re-exported here for the client's users).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from odradek.protocol.consumer_protocol import (
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from odradek.types import TopicPartition

__all__ = ["ASSIGNORS", "COOPERATIVE", "Subscription", "assign_cooperative_sticky",
           "assign_range", "assign_roundrobin", "decode_assignment", "decode_subscription",
           "encode_assignment", "encode_subscription"]

# ------------------------------------------------------------------------ assignors

Assignment = dict[str, list[TopicPartition]]
Assignor = Callable[[Mapping[str, Subscription], Mapping[str, int]], Assignment]


def assign_range(members: Mapping[str, Subscription],
                 partitions_per_topic: Mapping[str, int]) -> Assignment:
    """Algorithm 1 of the paper, per topic, with Kafka's handling of the remainder."""
    out: Assignment = {m: [] for m in members}
    by_topic: dict[str, list[str]] = defaultdict(list)
    for member, sub in members.items():
        for topic in sub.topics:
            by_topic[topic].append(member)
    for topic in sorted(by_topic):
        count = partitions_per_topic.get(topic, 0)
        consumers = sorted(by_topic[topic])
        if not count or not consumers:
            continue
        per_consumer, extra = divmod(count, len(consumers))
        for i, member in enumerate(consumers):
            start = per_consumer * i + min(i, extra)
            length = per_consumer + (1 if i < extra else 0)
            out[member] += [TopicPartition(topic, p) for p in range(start, start + length)]
    return out


def assign_roundrobin(members: Mapping[str, Subscription],
                      partitions_per_topic: Mapping[str, int]) -> Assignment:
    out: Assignment = {m: [] for m in members}
    consumers = sorted(members)
    if not consumers:
        return out
    topics = sorted({t for sub in members.values() for t in sub.topics})
    turn = 0
    for topic in topics:
        for p in range(partitions_per_topic.get(topic, 0)):
            for _ in range(len(consumers)):
                member = consumers[turn % len(consumers)]
                turn += 1
                if topic in members[member].topics:
                    out[member].append(TopicPartition(topic, p))
                    break
    return out


def assign_cooperative_sticky(members: Mapping[str, Subscription],
                              partitions_per_topic: Mapping[str, int]) -> Assignment:
    """Balanced, sticky, and never hands a partition over in the same round it is revoked."""
    consumers = sorted(members)
    eligible = {m: set(members[m].topics) for m in consumers}
    all_partitions = sorted(
        TopicPartition(t, p)
        for t in {t for s in members.values() for t in s.topics}
        for p in range(partitions_per_topic.get(t, 0)))
    if not consumers:
        return {}
    # Previous owners: the member claiming it with the highest generation wins.
    previous: dict[TopicPartition, tuple[int, str]] = {}
    for m in consumers:
        sub = members[m]
        for tp in sub.owned_partitions:
            claim = (sub.generation_id, m)
            if tp not in previous or claim[0] > previous[tp][0]:
                previous[tp] = claim
    valid = set(all_partitions)
    target: dict[str, list[TopicPartition]] = {m: [] for m in consumers}
    for tp, (_gen, m) in sorted(previous.items()):
        if tp in valid and tp.topic in eligible[m]:
            target[m].append(tp)
    total = len(all_partitions)
    quota_low, extra = divmod(total, len(consumers))
    # Trim owners above their quota (the highest partitions go back to the pool).
    at_max = 0
    for m in sorted(consumers, key=lambda c: -len(target[c])):
        allowed = quota_low + (1 if at_max < extra else 0)
        if len(target[m]) >= quota_low + 1 and at_max < extra:
            at_max += 1
        if len(target[m]) > allowed:
            target[m] = sorted(target[m])[:allowed]
    taken = {tp for parts in target.values() for tp in parts}
    for tp in all_partitions:
        if tp in taken:
            continue
        candidates = [m for m in consumers if tp.topic in eligible[m]]
        if candidates:
            best = min(candidates, key=lambda c: (len(target[c]), c))
            target[best].append(tp)
    # Even out what subscriptions allow (heterogeneous subscriptions can leave gaps).
    moved = True
    while moved:
        moved = False
        for src in sorted(consumers, key=lambda c: -len(target[c])):
            for dst in sorted(consumers, key=lambda c: len(target[c])):
                if len(target[src]) - len(target[dst]) <= 1:
                    continue
                movable = [tp for tp in sorted(target[src], reverse=True)
                           if tp.topic in eligible[dst]]
                if movable:
                    target[src].remove(movable[0])
                    target[dst].append(movable[0])
                    moved = True
                    break
            if moved:
                break
    # Cooperative step: withhold partitions still owned by another live member.
    out: Assignment = {}
    for m in consumers:
        out[m] = sorted(tp for tp in target[m]
                        if tp not in previous or previous[tp][1] == m
                        or previous[tp][1] not in members)
    return out


ASSIGNORS: dict[str, Assignor] = {
    "range": assign_range,
    "roundrobin": assign_roundrobin,
    "cooperative-sticky": assign_cooperative_sticky,
}
#: Assignors whose members revoke incrementally (KIP-429) instead of all before rejoining.
COOPERATIVE = frozenset({"cooperative-sticky"})


def validate_assignment(assignment: Mapping[str, Sequence[TopicPartition]]) -> None:
    """Raise if any partition is assigned twice (used by the leader before SyncGroup)."""
    seen: dict[TopicPartition, str] = {}
    for member, parts in assignment.items():
        for tp in parts:
            if tp in seen:
                raise AssertionError(f"{tp} assigned to both {seen[tp]} and {member}")
            seen[tp] = member
