"""How a named listener is reached from outside the cluster: ``type`` and ``configuration``.

Strimzi's shape (``spec.kafka.listeners[].type`` and ``.configuration``), so a Strimzi user
reads it without a manual::

    - name: EXTERNAL
      port: 9094
      securityProtocol: SASL_SSL
      type: nodeport              # internal (default) | nodeport | loadbalancer | ingress
      class: nginx                # ingress: the IngressClass; loadbalancer: loadBalancerClass
      configuration:
        bootstrap: {nodePort: 32100, host: ..., annotations: {...}}
        brokers:
          - {broker: 0, nodePort: 32000, host: ..., advertisedHost: ..., advertisedPort: ...}

An ``internal`` listener is what every listener was before this existed: advertised at the
pod's DNS name, nothing else rendered. Pure: dict in, frozen dataclasses out,
:class:`~.errors.InvalidSpec` for what a schema cannot say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import InvalidSpec

if TYPE_CHECKING:
    from .security_spec import Listener

__all__ = ["INGRESS", "INTERNAL", "LISTENER_TYPES", "LOADBALANCER", "NODEPORT",
           "BootstrapAccess", "BrokerAccess", "ExternalAccess", "check_external_listeners",
           "parse_external"]

INTERNAL, NODEPORT, LOADBALANCER, INGRESS = "internal", "nodeport", "loadbalancer", "ingress"
LISTENER_TYPES = (INTERNAL, NODEPORT, LOADBALANCER, INGRESS)
#: The ports Kubernetes' default --service-node-port-range allows.
NODE_PORT_RANGE = (30000, 32767)


@dataclass(frozen=True)
class BootstrapAccess:
    node_port: int | None = None
    host: str | None = None
    annotations: Mapping[str, str] | None = None


@dataclass(frozen=True)
class BrokerAccess:
    broker: int
    node_port: int | None = None
    host: str | None = None
    #: What the broker advertises instead of the address the operator finds (a DNS name in
    #: front of the node, a NAT's port).
    advertised_host: str | None = None
    advertised_port: int | None = None
    annotations: Mapping[str, str] | None = None


@dataclass(frozen=True)
class ExternalAccess:
    type: str
    ingress_class: str | None = None
    bootstrap: BootstrapAccess = BootstrapAccess()
    brokers: tuple[BrokerAccess, ...] = ()

    def broker(self, broker_id: int) -> BrokerAccess:
        """The broker's own settings, or none (everything found by the operator)."""
        return next((b for b in self.brokers if b.broker == broker_id), BrokerAccess(broker_id))


def _optional_int(raw: Mapping[str, Any], key: str, what: str, low: int, high: int
                  ) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidSpec(f"{what}.{key} must be an integer in {low}..{high}, got {value!r}")
    return value


def _annotations(raw: Mapping[str, Any], what: str) -> Mapping[str, str] | None:
    value = raw.get("annotations")
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise InvalidSpec(f"{what}.annotations must map names to strings")
    return {str(k): v for k, v in value.items()}


def _host(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    return str(value) if value else None


def parse_external(item: Mapping[str, Any], what: str) -> ExternalAccess | None:
    """The listener's outside access, None for an internal listener (the default)."""
    kind = str(item.get("type") or INTERNAL)
    if kind not in LISTENER_TYPES:
        raise InvalidSpec(f"{what}.type must be one of {', '.join(LISTENER_TYPES)}, "
                          f"got {kind!r}")
    configuration = item.get("configuration")
    ingress_class = item.get("class")
    if kind == INTERNAL:
        if configuration is not None or ingress_class is not None:
            raise InvalidSpec(f"{what}: configuration and class are for nodeport, "
                              "loadbalancer and ingress listeners; set type")
        return None
    if ingress_class and kind == NODEPORT:
        raise InvalidSpec(f"{what}.class names an IngressClass or a loadBalancerClass: it "
                          "has no meaning for a nodeport listener")
    configuration = configuration or {}
    if not isinstance(configuration, Mapping):
        raise InvalidSpec(f"{what}.configuration must be an object with bootstrap and brokers")
    ports = NODE_PORT_RANGE
    boot_raw = configuration.get("bootstrap") or {}
    boot_what = f"{what}.configuration.bootstrap"
    if not isinstance(boot_raw, Mapping):
        raise InvalidSpec(f"{boot_what} must be an object")
    bootstrap = BootstrapAccess(_optional_int(boot_raw, "nodePort", boot_what, *ports),
                                _host(boot_raw, "host"), _annotations(boot_raw, boot_what))
    brokers: list[BrokerAccess] = []
    brokers_raw = configuration.get("brokers") or []
    if not isinstance(brokers_raw, Sequence) or isinstance(brokers_raw, str):
        raise InvalidSpec(f"{what}.configuration.brokers must be a list")
    for index, raw in enumerate(brokers_raw):
        broker_what = f"{what}.configuration.brokers[{index}]"
        if not isinstance(raw, Mapping):
            raise InvalidSpec(f"{broker_what} must be an object with broker (the broker id)")
        broker_id = raw.get("broker")
        if isinstance(broker_id, bool) or not isinstance(broker_id, int) or broker_id < 0:
            raise InvalidSpec(f"{broker_what}.broker must be a broker id (0, 1, ...)")
        brokers.append(BrokerAccess(
            broker_id, _optional_int(raw, "nodePort", broker_what, *ports), _host(raw, "host"),
            _host(raw, "advertisedHost"),
            _optional_int(raw, "advertisedPort", broker_what, 1, 65535),
            _annotations(raw, broker_what)))
    ids = [b.broker for b in brokers]
    if len(set(ids)) != len(ids):
        raise InvalidSpec(f"{what}.configuration.brokers: each broker id at most once")
    if kind != NODEPORT and (bootstrap.node_port is not None
                             or any(b.node_port is not None for b in brokers)):
        raise InvalidSpec(f"{what}: nodePort is for nodeport listeners")
    return ExternalAccess(kind, str(ingress_class) if ingress_class else None, bootstrap,
                          tuple(brokers))


def check_external_listeners(listeners: Sequence[Listener], inter_broker: str, replicas: int
                             ) -> None:
    """What needs the whole spec: the brokers replicate over an internal listener; an ingress
    listener routes by TLS server name (SNI), so it needs TLS and a host for the bootstrap and
    for every broker; node ports are unique across the cluster."""
    node_ports: list[int] = []
    for listener in listeners:
        access = listener.external
        if access is None:
            continue
        what = f"listener {listener.name}"
        if listener.name == inter_broker:
            raise InvalidSpec(f"{what} is the inter-broker listener: it must be type internal "
                              "(brokers replicate over the pod network)")
        if access.type == INGRESS:
            if listener.protocol not in ("SSL", "SASL_SSL"):
                raise InvalidSpec(f"{what} is type ingress: its securityProtocol must be SSL "
                                  "or SASL_SSL (the ingress controller passes TLS through and "
                                  "routes by the server name)")
            missing = [str(b) for b in range(replicas) if not access.broker(b).host]
            if not access.bootstrap.host or missing:
                raise InvalidSpec(
                    f"{what} is type ingress: set configuration.bootstrap.host and "
                    f"configuration.brokers[].host for every broker"
                    + (f" (missing: broker {', '.join(missing)})" if missing else
                       " (missing: bootstrap)"))
        node_ports += [p for p in [access.bootstrap.node_port,
                                   *(b.node_port for b in access.brokers)] if p is not None]
    if len(set(node_ports)) != len(node_ports):
        raise InvalidSpec("spec.listeners.named: every nodePort must be unique")
