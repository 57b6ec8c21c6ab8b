"""Just enough of the "consumer" embedded protocol to know which topics a member follows.

The coordinator treats subscriptions and assignments as opaque bytes except for two Kafka
behaviours that need the subscribed topics: offsets of topics nobody in a live group
subscribes to may expire, and OffsetDelete refuses (GROUP_SUBSCRIBED_TO_TOPIC) to delete
offsets a member still consumes. A subscription starts ``version int16, topics [string]``
(int32 count, int16-length strings) in every version, which is all we read.
"""

from __future__ import annotations

import struct

__all__ = ["CONSUMER_PROTOCOL_TYPE", "subscribed_topics"]

CONSUMER_PROTOCOL_TYPE = "consumer"


def subscribed_topics(subscription: bytes) -> frozenset[str] | None:
    """The topics in a consumer subscription, or ``None`` if it cannot be parsed."""
    try:
        (count,) = struct.unpack_from(">i", subscription, 2)
        pos = 6
        topics = set()
        for _ in range(count):
            (size,) = struct.unpack_from(">h", subscription, pos)
            pos += 2
            if size < 0 or pos + size > len(subscription):
                return None
            topics.add(subscription[pos : pos + size].decode())
            pos += size
        return frozenset(topics)
    except (struct.error, UnicodeDecodeError):
        return None
