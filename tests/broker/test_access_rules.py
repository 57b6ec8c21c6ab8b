"""The authorization table covers every API but the pre-authentication ones, and names
only operations Kafka supports on each resource type."""

from __future__ import annotations

from odradek.broker.access_rules import RULES
from odradek.broker.dispatch import handler_table
from odradek.protocol.api_versions import ApiKey
from odradek.security.acl import SUPPORTED_OPERATIONS

PRE_AUTHENTICATION = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}


def test_every_api_has_a_rule() -> None:
    missing = {ApiKey(key).name for key in handler_table()} - {
        ApiKey(key).name for key in RULES} - {key.name for key in PRE_AUTHENTICATION}
    assert missing == set()
    assert not PRE_AUTHENTICATION & set(RULES)


def test_rules_name_supported_operations() -> None:
    unsupported = [(ApiKey(api).name, str(rule)) for api, rules in RULES.items()
                   for rule in rules
                   if rule.operation not in SUPPORTED_OPERATIONS[rule.resource_type]]
    assert unsupported == []
