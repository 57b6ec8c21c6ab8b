"""Committed offsets: OffsetCommit (v2-v9), OffsetFetch (v1-v10), OffsetDelete (v0).

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
  v8 asks for several groups at once, each answered with its own error. v9 adds the member
  id and epoch of a KIP-848 member: against a consumer-type group the member must exist
  (UNKNOWN_MEMBER_ID) with that very epoch (STALE_MEMBER_EPOCH); a request with neither (an
  admin's) reads freely, and classic groups ignore both, as in Kafka. v10 names topics by
  id in the request and the answer: an id the cluster does not know is UNKNOWN_TOPIC_ID,
  and an all-topics answer leaves out topics deleted since their commit (no id names them).

Authorization (Kafka's): OffsetCommit and OffsetFetch need READ on the group (else every
partition, or from OffsetFetch v2 the whole answer, is GROUP_AUTHORIZATION_FAILED) and READ
on each topic (else its partitions are TOPIC_AUTHORIZATION_FAILED); an OffsetFetch of all
the group's topics lists only those the client may READ. OffsetDelete needs DELETE on the
group and READ on each topic.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, cast

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.clock import wall_ms
from odradek.coordinator import OffsetCommitEntry, PartitionOffset
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, millis, response_module
from odradek.protocol.errors import KafkaError
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
_FIRST_BATCHED_FETCH_VERSION = 8  # OffsetFetch: several groups per request
_FIRST_TOPIC_ID_FETCH_VERSION = 10
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
    module = response_module(ApiKey.OFFSET_FETCH, version)
    require_stable = bool(getattr(request, "require_stable", False))
    if version >= _FIRST_BATCHED_FETCH_VERSION:
        return _batched_offset_fetch(ctx, module, request, require_stable)
    wanted: list[TopicPartition] | None = None
    if request.topics is not None or version < 2:  # type: ignore[union-attr]  # v1-v7
        wanted = [
            TopicPartition(topic.name, int(index))
            for topic in request.topics or ()  # type: ignore[union-attr]
            for index in topic.partition_indexes
        ]
    error, answers = _fetch_group(ctx, str(request.group_id),  # type: ignore[union-attr]
                                  wanted, require_stable)
    if error == ErrorCode.none:
        topics = _fetch_topics(module, "OffsetFetchResponseTopic", answers)
    elif version >= 2:  # a group-level failure: top-level from v2, with no partitions
        topics = ()
    else:  # v1 has no top-level error: it is repeated on each requested partition
        topics = _fetch_topics(module, "OffsetFetchResponseTopic",
                               [(tp.topic, PartitionOffset(*tp), error) for tp in wanted or ()])
        error = ErrorCode.none
    return build_response(module.OffsetFetchResponse, throttle_time=NO_THROTTLE,
                          error_code=error, topics=topics)


def _batched_offset_fetch(ctx: RequestContext, module: ModuleType, request: OffsetFetchRequest,
                          require_stable: bool) -> ResponsePayload:
    """v8+: one answer per group, each with its own error. v9 adds the member id and epoch
    (checked against a consumer-type group); v10 names topics by id, both ways."""
    by_id = ctx.api_version >= _FIRST_TOPIC_ID_FETCH_VERSION
    topics = ctx.services.cluster.view.topics
    names_by_id = {metadata.topic_id: name for name, metadata in topics.items()}
    groups = []
    for group in request.groups:  # type: ignore[union-attr]  # v8+
        wanted: list[TopicPartition] | None = None
        unknown: list[_Answer] = []
        if group.topics is not None:
            wanted = []
            for topic in group.topics:
                # mypy does not narrow the kio union by version: v10 has ids, v8-v9 names
                topic_id: uuid.UUID = topic.topic_id if by_id else None  # type: ignore[union-attr,assignment]
                name = names_by_id.get(topic_id) if by_id else topic.name  # type: ignore[union-attr]
                for index in topic.partition_indexes:
                    if name is None:
                        unknown.append((topic_id, PartitionOffset("", int(index)),
                                        ErrorCode.unknown_topic_id))
                    else:
                        wanted.append(TopicPartition(name, int(index)))
        error, fetched = _fetch_group(ctx, str(group.group_id), wanted, require_stable,
                                      getattr(group, "member_id", None),
                                      int(getattr(group, "member_epoch", -1)))
        answers: list[_Answer] = [*fetched, *unknown]
        if by_id:
            # A topic deleted since its offsets were committed has no id left to name it by.
            answers = [(topics[name].topic_id, offset, code)
                       for name, offset, code in fetched if name in topics] + unknown
        groups.append(build(
            module.OffsetFetchResponseGroup, group_id=group.group_id, error_code=error,
            topics=_fetch_topics(module, "OffsetFetchResponseTopics", answers)
            if error == ErrorCode.none else ()))
    return build_response(module.OffsetFetchResponse, throttle_time=NO_THROTTLE,
                          groups=tuple(groups))


# (how the response names the topic: its name, or its id from v10; offset; partition error)
_Answer = tuple[str | uuid.UUID, PartitionOffset, ErrorCode]
_Fetched = tuple[str, PartitionOffset, ErrorCode]


def _fetch_group(ctx: RequestContext, group_id: str, wanted: list[TopicPartition] | None,
                 require_stable: bool, member_id: str | None = None,
                 member_epoch: int = -1) -> tuple[ErrorCode, list[_Fetched]]:
    """One group's committed offsets (``wanted`` None: all of them), each with its error:
    topics the client may not READ are TOPIC_AUTHORIZATION_FAILED (and left out of an
    all-topics answer), a pending transactional commit UNSTABLE_OFFSET_COMMIT; or the
    group-level error."""
    if not ctx.authorize(_READ, _GROUP, group_id):
        return _GROUP_DENIED, []
    coordinator = ctx.services.group_coordinator
    _, consumer_group = coordinator.describe_consumer_group(group_id)
    if consumer_group is not None:
        try:
            consumer_group.validate_offset_fetch(member_id, member_epoch)
        except KafkaError as exc:
            return exc.code, []
    denied: list[_Fetched] = []
    if wanted is not None:
        readable: dict[str, bool] = {}
        for key in wanted:
            if key.topic not in readable:
                readable[key.topic] = ctx.authorize(_READ, _TOPIC, key.topic)
            if not readable[key.topic]:
                denied.append((key.topic, PartitionOffset(*key), _TOPIC_DENIED))
        wanted = [key for key in wanted if readable[key.topic]]
        if not wanted:  # nothing the client may read: the coordinator is not asked
            return ErrorCode.none, denied
    error, offsets = coordinator.fetch_offsets(group_id, wanted)
    if error != ErrorCode.none:
        return error, []
    if wanted is None:  # every topic of the group: only those the client may read
        offsets = [o for o in offsets if ctx.allowed(_READ, _TOPIC, o.topic)]
    unstable = coordinator.unstable_offsets(group_id) if require_stable else set()
    answers: list[_Fetched] = []
    for offset in offsets:
        if TopicPartition(offset.topic, offset.partition) in unstable:
            answers.append((offset.topic, PartitionOffset(offset.topic, offset.partition),
                            ErrorCode.unstable_offset_commit))
        else:
            answers.append((offset.topic, offset, ErrorCode.none))
    return ErrorCode.none, answers + denied


def _fetch_topics(module: ModuleType, topic_class: str,
                  answers: Iterable[_Answer]) -> tuple[object, ...]:
    """The response's topics (``topic_class``: v8 renamed them), in the answers' order."""
    by_topic: dict[str | uuid.UUID, list[object]] = {}
    partition_class = getattr(module, topic_class.replace("Topic", "Partition"))
    for topic, offset, error in answers:
        by_topic.setdefault(topic, []).append(build(
            partition_class, partition_index=offset.partition,
            committed_offset=offset.offset, committed_leader_epoch=offset.leader_epoch,
            metadata=offset.metadata, error_code=error))
    return tuple(
        build(getattr(module, topic_class), partitions=tuple(partitions),
              **{"topic_id" if isinstance(topic, uuid.UUID) else "name": topic})
        for topic, partitions in by_topic.items()
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
