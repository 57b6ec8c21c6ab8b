"""How this broker connects to the others (replica fetchers, controlled shutdown, the lag
reader, the transaction marker writer): at the other broker's endpoint on the inter-broker
listener, with that listener's security protocol, the trust store (and own certificate) of
the ``ssl.*`` settings and the credentials of ``sasl.jaas.config``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from odradek.client.security import ClientSecurity
from odradek.config_sections import BrokerSections
from odradek.config_security import parse_jaas, uses_sasl, uses_tls
from odradek.security.tls import TlsSettings, client_context

if TYPE_CHECKING:
    from odradek.cluster.model import BrokerInfo

__all__ = ["inter_broker_endpoint", "inter_broker_security"]


def inter_broker_endpoint(info: BrokerInfo, listener: str) -> tuple[str, int]:
    """Host and port of a registered broker (``info``) on ``listener``, else its first
    advertised endpoint."""
    for endpoint in getattr(info, "endpoints", ()):
        if endpoint.listener == listener:
            return str(endpoint.host), int(endpoint.port)
    return str(info.host), int(info.port)


def inter_broker_security(sections: BrokerSections) -> ClientSecurity:
    """How this broker connects to the others: the inter-broker listener's protocol, the
    trust store (and own certificate) of ``ssl.*``, the credentials of ``sasl.jaas.config``
    (the listener's own ``listener.name.<l>.*`` settings where it has them, as in Kafka)."""
    listener = sections.network.inter_broker_listener
    security = sections.security_of(listener)
    protocol = security.protocol_of(listener)
    context = client_context(TlsSettings(security.tls_properties())) if uses_tls(protocol) else None
    user = password = None
    if uses_sasl(protocol) and security.sasl_jaas_config:
        user, password = parse_jaas(security.sasl_jaas_config)
    return ClientSecurity(protocol, context, security.sasl_mechanism_inter_broker_protocol,
                          user, password)
