"""AlterClientQuotas / DescribeClientQuotas on the wire (no Python client has them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kio.schema.alter_client_quotas.v1 import request as altering
from kio.schema.describe_client_quotas.v1 import request as describing
from kio.schema.errors import ErrorCode
from kio.static.primitive import f64, i8

from .wire import WireClient

Entity = Mapping[str, str | None]  # entity type -> name (None: the default entity)


def alter_quotas(port: int, entity: Entity, ops: Mapping[str, float | None],
                 validate_only: bool = False) -> tuple[str, str | None]:
    """Set (value) or remove (None) quota keys of one entity: (error name, message)."""
    body = altering.AlterClientQuotasRequest(validate_only=validate_only, entries=(
        altering.EntryData(
            entity=tuple(altering.EntityData(entity_type=k, entity_name=v)
                         for k, v in entity.items()),
            ops=tuple(altering.OpData(key=key, value=f64(value or 0.0), remove=value is None)
                      for key, value in ops.items())),))
    with WireClient(port) as client:
        (result,) = client.request(body).entries
    return ErrorCode(result.error_code).name, result.error_message


Described = list[tuple[dict[str, str | None], dict[str, float]]]


def describe_quotas(port: int, components: list[tuple[str, int, str | None]],
                    strict: bool = False) -> tuple[str, Described]:
    """(error name, [(entity, {key: value})]) for filter components (type, match, name)."""
    body = describing.DescribeClientQuotasRequest(strict=strict, components=tuple(
        describing.ComponentData(entity_type=kind, match_type=i8(match), match=name)
        for kind, match, name in components))
    with WireClient(port) as client:
        response: Any = client.request(body)
    entries = [({e.entity_type: e.entity_name for e in entry.entity},
                {v.key: float(v.value) for v in entry.values})
               for entry in response.entries or ()]
    return ErrorCode(response.error_code).name, sorted(entries, key=repr)
