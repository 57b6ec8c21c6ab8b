"""The advertised version table: honest ranges that real clients negotiate with."""

from __future__ import annotations

from odradek.protocol.api_versions import ADVERTISED, PARSEABLE, ApiKey, is_advertised
from odradek.protocol.messages import request_type, response_type


def test_every_advertised_and_parseable_version_has_a_codec() -> None:
    for key, versions in PARSEABLE.items():
        for version in range(versions.min_version, versions.max_version + 1):
            request_type(int(key), version)
            response_type(int(key), version)


def test_group_apis_are_advertised_with_their_compat_ranges() -> None:
    # librdkafka enables lz4 (among others) only when FindCoordinator is advertised.
    expected = {
        ApiKey.FIND_COORDINATOR: (0, 4), ApiKey.JOIN_GROUP: (0, 7), ApiKey.SYNC_GROUP: (0, 5),
        ApiKey.HEARTBEAT: (0, 4), ApiKey.LEAVE_GROUP: (0, 4), ApiKey.OFFSET_COMMIT: (2, 9),
        ApiKey.OFFSET_FETCH: (1, 10), ApiKey.DESCRIBE_GROUPS: (0, 5), ApiKey.LIST_GROUPS: (0, 5),
        ApiKey.DELETE_GROUPS: (0, 2), ApiKey.OFFSET_DELETE: (0, 0),
        # KIP-848: without ConsumerGroupHeartbeat Kafka 4 clients refuse group.protocol=consumer
        ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1), ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
    }
    for key, (low, high) in expected.items():
        assert (ADVERTISED[key].min_version, ADVERTISED[key].max_version) == (low, high), key
        assert key in PARSEABLE
    # OffsetFetch v8 is the batched-groups format, v9 KIP-848's member epoch, v10 topic ids:
    # all three are implemented (tests/groups/test_consumer_group_wire.py).


def test_ranges_clients_need() -> None:
    # librdkafka: zstd needs Produce >= 7 and Fetch >= 10; Java: OffsetForLeaderEpoch >= 3
    assert is_advertised(ApiKey.PRODUCE, 7) and is_advertised(ApiKey.PRODUCE, 9)
    assert is_advertised(ApiKey.FETCH, 10) and not is_advertised(ApiKey.FETCH, 13)
    assert is_advertised(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3)
    assert is_advertised(ApiKey.API_VERSIONS, 3) and not is_advertised(ApiKey.API_VERSIONS, 4)
    # aiokafka 0.11 sends these fixed versions
    assert is_advertised(ApiKey.METADATA, 1) and is_advertised(ApiKey.LIST_OFFSETS, 1)
    assert is_advertised(ApiKey.INIT_PRODUCER_ID, 0)
