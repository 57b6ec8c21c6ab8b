"""The broker's ACL authorizer: Kafka's AclAuthorizer decisions for a request's principal.

Turned on by ``authorizer.class.name``; without it the broker builds none and every check
a handler makes (``RequestContext.authorize``, rules in :mod:`.access_rules`) is a
``None`` test. Decisions are
:func:`odradek.security.acl.decide` over the live :class:`~odradek.cluster.acls.AclCache`;
the host an ACL names is the client's IP address. Every denial is counted
(``odradek_authorization_denials_total``) and logged at INFO — at most a few lines a
second, with the number left out, so a client retrying a forbidden request cannot flood the
log.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from odradek.config_sections import SecurityConfig
from odradek.config_security import parse_super_users
from odradek.metrics.recorders import api_name
from odradek.security.acl import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    Operation,
    Permission,
    ResourcePattern,
    ResourceType,
    decide,
)

from .context import RequestContext

if TYPE_CHECKING:
    from odradek.cluster.acls import AclCache
    from odradek.metrics import BrokerMetrics

__all__ = ["Authorizer", "client_host"]

log = logging.getLogger(__name__)

_LOG_LINES_PER_SECOND = 5
_MAX_DECISIONS = 100_000


def client_host(peer: str) -> str:
    """``"10.0.0.7:51234"`` -> ``"10.0.0.7"`` (``"[::1]:5"`` -> ``"::1"``)."""
    host = peer.rpartition(":")[0] or peer
    return host.strip("[]")


class Authorizer:
    def __init__(self, security: SecurityConfig, cache: AclCache,
                 metrics: BrokerMetrics | None = None) -> None:
        self.super_users = parse_super_users(security.super_users)
        self.allow_if_no_acl = security.allow_everyone_if_no_acl_found
        self.cache = cache
        self._metrics = metrics
        # Decisions of the current ACL table (the produce path asks per topic and request);
        # dropped whenever the cache swaps in a new table, and bounded.
        self._decisions: dict[tuple[str, str, Operation, ResourceType, str], bool] = {}
        self._decided_for: object = None
        self._window = 0.0
        self._logged = 0
        self._suppressed = 0

    def allowed(self, ctx: RequestContext, operation: Operation, resource_type: ResourceType,
                name: str) -> bool:
        """The decision alone (no count, no log): for filtering and authorized operations."""
        principal, host, acls = ctx.principal, client_host(ctx.peer), self.cache.acls
        if acls is not self._decided_for or len(self._decisions) >= _MAX_DECISIONS:
            self._decisions, self._decided_for = {}, acls
        key = (principal, host, operation, resource_type, name)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decisions[key] = decide(
                acls, principal, host, operation, resource_type, name,
                super_user=principal in self.super_users, allow_if_no_acl=self.allow_if_no_acl)
        return decision

    def authorize(self, ctx: RequestContext, operation: Operation,
                  resource_type: ResourceType, name: str) -> bool:
        """The decision; a denial is counted and logged."""
        if self.allowed(ctx, operation, resource_type, name):
            return True
        self.denied(ctx, operation, resource_type, name)
        return False

    def allowed_any(self, ctx: RequestContext, operation: Operation,
                    resource_type: ResourceType) -> bool:
        """Kafka's authorizeByResourceType: whether some resource of the type would allow
        ``operation`` — an ALLOW applies to the principal and no wildcard DENY covers
        every resource (InitProducerId of an idempotent producer: WRITE on any topic)."""
        principal, host = ctx.principal, client_host(ctx.peer)
        if principal in self.super_users:
            return True
        acls = self.cache.acls
        of_type = {p: e for p, e in acls.items() if p.resource_type == resource_type}
        if not of_type:
            return self.allow_if_no_acl
        wildcard = acls.get(ResourcePattern(resource_type, WILDCARD), frozenset())
        if any(e.permission is Permission.DENY and e.applies_to(principal, host)
               and e.operation in (operation, Operation.ALL) for e in wildcard):
            return False
        return any(decide({pattern: entries}, principal, host, operation, resource_type,
                          pattern.name)
                   for pattern, entries in of_type.items()
                   if any(e.permission is Permission.ALLOW for e in entries))

    def operations(self, ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
        """The ``authorized_operations`` bit set of one resource (bit n = operation code n)."""
        bits = 0
        for operation in SUPPORTED_OPERATIONS.get(resource_type, ()):
            if self.allowed(ctx, operation, resource_type, name):
                bits |= 1 << int(operation)
        return bits

    def denied(self, ctx: RequestContext, operation: Operation, resource_type: ResourceType,
               name: str) -> None:
        api = api_name(ctx.header.api_key)
        metrics = self._metrics
        if metrics is not None:
            metrics.connections.denied(api, resource_type.spelling, operation.spelling)
        now = time.monotonic()
        if now - self._window >= 1.0:
            self._window, self._logged = now, 0
        if self._logged >= _LOG_LINES_PER_SECOND:
            self._suppressed += 1
            return
        self._logged += 1
        suppressed, self._suppressed = self._suppressed, 0
        log.info("authorization denied: %s from %s may not %s %s:%s (%s)%s", ctx.principal,
                 client_host(ctx.peer), operation.spelling, resource_type.spelling, name, api,
                 f" [{suppressed} more denials not logged]" if suppressed else "")
