"""ControlledShutdown (API key 7) v3 messages, in kio's entity style.

Kafka 4 removed the API with ZooKeeper mode, and kio (generated from Kafka 4 schemas)
with it; a ZK-mode broker still needs it to ask the controller to move its leaderships
before stopping. These classes mirror what kio would generate for version 3 (the first
flexible version: compact strings, tagged fields, request header v2, response header v1),
so kio's generic reader and writer serve them like any other message.
"""

# No "from __future__ import annotations": kio introspects the real field types.

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import BrokerId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64

__all__ = ["SCHEMAS", "ControlledShutdownRequest", "ControlledShutdownResponse"]

_API_KEY = i16(7)
_VERSION = i16(3)


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = _VERSION
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = _API_KEY
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    """The id of the broker for which controlled shutdown has been requested."""
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """The broker epoch (the czxid of its registration znode)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RemainingPartition:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = _VERSION
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = _API_KEY
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_index: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = _VERSION
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = _API_KEY
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    remaining_partitions: tuple[RemainingPartition, ...]
    """The partitions that the broker still leads."""


SCHEMAS: dict[tuple[int, int], tuple[type, type]] = {
    (7, 3): (ControlledShutdownRequest, ControlledShutdownResponse),
}
