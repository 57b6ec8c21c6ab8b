"""Microbench: one idle incremental follower Fetch through the broker's Fetch handler.

The leader leads the default 50-partition ``__consumer_offsets`` and a 6-partition topic
(RF 3); a follower holds a fetch session on all 56 and has their whole log. Each timed
fetch is incremental and names nothing (no position moved): what it costs the leader is
the per-request overhead plus whatever it spends on partitions with nothing new. The
answer is encoded, as the connection would send it. Two kinds: an immediate fetch
(``max_wait_ms`` 0), and a long-poll cycle (``max_wait_ms`` 500, as followers send: the
read, parking in the fetch purgatory, its expiry, the second read and the answer; the
wait itself is cut short). In-process, no sockets, no event-loop hops:
``python -m bench.micro_fetch_session`` (it prints µs per fetch and the load).

Not part of ``make bench`` (no peer to compare with): a profile aid for issue 24's goal of
≤ 0.1 ms per idle follower fetch at 50 + 6 partitions.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import timeit
from datetime import timedelta
from pathlib import Path
from typing import Any

from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.types import BrokerId as KioBrokerId
from kio.schema.types import TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from odradek.broker.authenticator import ConnectionSession
from odradek.broker.context import BrokerServices, RequestContext
from odradek.broker.handlers.fetch import handle_fetch
from odradek.broker.outcomes import Deferred
from odradek.config_sections import LogManagerConfig, ReplicationConfig
from odradek.protocol.messages import RequestHeader
from odradek.replication import ReplicaManager
from odradek.storage import LogConfig, LogManager
from odradek.types import BrokerId
from tests.replication.cluster_view import State, Topic

LEADER, FOLLOWER = 0, 1
TOPICS = {"__consumer_offsets": 50, "events": 6}
_FETCH_API_KEY = 1


def _request(session_id: int, epoch: int, positions: dict[tuple[str, int], int],
             max_wait_ms: int = 0) -> Any:
    by_topic: dict[str, list[FetchPartition]] = {}
    for (topic, index), offset in positions.items():
        by_topic.setdefault(topic, []).append(FetchPartition(
            partition=i32(index), current_leader_epoch=i32(1), fetch_offset=i64(offset),
            last_fetched_epoch=i32(-1), log_start_offset=i64(-1),
            partition_max_bytes=i32(1 << 20)))
    return FetchRequest(
        cluster_id=None, replica_id=KioBrokerId(FOLLOWER),
        max_wait=i32Timedelta.parse(timedelta(milliseconds=max_wait_ms)), min_bytes=i32(1),
        max_bytes=i32(50 << 20), isolation_level=i8(0),
        session_id=i32(session_id), session_epoch=i32(epoch),
        topics=tuple(FetchTopic(topic=TopicName(t), partitions=tuple(p))
                     for t, p in by_topic.items()),
        forgotten_topics_data=(), rack_id="")


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        logs = LogManager(LogManagerConfig(log_dirs=(Path(tmp),)), LogConfig(),
                          background=False)
        manager = ReplicaManager(BrokerId(LEADER), logs, lambda _topic: LogConfig(),
                                 ReplicationConfig())
        state = State(LEADER, 1, (0, 1, 2), (0, 1, 2))
        manager.apply_cluster_view({
            topic: Topic({i: state for i in range(count)}, topic_id=None)
            for topic, count in TOPICS.items()
        })
        # Only what Fetch reads: the replica manager and the log manager.
        services = BrokerServices(LEADER, None, None, manager, None, logs,  # type: ignore[arg-type]
                                  None, None)  # type: ignore[arg-type]

        def context(correlation_id: int) -> RequestContext:
            return RequestContext(services, RequestHeader(_FETCH_API_KEY, 12, correlation_id,
                                                          "bench"), "PLAINTEXT", "bench",
                                  ConnectionSession())

        positions = {(t, i): 0 for t, count in TOPICS.items() for i in range(count)}
        handle_fetch(context(0), _request(0, 0, positions))  # opens the session
        [session] = manager.fetch_sessions.sessions.values()
        idle = {"epoch": 1}

        def one_idle_fetch() -> None:
            handle_fetch(context(idle["epoch"]), _request(session.id, idle["epoch"], {}))
            idle["epoch"] += 1

        def one_long_poll() -> None:
            parked = handle_fetch(context(idle["epoch"]),
                                  _request(session.id, idle["epoch"], {}, max_wait_ms=500))
            idle["epoch"] += 1
            assert isinstance(parked, Deferred), "an idle long poll waits"
            manager.fetch_purgatory.expire_all()
            parked.respond(parked.future.result())

        one_idle_fetch()  # the first incremental fetch settles what the client knows
        rounds = 2000
        for name, run in (("immediate", one_idle_fetch), ("long-poll cycle", one_long_poll)):
            best = min(timeit.repeat(run, number=rounds, repeat=5)) / rounds
            print(f"idle incremental follower fetch, {len(positions)} partitions, {name}: "
                  f"{best * 1e6:.1f} µs (best of 5 x {rounds}); load {os.getloadavg()}")
        logs.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
