"""The record values of the long runs: each names its producer and sequence number.

``b"<producer>:<seq>:<padding>"``: the identity survives any path through the cluster
(batching, compression, retries, truncation) and is read back from the value alone, so the
checker never trusts an offset it was told. Padding varies the record sizes (and so batch
boundaries and segment rolls) and is deterministic in ``seq``.
"""

from __future__ import annotations

__all__ = ["decode", "encode"]

_PAD = b"abcdefghijklmnopqrstuvwxyz0123456789" * 20


def encode(producer: str, seq: int) -> bytes:
    size = (seq * 7919) % 600
    return f"{producer}:{seq}:".encode() + _PAD[:size]


def decode(value: bytes | None) -> tuple[str, int]:
    """``(producer, seq)``, or ``("", -1)`` for a value this run did not write."""
    if not value:
        return "", -1
    parts = value.split(b":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return "", -1
    try:
        return parts[0].decode(), int(parts[1])
    except UnicodeDecodeError:
        return "", -1
