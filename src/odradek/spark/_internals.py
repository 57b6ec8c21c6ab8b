"""Every piece of odradek the Spark integration uses, imported in this one module.

The rest of :mod:`odradek.spark` imports odradek only from here, so when the client or the
protocol package is reorganised, this is the single file to update. Only the client's public
API, the raw range reader added for bulk decoding, and the sans-IO RecordBatch codec are used.
"""

from odradek.client import (
    EARLIEST,
    LATEST,
    AdminClient,
    BrokerResponseError,
    ConnectionFailed,
    KafkaClientError,
    NewTopic,
    Producer,
    RecordFuture,
    TopicPartition,
)
from odradek.client.errors import ErrorCode
from odradek.client.range_reader import FetchedChunk, RangeReader
from odradek.client.txn_state import TxnState
from odradek.protocol.compression import CODEC_BY_NAME, decompress
from odradek.protocol.errors import CorruptRecord
from odradek.protocol.records import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_START,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    parse_batch_header,
)

__all__ = [
    "BATCH_HEADER_SIZE",
    "CODEC_BY_NAME",
    "COMPRESSION_MASK",
    "CONTROL_MASK",
    "CRC_START",
    "EARLIEST",
    "LATEST",
    "LOG_OVERHEAD",
    "TIMESTAMP_TYPE_MASK",
    "AdminClient",
    "BrokerResponseError",
    "ConnectionFailed",
    "CorruptRecord",
    "ErrorCode",
    "FetchedChunk",
    "KafkaClientError",
    "NewTopic",
    "Producer",
    "RangeReader",
    "RecordFuture",
    "TopicPartition",
    "TxnState",
    "decompress",
    "parse_batch_header",
]
