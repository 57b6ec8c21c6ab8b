"""The Kubernetes objects that let clients outside the cluster reach an outside listener.

Kafka clients bootstrap from one address, then connect to every partition leader at the
address that broker advertises; so each outside listener gets, as in Strimzi:

- a bootstrap Service ``<cluster>-<listener>-bootstrap`` over every broker, and
- one Service per broker ``<cluster>-<listener>-<id>``, selecting that broker's pod by the
  label the StatefulSet controller gives every pod (``statefulset.kubernetes.io/pod-name``),

of type NodePort or LoadBalancer, or ClusterIP behind one Ingress each (TLS passthrough: the
broker terminates TLS, the ingress controller routes by the server name). What each broker
advertises for the listener is :mod:`..decisions.listeners`' decision; it reaches the pod as
the key ``broker-<id>.advertised`` of the cluster's ConfigMap (:func:`advertised_data`).

Every object carries :data:`LISTENER_LABEL`, so the operator finds and deletes the ones a
spec no longer wants (a listener removed, a broker scaled away). Pure: spec in, dicts out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..listener_spec import INGRESS, LOADBALANCER, NODEPORT
from ..security_spec import Listener
from ..spec import BrokerClusterSpec
from .common import ClusterNames, Owner, metadata

__all__ = ["COMPONENT", "LISTENER_LABEL", "POD_NAME_LABEL", "advertised_data", "advertised_key",
           "listener_objects"]

LISTENER_LABEL = "odradek.dev/listener"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
COMPONENT = "listener"
SERVICE_TYPES = {NODEPORT: "NodePort", LOADBALANCER: "LoadBalancer", INGRESS: "ClusterIP"}
#: ingress-nginx hands the TLS connection to the Service untouched (Strimzi's annotations).
INGRESS_ANNOTATIONS = {"nginx.ingress.kubernetes.io/ssl-passthrough": "true",
                       "nginx.ingress.kubernetes.io/backend-protocol": "HTTPS"}


def advertised_key(broker: int) -> str:
    return f"broker-{broker}.advertised"


def advertised_data(advertised: Mapping[int, str]) -> dict[str, str]:
    """ConfigMap keys for the brokers' outside addresses (none without outside listeners, so
    the ConfigMap of every other cluster keeps its bytes)."""
    return {advertised_key(broker): text for broker, text in sorted(advertised.items())
            if text}


def _meta(name: str, names: ClusterNames, listener: Listener, owner: Owner | None,
          annotations: Mapping[str, str] | None) -> dict[str, Any]:
    meta = metadata(name, names, COMPONENT, owner)
    meta["labels"][LISTENER_LABEL] = listener.port_name
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def _service(name: str, names: ClusterNames, owner: Owner | None, listener: Listener,
             selector: Mapping[str, str], node_port: int | None,
             annotations: Mapping[str, str] | None, *, per_broker: bool) -> dict[str, Any]:
    assert listener.external is not None
    access = listener.external
    port: dict[str, Any] = {"name": listener.port_name, "port": listener.port,
                            "targetPort": listener.port_name, "protocol": "TCP"}
    if node_port is not None:
        port["nodePort"] = node_port
    spec: dict[str, Any] = {"type": SERVICE_TYPES[access.type], "selector": dict(selector),
                            "ports": [port]}
    if per_broker:
        # A broker leads partitions before it is Ready (in every ISR): its clients must reach
        # it all the same, as they do through the headless Service.
        spec["publishNotReadyAddresses"] = True
    if access.type == LOADBALANCER and access.ingress_class:
        spec["loadBalancerClass"] = access.ingress_class
    service_annotations = None if access.type == INGRESS else annotations
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": _meta(name, names, listener, owner, service_annotations),
            "spec": spec}


def _ingress(name: str, names: ClusterNames, owner: Owner | None, listener: Listener,
             host: str, annotations: Mapping[str, str] | None) -> dict[str, Any]:
    assert listener.external is not None
    spec: dict[str, Any] = {
        "tls": [{"hosts": [host]}],
        "rules": [{"host": host, "http": {"paths": [{
            "path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": name, "port": {"number": listener.port}}}}]}}]}
    if listener.external.ingress_class:
        spec["ingressClassName"] = listener.external.ingress_class
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": _meta(name, names, listener, owner,
                              {**INGRESS_ANNOTATIONS, **(annotations or {})}),
            "spec": spec}


def listener_objects(names: ClusterNames, owner: Owner | None, spec: BrokerClusterSpec,
                     replicas: int) -> list[dict[str, Any]]:
    """Services (then Ingresses) of every outside listener, for brokers ``0..replicas-1``."""
    services: list[dict[str, Any]] = []
    ingresses: list[dict[str, Any]] = []
    for listener in spec.external_listeners:
        access = listener.external
        assert access is not None
        name = names.listener_bootstrap(listener.port_name)
        boot = access.bootstrap
        services.append(_service(name, names, owner, listener, names.selector("broker"),
                                 boot.node_port, boot.annotations, per_broker=False))
        if access.type == INGRESS and boot.host:  # required: listener_spec
            ingresses.append(_ingress(name, names, owner, listener, boot.host,
                                      boot.annotations))
        for broker in range(replicas):
            own = access.broker(broker)
            name = names.listener_broker(listener.port_name, broker)
            selector = {**names.selector("broker"), POD_NAME_LABEL: names.pod(broker)}
            services.append(_service(name, names, owner, listener, selector, own.node_port,
                                     own.annotations, per_broker=True))
            # A broker beyond spec.replicas (drained before a scale-down) may have no host.
            if access.type == INGRESS and own.host:
                ingresses.append(_ingress(name, names, owner, listener, own.host,
                                          own.annotations))
    return services + ingresses
