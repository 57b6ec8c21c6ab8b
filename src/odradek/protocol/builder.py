"""Building kio messages from plain values, once for every version of an API.

kio generates one class per (API, version) with the same names in each; fields come and go
between versions. :func:`build` fills a class from a mapping and/or keyword arguments and
drops the names that version lacks, so a handler or a client writes the newest shape once
and every older version is served from it. It also accepts the plain values a caller has
at hand where kio declares richer types: a dict (or a list of them) for a nested entity
(or an array of them), milliseconds for ``timedelta`` fields, epoch milliseconds (-1 =
null) for ``datetime`` fields, an int for ``ErrorCode`` and ``UUID`` fields, a list for an
array. Values already of
kio's types pass through untouched.

The helpers below convert kio's values back (:func:`millis`, :func:`epoch_millis`).
"""

from __future__ import annotations

import datetime
import sys
import uuid
from collections.abc import Callable, Hashable, Mapping
from functools import cache
from types import ModuleType
from typing import Any, TypeVar, cast

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from .messages import response_type
from .schema import FieldShape, field_shapes

__all__ = [
    "NO_THROTTLE",
    "build",
    "build_response",
    "epoch_millis",
    "millis",
    "response_module",
    "timestamp_or_none",
]

T = TypeVar("T")

NO_THROTTLE = datetime.timedelta(0)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

_Convert = Callable[[Any], Any]


def response_module(api_key: int, version: int) -> ModuleType:
    """The kio module of one response version (its classes share names across versions)."""
    return sys.modules[response_type(api_key, version).__module__]


def build(entity: type[T], data: Mapping[str, Any] | None = None, /, **fields: Any) -> T:
    """An ``entity`` from ``data`` and ``fields`` (see the module docstring).

    :raises TypeError: a field the version requires is missing (naming the class).
    """
    values = fields if data is None else {**data, **fields} if fields else data
    plan = _plan(cast(Hashable, entity))
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        if name in plan:
            convert = plan[name]
            kwargs[name] = value if convert is None or value is None else convert(value)
    try:
        return entity(**kwargs)
    except TypeError as exc:
        raise TypeError(f"cannot build {entity.__module__}.{entity.__name__}: {exc}") from None


def build_response(
    entity: type[Any], data: Mapping[str, Any] | None = None, /, **fields: Any
) -> ResponsePayload:
    """:func:`build` for a top-level response class of :func:`response_module`.

    The module is picked by version at run time, so mypy sees its classes as ``Any``; this
    states what the result is — a response payload — where a handler returns it.
    """
    response: ResponsePayload = build(entity, data, **fields)
    return response


@cache
def _plan(entity: Hashable) -> dict[str, _Convert | None]:
    """Field name -> the conversion its values may need (None: taken as given)."""
    return {shape.name: _converter(shape) for shape in field_shapes(cast(type, entity))}


# The converters run on the response path of every request: each first checks whether the
# value already has kio's type (the common case for handlers) with a cheap type test.

def _converter(shape: FieldShape) -> _Convert | None:
    nested = shape.entity
    if nested is not None:
        def one(value: Any) -> Any:
            return build(nested, value) if isinstance(value, dict) else value

        if shape.array:
            def many(items: Any) -> Any:
                if type(items) is tuple and not any(type(item) is dict for item in items):
                    return items
                return tuple(one(item) for item in items)

            return many
        return one
    scalar = _SCALAR_CONVERTERS.get(shape.kafka_type or "")
    if shape.array:
        if scalar is None:
            return _tuple
        return lambda items: tuple(scalar(item) for item in items)
    return scalar


def _tuple(items: Any) -> Any:
    return items if isinstance(items, tuple) else tuple(items)


def _timedelta(value: Any) -> datetime.timedelta:
    if isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(milliseconds=value)


def _datetime(value: Any) -> datetime.datetime | None:
    return value if isinstance(value, datetime.datetime) else timestamp_or_none(value)


def _error_code(value: Any) -> ErrorCode:
    return value if type(value) is ErrorCode else ErrorCode(value)


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(int=value)


_SCALAR_CONVERTERS: dict[str, _Convert] = {
    "timedelta_i32": _timedelta,
    "timedelta_i64": _timedelta,
    "datetime_i64": _datetime,
    "error_code": _error_code,
    "uuid": _uuid,
}


def timestamp_or_none(millis_since_epoch: int) -> datetime.datetime | None:
    """kio's nullable datetime fields: -1 on the wire is None."""
    if millis_since_epoch < 0:
        return None
    return _EPOCH + datetime.timedelta(milliseconds=millis_since_epoch)


def millis(value: datetime.timedelta | int | None) -> int:
    """A kio ``timedelta`` field (or a plain int; None as 0) in whole milliseconds."""
    if value is None:
        return 0
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def epoch_millis(value: datetime.datetime | int | None) -> int:
    """A kio ``datetime`` field (None standing for Kafka's -1) in epoch milliseconds."""
    if value is None:
        return -1
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    return int(value)
