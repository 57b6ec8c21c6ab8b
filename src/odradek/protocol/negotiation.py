"""ApiVersions answers, including the one quirk every client relies on.

A client opens with ApiVersions at the newest version *it* knows. If that is newer than
ours, Kafka answers in the v0 layout (whatever version was asked), with error 35
UNSUPPORTED_VERSION and only ApiVersions' own range, so the client can retry at a version
both sides speak. :func:`unsupported_api_versions_frame` builds those bytes by hand: there
is no kio message for "v0 layout answering a v4 request".
"""

from __future__ import annotations

import datetime
import importlib
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32Timedelta
from kio.static.protocol import ResponsePayload

from .api_versions import ADVERTISED, ApiKey
from .framing import size_prefix
from .primitives import INT16, INT32

__all__ = ["NO_THROTTLE", "api_versions_response", "unsupported_api_versions_frame"]

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


def api_versions_response(version: int) -> ResponsePayload:
    """The full ApiVersions response body at ``version`` listing :data:`ADVERTISED`."""
    module = importlib.import_module(f"kio.schema.api_versions.v{version}.response")
    entries = tuple(
        module.ApiVersion(
            api_key=i16(key), min_version=i16(rng.min_version), max_version=i16(rng.max_version)
        )
        for key, rng in sorted(ADVERTISED.items())
    )
    kwargs: dict[str, Any] = {"error_code": ErrorCode.none, "api_keys": entries}
    if version >= 1:
        kwargs["throttle_time"] = NO_THROTTLE
    response: ResponsePayload = module.ApiVersionsResponse(**kwargs)  # module: by version
    return response


def unsupported_api_versions_frame(correlation_id: int) -> bytes:
    """Response (v0 header, v0 body) to an ApiVersions request at a version we lack."""
    own = ADVERTISED[ApiKey.API_VERSIONS]
    body = (
        INT32.pack(correlation_id)
        + INT16.pack(int(ErrorCode.unsupported_version))
        + INT32.pack(1)
        + INT16.pack(ApiKey.API_VERSIONS)
        + INT16.pack(own.min_version)
        + INT16.pack(own.max_version)
    )
    return size_prefix(len(body)) + body
