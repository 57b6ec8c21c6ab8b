"""Algorithm 1 as a pure function, and the registry formats (no ZooKeeper, no broker)."""

from __future__ import annotations

import json

import pytest

from odradek.client.metadata import TopicPartition
from odradek.client.zk_registry import (
    assign_paper,
    decode_registration,
    encode_registration,
    make_consumer_id,
)


def table(consumers: int, partitions: int, topic: str = "t") -> list[list[int]]:
    """Partitions of each consumer thread, in sorted thread order."""
    group = {f"g_c{i:02d}": {topic: 1} for i in range(consumers)}
    assignment = assign_paper(group, {topic: partitions})
    return [[tp.partition for tp in assignment[f"g_c{i:02d}-0"]] for i in range(consumers)]


@pytest.mark.parametrize(("consumers", "partitions", "expected"), [
    # The remainder goes to the first consumers, one each (Kafka's range assignor).
    (2, 5, [[0, 1, 2], [3, 4]]),
    # |C| divides |P|: exactly the paper's [j*N, (j+1)*N - 1] with N = 2.
    (6, 12, [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]),
    # More consumers than partitions: the last ones stay idle.
    (5, 3, [[0], [1], [2], [], []]),
    (1, 4, [[0, 1, 2, 3]]),
    (3, 0, [[], [], []]),
])
def test_assignment_table(consumers: int, partitions: int, expected: list[list[int]]) -> None:
    assert table(consumers, partitions) == expected


def test_every_partition_goes_to_exactly_one_thread_in_contiguous_ranges() -> None:
    for consumers in range(1, 8):
        for partitions in range(25):
            ranges = table(consumers, partitions)
            case = f"{partitions} partitions, {consumers} consumers: {ranges}"
            assert [p for r in ranges for p in r] == list(range(partitions)), case
            sizes = [len(r) for r in ranges]
            assert max(sizes) - min(sizes) <= 1, case
            assert sizes == sorted(sizes, reverse=True), f"extras not first; {case}"
            if partitions % consumers == 0:  # the paper's formula, literally
                n = partitions // consumers
                assert ranges == [list(range(j * n, (j + 1) * n))
                                  for j in range(consumers)], case


def test_threads_sort_as_strings_and_only_subscribers_of_a_topic_share_it() -> None:
    group = {"g_b": {"t": 1, "u": 1}, "g_a": {"t": 1}, "g_c": {"u": 1}}
    assignment = assign_paper(group, {"t": 4, "u": 2})
    assert assignment == {
        "g_a-0": [TopicPartition("t", 0), TopicPartition("t", 1)],
        "g_b-0": [TopicPartition("t", 2), TopicPartition("t", 3), TopicPartition("u", 0)],
        "g_c-0": [TopicPartition("u", 1)],
    }


def test_a_kafka_08_consumer_with_several_streams_counts_each_thread() -> None:
    group = {"g_x": {"t": 2}, "g_y": {"t": 1}}
    assignment = assign_paper(group, {"t": 6})
    assert {t: [tp.partition for tp in ps] for t, ps in assignment.items()} == {
        "g_x-0": [0, 1], "g_x-1": [2, 3], "g_y-0": [4, 5]}


def test_registration_is_kafka_08_json() -> None:
    data = encode_registration({"t2": 1, "t1": 1}, timestamp="1700000000000")
    assert json.loads(data) == {"version": 1, "subscription": {"t1": 1, "t2": 1},
                                "pattern": "static", "timestamp": "1700000000000"}
    assert b" " not in data
    assert decode_registration(data) == {"t1": 1, "t2": 1}
    wildcard = b'{"version":1,"subscription":{"t.*":1},"pattern":"white_list","timestamp":"1"}'
    assert decode_registration(wildcard) == {}


def test_consumer_id_is_group_underscore_id() -> None:
    assert make_consumer_id("g", "c1") == "g_c1"
    generated = make_consumer_id("g")
    assert generated.startswith("g_") and len(generated.rsplit("-", 1)[1]) == 8
    with pytest.raises(ValueError):
        make_consumer_id("g", "a/b")
