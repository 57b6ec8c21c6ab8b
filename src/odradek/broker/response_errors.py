"""Error codes carried by a response, for ``odradek_request_errors_total{api,error}``.

Kafka counts every error code in a response (top level and per topic, partition, group...),
which is what an operator needs to see "NOT_LEADER_OR_FOLLOWER on Produce" climb during a
failover. Responses are kio's frozen dataclasses; walking every field of every entity of a
large Metadata answer would cost more than the request's own bookkeeping, so each response
type is inspected once and reduced to a plan: whether it has an ``error_code`` field, and
which fields hold nested entities (a tuple of them, or one). Scalars are never visited.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any

__all__ = ["count_errors"]

_Plan = tuple[bool, tuple[str, ...]]
_plans: dict[type, _Plan] = {}


def count_errors(body: Any, add: Callable[[int], None]) -> None:
    """Call ``add(code)`` for every non-zero ``error_code`` anywhere in ``body``.

    ``body`` is any kio entity, a response or one nested in it (so untyped): its fields
    are read by name, as its type's plan lists them."""
    plan = _plans.get(type(body))
    if plan is None:
        plan = _plans[type(body)] = _plan(type(body))
    has_error, nested = plan
    if has_error:
        code = int(body.error_code)
        if code:
            add(code)
    for name in nested:
        value = getattr(body, name)
        if type(value) is tuple:
            for item in value:
                count_errors(item, add)
        elif value is not None:
            count_errors(value, add)


def _plan(cls: type) -> _Plan:
    if not dataclasses.is_dataclass(cls):
        return False, ()
    has_error = False
    nested = []
    for field in dataclasses.fields(cls):
        if field.name == "error_code":
            has_error = True
        elif _holds_entities(field.type):
            nested.append(field.name)
    return has_error, tuple(nested)


def _holds_entities(annotation: object) -> bool:
    """True for ``Entity``, ``Entity | None`` and ``tuple[Entity, ...]``."""
    if isinstance(annotation, type):
        return dataclasses.is_dataclass(annotation)
    origin = typing.get_origin(annotation)
    if origin is tuple or origin is typing.Union or origin is types.UnionType:
        return any(_holds_entities(arg) for arg in typing.get_args(annotation)
                   if arg is not Ellipsis)
    return False
