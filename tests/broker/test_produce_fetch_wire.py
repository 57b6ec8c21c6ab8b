"""Produce and Fetch at the wire level: acks, offsets, long polls, out-of-range."""

from __future__ import annotations

import threading
import time

import pytest

from .helpers import (
    batch,
    create_topic,
    fetch_request,
    partition_response,
    produce_request,
    values_of,
)
from .inprocess import InProcessBroker
from .wire import WireClient


def test_produce_then_fetch_returns_the_same_records(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        first = partition_response(client.request(produce_request(topic_name, batch(b"a", b"b"))))
        second = partition_response(client.request(produce_request(topic_name, batch(b"c"))))
        assert (first.error_code, first.base_offset) == (0, 0)
        assert (second.error_code, second.base_offset) == (0, 2)
        fetched = partition_response(client.request(fetch_request(topic_name, 0)))
        assert fetched.error_code == 0
        assert fetched.high_watermark == 3
        assert values_of(fetched.records) == [b"a", b"b", b"c"]
        from_middle = partition_response(client.request(fetch_request(topic_name, 2)))
        assert values_of(from_middle.records) == [b"c"]


def test_acks_zero_gets_no_response_but_is_appended(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        client.send(produce_request(topic_name, batch(b"fire-and-forget"), acks=0))
        # The next response on the connection must be the fetch's: acks=0 produced nothing.
        correlation_id = client.send(fetch_request(topic_name, 0))
        got_id, response = client.receive(1, 12)
        assert got_id == correlation_id
        assert values_of(partition_response(response).records) == [b"fire-and-forget"]


@pytest.mark.parametrize("acks", [1, -1])
def test_acks_one_and_all_answer_with_offsets(
    shared_broker: InProcessBroker, topic_name: str, acks: int
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        response = client.request(produce_request(topic_name, batch(b"x"), acks=acks))
        assert partition_response(response).error_code == 0


def test_invalid_acks_is_rejected(shared_broker: InProcessBroker, topic_name: str) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        response = client.request(produce_request(topic_name, batch(b"x"), acks=2))
        assert partition_response(response).error_code == 21  # INVALID_REQUIRED_ACKS


def test_fetch_beyond_the_log_end_is_out_of_range_and_at_it_is_empty(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        client.request(produce_request(topic_name, batch(b"1", b"2")))
        at_hw = partition_response(client.request(fetch_request(topic_name, 2)))
        assert (at_hw.error_code, values_of(at_hw.records)) == (0, [])
        above = partition_response(client.request(fetch_request(topic_name, 3)))
        assert above.error_code == 1  # OFFSET_OUT_OF_RANGE


def test_long_poll_fetch_answers_by_max_wait(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        started = time.monotonic()
        response = client.request(fetch_request(topic_name, 0, max_wait_ms=400))
        elapsed = time.monotonic() - started
        assert partition_response(response).error_code == 0
        assert values_of(partition_response(response).records) == []
        assert 0.35 <= elapsed < 2.0, f"long poll returned after {elapsed:.3f}s, wanted ~0.4s"


def test_long_poll_fetch_wakes_on_append(shared_broker: InProcessBroker, topic_name: str) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as consumer, WireClient(shared_broker.port) as producer:
        correlation_id = consumer.send(fetch_request(topic_name, 0, max_wait_ms=10_000))
        appended = threading.Event()

        def produce_soon() -> None:
            time.sleep(0.2)  # a producer arriving while the fetch waits (not synchronisation)
            producer.request(produce_request(topic_name, batch(b"wake")))
            appended.set()

        thread = threading.Thread(target=produce_soon)
        started = time.monotonic()
        thread.start()
        got_id, response = consumer.receive(1, 12)
        elapsed = time.monotonic() - started
        thread.join()
        assert got_id == correlation_id
        assert values_of(partition_response(response).records) == [b"wake"]
        assert elapsed < 5, f"fetch waited {elapsed:.1f}s although data arrived after 0.2s"


def test_min_bytes_holds_the_fetch_until_enough_data(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as consumer, WireClient(shared_broker.port) as producer:
        producer.request(produce_request(topic_name, batch(b"small")))
        started = time.monotonic()
        response = consumer.request(
            fetch_request(topic_name, 0, max_wait_ms=300, min_bytes=100_000)
        )
        elapsed = time.monotonic() - started
        assert values_of(partition_response(response).records) == [b"small"]
        assert elapsed >= 0.25, "min_bytes was not honoured: answered before max_wait"


def test_max_bytes_still_returns_one_whole_batch(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        client.request(produce_request(topic_name, batch(b"x" * 5000)))
        client.request(produce_request(topic_name, batch(b"y" * 5000)))
        response = partition_response(client.request(fetch_request(topic_name, 0, max_bytes=10)))
        assert values_of(response.records) == [b"x" * 5000]


def test_fetch_response_has_exactly_the_requested_partitions(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name, partitions=3)
    with WireClient(shared_broker.port) as client:
        request = fetch_request(topic_name, 0, partition=2)
        response = client.request(request)
        assert [(t.topic, [p.partition_index for p in t.partitions])
                for t in response.responses] == [(topic_name, [2])]


def test_pipelined_requests_are_answered_in_order(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        ids = [client.send(produce_request(topic_name, batch(b"%d" % i))) for i in range(20)]
        offsets = []
        for expected in ids:
            got_id, response = client.receive(0, 9)
            assert got_id == expected
            offsets.append(partition_response(response).base_offset)
        assert offsets == list(range(20))


def test_a_ready_response_never_overtakes_a_parked_one(
    shared_broker: InProcessBroker, topic_name: str
) -> None:
    """A response ready at once leaves from the reader only when nothing is ahead of it: a
    produce pipelined behind a parked long-poll fetch on the same connection is answered
    after the fetch it woke."""
    create_topic(shared_broker, topic_name)
    with WireClient(shared_broker.port) as client:
        fetch_id = client.send(fetch_request(topic_name, 0, max_wait_ms=10_000))
        produce_id = client.send(produce_request(topic_name, batch(b"wake")))
        got_id, response = client.receive(1, 12)
        assert got_id == fetch_id
        assert values_of(partition_response(response).records) == [b"wake"]
        assert client.receive(0, 9)[0] == produce_id
        # Then synchronous requests alone go out at once, still in order.
        more = [client.send(produce_request(topic_name, batch(b"%d" % i))) for i in range(5)]
        assert [client.receive(0, 9)[0] for _ in more] == more
