"""InitProducerId (v0-v4).

Without a transactional id Kafka always hands out a fresh producer id at epoch 0 (also
when the client asks to bump the epoch of an old one); we do the same. With one, the
transaction coordinator answers (:mod:`odradek.broker.handlers.transactions`).

Authorization (Kafka's): with a transactional id, WRITE on it (else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without, IDEMPOTENT_WRITE on the cluster or WRITE
on some topic (else CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build_response, response_module
from odradek.security.acl import CLUSTER_NAME, Operation, ResourceType

from ..context import RequestContext
from .transactions import init_transactional_producer_id

if TYPE_CHECKING:
    from odradek.protocol.api_types import InitProducerIdRequest

__all__ = ["handle_init_producer_id"]

log = logging.getLogger(__name__)


async def handle_init_producer_id(
    ctx: RequestContext, request: InitProducerIdRequest
) -> ResponsePayload:
    module = response_module(ApiKey.INIT_PRODUCER_ID, ctx.api_version)
    if request.transactional_id is not None:
        if not ctx.authorize(Operation.WRITE, ResourceType.TRANSACTIONAL_ID,
                             request.transactional_id):
            return build_response(module.InitProducerIdResponse, throttle_time=NO_THROTTLE,
                                  error_code=ErrorCode.transactional_id_authorization_failed,
                                  producer_id=-1, producer_epoch=-1)
        return await init_transactional_producer_id(ctx, request)
    if not ctx.allowed(Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME) and \
            not ctx.allowed_any(Operation.WRITE, ResourceType.TOPIC):
        ctx.authorize(Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME)  # logged
        return build_response(module.InitProducerIdResponse, throttle_time=NO_THROTTLE,
                              error_code=ErrorCode.cluster_authorization_failed,
                              producer_id=-1, producer_epoch=-1)
    try:
        producer_id = await ctx.services.producer_ids.next_id()
    except Exception:
        log.exception("could not allocate a producer id block")
        return build_response(module.InitProducerIdResponse, throttle_time=NO_THROTTLE,
                              error_code=ErrorCode.coordinator_not_available,
                              producer_id=-1, producer_epoch=-1)
    return build_response(module.InitProducerIdResponse, throttle_time=NO_THROTTLE,
                          error_code=ErrorCode.none, producer_id=producer_id, producer_epoch=0)
