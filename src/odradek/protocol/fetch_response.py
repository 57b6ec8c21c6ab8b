"""Fetch response encoder that never copies record data through Python (v4-v12).

kio would need each partition's records as ``bytes``; for a broker that means reading
segment files into memory just to write them out again. Instead this encoder lays out
the response as a list of chunks: ``bytes`` for everything the protocol wraps around the
records, and the storage layer's region objects (file descriptor + position + length)
where the records go. The connection writes ``bytes`` with ``send`` and regions with
``sendfile``, so record data goes from page cache to socket inside the kernel.

Layout per version (what changes): v4 adds last_stable_offset and aborted transactions,
v5 log_start_offset, v7 top-level error_code and session_id, v11 preferred_read_replica,
v12 is flexible (compact strings/arrays/records, tagged fields; diverging_epoch is
tag 0 of a partition). The records field is ``int32 length`` + bytes before v12 and
``unsigned varint (length + 1)`` + bytes from v12.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .framing import size_prefix
from .primitives import INT16, INT32, INT64, array_length, string_field, unsigned_varint

__all__ = [
    "MAX_VERSION",
    "MIN_VERSION",
    "ByteRegion",
    "Chunk",
    "EncodedResponse",
    "FetchPartitionResult",
    "FetchTopicResult",
    "chunks_size",
    "encode_fetch_response",
    "set_throttle",
]

MIN_VERSION = 4
MAX_VERSION = 12
_FIRST_FLEXIBLE = 12


class ByteRegion(Protocol):
    """A byte range of an open file (``odradek.storage.FileRegion`` satisfies this)."""

    @property
    def length(self) -> int: ...


Chunk = bytes | ByteRegion


class EncodedResponse(list[Chunk]):
    """A response frame a handler encoded itself (Fetch, Produce, OffsetCommit), as chunks,
    with the non-zero error codes it carries: the broker counts those per response like the
    error codes of any other response (``odradek_request_errors_total``), and the encoder
    knows them already, so they are not parsed back out of the bytes.

    ``throttle_at`` is where its ``throttle_time_ms`` field lies (chunk index, byte offset in
    that ``bytes`` chunk): a client quota decided after the handler returned is written into
    the frame there (:func:`set_throttle`), as it is into a kio body's field."""

    __slots__ = ("error_codes", "throttle_at")

    def __init__(self, chunks: Iterable[Chunk] = (), error_codes: Sequence[int] = (),
                 throttle_at: tuple[int, int] | None = None) -> None:
        super().__init__(chunks)
        self.error_codes = error_codes
        self.throttle_at = throttle_at


def set_throttle(response: EncodedResponse, throttle_ms: int) -> None:
    """Raise the frame's ``throttle_time_ms`` to ``throttle_ms`` (never lower it)."""
    if response.throttle_at is None:
        return
    index, offset = response.throttle_at
    chunk = response[index]
    assert isinstance(chunk, bytes), "throttle_time_ms lies in a bytes chunk"
    if INT32.unpack_from(chunk, offset)[0] < throttle_ms:
        patched = bytearray(chunk)
        INT32.pack_into(patched, offset, throttle_ms)
        response[index] = bytes(patched)


@dataclass(frozen=True, slots=True)
class FetchPartitionResult:
    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: ByteRegion | bytes | None = None
    aborted_transactions: Sequence[tuple[int, int]] | None = None
    """(producer_id, first_offset) pairs; None encodes as a null array (v4+)."""
    preferred_read_replica: int = -1
    diverging_epoch: tuple[int, int] | None = None
    """(epoch, end_offset) for a follower whose log diverged (v12+, tagged)."""

    @property
    def records_size(self) -> int:
        """Bytes of record data the answer carries (0 without records)."""
        records = self.records
        if records is None:
            return 0
        return len(records) if isinstance(records, bytes) else records.length


@dataclass(frozen=True, slots=True)
class FetchTopicResult:
    topic: str
    partitions: Sequence[FetchPartitionResult] = field(default_factory=tuple)


def chunks_size(chunks: Sequence[Chunk]) -> int:
    return sum(len(c) if isinstance(c, bytes) else c.length for c in chunks)


def encode_fetch_response(
    version: int,
    correlation_id: int,
    topics: Sequence[FetchTopicResult],
    *,
    throttle_time_ms: int = 0,
    error_code: int = 0,
    session_id: int = 0,
) -> EncodedResponse:
    """The complete response frame (size prefix and header included) as chunks."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"fetch response version {version} not in {MIN_VERSION}..{MAX_VERSION}")
    flexible = version >= _FIRST_FLEXIBLE
    # [0]: placeholder for the size prefix; [1] starts with the header, then the throttle
    chunks = EncodedResponse([b""], throttle_at=(1, 5 if flexible else 4))
    errors: list[int] = [error_code] if error_code else []
    out = bytearray(INT32.pack(correlation_id))
    if flexible:
        out += b"\x00"  # response header v1: no tagged fields
    out += INT32.pack(throttle_time_ms)
    if version >= 7:
        out += INT16.pack(error_code)
        out += INT32.pack(session_id)
    out += array_length(len(topics), flexible)
    for topic in topics:
        out += string_field(topic.topic, flexible)
        out += array_length(len(topic.partitions), flexible)
        for part in topic.partitions:
            code = part.error_code
            if code:
                errors.append(code)
            out += INT32.pack(part.partition_index)
            out += INT16.pack(code)
            out += INT64.pack(part.high_watermark)
            out += INT64.pack(part.last_stable_offset)
            if version >= 5:
                out += INT64.pack(part.log_start_offset)
            aborted = part.aborted_transactions
            out += array_length(None if aborted is None else len(aborted), flexible)
            for producer_id, first_offset in aborted or ():
                out += INT64.pack(producer_id)
                out += INT64.pack(first_offset)
                if flexible:
                    out += b"\x00"
            if version >= 11:
                out += INT32.pack(part.preferred_read_replica)
            records = part.records
            if records is None or isinstance(records, bytes):
                raw = records or b""
                out += unsigned_varint(len(raw) + 1) if flexible else INT32.pack(len(raw))
                out += raw
            else:
                length = records.length
                out += unsigned_varint(length + 1) if flexible else INT32.pack(length)
                if length:
                    chunks.append(bytes(out))
                    chunks.append(records)
                    out = bytearray()
            if flexible:
                if part.diverging_epoch is None:
                    out += b"\x00"
                else:
                    epoch, end_offset = part.diverging_epoch
                    # one tagged field: tag 0, size 13 (int32 + int64 + empty tag section)
                    out += b"\x01\x00\x0d" + INT32.pack(epoch) + INT64.pack(end_offset) + b"\x00"
        if flexible:
            out += b"\x00"
    if flexible:
        out += b"\x00"
    chunks.append(bytes(out))
    chunks[0] = size_prefix(chunks_size(chunks))
    chunks.error_codes = errors
    return chunks
