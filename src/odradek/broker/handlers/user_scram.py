"""AlterUserScramCredentials (v0) and DescribeUserScramCredentials (v0): SASL users.

What ``kafka-configs --alter --add-config 'SCRAM-SHA-256=[password=..]' --entity-type
users`` and ``odradek users`` send. The client salts and hashes the password itself
(``salted_password``), so it never crosses the wire; the broker derives StoredKey and
ServerKey from it and stores them in ``/config/users/<user>`` (:mod:`odradek.cluster.
user_credentials`). Validation follows Kafka's ZooKeeper mode, one result per user.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import NO_THROTTLE, build, build_response, response_module
from odradek.protocol.errors import ClusterAuthorizationFailed
from odradek.security.acl import CLUSTER_NAME, Operation, ResourceType
from odradek.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, ScramMechanism

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import (
        AlterUserScramCredentialsRequest,
        DescribeUserScramCredentialsRequest,
        ScramCredentialUpsertion,
    )

__all__ = ["handle_alter_user_scram_credentials", "handle_describe_user_scram_credentials"]

log = logging.getLogger(__name__)

_MECHANISMS = {m.mechanism_name: m for m in ScramMechanism}


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _mechanism(kafka_type: int) -> ScramMechanism:
    try:
        return ScramMechanism.of_type(int(kafka_type))
    except ValueError:
        raise _Refused(ErrorCode.unsupported_sasl_mechanism,
                       f"Unknown SCRAM mechanism type {kafka_type}") from None


def _check_upsertion(
    upsertion: ScramCredentialUpsertion,
) -> tuple[ScramMechanism, ScramCredential]:
    mechanism = _mechanism(upsertion.mechanism)
    iterations = int(upsertion.iterations)
    if iterations < MIN_ITERATIONS:
        raise _Refused(ErrorCode.unacceptable_credential, "Too few iterations")
    if iterations > MAX_ITERATIONS:
        raise _Refused(ErrorCode.unacceptable_credential, "Too many iterations")
    salt, salted = bytes(upsertion.salt), bytes(upsertion.salted_password)
    if not salt or not salted:
        raise _Refused(ErrorCode.unacceptable_credential, "Salt and password must not be empty")
    return mechanism, ScramCredential.from_salted_password(mechanism, salted, salt, iterations)


def handle_alter_user_scram_credentials(
    ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> Awaitable[ResponsePayload]:
    return _alter(ctx, request)


async def _alter(ctx: RequestContext, request: AlterUserScramCredentialsRequest) -> ResponsePayload:
    module = response_module(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ctx.api_version)
    # A deletion or an upsertion, told apart by the tag (mypy does not narrow by it).
    changes: dict[str, list[tuple[str, Any]]] = {}
    seen = Counter((str(item.name), int(item.mechanism))
                   for items in (request.deletions, request.upsertions) for item in items)
    for deletion in request.deletions:
        changes.setdefault(str(deletion.name), []).append(("delete", deletion))
    for upsertion in request.upsertions:
        changes.setdefault(str(upsertion.name), []).append(("upsert", upsertion))
    allowed = ctx.authorize(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)
    results = []
    for user, items in changes.items():
        code, message = ErrorCode.none, None
        try:
            if not allowed:
                refusal = ClusterAuthorizationFailed()
                raise _Refused(refusal.code, str(refusal))
            if not user:
                raise _Refused(ErrorCode.unacceptable_credential, "Username must not be empty")
            if any(seen[(user, int(item.mechanism))] > 1 for _, item in items):
                raise _Refused(ErrorCode.duplicate_resource,
                               "A user credential cannot be altered twice in the same request")
            await _apply(ctx, user, items)
        except _Refused as exc:
            code, message = exc.code, str(exc)
        results.append(build(module.AlterUserScramCredentialsResult, user=user,
                             error_code=code, error_message=message))
    return build_response(module.AlterUserScramCredentialsResponse, throttle_time=NO_THROTTLE,
                          results=tuple(results))


async def _apply(ctx: RequestContext, user: str, items: list[tuple[str, Any]]) -> None:
    upserts: dict[str, str] = {}
    deletes: list[str] = []
    for kind, item in items:
        if kind == "delete":
            deletes.append(_mechanism(item.mechanism).mechanism_name)
        else:
            mechanism, credential = _check_upsertion(item)
            upserts[mechanism.mechanism_name] = credential.to_kafka_string()

    def update(current: Mapping[str, str]) -> Mapping[str, str]:
        wanted = dict(current)
        for name in deletes:
            if wanted.pop(name, None) is None:
                raise _Refused(ErrorCode.resource_not_found,
                               "Attempt to delete a user credential that does not exist")
        wanted.update(upserts)
        return wanted

    await ctx.services.cluster.alter_user_config(user, update)
    log.info("SCRAM credentials of user %r altered by %s (%s): set %s, deleted %s", user,
             ctx.principal, ctx.peer, sorted(upserts), sorted(deletes))


def handle_describe_user_scram_credentials(
    ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> Awaitable[ResponsePayload]:
    return _describe(ctx, request)


async def _describe(
    ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> ResponsePayload:
    module = response_module(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ctx.api_version)
    if not ctx.authorize(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        refusal = ClusterAuthorizationFailed()
        return build_response(module.DescribeUserScramCredentialsResponse,
                              throttle_time=NO_THROTTLE, error_code=refusal.code,
                              error_message=str(refusal), results=())
    cluster = ctx.services.cluster
    requested = [str(user.name) for user in request.users or ()]
    describe_all = not requested
    users = await cluster.users() if describe_all else list(dict.fromkeys(requested))
    counts = Counter(requested)
    results = []
    for user in users:
        infos: tuple[object, ...] = ()
        code, message = ErrorCode.none, None
        if counts[user] > 1:
            code, message = ErrorCode.duplicate_resource, f"Cannot describe SCRAM credentials " \
                                                          f"for the same user twice: {user}"
        else:
            config = await cluster.user_config(user)
            infos = tuple(
                build(module.CredentialInfo, mechanism=mechanism.kafka_type,
                      iterations=ScramCredential.from_kafka_string(config[name]).iterations)
                for name, mechanism in _MECHANISMS.items() if name in config)
            if not infos:
                if describe_all:
                    continue  # a /config/users znode holding only quotas
                code = ErrorCode.resource_not_found
                message = f"Attempt to describe a user credential that does not exist: {user}"
        results.append(build(module.DescribeUserScramCredentialsResult, user=user,
                             error_code=code, error_message=message, credential_infos=infos))
    return build_response(module.DescribeUserScramCredentialsResponse, throttle_time=NO_THROTTLE,
                          error_code=ErrorCode.none, error_message=None, results=tuple(results))
