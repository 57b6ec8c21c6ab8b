"""Broker readiness for Kubernetes: registered, and caught up on everything it replicates.

A broker pod is Ready when (1) the broker answers on its listener, (2) it is registered in
ZooKeeper — it appears among the live brokers its own Metadata response lists, which the broker
builds from ``/brokers/ids`` — and (3) it is caught up: it is in the ISR of every partition
that lists it as a replica and has a live leader. A partition without a leader is not held
against the broker: no replica can catch up to a leader that is not there, and refusing
readiness would only stop the StatefulSet from bringing the partition back.

This is what makes a rolling restart safe: the StatefulSet moves to the next pod only once
this one is back in every ISR, so restarting one pod at a time never drops a partition below
its replication factor for longer than one restart. It costs one Metadata round trip to the
local broker, cheap enough for an exec probe every few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
from collections.abc import Mapping
from typing import Any

from odradek.client.admin import AsyncAdminClient
from odradek.client.metadata import ClusterMetadata

__all__ = ["BrokerNotReady", "broker_id_from_environment", "check_broker_ready",
           "readiness_problems"]

_ORDINAL = re.compile(r"-(\d+)$")


class BrokerNotReady(Exception):
    """The broker is not (yet) fit to serve: the message says why, in one line."""


def broker_id_from_environment(environ: dict[str, str] | None = None) -> int:
    """``BROKER_ID``, else the StatefulSet ordinal at the end of ``HOSTNAME`` (``odradek-2`` → 2).

    The same rule as ``broker-image/entrypoint.sh``, so an exec probe (which does not see the
    entrypoint's variables) checks the broker the entrypoint started.
    """
    env = os.environ if environ is None else environ
    if env.get("BROKER_ID", "").strip():
        value = env["BROKER_ID"].strip()
        if not value.isdigit():
            raise ValueError(f"BROKER_ID must be a non-negative integer, got {value!r}")
        return int(value)
    hostname = env.get("HOSTNAME") or (socket.gethostname() if environ is None else "")
    match = _ORDINAL.search(hostname)
    if match is None:
        raise ValueError(f"cannot derive the broker id from HOSTNAME={hostname!r}; set BROKER_ID")
    return int(match.group(1))


def readiness_problems(broker_id: int, metadata: ClusterMetadata, *, limit: int = 5) -> list[str]:
    """Why ``broker_id`` is not ready according to ``metadata`` (empty when it is ready).

    At most ``limit`` lagging partitions are named, plus a count of the rest, so the probe's
    message stays one readable line on a broker with thousands of partitions.
    """
    if broker_id not in metadata.brokers:
        return [f"broker {broker_id} is not registered (live brokers: "
                f"{sorted(metadata.brokers) or 'none'})"]
    lagging = sorted(
        f"{part.topic}-{part.partition}"
        for topic in metadata.topics.values()
        for part in topic.partitions.values()
        if broker_id in part.replicas and part.leader >= 0 and broker_id not in part.isr
    )
    if not lagging:
        return []
    shown = ", ".join(lagging[:limit])
    more = f" and {len(lagging) - limit} more" if len(lagging) > limit else ""
    return [f"broker {broker_id} is not in the ISR of {len(lagging)} partition(s): {shown}{more}"]


async def check_broker_ready(bootstrap: str, broker_id: int, timeout: float,
                             security: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`BrokerNotReady` unless the broker at ``bootstrap`` is ready.
    ``security``: the client's settings for a TLS/SASL listener (kafka-python's names)."""
    admin = AsyncAdminClient(bootstrap, client_id="odradek-readiness",
                             request_timeout_ms=max(1, int(timeout * 1000)),
                             **dict(security or {}))
    try:
        metadata = await asyncio.wait_for(admin.describe_cluster(), timeout)
    except Exception as exc:  # refused, timed out, protocol error: all mean "not ready"
        raise BrokerNotReady(f"broker at {bootstrap} did not answer Metadata: "
                             f"{type(exc).__name__}: {exc}") from None
    finally:
        # Closing a half-open client must not mask the verdict.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(admin.close(), 1.0)
    problems = readiness_problems(broker_id, metadata)
    if problems:
        raise BrokerNotReady("; ".join(problems))
