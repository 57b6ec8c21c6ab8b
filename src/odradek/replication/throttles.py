"""Replication throttles: a byte-rate quota per direction (Apache Kafka's ReplicationQuotaManager).

An operator moving replicas (a reassignment, a broker catching up after a long outage) caps
the bandwidth replication may take with two layers of configuration, as in Kafka:

* **which replicas** — the topic configs ``leader.replication.throttled.replicas`` and
  ``follower.replication.throttled.replicas``: ``*`` (every replica of the topic) or a list
  ``partition:broker,...``. Each broker reads an entry only for itself, ``broker`` being
  the replica on *its* side: the leader list names the leaders that hold back what they
  send, the follower list the followers that hold back what they fetch (Kafka's
  ``kafka-reassign-partitions --throttle`` puts the current replicas in the first and the
  moving ones in the second);
* **how fast** — the dynamic broker configs ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` (bytes/s, unlimited by default), changed live.

A :class:`ReplicationQuota` is one direction: bytes moved for throttled replicas are
:meth:`~ReplicationQuota.record`\\ ed into a :class:`~odradek.quota.rate.SampledRate` over
``replication.quota.window.num`` windows of ``replication.quota.window.size.seconds``, and
the quota is exceeded while that rate is above the bound. Where it is applied:

* the leader (:mod:`.reads`) answers a follower's throttled partition with no records while
  the leader quota is exceeded — the follower simply fetches the same offset again — unless
  that follower is in the ISR: throttling an in-sync replica would only push it out of the
  ISR (Kafka's ``ReplicaManager.shouldLeaderThrottle``);
* the follower (:mod:`.fetcher`) leaves its throttled partitions out of its fetches while
  the follower quota is exceeded, unless it had caught up with the leader's high watermark
  at its last answer (Kafka's ``shouldFollowerThrottle``).

Bytes of throttled partitions are recorded in-sync or not (Kafka: "traffic from both in-sync
and out of sync replicas are accounted for ... to ensure total replication traffic doesn't
exceed quota"); the leader counts the record bytes it answers, the follower those it
appends (Kafka's leader adds the partitions' response headers, a few dozen bytes each).

The quota holds no clock of its own but the one it is given; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from odradek.clock import monotonic_ms
from odradek.quota.rate import SampledRate

__all__ = [
    "UNLIMITED",
    "ReplicationQuota",
    "ReplicationQuotas",
    "ThrottledReplicas",
]

UNLIMITED = 2**63 - 1
"""The rates' default (Kafka's ``Long.MAX_VALUE``): no throttle however much is recorded."""


@dataclass(frozen=True, slots=True)
class ThrottledReplicas:
    """One topic's ``*.replication.throttled.replicas`` value, parsed."""

    every_replica: bool = False
    replicas: frozenset[tuple[int, int]] = frozenset()  # (partition, broker)

    @classmethod
    def parse(cls, value: str) -> ThrottledReplicas:
        """``""``, ``"*"`` or ``"partition:broker,..."`` (spaces around entries allowed);
        the topic config's validator has refused anything else, so a malformed entry here
        is a bug and raises ValueError."""
        value = value.strip()
        if value == "*":
            return cls(every_replica=True)
        pairs = set()
        for entry in value.split(","):
            if entry.strip():
                partition, broker = entry.split(":")
                pairs.add((int(partition), int(broker)))
        return cls(replicas=frozenset(pairs))

    def covers(self, partition: int, broker: int) -> bool:
        return self.every_replica or (partition, broker) in self.replicas

    def __bool__(self) -> bool:
        return self.every_replica or bool(self.replicas)


class ReplicationQuota:
    """One direction's throttle: which replicas it applies to, and whether it is exceeded.

    ``on_record`` is told every recorded size (the throttled-bytes metric)."""

    def __init__(self, samples: int, window_ms: float, bound: int = UNLIMITED,
                 clock_ms: Callable[[], float] = monotonic_ms) -> None:
        self._rate = SampledRate(samples, window_ms)
        self.bound = bound  # bytes/s
        self._clock = clock_ms
        self._throttled: dict[str, ThrottledReplicas] = {}
        self.on_record: Callable[[int], None] | None = None

    def set_topic(self, topic: str, throttled_replicas: str) -> None:
        """The topic's ``*.replication.throttled.replicas`` config (empty: not throttled)."""
        parsed = ThrottledReplicas.parse(throttled_replicas)
        if parsed:
            self._throttled[topic] = parsed
        else:
            self._throttled.pop(topic, None)

    def is_throttled(self, topic: str, partition: int, replica: int) -> bool:
        """Does the topic config name ``replica`` (this broker, on its side) for the
        partition?"""
        found = self._throttled.get(topic)
        return found is not None and found.covers(partition, replica)

    def is_quota_exceeded(self) -> bool:
        """Is the rate recorded over the windows above the bound (Kafka's
        ``Sensor.checkQuotas``: a rate exactly at the bound is within it)?"""
        if self.bound >= UNLIMITED:
            return False
        return self._rate.per_second(self._clock()) > self.bound

    def record(self, size_bytes: int) -> None:
        """Bytes moved for a throttled partition."""
        self._rate.record(size_bytes, self._clock())
        if self.on_record is not None:
            self.on_record(size_bytes)


class ReplicationQuotas:
    """The leader and follower quotas of one broker, following its configs."""

    def __init__(self, samples: int, window_seconds: int,
                 clock_ms: Callable[[], float] = monotonic_ms) -> None:
        window_ms = window_seconds * 1000.0
        self.leader = ReplicationQuota(samples, window_ms, clock_ms=clock_ms)
        self.follower = ReplicationQuota(samples, window_ms, clock_ms=clock_ms)

    def set_topic(self, topic: str, leader_replicas: str, follower_replicas: str) -> None:
        """A topic's effective config (created, altered, or its broker default changed)."""
        self.leader.set_topic(topic, leader_replicas)
        self.follower.set_topic(topic, follower_replicas)

    def set_rates(self, leader: int, follower: int) -> None:
        """Bytes/s of ``leader.replication.throttled.rate`` and
        ``follower.replication.throttled.rate`` (dynamic broker configs). The recorded
        samples are kept, as Kafka's ``updateQuota`` keeps them: a lower rate applies to
        what was just sent."""
        self.leader.bound = leader
        self.follower.bound = follower
