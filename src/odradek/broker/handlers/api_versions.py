"""ApiVersions: the version table every client reads first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.static.protocol import ResponsePayload

from odradek.protocol.negotiation import api_versions_response

from ..context import RequestContext

if TYPE_CHECKING:
    from odradek.protocol.api_types import ApiVersionsRequest

__all__ = ["handle_api_versions"]


def handle_api_versions(ctx: RequestContext, request: ApiVersionsRequest) -> ResponsePayload:
    # Unsupported versions never get here: the connection answers them in v0 layout.
    return api_versions_response(ctx.api_version)
