"""Building kio response objects without one code path per API version.

kio generates one module per (API, version) with the same class names in each; fields
come and go between versions. :func:`build` fills a class from keyword arguments and
silently drops those the version lacks, so a handler writes the newest shape once and
every older version is served from it. Plain ints and strings are accepted where kio's
phantom types are declared: kio writers only pack them.
"""

from __future__ import annotations

import datetime
import sys
from types import ModuleType
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.messages import response_type

__all__ = ["NO_THROTTLE", "build", "error_code", "response_module"]

NO_THROTTLE = datetime.timedelta(0)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def response_module(api_key: int, version: int) -> ModuleType:
    return sys.modules[response_type(api_key, version).__module__]


def build(cls: type, **fields: Any) -> Any:
    names = cls.__dataclass_fields__  # type: ignore[attr-defined]
    return cls(**{name: value for name, value in fields.items() if name in names})


def error_code(code: int | ErrorCode) -> ErrorCode:
    return code if isinstance(code, ErrorCode) else ErrorCode(code)


def timestamp_or_none(millis_since_epoch: int) -> datetime.datetime | None:
    """kio's nullable datetime fields: -1 on the wire is None."""
    if millis_since_epoch < 0:
        return None
    return _EPOCH + datetime.timedelta(milliseconds=millis_since_epoch)


def millis(value: datetime.timedelta) -> int:
    return int(value.total_seconds() * 1000)
