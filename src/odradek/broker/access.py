"""Authorization around the handler table: the machinery the rules of :mod:`.access_rules`
are written with.

With an authorizer configured, :func:`guarded_table` wraps every handler with its API's
rule; handlers themselves know nothing of ACLs. A rule decides before the handler runs,
and either answers alone (everything denied: Kafka's error codes, never data), or runs the
handler on the allowed part of the request and adds the denied part's errors to the
answer (:class:`Items`), or filters what the answer shows (Metadata, ListGroups).

Some handlers answer with a pre-encoded frame (OffsetCommit's fast path); :func:`as_body`
decodes such a frame back into its message when a rule must add to it — only on the rare
requests that mix allowed and denied resources.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.builder import build, response_module
from odradek.protocol.messages import decode_response, response_type
from odradek.protocol.schema import field_shapes
from odradek.security.acl import CLUSTER_NAME, Operation, ResourceType

from .authorizer import Authorizer
from .context import RequestContext
from .dispatch import Handler, Outcome, is_awaitable
from .outcomes import Deferred, Marker

__all__ = ["Items", "Rule", "as_body", "blank", "guarded_table", "then"]

Rule = Callable[[RequestContext, Any, Handler, Authorizer], Outcome]

TOPIC, GROUP, CLUSTER, TXN = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                              ResourceType.TRANSACTIONAL_ID)
UNKNOWN_OPERATIONS = -(2**31)  # authorized_operations when not asked for


def guarded_table(table: Mapping[int, Handler], rules: Mapping[int, Rule],
                  authorizer: Authorizer) -> dict[int, Handler]:
    """``table`` with each handler behind its API's rule (an API without a rule — only the
    pre-authentication ones — is served as is)."""

    def guard(handler: Handler, rule: Rule) -> Handler:
        def guarded(ctx: RequestContext, body: Any) -> Outcome:
            return rule(ctx, body, handler, authorizer)

        return guarded

    return {key: guard(handler, rules[key]) if key in rules else handler
            for key, handler in table.items()}


def then(outcome: Outcome, finish: Callable[[Any], Any]) -> Outcome:
    """``finish(response body)`` once the handler's outcome is there (markers pass)."""
    if isinstance(outcome, Deferred):  # parked in a purgatory: finish what it responds
        respond = outcome.respond
        return Deferred(outcome.future, lambda result: then(respond(result), finish))
    if is_awaitable(outcome):
        async def later() -> Any:
            result = await outcome
            return result if isinstance(result, Marker) else finish(result)

        return later()
    return outcome if isinstance(outcome, Marker) else finish(outcome)


def as_body(ctx: RequestContext, outcome: Any) -> Any:
    """A response message from a handler's answer (decoding a pre-encoded frame)."""
    if not isinstance(outcome, list):
        return outcome
    frame = b"".join(bytes(chunk) for chunk in outcome)
    _, body = decode_response(memoryview(frame)[4:], ctx.header.api_key, ctx.api_version)
    return body


def response(ctx: RequestContext) -> Any:
    return response_module(ctx.header.api_key, ctx.api_version)


_SCALAR_BLANKS: dict[str, Any] = {
    "string": "", "bytes": b"", "bool": False, "int8": -1, "int16": -1, "int32": -1,
    "int64": -1, "uint16": 0, "float64": 0.0, "timedelta_i32": datetime.timedelta(0),
    "timedelta_i64": datetime.timedelta(0), "datetime_i64": -1, "uuid": uuid.UUID(int=0),
    "error_code": ErrorCode.none, "records": None,
}


def blank(cls: type, /, **given: Any) -> Any:
    """``entity`` with ``given`` and an empty value for every other required field: the
    body of an answer that carries only an error (and, where the entity has the field, the
    error's message, as Kafka sends it)."""
    values = dict(given)
    shapes = field_shapes(cls)
    code = given.get("error_code")
    if code is not None and "error_message" not in given and any(
            shape.name == "error_message" for shape in shapes):
        values["error_message"] = _MESSAGES.get(ErrorCode(code))
    for shape in shapes:
        if shape.name in values or not shape.required:
            continue
        if shape.array:
            values[shape.name] = ()
        elif shape.nullable:
            values[shape.name] = None
        elif shape.entity is not None:
            values[shape.name] = blank(shape.entity)
        else:
            values[shape.name] = _SCALAR_BLANKS.get(shape.kafka_type or "", 0)
    return build(cls, values)


def error_answer(ctx: RequestContext, code: ErrorCode) -> Any:
    """The whole request denied, for APIs whose answer has a top-level ``error_code``."""
    return blank(response_type(ctx.header.api_key, ctx.api_version), error_code=code)


_MESSAGES = {
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.transactional_id_authorization_failed: "Transactional Id authorization failed.",
}


