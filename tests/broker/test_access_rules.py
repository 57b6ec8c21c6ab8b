"""The authorization table covers every API, and every answer it may build alone encodes
in every advertised version (the rules' error answers are built, not hand-written)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from odradek.broker.access import blank
from odradek.broker.access_rules import RULES
from odradek.broker.dispatch import handler_table
from odradek.protocol.api_versions import ADVERTISED, ApiKey
from odradek.protocol.messages import encode_response, response_type

PRE_AUTHENTICATION = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
CHECKED_BY_HANDLER = {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS,
                      ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.DELETE_RECORDS,
                      ApiKey.DESCRIBE_PRODUCERS, ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP,
                      ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
                      ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.OFFSET_DELETE,
                      ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS,
                      ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN,
                      ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN, ApiKey.TXN_OFFSET_COMMIT,
                      ApiKey.DESCRIBE_TRANSACTIONS, ApiKey.LIST_TRANSACTIONS,
                      ApiKey.WRITE_TXN_MARKERS, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS,
                      ApiKey.CREATE_PARTITIONS, ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS,
                      ApiKey.INCREMENTAL_ALTER_CONFIGS}


def test_every_api_has_a_rule() -> None:
    missing = {ApiKey(key).name for key in handler_table()} - {
        ApiKey(key).name for key in RULES} - {key.name for key in PRE_AUTHENTICATION} - {
        key.name for key in CHECKED_BY_HANDLER}
    assert missing == set()
    assert not PRE_AUTHENTICATION & set(RULES)


def test_error_answers_encode_in_every_version() -> None:
    for api, versions in ADVERTISED.items():
        for version in range(versions.min_version, versions.max_version + 1):
            cls = response_type(api, version)
            fields = {"error_code": ErrorCode.cluster_authorization_failed}
            assert encode_response(1, blank(cls, **fields)), (api, version)
