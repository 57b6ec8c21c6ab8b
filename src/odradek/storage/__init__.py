"""odradek's storage engine: partition logs in Apache Kafka's exact on-disk format.

No networking here. The broker composes it: ``LogManager`` owns every partition's
``PartitionLog``; a log appends RecordBatch v2 bytes as received (offsets assigned by
rewriting the header), hands reads back as file regions for ``os.sendfile``, and keeps
indexes, checkpoints, producer state, retention and compaction as Kafka does.
Start with :mod:`odradek.storage.log` (threading model) and :mod:`odradek.storage.segment`
(file formats).
"""

from odradek.storage.file_region import FileRegion, SegmentFile
from odradek.storage.log import AppendInfo, PartitionLog
from odradek.storage.log_config import LogConfig
from odradek.storage.log_manager import LogManager
from odradek.storage.log_reader import ReadResult
from odradek.storage.recovery import open_log

__all__ = [
    "AppendInfo",
    "FileRegion",
    "LogConfig",
    "LogManager",
    "PartitionLog",
    "ReadResult",
    "SegmentFile",
    "open_log",
]
