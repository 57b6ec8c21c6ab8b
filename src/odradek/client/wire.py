"""Client side of the codec: build kio request entities from plain data, pick versions.

The protocol package already frames requests (:func:`odradek.protocol.messages.encode_request`)
and parses responses (:func:`~odradek.protocol.messages.decode_response`); what a client also
needs is a way to write *one* description of a request that works at whichever version the
broker negotiated. :func:`build` does that: it takes a dict and constructs the kio entity of
the chosen version, dropping keys that version does not have, turning nested dicts into nested
entities, ints into ``timedelta`` for ``timedelta_i32/64`` fields and into ``ErrorCode`` for
error fields. So ``build(MetadataRequest_v1, {"topics": [{"name": "t", "topic_id": None}],
"allow_auto_topic_creation": False, ...})`` and the same dict at v12 both work.

:data:`CLIENT_VERSIONS` is what this client implements per API; the connection intersects it
with the broker's ApiVersions answer and uses the highest common version.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping
from functools import cache
from typing import Any

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.serial._introspect import EntityField, EntityTupleField, classify_field

from odradek.protocol.api_versions import ApiKey

__all__ = ["CLIENT_VERSIONS", "build", "datetime_ms", "field_names", "request_class", "to_ms"]

# (min, max) per API that this client can build and parse. Maxima stop where a later version
# changes semantics the client does not implement (FindCoordinator v4 batches keys,
# OffsetFetch v8 batches groups, Fetch v13 needs topic IDs).
CLIENT_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 9),
    ApiKey.FETCH: (4, 12),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (1, 12),
    ApiKey.OFFSET_COMMIT: (2, 8),
    ApiKey.OFFSET_FETCH: (1, 7),
    ApiKey.FIND_COORDINATOR: (0, 3),
    ApiKey.JOIN_GROUP: (2, 7),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 4),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 5),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
}


@cache
def request_class(api_key: int, version: int) -> Any:
    return load_request_schema(api_key, version)


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldPlan:
    name: str
    kind: str  # "entity", "entities", "timedelta", "error", "uuid", "plain"
    entity: Any = None
    required: bool = True


@cache
def _plan(entity: type) -> tuple[_FieldPlan, ...]:
    plans = []
    for f in dataclasses.fields(entity):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        kafka_type = f.metadata.get("kafka_type")
        cls = classify_field(f) if kafka_type is None else None
        if isinstance(cls, EntityTupleField):
            plans.append(_FieldPlan(f.name, "entities", cls.type_, required))
        elif isinstance(cls, EntityField):
            plans.append(_FieldPlan(f.name, "entity", cls.type_, required))
        elif kafka_type in ("timedelta_i32", "timedelta_i64"):
            plans.append(_FieldPlan(f.name, "timedelta", None, required))
        elif kafka_type == "error_code":
            plans.append(_FieldPlan(f.name, "error", None, required))
        elif kafka_type == "uuid":
            plans.append(_FieldPlan(f.name, "uuid", None, required))
        else:
            plans.append(_FieldPlan(f.name, "plain", None, required))
    return tuple(plans)


@cache
def field_names(entity: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(entity))


def build(entity: type, data: Mapping[str, Any]) -> Any:
    """Construct ``entity`` from ``data`` (see the module docstring). Missing required fields
    raise ``TypeError`` naming the entity, so a wrong request description fails loudly."""
    kwargs: dict[str, Any] = {}
    for plan in _plan(entity):
        if plan.name not in data:
            continue
        value = data[plan.name]
        if value is None:
            kwargs[plan.name] = None
        elif plan.kind == "entities":
            kwargs[plan.name] = tuple(build(plan.entity, item) for item in value)
        elif plan.kind == "entity":
            kwargs[plan.name] = build(plan.entity, value)
        elif plan.kind == "timedelta":
            kwargs[plan.name] = (
                value if isinstance(value, datetime.timedelta)
                else datetime.timedelta(milliseconds=value)
            )
        elif plan.kind == "error":
            kwargs[plan.name] = ErrorCode(value)
        elif plan.kind == "uuid":
            kwargs[plan.name] = value if isinstance(value, uuid.UUID) else uuid.UUID(int=value)
        elif isinstance(value, list):
            kwargs[plan.name] = tuple(value)
        else:
            kwargs[plan.name] = value
    try:
        return entity(**kwargs)
    except TypeError as exc:
        raise TypeError(f"cannot build {entity.__module__}.{entity.__name__}: {exc}") from None


def datetime_ms(value: datetime.datetime | int | None) -> int:
    """A kio ``datetime`` field (None standing for Kafka's -1) as epoch milliseconds."""
    if value is None:
        return -1
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    return int(value)


def to_ms(value: datetime.timedelta | int | None) -> int:
    """A kio timedelta field (or a plain int) as whole milliseconds."""
    if value is None:
        return 0
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)
