"""DescribeCluster (v0-v1) and DescribeLogDirs (v1-v4)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.protocol.errors import ClusterAuthorizationFailed
from odradek.security.acl import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_NAME,
    Operation,
    ResourceType,
)
from odradek.types import TopicPartition

from ..context import RequestContext
from .metadata import _endpoint_for

if TYPE_CHECKING:
    from odradek.protocol.api_types import DescribeClusterRequest, DescribeLogDirsRequest

__all__ = ["handle_describe_cluster", "handle_describe_log_dirs"]



def handle_describe_cluster(
    ctx: RequestContext, request: DescribeClusterRequest
) -> ResponsePayload:
    """Needs DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED, Kafka's rule)."""
    module = response_module(ApiKey.DESCRIBE_CLUSTER, ctx.api_version)
    if not ctx.authorize(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        refusal = ClusterAuthorizationFailed()
        return build_response(module.DescribeClusterResponse, throttle_time=NO_THROTTLE,
                              error_code=refusal.code, error_message=str(refusal),
                              endpoint_type=1, cluster_id="", controller_id=-1, brokers=(),
                              cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
    view = ctx.services.cluster.view
    brokers = []
    for broker_id in sorted(view.brokers):
        info = view.brokers[broker_id]
        host, port = _endpoint_for(info, ctx.listener)
        brokers.append(build(module.DescribeClusterBroker, broker_id=broker_id, host=host,
                             port=port, rack=info.rack))
    controller_id = view.controller_id
    if controller_id is None or controller_id not in view.brokers:
        controller_id = min(view.brokers) if view.brokers else -1
    return build_response(
        module.DescribeClusterResponse, throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
        error_message=None, endpoint_type=1, cluster_id=getattr(view, "cluster_id", None) or "",
        controller_id=controller_id, brokers=tuple(brokers),
        cluster_authorized_operations=ctx.authorized_operations(
            ResourceType.CLUSTER, CLUSTER_NAME)
        if request.include_cluster_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED,
    )


def handle_describe_log_dirs(
    ctx: RequestContext, request: DescribeLogDirsRequest
) -> ResponsePayload:
    """Needs DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED, with no results)."""
    module = response_module(ApiKey.DESCRIBE_LOG_DIRS, ctx.api_version)
    if not ctx.authorize(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return build_response(module.DescribeLogDirsResponse, throttle_time=NO_THROTTLE,
                              error_code=ErrorCode.cluster_authorization_failed, results=())
    wanted = None
    if request.topics is not None:
        wanted = [TopicPartition(t.topic, int(p)) for t in request.topics for p in t.partitions]
    results = []
    for log_dir, sizes in ctx.services.replica_manager.log_dir_sizes(wanted).items():
        by_topic: dict[str, list[object]] = {}
        for key, size in sizes.items():
            by_topic.setdefault(key.topic, []).append(
                build(module.DescribeLogDirsPartition, partition_index=key.partition,
                      partition_size=size, offset_lag=0, is_future_key=False)
            )
        try:
            stats = os.statvfs(log_dir)
            total, usable = stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize
        except OSError:
            total = usable = -1
        results.append(
            build(module.DescribeLogDirsResult, error_code=ErrorCode.none, log_dir=str(log_dir),
                  topics=tuple(build(module.DescribeLogDirsTopic, name=name,
                                     partitions=tuple(parts))
                               for name, parts in by_topic.items()),
                  total_bytes=total, usable_bytes=usable)
        )
    return build_response(module.DescribeLogDirsResponse, throttle_time=NO_THROTTLE,
                          error_code=ErrorCode.none, results=tuple(results))
