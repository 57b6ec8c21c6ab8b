"""Producer-id blocks, allocated cluster-wide through ``/latest_producer_id_block``.

Every broker hands out producer ids (InitProducerId) from a block it reserved. The znode
holds the most recently reserved block, as Kafka's ``ZkProducerIdManager`` writes it::

    {"version":1,"broker":2,"block_start":"1000","block_end":"1999"}

(start/end are strings so 64-bit values survive JSON readers). Reserving the next block
is a compare-and-set on the znode version: two brokers racing both read block N, only one
write of N+1 succeeds, the loser re-reads and takes N+2 — blocks never overlap.
"""

from __future__ import annotations

import contextlib

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from odradek.cluster import znodes
from odradek.cluster.zk import ZkSession

DEFAULT_BLOCK_SIZE = 1000
MAX_PRODUCER_ID = 2**63 - 1


class ProducerIdsExhausted(Exception):
    """The 64-bit producer id space is used up (never happens in practice)."""


def allocate_producer_id_block_sync(
    session: ZkSession, broker_id: int, block_size: int = DEFAULT_BLOCK_SIZE
) -> range:
    client = session.client
    path = znodes.PRODUCER_ID_BLOCK
    while True:
        try:
            data, stat = client.get(path)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                client.create(path, b"", makepath=True)
            continue
        start = znodes.decode_producer_id_block(data).stop if data else 0
        if start > MAX_PRODUCER_ID - block_size:
            raise ProducerIdsExhausted(f"no producer id block after {start - 1}")
        block = range(start, start + block_size)
        try:
            client.set(
                path, znodes.encode_producer_id_block(broker_id, block), version=stat.version
            )
            return block
        except BadVersionError:
            continue


async def allocate_producer_id_block(
    session: ZkSession, broker_id: int, block_size: int = DEFAULT_BLOCK_SIZE
) -> range:
    """Reserve the next ``block_size`` producer ids for ``broker_id``."""
    return await session.call(allocate_producer_id_block_sync, session, broker_id, block_size)
