"""CreateTopics, DeleteTopics, CreatePartitions: topic administration through ZooKeeper.

Any broker takes these requests and writes them into ZooKeeper (the cluster layer);
the controller turns them into partition state. Like Kafka, the answer waits (up to the
request's timeout) until this broker's cluster view shows the result — leaders elected,
or the topic gone — so a client that creates a topic and produces right away finds it.

Authorization (Kafka's): CreateTopics needs CREATE on the cluster or on the topic,
DeleteTopics DELETE and CreatePartitions ALTER on the topic; a topic without it is answered
TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING
from uuid import UUID

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, millis, response_module
from odradek.protocol.errors import (
    InvalidRequest,
    TopicAuthorizationFailed,
    TopicDeletionDisabled,
    UnknownTopicOrPartition,
    response_error,
)
from odradek.security.acl import CLUSTER_NAME, Operation, ResourceType
from odradek.storage.log_config import LogConfig
from odradek.topic_name import validate_topic_name

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.cluster.view import ClusterSnapshot
    from odradek.protocol.api_types import (
        CreatePartitionsRequest,
        CreateTopicsRequest,
        DeleteTopicsRequest,
    )

__all__ = ["handle_create_partitions", "handle_create_topics", "handle_delete_topics"]

log = logging.getLogger(__name__)


def _leaders_ready(
    name: str, partitions: int | None = None
) -> Callable[[ClusterSnapshot], bool]:
    def ready(view: ClusterSnapshot) -> bool:
        topic = view.topics.get(name)
        if topic is None:
            return False
        if partitions is not None and len(topic.partitions) < partitions:
            return False
        return all(state.leader >= 0 for state in topic.partitions.values())

    return ready


def _gone(name: str) -> Callable[[ClusterSnapshot], bool]:
    return lambda view: name not in view.topics


async def handle_create_topics(
    ctx: RequestContext, request: CreateTopicsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.CREATE_TOPICS, ctx.api_version)
    services = ctx.services
    timeout_s = max(millis(request.timeout), 0) / 1000
    validate_only = bool(getattr(request, "validate_only", False))
    may_create_any = ctx.allowed(Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
    results = []
    for topic in request.topics:
        num_partitions = int(topic.num_partitions)
        replication_factor = int(topic.replication_factor)
        assignment = {int(a.partition_index): list(a.broker_ids) for a in topic.assignments}
        topic_id = None
        try:
            if not may_create_any and not ctx.authorize(Operation.CREATE, ResourceType.TOPIC,
                                                        topic.name):
                raise TopicAuthorizationFailed
            validate_topic_name(topic.name)
            if assignment:
                if num_partitions != -1 or replication_factor != -1:
                    raise InvalidRequest(
                        "give either an assignment or num_partitions/replication_factor"
                    )
                num_partitions = len(assignment)
                replication_factor = len(next(iter(assignment.values())))
            if num_partitions == -1:
                num_partitions = services.sections.topics.num_partitions
            if replication_factor == -1:
                replication_factor = services.sections.topics.default_replication_factor
            overrides = {c.name: c.value for c in topic.configs if c.value is not None}
            # raises InvalidConfig naming the key
            LogConfig.for_topic(services.config.topic_defaults(), overrides)
            created = await services.cluster.create_topic(
                topic.name, num_partitions, replication_factor, overrides,
                assignment or None, validate_only,
            )
            topic_id = getattr(created, "topic_id", None)
            if not validate_only and timeout_s > 0:
                await services.wait_for_view(_leaders_ready(topic.name), timeout_s)
            code, message = ErrorCode.none, None
        except Exception as exc:
            code, message = response_error(exc, f"creating topic {topic.name}")
        results.append(
            build(module.CreatableTopicResult, name=topic.name, topic_id=topic_id,
                  error_code=code, error_message=message,
                  num_partitions=num_partitions if code == ErrorCode.none else -1,
                  replication_factor=replication_factor if code == ErrorCode.none else -1,
                  configs=())
        )
    return build_response(module.CreateTopicsResponse,
                          throttle_time=NO_THROTTLE, topics=tuple(results))


async def handle_delete_topics(
    ctx: RequestContext, request: DeleteTopicsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.DELETE_TOPICS, ctx.api_version)
    services = ctx.services
    timeout_s = max(millis(request.timeout), 0) / 1000
    if hasattr(request, "topic_names"):
        wanted: list[tuple[str | None, UUID | None]] = [
            (name, None) for name in request.topic_names]
    else:
        wanted = [(state.name, state.topic_id) for state in request.topics]
    results = []
    for name, topic_id in wanted:
        try:
            if name is None:
                matches = [t for t in services.cluster.view.topics.values()
                           if t.topic_id == topic_id]
                if not matches:
                    raise UnknownTopicOrPartition(f"no topic with id {topic_id}")
                name = matches[0].name
            if not ctx.authorize(Operation.DELETE, ResourceType.TOPIC, name):
                raise TopicAuthorizationFailed
            if not services.sections.topics.delete_topic_enable:
                raise TopicDeletionDisabled("delete.topic.enable is false")
            await services.cluster.delete_topic(name)
            if timeout_s > 0:
                await services.wait_for_view(_gone(name), timeout_s)
            code, message = ErrorCode.none, None
        except Exception as exc:
            code, message = response_error(exc, f"deleting topic {name}")
        results.append(
            build(module.DeletableTopicResult, name=name, topic_id=topic_id,
                  error_code=code, error_message=message)
        )
    return build_response(module.DeleteTopicsResponse, throttle_time=NO_THROTTLE,
                          responses=tuple(results))


async def handle_create_partitions(
    ctx: RequestContext, request: CreatePartitionsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.CREATE_PARTITIONS, ctx.api_version)
    services = ctx.services
    timeout_s = max(millis(request.timeout), 0) / 1000
    validate_only = bool(request.validate_only)
    results = []
    for topic in request.topics:
        try:
            if not ctx.authorize(Operation.ALTER, ResourceType.TOPIC, topic.name):
                raise TopicAuthorizationFailed
            assignment = (
                [list(a.broker_ids) for a in topic.assignments]
                if topic.assignments is not None else None
            )
            await services.cluster.create_partitions(
                topic.name, int(topic.count), assignment, validate_only
            )
            if not validate_only and timeout_s > 0:
                await services.wait_for_view(
                    _leaders_ready(topic.name, int(topic.count)), timeout_s
                )
            code, message = ErrorCode.none, None
        except Exception as exc:
            code, message = response_error(exc, f"creating partitions of {topic.name}")
        results.append(
            build(module.CreatePartitionsTopicResult, name=topic.name, error_code=code,
                  error_message=message)
        )
    return build_response(module.CreatePartitionsResponse, throttle_time=NO_THROTTLE,
                          results=tuple(results))