def cluster_rule(operation: Operation, code: ErrorCode = ErrorCode.cluster_authorization_failed,
                 denied: Callable[[RequestContext, Any, ErrorCode], Any] | None = None) -> Rule:
    """An API allowed by one operation on the cluster; ``denied`` builds the answer (by
    default: the top-level error code)."""

    def rule(ctx: RequestContext, body: Any, handler: Handler, authz: Authorizer) -> Outcome:
        if authz.authorize(ctx, operation, CLUSTER, CLUSTER_NAME):
            return handler(ctx, body)
        return denied(ctx, body, code) if denied is not None else error_answer(ctx, code)

    return rule


def named_rule(operation: Operation, resource_type: ResourceType, name_of: Callable[[Any], str],
               code: ErrorCode) -> Rule:
    """An API about one named resource (a group, a transactional id): top-level error."""

    def rule(ctx: RequestContext, body: Any, handler: Handler, authz: Authorizer) -> Outcome:
        if authz.authorize(ctx, operation, resource_type, name_of(body)):
            return handler(ctx, body)
        return error_answer(ctx, code)

    return rule


@dataclass(frozen=True)
class Items:
    """A request that lists resources (topics, groups, config resources...) and an answer
    with one result per resource: how to split the one and extend the other.

    ``request_field``: the request's array; ``name``: an item -> its resource name;
    ``answer_field``: the answer's array; ``denied``: (ctx, item, code) -> the item's result.
    """

    request_field: str
    name: Callable[[Any], str]
    answer_field: str
    denied: Callable[[RequestContext, Any, ErrorCode], Any | Sequence[Any]]

    def split(self, body: Any, allowed: Callable[[Any], bool]) -> tuple[list[Any], list[Any]]:
        yes: list[Any] = []
        no: list[Any] = []
        for item in getattr(body, self.request_field) or ():
            (yes if allowed(item) else no).append(item)
        return yes, no

    def results(self, ctx: RequestContext, items: Iterable[Any], code: ErrorCode) -> list[Any]:
        out: list[Any] = []
        for item in items:
            result = self.denied(ctx, item, code)
            out.extend(result if isinstance(result, list) else [result])
        return out

    def serve(self, ctx: RequestContext, body: Any, handler: Handler,
              allowed: Sequence[Any], denied: Sequence[Any], code: ErrorCode,
              **top: Any) -> Outcome:
        """Run ``handler`` on the allowed items (if any) and add the denied ones' results."""
        errors = self.results(ctx, denied, code)
        if not denied:
            return handler(ctx, body)
        if not allowed:
            cls = response_type(ctx.header.api_key, ctx.api_version)
            return blank(cls, **{self.answer_field: tuple(errors)}, **top)
        narrowed = dataclasses.replace(body, **{self.request_field: tuple(allowed)})

        def merge(answer: Any) -> Any:
            answer = as_body(ctx, answer)
            merged = tuple(getattr(answer, self.answer_field)) + tuple(errors)
            return dataclasses.replace(answer, **{self.answer_field: merged})

        return then(handler(ctx, narrowed), merge)

    def rule(self, operation: Operation, resource_type: ResourceType, code: ErrorCode,
             also: Callable[[RequestContext, Any, Authorizer], ErrorCode | None] | None = None
             ) -> Rule:
        """Each item needs ``operation`` on its resource; ``also`` is a check of the whole
        request first (a group, a transactional id) whose error code fails every item."""

        def rule(ctx: RequestContext, body: Any, handler: Handler, authz: Authorizer) -> Outcome:
            if also is not None:
                whole = also(ctx, body, authz)
                if whole is not None:
                    items = list(getattr(body, self.request_field) or ())
                    return self.serve(ctx, body, handler, [], items, whole)
            allowed, denied = self.split(
                body, lambda item: authz.authorize(ctx, operation, resource_type,
                                                   self.name(item)))
            return self.serve(ctx, body, handler, allowed, denied, code)

        return rule


def topic_partitions(topic_cls: str, name_field: str, partitions_field: str,
                     partition_cls: str, index_field: str, request_partitions: str,
                     request_index: str | None, error_field: str = "error_code",
                     **extra: Any) -> Callable[[RequestContext, Any, ErrorCode], Any]:
    """The result of a denied topic: the topic with each requested partition failed."""

    def denied(ctx: RequestContext, item: Any, code: ErrorCode) -> Any:
        module = response(ctx)
        parts = getattr(item, request_partitions)
        indexes = [int(p) if request_index is None else int(getattr(p, request_index))
                   for p in parts]
        partitions = tuple(blank(getattr(module, partition_cls),
                                 **{index_field: i, error_field: code}, **extra)
                           for i in indexes)
        return blank(getattr(module, topic_cls),
                     **{name_field: getattr(item, _request_name(item)),
                        partitions_field: partitions})

    return denied


def _request_name(item: Any) -> str:
    return "name" if hasattr(item, "name") else "topic"
