"""Metadata (v0-v12): brokers, controller, topics and partition leadership.

Served from the cluster view (kept current by ZooKeeper watches), never from ZooKeeper
directly. A missing topic is auto-created when the request allows it (always before v4)
and ``auto.create.topics.enable`` is on; like Kafka, the answer for it is then
LEADER_NOT_AVAILABLE and the client asks again. ``controller_id`` is always a live broker
id when one is known (kafka-python's admin client waits for that).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.protocol.errors import KafkaError, TopicAlreadyExists, error_code_of
from odradek.topic_name import INTERNAL_TOPICS, validate_topic_name

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.cluster.model import BrokerInfo
    from odradek.protocol.api_types import MetadataRequest

__all__ = ["handle_metadata"]

log = logging.getLogger(__name__)

_NO_AUTHORIZED_OPERATIONS = -(2**31)


def _endpoint_for(broker: BrokerInfo, listener: str) -> tuple[str, int]:
    for endpoint in getattr(broker, "endpoints", ()):
        if endpoint.listener == listener:
            return endpoint.host, endpoint.port
    return broker.host, broker.port


def _requested_names(request: MetadataRequest, version: int) -> list[str] | None:
    """None means "all topics" (null array from v1, empty array in v0)."""
    if request.topics is None:
        return None
    names = [topic.name for topic in request.topics]
    if version == 0 and not names:
        return None
    # kio types a v10+ topic's name as nullable (a topic asked for by id, which odradek does
    # not look up): a null name is answered INVALID_TOPIC_EXCEPTION (validate_topic_name).
    return names  # type: ignore[return-value]


async def _auto_create(ctx: RequestContext, names: list[str]) -> dict[str, ErrorCode]:
    settings = ctx.services.sections.topics
    errors: dict[str, ErrorCode] = {}
    for name in names:
        try:
            validate_topic_name(name)
            await ctx.services.cluster.create_topic(
                name, settings.num_partitions, settings.default_replication_factor, {}
            )
            log.info("auto-created topic %s for %s", name, ctx.peer)
            errors[name] = ErrorCode.leader_not_available
        except TopicAlreadyExists:
            errors[name] = ErrorCode.leader_not_available
        except KafkaError as exc:
            errors[name] = error_code_of(exc)
    return errors


def handle_metadata(
    ctx: RequestContext, request: MetadataRequest
) -> ResponsePayload | Awaitable[ResponsePayload]:
    version = ctx.api_version
    names = _requested_names(request, version)
    view = ctx.services.cluster.view
    missing = [name for name in names or () if name not in view.topics]
    allow_create = bool(getattr(request, "allow_auto_topic_creation", True))
    if missing and allow_create and ctx.services.sections.topics.auto_create_topics_enable:
        return _respond_after_create(ctx, names, missing)
    return _response(ctx, names, {})


async def _respond_after_create(
    ctx: RequestContext, names: list[str] | None, missing: list[str]
) -> ResponsePayload:
    errors = await _auto_create(ctx, missing)
    return _response(ctx, names, errors)


def _response(
    ctx: RequestContext, names: list[str] | None, errors: dict[str, ErrorCode]
) -> ResponsePayload:
    version = ctx.api_version
    module = response_module(ApiKey.METADATA, version)
    view = ctx.services.cluster.view
    live = set(view.brokers)
    brokers = []
    for broker_id in sorted(view.brokers):
        info = view.brokers[broker_id]
        host, port = _endpoint_for(info, ctx.listener)
        brokers.append(
            build(module.MetadataResponseBroker, node_id=broker_id, host=host, port=port,
                  rack=info.rack)
        )
    topics = []
    for name in sorted(view.topics) if names is None else names:
        topic = view.topics.get(name)
        if topic is None:
            code = errors.get(name, ErrorCode.unknown_topic_or_partition)
            try:
                validate_topic_name(name)
            except KafkaError as exc:
                code = error_code_of(exc)
            topics.append(
                build(module.MetadataResponseTopic, error_code=code, name=name,
                      topic_id=uuid.UUID(int=0), is_internal=False, partitions=(),
                      topic_authorized_operations=_NO_AUTHORIZED_OPERATIONS)
            )
            continue
        partitions = []
        for index in sorted(topic.partitions):
            state = topic.partitions[index]
            offline = tuple(r for r in state.replicas if r not in live)
            if state.leader < 0 or state.leader not in live:
                code = ErrorCode.leader_not_available
            elif version == 0 and offline:
                code = ErrorCode.replica_not_available
            else:
                code = ErrorCode.none
            partitions.append(
                build(module.MetadataResponsePartition, error_code=code, partition_index=index,
                      leader_id=state.leader, leader_epoch=state.leader_epoch,
                      replica_nodes=tuple(state.replicas), isr_nodes=tuple(state.isr),
                      offline_replicas=offline)
            )
        topics.append(
            build(module.MetadataResponseTopic, error_code=ErrorCode.none, name=name,
                  topic_id=topic.topic_id, is_internal=name in INTERNAL_TOPICS,
                  partitions=tuple(partitions),
                  topic_authorized_operations=_NO_AUTHORIZED_OPERATIONS)
        )
    controller_id = view.controller_id
    if controller_id is None or controller_id not in live:
        controller_id = min(live) if live else -1
    return build_response(
        module.MetadataResponse,
        throttle_time=NO_THROTTLE,
        brokers=tuple(brokers),
        cluster_id=getattr(view, "cluster_id", None),
        controller_id=controller_id,
        topics=tuple(topics),
        cluster_authorized_operations=_NO_AUTHORIZED_OPERATIONS,
    )
