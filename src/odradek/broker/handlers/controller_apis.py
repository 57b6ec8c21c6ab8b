"""ElectLeaders (v0-2), AlterPartitionReassignments (v0), ListPartitionReassignments (v0)
and ControlledShutdown (v3): the requests Kafka's ZK mode sends to the controller.

Clients find the controller through Metadata; a broker that is not (or no longer) the
controller answers NOT_CONTROLLER and the client re-reads metadata and retries there —
what Java's admin client and Kafka brokers do. The work itself is
:class:`odradek.cluster.controller.Controller`'s; these handlers only translate.

Authorization (Kafka's): ElectLeaders and AlterPartitionReassignments need ALTER on the
cluster, ListPartitionReassignments DESCRIBE, ControlledShutdown CLUSTER_ACTION; without it
the answer is CLUSTER_AUTHORIZATION_FAILED, checked before whether this is the controller.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.cluster.controller import NotController
from odradek.cluster.model import TopicPartition
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, millis, response_module
from odradek.protocol.errors import ClusterAuthorizationFailed, response_error
from odradek.security.acl import CLUSTER_NAME, Operation, ResourceType

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.cluster.controller import Controller
    from odradek.cluster.view import ClusterSnapshot
    from odradek.protocol.api_types import (
        AlterPartitionReassignmentsRequest,
        ControlledShutdownRequest,
        ElectLeadersRequest,
        ListPartitionReassignmentsRequest,
    )

__all__ = [
    "handle_alter_partition_reassignments",
    "handle_controlled_shutdown",
    "handle_elect_leaders",
    "handle_list_partition_reassignments",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_UNCLEAN = 1  # ElectionType: 0 preferred, 1 unclean


def _controller(ctx: RequestContext, operation: Operation) -> Controller:
    """The active controller, for a client allowed ``operation`` on the cluster."""
    if not ctx.authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME):
        raise ClusterAuthorizationFailed
    controller = ctx.services.cluster.controller
    if not controller.is_active:
        raise NotController(f"broker {ctx.services.broker_id} is not the controller")
    return controller


def _failure(exc: BaseException) -> tuple[ErrorCode, str | None]:
    return response_error(exc, "controller request")


def _by_topic(results: Mapping[TopicPartition, _T]) -> dict[str, list[tuple[int, _T]]]:
    grouped: dict[str, list[tuple[int, _T]]] = {}
    for tp, value in sorted(results.items(), key=lambda i: (i[0].topic, i[0].partition)):
        grouped.setdefault(tp.topic, []).append((tp.partition, value))
    return grouped


async def handle_elect_leaders(
    ctx: RequestContext, request: ElectLeadersRequest
) -> ResponsePayload:
    module = response_module(ApiKey.ELECT_LEADERS, ctx.api_version)
    unclean = int(getattr(request, "election_type", 0)) == _UNCLEAN
    wanted: list[TopicPartition] | None = None
    if request.topic_partitions is not None:
        wanted = [
            TopicPartition(str(t.topic), int(p)) for t in request.topic_partitions
            for p in t.partitions
        ]
    outcome: dict[TopicPartition, tuple[ErrorCode, str | None]]
    try:
        results = await _controller(ctx, Operation.ALTER).elect_leaders(wanted, unclean=unclean)
        top_code = ErrorCode.none
        outcome = {
            tp: (ErrorCode.none, None) if error is None else _failure(error)
            for tp, error in results.items()
        }
    except Exception as exc:
        # v0 has no top-level code: every partition carries it (NOT_CONTROLLER: retry).
        top_code, top_message = _failure(exc)
        outcome = {tp: (top_code, top_message) for tp in (wanted or [])}
    if wanted is None:
        # Kafka answers an election of every partition with only the partitions that were
        # elected or failed: the tool would list the whole cluster as "already elected".
        outcome = {tp: result for tp, result in outcome.items()
                   if result[0] != ErrorCode.election_not_needed}
    elected = [tp for tp, (code, _) in outcome.items() if code == ErrorCode.none]
    timeout_s = max(millis(request.timeout), 0) / 1000
    if elected and timeout_s > 0 and not unclean:
        await _wait_for_preferred_leaders(ctx, elected, timeout_s)
    topics = []
    for topic, entries in _by_topic(outcome).items():
        partition_results = []
        for partition, (code, message) in entries:
            partition_results.append(
                build(module.PartitionResult, partition_id=partition, error_code=code,
                      error_message=message)
            )
        topics.append(build(module.ReplicaElectionResult, topic=topic,
                            partition_result=tuple(partition_results)))
    return build_response(module.ElectLeadersResponse,
                          throttle_time=NO_THROTTLE, error_code=top_code,
                          replica_election_results=tuple(topics))


async def _wait_for_preferred_leaders(
    ctx: RequestContext, elected: Sequence[TopicPartition], timeout_s: float
) -> None:
    """Answer once this broker's own metadata shows the new leaders (as Kafka waits for
    its LeaderAndIsr round), so a Metadata request right after sees them."""

    def done(view: ClusterSnapshot) -> bool:
        for tp in elected:
            topic = view.topics.get(tp.topic)
            state = topic.partitions.get(tp.partition) if topic else None
            if state is not None and state.replicas and state.leader != state.replicas[0]:
                return False
        return True

    try:
        await ctx.services.cluster.view.wait_for(done, timeout_s)
    except TimeoutError:
        log.warning("elected leaders not visible within %.1fs", timeout_s)


async def handle_alter_partition_reassignments(
    ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.ALTER_PARTITION_REASSIGNMENTS, ctx.api_version)
    targets: dict[TopicPartition, tuple[int, ...] | None] = {}
    for topic in request.topics:
        for partition in topic.partitions:
            replicas = partition.replicas
            targets[TopicPartition(str(topic.name), int(partition.partition_index))] = (
                None if replicas is None else tuple(int(r) for r in replicas)
            )
    try:
        results = await _controller(ctx, Operation.ALTER).alter_partition_reassignments(targets)
    except Exception as exc:
        code, message = _failure(exc)
        return build_response(module.AlterPartitionReassignmentsResponse, throttle_time=NO_THROTTLE,
                              error_code=code, error_message=message, responses=())
    responses = []
    for name, entries in _by_topic(results).items():
        partitions = []
        for index, error in entries:
            code, message = (ErrorCode.none, None) if error is None else _failure(error)
            partitions.append(
                build(module.ReassignablePartitionResponse, partition_index=index,
                      error_code=code, error_message=message)
            )
        responses.append(build(module.ReassignableTopicResponse, name=name,
                               partitions=tuple(partitions)))
    return build_response(module.AlterPartitionReassignmentsResponse, throttle_time=NO_THROTTLE,
                          error_code=ErrorCode.none, error_message=None, responses=tuple(responses))


async def handle_list_partition_reassignments(
    ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.LIST_PARTITION_REASSIGNMENTS, ctx.api_version)
    wanted = None
    if request.topics is not None:
        wanted = [TopicPartition(str(t.name), int(p)) for t in request.topics
                  for p in t.partition_indexes]
    try:
        ongoing = await _controller(ctx, Operation.DESCRIBE).list_partition_reassignments(wanted)
    except Exception as exc:
        code, message = _failure(exc)
        return build_response(module.ListPartitionReassignmentsResponse, throttle_time=NO_THROTTLE,
                              error_code=code, error_message=message, topics=())
    topics = []
    for topic, entries in _by_topic(ongoing).items():
        partitions = tuple(
            build(module.OngoingPartitionReassignment, partition_index=partition,
                  replicas=tuple(a.replicas), adding_replicas=tuple(a.adding),
                  removing_replicas=tuple(a.removing))
            for partition, a in entries
        )
        topics.append(build(module.OngoingTopicReassignment, name=topic, partitions=partitions))
    return build_response(module.ListPartitionReassignmentsResponse, throttle_time=NO_THROTTLE,
                          error_code=ErrorCode.none, error_message=None, topics=tuple(topics))


async def handle_controlled_shutdown(
    ctx: RequestContext, request: ControlledShutdownRequest
) -> ResponsePayload:
    module = response_module(ApiKey.CONTROLLED_SHUTDOWN, ctx.api_version)
    try:
        remaining = await _controller(ctx, Operation.CLUSTER_ACTION).controlled_shutdown(
            int(request.broker_id), int(request.broker_epoch)
        )
        code = ErrorCode.none
    except Exception as exc:
        code, _message = _failure(exc)
        remaining = []
    return build_response(
        module.ControlledShutdownResponse, error_code=code,
        remaining_partitions=tuple(
            build(module.RemainingPartition, topic_name=tp.topic, partition_index=tp.partition)
            for tp in remaining
        ),
    )
