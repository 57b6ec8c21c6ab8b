"""FindCoordinator (v0-v4): which broker coordinates a group (or a transactional id).

The coordinator of group ``g`` is the leader of ``__consumer_offsets`` partition
``partition_for_group(g, offsets.topic.num.partitions)``, read from the cluster view. The
first lookup creates the offsets topic (compacted, ``offsets.topic.*`` settings) and answers
COORDINATOR_NOT_AVAILABLE; clients retry until a leader is elected.

Replication factor: like Kafka since 0.11 (KIP-115), the topic is created only once at least
``offsets.topic.replication.factor`` brokers are alive; until then the answer stays
COORDINATOR_NOT_AVAILABLE rather than silently creating an under-replicated topic that would
stay that way forever. A single-broker setup sets the factor to 1 (``odradek cluster`` does).

Transactional ids (key type 1) work the same way over ``__transaction_state``
(``partition_for_transactional_id``, ``transaction.state.log.*`` settings, created on the
first lookup with ``min.insync.replicas`` = ``transaction.state.log.min.isr``).

A key the client may not DESCRIBE (the group, or the transactional id) is answered
GROUP_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED with Kafka's text, as Kafka does.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.coordinator.partitioning import (
    CONSUMER_OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    partition_for_group,
)
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.protocol.errors import (
    AuthorizationFailed,
    GroupAuthorizationFailed,
    KafkaError,
    TopicAlreadyExists,
    TransactionalIdAuthorizationFailed,
    error_code_of,
)
from odradek.security.acl import Operation, ResourceType

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.cluster.model import BrokerInfo
    from odradek.protocol.api_types import FindCoordinatorRequest

__all__ = ["handle_find_coordinator"]

log = logging.getLogger(__name__)

_GROUP_KEY = 0
_TRANSACTION_KEY = 1


@dataclass(frozen=True, slots=True)
class _Found:
    key: str
    error: ErrorCode
    message: str | None = None
    node_id: int = -1
    host: str = ""
    port: int = -1


def _endpoint(broker: BrokerInfo, listener: str) -> tuple[str, int]:
    for endpoint in getattr(broker, "endpoints", ()):
        if endpoint.listener == listener:
            return endpoint.host, endpoint.port
    return broker.host, broker.port


def _lookup(ctx: RequestContext, topic: str, key: str, partitions: int) -> _Found:
    view = ctx.services.cluster.view
    metadata = view.topics.get(topic)
    if metadata is None:
        return _Found(key, ErrorCode.coordinator_not_available)
    state = metadata.partitions.get(partition_for_group(key, partitions))
    if state is None or state.leader not in view.brokers:
        return _Found(key, ErrorCode.coordinator_not_available)
    host, port = _endpoint(view.brokers[state.leader], ctx.listener)
    return _Found(key, ErrorCode.none, None, state.leader, host, port)


@dataclass(frozen=True, slots=True)
class _InternalTopic:
    name: str
    partitions: int
    replication: int
    config: dict[str, str]


def _internal_topic(ctx: RequestContext, key_type: int) -> _InternalTopic:
    if key_type == _TRANSACTION_KEY:
        txn = ctx.services.sections.transactions
        return _InternalTopic(TRANSACTION_STATE_TOPIC, txn.state_log_num_partitions,
                              txn.state_log_replication_factor, {
                                  "cleanup.policy": "compact",
                                  "compression.type": "uncompressed",
                                  "min.insync.replicas": str(txn.state_log_min_isr),
                                  "segment.bytes": str(txn.state_log_segment_bytes),
                              })
    groups = ctx.services.sections.group_coordinator
    return _InternalTopic(CONSUMER_OFFSETS_TOPIC, groups.offsets_topic_num_partitions,
                          groups.offsets_topic_replication_factor, {
                              "cleanup.policy": "compact",
                              "compression.type": "producer",
                              "segment.bytes": str(groups.offsets_topic_segment_bytes),
                          })


async def _create_internal_topic(ctx: RequestContext, topic: _InternalTopic) -> None:
    cluster = ctx.services.cluster
    live = len(cluster.view.brokers)
    if live < topic.replication:
        log.warning("not creating %s: %d live broker(s) < its replication factor %d",
                    topic.name, live, topic.replication)
        return
    try:
        await cluster.create_topic(topic.name, topic.partitions, topic.replication,
                                   topic.config)
        log.info("created %s for %s", topic.name, ctx.peer)
    except TopicAlreadyExists:
        pass
    except KafkaError as exc:
        log.warning("creating %s failed: %s", topic.name, exc)


def _find_all(ctx: RequestContext, key_type: int, keys: list[str]) -> list[_Found] | None:
    """The answers, or None when the internal topic must be created first."""
    if key_type in (_GROUP_KEY, _TRANSACTION_KEY):
        topic = _internal_topic(ctx, key_type)
        if topic.name not in ctx.services.cluster.view.topics:
            return None
        return [_lookup(ctx, topic.name, key, topic.partitions) for key in keys]
    return [_Found(key, ErrorCode.invalid_request, f"unknown key type {key_type}")
            for key in keys]


def handle_find_coordinator(
    ctx: RequestContext, request: FindCoordinatorRequest
) -> ResponsePayload | Awaitable[ResponsePayload]:
    version = ctx.api_version
    key_type = int(getattr(request, "key_type", _GROUP_KEY))
    # mypy does not narrow the kio union by ``version`` (v4 batched the keys)
    requested = (list(request.coordinator_keys)  # type: ignore[union-attr]
                 if version >= 4 else [request.key])  # type: ignore[union-attr]
    resource_type, refusal = ((ResourceType.TRANSACTIONAL_ID, TransactionalIdAuthorizationFailed)
                              if key_type == _TRANSACTION_KEY
                              else (ResourceType.GROUP, GroupAuthorizationFailed))
    keys: list[str] = []
    denied: list[_Found] = []
    for key in requested:
        if ctx.authorize(Operation.DESCRIBE, resource_type, key):
            keys.append(key)
        else:
            denied.append(_refused(key, refusal()))
    if not keys:
        return _response(version, denied)
    found = _find_all(ctx, key_type, keys)
    if found is not None:
        return _response(version, found + denied)
    return _create_then_answer(ctx, version, keys, _internal_topic(ctx, key_type), denied)


def _refused(key: str, error: AuthorizationFailed) -> _Found:
    return _Found(key, error.code, str(error))


async def _create_then_answer(ctx: RequestContext, version: int, keys: list[str],
                              topic: _InternalTopic, denied: list[_Found]) -> ResponsePayload:
    try:
        await _create_internal_topic(ctx, topic)
    except Exception as exc:  # ZooKeeper trouble: the client retries FindCoordinator
        log.warning("creating %s failed: %s", topic.name, exc)
        return _response(version, [_Found(k, error_code_of(exc)) for k in keys] + denied)
    return _response(version, [_Found(k, ErrorCode.coordinator_not_available)
                               for k in keys] + denied)


def _response(version: int, found: list[_Found]) -> ResponsePayload:
    module = response_module(ApiKey.FIND_COORDINATOR, version)
    if version >= 4:
        return build_response(
            module.FindCoordinatorResponse,
            throttle_time=NO_THROTTLE,
            coordinators=tuple(
                build(module.Coordinator, key=f.key, node_id=f.node_id, host=f.host,
                      port=f.port, error_code=f.error, error_message=f.message)
                for f in found
            ),
        )
    first = found[0]
    return build_response(
        module.FindCoordinatorResponse,
        throttle_time=NO_THROTTLE,
        error_code=first.error,
        error_message=first.message,
        node_id=first.node_id,
        host=first.host,
        port=first.port,
    )
