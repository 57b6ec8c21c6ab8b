"""The advertised version table: honest ranges that real clients negotiate with."""

from __future__ import annotations

from kio.index import load_request_schema, load_response_schema

from odradek.protocol.api_versions import ADVERTISED, PARSEABLE, ApiKey, is_advertised


def test_every_advertised_and_parseable_version_has_a_codec() -> None:
    for key, versions in PARSEABLE.items():
        for version in range(versions.min_version, versions.max_version + 1):
            load_request_schema(int(key), version)
            load_response_schema(int(key), version)


def test_group_apis_are_parseable_but_not_advertised() -> None:
    for key in (ApiKey.JOIN_GROUP, ApiKey.OFFSET_COMMIT, ApiKey.FIND_COORDINATOR):
        assert key in PARSEABLE
        assert key not in ADVERTISED
        assert not is_advertised(key, 0)


def test_ranges_clients_need() -> None:
    # librdkafka: zstd needs Produce >= 7 and Fetch >= 10; Java: OffsetForLeaderEpoch >= 3
    assert is_advertised(ApiKey.PRODUCE, 7) and is_advertised(ApiKey.PRODUCE, 9)
    assert is_advertised(ApiKey.FETCH, 10) and not is_advertised(ApiKey.FETCH, 13)
    assert is_advertised(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3)
    assert is_advertised(ApiKey.API_VERSIONS, 3) and not is_advertised(ApiKey.API_VERSIONS, 4)
    # aiokafka 0.11 sends these fixed versions
    assert is_advertised(ApiKey.METADATA, 1) and is_advertised(ApiKey.LIST_OFFSETS, 1)
    assert is_advertised(ApiKey.INIT_PRODUCER_ID, 0)
