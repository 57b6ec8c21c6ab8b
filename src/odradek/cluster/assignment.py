"""Replica placement: which brokers hold each partition (pure functions, no ZooKeeper).

The model is the seeds' rule, refined exactly as Kafka's ``AdminUtils`` does it:

* Sort the brokers. Partition ``i``'s first replica (its preferred leader) goes on broker
  ``(start + i) mod n``. ``start`` is random per topic, so the leaders of many small topics
  do not all land on the lowest broker id.
* Replica ``j`` (``j >= 1``) of partition ``i`` goes on broker
  ``(first + 1 + (shift + j - 1) mod (n - 1)) mod n`` — always a broker other than the
  first; ``shift`` also starts random and grows by one every ``n`` partitions, so followers
  of consecutive "rounds" land on different brokers and one broker's failure spreads its
  leaders over all the others instead of onto a single neighbour.
* Rack-aware (every broker has ``broker.rack``): the broker list is first interleaved by
  rack (``a1, b1, c1, a2, b2, ...``) and a follower candidate is skipped while its rack (or
  the broker itself) already holds a replica and some rack (broker) does not — so a
  partition spans ``min(rf, racks)`` racks.

All functions raise the Kafka error a CreateTopics/CreatePartitions response carries.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from odradek.protocol.errors import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
)

Assignment = dict[int, tuple[int, ...]]


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(brokers: Mapping[int, str]) -> list[int]:
    """Brokers ordered by taking one from each rack in turn (racks and ids sorted)."""
    by_rack: dict[str, list[int]] = {}
    for broker_id in sorted(brokers):
        by_rack.setdefault(brokers[broker_id], []).append(broker_id)
    queues = [by_rack[rack] for rack in sorted(by_rack)]
    result: list[int] = []
    depth = 0
    while len(result) < len(brokers):
        result.extend(queue[depth] for queue in queues if depth < len(queue))
        depth += 1
    return result


def assign_replicas(
    brokers: Mapping[int, str | None],
    num_partitions: int,
    replication_factor: int,
    *,
    start_index: int | None = None,
    replica_shift: int | None = None,
    first_partition: int = 0,
    rng: random.Random | None = None,
) -> Assignment:
    """Place ``num_partitions`` partitions numbered from ``first_partition``.

    ``brokers`` maps each live broker id to its rack (None when unset). ``start_index`` and
    ``replica_shift`` default to random values (``rng`` for reproducible tests); passing
    them fixes the layout, as partition additions do to continue a topic's pattern.
    """
    if num_partitions <= 0:
        raise InvalidPartitions(
            f"Number of partitions must be larger than 0, got {num_partitions}."
        )
    if replication_factor <= 0:
        raise InvalidReplicationFactor(
            f"Replication factor must be larger than 0, got {replication_factor}."
        )
    if replication_factor > len(brokers):
        raise InvalidReplicationFactor(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    racks = {b: r for b, r in brokers.items() if r is not None}
    if racks and len(racks) != len(brokers):
        missing = sorted(b for b, r in brokers.items() if r is None)
        raise InvalidReplicaAssignment(
            f"Not all brokers have rack information for rack-aware assignment: "
            f"brokers {missing} have no broker.rack."
        )
    rng = rng or random.Random()
    ordered = rack_alternated(racks) if racks else sorted(brokers)
    n = len(ordered)
    start = start_index if start_index is not None else rng.randrange(n)
    shift = replica_shift if replica_shift is not None else rng.randrange(n)
    num_racks = len(set(racks.values()))
    result: Assignment = {}
    for partition in range(max(0, first_partition), max(0, first_partition) + num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        if racks:
            result[partition] = _rack_aware_replicas(
                ordered, racks, first, shift * num_racks, replication_factor, num_racks
            )
        else:
            replicas = [ordered[first]]
            replicas.extend(
                ordered[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)
            )
            result[partition] = tuple(replicas)
    return result


def _rack_aware_replicas(
    ordered: Sequence[int],
    racks: Mapping[int, str],
    first: int,
    shift: int,
    replication_factor: int,
    num_racks: int,
) -> tuple[int, ...]:
    n = len(ordered)
    leader = ordered[first]
    replicas = [leader]
    racks_used = {racks[leader]}
    brokers_used = {leader}
    k = 0
    while len(replicas) < replication_factor:
        broker = ordered[_replica_index(first, shift, k, n)]
        rack = racks[broker]
        rack_ok = rack not in racks_used or len(racks_used) == num_racks
        broker_ok = broker not in brokers_used or len(brokers_used) == n
        if rack_ok and broker_ok:
            replicas.append(broker)
            racks_used.add(rack)
            brokers_used.add(broker)
        k += 1
    return tuple(replicas)


def assign_new_partitions(
    brokers: Mapping[int, str | None],
    existing: Mapping[int, Sequence[int]],
    total_count: int,
) -> Assignment:
    """Placement for partitions ``len(existing) .. total_count-1`` of an existing topic.

    As Kafka does, the new partitions continue the topic's pattern: the start index is
    the position of partition 0's leader in the broker order and the replication factor
    is partition 0's.
    """
    if total_count <= len(existing):
        raise InvalidPartitions(
            f"Topic currently has {len(existing)} partitions, which is higher than or equal "
            f"to the requested {total_count}."
        )
    first_replicas = existing[0]
    ordered = sorted(brokers)
    start = next((i for i, b in enumerate(ordered) if b >= first_replicas[0]), 0)
    return assign_replicas(
        brokers,
        total_count - len(existing),
        len(first_replicas),
        start_index=start,
        replica_shift=start,
        first_partition=len(existing),
    )


def validate_assignment(
    assignment: Mapping[int, Sequence[int]],
    live_brokers: Mapping[int, object] | set[int],
    *,
    first_partition: int = 0,
    replication_factor: int | None = None,
) -> Assignment:
    """Check a client-supplied assignment (CreateTopics/CreatePartitions with replicas).

    Partitions must be exactly ``first_partition ..`` consecutive, each with the same
    non-zero number of distinct, live brokers.
    """
    expected = list(range(first_partition, first_partition + len(assignment)))
    if sorted(assignment) != expected:
        raise InvalidReplicaAssignment(
            f"Partitions should be a consecutive 0-based integer sequence starting at "
            f"{first_partition}, got {sorted(assignment)}."
        )
    sizes = {len(replicas) for replicas in assignment.values()}
    if replication_factor is not None:
        sizes.add(replication_factor)
    if len(sizes) != 1 or 0 in sizes:
        raise InvalidReplicaAssignment(
            "All partitions should have the same non-zero number of replicas."
        )
    result: Assignment = {}
    for partition, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignment(
                f"Duplicate brokers in the assignment of partition {partition}: {list(replicas)}."
            )
        unknown = [b for b in replicas if b not in live_brokers]
        if unknown:
            raise InvalidReplicaAssignment(
                f"Unknown broker(s) {unknown} in the assignment of partition {partition}."
            )
        result[partition] = tuple(replicas)
    return result
