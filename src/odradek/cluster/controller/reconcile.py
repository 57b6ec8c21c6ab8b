"""The reconcile pass: bring every partition's state in ZooKeeper in line with the brokers.

Any watched change (``/brokers/ids``, ``/brokers/topics`` and each topic, the admin
znodes, leaders' ISR change notifications) schedules one pass. A pass reads the current
state from ZooKeeper, applies :mod:`odradek.cluster.election` to every partition, writes
the changed ``.../partitions/<p>/state`` znodes (fenced, conditional on the version read),
creates the states of new partitions, gives ids to topics written by old tools, removes
topics marked for deletion and moves reassignments along. Reading everything each pass
keeps the controller stateless and obviously right after failover ("rebuild from
ZooKeeper"), at O(partitions) reads per event — the place to add an incremental context
when clusters grow. Events arriving during a pass coalesce into one more pass.

Brokers do not get LeaderAndIsr requests: each broker's ClusterView watches the state
znodes directly (and the topic znodes, for replica lists).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kazoo.client import TransactionRequest
from kazoo.exceptions import NoNodeError

from odradek.cluster import znodes
from odradek.cluster.controller import deletion, reassignments, rebalance
from odradek.cluster.controller.context import ControllerContext, Liveness
from odradek.cluster.election import (
    LeaderAndIsr,
    decide,
    initial_leader_and_isr,
    is_unclean,
    reassignment_complete_leader_and_isr,
)
from odradek.cluster.topic_znode import TopicZnode, read_topic_znode

__all__ = ["PassResult", "run_pass"]

log = logging.getLogger(__name__)

UNCLEAN_CONFIG = "unclean.leader.election.enable"


@dataclass(frozen=True, slots=True)
class PassResult:
    again: bool  # a conflicting write or a change mid-pass: run another pass
    brokers: Liveness | None  # what the pass saw (None: not the controller)


def run_pass(ctx: ControllerContext) -> PassResult:
    """One pass over the cluster."""
    if ctx.epoch is None:
        return PassResult(False, None)
    client = ctx.client
    brokers = ctx.read_liveness()
    deleting = deletion.topics_to_delete(ctx)
    requested, requested_version = reassignments.read_requests(ctx)
    retry = _consume_isr_change_notifications(ctx)
    for name in sorted(deleting):
        retry |= deletion.delete_topic(ctx, name)
    topics: dict[str, TopicZnode] = {}
    for name in sorted(client.get_children(znodes.BROKER_TOPICS, watch=ctx.work_watch)):
        if name in deleting:
            continue
        topic = read_topic_znode(client, name, ctx.work_watch)
        if topic is None:
            continue
        topics[name] = topic
        if topic.topic_id is None:  # written by a pre-2.8 tool: give the topic an id
            retry |= not ctx.set_fenced(
                znodes.topic_path(name), topic.encode(topic.assignment), topic.version
            )
            continue
        wanted = {p: t for (n, p), t in requested.items() if n == name}
        retry |= _reconcile_topic(ctx, topic, brokers, wanted)
    if requested_version >= 0:
        retry |= reassignments.prune_requests(
            ctx, requested, requested_version, topics, brokers.live
        )
    retry |= rebalance.run_preferred_request(ctx)
    return PassResult(retry, brokers)


def _reconcile_topic(
    ctx: ControllerContext,
    topic: TopicZnode,
    brokers: Liveness,
    requested: Mapping[int, Sequence[int]],
) -> bool:
    client = ctx.client
    live, shutting_down = brokers.live, brokers.shutting_down
    starts = reassignments.requested_starts(topic, requested, live)
    if starts:
        reassignments.start_reassignments(ctx, topic, starts, live)
        return True  # re-read the rewritten topic next pass
    retry = False
    completions: dict[int, tuple[LeaderAndIsr, int]] = {}
    electable = brokers.electable
    for partition, assigned in sorted(topic.assignment.items()):
        path = znodes.partition_state_path(topic.name, partition)
        try:
            # Watch the partitions being moved: their ISR growing is what we wait for.
            data, stat = client.get(
                path, watch=ctx.work_watch if assigned.is_reassigning else None
            )
        except NoNodeError:
            initial = initial_leader_and_isr(assigned.replicas, electable)
            if initial is not None:
                retry |= _create_state(ctx, topic.name, partition, initial)
            continue
        current = znodes.decode_partition_state(data, assigned.replicas, stat.version)
        unclean = ctx.settings.unclean_leader_election_enable
        if current.leader not in live and not any(r in live for r in current.isr):
            unclean = _topic_unclean(ctx, topic.name)
        decided = decide(current, live, shutting_down, unclean=unclean)
        if decided is not None:
            if not ctx.set_fenced(path, ctx.encode_state(decided), stat.version):
                retry = True  # someone (a leader's ISR update) wrote first: re-read
            else:
                ctx.log_change(topic.name, partition, decided,
                               unclean=is_unclean(current, decided))
                retry |= assigned.is_reassigning
            continue
        if assigned.is_reassigning:
            done = reassignment_complete_leader_and_isr(current, assigned.target, electable)
            if done is not None:
                completions[partition] = (done, stat.version)
    if completions and not reassignments.write_completions(ctx, topic, completions):
        retry = True
    return retry


def _create_state(
    ctx: ControllerContext, topic: str, partition: int, decided: LeaderAndIsr
) -> bool:
    client = ctx.client
    parents = [znodes.partitions_path(topic), f"{znodes.partitions_path(topic)}/{partition}"]
    missing = [p for p in parents if client.exists(p) is None]
    encoded = ctx.encode_state(decided)

    def build(txn: TransactionRequest) -> None:
        for parent in missing:
            txn.create(parent, b"")
        txn.create(znodes.partition_state_path(topic, partition), encoded)

    results = ctx.fenced(build)
    if any(isinstance(r, Exception) for r in results):
        return True
    ctx.log_change(topic, partition, decided)
    return False


def _topic_unclean(ctx: ControllerContext, topic: str) -> bool:
    default = ctx.settings.unclean_leader_election_enable
    try:
        data, _ = ctx.client.get(znodes.topic_config_path(topic))
    except NoNodeError:
        return default
    value = znodes.decode_entity_config(data).get(UNCLEAN_CONFIG)
    return default if value is None else value.lower() == "true"


def _consume_isr_change_notifications(ctx: ControllerContext) -> bool:
    """Delete leaders' ISR change notifications (this pass re-reads every state), then
    re-arm the watch; True if more arrived meanwhile."""
    client = ctx.client
    path = znodes.ISR_CHANGE_NOTIFICATION
    for child in client.get_children(path):
        with contextlib.suppress(NoNodeError):
            client.delete(f"{path}/{child}")
    return bool(client.get_children(path, watch=ctx.work_watch))
