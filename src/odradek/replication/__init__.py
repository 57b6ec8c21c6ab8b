"""Replication: the partitions a broker leads or follows, and the rules of both.

Request handlers and the group coordinator's offsets log call :class:`ReplicaManager`
(``append_records``, ``fetch`` and one entry point per other partition request); they
never touch a partition's log themselves. Modules, in dependency order (none imports a
later one, none imports the replica manager):

* ``acks``            — the Produce ``acks`` values (:class:`Acks`)
* ``purgatory``       — delayed operations watching partition keys (Kafka's purgatory)
* ``partition``       — one partition: its log, leader/follower state, HW, ISR, fencing
* ``delayed_produce`` — acks=-1 appends waiting for the high watermark
* ``reads``           — what a Fetch reads (KIP-74 limits, HW vs log end)
* ``delayed_fetch``   — long-poll fetches waiting for data
* ``isr_manager``     — the leader's ISR expansions and shrinks (conditional ZK writes)
* ``throttles``       — the replication throttles: a byte-rate quota per direction
* ``fetcher``         — the follower's fetch loop and truncation (KIP-101/279)
* ``replica_manager`` — the entry points, and leadership following the cluster view
"""

from .acks import Acks
from .delayed_produce import AppendResult, AppendResults
from .partition import Partition
from .reads import FetchParams, FetchRead, PartitionFetch
from .replica_manager import LeadershipListener, ReplicaManager

__all__ = [
    "Acks",
    "AppendResult",
    "AppendResults",
    "FetchParams",
    "FetchRead",
    "LeadershipListener",
    "Partition",
    "PartitionFetch",
    "ReplicaManager",
]
