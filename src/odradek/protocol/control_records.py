"""Transaction markers: the control batches that end a transaction in a partition.

Why here: a marker is a record batch like any other on disk and on the wire, so its layout
belongs with the record codec; the broker writes it (WriteTxnMarkers), the log reads it back
while rebuilding producer state, and consumers skip it. Kafka's layout, byte for byte:

* the batch: attributes have the *transactional* (0x10) and *control* (0x20) bits set,
  producerId/producerEpoch of the transaction, baseSequence -1, exactly one record;
* the record key (``ControlRecordType``)::

      version int16 (0), type int16 (0 = ABORT, 1 = COMMIT)

* the record value (``EndTransactionMarker``)::

      version int16 (0), coordinatorEpoch int32

Readers accept a key or value *longer* than these fields (later versions may append), as
Kafka does, but never a shorter one or an unknown type.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import NamedTuple

from odradek.protocol.errors import CorruptRecord
from odradek.protocol.records import Record, decode_batch, encode_batch

__all__ = ["ControlType", "TxnMarker", "control_type_of_key", "encode_marker_batch",
           "read_marker"]

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
CURRENT_VERSION = 0


class ControlType(IntEnum):
    ABORT = 0
    COMMIT = 1


class TxnMarker(NamedTuple):
    """What a control batch says: which producer, which outcome, from which coordinator."""

    producer_id: int
    producer_epoch: int
    control_type: ControlType
    coordinator_epoch: int

    @property
    def is_abort(self) -> bool:
        return self.control_type == ControlType.ABORT


def encode_marker_batch(marker: TxnMarker, timestamp_ms: int) -> bytes:
    """One control batch (base offset 0; the log assigns the real one)."""
    record = Record(
        timestamp=timestamp_ms,
        key=_KEY.pack(CURRENT_VERSION, int(marker.control_type)),
        value=_VALUE.pack(CURRENT_VERSION, marker.coordinator_epoch),
    )
    return encode_batch(
        [record],
        producer_id=marker.producer_id,
        producer_epoch=marker.producer_epoch,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
    )


def control_type_of_key(key: bytes | None) -> ControlType | None:
    """The type a control record's key names (None: too short or unknown)."""
    if key is None or len(key) < _KEY.size:
        return None
    try:
        return ControlType(_KEY.unpack_from(key)[1])
    except ValueError:
        return None


def read_marker(buf: bytes | bytearray | memoryview, pos: int = 0) -> TxnMarker:
    """Decode the control batch at ``pos``; CorruptRecord if it is not a valid marker."""
    header, records = decode_batch(buf, pos)
    if not header.is_control or len(records) != 1:
        raise CorruptRecord(f"not a transaction marker batch ({len(records)} records)")
    key, value = records[0].key, records[0].value
    if key is None or len(key) < _KEY.size or value is None or len(value) < _VALUE.size:
        raise CorruptRecord("transaction marker key or value too short")
    _key_version, type_code = _KEY.unpack_from(key)
    _value_version, coordinator_epoch = _VALUE.unpack_from(value)
    try:
        control_type = ControlType(type_code)
    except ValueError:
        raise CorruptRecord(f"unknown control record type {type_code}") from None
    return TxnMarker(header.producer_id, header.producer_epoch, control_type, coordinator_epoch)
