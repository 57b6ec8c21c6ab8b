"""Small text files that remember where things stand, written atomically.

Offset checkpoints (one per log dir, Kafka's names and format)::

    recovery-point-offset-checkpoint   offsets up to which each log is known flushed
    replication-offset-checkpoint      each partition's high watermark
    log-start-offset-checkpoint        each log's start offset (after DeleteRecords/retention)
    cleaner-offset-checkpoint          where each compacted log's dirty section begins

    line 1: version, always ``0``
    line 2: number of entries
    then one ``<topic> <partition> <offset>`` line per entry (topic names have no spaces)

``meta.properties`` is Java properties text (``key=value`` lines, ``#`` comments), written by
the broker with ``version``, ``broker.id`` and ``cluster.id``.

Atomicity: every write goes to ``<name>.tmp``, is fsynced, renamed over the old file, and the
directory is fsynced. A crash leaves either the old or the new file, never a mix; a stray
``.tmp`` is ignored and overwritten. A file that does not parse raises
:class:`CorruptCheckpoint`; callers treat the data as unknown (e.g. recover the whole log).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from odradek.protocol.errors import KafkaStorageError
from odradek.types import TopicPartition

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "META_PROPERTIES",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "CorruptCheckpoint",
    "OffsetCheckpointFile",
    "read_meta_properties",
    "write_atomically",
    "write_meta_properties",
]

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
META_PROPERTIES = "meta.properties"



class CorruptCheckpoint(KafkaStorageError):
    """A checkpoint file exists but does not parse."""


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new content.

    ``sync=False`` skips both fsyncs: still atomic against a process crash, but after a power
    loss the file may be missing or empty; only for files that carry their own checksum and
    can be rebuilt (producer snapshots).
    """
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as out:
        out.write(data)
        if sync:
            out.flush()
            os.fsync(out.fileno())
    os.replace(tmp, path)
    if sync:
        fsync_directory(path.parent)


class OffsetCheckpointFile:
    """``topic partition offset`` entries in Kafka's checkpoint text format."""

    VERSION = 0

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        lines = [str(self.VERSION), str(len(offsets))]
        lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in offsets.items()]
        write_atomically(self.path, ("\n".join(lines) + "\n").encode())

    def read(self) -> dict[TopicPartition, int]:
        """The entries, or ``{}`` when the file does not exist."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        lines = text.splitlines()
        try:
            if int(lines[0]) != self.VERSION:
                raise CorruptCheckpoint(f"{self.path}: unsupported version {lines[0]!r}")
            count = int(lines[1])
            entries = lines[2 : 2 + count]
            if len(entries) != count or any(line.strip() for line in lines[2 + count :]):
                raise CorruptCheckpoint(f"{self.path}: expected {count} entries")
            out: dict[TopicPartition, int] = {}
            for line in entries:
                topic, partition, offset = line.split(" ")
                out[TopicPartition(topic, int(partition))] = int(offset)
            return out
        except (IndexError, ValueError) as exc:
            raise CorruptCheckpoint(f"{self.path}: malformed checkpoint ({exc})") from exc


def read_meta_properties(log_dir: Path) -> dict[str, str]:
    """``meta.properties`` of ``log_dir`` as a dict, or ``{}`` when absent."""
    try:
        text = (log_dir / META_PROPERTIES).read_text()
    except FileNotFoundError:
        return {}
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise CorruptCheckpoint(f"{log_dir / META_PROPERTIES}: malformed line {line!r}")
        out[key.strip()] = value.strip()
    return out


def write_meta_properties(log_dir: Path, properties: Mapping[str, str]) -> None:
    header = ["#", "#" + time.strftime("%a %b %d %H:%M:%S %Z %Y")]
    body = [f"{key}={value}" for key, value in properties.items()]
    write_atomically(log_dir / META_PROPERTIES, ("\n".join(header + body) + "\n").encode())
