"""The ConsumerGroup status of a consumer-type group (KIP-848), pure: what ``group_result``
writes from an observation, and that the CRD's status schema holds every field of it (the
API server prunes what the schema does not name)."""

from __future__ import annotations

from typing import Any

from odradek_operator.handlers.consumer_group import group_result
from odradek_operator.kafka.groups import GroupOutcome
from odradek_operator.kafka.observe import ObservedGroup
from odradek_operator.spec import ConsumerGroupSpec

from odradek.client.consumer_groups import ConsumerGroupDescription, ConsumerGroupMember
from odradek.client.metadata import TopicPartition
from tests.operator.crd_schema import errors, schema_of

SPEC = ConsumerGroupSpec.parse({"clusterRef": {"name": "kafka"}, "groupId": "orders"},
                               "orders")


def member(member_id: str, epoch: int, owned: list[int], target: list[int]
           ) -> ConsumerGroupMember:
    return ConsumerGroupMember(member_id, None, "app", "/10.0.0.1", epoch, ("t",), None,
                               tuple(TopicPartition("t", p) for p in owned),
                               tuple(TopicPartition("t", p) for p in target))


def observed(members: tuple[ConsumerGroupMember, ...]) -> ObservedGroup:
    consumer = ConsumerGroupDescription("orders", "Reconciling", 4, 4, "uniform", members, 0)
    return ObservedGroup(None, {}, {}, {}, {}, consumer)


def test_a_consumer_type_group_reports_its_type_epochs_and_target_assignments() -> None:
    group = observed((member("a", 3, [0, 1], [0]), member("b", 4, [], [1])))
    status = group_result(SPEC, GroupOutcome(group, [], 0)).status
    assert {k: status[k] for k in ("type", "state", "groupEpoch", "assignmentEpoch",
                                   "assignor", "memberCount")} == {
        "type": "consumer", "state": "Reconciling", "groupEpoch": 4, "assignmentEpoch": 4,
        "assignor": "uniform", "memberCount": 2}
    assert status["members"] == [
        {"memberId": "a", "clientId": "app", "host": "/10.0.0.1", "memberEpoch": 3,
         "assignments": ["t-0", "t-1"], "targetAssignments": ["t-0"]},
        {"memberId": "b", "clientId": "app", "host": "/10.0.0.1", "memberEpoch": 4,
         "assignments": [], "targetAssignments": ["t-1"]}]
    # Its members are active: a reset waits for them, as for a classic group's.
    assert group.has_active_members and observed(()).has_active_members is False
    resource = {"apiVersion": "odradek.dev/v1alpha1", "kind": "ConsumerGroup",
                "metadata": {"name": "orders"},
                "spec": {"clusterRef": {"name": "kafka"}, "groupId": "orders"},
                "status": status}
    assert errors("ConsumerGroup", resource) == []
    assert _unnamed(status, schema_of("ConsumerGroup")["properties"]["status"]) == []


def _unnamed(value: Any, schema: dict[str, Any], path: str = "status") -> list[str]:
    """Paths in ``value`` that the schema does not name (what the API server would prune)."""
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        return [missing for key, sub in value.items()
                for missing in ([f"{path}.{key}"] if key not in properties
                                else _unnamed(sub, properties[key], f"{path}.{key}"))]
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [missing for item in value
                for missing in _unnamed(item, schema["items"], f"{path}[]")]
    return []
