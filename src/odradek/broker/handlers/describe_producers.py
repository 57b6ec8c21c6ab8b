"""DescribeProducers (v0): the active producers of partitions this broker holds.

Why: Kafka's admin (``kafka-transactions describe-producers``, ``find-hanging``, ``abort``)
finds transactions that hold a partition's last stable offset back by asking the leader for
its producer state: per producer id its epoch, last sequence and timestamp, the epoch of the
coordinator that wrote its last marker, and the first offset of its open transaction. A
transaction whose producer is gone and whose coordinator never wrote markers is visible
only here. The answer is read from the partition log's producer state as it is (no copy,
no lock: entries are replaced whole by the append path on the same event loop).

Any replica answers, leader or follower: the producer state is rebuilt from the log on each
replica, and ``find-hanging --broker-id N`` asks one broker about every partition it holds.
Per partition: a broker with no replica of it answers NOT_LEADER_OR_FOLLOWER, an unknown
partition UNKNOWN_TOPIC_OR_PARTITION, a topic the client may not READ
TOPIC_AUTHORIZATION_FAILED, as Kafka does.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.protocol.errors import TopicAuthorizationFailed, response_error
from odradek.security.acl import Operation, ResourceType
from odradek.storage.producer_state import ProducerStateManager

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import DescribeProducersRequest

__all__ = ["handle_describe_producers"]


def _active_producers(module: ModuleType, state: ProducerStateManager) -> tuple[object, ...]:
    return tuple(
        build(module.ProducerState, producer_id=entry.producer_id,
              producer_epoch=entry.epoch, last_sequence=entry.last_seq,
              last_timestamp=entry.last_timestamp,
              coordinator_epoch=entry.coordinator_epoch,
              current_txn_start_offset=entry.current_txn_first_offset)
        for entry in list(state.producers.values())
    )


def handle_describe_producers(
    ctx: RequestContext, request: DescribeProducersRequest
) -> ResponsePayload:
    module = response_module(ApiKey.DESCRIBE_PRODUCERS, ctx.api_version)
    replica_manager = ctx.services.replica_manager
    topics = []
    for topic in request.topics:
        partitions = []
        allowed = ctx.authorize(Operation.READ, ResourceType.TOPIC, topic.name)
        for index in topic.partition_indexes:
            producers: tuple[object, ...] = ()
            message: str | None = None
            try:
                if not allowed:
                    raise TopicAuthorizationFailed
                found = replica_manager.hosted_partition(str(topic.name), int(index))
                producers = _active_producers(module, found.log.producer_state)
                code = ErrorCode.none
            except Exception as exc:
                code, message = response_error(exc, f"describe producers of {topic.name}-{index}")
            partitions.append(build(module.PartitionResponse, partition_index=int(index),
                                    error_code=code, error_message=message,
                                    active_producers=producers))
        topics.append(build(module.TopicResponse, name=topic.name,
                            partitions=tuple(partitions)))
    return build_response(module.DescribeProducersResponse, throttle_time=NO_THROTTLE,
                          topics=tuple(topics))
