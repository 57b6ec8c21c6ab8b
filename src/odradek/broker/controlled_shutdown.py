"""The broker's side of controlled shutdown (``controlled.shutdown.enable``).

Before a broker stops serving it asks the controller (ControlledShutdown v3, with its
broker epoch so a request from an earlier incarnation cannot fence a restarted broker) to
move every leadership it holds to another in-sync replica and to drop it from every ISR.
Clients then meet NOT_LEADER_OR_FOLLOWER on this broker, refresh metadata and carry on with
the new leaders while we still answer — instead of timing out against a dead socket and
waiting for ZooKeeper to expire our session. Like Kafka, the request is retried
``controlled.shutdown.max.retries`` times, ``controlled.shutdown.retry.backoff.ms`` apart,
while partitions remain (or the controller moves); after that the broker stops anyway.

When this broker is the controller it answers its own request directly; it resigns later,
when the cluster session closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from typing import TYPE_CHECKING, cast

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.primitive import i32, i64

from odradek.client.errors import KafkaClientError
from odradek.client.security import PLAINTEXT, ClientSecurity, open_stream
from odradek.cluster.model import TopicPartition
from odradek.protocol.api_versions import ApiKey
from odradek.protocol.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
)
from odradek.protocol.messages import decode_response, encode_request

from .inter_broker import inter_broker_endpoint

if TYPE_CHECKING:
    from odradek.cluster.view import ClusterSnapshot

    from .cluster_facade import ClusterFacade

__all__ = ["ControlledShutdownFailed", "request_controlled_shutdown"]

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_VERSION = 3


class ControlledShutdownFailed(Exception):
    """One attempt did not get every leadership moved (the message says why)."""


async def request_controlled_shutdown(
    cluster: ClusterFacade,
    broker_id: int,
    listener: str,
    *,
    max_retries: int,
    backoff_s: float,
    timeout_s: float,
    security: ClientSecurity = PLAINTEXT,
) -> bool:
    """Run the protocol; True once the controller reports no partition left on us."""
    attempts = max(1, max_retries)
    for attempt in range(1, attempts + 1):
        try:
            remaining = await asyncio.wait_for(
                _ask_controller(cluster, broker_id, listener, security), timeout_s
            )
            if not remaining:
                await _wait_until_not_leading(cluster, broker_id, timeout_s)
                log.info("controlled shutdown of broker %d succeeded", broker_id)
                return True
            log.info(
                "controlled shutdown attempt %d/%d: still leading %s",
                attempt, attempts, [str(tp) for tp in remaining],
            )
        except (OSError, TimeoutError, ControlledShutdownFailed, KafkaClientError) as exc:
            log.warning("controlled shutdown attempt %d/%d failed: %s", attempt, attempts, exc)
        if attempt < attempts:
            await asyncio.sleep(backoff_s)  # Kafka's retry backoff, not a synchronisation
    log.warning("controlled shutdown of broker %d did not complete; stopping anyway", broker_id)
    return False


async def _ask_controller(cluster: ClusterFacade, broker_id: int, listener: str,
                          security: ClientSecurity) -> list[TopicPartition]:
    view = cluster.view
    controller_id = view.controller_id
    broker_epoch = cluster.broker_epoch if cluster.broker_epoch is not None else -1
    if controller_id is None:
        raise ControlledShutdownFailed("no controller")
    if controller_id == broker_id and cluster.is_controller:
        result: list[TopicPartition] = await cluster.controller.controlled_shutdown(
            broker_id, broker_epoch
        )
        return result
    info = view.brokers.get(controller_id)
    if info is None:
        raise ControlledShutdownFailed(f"controller {controller_id} is not registered")
    host, port = inter_broker_endpoint(info, listener)
    request = ControlledShutdownRequest(
        broker_id=BrokerId(i32(broker_id)), broker_epoch=i64(broker_epoch)
    )
    stream = await open_stream(host, port, security, f"broker-{broker_id}")
    reader, writer = stream.reader, stream.writer
    try:
        writer.write(encode_request(request, correlation_id=1, client_id=f"broker-{broker_id}"))
        await writer.drain()
        (size,) = _SIZE.unpack(await reader.readexactly(4))
        frame = await reader.readexactly(size)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    _, decoded = decode_response(frame, ApiKey.CONTROLLED_SHUTDOWN, _VERSION)
    response = cast(ControlledShutdownResponse, decoded)  # v3's only class: our own codec
    code = ErrorCode(response.error_code)
    if code != ErrorCode.none:
        raise ControlledShutdownFailed(f"controller {controller_id} answered {code.name}")
    return [
        TopicPartition(str(p.topic_name), int(p.partition_index))
        for p in response.remaining_partitions
    ]


async def _wait_until_not_leading(
    cluster: ClusterFacade, broker_id: int, timeout_s: float
) -> None:
    """Until our own view (and so our replica manager) shows the moved leaderships."""

    def moved(snapshot: ClusterSnapshot) -> bool:
        return not any(
            state.leader == broker_id and len(state.replicas) > 1
            for topic in snapshot.topics.values()
            for state in topic.partitions.values()
        )

    with contextlib.suppress(TimeoutError):
        await cluster.view.wait_for(moved, timeout_s)
