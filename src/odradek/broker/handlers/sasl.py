"""SASL: no mechanisms until the security issue lands; say so the way Kafka would."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.api_versions import ApiKey
from odradek.protocol.builder import build, response_module

from ..context import RequestContext

__all__ = ["handle_sasl_authenticate", "handle_sasl_handshake"]


def handle_sasl_handshake(ctx: RequestContext, request: Any) -> Any:
    module = response_module(ApiKey.SASL_HANDSHAKE, ctx.api_version)
    return build(
        module.SaslHandshakeResponse,
        error_code=ErrorCode.unsupported_sasl_mechanism,
        mechanisms=(),
    )


def handle_sasl_authenticate(ctx: RequestContext, request: Any) -> Any:
    module = response_module(ApiKey.SASL_AUTHENTICATE, ctx.api_version)
    return build(
        module.SaslAuthenticateResponse,
        error_code=ErrorCode.illegal_sasl_state,
        error_message="SASL is not enabled on this listener",
        auth_bytes=b"",
        session_lifetime_ms=0,
    )
