"""The request unions of :mod:`odradek.protocol.api_types` name exactly the advertised versions."""

from __future__ import annotations

import typing

import pytest

from odradek.protocol import api_types
from odradek.protocol.api_versions import ADVERTISED, ApiKey
from odradek.protocol.messages import request_type


@pytest.mark.parametrize("api_key", sorted(ADVERTISED), ids=lambda key: ApiKey(key).name)
def test_request_union_holds_every_advertised_version(api_key: ApiKey) -> None:
    versions = ADVERTISED[api_key]
    expected = {
        request_type(api_key, version)
        for version in range(versions.min_version, versions.max_version + 1)
    }
    name = request_type(api_key, versions.min_version).__name__
    alias = getattr(api_types, name)
    members = set(typing.get_args(alias)) or {alias}
    assert members == expected, f"api_types.{name} differs from ADVERTISED[{api_key.name}]"
    assert name in api_types.__all__


_NESTED = {
    "AclCreation": ApiKey.CREATE_ACLS,
    "DeleteAclsFilter": ApiKey.DELETE_ACLS,
    "ComponentData": ApiKey.DESCRIBE_CLIENT_QUOTAS,
    "EntryData": ApiKey.ALTER_CLIENT_QUOTAS,
    "OpData": ApiKey.ALTER_CLIENT_QUOTAS,
    "DescribeConfigsResource": ApiKey.DESCRIBE_CONFIGS,
    "AlterConfigsResource": ApiKey.ALTER_CONFIGS,
    "IncrementalAlterConfigsResource": ApiKey.INCREMENTAL_ALTER_CONFIGS,
    "AlterableConfig": ApiKey.INCREMENTAL_ALTER_CONFIGS,
    "ScramCredentialUpsertion": ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
}


@pytest.mark.parametrize("name", sorted(_NESTED))
def test_nested_union_spans_its_requests_versions(name: str) -> None:
    api_key = _NESTED[name]
    versions = ADVERTISED[api_key]
    expected = {
        request_type(api_key, version).__module__
        for version in range(versions.min_version, versions.max_version + 1)
    }
    alias = getattr(api_types, name)
    members = set(typing.get_args(alias)) or {alias}
    assert {member.__module__ for member in members} == expected, (
        f"api_types.{name} differs from ADVERTISED[{api_key.name}]")
    assert name in api_types.__all__
