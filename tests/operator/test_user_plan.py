"""The User resource's plan (decisions/user_access.py) and spec, without a cluster."""

from __future__ import annotations

from typing import Any

import pytest
from odradek_operator.decisions.user_access import desired_bindings, plan_user_access
from odradek_operator.errors import InvalidSpec
from odradek_operator.spec import UserSpec

from odradek.security.acl import Operation, PatternType, Permission, ResourceType

REF = {"clusterRef": {"name": "odradek"}}


def spec(**raw: Any) -> UserSpec:
    return UserSpec.parse({**REF, **raw}, "counter")


READER = spec(authentication={"type": "scram-sha-256"},
              authorization={"acls": [
                  {"resource": {"type": "topic", "name": "page-", "patternType": "prefixed"},
                   "operations": ["Read", "Describe"]},
                  {"resource": {"type": "cluster"}, "operations": ["IdempotentWrite"],
                   "type": "deny", "host": "10.0.0.1"}]},
              quotas={"producerByteRate": 1024, "requestPercentage": 12.5})


def test_each_operation_of_a_rule_is_one_binding_of_the_principal() -> None:
    bindings = sorted(desired_bindings(READER), key=str)
    assert len(bindings) == 3
    assert {b.entry.principal for b in bindings} == {"User:counter"}
    cluster = next(b for b in bindings if b.pattern.resource_type is ResourceType.CLUSTER)
    assert cluster.pattern.name == "kafka-cluster"
    assert (cluster.entry.operation, cluster.entry.permission, cluster.entry.host) == (
        Operation.IDEMPOTENT_WRITE, Permission.DENY, "10.0.0.1")
    topic = next(b for b in bindings if b.pattern.resource_type is ResourceType.TOPIC)
    assert topic.pattern.pattern_type is PatternType.PREFIXED


def test_a_new_user_gets_everything_and_a_synced_one_nothing() -> None:
    first = plan_user_access(READER, "v1", None, acls=(), quotas={}, mechanisms=())
    assert first.write_credential and len(first.create_acls) == 3 and not first.delete_acls
    assert first.quota_changes == {"producer_byte_rate": 1024.0, "request_percentage": 12.5}
    assert first.applied == {"mechanism": "SCRAM-SHA-256", "secretVersion": "v1"}
    synced = plan_user_access(READER, "v1", first.applied, acls=first.create_acls,
                              quotas={"producer_byte_rate": 1024.0,
                                      "request_percentage": 12.5},
                              mechanisms={"SCRAM-SHA-256"})
    assert synced.empty


def test_drift_and_changes_are_undone_or_applied() -> None:
    applied = {"mechanism": "SCRAM-SHA-256", "secretVersion": "v1"}
    wanted = tuple(desired_bindings(READER))
    extra = desired_bindings(spec(authorization={"acls": [
        {"resource": {"type": "group", "name": "*"}, "operations": ["Read"]}]}))
    plan = plan_user_access(READER, "v2", applied, acls=(*wanted, *extra),
                            quotas={"producer_byte_rate": 1.0, "consumer_byte_rate": 5.0},
                            mechanisms=set())
    assert plan.write_credential  # a rotated Secret, and the credential deleted by hand
    assert set(plan.delete_acls) == set(extra) and not plan.create_acls
    assert plan.quota_changes == {"producer_byte_rate": 1024.0, "request_percentage": 12.5,
                                  "consumer_byte_rate": None}


def test_only_the_credential_the_operator_wrote_is_ever_deleted() -> None:
    moved = spec(authentication={"type": "scram-sha-512"})
    plan = plan_user_access(moved, "v1", {"mechanism": "SCRAM-SHA-256", "secretVersion": "v1"},
                            acls=(), quotas={}, mechanisms={"SCRAM-SHA-256"})
    assert plan.write_credential and plan.delete_mechanisms == ("SCRAM-SHA-256",)
    unmanaged = plan_user_access(spec(), None, None, acls=(), quotas={},
                                 mechanisms={"SCRAM-SHA-512"})
    assert unmanaged.empty and unmanaged.applied == {}


@pytest.mark.parametrize(("raw", "message"), [
    ({"authentication": {"type": "plain"}}, "authentication.type must be one of"),
    ({"authorization": {"acls": [{"resource": {"type": "topic"}, "operations": ["Read"]}]}},
     "resource.name is required"),
    ({"authorization": {"acls": [{"resource": {"type": "topic", "name": "t"},
                                  "operations": ["Fly"]}]}}, "unknown: Fly"),
    ({"quotas": {"controllerMutationRate": 1}}, "unknown quota"),
    ({"quotas": {"producerByteRate": -5}}, "non-negative"),
])
def test_a_wrong_spec_says_what_to_fix(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidSpec, match=message):
        spec(**raw)


def test_a_password_can_come_from_a_named_secret() -> None:
    named = spec(authentication={"password": {"valueFrom": {"secretKeyRef": {"name": "pw"}}}})
    assert named.password_ref == ("pw", "password") and named.mechanism == "SCRAM-SHA-512"
