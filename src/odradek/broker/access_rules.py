"""Which operation on which resource each API needs: Kafka's rules (KafkaApis), one table.

``RULES[api]`` is the rule :mod:`.access` runs before the handler. The pre-authentication
APIs (ApiVersions, SaslHandshake, SaslAuthenticate) have none. Denied resources are answered
with Kafka's codes — TOPIC_, GROUP_, CLUSTER_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED —
and never with data; a topic a client may not DESCRIBE is left out of Metadata for all
topics and answered TOPIC_AUTHORIZATION_FAILED when named, whether or not it exists.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey
from odradek.security.acl import CLUSTER_NAME
from odradek.security.acl import Operation as Op

from .access import (
    CLUSTER,
    GROUP,
    TOPIC,
    TXN,
    UNKNOWN_OPERATIONS,
    Items,
    Rule,
    as_body,
    blank,
    cluster_rule,
    error_answer,
    named_rule,
    response,
    then,
    topic_partitions,
)
from .access_metadata import metadata_rule
from .authorizer import Authorizer
from .context import RequestContext
from .dispatch import Handler, Outcome
from .outcomes import CLOSE_CONNECTION

__all__ = ["RULES"]

E = ErrorCode
TOPIC_DENIED, GROUP_DENIED = E.topic_authorization_failed, E.group_authorization_failed
CLUSTER_DENIED, TXN_DENIED = E.cluster_authorization_failed, E.transactional_id_authorization_failed


def _name(item: Any) -> str:
    return str(item if isinstance(item, str) else getattr(item, "name", None) or item.topic)


def _group_read(ctx: RequestContext, body: Any, authz: Authorizer) -> ErrorCode | None:
    return None if authz.authorize(ctx, Op.READ, GROUP, body.group_id) else GROUP_DENIED


def _txn_write(ctx: RequestContext, body: Any, authz: Authorizer) -> ErrorCode | None:
    txn = getattr(body, "transactional_id", None)
    if txn is None:
        txn = getattr(body, "v3_and_below_transactional_id", None)
    if txn is None or authz.authorize(ctx, Op.WRITE, TXN, txn):
        return None
    return TXN_DENIED


def _txn_then_group(ctx: RequestContext, body: Any, authz: Authorizer) -> ErrorCode | None:
    return _txn_write(ctx, body, authz) or _group_read(ctx, body, authz)


# -- data: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords -----------------

_PRODUCE = Items("topic_data", _name, "responses", topic_partitions(
    "TopicProduceResponse", "name", "partition_responses", "PartitionProduceResponse", "index",
    "partition_data", "index", base_offset=-1))


def _produce(ctx: RequestContext, body: Any, handler: Handler, authz: Authorizer) -> Outcome:
    whole = _txn_write(ctx, body, authz)
    allowed, denied = ([], list(body.topic_data)) if whole else _PRODUCE.split(
        body, lambda t: authz.authorize(ctx, Op.WRITE, TOPIC, t.name))
    if denied and not allowed and int(body.acks) == 0:
        return CLOSE_CONNECTION  # Kafka's answer to a failed acks=0 produce
    return _PRODUCE.serve(ctx, body, handler, allowed, denied, whole or TOPIC_DENIED)


def _fetch(ctx: RequestContext, body: Any, handler: Handler, authz: Authorizer) -> Outcome:
    from odradek.protocol.fetch_response import FetchPartitionResult, FetchTopicResult

    from .handlers.fetch import handle_fetch

    if int(body.replica_id) >= 0:  # a follower: the inter-broker principal
        if authz.authorize(ctx, Op.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return handler(ctx, body)
        errors = [FetchTopicResult(t.topic, tuple(
            FetchPartitionResult(int(p.partition), int(TOPIC_DENIED)) for p in t.partitions))
            for t in body.topics]
        return handle_fetch(ctx, dataclasses.replace(body, topics=()), denied=errors)
    # A consumer: READ on each topic it reads, checked by the handler on every fetch (a
    # fetch session's partitions are read without being named in the request).
    readable: dict[str, bool] = {}

    def authorized(topic: str) -> bool:
        allowed = readable.get(topic)
        if allowed is None:
            allowed = readable[topic] = authz.authorize(ctx, Op.READ, TOPIC, topic)
        return allowed

    return handle_fetch(ctx, body, authorized=authorized)


_LIST_OFFSETS = Items("topics", _name, "topics", topic_partitions(
    "ListOffsetsTopicResponse", "name", "partitions", "ListOffsetsPartitionResponse",
    "partition_index", "partitions", "partition_index"))
_DESCRIBE_PRODUCERS = Items("topics", _name, "topics", topic_partitions(
    "TopicResponse", "name", "partitions", "PartitionResponse", "partition_index",
    "partition_indexes", None))
_EPOCHS = Items("topics", _name, "topics", topic_partitions(
    "OffsetForLeaderTopicResult", "topic", "partitions", "EpochEndOffset", "partition",
    "partitions", "partition"))
_DELETE_RECORDS = Items("topics", _name, "topics", topic_partitions(
    "DeleteRecordsTopicResult", "name", "partitions", "DeleteRecordsPartitionResult",
    "partition_index", "partitions", "partition_index"))


def _epochs(ctx: RequestContext, body: Any, handler: Handler, authz: Authorizer) -> Outcome:
    if int(getattr(body, "replica_id", -1)) >= 0:
        if authz.authorize(ctx, Op.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return handler(ctx, body)
        return _EPOCHS.serve(ctx, body, handler, [], list(body.topics), CLUSTER_DENIED)
    return _EPOCHS.rule(Op.DESCRIBE, TOPIC, TOPIC_DENIED)(ctx, body, handler, authz)


# -- groups ---------------------------------------------------------------------------------

_COMMIT = Items("topics", _name, "topics", topic_partitions(
    "OffsetCommitResponseTopic", "name", "partitions", "OffsetCommitResponsePartition",
    "partition_index", "partitions", "partition_index"))
_TXN_COMMIT = Items("topics", _name, "topics", topic_partitions(
    "TxnOffsetCommitResponseTopic", "name", "partitions", "TxnOffsetCommitResponsePartition",
    "partition_index", "partitions", "partition_index"))
_OFFSET_DELETE = Items("topics", _name, "topics", topic_partitions(
    "OffsetDeleteResponseTopic", "name", "partitions", "OffsetDeleteResponsePartition",
    "partition_index", "partitions", "partition_index"))
_OFFSET_FETCH_TOPICS = topic_partitions(
    "OffsetFetchResponseTopic", "name", "partitions", "OffsetFetchResponsePartition",
    "partition_index", "partition_indexes", None, committed_offset=-1, metadata="")


def _offset_fetch(ctx: RequestContext, body: Any, handler: Handler, authz: Authorizer) -> Outcome:
    if not authz.authorize(ctx, Op.READ, GROUP, body.group_id):
        if ctx.api_version >= 2:
            return error_answer(ctx, GROUP_DENIED)
        return blank(response(ctx).OffsetFetchResponse, topics=tuple(
            _OFFSET_FETCH_TOPICS(ctx, t, GROUP_DENIED) for t in body.topics or ()))
    if body.topics is None:  # all the group's topics: show only readable ones
        def readable(answer: Any) -> Any:
            answer = as_body(ctx, answer)
            kept = tuple(t for t in answer.topics if authz.allowed(ctx, Op.READ, TOPIC, t.name))
            return dataclasses.replace(answer, topics=kept)

        return then(handler(ctx, body), readable)
    items = Items("topics", _name, "topics", _OFFSET_FETCH_TOPICS)
    return items.rule(Op.READ, TOPIC, TOPIC_DENIED)(ctx, body, handler, authz)


def _offset_delete(ctx: RequestContext, body: Any, handler: Handler,
                   authz: Authorizer) -> Outcome:
    if not authz.authorize(ctx, Op.DELETE, GROUP, body.group_id):
        return error_answer(ctx, GROUP_DENIED)
    return _OFFSET_DELETE.rule(Op.READ, TOPIC, TOPIC_DENIED)(ctx, body, handler, authz)


def _group_of(body: Any) -> str:
    return str(body.group_id)


def _describe_groups(ctx: RequestContext, body: Any, handler: Handler,
                     authz: Authorizer) -> Outcome:
    items = Items("groups", str, "groups", lambda c, g, code: blank(
        response(c).DescribedGroup, group_id=g, error_code=code,
        authorized_operations=UNKNOWN_OPERATIONS))
    outcome = items.rule(Op.DESCRIBE, GROUP, GROUP_DENIED)(ctx, body, handler, authz)
    if not getattr(body, "include_authorized_operations", False):
        return outcome

    def with_operations(answer: Any) -> Any:
        return dataclasses.replace(answer, groups=tuple(
            dataclasses.replace(g, authorized_operations=authz.operations(ctx, GROUP, g.group_id))
            if g.error_code == E.none else g for g in answer.groups))

    return then(outcome, with_operations)


def _list_groups(ctx: RequestContext, body: Any, handler: Handler, authz: Authorizer) -> Outcome:
    if authz.allowed(ctx, Op.DESCRIBE, CLUSTER, CLUSTER_NAME):
        return handler(ctx, body)

    def visible(answer: Any) -> Any:
        return dataclasses.replace(answer, groups=tuple(
            g for g in answer.groups if authz.allowed(ctx, Op.DESCRIBE, GROUP, g.group_id)))

    return then(handler(ctx, body), visible)


def _find_coordinator(ctx: RequestContext, body: Any, handler: Handler,
                      authz: Authorizer) -> Outcome:
    kind, code = (TXN, TXN_DENIED) if int(getattr(body, "key_type", 0)) == 1 else (
        GROUP, GROUP_DENIED)
    if ctx.api_version < 4:
        if authz.authorize(ctx, Op.DESCRIBE, kind, body.key):
            return handler(ctx, body)
        return blank(response(ctx).FindCoordinatorResponse, error_code=code, node_id=-1)
    items = Items("coordinator_keys", str, "coordinators", lambda c, key, err: blank(
        response(c).Coordinator, key=key, node_id=-1, error_code=err))
    return items.rule(Op.DESCRIBE, kind, code)(ctx, body, handler, authz)


# -- transactions and producer ids ------------------------------------------------------------

def _init_producer_id(ctx: RequestContext, body: Any, handler: Handler,
                      authz: Authorizer) -> Outcome:
    txn = body.transactional_id
    if txn is not None:
        if authz.authorize(ctx, Op.WRITE, TXN, txn):
            return handler(ctx, body)
        return error_answer(ctx, TXN_DENIED)
    if authz.allowed(ctx, Op.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME) or \
            authz.allowed_any(ctx, Op.WRITE, TOPIC):
        return handler(ctx, body)
    authz.denied(ctx, Op.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME)
    return error_answer(ctx, CLUSTER_DENIED)


_ADD_PARTITIONS = Items("v3_and_below_topics", _name, "results_by_topic_v3_and_below",
                        topic_partitions("AddPartitionsToTxnTopicResult", "name",
                                         "results_by_partition",
                                         "AddPartitionsToTxnPartitionResult", "partition_index",
                                         "partitions", None, error_field="partition_error_code"))


def _add_partitions(ctx: RequestContext, body: Any, handler: Handler,
                    authz: Authorizer) -> Outcome:
    topics = list(body.v3_and_below_topics)
    whole = _txn_write(ctx, body, authz)
    if whole is not None:
        return _ADD_PARTITIONS.serve(ctx, body, handler, [], topics, whole)
    allowed, denied = _ADD_PARTITIONS.split(
        body, lambda t: authz.authorize(ctx, Op.WRITE, TOPIC, t.name))
    if not denied:
        return handler(ctx, body)
    # Kafka adds nothing when any topic is denied: the others are OPERATION_NOT_ATTEMPTED.
    results = (_ADD_PARTITIONS.results(ctx, denied, TOPIC_DENIED)
               + _ADD_PARTITIONS.results(ctx, allowed, E.operation_not_attempted))
    return blank(response(ctx).AddPartitionsToTxnResponse,
                 results_by_topic_v3_and_below=tuple(results))


def _add_offsets(ctx: RequestContext, body: Any, handler: Handler, authz: Authorizer) -> Outcome:
    code = _txn_then_group(ctx, body, authz)
    return handler(ctx, body) if code is None else error_answer(ctx, code)


def _describe_transactions(ctx: RequestContext, body: Any, handler: Handler,
                           authz: Authorizer) -> Outcome:
    items = Items("transactional_ids", str, "transaction_states", lambda c, txn, code: blank(
        response(c).TransactionState, transactional_id=txn, error_code=code,
        transaction_state="", producer_id=-1))
    return items.rule(Op.DESCRIBE, TXN, TXN_DENIED)(ctx, body, handler, authz)


def _list_transactions(ctx: RequestContext, body: Any, handler: Handler,
                       authz: Authorizer) -> Outcome:
    def visible(answer: Any) -> Any:
        return dataclasses.replace(answer, transaction_states=tuple(
            t for t in answer.transaction_states
            if authz.allowed(ctx, Op.DESCRIBE, TXN, t.transactional_id)))

    return then(handler(ctx, body), visible)


def _write_markers_denied(ctx: RequestContext, body: Any, code: ErrorCode) -> Any:
    module = response(ctx)
    return module.WriteTxnMarkersResponse(markers=tuple(
        module.WritableTxnMarkerResult(producer_id=m.producer_id, topics=tuple(
            module.WritableTxnMarkerTopicResult(name=t.name, partitions=tuple(
                module.WritableTxnMarkerPartitionResult(partition_index=p, error_code=code)
                for p in t.partition_indexes)) for t in m.topics))
        for m in body.markers))


# -- topics and configs -------------------------------------------------------------------

def _create_topics(ctx: RequestContext, body: Any, handler: Handler,
                   authz: Authorizer) -> Outcome:
    items = Items("topics", _name, "topics", lambda c, t, code: blank(
        response(c).CreatableTopicResult, name=t.name, error_code=code,
        topic_config_error_code=0))
    if authz.allowed(ctx, Op.CREATE, CLUSTER, CLUSTER_NAME):
        return handler(ctx, body)
    return items.rule(Op.CREATE, TOPIC, TOPIC_DENIED)(ctx, body, handler, authz)


def _delete_topics(ctx: RequestContext, body: Any, handler: Handler,
                   authz: Authorizer) -> Outcome:
    field = "topic_names" if ctx.api_version < 6 else "topics"
    items = Items(field, _name, "responses", lambda c, t, code: blank(
        response(c).DeletableTopicResult, name=_name(t), error_code=code))
    return items.rule(Op.DELETE, TOPIC, TOPIC_DENIED)(ctx, body, handler, authz)


_CREATE_PARTITIONS = Items("topics", _name, "results", lambda c, t, code: blank(
    response(c).CreatePartitionsTopicResult, name=t.name, error_code=code))

_CONFIG_TOPIC, _CONFIG_BROKER = 2, 4


def _config_rule(operation: Op, answer_field: str, result_cls: str) -> Rule:
    """Describe/Alter(Incremental)Configs: topics need ``operation`` on the topic, broker
    and broker-logger resources on the cluster."""

    def denied(ctx: RequestContext, item: Any, code: ErrorCode) -> Any:
        kind = int(item.resource_type)
        return blank(getattr(response(ctx), result_cls), resource_type=kind,
                     resource_name=item.resource_name,
                     error_code=TOPIC_DENIED if kind == _CONFIG_TOPIC else CLUSTER_DENIED)

    items = Items("resources", lambda r: str(r.resource_name), answer_field, denied)

    def rule(ctx: RequestContext, body: Any, handler: Handler, authz: Authorizer) -> Outcome:
        def ok(item: Any) -> bool:
            if int(item.resource_type) == _CONFIG_TOPIC:
                return authz.authorize(ctx, operation, TOPIC, item.resource_name)
            return authz.authorize(ctx, operation, CLUSTER, CLUSTER_NAME)

        allowed, refused = items.split(body, ok)
        return items.serve(ctx, body, handler, allowed, refused, CLUSTER_DENIED)

    return rule


def _alter_quotas_denied(ctx: RequestContext, body: Any, code: ErrorCode) -> Any:
    module = response(ctx)
    return blank(module.AlterClientQuotasResponse, entries=tuple(
        blank(module.EntryData, error_code=code, entity=tuple(
            module.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
            for e in entry.entity)) for entry in body.entries))


def _alter_scram_denied(ctx: RequestContext, body: Any, code: ErrorCode) -> Any:
    users = dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
    module = response(ctx)
    return blank(module.AlterUserScramCredentialsResponse, results=tuple(
        blank(module.AlterUserScramCredentialsResult, user=u, error_code=code) for u in users))


# -- cluster ------------------------------------------------------------------------------

def _describe_cluster(ctx: RequestContext, body: Any, handler: Handler,
                      authz: Authorizer) -> Outcome:
    if not authz.authorize(ctx, Op.DESCRIBE, CLUSTER, CLUSTER_NAME):
        return error_answer(ctx, CLUSTER_DENIED)
    if not getattr(body, "include_cluster_authorized_operations", False):
        return handler(ctx, body)
    return then(handler(ctx, body), lambda answer: dataclasses.replace(
        answer, cluster_authorized_operations=authz.operations(ctx, CLUSTER, CLUSTER_NAME)))


def _delete_acls_denied(ctx: RequestContext, body: Any, code: ErrorCode) -> Any:
    module = response(ctx)
    return blank(module.DeleteAclsResponse, filter_results=tuple(
        blank(module.DeleteAclsFilterResult, error_code=code) for _ in body.filters))


def _create_acls_denied(ctx: RequestContext, body: Any, code: ErrorCode) -> Any:
    module = response(ctx)
    return blank(module.CreateAclsResponse, results=tuple(
        blank(module.AclCreationResult, error_code=code) for _ in body.creations))


RULES: dict[int, Rule] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _LIST_OFFSETS.rule(Op.DESCRIBE, TOPIC, TOPIC_DENIED),
    ApiKey.METADATA: metadata_rule,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _epochs,
    ApiKey.DELETE_RECORDS: _DELETE_RECORDS.rule(Op.DELETE, TOPIC, TOPIC_DENIED),
    ApiKey.DESCRIBE_PRODUCERS: _DESCRIBE_PRODUCERS.rule(Op.READ, TOPIC, TOPIC_DENIED),
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _CREATE_PARTITIONS.rule(Op.ALTER, TOPIC, TOPIC_DENIED),
    ApiKey.DESCRIBE_CONFIGS: _config_rule(Op.DESCRIBE_CONFIGS, "results",
                                          "DescribeConfigsResult"),
    ApiKey.ALTER_CONFIGS: _config_rule(Op.ALTER_CONFIGS, "responses",
                                       "AlterConfigsResourceResponse"),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _config_rule(Op.ALTER_CONFIGS, "responses",
                                                   "AlterConfigsResourceResponse"),
    # groups
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.JOIN_GROUP: named_rule(Op.READ, GROUP, _group_of, GROUP_DENIED),
    ApiKey.SYNC_GROUP: named_rule(Op.READ, GROUP, _group_of, GROUP_DENIED),
    ApiKey.HEARTBEAT: named_rule(Op.READ, GROUP, _group_of, GROUP_DENIED),
    ApiKey.LEAVE_GROUP: named_rule(Op.READ, GROUP, _group_of, GROUP_DENIED),
    ApiKey.OFFSET_COMMIT: _COMMIT.rule(Op.READ, TOPIC, TOPIC_DENIED, also=_group_read),
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.OFFSET_DELETE: _offset_delete,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: named_rule(Op.READ, GROUP, _group_of, GROUP_DENIED),
    ApiKey.CONSUMER_GROUP_DESCRIBE: Items("group_ids", str, "groups", lambda c, g, code: blank(
        response(c).DescribedGroup, group_id=g, error_code=code)).rule(
        Op.DESCRIBE, GROUP, GROUP_DENIED),
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.DELETE_GROUPS: Items("groups_names", str, "results", lambda c, g, code: blank(
        response(c).DeletableGroupResult, group_id=g, error_code=code)).rule(
        Op.DELETE, GROUP, GROUP_DENIED),
    # transactions
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions,
    ApiKey.ADD_OFFSETS_TO_TXN: _add_offsets,
    ApiKey.END_TXN: named_rule(Op.WRITE, TXN, lambda b: str(b.transactional_id), TXN_DENIED),
    ApiKey.TXN_OFFSET_COMMIT: _TXN_COMMIT.rule(Op.READ, TOPIC, TOPIC_DENIED,
                                               also=_txn_then_group),
    ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
    ApiKey.LIST_TRANSACTIONS: _list_transactions,
    ApiKey.WRITE_TXN_MARKERS: cluster_rule(Op.CLUSTER_ACTION, denied=_write_markers_denied),
    # cluster
    ApiKey.CONTROLLED_SHUTDOWN: cluster_rule(Op.CLUSTER_ACTION),
    ApiKey.DESCRIBE_CLUSTER: _describe_cluster,
    ApiKey.DESCRIBE_LOG_DIRS: cluster_rule(Op.DESCRIBE),
    ApiKey.ELECT_LEADERS: cluster_rule(Op.ALTER),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: cluster_rule(Op.ALTER),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: cluster_rule(Op.DESCRIBE),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: cluster_rule(Op.DESCRIBE_CONFIGS),
    ApiKey.ALTER_CLIENT_QUOTAS: cluster_rule(Op.ALTER_CONFIGS, denied=_alter_quotas_denied),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: cluster_rule(Op.DESCRIBE),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: cluster_rule(Op.ALTER, denied=_alter_scram_denied),
    ApiKey.CREATE_ACLS: cluster_rule(Op.ALTER, denied=_create_acls_denied),
    ApiKey.DESCRIBE_ACLS: cluster_rule(Op.DESCRIBE),
    ApiKey.DELETE_ACLS: cluster_rule(Op.ALTER, denied=_delete_acls_denied),
}
