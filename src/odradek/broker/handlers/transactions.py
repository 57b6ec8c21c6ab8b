"""Transactional producer requests: InitProducerId (with a transactional id),
AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn (v0-v3 each),
DescribeTransactions and ListTransactions.

The rules are the transaction coordinator's (:mod:`odradek.coordinator.txn_coordinator`,
decisions in :mod:`odradek.coordinator.txn_state`); these handlers decode, call and
encode. A broker that does not coordinate the id answers NOT_COORDINATOR, and clients look
the coordinator up again (FindCoordinator with key type 1). AddPartitionsToTxn v4+ (the
broker-to-broker batch form of KIP-890) is not offered.

Authorization (Kafka's): WRITE on the transactional id (else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED); AddOffsetsToTxn and TxnOffsetCommit also READ on
the group (GROUP_AUTHORIZATION_FAILED); AddPartitionsToTxn WRITE on each topic and
TxnOffsetCommit READ (a denied topic is TOPIC_AUTHORIZATION_FAILED; AddPartitionsToTxn then
adds nothing and answers the others OPERATION_NOT_ATTEMPTED). DescribeTransactions needs
DESCRIBE on each id; ListTransactions lists only the ids the client may DESCRIBE.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.coordinator.offsets import OffsetCommitEntry
from odradek.coordinator.partitioning import CONSUMER_OFFSETS_TOPIC, partition_for_group
from odradek.coordinator.txn_shard import kafka_state_name
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, millis, response_module
from odradek.security.acl import Operation, ResourceType
from odradek.types import TopicPartition

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import (
        AddOffsetsToTxnRequest,
        AddPartitionsToTxnRequest,
        DescribeTransactionsRequest,
        EndTxnRequest,
        InitProducerIdRequest,
        ListTransactionsRequest,
        TxnOffsetCommitRequest,
    )

__all__ = [
    "handle_add_offsets_to_txn",
    "handle_add_partitions_to_txn",
    "handle_describe_transactions",
    "handle_end_txn",
    "handle_list_transactions",
    "handle_txn_offset_commit",
    "init_transactional_producer_id",
]


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _wire_time(millis_since_epoch: int) -> datetime.datetime:
    """A non-nullable kio timestamp; Kafka sends -1 for "no transaction started"."""
    return _EPOCH + datetime.timedelta(milliseconds=millis_since_epoch)


_TXN_DENIED = ErrorCode.transactional_id_authorization_failed


def _refused(ctx: RequestContext, transactional_id: str, group_id: str | None = None
             ) -> ErrorCode | None:
    """The error of a request whose transactional id (then group) the client may not use."""
    if not ctx.authorize(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return _TXN_DENIED
    if group_id is not None and not ctx.authorize(Operation.READ, ResourceType.GROUP,
                                                  group_id):
        return ErrorCode.group_authorization_failed
    return None


async def init_transactional_producer_id(
    ctx: RequestContext, request: InitProducerIdRequest
) -> ResponsePayload:
    """InitProducerId for ``request.transactional_id`` (called by the InitProducerId
    handler, which serves the idempotent case itself)."""
    module = response_module(ApiKey.INIT_PRODUCER_ID, ctx.api_version)
    pid = int(getattr(request, "producer_id", -1))
    epoch = int(getattr(request, "producer_epoch", -1))
    if not request.transactional_id:  # Kafka: an empty id is a malformed request
        result_error, result_pid, result_epoch = ErrorCode.invalid_request, -1, -1
    else:
        result = await ctx.services.transaction_coordinator.init_producer_id(
            str(request.transactional_id), millis(request.transaction_timeout),
            expected=(pid, epoch) if pid >= 0 else None,
        )
        result_error, result_pid, result_epoch = (result.error, result.producer_id,
                                                  result.producer_epoch)
    return build_response(module.InitProducerIdResponse, throttle_time=NO_THROTTLE,
                          error_code=result_error, producer_id=result_pid,
                          producer_epoch=result_epoch)


async def handle_add_partitions_to_txn(
    ctx: RequestContext, request: AddPartitionsToTxnRequest
) -> ResponsePayload:
    module = response_module(ApiKey.ADD_PARTITIONS_TO_TXN, ctx.api_version)
    wanted = [TopicPartition(str(topic.name), int(partition))
              for topic in request.v3_and_below_topics for partition in topic.partitions]
    view = ctx.services.cluster.view
    refused = _refused(ctx, str(request.v3_and_below_transactional_id))
    writable = {} if refused is not None else {
        topic: ctx.authorize(Operation.WRITE, ResourceType.TOPIC, topic)
        for topic in dict.fromkeys(key.topic for key in wanted)}
    denied = [key for key in wanted if not writable.get(key.topic, True)]
    unknown = [key for key in wanted if key.topic not in view.topics
               or key.partition not in view.topics[key.topic].partitions]
    failed: list[TopicPartition] = []  # when only some failed: the others were not attempted
    if refused is not None:
        error = refused
    elif denied:
        error, failed = ErrorCode.topic_authorization_failed, denied
    elif unknown:
        error, failed = ErrorCode.unknown_topic_or_partition, unknown
    else:
        error = await ctx.services.transaction_coordinator.add_partitions(
            str(request.v3_and_below_transactional_id),
            int(request.v3_and_below_producer_id), int(request.v3_and_below_producer_epoch),
            wanted,
        )
    by_topic: dict[str, list[object]] = {}
    for key in wanted:
        # Kafka answers the partitions that were fine OPERATION_NOT_ATTEMPTED when others
        # were unknown or denied, so the client knows which to fix.
        code = error
        if failed and key not in failed:
            code = ErrorCode.operation_not_attempted
        by_topic.setdefault(key.topic, []).append(
            build(module.AddPartitionsToTxnPartitionResult, partition_index=key.partition,
                  partition_error_code=code))
    return build_response(
        module.AddPartitionsToTxnResponse, throttle_time=NO_THROTTLE,
        results_by_topic_v3_and_below=tuple(
            build(module.AddPartitionsToTxnTopicResult, name=topic,
                  results_by_partition=tuple(parts))
            for topic, parts in by_topic.items()
        ),
    )


async def handle_end_txn(ctx: RequestContext, request: EndTxnRequest) -> ResponsePayload:
    module = response_module(ApiKey.END_TXN, ctx.api_version)
    refused = _refused(ctx, str(request.transactional_id))
    if refused is not None:
        error = refused
    else:
        error = await ctx.services.transaction_coordinator.end_txn(
            str(request.transactional_id), int(request.producer_id),
            int(request.producer_epoch), bool(request.committed))
    return build_response(module.EndTxnResponse, throttle_time=NO_THROTTLE, error_code=error)


def handle_describe_transactions(
    ctx: RequestContext, request: DescribeTransactionsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.DESCRIBE_TRANSACTIONS, ctx.api_version)
    coordinator = ctx.services.transaction_coordinator
    states = []
    for transactional_id in request.transactional_ids:
        if not ctx.authorize(Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                             str(transactional_id)):
            error, meta = _TXN_DENIED, None
        else:
            error, meta = coordinator.describe(str(transactional_id))
        by_topic: dict[str, list[int]] = {}
        for key in sorted(meta.partitions) if meta is not None else ():
            by_topic.setdefault(key.topic, []).append(key.partition)
        states.append(build(
            module.TransactionState, error_code=error, transactional_id=transactional_id,
            transaction_state=kafka_state_name(meta.status) if meta is not None else "",
            transaction_timeout=meta.timeout_ms if meta is not None else 0,
            transaction_start_time=_wire_time(meta.start_ms if meta is not None else -1),
            producer_id=meta.producer_id if meta is not None else -1,
            producer_epoch=meta.producer_epoch if meta is not None else -1,
            topics=tuple(build(module.TopicData, topic=topic, partitions=tuple(ids))
                         for topic, ids in by_topic.items()),
        ))
    return build_response(module.DescribeTransactionsResponse, throttle_time=NO_THROTTLE,
                          transaction_states=tuple(states))


def handle_list_transactions(
    ctx: RequestContext, request: ListTransactionsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.LIST_TRANSACTIONS, ctx.api_version)
    known = {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
             "CompleteAbort", "Dead", "PrepareEpochFence"}
    state_filters = [str(state) for state in request.state_filters]
    listed = list(ctx.services.transaction_coordinator.listing(
        [s for s in state_filters if s in known] if state_filters else [],
        [int(pid) for pid in request.producer_id_filters]))
    if state_filters and not any(s in known for s in state_filters):
        listed = []
    listed = [meta for meta in listed if ctx.allowed(
        Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, meta.transactional_id)]
    return build_response(
        module.ListTransactionsResponse, throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        unknown_state_filters=tuple(s for s in state_filters if s not in known),
        transaction_states=tuple(
            build(module.TransactionState, transactional_id=meta.transactional_id,
                  producer_id=meta.producer_id, transaction_state=kafka_state_name(meta.status))
            for meta in listed
        ),
    )


async def handle_add_offsets_to_txn(
    ctx: RequestContext, request: AddOffsetsToTxnRequest
) -> ResponsePayload:
    """The group's ``__consumer_offsets`` partition joins the transaction, so EndTxn's
    markers reach it and its pending TxnOffsetCommit offsets are installed or dropped."""
    module = response_module(ApiKey.ADD_OFFSETS_TO_TXN, ctx.api_version)
    refused = _refused(ctx, str(request.transactional_id), str(request.group_id))
    if refused is not None:
        error = refused
    else:
        partitions = ctx.services.sections.group_coordinator.offsets_topic_num_partitions
        offsets = TopicPartition(CONSUMER_OFFSETS_TOPIC,
                                 partition_for_group(str(request.group_id), partitions))
        error = await ctx.services.transaction_coordinator.add_partitions(
            str(request.transactional_id), int(request.producer_id),
            int(request.producer_epoch), [offsets])
    return build_response(module.AddOffsetsToTxnResponse,
                          throttle_time=NO_THROTTLE, error_code=error)


async def handle_txn_offset_commit(
    ctx: RequestContext, request: TxnOffsetCommitRequest
) -> ResponsePayload:
    """Offsets committed inside a transaction (the group coordinator answers)."""
    module = response_module(ApiKey.TXN_OFFSET_COMMIT, ctx.api_version)
    topics = ctx.services.cluster.view.topics
    errors: dict[TopicPartition, ErrorCode] = {}
    entries = []
    refused = _refused(ctx, str(request.transactional_id), str(request.group_id))
    for topic in request.topics:
        metadata = topics.get(topic.name)
        known = metadata.partitions if metadata is not None else {}
        denied = refused
        if denied is None and not ctx.authorize(Operation.READ, ResourceType.TOPIC,
                                                topic.name):
            denied = ErrorCode.topic_authorization_failed
        for partition in topic.partitions:
            index = int(partition.partition_index)
            if denied is not None:
                errors[TopicPartition(topic.name, index)] = denied
                continue
            if index not in known:
                errors[TopicPartition(topic.name, index)] = ErrorCode.unknown_topic_or_partition
                continue
            entries.append(OffsetCommitEntry(
                topic.name, index, int(partition.committed_offset),
                int(getattr(partition, "committed_leader_epoch", -1)),
                partition.committed_metadata,
            ))
    if entries:
        errors.update(await ctx.services.group_coordinator.commit_txn_offsets(
            str(request.group_id), (int(request.producer_id), int(request.producer_epoch)),
            str(getattr(request, "member_id", "")), getattr(request, "group_instance_id", None),
            int(getattr(request, "generation_id", -1)), entries,
        ))
    by_topic: dict[str, list[object]] = {}
    for key, error in errors.items():
        by_topic.setdefault(key.topic, []).append(
            build(module.TxnOffsetCommitResponsePartition, partition_index=key.partition,
                  error_code=error))
    return build_response(module.TxnOffsetCommitResponse, throttle_time=NO_THROTTLE, topics=tuple(
        build(module.TxnOffsetCommitResponseTopic, name=name, partitions=tuple(parts))
        for name, parts in by_topic.items()))
