"""Metadata under an authorizer: what a client may see and auto-create (Kafka's rules).

* all topics requested: only the topics the principal may DESCRIBE are listed;
* topics named: one it may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED, exists or
  not; a missing one is auto-created only with CREATE on the cluster or the topic — without
  it the answer is UNKNOWN_TOPIC_OR_PARTITION (and TOPIC_AUTHORIZATION_FAILED if it may not
  even DESCRIBE it);
* ``topic_authorized_operations`` / ``cluster_authorized_operations`` are filled when the
  request asks for them.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.security.acl import CLUSTER_NAME, Operation

from .access import CLUSTER, TOPIC, UNKNOWN_OPERATIONS, blank, response, then
from .authorizer import Authorizer
from .context import RequestContext
from .dispatch import Handler, Outcome

__all__ = ["metadata_rule"]


def metadata_rule(ctx: RequestContext, body: Any, handler: Handler,
                  authz: Authorizer) -> Outcome:
    view = ctx.services.cluster.view
    names = [t.name for t in body.topics or () if t.name is not None]
    explicit = body.topics is not None and (ctx.api_version > 0 or bool(names))
    errors: dict[str, ErrorCode] = {}
    if explicit:
        may_create_all = authz.allowed(ctx, Operation.CREATE, CLUSTER, CLUSTER_NAME)
        for name in names:
            if not authz.authorize(ctx, Operation.DESCRIBE, TOPIC, name):
                errors[name] = ErrorCode.topic_authorization_failed
            elif name not in view.topics and not may_create_all and \
                    not authz.allowed(ctx, Operation.CREATE, TOPIC, name):
                errors[name] = ErrorCode.unknown_topic_or_partition
        if errors:
            kept = tuple(t for t in body.topics if t.name not in errors)
            body = dataclasses.replace(body, topics=kept)
    wanted = set(names) - set(errors)
    with_topic_ops = bool(getattr(body, "include_topic_authorized_operations", False))
    with_cluster_ops = bool(getattr(body, "include_cluster_authorized_operations", False))

    def finish(answer: Any) -> Any:
        module = response(ctx)
        topics = []
        for topic in answer.topics:
            if explicit and topic.name not in wanted:
                continue  # v0 with every named topic refused reads as "all topics"
            if not explicit and not authz.allowed(ctx, Operation.DESCRIBE, TOPIC, topic.name):
                continue
            if with_topic_ops and topic.error_code == ErrorCode.none:
                topic = dataclasses.replace(
                    topic, topic_authorized_operations=authz.operations(ctx, TOPIC, topic.name))
            topics.append(topic)
        for name, code in errors.items():
            topics.append(blank(module.MetadataResponseTopic, error_code=code, name=name,
                                topic_id=uuid.UUID(int=0), is_internal=False,
                                topic_authorized_operations=UNKNOWN_OPERATIONS))
        answer = dataclasses.replace(answer, topics=tuple(topics))
        if with_cluster_ops:
            answer = dataclasses.replace(answer, cluster_authorized_operations=authz.operations(
                ctx, CLUSTER, CLUSTER_NAME))
        return answer

    return then(handler(ctx, body), finish)
