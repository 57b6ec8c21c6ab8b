"""The Secrets a BrokerCluster refers to, read and checked before anything uses them.

A Secret that is missing or lacks a key is the user's to fix, and fixing it (creating the
Secret) must be enough: it is a :class:`~..errors.TemporaryReconcileError` with reason
``SecretNotFound`` or ``SecretInvalid`` and a message naming the Secret and the key, so the
BrokerCluster's Ready condition says exactly what is wrong and the operator retries.
"""

from __future__ import annotations

import base64
import binascii
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import TemporaryReconcileError
from ..kafka.access import ClusterAccess, cluster_access
from ..kube.api import KubeApi
from ..manifests.common import ClusterNames, config_hash
from ..spec import BrokerClusterSpec

__all__ = ["SECRET_RETRY_S", "ClusterSecrets", "SecretData", "load_cluster_secrets",
           "read_secret", "secret_values"]

SECRET_RETRY_S = 30.0


@dataclass(frozen=True)
class SecretData:
    name: str
    data: Mapping[str, str]
    resource_version: str = ""


def secret_values(secret: Mapping[str, Any], name: str, namespace: str,
                  required: Sequence[str], what: str) -> SecretData:
    """A Secret object's data decoded (pure); SecretInvalid when a required key is absent,
    empty or not UTF-8 text."""
    data: dict[str, str] = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            data[str(key)] = base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            if key in required:
                raise TemporaryReconcileError(
                    f"{what}: key {key!r} of Secret {namespace}/{name} is not UTF-8 text",
                    reason="SecretInvalid", delay=SECRET_RETRY_S) from None
    for key, value in (secret.get("stringData") or {}).items():
        data[str(key)] = str(value)
    missing = [key for key in required if not data.get(key)]
    if missing:
        raise TemporaryReconcileError(
            f"{what}: Secret {namespace}/{name} has no {', '.join(missing)} (it has: "
            f"{', '.join(sorted(data)) or 'nothing'})", reason="SecretInvalid",
            delay=SECRET_RETRY_S)
    version = str((secret.get("metadata") or {}).get("resourceVersion") or "")
    return SecretData(name, data, version)


async def read_secret(api: KubeApi, namespace: str, name: str, required: Sequence[str],
                      what: str) -> SecretData:
    secret = await api.get("Secret", namespace, name)
    if secret is None:
        raise TemporaryReconcileError(f"{what}: Secret {namespace}/{name} does not exist",
                                      reason="SecretNotFound", delay=SECRET_RETRY_S)
    return secret_values(secret, name, namespace, required, what)


@dataclass(frozen=True)
class ClusterSecrets:
    """What the brokers mount (TLS) or get in their environment (inter-broker user)."""

    access: ClusterAccess
    tls: SecretData | None = None
    credentials: SecretData | None = None
    #: Part of the pod template's restart hash: a rotated certificate or password restarts
    #: the brokers (one at a time, ISR-aware). The TLS data is hashed; the credentials are
    #: represented by their Secret's resourceVersion, so no digest of a password is shown.
    restart_inputs: Mapping[str, str] = field(default_factory=dict)


async def load_cluster_secrets(api: KubeApi, names: ClusterNames, spec: BrokerClusterSpec
                               ) -> ClusterSecrets:
    tls = None
    inputs: dict[str, str] = {}
    if spec.tls is not None:
        required = ["tls.crt", "tls.key"]
        if spec.tls.client_auth != "none":
            required.append("ca.crt")
        tls = await read_secret(api, names.namespace, spec.tls.secret_name, required,
                                "spec.tls.secretName")
        inputs["tls"] = config_hash(dict(tls.data))
    credentials = None
    operator = spec.authentication.operator_secret
    if operator is not None and spec.operator_uses_sasl:
        credentials = await read_secret(
            api, names.namespace, operator.name,
            [operator.key, spec.authentication.operator_password_key],
            "spec.authentication.operatorSecretRef")
        inputs["credentials"] = credentials.resource_version
    user_password = None if credentials is None else (
        credentials.data[operator.key] if operator else "",
        credentials.data[spec.authentication.operator_password_key])
    try:
        access = cluster_access(
            names, spec, ca_pem=tls.data.get("ca.crt") if tls else None,
            credentials=user_password,
            client_certificate=(tls.data["tls.crt"], tls.data["tls.key"]) if tls else None)
    except ssl.SSLError as exc:
        assert spec.tls is not None
        raise TemporaryReconcileError(
            f"spec.tls.secretName: Secret {names.namespace}/{spec.tls.secret_name} holds no "
            f"usable PEM certificate or key ({exc.reason or exc})", reason="SecretInvalid",
            delay=SECRET_RETRY_S) from None
    return ClusterSecrets(access, tls, credentials, inputs)
