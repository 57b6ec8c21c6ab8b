"""FindCoordinator (v0-v4): which broker coordinates a group (or a transactional id).

The coordinator of group ``g`` is the leader of ``__consumer_offsets`` partition
``partition_for_group(g, offsets.topic.num.partitions)``, read from the cluster view. The
first lookup creates the offsets topic (compacted, ``offsets.topic.*`` settings) and answers
COORDINATOR_NOT_AVAILABLE; clients retry until a leader is elected.

Replication factor: like Kafka since 0.11 (KIP-115), the topic is created only once at least
``offsets.topic.replication.factor`` brokers are alive; until then the answer stays
COORDINATOR_NOT_AVAILABLE rather than silently creating an under-replicated topic that would
stay that way forever. A single-broker setup sets the factor to 1 (``odradek cluster`` does).

Transactional ids (key type 1) are refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED
and a message saying why: there is no transaction coordinator yet. COORDINATOR_NOT_AVAILABLE
would be a lie clients believe — librdkafka, the Java producer and kafka-python all retry it
until their transaction timeout — whereas TRANSACTIONAL_ID_AUTHORIZATION_FAILED is fatal
for each of them, so ``init_transactions()`` fails at once with a clear error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.coordinator.partitioning import CONSUMER_OFFSETS_TOPIC, partition_for_group
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, response_module
from odradek.protocol.errors import KafkaError, TopicAlreadyExists, error_code_of

from ..context import RequestContext

__all__ = ["handle_find_coordinator"]

log = logging.getLogger(__name__)

_GROUP_KEY = 0
_TRANSACTION_KEY = 1
_NO_TRANSACTIONS = "transactions are not supported by this broker (no transaction coordinator)"


@dataclass(frozen=True, slots=True)
class _Found:
    key: str
    error: ErrorCode
    message: str | None = None
    node_id: int = -1
    host: str = ""
    port: int = -1


def _endpoint(broker: Any, listener: str) -> tuple[str, int]:
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


async def _create_offsets_topic(ctx: RequestContext) -> None:
    settings = ctx.services.sections.group_coordinator
    cluster = ctx.services.cluster
    replication = settings.offsets_topic_replication_factor
    live = len(cluster.view.brokers)
    if live < replication:
        log.warning(
            "not creating %s: %d live broker(s) < offsets.topic.replication.factor=%d",
            CONSUMER_OFFSETS_TOPIC, live, replication,
        )
        return
    topic_config = {
        "cleanup.policy": "compact",
        "compression.type": "producer",
        "segment.bytes": str(settings.offsets_topic_segment_bytes),
    }
    try:
        await cluster.create_topic(
            CONSUMER_OFFSETS_TOPIC, settings.offsets_topic_num_partitions, replication,
            topic_config,
        )
        log.info("created %s for %s", CONSUMER_OFFSETS_TOPIC, ctx.peer)
    except TopicAlreadyExists:
        pass
    except KafkaError as exc:
        log.warning("creating %s failed: %s", CONSUMER_OFFSETS_TOPIC, exc)


def _find_all(ctx: RequestContext, key_type: int, keys: list[str]) -> list[_Found] | None:
    """The answers, or None when the offsets topic must be created first."""
    if key_type == _GROUP_KEY:
        if CONSUMER_OFFSETS_TOPIC not in ctx.services.cluster.view.topics:
            return None
        partitions = ctx.services.coordinator.config.offsets_topic_num_partitions
        return [_lookup(ctx, CONSUMER_OFFSETS_TOPIC, key, partitions) for key in keys]
    if key_type == _TRANSACTION_KEY:
        log.info("refusing transaction coordinator lookup from %s: %s", ctx.peer,
                 _NO_TRANSACTIONS)
        return [_Found(key, ErrorCode.transactional_id_authorization_failed, _NO_TRANSACTIONS)
                for key in keys]
    return [_Found(key, ErrorCode.invalid_request, f"unknown key type {key_type}")
            for key in keys]


def handle_find_coordinator(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    key_type = int(getattr(request, "key_type", _GROUP_KEY))
    keys = list(request.coordinator_keys) if version >= 4 else [request.key]
    found = _find_all(ctx, key_type, keys)
    if found is not None:
        return _response(version, found)
    return _create_then_answer(ctx, version, keys)


async def _create_then_answer(ctx: RequestContext, version: int, keys: list[str]) -> Any:
    try:
        await _create_offsets_topic(ctx)
    except Exception as exc:  # ZooKeeper trouble: the client retries FindCoordinator
        log.warning("creating %s failed: %s", CONSUMER_OFFSETS_TOPIC, exc)
        return _response(version, [_Found(k, error_code_of(exc)) for k in keys])
    return _response(version, [_Found(k, ErrorCode.coordinator_not_available) for k in keys])


def _response(version: int, found: list[_Found]) -> Any:
    module = response_module(ApiKey.FIND_COORDINATOR, version)
    if version >= 4:
        return build(
            module.FindCoordinatorResponse,
            throttle_time=NO_THROTTLE,
            coordinators=tuple(
                build(module.Coordinator, key=f.key, node_id=f.node_id, host=f.host,
                      port=f.port, error_code=f.error, error_message=f.message)
                for f in found
            ),
        )
    first = found[0]
    return build(
        module.FindCoordinatorResponse,
        throttle_time=NO_THROTTLE,
        error_code=first.error,
        error_message=first.message,
        node_id=first.node_id,
        host=first.host,
        port=first.port,
    )
