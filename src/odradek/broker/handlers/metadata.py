"""Metadata (v0-v12): brokers, controller, topics and partition leadership.

Served from the cluster view (kept current by ZooKeeper watches), never from ZooKeeper
directly. A missing topic is auto-created when the request allows it (always before v4)
and ``auto.create.topics.enable`` is on; like Kafka, the answer for it is then
LEADER_NOT_AVAILABLE and the client asks again. ``controller_id`` is always a live broker
id when one is known (kafka-python's admin client waits for that).

The answer is laid out directly (:mod:`odradek.protocol.metadata_response`), except under
an authorizer, whose rules (:mod:`..access_metadata`) edit kio's answer: the same values
then go out as kio entities.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, response_module
from odradek.protocol.errors import KafkaError, TopicAlreadyExists, error_code_of
from odradek.protocol.fetch_response import EncodedResponse
from odradek.protocol.metadata_response import (
    NO_AUTHORIZED_OPERATIONS,
    MetadataBroker,
    MetadataPartition,
    MetadataTopic,
    encode_metadata_response,
    throttle_offset,
)
from odradek.topic_name import INTERNAL_TOPICS, validate_topic_name

from ..context import RequestContext

__all__ = ["handle_metadata"]

log = logging.getLogger(__name__)

_NO_TOPIC_ID = uuid.UUID(int=0)


def _endpoint_for(broker: Any, listener: str) -> tuple[str, int]:
    for endpoint in getattr(broker, "endpoints", ()):
        if endpoint.listener == listener:
            return endpoint.host, endpoint.port
    return broker.host, broker.port


def _requested_names(request: Any, version: int) -> list[str] | None:
    """None means "all topics" (null array from v1, empty array in v0)."""
    if request.topics is None:
        return None
    names = [topic.name for topic in request.topics]
    if version == 0 and not names:
        return None
    return names


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


def handle_metadata(ctx: RequestContext, request: Any) -> Any:
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
) -> Any:
    errors = await _auto_create(ctx, missing)
    return _response(ctx, names, errors)


def _response(ctx: RequestContext, names: list[str] | None, errors: dict[str, ErrorCode]) -> Any:
    version = ctx.api_version
    view = ctx.services.cluster.view
    live = set(view.brokers)
    brokers = []
    for broker_id in sorted(view.brokers):
        info = view.brokers[broker_id]
        host, port = _endpoint_for(info, ctx.listener)
        brokers.append(MetadataBroker(broker_id, host, port, info.rack))
    topics = []
    codes: list[int] = []
    for name in sorted(view.topics) if names is None else names:
        topic = view.topics.get(name)
        if topic is None:
            code = errors.get(name, ErrorCode.unknown_topic_or_partition)
            try:
                validate_topic_name(name)
            except KafkaError as exc:
                code = error_code_of(exc)
            topics.append(MetadataTopic(code, name, _NO_TOPIC_ID, False))
            codes.append(code)
            continue
        partitions = []
        for index in sorted(topic.partitions):
            state = topic.partitions[index]
            offline = tuple(r for r in state.replicas if r not in live)
            if state.leader < 0 or state.leader not in live:
                code = ErrorCode.leader_not_available
                codes.append(code)
            elif version == 0 and offline:
                code = ErrorCode.replica_not_available
                codes.append(code)
            else:
                code = ErrorCode.none
            partitions.append(MetadataPartition(
                code, index, state.leader, state.leader_epoch, tuple(state.replicas),
                tuple(state.isr), offline))
        topics.append(MetadataTopic(ErrorCode.none, name, topic.topic_id,
                                    name in INTERNAL_TOPICS, partitions))
    controller_id = view.controller_id
    if controller_id is None or controller_id not in live:
        controller_id = min(live) if live else -1
    cluster_id = getattr(view, "cluster_id", None)
    if ctx.services.authorizer is not None:
        return _kio_answer(version, brokers, cluster_id, controller_id, topics)
    frame = encode_metadata_response(version, ctx.header.correlation_id, brokers, cluster_id,
                                     controller_id, topics)
    offset = throttle_offset(version)
    return EncodedResponse([frame], codes, throttle_at=None if offset is None else (0, offset))


def _kio_answer(version: int, brokers: list[MetadataBroker], cluster_id: str | None,
                controller_id: int, topics: list[MetadataTopic]) -> Any:
    """The same answer as kio entities, for the authorizer's rules to edit."""
    module = response_module(ApiKey.METADATA, version)
    return build(
        module.MetadataResponse,
        throttle_time=NO_THROTTLE,
        brokers=tuple(build(module.MetadataResponseBroker, b._asdict()) for b in brokers),
        cluster_id=cluster_id,
        controller_id=controller_id,
        topics=tuple(
            build(module.MetadataResponseTopic, t._asdict(), partitions=tuple(
                build(module.MetadataResponsePartition, p._asdict()) for p in t.partitions))
            for t in topics),
        cluster_authorized_operations=NO_AUTHORIZED_OPERATIONS,
    )
