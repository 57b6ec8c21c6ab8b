"""Random and mutated frames at a live broker; afterwards produce and fetch still work."""

from __future__ import annotations

import logging
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import TopicName

from odradek.protocol.framing import size_prefix
from odradek.protocol.messages import encode_request

from .helpers import batch, create_topic, fetch_request, produce_request
from .inprocess import InProcessBroker
from .test_bad_input import assert_still_serving


def valid_frames(topic: str) -> list[bytes]:
    return [
        encode_request(
            ApiVersionsRequest(client_software_name="f", client_software_version="1"), 1
        ),
        encode_request(MetadataRequest(
            topics=(MetadataRequestTopic(name=TopicName(topic), topic_id=None),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False), 2),
        encode_request(produce_request(topic, batch(b"fuzz")), 3),
        encode_request(fetch_request(topic, 0), 4),
    ]


def send_and_drain(port: int, payload: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        try:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
        except (TimeoutError, ConnectionError):
            pass


def test_broker_survives_random_and_mutated_frames(
    shared_broker: InProcessBroker, topic_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    create_topic(shared_broker, topic_name)
    seeds = valid_frames(topic_name)

    mutated = st.tuples(
        st.sampled_from(seeds),
        st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=8),
        st.integers(0, 400),
    ).map(lambda t: _mutate(*t))
    random_frames = st.binary(max_size=200).map(lambda body: size_prefix(len(body)) + body)
    keyed = st.tuples(st.integers(-1, 80), st.integers(-1, 20), st.binary(max_size=100)).map(
        lambda t: _with_header(*t)
    )

    @settings(max_examples=4000, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(payload=st.one_of(mutated, random_frames, keyed))
    def fuzz(payload: bytes) -> None:
        send_and_drain(shared_broker.port, payload)

    with caplog.at_level(logging.WARNING):
        fuzz()
    assert_still_serving(shared_broker, topic_name)
    errors = [r.getMessage() for r in caplog.records
              if r.levelno >= logging.ERROR and r.name.startswith("odradek")]
    assert not errors, f"bad input was treated as a broker failure: {errors[:3]}"


def _mutate(frame: bytes, flips: list[tuple[int, int]], cut: int) -> bytes:
    data = bytearray(frame)
    for position, value in flips:
        if position < len(data):
            data[position] = value
    return bytes(data[: max(cut, 4)]) if cut < len(data) else bytes(data)


def _with_header(api_key: int, version: int, body: bytes) -> bytes:
    payload = (api_key.to_bytes(2, "big", signed=True) + version.to_bytes(2, "big", signed=True)
               + b"\x00\x00\x00\x01\x00\x01f" + body)
    return size_prefix(len(payload)) + payload
