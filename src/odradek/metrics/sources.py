"""What the scrape-time collectors read from a broker: small protocols and plain records.

State that already exists in the broker (log sizes and offsets, ISR, leadership, purgatory
sizes, controller state) is read when Prometheus scrapes instead of being mirrored into
gauges on every change: the hot path pays nothing, and the numbers cannot drift from the
state they describe. The broker adapts its components to these protocols in
``odradek.broker.metrics_sources`` (the replica manager as :class:`PartitionSource` and
:class:`PurgatorySource`, the cluster's controller as :class:`ControllerSource`).

Every method here is called **on the broker's event loop** (the collector hops onto it once
per scrape), so implementations read their own structures without locks; they must return
plain values (no live views), be quick (no I/O: a scrape of 1,000 partitions must stay well
under 100 ms), and never raise for an ordinary state such as a partition being deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

from odradek.quota import QuotaState

__all__ = [
    "BrokerInfo",
    "ControllerSource",
    "ControllerState",
    "PartitionSource",
    "PurgatorySource",
    "QuotaSource",
    "ReplicaSnapshot",
    "TransactionSource",
]


class ReplicaSnapshot(NamedTuple):
    """One partition replica hosted by this broker, as the metrics see it.

    A named tuple, not a frozen dataclass: one is built per partition per scrape **on the
    event loop**, and a frozen dataclass's ``__init__`` (one ``object.__setattr__`` per
    field) cost several times a tuple's construction there.

    ``in_sync_replicas`` and ``replicas`` matter only where ``is_leader`` (followers do not
    know the current ISR reliably); ``leader_end_offset`` only on followers: the leader's log
    end offset as last seen by the replica fetcher (``None`` when unknown or when leading).
    """

    topic: str
    partition: int
    size_bytes: int
    segments: int
    log_start_offset: int
    log_end_offset: int
    is_leader: bool
    replicas: int
    in_sync_replicas: int
    min_insync_replicas: int
    leader_end_offset: int | None = None
    # Leaders only: the LSO, open transactions and the oldest one's start (ms, -1: none).
    last_stable_offset: int = -1
    open_transactions: int = 0
    oldest_open_transaction_ms: int = -1


@runtime_checkable
class PartitionSource(Protocol):
    """Lists every partition replica this broker hosts (the replica manager)."""

    def partitions(self) -> Iterable[ReplicaSnapshot]: ...


@dataclass(frozen=True, slots=True)
class ControllerState:
    """The controller as seen from one broker. Counts are 0 where ``active`` is false, so the
    cluster-wide sum of each is the active controller's value (Kafka's convention)."""

    active: bool
    offline_partitions: int = 0
    topics: int = 0
    partitions: int = 0
    event_queue_size: int = 0


@runtime_checkable
class ControllerSource(Protocol):
    def controller_state(self) -> ControllerState: ...


@runtime_checkable
class PurgatorySource(Protocol):
    """Delayed operations waiting, by operation name (``produce``, ``fetch``, ...)."""

    def purgatory_sizes(self) -> Mapping[str, int]: ...


@runtime_checkable
class TransactionSource(Protocol):
    """Transactional ids by Kafka state name, over the transaction-state partitions this
    broker coordinates (the transaction coordinator)."""

    def transaction_states(self) -> Mapping[str, int]: ...


@runtime_checkable
class QuotaSource(Protocol):
    """Every live client-quota sensor (:meth:`odradek.quota.QuotaManager.states`)."""

    def quota_states(self) -> Iterable[QuotaState]: ...


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """Labels of ``odradek_broker_info``; ``cluster_id`` is known after ZooKeeper registration."""

    version: str
    cluster_id: str = ""
    rack: str = ""
