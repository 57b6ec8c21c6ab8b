"""BrokerCluster: children applied idempotently, then one step of the long operations.

Each reconcile (on change, on resume, and every :data:`RECONCILE_INTERVAL_S`):

1. reads the Secrets the spec names (TLS certificate, the operator's credentials; missing or
   incomplete is a ``SecretNotFound``/``SecretInvalid`` condition), builds every child (pure
   builders) and server-side-applies it — the outside listeners' Services first, since what
   the brokers advertise comes from them (:mod:`.listeners`);
2. observes pods and Kafka (Kafka unreachable is not fatal here: children still converge,
   Kafka-dependent steps wait);
3. grows the volumes when spec.storage.size grew (claims patched, then the StatefulSet
   re-created around its running pods: :mod:`.broker_volumes`);
4. brings the SCRAM users in line with spec.authentication.users, then takes at most one
   step of: drain before scale-down, live config change, restart of one
   outdated pod (ISR-aware, controller last), rebalance after scale-up;
5. reports progress in status and comes back soon while work remains.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

import kopf

from ..conditions import DEGRADED, READY, RECONCILING, Condition
from ..decisions.cluster_plan import (
    PodState,
    decide_rebalance,
    decide_replicas,
    decide_restart,
)
from ..decisions.config_change import (
    describe_config_changes,
    plan_dynamic_config,
    restart_relevant_config,
    split_config,
)
from ..decisions.listeners import LISTENERS_READY, advertised_addresses, listener_status
from ..decisions.state import ClusterState
from ..errors import ClusterUnreachable
from ..kafka.access import ClusterAccess
from ..kafka.brokers import apply_dynamic_config, reassign
from ..kafka.observe import observe_cluster
from ..kafka.session import admin_session
from ..kube.api import KubeApi, KubeApiError
from ..manifests import brokers as broker_manifests
from ..manifests.common import API_GROUP, CRD_VERSION, ClusterNames, Owner, config_hash
from ..manifests.listeners import advertised_data
from ..manifests.zookeeper import zookeeper_connect, zookeeper_manifests
from ..metrics import METRICS
from ..runtime import kube
from ..spec import BrokerClusterSpec
from .broker_volumes import grow_volumes
from .common import ReconcileResult, reconcile_guarded
from .listeners import apply_listeners
from .scram_users import reconcile_users
from .secrets import load_cluster_secrets

__all__ = ["RECONCILE_INTERVAL_S", "desired_children"]

GROUP, VERSION, PLURAL = API_GROUP, CRD_VERSION, "brokerclusters"
RECONCILE_INTERVAL_S = 30.0
STEP_DELAY_S = 10.0
BROKER_STOP_TIMEOUT_S = 240.0
REVISION_LABEL = "controller-revision-hash"


def desired_children(names: ClusterNames, owner: Owner, spec: BrokerClusterSpec, *,
                     replicas: int, dynamic_supported: bool, pod_monitor: bool,
                     secret_inputs: Mapping[str, str] | None = None,
                     advertised: Mapping[int, str] | None = None) -> list[dict[str, Any]]:
    """Every child object, in apply order (pure). ``secret_inputs``: what of the mounted
    Secrets restarts brokers when it changes (:class:`.secrets.ClusterSecrets`);
    ``advertised``: each broker's outside addresses (:mod:`..decisions.listeners`), which
    restart it when they change. The outside listeners' own objects are
    :func:`.listeners.apply_listeners`' (applied first: the addresses come from them)."""
    children: list[dict[str, Any]] = []
    if spec.managed_zookeeper is not None:
        children += zookeeper_manifests(names, owner, spec.managed_zookeeper)
        connect = zookeeper_connect(names, spec.managed_zookeeper)
    else:
        assert spec.zookeeper_connect is not None
        connect = spec.zookeeper_connect
    config = broker_manifests.broker_config(spec, connect)
    restart_hash = config_hash(restart_relevant_config(config, dynamic_supported))
    if secret_inputs:  # without Secrets the hash stays what it was before they existed
        restart_hash = config_hash({"config": restart_hash, "secrets": dict(secret_inputs)})
    per_broker = advertised_data(advertised or {})
    if per_broker:  # without outside listeners the hash stays what it was before them
        restart_hash = config_hash({"config": restart_hash, "advertised": per_broker})
    if spec.rack_topology_key:
        children += broker_manifests.rack_rbac(names, owner)
    children += [
        broker_manifests.config_map(names, owner, config, per_broker),
        broker_manifests.headless_service(names, owner, spec),
        broker_manifests.bootstrap_service(names, owner, spec),
        broker_manifests.pod_disruption_budget(names, owner),
        broker_manifests.statefulset(names, owner, spec, replicas=replicas,
                                     restart_hash=restart_hash),
    ]
    if pod_monitor and spec.metrics_enabled:
        children.append(broker_manifests.pod_monitor(names, owner))
    return children


