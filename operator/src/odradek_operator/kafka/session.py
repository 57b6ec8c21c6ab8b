"""Opening an admin session to a cluster, with every failure typed for the handlers.

A cluster that does not answer (pods starting, Service without endpoints, DNS not there yet)
is :class:`~..errors.ClusterUnreachable`: temporary, retried with backoff, reported as a
condition. A broker that answers with an error the operator cannot fix by waiting surfaces as
:class:`~..errors.PermanentReconcileError` from the handler that knows what it asked.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from odradek.client.admin import AsyncAdminClient
from odradek.client.errors import AuthenticationError, ConnectionFailed, KafkaClientError

from ..errors import ClusterUnreachable

__all__ = ["CONNECT_TIMEOUT_S", "REQUEST_TIMEOUT_MS", "AuthenticationFailed", "admin_session"]


class AuthenticationFailed(ClusterUnreachable):
    """The brokers answer but refuse the operator's TLS handshake or SASL login: a wrong or
    rotated credentials Secret, or a CA that does not match. Retried like an unreachable
    cluster (fixing the Secret fixes it), reported under its own reason."""

    reason = "AuthenticationFailed"

CONNECT_TIMEOUT_S = 15.0
REQUEST_TIMEOUT_MS = 20_000


def _refused(exc: BaseException) -> bool:
    """A failed SASL login, or a TLS handshake that failed (the client wraps it)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, AuthenticationError | ssl.SSLError):
            return True
        seen = seen.__cause__
    return False


@asynccontextmanager
async def admin_session(bootstrap_servers: str, *, delay: float = 10.0,
                        security: Mapping[str, Any] | None = None
                        ) -> AsyncIterator[AsyncAdminClient]:
    """An admin client that has reached the cluster once; ClusterUnreachable otherwise.

    ``security``: the client's TLS/SASL settings (:class:`..kafka.access.ClusterAccess`);
    a refused login or certificate is :class:`AuthenticationFailed`. Connection failures
    *during* the session are re-raised as ClusterUnreachable too, so a broker that dies
    mid-reconcile is one more retry, not a crash."""
    admin = AsyncAdminClient(bootstrap_servers, client_id="odradek-operator",
                             request_timeout_ms=REQUEST_TIMEOUT_MS, **dict(security or {}))
    try:
        try:
            await asyncio.wait_for(admin.describe_cluster(), CONNECT_TIMEOUT_S)
        except (TimeoutError, KafkaClientError, OSError, ValueError) as exc:
            if _refused(exc):
                raise AuthenticationFailed(f"the Kafka cluster at {bootstrap_servers} refused "
                                           f"the operator: {exc or type(exc).__name__}",
                                           delay=delay) from exc
            raise ClusterUnreachable(f"cannot reach the Kafka cluster at {bootstrap_servers}: "
                                     f"{exc or type(exc).__name__}", delay=delay) from exc
        try:
            yield admin
        except (TimeoutError, OSError, ConnectionFailed) as exc:
            raise ClusterUnreachable(f"lost the Kafka cluster at {bootstrap_servers}: "
                                     f"{exc or type(exc).__name__}", delay=delay) from exc
    finally:
        await admin.close()
