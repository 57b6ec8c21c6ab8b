"""Znode codecs produce Kafka's exact bytes and read Kafka's older versions."""

from __future__ import annotations

import uuid

from odradek.cluster import znodes
from odradek.cluster.model import BrokerInfo, Endpoint


def test_kafka_uuid_base64_round_trip() -> None:
    value = uuid.UUID("0123456789abcdef0123456789abcdef")
    text = znodes.uuid_to_base64(value)
    assert text == "ASNFZ4mrze8BI0VniavN7w" and znodes.uuid_from_base64(text) == value
    assert not znodes.uuid_to_base64(znodes.random_kafka_uuid()).startswith("-")


def test_partition_state_bytes_are_compact_kafka_json() -> None:
    assert znodes.encode_partition_state(2, 0, [2, 1], 1) == (
        b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,1]}'
    )


def test_broker_registration_round_trips_and_reads_version_1() -> None:
    info = BrokerInfo(1, "::1", 9092, "r", (Endpoint("PLAINTEXT", "::1", 9092),))
    encoded = znodes.encode_broker(info, timestamp="1")
    assert b'"endpoints":["PLAINTEXT://[::1]:9092"]' in encoded
    assert znodes.decode_broker(1, encoded) == info
    old = znodes.decode_broker(4, b'{"version":1,"host":"h","port":1,"jmx_port":-1}')
    assert (old.host, old.port, old.rack) == ("h", 1, None)


def test_other_formats() -> None:
    assert znodes.encode_cluster_id("abc") == b'{"version":"1","id":"abc"}'
    assert znodes.encode_config_change("topics/t") == b'{"version":2,"entity_path":"topics/t"}'
    assert znodes.decode_config_change(b'{"version":1,"entity_name":"t"}') == "topics/t"
    assert znodes.encode_producer_id_block(3, range(1000, 2000)) == (
        b'{"version":1,"broker":3,"block_start":"1000","block_end":"1999"}'
    )
    assert znodes.decode_producer_id_block(
        znodes.encode_producer_id_block(3, range(5, 10))
    ) == range(5, 10)
    assert znodes.decode_topic_assignment(b'{"version":1,"partitions":{"1":[2],"0":[1]}}') == (
        None,
        {1: (2,), 0: (1,)},
    )
