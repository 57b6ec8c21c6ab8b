"""KIP-848 consumer groups: ConsumerGroupHeartbeat (v0-v1) and ConsumerGroupDescribe (v0).

Thin translations between kio's messages and the
:class:`~odradek.coordinator.GroupCoordinator`, which routes consumer-type groups to
:mod:`odradek.coordinator.consumer_group`. The wire names topics by id; the coordinator
thinks in names, so ids are resolved here against the cluster view (an owned partition of a
topic id the cluster no longer has is dropped: the member cannot own a deleted topic).

* Malformed heartbeats are INVALID_REQUEST before the coordinator sees them (Kafka's
  ``throwIfConsumerGroupHeartbeatRequestIsInvalid``). In v0 the coordinator may still
  choose the member id of a joining member; from v1 the client always sends its own.
* ``client_host`` is shown as Kafka's tools print it: ``/`` + the peer's address.
* Authorization (Kafka's KafkaApis): a heartbeat needs READ on its group (denied: the whole
  answer is GROUP_AUTHORIZATION_FAILED); a describe needs DESCRIBE on each group (a denied
  one is answered alone with that code); ``authorized_operations`` is the group's bit set.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from odradek.coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerHeartbeat,
    HeartbeatResult,
    validate_first_heartbeat,
)
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, millis, response_module
from odradek.protocol.errors import GroupAuthorizationFailed, KafkaError
from odradek.security.acl import Operation, ResourceType
from odradek.types import TopicPartition

from ..context import RequestContext
from ..outcomes import Outcome
from .groups import client_host

if TYPE_CHECKING:
    from kio.static.protocol import ResponsePayload

    from odradek.cluster.model import TopicMetadata
    from odradek.protocol.api_types import (
        ConsumerGroupDescribeRequest,
        ConsumerGroupHeartbeatRequest,
    )

__all__ = ["handle_consumer_group_describe", "handle_consumer_group_heartbeat"]


def handle_consumer_group_heartbeat(
    ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
) -> Outcome | Awaitable[ResponsePayload]:
    module = response_module(ApiKey.CONSUMER_GROUP_HEARTBEAT, ctx.api_version)
    if not ctx.authorize(Operation.READ, ResourceType.GROUP, str(request.group_id)):
        denied = GroupAuthorizationFailed()
        return build_response(module.ConsumerGroupHeartbeatResponse, throttle_time=NO_THROTTLE,
                     error_code=denied.code, error_message=str(denied), member_epoch=-1,
                     heartbeat_interval=0)
    topics = ctx.services.cluster.view.topics
    names_by_id = {metadata.topic_id: name for name, metadata in topics.items()}
    member_id = request.member_id
    if ctx.api_version == 0 and not member_id and int(request.member_epoch) == 0:
        member_id = str(uuid.uuid4())
    owned = None
    if request.topic_partitions is not None:
        owned = frozenset(
            TopicPartition(names_by_id[t.topic_id], int(p))
            for t in request.topic_partitions if t.topic_id in names_by_id
            for p in t.partitions
        )
    names = request.subscribed_topic_names
    heartbeat = ConsumerHeartbeat(
        member_id=member_id,
        member_epoch=int(request.member_epoch),
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=millis(request.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(str(n) for n in names),
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor,
        owned=owned,
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx.peer),
    )
    try:
        validate_first_heartbeat(heartbeat)
    except KafkaError as exc:
        return build_response(module.ConsumerGroupHeartbeatResponse, throttle_time=NO_THROTTLE,
                     error_code=exc.code, error_message=str(exc), member_epoch=-1,
                     heartbeat_interval=0)
    counts = {name: len(metadata.partitions) for name, metadata in topics.items()}
    ids = {name: metadata.topic_id for name, metadata in topics.items()}
    result = ctx.services.group_coordinator.consumer_group_heartbeat(
        str(request.group_id), heartbeat, counts, ids)
    if isinstance(result, HeartbeatResult):
        return _heartbeat_response(module, result, topics)
    return _heartbeat_response_later(module, result, topics)


async def _heartbeat_response_later(module: ModuleType, pending: Awaitable[HeartbeatResult],
                                    topics: Mapping[str, TopicMetadata]) -> ResponsePayload:
    return _heartbeat_response(module, await pending, topics)


def _heartbeat_response(module: ModuleType, result: HeartbeatResult,
                        topics: Mapping[str, TopicMetadata]) -> ResponsePayload:
    assignment = None
    if result.error == ErrorCode.none and result.assignment is not None:
        assignment = build(module.Assignment, topic_partitions=tuple(
            build(module.TopicPartitions, topic_id=topics[name].topic_id,
                  partitions=tuple(partitions))
            for name, partitions in _by_topic(result.assignment).items() if name in topics
        ))
    return build_response(
        module.ConsumerGroupHeartbeatResponse,
        throttle_time=NO_THROTTLE,
        error_code=result.error,
        error_message=result.message,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval=result.heartbeat_interval_ms,
        assignment=assignment,
    )


def handle_consumer_group_describe(ctx: RequestContext,
                                   request: ConsumerGroupDescribeRequest) -> Outcome:
    module = response_module(ApiKey.CONSUMER_GROUP_DESCRIBE, ctx.api_version)
    topics = ctx.services.cluster.view.topics
    ids = {name: metadata.topic_id for name, metadata in topics.items()}
    described = []
    for group_id in request.group_ids:
        if not ctx.authorize(Operation.DESCRIBE, ResourceType.GROUP, str(group_id)):
            denied = GroupAuthorizationFailed()
            described.append(build(
                module.DescribedGroup, error_code=denied.code, error_message=str(denied),
                group_id=str(group_id), group_state="", group_epoch=-1, assignment_epoch=-1,
                assignor_name="", members=(),
                authorized_operations=ctx.authorized_operations(ResourceType.GROUP,
                                                                str(group_id))))
            continue
        error, group = ctx.services.group_coordinator.describe_consumer_group(str(group_id))
        if group is None:
            message = (f"Group {group_id} not found." if error == ErrorCode.group_id_not_found
                       else None)
            described.append(build(
                module.DescribedGroup, error_code=error, error_message=message,
                group_id=str(group_id), group_state="Dead", group_epoch=-1,
                assignment_epoch=-1, assignor_name="", members=(),
                authorized_operations=ctx.authorized_operations(ResourceType.GROUP,
                                                                str(group_id))))
            continue
        described.append(_described_group(
            module, group, ids, ctx.authorized_operations(ResourceType.GROUP, str(group_id))))
    return build_response(module.ConsumerGroupDescribeResponse, throttle_time=NO_THROTTLE,
                          groups=tuple(described))


def _described_group(module: ModuleType, group: ConsumerGroup, ids: Mapping[str, uuid.UUID],
                     authorized_operations: int) -> object:
    def assignment(partitions: Iterable[TopicPartition]) -> object:
        return build(module.Assignment, topic_partitions=tuple(
            build(module.TopicPartitions, topic_id=ids[name], topic_name=name,
                  partitions=tuple(indexes))
            for name, indexes in _by_topic(partitions).items() if name in ids
        ))

    return build(
        module.DescribedGroup,
        error_code=ErrorCode.none,
        group_id=group.group_id,
        group_state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.assignor,
        members=tuple(
            build(
                module.Member,
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.assignment.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=m.subscribed_topic_names,
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=assignment(m.assignment.assigned),
                target_assignment=assignment(group.target.get(m.member_id, ())),
                **({"member_type": 1} if hasattr(module.Member, "member_type") else {}),
            )
            for m in group.members.values()
        ),
        authorized_operations=authorized_operations,
    )


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        grouped.setdefault(topic, []).append(partition)
    return grouped
