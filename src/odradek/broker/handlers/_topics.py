"""Topic name rules shared by Metadata auto-creation and CreateTopics (Kafka's ``Topic``)."""

from __future__ import annotations

import re

from odradek.protocol.errors import InvalidTopic

__all__ = ["INTERNAL_TOPICS", "validate_topic_name"]

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def validate_topic_name(name: str | None) -> str:
    if not name:
        raise InvalidTopic("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopic(f"topic name cannot be {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopic(f"topic name is longer than {MAX_NAME_LENGTH} characters")
    if not _LEGAL.fullmatch(name):
        raise InvalidTopic(f"topic name {name!r} has characters outside [a-zA-Z0-9._-]")
    return name
