"""The paper's consumer registries in ZooKeeper, and Algorithm 1 over them.

Section 3.3 of the paper keeps three registries per consumer group; odradek stores them where
Kafka 0.8's ``ZookeeperConsumerConnector`` did, in the same formats, so Kafka's old tools
(``ConsumerOffsetChecker``, ``zookeeper-shell``) read what odradek writes:

``/consumers/<g>/ids/<consumer_id>``   ephemeral, the *consumer registry*::

    {"version":1,"subscription":{"<topic>":1},"pattern":"static","timestamp":"<ms>"}

  The count per topic is the number of streams (threads) the consumer runs for it; each
  stream is a "consumer thread" ``<consumer_id>-<i>`` and is the unit Algorithm 1 assigns
  partitions to. odradek runs one stream per topic, and understands other counts when a
  Kafka 0.8 consumer shares the group.

``/consumers/<g>/owners/<t>/<p>``      ephemeral, the *ownership registry*: the consumer thread
                                       id owning partition ``p``, as UTF-8 text.
``/consumers/<g>/offsets/<t>/<p>``     persistent, the *offset registry*: the offset of the
                                       next message to consume, as decimal text (``42``).

Ephemeral nodes vanish with the session that created them, so a consumer that dies (crash,
network partition longer than ``zookeeper.session.timeout.ms``) leaves the group and frees its
partitions without anyone acting. Offsets stay.

The functions taking a ``KazooClient`` block: run them in a worker thread
(:meth:`odradek.cluster.zk.ZkSession.call`). The rest is pure.
"""

from __future__ import annotations

import contextlib
import json
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.protocol.states import WatchedEvent

from odradek.clock import wall_ms
from odradek.cluster import znodes

from .assignors import Subscription, assign_range
from .metadata import TopicPartition

__all__ = [
    "GroupView",
    "OwnershipConflict",
    "assign_paper",
    "claim_partitions",
    "consumer_thread_ids",
    "decode_registration",
    "encode_registration",
    "make_consumer_id",
    "read_broker_bootstrap",
    "read_group_view",
    "read_offsets",
    "register_consumer",
    "release_partitions",
    "unregister_consumer",
    "write_offsets",
]

Watcher = Callable[[WatchedEvent], None]


# ---------------------------------------------------------------------------- paths

def ids_path(group: str) -> str:
    return f"/consumers/{group}/ids"


def consumer_path(group: str, consumer_id: str) -> str:
    return f"/consumers/{group}/ids/{consumer_id}"


def owners_path(group: str, topic: str) -> str:
    return f"/consumers/{group}/owners/{topic}"


def owner_path(group: str, tp: TopicPartition) -> str:
    return f"/consumers/{group}/owners/{tp.topic}/{tp.partition}"


def offset_path(group: str, tp: TopicPartition) -> str:
    return f"/consumers/{group}/offsets/{tp.topic}/{tp.partition}"


# ---------------------------------------------------------------------------- formats

def make_consumer_id(group: str, consumer_id: str | None = None) -> str:
    """Kafka 0.8's ``consumerIdString``: ``<group>_<consumer.id>``, where an unset
    ``consumer.id`` becomes ``<hostname>-<ms>-<8 hex digits>``."""
    if consumer_id is None:
        consumer_id = f"{socket.gethostname()}-{wall_ms()}-{uuid.uuid4().hex[:8]}"
    if not consumer_id or "/" in consumer_id:
        raise ValueError(f"consumer id must be non-empty and without '/': {consumer_id!r}")
    return f"{group}_{consumer_id}"


def consumer_thread_ids(consumer_id: str, streams: int) -> list[str]:
    return [f"{consumer_id}-{i}" for i in range(streams)]


def encode_registration(subscription: Mapping[str, int], timestamp: str | None = None) -> bytes:
    return json.dumps({"version": 1, "subscription": dict(sorted(subscription.items())),
                       "pattern": "static", "timestamp": timestamp or znodes.timestamp_now()},
                      separators=(",", ":")).encode()


