"""Committed offsets: OffsetCommit (v2-v9), OffsetFetch (v1-v7), OffsetDelete (v0).

Version differences handled here:

* OffsetCommit's response is written straight to its frame
  (:mod:`odradek.protocol.offset_commit_response`): it is the hottest group request.
* OffsetCommit v2-v4 carry ``retention_time_ms``; anything but -1 becomes an absolute
  expiry (now + retention), as Kafka did before KIP-211 removed the field in v5. v6 adds the
  committed leader epoch, v7 ``group_instance_id``; v9 is v8 sent by KIP-848 members,
  whose ``generation_id_or_member_epoch`` is their member epoch (the coordinator checks it
  against a consumer-type group: STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH). A group-level
  failure (NOT_COORDINATOR, ILLEGAL_GENERATION, ...) is reported on every partition, since
  the response has no top-level error field. Like Kafka (``KafkaApis``), partitions of
  topics the cluster does not have are refused with UNKNOWN_TOPIC_OR_PARTITION before the
  coordinator sees them.
* OffsetFetch v1 has no top-level error: a group-level failure is repeated on each requested
  partition. From v2 it is top-level (with no partitions, as Kafka answers), and a null topic
  list asks for every committed offset of the group. With ``require_stable`` (v7), a
  partition whose transactional commit (TxnOffsetCommit) is still pending answers
  UNSTABLE_OFFSET_COMMIT (offset -1), which clients retry until the transaction ends.

Authorization (Kafka's): OffsetCommit and OffsetFetch need READ on the group (else every
partition, or from OffsetFetch v2 the whole answer, is GROUP_AUTHORIZATION_FAILED) and READ
on each topic (else its partitions are TOPIC_AUTHORIZATION_FAILED); an OffsetFetch of all
the group's topics lists only those the client may READ. OffsetDelete needs DELETE on the
group and READ on each topic.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, cast

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.clock import wall_ms
from odradek.coordinator import OffsetCommitEntry, PartitionOffset
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, millis, response_module
from odradek.protocol.fetch_response import EncodedResponse
from odradek.protocol.offset_commit_response import (
    encode_offset_commit_response,
    throttle_offset,
)
from odradek.security.acl import Operation, ResourceType
from odradek.types import TopicPartition

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import (
        OffsetCommitRequest,
        OffsetDeleteRequest,
        OffsetFetchRequest,
    )

__all__ = ["handle_offset_commit", "handle_offset_delete", "handle_offset_fetch"]

_NO_RETENTION = -1
_FIRST_LEADER_EPOCH_VERSION = 6
# A plain (topic, partition) tuple finds a TopicPartition key (same hash and value) and is
# cheaper to build than one, per partition of every OffsetCommit.
_ErrorsByTuple = Callable[[tuple[str, int], ErrorCode], ErrorCode]
_GROUP_DENIED = ErrorCode.group_authorization_failed
_TOPIC_DENIED = ErrorCode.topic_authorization_failed
_GROUP, _TOPIC, _READ = ResourceType.GROUP, ResourceType.TOPIC, Operation.READ


def _expire_timestamp_ms(request: OffsetCommitRequest, version: int) -> int:
    if version > 4:
        return -1
    retention_ms = millis(request.retention_time)  # type: ignore[union-attr]  # v2-v4 only
    if retention_ms == _NO_RETENTION:
        return -1
    return wall_ms() + retention_ms


def handle_offset_commit(
    ctx: RequestContext, request: OffsetCommitRequest
) -> EncodedResponse | Awaitable[EncodedResponse]:
    """The response, or a coroutine of it while the offsets append waits for the high
    watermark (an append committed at once is answered with no task)."""
    version = ctx.api_version
    expire = _expire_timestamp_ms(request, version)
    with_epoch = version >= _FIRST_LEADER_EPOCH_VERSION
    topics = ctx.services.cluster.view.topics
    errors: dict[TopicPartition, ErrorCode] = {}
    entries = []
    unknown = ErrorCode.unknown_topic_or_partition
    new = tuple.__new__  # one entry per partition: not through the named tuple's __new__
    refused = None if ctx.authorize(_READ, _GROUP, str(request.group_id)) else _GROUP_DENIED
    for topic in request.topics:
        name = topic.name
        metadata = topics.get(name)
        known = metadata.partitions if metadata is not None else {}
        denied = refused
        if denied is None and not ctx.authorize(_READ, _TOPIC, name):
            denied = _TOPIC_DENIED
        for partition in topic.partitions:
            index = int(partition.partition_index)
            if denied is not None:
                errors[TopicPartition(name, index)] = denied
                continue
            if index not in known:
                errors[TopicPartition(name, index)] = unknown
                continue
            entries.append(new(OffsetCommitEntry, (
                name, index, int(partition.committed_offset),
                # v6+ (with_epoch): mypy does not narrow the kio union by version
                int(partition.committed_leader_epoch) if with_epoch else -1,  # type: ignore[union-attr]
                partition.committed_metadata, expire,
            )))
    if entries:
        result = ctx.services.group_coordinator.commit_offsets_nowait(
            str(request.group_id),
            request.member_id,
            getattr(request, "group_instance_id", None),
            int(request.generation_id_or_member_epoch),
            entries,
        )
        if not isinstance(result, dict):
            return _commit_response_later(ctx, request, errors, result)
        errors.update(result)
    return _commit_response(ctx, request, errors)


async def _commit_response_later(
    ctx: RequestContext, request: OffsetCommitRequest, errors: dict[TopicPartition, ErrorCode],
    pending: Awaitable[dict[TopicPartition, ErrorCode]],
) -> EncodedResponse:
    errors.update(await pending)
    return _commit_response(ctx, request, errors)


def _commit_response(ctx: RequestContext, request: OffsetCommitRequest,
                     errors: dict[TopicPartition, ErrorCode]) -> EncodedResponse:
    unknown_server_error = ErrorCode.unknown_server_error
    get = cast(_ErrorsByTuple, errors.get)
    answers = [
        (topic.name, [(p.partition_index, get((topic.name, p.partition_index),
                                              unknown_server_error))
                      for p in topic.partitions])
        for topic in request.topics
    ]
    codes = [code for _name, partitions in answers for _index, code in partitions if code]
    version = ctx.api_version
    frame = encode_offset_commit_response(version, ctx.header.correlation_id, answers)
    offset = throttle_offset(version)
    return EncodedResponse([frame], codes,
                           throttle_at=None if offset is None else (0, offset))


def handle_offset_fetch(ctx: RequestContext, request: OffsetFetchRequest) -> ResponsePayload:
    version = ctx.api_version
    wanted: list[TopicPartition] | None = None
    if request.topics is not None or version < 2:
        wanted = [
            TopicPartition(topic.name, int(index))
            for topic in request.topics or ()
            for index in topic.partition_indexes
        ]
    module = response_module(ApiKey.OFFSET_FETCH, version)
    group_id = str(request.group_id)
    if not ctx.authorize(_READ, _GROUP, group_id):
        return _offset_fetch_error(module, version, _GROUP_DENIED, wanted)
    denied: list[PartitionOffset] = []
    if wanted is not None:
        readable: dict[str, bool] = {}
        for key in wanted:
            if key.topic not in readable:
                readable[key.topic] = ctx.authorize(_READ, _TOPIC, key.topic)
            if not readable[key.topic]:
                denied.append(PartitionOffset(*key))
        wanted = [key for key in wanted if readable[key.topic]]
    coordinator = ctx.services.group_coordinator
    offsets: Iterable[PartitionOffset] = ()
    if denied and not wanted:  # nothing the client may read: the coordinator is not asked
        error = ErrorCode.none
    else:
        error, offsets = coordinator.fetch_offsets(group_id, wanted)
    if error != ErrorCode.none:
        return _offset_fetch_error(module, version, error, wanted)
    if wanted is None:  # every topic of the group: only those the client may read
        offsets = [o for o in offsets if ctx.allowed(_READ, _TOPIC, o.topic)]
    unstable = (coordinator.unstable_offsets(group_id)
                if getattr(request, "require_stable", False) else set())
    return build_response(
        module.OffsetFetchResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        topics=_fetch_topics(module, offsets, error, unstable)
        + _fetch_topics(module, denied, _TOPIC_DENIED),
    )


def _offset_fetch_error(module: ModuleType, version: int, error: ErrorCode,
                        wanted: list[TopicPartition] | None) -> ResponsePayload:
    """A group-level failure: top-level from v2, on each requested partition in v1."""
    if version >= 2:
        return build_response(module.OffsetFetchResponse, throttle_time=NO_THROTTLE,
                              error_code=error, topics=())
    offsets = [PartitionOffset(topic, index) for topic, index in wanted or ()]
    return build_response(module.OffsetFetchResponse, throttle_time=NO_THROTTLE,
                          error_code=ErrorCode.none, topics=_fetch_topics(module, offsets, error))


def _fetch_topics(module: ModuleType, offsets: Iterable[PartitionOffset], error: ErrorCode,
                  unstable: set[TopicPartition] | frozenset[TopicPartition] = frozenset()
                  ) -> tuple[object, ...]:
    by_topic: dict[str, list[object]] = {}
    for offset in offsets:
        pending = TopicPartition(offset.topic, offset.partition) in unstable
        by_topic.setdefault(offset.topic, []).append(
            build(
                module.OffsetFetchResponsePartition,
                partition_index=offset.partition,
                committed_offset=-1 if pending else offset.offset,
                committed_leader_epoch=offset.leader_epoch,
                metadata=offset.metadata,
                error_code=ErrorCode.unstable_offset_commit if pending else error,
            )
        )
    return tuple(
        build(module.OffsetFetchResponseTopic, name=name, partitions=tuple(partitions))
        for name, partitions in by_topic.items()
    )


async def handle_offset_delete(
    ctx: RequestContext, request: OffsetDeleteRequest
) -> ResponsePayload:
    partitions = [
        TopicPartition(topic.name, int(p.partition_index))
        for topic in request.topics
        for p in topic.partitions
    ]
    group_id = str(request.group_id)
    errors: dict[TopicPartition, ErrorCode] = {}
    if not ctx.authorize(Operation.DELETE, _GROUP, group_id):
        top = _GROUP_DENIED
    else:
        readable = {topic: ctx.authorize(_READ, _TOPIC, topic)
                    for topic in dict.fromkeys(key.topic for key in partitions)}
        top, errors = await ctx.services.group_coordinator.delete_offsets(
            group_id, [key for key in partitions if readable[key.topic]])
        errors = {**errors, **{key: _TOPIC_DENIED for key in partitions
                               if not readable[key.topic]}}
    module = response_module(ApiKey.OFFSET_DELETE, ctx.api_version)
    by_topic: dict[str, list[object]] = {}
    if top == ErrorCode.none:
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(
                build(module.OffsetDeleteResponsePartition, partition_index=index,
                      error_code=errors.get(TopicPartition(topic, index), ErrorCode.none))
            )
    return build_response(
        module.OffsetDeleteResponse,
        error_code=top,
        throttle_time=NO_THROTTLE,
        topics=tuple(
            build(module.OffsetDeleteResponseTopic, name=name, partitions=tuple(parts))
            for name, parts in by_topic.items()
        ),
    )
