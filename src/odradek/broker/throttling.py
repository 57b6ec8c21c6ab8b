"""Enforcing client quotas on a connection, as Kafka does since KIP-219.

A request over quota is still served in full — produced data is appended, nothing is
rejected or lost — but its response carries ``throttle_time_ms`` and the broker then
*mutes* the connection: it reads nothing more from it until the throttle time has passed
(:class:`ChannelThrottle`, which the connection's reader waits on). Clients that know
KIP-219 also hold back on their own; others are held back by TCP once the socket buffers
fill.

What is recorded, one value per request (:func:`after_request`): a Produce request's size
against ``producer_byte_rate``, and the time its handler ran (in percent of one thread)
against ``request_percentage``. Fetch is the handler's (:mod:`.handlers.fetch`): the size
of the response against ``consumer_byte_rate``; a throttled Fetch is answered empty and its
bytes taken back, as Kafka does. (A Fetch over its *request* quota mutes the connection
too, but its response, encoded before the handler time is known, reports only the byte-rate
throttle.) Replica fetches (``replica_id >= 0``), SASL, and the broker-to-broker
ControlledShutdown and WriteTxnMarkers are exempt: quotas must never stall replication,
authentication or the completion of a transaction (Kafka exempts its cluster actions too).
Without any quota configured this costs one attribute test per request.

The principal (``User:<name>``) comes from the connection (``RequestContext.principal``);
the quota user is its name, as in Kafka.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
from typing import TYPE_CHECKING, Any

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.fetch_response import EncodedResponse, set_throttle
from odradek.quota import QuotaManager, QuotaType

from .outcomes import Marker, Response

if TYPE_CHECKING:
    from odradek.protocol.messages import RequestHeader

__all__ = ["EXEMPT_APIS", "ChannelThrottle", "after_request", "quota_user", "with_throttle"]

EXEMPT_APIS = frozenset({int(ApiKey.SASL_HANDSHAKE), int(ApiKey.SASL_AUTHENTICATE),
                         int(ApiKey.CONTROLLED_SHUTDOWN), int(ApiKey.WRITE_TXN_MARKERS)})
_PRODUCE, _FETCH = int(ApiKey.PRODUCE), int(ApiKey.FETCH)
_PRODUCE_QUOTA, _REQUEST_QUOTA = QuotaType.PRODUCE, QuotaType.REQUEST
_clock = time.perf_counter


def quota_user(principal: str) -> str:
    """The name quotas know a principal by: ``User:alice`` -> ``alice``."""
    kind, sep, name = principal.partition(":")
    return name if sep else kind


class ChannelThrottle:
    """One connection's mute: until when (``perf_counter`` seconds) it may not read."""

    __slots__ = ("muted_until",)

    def __init__(self) -> None:
        self.muted_until = 0.0

    def mute(self, throttle_ms: int) -> None:
        if throttle_ms > 0:
            until = _clock() + throttle_ms / 1000.0
            if until > self.muted_until:
                self.muted_until = until

    def remaining_s(self) -> float:
        return self.muted_until - _clock()


def after_request(
    quotas: QuotaManager, throttle: ChannelThrottle, principal: str, header: RequestHeader,
    body: Any, api_key: int, size: int, handler_seconds: float,
) -> int:
    """Record one handled request against the client's quotas; mute the connection for the
    throttle time, which is returned (0: within quota). ``body`` is the request of
    ``api_key``, whichever API that is (hence untyped), read as a Fetch when it is one."""
    if api_key in EXEMPT_APIS or (api_key == _FETCH and int(body.replica_id) >= 0):
        return 0
    user, client_id = quota_user(principal), header.client_id or ""
    throttle_ms = 0
    if api_key == _PRODUCE:
        throttle_ms = quotas.record(_PRODUCE_QUOTA, user, client_id, size)
    request_ms = quotas.record(_REQUEST_QUOTA, user, client_id, handler_seconds * 100)
    if request_ms > throttle_ms:
        throttle_ms = request_ms
    if throttle_ms:
        throttle.mute(throttle_ms)
    return throttle_ms


def with_throttle(outcome: Response | Marker, throttle_ms: int) -> Response | Marker:
    """A response body with ``throttle_time_ms`` raised to ``throttle_ms``; a frame the
    handler encoded itself gets it written in place (bodies without the field are returned
    as they are)."""
    if isinstance(outcome, EncodedResponse):
        set_throttle(outcome, throttle_ms)
        return outcome
    current = getattr(outcome, "throttle_time", None)
    if not isinstance(current, datetime.timedelta) or not dataclasses.is_dataclass(outcome):
        return outcome
    wanted = datetime.timedelta(milliseconds=throttle_ms)
    if current >= wanted:
        return outcome
    return dataclasses.replace(outcome, throttle_time=wanted)
