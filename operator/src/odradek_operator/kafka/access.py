"""How the operator reaches a BrokerCluster's brokers: the inter-broker listener, with TLS
trust from the cluster's TLS Secret and SASL credentials from its operator Secret.

:class:`ClusterAccess` is what every admin session needs (bootstrap servers plus
kafka-python-style client settings, :class:`odradek.client.security.ClientSecurity`).
:func:`cluster_access` is pure: the Secrets' data comes in already read
(:mod:`..handlers.secrets`).
"""

from __future__ import annotations

import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidSpec
from ..manifests.common import ClusterNames
from ..security_spec import uses_sasl, uses_tls
from ..spec import BrokerClusterSpec

__all__ = ["ClusterAccess", "cluster_access"]


@dataclass(frozen=True)
class ClusterAccess:
    bootstrap_servers: str
    #: AsyncAdminClient keyword settings (security_protocol, ssl_context, sasl_*).
    settings: Mapping[str, Any] = field(default_factory=dict)


def _load_chain(context: ssl.SSLContext, chain_pem: str, key_pem: str) -> None:
    """ssl only loads a certificate chain from files: private ones, gone once loaded."""
    with tempfile.TemporaryDirectory(prefix="odradek-operator-") as directory:
        chain, key = Path(directory, "tls.crt"), Path(directory, "tls.key")
        chain.write_text(chain_pem)
        key.touch(0o600)
        key.write_text(key_pem)
        context.load_cert_chain(chain, key)


def cluster_access(names: ClusterNames, spec: BrokerClusterSpec, *,
                   ca_pem: str | None = None,
                   credentials: tuple[str, str] | None = None,
                   client_certificate: tuple[str, str] | None = None) -> ClusterAccess:
    """``ca_pem``: the TLS Secret's ``ca.crt`` (None: the system's trust store);
    ``credentials``: (user, password) from ``spec.authentication.operatorSecretRef``;
    ``client_certificate``: (chain, key), the brokers' own, presented when
    ``spec.tls.clientAuth`` asks for one (as brokers present it to each other).

    The certificate must name the bootstrap Service and every pod of the headless Service
    (``*.<cluster>-headless.<namespace>.svc.cluster.local``): the operator checks host names."""
    listener = spec.inter_broker
    bootstrap = names.bootstrap_servers(listener.port)
    if listener.protocol == "PLAINTEXT":
        return ClusterAccess(bootstrap)
    settings: dict[str, Any] = {"security_protocol": listener.protocol}
    if uses_tls(listener.protocol):
        context = ssl.create_default_context(cadata=ca_pem) if ca_pem \
            else ssl.create_default_context()
        if client_certificate is not None and spec.tls is not None \
                and spec.tls.client_auth != "none":
            _load_chain(context, *client_certificate)
        settings["ssl_context"] = context
    if uses_sasl(listener.protocol):
        if credentials is None:
            raise InvalidSpec(f"the inter-broker listener {listener.name} uses SASL: set "
                              "spec.authentication.operatorSecretRef")
        settings.update({"sasl_mechanism": spec.authentication.operator_mechanism,
                         "sasl_plain_username": credentials[0],
                         "sasl_plain_password": credentials[1]})
    return ClusterAccess(bootstrap, settings)
