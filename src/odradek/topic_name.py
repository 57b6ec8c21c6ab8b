"""Kafka's topic name rules (``org.apache.kafka.common.internals.Topic``), in one place.

Every path that accepts a new topic name — CreateTopics, Metadata auto-creation, the
cluster's own admin writes — checks it here, with Kafka's messages.
"""

from __future__ import annotations

import re

from odradek.protocol.errors import InvalidTopic

__all__ = ["INTERNAL_TOPICS", "MAX_TOPIC_NAME_LENGTH", "validate_topic_name"]

MAX_TOPIC_NAME_LENGTH = 249
"""Leaves room for the ``-<partition>`` suffix and a ``.deleted`` rename within a 255-byte
directory name."""

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str | None) -> str:
    """``name`` if it is legal: ``[a-zA-Z0-9._-]``, 1 to 249 characters, not ``.`` or ``..``.

    :raises InvalidTopic: otherwise, with Kafka's message.
    """
    if not name:
        raise InvalidTopic("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopic('Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopic(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
            f"characters, topic name: {name}"
        )
    if not _LEGAL.fullmatch(name):
        raise InvalidTopic(
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            f"alphanumerics, '.', '_' and '-'"
        )
    return name
