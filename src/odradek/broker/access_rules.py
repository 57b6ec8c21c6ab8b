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
    Rule,
    blank,
    cluster_rule,
    error_answer,
    response,
    then,
)
from .access_metadata import metadata_rule
from .authorizer import Authorizer
from .context import RequestContext
from .dispatch import Handler, Outcome

__all__ = ["RULES"]

E = ErrorCode
TOPIC_DENIED, GROUP_DENIED = E.topic_authorization_failed, E.group_authorization_failed
CLUSTER_DENIED, TXN_DENIED = E.cluster_authorization_failed, E.transactional_id_authorization_failed


def _name(item: Any) -> str:
    return str(item if isinstance(item, str) else getattr(item, "name", None) or item.topic)


# -- topics and configs -------------------------------------------------------------------

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
    ApiKey.METADATA: metadata_rule,
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
