"""SaslHandshake (v0-v1) and SaslAuthenticate (v0-v2): driving the connection's
:class:`~odradek.broker.authenticator.SaslAuthenticator`.

A failed exchange is answered like Kafka: SASL_AUTHENTICATION_FAILED after
``connection.failed.authentication.delay.ms`` (slows password guessing; one try per
connection), then the connection is closed. With ``connections.max.reauth.ms`` the
session lifetime is sent in SaslAuthenticate (v1+) and the client re-authenticates on the
same connection (KIP-368: SaslHandshake + SaslAuthenticate again, same mechanism and user);
a connection whose session expired is closed at its next other request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from types import ModuleType
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import build_response, response_module
from odradek.protocol.fetch_response import EncodedResponse

from ..authenticator import AuthenticationFailed, SaslState
from ..context import RequestContext
from ..outcomes import CLOSE_CONNECTION, Marker

if TYPE_CHECKING:
    from odradek.protocol.api_types import SaslAuthenticateRequest, SaslHandshakeRequest

__all__ = ["handle_sasl_authenticate", "handle_sasl_handshake", "sasl_token_outcome"]

log = logging.getLogger(__name__)


def handle_sasl_handshake(ctx: RequestContext, request: SaslHandshakeRequest) -> ResponsePayload:
    module = response_module(ApiKey.SASL_HANDSHAKE, ctx.api_version)
    session = ctx.session
    sasl = session.sasl
    reauth = sasl is not None and sasl.state is SaslState.COMPLETE and session.reauth_ms > 0
    if sasl is None or (sasl.state is not SaslState.HANDSHAKE and not reauth):
        # Like Kafka: harmless on a non-SASL listener or once authenticated; a handshake
        # in the middle of an exchange ends the connection.
        if not session.authenticated:
            session.close_reason = "an unexpected SaslHandshake"
        return build_response(module.SaslHandshakeResponse, error_code=ErrorCode.illegal_sasl_state,
                              mechanisms=())
    mechanism = str(request.mechanism)
    if not sasl.handshake(mechanism, ctx.api_version):
        session.close_reason = (f"a re-authentication with {mechanism[:40]!r}" if reauth else
                                f"SASL mechanism {mechanism[:40]!r} is not enabled")
        return build_response(module.SaslHandshakeResponse,
                              error_code=ErrorCode.unsupported_sasl_mechanism,
                              mechanisms=sasl.enabled)
    session.reauthenticating = reauth
    return build_response(module.SaslHandshakeResponse, error_code=ErrorCode.none,
                          mechanisms=sasl.enabled)


def handle_sasl_authenticate(
    ctx: RequestContext, request: SaslAuthenticateRequest
) -> ResponsePayload | Awaitable[ResponsePayload]:
    module = response_module(ApiKey.SASL_AUTHENTICATE, ctx.api_version)
    sasl = ctx.session.sasl
    if sasl is None or sasl.state is not SaslState.AUTHENTICATE or sasl.raw_tokens:
        if not ctx.session.authenticated:
            ctx.session.close_reason = "an unexpected SaslAuthenticate"
        return build_response(module.SaslAuthenticateResponse,
                              error_code=ErrorCode.illegal_sasl_state,
                              error_message="SaslAuthenticate is not expected now", auth_bytes=b"",
                              session_lifetime=0)
    return _authenticate(ctx, module, bytes(request.auth_bytes))


async def _authenticate(ctx: RequestContext, module: ModuleType, token: bytes) -> ResponsePayload:
    try:
        reply, lifetime_ms = await _step(ctx, token)
    except AuthenticationFailed:
        mechanism = (ctx.session.sasl.mechanism if ctx.session.sasl else None) or "?"
        return build_response(module.SaslAuthenticateResponse,
                              error_code=ErrorCode.sasl_authentication_failed,
                              error_message=_failure_message(mechanism), auth_bytes=b"",
                              session_lifetime=0)
    return build_response(module.SaslAuthenticateResponse, error_code=ErrorCode.none,
                          error_message=None, auth_bytes=reply, session_lifetime=lifetime_ms)


def _failure_message(mechanism: str) -> str:
    """Apache Kafka's words for a failed login (clients and tools print them)."""
    if mechanism == "PLAIN":
        return "Authentication failed: Invalid username or password"
    return ("Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {mechanism}")


async def _step(ctx: RequestContext, token: bytes) -> tuple[bytes, int]:
    """One token through the authenticator: the reply and, once complete, the session
    lifetime (ms, 0: unlimited). A failure is logged, delayed, and marks the connection for
    closing after the answer."""
    session = ctx.session
    assert session.sasl is not None
    reauthenticating = session.reauthenticating
    lifetime_ms = 0
    try:
        reply = await session.sasl.step(token)
        if session.sasl.state is SaslState.COMPLETE:
            lifetime_ms = session.completed()
    except AuthenticationFailed as exc:
        _count(ctx, success=False)
        log.info("failed authentication with %s (%s): %s", ctx.peer, session.sasl.mechanism,
                 exc)
        session.close_reason = "failed SASL authentication"
        await asyncio.sleep(ctx.services.sections.security.failed_authentication_delay_ms
                            / 1000)
        raise
    if session.sasl.state is SaslState.COMPLETE:
        _count(ctx, success=True)
        log.debug("%s %s as %s", ctx.peer,
                  "re-authenticated" if reauthenticating else "authenticated", session.principal)
    return reply, lifetime_ms


def _count(ctx: RequestContext, *, success: bool) -> None:
    metrics = ctx.services.metrics
    if metrics is not None:
        metrics.connections.authenticated(ctx.listener, success)


def sasl_token_outcome(ctx: RequestContext, token: bytes) -> Awaitable[EncodedResponse | Marker]:
    """A bare token after a v0 handshake: the answer is a bare size-prefixed token too;
    a failure just closes the connection (Kafka sends nothing either)."""
    return _raw(ctx, token)


async def _raw(ctx: RequestContext, token: bytes) -> EncodedResponse | Marker:
    try:
        reply, _lifetime_ms = await _step(ctx, token)
    except AuthenticationFailed:
        return CLOSE_CONNECTION
    return EncodedResponse([len(reply).to_bytes(4, "big") + reply])