def decode_registration(data: bytes | None) -> dict[str, int]:
    """``{topic: streams}`` of a static registration. Wildcard registrations (``white_list``
    / ``black_list`` patterns of Kafka 0.8) hold a regex instead of topic names; odradek
    does not subscribe by pattern, and such a member simply takes no partitions here."""
    if not data:
        return {}
    obj = json.loads(data.decode())
    if obj.get("pattern", "static") != "static":
        return {}
    return {str(t): int(n) for t, n in (obj.get("subscription") or {}).items()}


# ---------------------------------------------------------------------------- Algorithm 1

@dataclass(frozen=True)
class GroupView:
    """One reading of the broker, consumer and topic registries."""

    brokers: tuple[int, ...]
    #: consumer id -> {topic: streams}
    consumers: Mapping[str, Mapping[str, int]]
    #: topic -> partition count (0 while the topic does not exist)
    partitions: Mapping[str, int]


def assign_paper(consumers: Mapping[str, Mapping[str, int]],
                 partitions_per_topic: Mapping[str, int]) -> dict[str, list[TopicPartition]]:
    """Algorithm 1 for every consumer thread of the group: ``{thread_id: partitions}``.

    Per topic T: sort the partitions P_T (numerically) and the consumer threads C_T subscribing
    to T (as strings, as Kafka 0.8 does); thread j takes a contiguous range. The paper writes
    the range as ``[j*N, (j+1)*N - 1]`` with ``N = |P_T| / |C_T|``, exact when |C_T| divides
    |P_T|. Otherwise the remainder ``R = |P_T| mod |C_T|`` goes to the first R threads, one
    each — thread j takes ``N + (1 if j < R else 0)`` partitions from ``j*N + min(j, R)``
    (``N`` rounded down). That is Kafka's range assignor, so this reuses
    :func:`~odradek.client.assignors.assign_range` with threads as members. With more threads
    than partitions the last ``|C_T| - |P_T|`` threads stay idle, as in the paper.
    """
    members = {thread: Subscription(sorted(topic for topic, n in subscription.items()
                                           if thread_index(thread) < n))
               for consumer, subscription in consumers.items()
               for thread in consumer_thread_ids(consumer, max(subscription.values(),
                                                               default=0))}
    return assign_range(members, partitions_per_topic)


def thread_index(thread_id: str) -> int:
    return int(thread_id.rsplit("-", 1)[1])


# ---------------------------------------------------------------------------- blocking I/O

class OwnershipConflict(Exception):
    """A partition this consumer was assigned is still owned by another consumer thread
    (which has not yet rebalanced and released it)."""

    def __init__(self, tp: TopicPartition, holder: str) -> None:
        super().__init__(f"{tp.topic}-{tp.partition} is still owned by {holder}")
        self.tp = tp
        self.holder = holder


def register_consumer(client: KazooClient, group: str, consumer_id: str,
                      subscription: Mapping[str, int]) -> None:
    """Create our ephemeral consumer-registry node (or adopt it if our session made it).

    A node of another session under our id is the previous incarnation of this consumer
    whose session has not expired yet; that raises ``NodeExistsError`` and the caller retries
    after a backoff, as Kafka 0.8 does, until ZooKeeper removes it.
    """
    path = consumer_path(group, consumer_id)
    data = encode_registration(subscription)
    try:
        client.create(path, data, ephemeral=True, makepath=True)
    except NodeExistsError:
        _, stat = client.get(path)
        if stat.ephemeralOwner != client.client_id[0]:
            raise
        client.set(path, data)


def unregister_consumer(client: KazooClient, group: str, consumer_id: str) -> None:
    with contextlib.suppress(NoNodeError):
        client.delete(consumer_path(group, consumer_id))


