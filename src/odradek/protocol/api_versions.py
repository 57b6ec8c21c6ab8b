"""Which API versions this broker advertises, and which it can merely parse.

Everything that decides version negotiation lives here. ``ADVERTISED`` is what the
ApiVersions response lists: only versions the broker fully implements (DESIGN.md §2,
"advertise honest version ranges"). ``PARSEABLE`` may add APIs whose codecs are tested
but whose handlers are not written yet: a request for them is answered like any other
unadvertised API, by closing the connection.

The minimums follow what the codec (kio, generated from Kafka 4.x schemas) can read:
Kafka 4 dropped CreateTopics v0-1, DeleteTopics v0 and DescribeConfigs v0, and every
client we target negotiates above those.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "ADVERTISED",
    "PARSEABLE",
    "ApiKey",
    "VersionRange",
    "is_advertised",
    "is_parseable",
]


class ApiKey(IntEnum):
    """Kafka API keys used by this broker (numbers from the Kafka protocol)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69


@dataclass(frozen=True, slots=True)
class VersionRange:
    min_version: int
    max_version: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min_version <= version <= self.max_version


ADVERTISED: dict[ApiKey, VersionRange] = {
    ApiKey.PRODUCE: VersionRange(3, 9),
    ApiKey.FETCH: VersionRange(4, 12),
    ApiKey.LIST_OFFSETS: VersionRange(1, 7),
    ApiKey.METADATA: VersionRange(0, 12),
    ApiKey.SASL_HANDSHAKE: VersionRange(0, 1),
    ApiKey.API_VERSIONS: VersionRange(0, 3),
    ApiKey.CREATE_TOPICS: VersionRange(2, 7),
    ApiKey.DELETE_TOPICS: VersionRange(1, 6),
    ApiKey.DELETE_RECORDS: VersionRange(0, 2),
    ApiKey.INIT_PRODUCER_ID: VersionRange(0, 4),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: VersionRange(2, 4),
    ApiKey.DESCRIBE_CONFIGS: VersionRange(1, 4),
    ApiKey.ALTER_CONFIGS: VersionRange(0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: VersionRange(1, 4),
    ApiKey.SASL_AUTHENTICATE: VersionRange(0, 2),
    ApiKey.CREATE_PARTITIONS: VersionRange(0, 3),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: VersionRange(0, 1),
    ApiKey.DESCRIBE_CLUSTER: VersionRange(0, 1),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: VersionRange(0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: VersionRange(0, 1),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: VersionRange(0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: VersionRange(0, 0),
    # ACLs (``broker/handlers/acls.py``): SECURITY_DISABLED without an authorizer.
    ApiKey.DESCRIBE_ACLS: VersionRange(1, 3),
    ApiKey.CREATE_ACLS: VersionRange(1, 3),
    ApiKey.DELETE_ACLS: VersionRange(1, 3),
}

# The classic group protocol (``odradek.coordinator``). librdkafka also reads the presence
# of FindCoordinator as "broker >= 0.9" and only then enables lz4 (and other features).
_GROUP_APIS: dict[ApiKey, VersionRange] = {
    ApiKey.OFFSET_COMMIT: VersionRange(2, 9),  # v9 = v8, for KIP-848 members (member epoch)
    ApiKey.OFFSET_FETCH: VersionRange(1, 10),  # v9: member epochs, v10: topic ids
    ApiKey.FIND_COORDINATOR: VersionRange(0, 4),
    ApiKey.JOIN_GROUP: VersionRange(0, 7),
    ApiKey.HEARTBEAT: VersionRange(0, 4),
    ApiKey.LEAVE_GROUP: VersionRange(0, 4),
    ApiKey.SYNC_GROUP: VersionRange(0, 5),
    ApiKey.DESCRIBE_GROUPS: VersionRange(0, 5),
    ApiKey.LIST_GROUPS: VersionRange(0, 5),
    ApiKey.DELETE_GROUPS: VersionRange(0, 2),
    ApiKey.OFFSET_DELETE: VersionRange(0, 0),
    # KIP-848 consumer groups (``group.protocol=consumer``): ``coordinator.consumer_group``.
    ApiKey.CONSUMER_GROUP_HEARTBEAT: VersionRange(0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: VersionRange(0, 1),
}
ADVERTISED.update(_GROUP_APIS)

# Requests the controller answers (``broker/handlers/controller_apis.py``). ControlledShutdown
# is inter-broker; its codec is odradek's own (``protocol.controlled_shutdown``: Kafka 4 and
# so kio dropped it), v3 only — the version every ZK-mode Kafka broker since 2.4 sends.
_CONTROLLER_APIS: dict[ApiKey, VersionRange] = {
    ApiKey.CONTROLLED_SHUTDOWN: VersionRange(3, 3),
    ApiKey.ELECT_LEADERS: VersionRange(0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: VersionRange(0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: VersionRange(0, 0),
}
ADVERTISED.update(_CONTROLLER_APIS)

# Transactions (``broker/handlers/transactions.py``, ``txn_markers.py``). WriteTxnMarkers is
# sent by transaction coordinators to partition leaders; its v2 adds a transaction version
# the handler does not interpret (KIP-890), so only v1 is offered, and AddPartitionsToTxn
# stops at v3 (v4+ is KIP-890's broker-to-broker batch form). EndTxn v4+ and
# InitProducerId v5+ are KIP-890's too. DescribeProducers (``describe_producers.py``) is the
# partition leaders' side of the admin's hanging-transaction tools.
_TRANSACTION_APIS: dict[ApiKey, VersionRange] = {
    ApiKey.WRITE_TXN_MARKERS: VersionRange(1, 1),
    ApiKey.ADD_PARTITIONS_TO_TXN: VersionRange(0, 3),
    ApiKey.END_TXN: VersionRange(0, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: VersionRange(0, 3),
    ApiKey.TXN_OFFSET_COMMIT: VersionRange(0, 3),
    ApiKey.DESCRIBE_TRANSACTIONS: VersionRange(0, 0),
    ApiKey.LIST_TRANSACTIONS: VersionRange(0, 1),
    ApiKey.DESCRIBE_PRODUCERS: VersionRange(0, 0),
}
ADVERTISED.update(_TRANSACTION_APIS)

PARSEABLE: dict[ApiKey, VersionRange] = dict(ADVERTISED)

# Plain-int lookups for the request path (IntEnum hashing is slower than int's).
_ADVERTISED_BY_INT = {int(key): rng for key, rng in ADVERTISED.items()}
_PARSEABLE_BY_INT = {int(key): rng for key, rng in PARSEABLE.items()}


def is_advertised(api_key: int, api_version: int) -> bool:
    rng = _ADVERTISED_BY_INT.get(api_key)
    return rng is not None and rng.min_version <= api_version <= rng.max_version


def is_parseable(api_key: int, api_version: int) -> bool:
    rng = _PARSEABLE_BY_INT.get(api_key)
    return rng is not None and rng.min_version <= api_version <= rng.max_version