def _pod_states(pods: Sequence[Mapping[str, Any]], names: ClusterNames) -> list[PodState]:
    out = []
    prefix = names.statefulset + "-"
    for pod in pods:
        name = pod["metadata"]["name"]
        if not name.startswith(prefix) or not name[len(prefix):].isdigit():
            continue
        conditions = (pod.get("status") or {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        out.append(PodState(int(name[len(prefix):]),
                            (pod["metadata"].get("labels") or {}).get(REVISION_LABEL),
                            ready, bool(pod["metadata"].get("deletionTimestamp"))))
    return out


def _node_addresses(pods: Sequence[Mapping[str, Any]], names: ClusterNames
                    ) -> dict[int, str]:
    """Broker id → the IP of the node its pod is scheduled on (``status.hostIP``)."""
    hosts = {pod["metadata"]["name"]: (pod.get("status") or {}).get("hostIP") for pod in pods}
    return {state.ordinal: host for state in _pod_states(pods, names)
            if (host := hosts.get(names.pod(state.ordinal)))}


async def _reconcile(body: kopf.Body, namespace: str, name: str) -> ReconcileResult:
    api = kube()
    uid = str(body.metadata.uid)
    spec = BrokerClusterSpec.parse(body.spec)
    names = ClusterNames(name, namespace)
    owner = Owner(name, namespace, uid)
    status = dict(body.get("status") or {})
    dynamic = dict(status.get("dynamicConfig") or {})
    dynamic_supported = bool(dynamic.get("supported", True)) \
        if dynamic.get("image") == spec.image else True
    secrets = await load_cluster_secrets(api, names, spec)
    access = secrets.access
    bootstrap = access.bootstrap_servers
    result = ReconcileResult({"bootstrapServers": bootstrap})

    existing = await api.get("StatefulSet", namespace, names.statefulset)
    current_replicas = int(existing["spec"]["replicas"]) if existing else spec.replicas
    kafka, unreachable = await _observe_kafka(access, spec) if existing else (None, None)
    replicas = decide_replicas(spec.replicas, current_replicas, kafka)

    volumes = await grow_volumes(api, namespace, names, spec, existing, status.get("storage"))
    sized = dataclasses.replace(spec, storage_size=volumes.template_size)
    pod_monitor = await api.serves("monitoring.coreos.com/v1")
    services = await apply_listeners(api, names, owner, spec, replicas.statefulset_replicas)
    advertised = advertised_addresses(names, spec, replicas.statefulset_replicas, services)
    for child in desired_children(names, owner, sized, replicas=replicas.statefulset_replicas,
                                  dynamic_supported=dynamic_supported, pod_monitor=pod_monitor,
                                  secret_inputs=secrets.restart_inputs, advertised=advertised):
        if volumes.recreate and child["kind"] == "StatefulSet" \
                and child["metadata"]["name"] == names.statefulset:
            continue  # deleted (pods orphaned, still running): applied anew next time
        await api.apply(child)
    result.status["storage"] = {"size": volumes.template_size,
                                "expanding": list(volumes.expanding)}
    if volumes.recreate:
        message = f"volumes grown to {spec.storage_size}: re-creating the StatefulSet"
        result.event("VolumesExpanded", message)
        result.conditions += [Condition(RECONCILING, True, "ExpandingVolumes", message)]
        result.requeue_after, result.requeue_reason = STEP_DELAY_S, message
        return result

    problems: list[tuple[str, str]] = []
    if volumes.refusal is not None:
        problems.append(volumes.refusal)
    if unreachable is not None:
        problems.append(unreachable)
    if kafka is not None and (spec.authentication.users or status.get("scramUsers")):
        outcome = await _with_admin(access, lambda admin: reconcile_users(
            api, admin, namespace, spec, status.get("scramUsers")))
        result.status["scramUsers"] = outcome.applied
        problems += outcome.problems
        for message in outcome.events:
            result.event("UsersUpdated", message)

    statefulset = await api.get("StatefulSet", namespace, names.statefulset) or {}
    sts_status = statefulset.get("status") or {}
    raw_pods = await api.list("Pod", namespace, names.selector("broker"))
    pods = _pod_states(raw_pods, names)
    if not spec.legacy_listeners:
        result.status["listeners"], listeners_ready = listener_status(
            names, spec, replicas.statefulset_replicas, services,
            _node_addresses(raw_pods, names),
            reported=any(c.get("type") == LISTENERS_READY for c in status.get("conditions") or ()))
        if listeners_ready is not None:
            result.conditions.append(listeners_ready)
    restart = decide_restart(pods, sts_status.get("updateRevision"), kafka)

    busy: list[str] = []
    if volumes.expand:
        busy.append(f"expanding {len(volumes.expand)} volume(s) to {spec.storage_size}")
        result.event("ExpandingVolumes", f"asked {', '.join(volumes.expand)} for "
                                         f"{spec.storage_size}")
    elif volumes.expanding:
        busy.append(f"waiting for {', '.join(volumes.expanding)} to reach "
                    f"{spec.storage_size} (a pending file-system resize finishes when the "
                    "volume is next mounted)")
    if replicas.moves and kafka is not None:
        await _with_admin(access, lambda admin: reassign(admin, replicas.moves))
        result.event("Draining", replicas.message)
    if replicas.phase in ("Draining", "WaitingForKafka"):
        busy.append(replicas.message)

    # Live config: only once every broker runs (a new pod reads server.properties anyway).
    if kafka is not None and not restart.pending and all(p.ready for p in pods):
        plan = plan_dynamic_config(spec.config, dynamic.get("applied") or {})
        if not plan.empty and dynamic_supported:
            ok = await _with_admin(access, lambda admin: apply_dynamic_config(admin, plan))
            keys = describe_config_changes(plan.operations)
            if ok:
                dynamic = {"applied": split_config(spec.config)[1], "supported": True,
                           "image": spec.image}
                result.event("ConfigApplied", f"applied live without restart: {keys}")
            else:
                dynamic = {"applied": dynamic.get("applied") or {}, "supported": False,
                           "image": spec.image}
                result.event("ConfigNeedsRestart", f"the cluster refused dynamic broker "
                             f"configs; a rolling restart applies them: {keys}", warning=True)
                busy.append("switching to a rolling restart for config changes")
    if dynamic:
        result.status["dynamicConfig"] = dynamic

    if restart.restart is not None:
        pod = names.pod(restart.restart)
        await api.delete("Pod", namespace, pod)
        result.event("RestartingBroker", f"restarting {pod} (broker {restart.restart}) to apply "
                                         f"the new configuration; "
                                         f"{len(restart.pending) - 1} more after it")
    if restart.pending:
        busy.append(f"rolling restart: {len(restart.pending)} broker(s) to go"
                    + (f" ({restart.waiting_for})" if restart.waiting_for else ""))
        result.status["rollingRestart"] = {
            "targetRevision": sts_status.get("updateRevision") or "",
            "pending": list(restart.pending),
            "current": restart.restart if restart.restart is not None else -1,
            "waitingFor": restart.waiting_for}
    else:
        result.status["rollingRestart"] = {"pending": [], "waitingFor": ""}

    scaling = dict(status.get("scaling") or {})
    scaling.update({"phase": replicas.phase, "toReplicas": spec.replicas,
                    "fromReplicas": current_replicas,
                    "movingPartitions": len(replicas.moves)})
    if spec.rebalance_on_scale_up and replicas.phase == "Stable" and not restart.pending:
        moves = decide_rebalance(spec.replicas, kafka, scaling.get("rebalancedForReplicas"))
        if moves is not None:
            if moves:
                await _with_admin(access, lambda admin: reassign(admin, moves))
                result.event("Rebalancing", f"moving {len(moves)} partition(s) onto the "
                                            f"{spec.replicas} brokers")
            scaling["rebalancedForReplicas"] = spec.replicas
    result.status["scaling"] = scaling

    ready_replicas = int(sts_status.get("readyReplicas") or 0)
    result.status.update({"replicas": replicas.statefulset_replicas,
                          "readyReplicas": ready_replicas})
    if kafka is not None:
        result.status.update({"controllerId": kafka.controller,
                              "underReplicatedPartitions": kafka.under_replicated_partitions})
        METRICS.under_replicated_observed(namespace, name, kafka.under_replicated_partitions)
    result.conditions += _conditions(spec, replicas.phase, replicas.message, kafka,
                                     ready_replicas, busy, problems)
    if busy:
        result.requeue_after, result.requeue_reason = STEP_DELAY_S, "; ".join(busy)
    return result


def _conditions(spec: BrokerClusterSpec, phase: str, phase_message: str,
                kafka: ClusterState | None, ready_replicas: int, busy: list[str],
                known: list[tuple[str, str]] | None = None) -> list[Condition]:
    """``known``: problems found on the way, (reason, message), most important first (a
    refused login, a user's missing Secret)."""
    problems = list(known or [])
    if kafka is None:
        if not any(reason == "AuthenticationFailed" for reason, _ in problems):
            problems.append(("ClusterUnreachable", "the brokers do not answer yet"))
    elif kafka.under_replicated_partitions:
        problems.append(("UnderReplicated",
                         f"{kafka.under_replicated_partitions} partition(s) under-replicated"))
    if phase == "ScaleDownBlocked":
        problems.insert(0, ("ScaleDownBlocked", phase_message))
    conditions = [Condition(DEGRADED, bool(problems),
                            problems[0][0] if problems else "Healthy",
                            problems[0][1] if problems else "")]
    if busy:
        conditions.append(Condition(RECONCILING, True, "InProgress", "; ".join(busy)))
    else:
        conditions.append(Condition(RECONCILING, False, "Idle", ""))
    ready = not busy and not problems and ready_replicas >= spec.replicas
    conditions.append(Condition(
        READY, ready, "ClusterReady" if ready else
        (problems[0][0] if problems else "NotReady"),
        f"{ready_replicas}/{spec.replicas} brokers ready" if not ready else
        f"{spec.replicas} brokers ready, all partitions fully replicated"))
    return conditions


async def _observe_kafka(access: ClusterAccess, spec: BrokerClusterSpec
                         ) -> tuple[ClusterState | None, tuple[str, str] | None]:
    """The cluster's state, or None and why (a refused login is worth its own reason)."""
    default_min_isr = int(spec.config.get("min.insync.replicas", "1"))
    try:
        async with admin_session(access.bootstrap_servers,
                                 security=access.settings) as admin:
            return await observe_cluster(admin, default_min_isr), None
    except ClusterUnreachable as exc:
        if exc.reason == "AuthenticationFailed":
            return None, (exc.reason, str(exc))
        return None, None


async def _with_admin(access: ClusterAccess, action: Any) -> Any:
    async with admin_session(access.bootstrap_servers, security=access.settings) as admin:
        return await action(admin)


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
async def reconcile_broker_cluster(**kwargs: Any) -> None:
    await reconcile_guarded("BrokerCluster", kwargs, _reconcile)


@kopf.timer(GROUP, VERSION, PLURAL, interval=RECONCILE_INTERVAL_S,
            initial_delay=RECONCILE_INTERVAL_S, idle=RECONCILE_INTERVAL_S / 2)
async def watch_broker_cluster(**kwargs: Any) -> None:
    if kwargs["body"].metadata.get("deletionTimestamp"):
        return
    await reconcile_guarded("BrokerCluster", kwargs, _reconcile)


@kopf.on.delete(GROUP, VERSION, PLURAL)
async def stop_brokers_then_release(*, body: kopf.Body, namespace: str | None, name: str,
                                    logger: Any, **_: Any) -> None:
    """Before the children go: brokers first, then the rest.

    Garbage collection would delete the brokers and a managed ZooKeeper at once; a broker
    whose ZooKeeper is gone cannot finish its controlled shutdown and holds on for its whole
    termination grace period (minutes), and its volume with it. So the brokers are scaled to
    zero while ZooKeeper still runs (keeping their claims unless ``deleteClaim``: a scale to zero
    is a scale-down), and the finalizer waits (bounded) until they have stopped.

    Namespaced children then go with their owner; the rack ClusterRole(Binding) cannot carry a
    namespaced owner, so they are deleted here."""
    api: KubeApi = kube()
    names = ClusterNames(name, namespace or "")
    managed = bool(((body.get("spec") or {}).get("zookeeper") or {}).get("managed"))
    if managed and namespace:
        pods = await api.list("Pod", namespace, names.selector(broker_manifests.BROKER))
        waited = seconds_since(body.metadata.get("deletionTimestamp"))
        if pods and waited < BROKER_STOP_TIMEOUT_S:
            try:
                delete_claim = bool(((body.get("spec") or {}).get("storage") or {})
                                    .get("deleteClaim", False))
                await api.patch("StatefulSet", namespace, names.statefulset,
                                broker_manifests.stop_brokers_patch(delete_claim))
            except KubeApiError as exc:  # already gone (a foreground deletion): pods follow
                if exc.status != 404:
                    raise
            raise kopf.TemporaryError(f"waiting for {len(pods)} broker(s) to stop before "
                                      "their ZooKeeper goes", delay=5)
        if pods:
            logger.warning(f"{len(pods)} broker(s) still running after {waited:.0f}s; "
                           "deleting the cluster anyway")
    for child in broker_manifests.rack_rbac(names, None):
        if child["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            await api.delete(child["kind"], None, child["metadata"]["name"])
    METRICS.cluster_forgotten(namespace or "", name)


def seconds_since(timestamp: str | None) -> float:
    """Seconds since an RFC 3339 timestamp of the API server (0 when there is none)."""
    if not timestamp:
        return 0.0
    then = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return max(0.0, (datetime.datetime.now(datetime.UTC) - then).total_seconds())