def read_group_view(client: KazooClient, group: str, topics: Iterable[str], *,
                    watch: Watcher) -> GroupView:
    """Read the registries Algorithm 1 needs, leaving ``watch`` on each of them: the broker
    registry, the consumer registry of ``group``, and the partition assignment of ``topics``
    (a topic's node also when it does not exist yet, so its creation triggers a rebalance)."""
    client.ensure_path(ids_path(group))
    try:
        brokers = tuple(sorted(int(b) for b in client.get_children(znodes.BROKER_IDS,
                                                                   watch=watch)))
    except NoNodeError:
        client.exists(znodes.BROKER_IDS, watch=watch)
        brokers = ()
    consumers: dict[str, dict[str, int]] = {}
    for member in client.get_children(ids_path(group), watch=watch):
        try:
            data, _ = client.get(consumer_path(group, member))
        except NoNodeError:  # left meanwhile; its removal fired the watch above
            continue
        consumers[member] = decode_registration(data)
    partitions: dict[str, int] = {}
    for topic in sorted(set(topics)):
        partitions[topic] = 0
        if client.exists(znodes.topic_path(topic), watch=watch) is None:
            continue
        try:
            data, _ = client.get(znodes.topic_path(topic), watch=watch)
        except NoNodeError:
            continue
        _, assignment = znodes.decode_topic_assignment(data)
        partitions[topic] = len(assignment)
    return GroupView(brokers, consumers, partitions)


def claim_partitions(client: KazooClient, group: str, claims: Mapping[TopicPartition, str], *,
                     watch: Watcher) -> None:
    """Write our thread ids into the ownership registry, all or nothing.

    On a partition still owned by another thread, delete what this call created, leave
    ``watch`` on the contested node (its deletion means the holder released it, the moment
    to retry) and raise :class:`OwnershipConflict`.
    """
    created: list[TopicPartition] = []
    try:
        for tp, thread in sorted(claims.items()):
            path = owner_path(group, tp)
            try:
                client.create(path, thread.encode(), ephemeral=True, makepath=True)
                created.append(tp)
            except NodeExistsError:
                try:
                    holder, _ = client.get(path, watch=watch)
                except NoNodeError:  # released between our create and get: try once more
                    client.create(path, thread.encode(), ephemeral=True, makepath=True)
                    created.append(tp)
                    continue
                if holder.decode() != thread:
                    raise OwnershipConflict(tp, holder.decode()) from None
    except BaseException:
        release_partitions(client, group, {tp: claims[tp] for tp in created})
        raise


def release_partitions(client: KazooClient, group: str,
                       owned: Mapping[TopicPartition, str]) -> None:
    """Delete our ownership nodes (only those still naming our thread: after a session
    expiry another consumer may rightfully own the partition by now)."""
    for tp, thread in owned.items():
        path = owner_path(group, tp)
        try:
            holder, stat = client.get(path)
            if holder.decode() == thread:
                client.delete(path, version=stat.version)
        except NoNodeError:
            pass


def read_offsets(client: KazooClient, group: str,
                 partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
    """The offset registry's entry for each partition; None where the group has none."""
    out: dict[TopicPartition, int | None] = {}
    for tp in partitions:
        try:
            data, _ = client.get(offset_path(group, tp))
        except NoNodeError:
            out[tp] = None
            continue
        text = data.decode().strip()
        out[tp] = int(text) if text else None
    return out


def write_offsets(client: KazooClient, group: str, offsets: Mapping[TopicPartition, int]) -> None:
    for tp, offset in sorted(offsets.items()):
        path = offset_path(group, tp)
        data = str(offset).encode()
        try:
            client.set(path, data)
        except NoNodeError:
            try:
                client.create(path, data, makepath=True)
            except NodeExistsError:
                client.set(path, data)


def read_broker_bootstrap(client: KazooClient) -> list[str]:
    """``host:port`` of every registered broker (the PLAINTEXT endpoint when it has one), so
    a paper-mode consumer needs nothing but ``zookeeper.connect``."""
    out = []
    try:
        ids = client.get_children(znodes.BROKER_IDS)
    except NoNodeError:
        return []
    for broker_id in sorted(ids, key=int):
        try:
            data, _ = client.get(znodes.broker_path(int(broker_id)))
        except NoNodeError:
            continue
        info = znodes.decode_broker(int(broker_id), data)
        if info.port > 0:
            out.append(f"{info.host}:{info.port}")
    return out
