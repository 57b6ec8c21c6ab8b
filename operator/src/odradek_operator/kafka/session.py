"""Opening an admin session to a cluster, with every failure typed for the handlers.

A cluster that does not answer (pods starting, Service without endpoints, DNS not there yet)
is :class:`~..errors.ClusterUnreachable`: temporary, retried with backoff, reported as a
condition. A broker that answers with an error the operator cannot fix by waiting surfaces as
:class:`~..errors.PermanentReconcileError` from the handler that knows what it asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from odradek.client.admin import AsyncAdminClient
from odradek.client.errors import ConnectionFailed, KafkaClientError

from ..errors import ClusterUnreachable

__all__ = ["CONNECT_TIMEOUT_S", "REQUEST_TIMEOUT_MS", "admin_session"]

CONNECT_TIMEOUT_S = 15.0
REQUEST_TIMEOUT_MS = 20_000


@asynccontextmanager
async def admin_session(bootstrap_servers: str, *, delay: float = 10.0
                        ) -> AsyncIterator[AsyncAdminClient]:
    """An admin client that has reached the cluster once; ClusterUnreachable otherwise.

    Connection failures *during* the session are re-raised as ClusterUnreachable too, so a
    broker that dies mid-reconcile is one more retry, not a crash."""
    admin = AsyncAdminClient(bootstrap_servers, client_id="odradek-operator",
                             request_timeout_ms=REQUEST_TIMEOUT_MS)
    try:
        try:
            await asyncio.wait_for(admin.describe_cluster(), CONNECT_TIMEOUT_S)
        except (TimeoutError, KafkaClientError, OSError, ValueError) as exc:
            raise ClusterUnreachable(f"cannot reach the Kafka cluster at {bootstrap_servers}: "
                                     f"{exc or type(exc).__name__}", delay=delay) from exc
        try:
            yield admin
        except (TimeoutError, OSError, ConnectionFailed) as exc:
            raise ClusterUnreachable(f"lost the Kafka cluster at {bootstrap_servers}: "
                                     f"{exc or type(exc).__name__}", delay=delay) from exc
    finally:
        await admin.close()
