"""Builders shared by the storage tests."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from odradek.config_sections import LogManagerConfig
from odradek.protocol.records import (
    BatchHeader,
    Record,
    decode_batches,
    encode_batch,
    validate_batches,
)
from odradek.storage import LogConfig, PartitionLog, open_log

BASE_TS = 1_700_000_000_000


def batch(
    values: Sequence[bytes | None],
    *,
    keys: Sequence[bytes | None] | None = None,
    timestamp: int = BASE_TS,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    keys = keys if keys is not None else [None] * len(values)
    records = [
        Record(timestamp=timestamp + i, key=key, value=value)
        for i, (key, value) in enumerate(zip(keys, values, strict=True))
    ]
    return encode_batch(
        records,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


def small_config(**overrides: object) -> LogConfig:
    settings: dict[str, object] = {
        "segment_bytes": 4096,
        "index_interval_bytes": 256,
        "segment_index_bytes": 4096,
        "retention_ms": -1,
        "file_delete_delay_ms": 0,
    }
    settings.update(overrides)
    return LogConfig(**settings)  # type: ignore[arg-type]


def new_log(tmp_path: Path, config: LogConfig | None = None, name: str = "topic-0") -> PartitionLog:
    return open_log(tmp_path / name, config or small_config())


def read_all(log: PartitionLog, start: int | None = None) -> list[tuple[BatchHeader, list[Record]]]:
    """Every batch from ``start`` (default log start) to the log end, via the read API."""
    out: list[tuple[BatchHeader, list[Record]]] = []
    offset = log.log_start_offset if start is None else start
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20, isolation_high_watermark=False)
        if result.region is None:
            break
        data = result.region.read_bytes()
        validate_batches(data)  # every readable batch must be CRC-valid
        batches = list(decode_batches(data))
        out.extend(batches)
        offset = batches[-1][0].next_offset
        assert result.next_offset >= offset, "ReadResult.next_offset must follow the region"
        offset = result.next_offset
    return out


def all_records(log: PartitionLog) -> Iterator[Record]:
    for _header, records in read_all(log):
        yield from records


def settings(*log_dirs: Path, **overrides: Any) -> LogManagerConfig:
    """The ``log`` section for a LogManager over ``log_dirs`` (defaults otherwise)."""
    return LogManagerConfig(log_dirs=log_dirs, **overrides)
