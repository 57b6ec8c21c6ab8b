"""What each broker advertises on its outside listeners, and what status says about them.

A Kafka client bootstraps once, then connects to each partition leader at the address that
broker advertises, so every broker needs an address of its own that the client can reach:

- ``nodeport``: the address of the node the pod runs on (only the pod knows it when it
  starts: the entrypoint substitutes :data:`NODE_ADDRESS` from the downward API's
  ``status.hostIP``) and the node port Kubernetes allocated to the broker's Service (read
  back from the applied Service; a given ``nodePort`` is what Kubernetes keeps);
- ``loadbalancer``: the ingress IP or host name the load-balancer controller writes into the
  broker Service's status, once it has; until then the broker keeps advertising its pod DNS
  name on that listener, and ``ListenersReady`` is False with reason ``LoadBalancerPending``;
- ``ingress``: the broker's ``host`` on port 443 (TLS passthrough).

``advertisedHost``/``advertisedPort`` override what the operator finds. The advertised text is
hashed into the pod template, so a changed address (a load balancer assigned) rolls the brokers
the ISR-aware way, like any other config change. Pure functions: objects in, decisions out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..conditions import Condition
from ..listener_spec import INGRESS, LOADBALANCER, NODEPORT
from ..manifests.common import ClusterNames
from ..security_spec import Listener
from ..spec import BrokerClusterSpec

__all__ = ["LISTENERS_READY", "NODE_ADDRESS", "Address", "advertised_addresses",
           "broker_address", "listener_status", "load_balancer_address", "node_port"]

LISTENERS_READY = "ListenersReady"
#: Replaced by the broker's entrypoint with ``ODRADEK_NODE_ADDRESS`` (the node's IP).
NODE_ADDRESS = "${ODRADEK_NODE_ADDRESS}"
INGRESS_PORT = 443


@dataclass(frozen=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def node_port(service: Mapping[str, Any] | None) -> int | None:
    """The node port of a (single-port) Service, as the API server allocated it."""
    ports = ((service or {}).get("spec") or {}).get("ports") or [{}]
    value = ports[0].get("nodePort")
    return int(value) if value else None


def load_balancer_address(service: Mapping[str, Any] | None) -> str | None:
    """The first ingress IP or host name a load-balancer controller published, if any."""
    ingress = (((service or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress")
    for entry in ingress or ():
        host = entry.get("ip") or entry.get("hostname")
        if host:
            return str(host)
    return None


def broker_address(names: ClusterNames, listener: Listener, broker: int,
                   services: Mapping[str, Mapping[str, Any]]) -> Address | None:
    """What ``broker`` advertises on the outside ``listener``; None while it is not known
    (the broker then advertises its pod DNS name there)."""
    access = listener.external
    assert access is not None
    own = access.broker(broker)
    service = services.get(names.listener_broker(listener.port_name, broker))
    host: str | None
    port: int | None
    if access.type == NODEPORT:
        host, port = own.advertised_host or NODE_ADDRESS, own.advertised_port or node_port(service)
    elif access.type == LOADBALANCER:
        host = own.advertised_host or load_balancer_address(service)
        port = own.advertised_port or listener.port
    else:
        assert access.type == INGRESS
        host, port = own.advertised_host or own.host, own.advertised_port or INGRESS_PORT
    return Address(host, port) if host and port else None


def advertised_addresses(names: ClusterNames, spec: BrokerClusterSpec, replicas: int,
                         services: Mapping[str, Mapping[str, Any]]) -> dict[int, str]:
    """Per broker, one ``NAME://host:port`` line per outside listener whose address is known
    (the entrypoint's ``broker-<id>.advertised``); empty without outside listeners."""
    out: dict[int, str] = {}
    if not spec.external_listeners:
        return out
    for broker in range(replicas):
        lines = [f"{listener.name}://{address}" for listener in spec.external_listeners
                 if (address := broker_address(names, listener, broker, services)) is not None]
        out[broker] = "".join(line + "\n" for line in lines)
    return out


def _resolve(address: Address | None, node: str | None) -> Address | None:
    """An advertised address as a client sees it: the node placeholder made the pod's node."""
    if address is None or address.host != NODE_ADDRESS:
        return address
    return Address(node, address.port) if node else None


def _bootstrap(names: ClusterNames, listener: Listener,
               services: Mapping[str, Mapping[str, Any]], nodes: list[str]) -> list[Address]:
    access = listener.external
    assert access is not None
    service = services.get(names.listener_bootstrap(listener.port_name))
    if access.type == NODEPORT:
        port = node_port(service)
        return [Address(node, port) for node in nodes] if port else []
    if access.type == LOADBALANCER:
        host = load_balancer_address(service)
        return [Address(host, listener.port)] if host else []
    assert access.bootstrap.host is not None
    return [Address(access.bootstrap.host, INGRESS_PORT)]


def listener_status(names: ClusterNames, spec: BrokerClusterSpec, replicas: int,
                    services: Mapping[str, Mapping[str, Any]],
                    node_addresses: Mapping[int, str], *, reported: bool = False
                    ) -> tuple[list[dict[str, Any]], Condition | None]:
    """``status.listeners`` (Strimzi's: name, type, bootstrapServers, addresses) and the
    ``ListenersReady`` condition: None without outside listeners (nothing to report), unless
    the condition was ``reported`` before (the last outside listener removed: it must not
    stay False). ``node_addresses``: broker id → the IP of the node its pod runs on."""
    report: list[dict[str, Any]] = []
    pending_balancers: list[str] = []
    unplaced: set[int] = set()  # brokers whose node (or node port) is not known yet
    bootstrap_unknown = False  # a nodeport bootstrap without any node or its node port
    nodes = sorted(set(node_addresses.values()))
    for listener in spec.listeners:
        entry: dict[str, Any] = {"name": listener.name, "type": listener.type,
                                 "securityProtocol": listener.protocol}
        if listener.external is None:
            addresses = [Address(f"{names.bootstrap_service}.{names.namespace}.svc",
                                 listener.port)]
        else:
            addresses = _bootstrap(names, listener, services, nodes)
            if listener.type == LOADBALANCER and not addresses:
                pending_balancers.append(names.listener_bootstrap(listener.port_name))
            elif listener.type == NODEPORT and not addresses:
                bootstrap_unknown = True
            for broker in range(replicas):
                advertised = broker_address(names, listener, broker, services)
                if listener.type == LOADBALANCER and advertised is None:
                    pending_balancers.append(names.listener_broker(listener.port_name, broker))
                elif _resolve(advertised, node_addresses.get(broker)) is None:
                    unplaced.add(broker)
        entry["bootstrapServers"] = ",".join(str(a) for a in addresses)
        entry["addresses"] = [{"host": a.host, "port": a.port} for a in addresses]
        report.append(entry)
    if not spec.external_listeners:
        return report, (Condition(LISTENERS_READY, True, "NoOutsideListeners",
                                  "no listener is reachable from outside the cluster")
                        if reported else None)
    return report, _condition(pending_balancers, sorted(unplaced), bootstrap_unknown)


def _condition(pending_balancers: list[str], unplaced: list[int], bootstrap_unknown: bool
               ) -> Condition:
    if pending_balancers:
        return Condition(
            LISTENERS_READY, False, "LoadBalancerPending",
            f"no load-balancer address yet for Service(s) {', '.join(pending_balancers)}: a "
            "LoadBalancer Service gets one from the cloud provider or a load-balancer "
            "controller (MetalLB, ...); is one installed? Until then those brokers advertise "
            "their pod DNS name on that listener")
    if unplaced or bootstrap_unknown:
        return Condition(
            LISTENERS_READY, False, "NodeAddressPending",
            "waiting for the node address (pod scheduled) or node port of "
            + (f"broker(s) {', '.join(map(str, unplaced))}" if unplaced else "the bootstrap"))
    return Condition(LISTENERS_READY, True, "AddressesKnown",
                     "every outside listener's bootstrap and broker addresses are known")
