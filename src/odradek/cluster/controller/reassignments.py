"""Partition reassignment (KIP-455 in ZooKeeper mode): start, cancel, complete, list.

Requests come from AlterPartitionReassignments or from ``/admin/reassign_partitions``
(Kafka's ZK-mode tools). Progress lives in the topic znode's ``adding_replicas`` /
``removing_replicas`` (the value rules are :mod:`odradek.cluster.reassignment`), so a new
controller resumes where the old one stopped. Starting rewrites the topic znode and bumps
the partition states in one fenced transaction; the reconcile pass completes a partition
once every target replica is in the ISR (:func:`completion`, written by
:func:`write_completions`); the znode request is pruned as entries finish or prove invalid.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence, Set

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from odradek.cluster import znodes
from odradek.cluster.controller.context import ATTEMPTS, ControllerContext
from odradek.cluster.controller.errors import NoReassignmentInProgress
from odradek.cluster.election import LeaderAndIsr
from odradek.cluster.model import TopicPartition
from odradek.cluster.reassignment import ReplicaAssignment, validate_target
from odradek.cluster.topic_znode import TopicZnode, read_topic_znode
from odradek.protocol.errors import (
    InvalidReplicaAssignment,
    KafkaError,
    UnknownServerError,
    UnknownTopicOrPartition,
)

__all__ = [
    "ReassignRequests",
    "alter_reassignments",
    "list_reassignments",
    "prune_requests",
    "read_requests",
    "requested_starts",
    "start_reassignments",
    "write_completions",
]

log = logging.getLogger(__name__)

ReassignRequests = dict[tuple[str, int], tuple[int, ...]]
PartitionResults = dict[TopicPartition, KafkaError | None]


# -- the API -----------------------------------------------------------------------------------


def alter_reassignments(
    ctx: ControllerContext, targets: Mapping[TopicPartition, Sequence[int] | None]
) -> PartitionResults:
    """AlterPartitionReassignments: start (target list) or cancel (``None``) per partition."""
    client = ctx.client
    live = ctx.read_liveness(watch=False).live
    by_topic: dict[str, dict[int, Sequence[int] | None]] = {}
    for tp, target in targets.items():
        by_topic.setdefault(tp.topic, {})[tp.partition] = target
    results: PartitionResults = {}
    for name, wanted in sorted(by_topic.items()):
        for _ in range(ATTEMPTS):
            topic = read_topic_znode(client, name)
            if topic is None or client.exists(znodes.delete_topic_path(name)):
                errors: dict[int, KafkaError | None] = {
                    p: UnknownTopicOrPartition(f"Unable to find partition {name}-{p}")
                    for p in wanted
                }
                break
            errors, written = start_reassignments(ctx, topic, wanted, live)
            if written:
                break
        else:
            errors = {p: UnknownServerError("topic kept changing; retry") for p in wanted}
        results.update({TopicPartition(name, p): e for p, e in errors.items()})
    # An API request supersedes what the ZooKeeper request path asked for (as in Kafka).
    _forget_requests(ctx, {tp for tp, e in results.items() if e is None})
    return results


def list_reassignments(
    ctx: ControllerContext, wanted: Set[TopicPartition] | None
) -> dict[TopicPartition, ReplicaAssignment]:
    """ListPartitionReassignments: ongoing reassignments (of ``wanted``, or all)."""
    client = ctx.client
    names = (
        sorted({tp.topic for tp in wanted})
        if wanted is not None
        else sorted(client.get_children(znodes.BROKER_TOPICS))
    )
    found: dict[TopicPartition, ReplicaAssignment] = {}
    for name in names:
        topic = read_topic_znode(client, name)
        for partition, assigned in sorted((topic.assignment if topic else {}).items()):
            tp = TopicPartition(name, partition)
            if assigned.is_reassigning and (wanted is None or tp in wanted):
                found[tp] = assigned
    return found


# -- starting ----------------------------------------------------------------------------------


def start_reassignments(
    ctx: ControllerContext,
    topic: TopicZnode,
    targets: Mapping[int, Sequence[int] | None],
    live: Set[int],
) -> tuple[dict[int, KafkaError | None], bool]:
    """Begin (or cancel) reassignments of ``topic``'s partitions in one transaction.

    Returns per-partition errors and whether the write went through (False: the topic
    or a state changed since it was read; re-read and call again).
    """
    errors: dict[int, KafkaError | None] = {}
    assignment = dict(topic.assignment)
    states: dict[int, tuple[LeaderAndIsr, int]] = {}
    for partition, target in sorted(targets.items()):
        current = topic.assignment.get(partition)
        if current is None:
            errors[partition] = UnknownTopicOrPartition(
                f"Unable to find partition {topic.name}-{partition}"
            )
            continue
        try:
            if target is None:
                if not current.is_reassigning:
                    raise NoReassignmentInProgress(
                        f"No ongoing reassignment for {topic.name}-{partition}"
                    )
                successor = current.cancelled()
            else:
                successor = current.reassign_to(validate_target(target, live))
            errors[partition] = None
            if successor == current:
                continue
            state = _state_for_start(ctx.client, topic.name, partition, current, successor, live)
        except KafkaError as exc:
            errors[partition] = exc
            continue
        if state is not None:
            states[partition] = state
        assignment[partition] = successor
    if assignment == dict(topic.assignment):
        return errors, True
    if not ctx.write_topic_and_states(topic, assignment, states):
        return errors, False
    for partition in sorted(p for p in targets if assignment[p] != topic.assignment.get(p)):
        moved = assignment[partition]
        log.info(
            "controller %d: reassigning %s-%d replicas=%s adding=%s removing=%s",
            ctx.broker_id,
            topic.name,
            partition,
            list(moved.replicas),
            list(moved.adding),
            list(moved.removing),
        )
    return errors, True


def _state_for_start(
    client: KazooClient,
    topic: str,
    partition: int,
    current: ReplicaAssignment,
    successor: ReplicaAssignment,
    live: Set[int],
) -> tuple[LeaderAndIsr, int] | None:
    """The bumped state a starting reassignment writes: every replica re-reads the
    partition, and replicas of a superseded request leave the ISR (and leadership)."""
    try:
        data, stat = client.get(znodes.partition_state_path(topic, partition))
    except NoNodeError:
        return None  # not initialised yet: the reconcile pass creates it from RS
    state = znodes.decode_partition_state(data, current.replicas, stat.version)
    unneeded = current.unneeded_by(successor)
    isr = tuple(r for r in state.isr if r not in unneeded)
    leader = state.leader
    if leader in unneeded:
        order = (*successor.target, *successor.replicas)
        candidate = next((r for r in order if r in live and r in isr), None)
        if candidate is None:
            raise InvalidReplicaAssignment(
                f"no replica of {topic}-{partition} left in sync to take over leadership"
            )
        leader = candidate
    return LeaderAndIsr(leader, state.leader_epoch + 1, isr), stat.version


def requested_starts(
    topic: TopicZnode, requested: Mapping[int, Sequence[int]], live: Set[int]
) -> dict[int, Sequence[int] | None]:
    """The znode-requested targets of ``topic`` that still have to be started."""
    starts: dict[int, Sequence[int] | None] = {}
    for partition, target in requested.items():
        moving = topic.assignment.get(partition)
        if moving is None or tuple(target) == moving.target:
            continue
        try:
            validate_target(target, live)
        except KafkaError:
            continue  # pruned from the request znode; the error is logged there
        starts[partition] = target
    return starts


# -- completing --------------------------------------------------------------------------------


def write_completions(
    ctx: ControllerContext, topic: TopicZnode, completions: Mapping[int, tuple[LeaderAndIsr, int]]
) -> bool:
    """End the reassignments of ``completions`` (state and topic znode in one transaction);
    False if something changed meanwhile (re-read next pass)."""
    assignment = {
        p: (a.completed() if p in completions else a) for p, a in topic.assignment.items()
    }
    if not ctx.write_topic_and_states(topic, assignment, completions):
        return False
    log.info(
        "controller %d: reassignment of %s partitions %s completed",
        ctx.broker_id,
        topic.name,
        sorted(completions),
    )
    return True


# -- the /admin/reassign_partitions znode ---------------------------------------------------


def read_requests(ctx: ControllerContext) -> tuple[ReassignRequests, int]:
    """``/admin/reassign_partitions`` as ``({(topic, p): target}, version)``; version -1
    when absent (an exists-watch then waits for its creation)."""
    client = ctx.client
    while True:
        try:
            data, stat = client.get(znodes.REASSIGN_PARTITIONS, watch=ctx.work_watch)
        except NoNodeError:
            if client.exists(znodes.REASSIGN_PARTITIONS, watch=ctx.work_watch) is None:
                return {}, -1
            continue
        try:
            return znodes.decode_reassignment(data), stat.version
        except (ValueError, KeyError, TypeError):
            log.error("ignoring unparseable %s: %r", znodes.REASSIGN_PARTITIONS, data)
            return {}, stat.version


def prune_requests(
    ctx: ControllerContext,
    requested: Mapping[tuple[str, int], tuple[int, ...]],
    version: int,
    topics: Mapping[str, TopicZnode],
    live: Set[int],
) -> bool:
    """Drop finished, unknown and invalid entries; delete the znode once it is empty.
    True if the znode changed meanwhile."""
    keep: ReassignRequests = {}
    for (name, partition), target in requested.items():
        topic = topics.get(name)
        current = topic.assignment.get(partition) if topic else None
        if current is None:
            log.error("reassignment of unknown partition %s-%d dropped", name, partition)
            continue
        try:
            validate_target(target, live)
        except KafkaError as exc:
            log.error("reassignment of %s-%d dropped: %s", name, partition, exc)
            continue
        if not current.is_reassigning and current.replicas == tuple(target):
            continue  # done
        keep[(name, partition)] = target
    if keep == dict(requested):
        return False
    path = znodes.REASSIGN_PARTITIONS
    if keep:
        return not ctx.set_fenced(path, znodes.encode_reassignment(keep), version)
    if not ctx.delete_fenced(path, version):
        return True
    log.info("controller %d: all requested reassignments done", ctx.broker_id)
    return False


def _forget_requests(ctx: ControllerContext, done: Set[TopicPartition]) -> None:
    path = znodes.REASSIGN_PARTITIONS
    for _ in range(ATTEMPTS):
        try:
            data, stat = ctx.client.get(path)
        except NoNodeError:
            return
        requested = znodes.decode_reassignment(data)
        keep = {k: v for k, v in requested.items() if TopicPartition(*k) not in done}
        if keep == requested:
            return
        if keep:
            if ctx.set_fenced(path, znodes.encode_reassignment(keep), stat.version):
                return
        elif ctx.delete_fenced(path, stat.version):
            return

