"""How a partition log follows transactions: markers into producer state, aborts into indexes.

Why a module of its own: the same steps run on three paths - a leader append, a follower
append, and the header replay that rebuilds producer state after a restart or truncation -
and they must agree exactly, or an index would differ between replicas or across restarts.

* Only control batches are decoded (one tiny record each); data batches stay headers.
* A marker that closes an *aborted* transaction adds an entry to the ``.txnindex`` of the
  segment holding the marker, as Kafka does. Appending is idempotent per marker offset, so
  a replay over markers already indexed changes nothing.
* A control batch that is not a transaction marker (a type this broker does not know, from
  a newer peer) updates epochs only; on the follower and replay paths it is logged and
  skipped rather than refused, since the leader already accepted it.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Sequence

from odradek.protocol.control_records import TxnMarker, read_marker
from odradek.protocol.errors import CorruptRecord
from odradek.protocol.records import BatchHeader
from odradek.storage.aborted_txn import AbortedTxn
from odradek.storage.log_reader import LogState
from odradek.storage.producer_state import ProducerStateManager
from odradek.storage.segment import LogSegment

__all__ = [
    "apply_batch",
    "decode_markers",
    "lenient_markers",
    "marker_of_segment_batch",
    "replay_headers",
]

log = logging.getLogger(__name__)


def decode_markers(
    data: bytes | bytearray | memoryview, batches: Sequence[tuple[int, BatchHeader]]
) -> dict[int, TxnMarker]:
    """Markers of the control batches in ``data``, keyed by batch position in ``data``
    (a producer's base offsets are not assigned yet). Raises CorruptRecord for a control
    batch that is not a marker (the leader path refuses it)."""
    return {
        pos: read_marker(data, pos)
        for pos, header in batches
        if header.is_control
    }


def lenient_markers(
    data: bytes | bytearray | memoryview, batches: Sequence[tuple[int, BatchHeader]], name: str
) -> dict[int, TxnMarker]:
    """Markers keyed by base offset, for batches a leader already accepted (offsets are
    final): an undecodable control batch is logged and left out."""
    out: dict[int, TxnMarker] = {}
    for pos, header in batches:
        if not header.is_control:
            continue
        try:
            out[header.base_offset] = read_marker(data, pos)
        except CorruptRecord as exc:
            log.warning(
                "%s: control batch at %d is not a marker: %s", name, header.base_offset, exc
            )
    return out


def marker_of_segment_batch(
    segment: LogSegment, position: int, header: BatchHeader
) -> TxnMarker | None:
    """Decode the control batch at ``position`` of ``segment`` (replay path)."""
    try:
        return read_marker(segment.read_bytes(position, header.size))
    except CorruptRecord as exc:
        log.warning("%s: control batch at %d is not a marker: %s",
                    segment.log_path, header.base_offset, exc)
        return None


def apply_batch(
    producer_state: ProducerStateManager,
    segment: LogSegment,
    header: BatchHeader,
    marker: TxnMarker | None,
) -> None:
    """Update producer state with one batch now in ``segment``; index an aborted txn."""
    completed = producer_state.update(header, marker)
    if completed is not None and completed.aborted:
        segment.txn_index.append(
            AbortedTxn(
                completed.producer_id,
                completed.first_offset,
                completed.marker_offset,
                producer_state.stable_offset_after(completed),
            )
        )


def replay_headers(
    producer_state: ProducerStateManager, state: LogState, start_offset: int
) -> None:
    """Replay batch headers from ``start_offset`` to the end of ``state`` into producer state
    (no record decoding: only control batches are read). The caller holds the log lock, or
    is recovery, before anyone else sees the log."""
    index = max(bisect.bisect_right(state.base_offsets, start_offset) - 1, 0)
    for segment in state.segments[index:]:
        max_position = state.active_size if segment is state.segments[-1] else segment.size
        found = segment.translate_offset(start_offset, max_position)
        if found is None:
            continue
        for position, header in segment.iter_headers(found[0], max_position):
            if header.next_offset > start_offset:
                marker = (
                    marker_of_segment_batch(segment, position, header)
                    if header.is_control
                    else None
                )
                apply_batch(producer_state, segment, header, marker)
    producer_state.map_end_offset = state.log_end_offset
