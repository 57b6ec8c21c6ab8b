"""A user's client quotas through a broker (DescribeClientQuotas, AlterClientQuotas), as
``kafka-configs --entity-type users --entity-name NAME --alter --add-config ...`` does.

Only the user entity alone (no client-id part): what a per-user quota of Kafka's
``kafka-configs`` and Strimzi's KafkaUser set.
"""

from __future__ import annotations

from collections.abc import Mapping

from odradek.protocol.api_versions import ApiKey

from .cluster_client import ClusterClient
from .errors import raise_for_code

__all__ = ["alter_user_quotas", "describe_user_quotas"]

_EXACT = 0


async def describe_user_quotas(client: ClusterClient, user: str) -> dict[str, float]:
    """The quotas set for ``user`` exactly (not defaults it would inherit)."""
    response = await client.send(None, ApiKey.DESCRIBE_CLIENT_QUOTAS, {
        "components": [{"entity_type": "user", "match_type": _EXACT, "match": user}],
        "strict": True})
    raise_for_code(response.error_code, "DescribeClientQuotas", response.error_message)
    return {value.key: float(value.value) for entry in response.entries or ()
            for value in entry.values}


async def alter_user_quotas(client: ClusterClient, user: str,
                            changes: Mapping[str, float | None]) -> None:
    """Set each key to its value, or remove it (None)."""
    if not changes:
        return
    response = await client.send(None, ApiKey.ALTER_CLIENT_QUOTAS, {
        "entries": [{"entity": [{"entity_type": "user", "entity_name": user}],
                     "ops": [{"key": key, "value": float(value or 0.0),
                              "remove": value is None}
                             for key, value in sorted(changes.items())]}],
        "validate_only": False})
    for entry in response.entries:
        raise_for_code(entry.error_code, f"AlterClientQuotas {user}", entry.error_message)
