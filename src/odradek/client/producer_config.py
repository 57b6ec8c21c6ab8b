"""Producer settings, named like the Java client's (dots become underscores), and how a
value becomes bytes. Kept apart from :mod:`odradek.client.producer` (the send path and the
sender loop) because the settings are read once, at construction, and by nothing else."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from odradek.protocol.compression import CODEC_BY_NAME

from .partitioner import PartitionerFn
from .security import ClientSecurity

__all__ = ["ProducerConfig", "to_bytes"]


def to_bytes(value: Any, what: str = "value") -> bytes | None:
    """Accept bytes-like and str (UTF-8); anything else needs a serializer."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"record {what} must be bytes or str (or configure a {what}_serializer), "
                    f"got {type(value).__name__}")


def _parse_acks(acks: int | str) -> int:
    if acks in ("all", "-1", -1):
        return -1
    if acks in (0, 1, "0", "1"):
        return int(acks)
    raise ValueError(f"acks must be 0, 1 or all, got {acks!r}")


def _parse_compression(codec: str | int | None) -> int:
    if codec is None:
        return 0
    if isinstance(codec, int):
        if codec not in range(5):
            raise ValueError(f"unknown compression codec {codec}")
        return codec
    try:
        return CODEC_BY_NAME[codec.lower()]
    except KeyError:
        raise ValueError(f"compression must be one of {', '.join(CODEC_BY_NAME)}; "
                         f"got {codec!r}") from None


class ProducerConfig:
    """Producer settings, named like the Java client's (dots become underscores)."""

    def __init__(self, bootstrap_servers: str | Iterable[str], *, client_id: str = "odradek",
                 acks: int | str = "all", compression_type: str | int | None = None,
                 linger_ms: float = 5, batch_size: int = 16_384,
                 buffer_memory: int = 32 * 1024 * 1024, max_request_size: int = 1_048_576,
                 enable_idempotence: bool | None = None, retries: int = 2_147_483_647,
                 retry_backoff_ms: int = 100, delivery_timeout_ms: int = 120_000,
                 request_timeout_ms: int = 30_000, max_block_ms: int = 60_000,
                 max_in_flight_requests_per_connection: int = 5,
                 metadata_max_age_ms: int = 300_000,
                 partitioner: PartitionerFn | None = None,
                 key_serializer: Callable[[Any], bytes | None] | None = None,
                 value_serializer: Callable[[Any], bytes | None] | None = None,
                 transactional_id: str | None = None, transaction_timeout_ms: int = 60_000,
                 **security: Any) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.security = ClientSecurity.create(**security)  # kafka-python's names
        self.client_id = client_id
        self.acks = _parse_acks(acks)
        self.compression = _parse_compression(compression_type)
        self.linger_ms = linger_ms
        self.batch_size = max(batch_size, 1)
        self.buffer_memory = buffer_memory
        self.max_request_size = max_request_size
        if transactional_id is not None:
            # Kafka's rule: a transactional producer is idempotent (its batches carry the
            # epoch and sequence numbers the transaction coordinator fences with).
            if not transactional_id:
                raise ValueError("transactional_id must not be empty")
            if enable_idempotence is False or self.acks != -1:
                raise ValueError("transactional_id requires enable_idempotence and acks=all")
            enable_idempotence = True
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        if enable_idempotence is None:
            enable_idempotence = self.acks == -1
        if enable_idempotence and self.acks != -1:
            raise ValueError("enable_idempotence requires acks=all")
        if enable_idempotence and not 1 <= max_in_flight_requests_per_connection <= 5:
            raise ValueError("enable_idempotence requires max_in_flight_requests_per_connection"
                             " between 1 and 5")
        self.enable_idempotence = enable_idempotence
        self.retries = retries
        self.retry_backoff_ms = retry_backoff_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self.max_block_ms = max_block_ms
        self.max_in_flight = max(1, max_in_flight_requests_per_connection)
        self.metadata_max_age_ms = metadata_max_age_ms
        self.partitioner = partitioner
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
