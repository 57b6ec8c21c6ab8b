"""What a kio message field is on the wire, read once from the message classes.

kio generates one frozen dataclass per (API, version, entity); a field's Python type and its
``kafka_type``/``tag`` metadata say how it is encoded. This module is the one place that
reads them (kio's own introspection module is private), for the request/response builder
(:mod:`.builder`) and the length guard (:mod:`.length_guard`).

The encoding rules mirror ``kio.serial.entity_writer``: ``X | None`` is a nullable value,
``tuple[X, ...]`` an array (a null array and an empty one share the length field; elements
are never null), a dataclass a nested entity; every other field names its ``kafka_type``.
A tagged field is optional by its presence, so it never carries a null marker.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache

__all__ = ["FieldShape", "field_shapes"]


@dataclasses.dataclass(frozen=True, slots=True)
class FieldShape:
    name: str
    kafka_type: str | None
    """kio's wire type (``int32``, ``string``, ``records``, ...); None for an entity."""
    entity: type | None
    """The nested dataclass for entity fields and arrays of entities."""
    array: bool
    nullable: bool
    """None is a legal value on the wire (always False for tagged fields)."""
    tag: int | None
    required: bool
    """The dataclass has no default for it."""


def _without_none(field_type: typing.Any, name: str) -> tuple[typing.Any, bool]:
    """``X | None`` -> (X, True); anything else -> (itself, False)."""
    if typing.get_origin(field_type) not in (types.UnionType, typing.Union):
        return field_type, False
    inner = [arg for arg in typing.get_args(field_type) if arg is not type(None)]
    if len(inner) != 1:
        raise TypeError(f"{name}: unsupported union {field_type}")
    return inner[0], True


def _shape(field: dataclasses.Field[typing.Any]) -> FieldShape:
    field_type: typing.Any = field.type
    if isinstance(field_type, str):
        raise TypeError(f"{field.name}: string annotation; kio schemas carry real types")
    field_type, nullable = _without_none(field_type, field.name)
    array = typing.get_origin(field_type) is tuple
    if array:
        field_type, _ = _without_none(typing.get_args(field_type)[0], field.name)
    tag = field.metadata.get("tag")
    entity = typing.cast(type, field_type) if dataclasses.is_dataclass(field_type) else None
    return FieldShape(
        name=field.name,
        kafka_type=None if entity is not None else str(field.metadata["kafka_type"]),
        entity=entity,
        array=array,
        nullable=nullable and tag is None,
        tag=None if tag is None else int(tag),
        required=(field.default is dataclasses.MISSING
                  and field.default_factory is dataclasses.MISSING),
    )


@cache
def field_shapes(entity: type) -> tuple[FieldShape, ...]:
    """The fields of a kio message or nested entity class, in declaration order."""
    return tuple(_shape(field) for field in dataclasses.fields(entity))
