"""Which operation on which resource each API needs: Kafka's rules (KafkaApis), as data.

Each handler checks its own resources through the request context
(``ctx.authorize(Operation.WRITE, ResourceType.TOPIC, name)``, always true without an
authorizer) and answers a denied one itself with Kafka's code — TOPIC_, GROUP_, CLUSTER_ or
TRANSACTIONAL_ID_AUTHORIZATION_FAILED — as Kafka's KafkaApis does; the handler modules'
docstrings say the details (what a partly denied request answers, what a listing leaves
out). This table states the same rules in one place: docs/compatibility.md shows it beside
each API (:mod:`odradek.reference_docs`), and the pre-authentication APIs (ApiVersions,
SaslHandshake, SaslAuthenticate) are the only ones without an entry. Tests hold the two
together: every denial a broker counts (``odradek_authorization_denials_total``) must be a
rule of its API here (tests/broker/test_authorization_entries.py).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import NamedTuple

from odradek.protocol.api_versions import ApiKey
from odradek.security.acl import Operation, ResourceType

__all__ = ["RULES", "Rule", "Scope"]


class Scope(enum.Enum):
    """How the request names the resources a rule applies to."""

    EACH = "each"  # every resource the request lists (each denied one answered alone)
    NAMED = "the"  # the one resource the request names, or the cluster (denied: all of it)
    ANY = "any"  # some resource of the type (InitProducerId of an idempotent producer)
    LISTED = "each listed"  # what the answer lists: the denied are left out


class Rule(NamedTuple):
    operation: Operation
    resource_type: ResourceType
    scope: Scope

    def __str__(self) -> str:
        return f"{self.operation.spelling} on {self.scope.value} {self.resource_type.spelling}"


_READ, _WRITE, _DESCRIBE = Operation.READ, Operation.WRITE, Operation.DESCRIBE
_CREATE, _DELETE, _ALTER = Operation.CREATE, Operation.DELETE, Operation.ALTER
_TOPIC, _GROUP = ResourceType.TOPIC, ResourceType.GROUP
_TXN, _CLUSTER = ResourceType.TRANSACTIONAL_ID, ResourceType.CLUSTER
_EACH, _NAMED, _LISTED = Scope.EACH, Scope.NAMED, Scope.LISTED


def _cluster(operation: Operation) -> Rule:
    return Rule(operation, _CLUSTER, _NAMED)


RULES: Mapping[ApiKey, tuple[Rule, ...]] = {
    # data
    ApiKey.PRODUCE: (Rule(_WRITE, _TXN, _NAMED), Rule(_WRITE, _TOPIC, _EACH)),
    ApiKey.FETCH: (Rule(_READ, _TOPIC, _EACH), _cluster(Operation.CLUSTER_ACTION)),
    ApiKey.LIST_OFFSETS: (Rule(_DESCRIBE, _TOPIC, _EACH),),
    ApiKey.METADATA: (Rule(_DESCRIBE, _TOPIC, _EACH), _cluster(_CREATE),
                      Rule(_CREATE, _TOPIC, _EACH)),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (Rule(_DESCRIBE, _TOPIC, _EACH),
                                     _cluster(Operation.CLUSTER_ACTION)),
    ApiKey.DELETE_RECORDS: (Rule(_DELETE, _TOPIC, _EACH),),
    ApiKey.DESCRIBE_PRODUCERS: (Rule(_READ, _TOPIC, _EACH),),
    # topics and configs
    ApiKey.CREATE_TOPICS: (_cluster(_CREATE), Rule(_CREATE, _TOPIC, _EACH)),
    ApiKey.DELETE_TOPICS: (Rule(_DELETE, _TOPIC, _EACH),),
    ApiKey.CREATE_PARTITIONS: (Rule(_ALTER, _TOPIC, _EACH),),
    ApiKey.DESCRIBE_CONFIGS: (Rule(Operation.DESCRIBE_CONFIGS, _TOPIC, _EACH),
                              _cluster(Operation.DESCRIBE_CONFIGS)),
    ApiKey.ALTER_CONFIGS: (Rule(Operation.ALTER_CONFIGS, _TOPIC, _EACH),
                           _cluster(Operation.ALTER_CONFIGS)),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (Rule(Operation.ALTER_CONFIGS, _TOPIC, _EACH),
                                       _cluster(Operation.ALTER_CONFIGS)),
    # groups
    ApiKey.FIND_COORDINATOR: (Rule(_DESCRIBE, _GROUP, _EACH), Rule(_DESCRIBE, _TXN, _EACH)),
    ApiKey.JOIN_GROUP: (Rule(_READ, _GROUP, _NAMED),),
    ApiKey.SYNC_GROUP: (Rule(_READ, _GROUP, _NAMED),),
    ApiKey.HEARTBEAT: (Rule(_READ, _GROUP, _NAMED),),
    ApiKey.LEAVE_GROUP: (Rule(_READ, _GROUP, _NAMED),),
    ApiKey.OFFSET_COMMIT: (Rule(_READ, _GROUP, _NAMED), Rule(_READ, _TOPIC, _EACH)),
    ApiKey.OFFSET_FETCH: (Rule(_READ, _GROUP, _EACH),  # v8+: several groups
                          Rule(_READ, _TOPIC, _EACH)),
    ApiKey.OFFSET_DELETE: (Rule(_DELETE, _GROUP, _NAMED), Rule(_READ, _TOPIC, _EACH)),
    ApiKey.DESCRIBE_GROUPS: (Rule(_DESCRIBE, _GROUP, _EACH),),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (Rule(_READ, _GROUP, _NAMED),),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (Rule(_DESCRIBE, _GROUP, _EACH),),
    ApiKey.LIST_GROUPS: (_cluster(_DESCRIBE), Rule(_DESCRIBE, _GROUP, _LISTED)),
    ApiKey.DELETE_GROUPS: (Rule(_DELETE, _GROUP, _EACH),),
    # transactions
    ApiKey.INIT_PRODUCER_ID: (Rule(_WRITE, _TXN, _NAMED), _cluster(Operation.IDEMPOTENT_WRITE),
                              Rule(_WRITE, _TOPIC, Scope.ANY)),
    ApiKey.ADD_PARTITIONS_TO_TXN: (Rule(_WRITE, _TXN, _NAMED), Rule(_WRITE, _TOPIC, _EACH)),
    ApiKey.ADD_OFFSETS_TO_TXN: (Rule(_WRITE, _TXN, _NAMED), Rule(_READ, _GROUP, _NAMED)),
    ApiKey.END_TXN: (Rule(_WRITE, _TXN, _NAMED),),
    ApiKey.TXN_OFFSET_COMMIT: (Rule(_WRITE, _TXN, _NAMED), Rule(_READ, _GROUP, _NAMED),
                               Rule(_READ, _TOPIC, _EACH)),
    ApiKey.DESCRIBE_TRANSACTIONS: (Rule(_DESCRIBE, _TXN, _EACH),),
    ApiKey.LIST_TRANSACTIONS: (Rule(_DESCRIBE, _TXN, _LISTED),),
    ApiKey.WRITE_TXN_MARKERS: (_cluster(Operation.CLUSTER_ACTION),),
    # cluster
    ApiKey.CONTROLLED_SHUTDOWN: (_cluster(Operation.CLUSTER_ACTION),),
    ApiKey.DESCRIBE_CLUSTER: (_cluster(_DESCRIBE),),
    ApiKey.DESCRIBE_LOG_DIRS: (_cluster(_DESCRIBE),),
    ApiKey.ELECT_LEADERS: (_cluster(_ALTER),),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (_cluster(_ALTER),),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (_cluster(_DESCRIBE),),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (_cluster(Operation.DESCRIBE_CONFIGS),),
    ApiKey.ALTER_CLIENT_QUOTAS: (_cluster(Operation.ALTER_CONFIGS),),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (_cluster(_DESCRIBE),),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (_cluster(_ALTER),),
    ApiKey.CREATE_ACLS: (_cluster(_ALTER),),
    ApiKey.DESCRIBE_ACLS: (_cluster(_DESCRIBE),),
    ApiKey.DELETE_ACLS: (_cluster(_ALTER),),
}
"""API -> what it needs. Every rule applies, with these exceptions (Kafka's): the cluster
rule of CreateTopics, Metadata (auto-creation) and ListGroups, when allowed, stands in for
the resource rule beside it; Fetch's and OffsetForLeaderEpoch's CLUSTER_ACTION is a
follower's rule (``replica_id`` >= 0) instead of the topic rule; InitProducerId needs the
transactional id rule with an id, else IDEMPOTENT_WRITE or WRITE on some topic; a request
names either a group or a transactional id to FindCoordinator."""
