"""Managing SASL/SCRAM users through a broker (AlterUserScramCredentials and
DescribeUserScramCredentials), as ``kafka-configs --entity-type users`` does.

The password is salted and hashed here (PBKDF2, a fresh random salt); only the salted
password crosses the wire, and the broker stores keys derived from it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from odradek.protocol.api_versions import ApiKey
from odradek.security.scram import MIN_ITERATIONS, ScramMechanism

from .cluster_client import ClusterClient
from .errors import raise_for_code

__all__ = ["UserCredential", "alter_user_scram", "describe_user_scram"]


@dataclass(frozen=True, slots=True)
class UserCredential:
    user: str
    mechanism: str
    iterations: int


async def alter_user_scram(client: ClusterClient, *,
                           upsert: Iterable[tuple[str, str, str]] = (),
                           delete: Iterable[tuple[str, str]] = (),
                           iterations: int = MIN_ITERATIONS) -> None:
    """``upsert``: (user, mechanism, password); ``delete``: (user, mechanism). Raises
    :class:`BrokerResponseError` for the first user the broker refused."""
    upsertions = []
    for user, mechanism_name, password in upsert:
        mechanism = ScramMechanism.named(mechanism_name)
        salt = secrets.token_bytes(32)
        upsertions.append({"name": user, "mechanism": mechanism.kafka_type,
                           "iterations": iterations, "salt": salt,
                           "salted_password": mechanism.salted_password(password, salt,
                                                                        iterations)})
    deletions = [{"name": user, "mechanism": ScramMechanism.named(name).kafka_type}
                 for user, name in delete]
    response = await client.send(None, ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                                 {"deletions": deletions, "upsertions": upsertions})
    for result in response.results:
        raise_for_code(result.error_code, f"user {result.user!r}", result.error_message)


async def describe_user_scram(client: ClusterClient, users: Iterable[str] | None = None
                              ) -> list[UserCredential]:
    """Every user's SCRAM mechanisms (``users`` None: all users)."""
    names = None if users is None else [{"name": user} for user in users]
    response = await client.send(None, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
                                 {"users": names})
    raise_for_code(response.error_code, "DescribeUserScramCredentials", response.error_message)
    found = []
    for result in response.results:
        raise_for_code(result.error_code, f"user {result.user!r}", result.error_message)
        for info in result.credential_infos:
            mechanism = ScramMechanism.of_type(int(info.mechanism))
            found.append(UserCredential(str(result.user), mechanism.mechanism_name,
                                        int(info.iterations)))
    return found



