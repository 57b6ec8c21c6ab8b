"""Metadata (v0-v12): brokers, controller, topics and partition leadership.

Served from the cluster view (kept current by ZooKeeper watches), never from ZooKeeper
directly. A missing topic is auto-created when the request allows it (always before v4)
and ``auto.create.topics.enable`` is on; like Kafka, the answer for it is then
LEADER_NOT_AVAILABLE and the client asks again. ``controller_id`` is always a live broker
id when one is known (kafka-python's admin client waits for that).

Authorization (Kafka's): all topics requested, only those the client may DESCRIBE are
listed; a named topic it may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED, exists or
not; a missing one is auto-created only with CREATE on the cluster or the topic (without it:
UNKNOWN_TOPIC_OR_PARTITION). ``topic_authorized_operations`` and
``cluster_authorized_operations`` are filled when the request asks for them.

The answer is laid out directly (:mod:`odradek.protocol.metadata_response`, byte-identical
to kio's), with or without an authorizer.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Container, Iterable, Mapping
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from odradek.protocol.errors import KafkaError, TopicAlreadyExists, error_code_of
from odradek.protocol.fetch_response import EncodedResponse
from odradek.protocol.metadata_response import (
    MetadataBroker,
    MetadataPartition,
    MetadataTopic,
    encode_metadata_response,
    throttle_offset,
)
from odradek.security.acl import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_NAME,
    Operation,
    ResourceType,
)
from odradek.topic_name import INTERNAL_TOPICS, validate_topic_name

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.cluster.model import BrokerInfo, TopicMetadata
    from odradek.protocol.api_types import MetadataRequest

__all__ = ["handle_metadata"]

log = logging.getLogger(__name__)

_NO_TOPIC_ID = uuid.UUID(int=0)


def _endpoint_for(broker: BrokerInfo, listener: str) -> tuple[str, int]:
    for endpoint in getattr(broker, "endpoints", ()):
        if endpoint.listener == listener:
            return endpoint.host, endpoint.port
    return broker.host, broker.port


def _requested_names(request: MetadataRequest, version: int,
                     topics: Mapping[str, TopicMetadata]) -> list[str | uuid.UUID] | None:
    """None means "all topics" (null array from v1, empty array in v0). From v10 a topic may
    be asked for by id alone (KIP-848 clients resolve their assignment's topic ids so); an
    id the cluster does not know stays a UUID, answered UNKNOWN_TOPIC_ID."""
    if request.topics is None:
        return None
    names: list[str | uuid.UUID] = []
    for topic in request.topics:
        topic_id = getattr(topic, "topic_id", None)
        if topic.name is None and isinstance(topic_id, uuid.UUID):
            by_id = next((n for n, t in topics.items() if t.topic_id == topic_id), None)
            names.append(topic_id if by_id is None else by_id)
        else:
            # A v10+ topic with neither name nor id: answered INVALID_TOPIC_EXCEPTION
            # (validate_topic_name refuses the empty name).
            names.append(topic.name or "")
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


def handle_metadata(
    ctx: RequestContext, request: MetadataRequest
) -> EncodedResponse | Awaitable[EncodedResponse]:
    version = ctx.api_version
    view = ctx.services.cluster.view
    names = _requested_names(request, version, view.topics)
    by_name = [name for name in names or () if isinstance(name, str)]
    refused = _refused(ctx, by_name, view.topics)
    missing = [name for name in by_name if name not in view.topics and name not in refused]
    allow_create = bool(getattr(request, "allow_auto_topic_creation", True))
    if missing and allow_create and ctx.services.sections.topics.auto_create_topics_enable:
        return _respond_after_create(ctx, request, names, missing, refused)
    return _response(ctx, request, names, refused, refused)


def _refused(ctx: RequestContext, names: Iterable[str],
             existing: Container[str]) -> dict[str, ErrorCode]:
    """The named topics the client may not see (or not auto-create), with their codes."""
    refused: dict[str, ErrorCode] = {}
    may_create_any: bool | None = None
    for name in names:
        if not ctx.authorize(Operation.DESCRIBE, ResourceType.TOPIC, name):
            refused[name] = ErrorCode.topic_authorization_failed
        elif name not in existing:
            if may_create_any is None:
                may_create_any = ctx.allowed(Operation.CREATE, ResourceType.CLUSTER,
                                             CLUSTER_NAME)
            if not may_create_any and not ctx.allowed(Operation.CREATE, ResourceType.TOPIC,
                                                      name):
                refused[name] = ErrorCode.unknown_topic_or_partition
    return refused


async def _respond_after_create(
    ctx: RequestContext, request: MetadataRequest, names: list[str | uuid.UUID] | None,
    missing: list[str],
    refused: dict[str, ErrorCode],
) -> EncodedResponse:
    errors = await _auto_create(ctx, missing)
    return _response(ctx, request, names, {**errors, **refused}, refused)


def _response(ctx: RequestContext, request: MetadataRequest,
              names: list[str | uuid.UUID] | None, errors: dict[str, ErrorCode],
              refused: Container[str]) -> EncodedResponse:
    """``errors``: of topics not created or refused; ``refused``: topics shown only with
    their error."""
    version = ctx.api_version
    with_operations = bool(getattr(request, "include_topic_authorized_operations", False))
    view = ctx.services.cluster.view
    live = set(view.brokers)
    brokers = []
    for broker_id in sorted(view.brokers):
        info = view.brokers[broker_id]
        host, port = _endpoint_for(info, ctx.listener)
        brokers.append(MetadataBroker(broker_id, host, port, info.rack))
    topics = []
    codes: list[int] = []
    requested: list[str | uuid.UUID] = list(names) if names is not None else [
        name for name in sorted(view.topics)
        if ctx.allowed(Operation.DESCRIBE, ResourceType.TOPIC, name)]
    for name in requested:
        if isinstance(name, uuid.UUID):  # an id the cluster does not know (v10+)
            code = ErrorCode.unknown_topic_id
            topics.append(MetadataTopic(code, None if version >= 12 else "", name, False))
            codes.append(code)
            continue
        topic = None if name in refused else view.topics.get(name)
        if topic is None:
            code = errors.get(name, ErrorCode.unknown_topic_or_partition)
            try:
                if name not in refused:
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
        operations = ctx.authorized_operations(ResourceType.TOPIC, name) \
            if with_operations else AUTHORIZED_OPERATIONS_OMITTED
        topics.append(MetadataTopic(ErrorCode.none, name, topic.topic_id,
                                    name in INTERNAL_TOPICS, partitions, operations))
    controller_id = view.controller_id
    if controller_id is None or controller_id not in live:
        controller_id = min(live) if live else -1
    cluster_operations = ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME) \
        if getattr(request, "include_cluster_authorized_operations", False) \
        else AUTHORIZED_OPERATIONS_OMITTED
    frame = encode_metadata_response(
        version, ctx.header.correlation_id, brokers, getattr(view, "cluster_id", None),
        controller_id, topics, cluster_authorized_operations=cluster_operations)
    offset = throttle_offset(version)
    return EncodedResponse([frame], codes, throttle_at=None if offset is None else (0, offset))
