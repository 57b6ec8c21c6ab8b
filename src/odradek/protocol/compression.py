"""Record-batch compression codecs, by Kafka's codec number (sans-IO).

Codec numbers are the low three bits of a RecordBatch's ``attributes``:
0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd. All codecs run in cramjam's native code.

Wire formats, as Kafka's Java client reads and writes them:

* gzip: an ordinary gzip member (RFC 1952).
* snappy: *xerial*-framed, because the Java client wraps snappy in xerial's
  ``SnappyOutputStream``. The frame is the 8 magic bytes ``\\x82SNAPPY\\x00``, a big-endian
  int32 version (1) and int32 minimum-compatible version (1), then blocks of
  ``int32 compressed length`` + raw snappy block. We write that framing so Java consumers can
  read our compacted batches, and on read accept both xerial and plain raw snappy (which
  librdkafka and some older clients send).
* lz4: the LZ4 *frame* format (magic ``04 22 4D 18``) with *independent* blocks, as Kafka
  >= 0.10 on magic 2 (Java's reader refuses linked blocks).
* zstd: a zstd frame.
"""

from __future__ import annotations

import struct

import cramjam

from odradek.protocol.errors import CorruptRecord, UnsupportedCompressionType

__all__ = [
    "GZIP",
    "LZ4",
    "NONE",
    "SNAPPY",
    "ZSTD",
    "codec_name",
    "compress",
    "decompress",
]

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_BY_NAME = {name: codec for codec, name in _NAMES.items()}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # xerial's default block size


def codec_name(codec: int) -> str:
    try:
        return _NAMES[codec]
    except KeyError:
        raise UnsupportedCompressionType(f"unknown compression codec {codec}") from None


def compress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """Compress ``data`` in the wire format Kafka uses for ``codec``."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        # Kafka's Java reader rejects dependent (linked) blocks: "Dependent block stream is
        # unsupported". Independent blocks, as Kafka's own writer and kafka-python produce.
        compressor = cramjam.lz4.Compressor(block_linked=False)
        compressor.compress(data if isinstance(data, bytes) else bytes(data))
        return bytes(compressor.finish())
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise UnsupportedCompressionType(f"unknown compression codec {codec}")


def decompress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """Inverse of :func:`compress`; a malformed payload raises :class:`CorruptRecord`."""
    try:
        if codec == NONE:
            return bytes(data)
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == SNAPPY:
            view = memoryview(data)
            if bytes(view[:8]) == _XERIAL_MAGIC:
                return _xerial_decompress(view)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except CorruptRecord:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError and ValueError
        raise CorruptRecord(f"cannot decompress {codec_name(codec)} payload: {exc}") from exc
    raise UnsupportedCompressionType(f"unknown compression codec {codec}")


def _xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data)
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, max(len(view), 1), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        out += struct.pack(">i", len(block))
        out += block
    return bytes(out)


def _xerial_decompress(view: memoryview) -> bytes:
    pos = len(_XERIAL_HEADER)
    out = bytearray()
    end = len(view)
    while pos < end:
        if pos + 4 > end:
            raise CorruptRecord("truncated xerial snappy block header")
        (size,) = struct.unpack_from(">i", view, pos)
        pos += 4
        if size < 0 or pos + size > end:
            raise CorruptRecord("truncated xerial snappy block")
        out += bytes(cramjam.snappy.decompress_raw(view[pos : pos + size]))
        pos += size
    return bytes(out)
