"""``python -m odradek_operator.uninstall``: the Helm chart's pre-delete hook.

Why it exists: ``helm uninstall`` deletes a release's objects in one sweep, so the operator
Deployment goes while Topics, ConsumerGroups, Users, Rebalances and BrokerClusters still carry
the operator's finalizer. Nobody is left to run it, and those objects — and their namespace —
hang in Terminating on the next ``kubectl delete``. The hook runs *before* Helm deletes anything:

1. The release's own resources (the chart's BrokerCluster and ``topics``, selected by the
   release's labels) are deleted while the operator still runs, and the hook waits until it
   has finalized them: Topics, ConsumerGroups, Users and Rebalances first (their finalizers
   talk to the cluster, a Topic's ``deletionPolicy`` decides whether its Kafka topic goes; a
   Rebalance's moves already started go on), the BrokerClusters after them. Their volumes
   follow the BrokerCluster's ``spec.storage.deleteClaim``.
2. The operator is stopped (its Deployment scaled to 0, its pods gone), so it cannot put its
   finalizer back.
3. Every odradek resource that still carries the operator's finalizer, in every namespace (the
   operator watches them all) — the Topics, ConsumerGroups and Rebalances applied with
   ``kubectl`` that refer to the release's cluster, and any other — loses it: the retain
   semantics of a Strimzi user's KafkaTopic when its operator is gone. The resources stay;
   deleting one (or its namespace) later removes only the Kubernetes object, the Kafka-side
   data is kept (on the brokers' volumes), and a reinstalled operator adopts them again.

Exit status: 0 when done; 1 when step 1 timed out (the objects still there are printed, one
per line; the operator still runs and Helm stops the uninstall — ``helm uninstall --no-hooks``
is the way past a cluster that cannot be finalized) or when step 2 or 3 could not finish (the
operator may be stopped: running ``helm uninstall`` again resumes, ``helm upgrade`` restores
it).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .kube.api import KubeApi, KubeApiError, ResourcePath, standalone_login

__all__ = ["DELETION_ORDER", "FINALIZER", "delete_release_resources", "main", "parse_selector",
           "release_finalizers", "stop_operator", "uninstall_release"]

LOG = logging.getLogger("odradek_operator.uninstall")

#: Kinds deleted together, in this order: each group is gone before the next is deleted.
DELETION_ORDER: tuple[tuple[str, ...], ...] = (("Topic", "ConsumerGroup", "User", "Rebalance"),
                                                ("BrokerCluster",))
#: The finalizer the operator puts on every resource it watches (runtime.configure sets it;
#: tests/operator/test_uninstall.py checks the two agree).
FINALIZER = "odradek.dev/finalizer"
#: Not among KubeApi's kinds: the operator itself never touches Deployments.
DEPLOYMENTS = ResourcePath("apps/v1", "deployments")
#: At least this long for the operator's pods to stop (kopf's grace period is 30 s).
STOP_SECONDS_MIN = 60.0


def parse_selector(text: str) -> dict[str, str]:
    """``a=b,c=d`` (equality terms only, as the chart passes) to a mapping."""
    out: dict[str, str] = {}
    for term in filter(None, (t.strip() for t in text.split(","))):
        key, sep, value = term.partition("=")
        if not sep or not key:
            raise ValueError(f"label selector term {term!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


def _matches(obj: Mapping[str, Any], selector: Mapping[str, str]) -> bool:
    # Deleting (and waiting) by label: the selection is checked on the objects too.
    labels = obj["metadata"].get("labels") or {}
    return all(labels.get(key) == value for key, value in selector.items())


async def _present(api: KubeApi, namespace: str, kinds: Sequence[str],
                   selector: Mapping[str, str]) -> list[str]:
    found = []
    for kind in kinds:
        for obj in await api.list(kind, namespace, selector):
            if _matches(obj, selector):
                found.append(f"{kind}/{obj['metadata']['name']}")
    return sorted(found)


async def delete_release_resources(api: KubeApi, namespace: str, selector: Mapping[str, str],
                                   *, timeout: float, interval: float = 2.0) -> list[str]:
    """Delete the selected odradek resources group by group; return what is still there when
    ``timeout`` runs out (empty: all gone)."""
    deadline = time.monotonic() + timeout
    for kinds in DELETION_ORDER:
        names = await _present(api, namespace, kinds, selector)
        for qualified in names:
            kind, name = qualified.split("/", 1)
            LOG.info("deleting %s in %s", qualified, namespace)
            await api.delete(kind, namespace, name)
        while names:
            if time.monotonic() >= deadline:
                return names
            await asyncio.sleep(interval)
            names = await _present(api, namespace, kinds, selector)
        LOG.info("%s: none left", ", ".join(kinds))
    return []


async def stop_operator(api: KubeApi, namespace: str, deployment: str, *, timeout: float,
                        interval: float = 2.0) -> bool:
    """Scale the operator's Deployment to 0 and wait until its pods are gone (False when one
    is still there at ``timeout``). A Deployment already deleted counts as stopped."""
    url = DEPLOYMENTS.url(namespace, deployment)
    try:
        current = await api.request("GET", url)
    except KubeApiError as exc:
        if exc.status != 404:
            raise
        LOG.info("Deployment %s/%s is gone already", namespace, deployment)
        return True
    selector = dict((current.get("spec") or {}).get("selector", {}).get("matchLabels") or {})
    if not selector:  # an empty selector would wait on every pod of the namespace
        raise ValueError(f"Deployment {deployment} has no spec.selector.matchLabels")
    LOG.info("stopping the operator: Deployment %s/%s scaled to 0", namespace, deployment)
    await api.request("PATCH", url, body={"spec": {"replicas": 0}},
                      content_type="application/merge-patch+json")
    deadline = time.monotonic() + timeout
    while [p for p in await api.list("Pod", namespace, selector) if _matches(p, selector)]:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(interval)
    return True


def _cluster_of(obj: Mapping[str, Any]) -> str:
    ref = (obj.get("spec") or {}).get("clusterRef") or {}
    return str(ref.get("name") or ref.get("bootstrapServers") or obj["metadata"]["name"])


async def release_finalizers(api: KubeApi, *, timeout: float, interval: float = 2.0
                             ) -> list[str]:
    """Remove :data:`FINALIZER` from every odradek resource in every namespace (the operator
    is stopped: nobody would run it); return those still holding it at ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        held = []
        for kind in (kind for kinds in DELETION_ORDER for kind in kinds):
            for obj in await api.list(kind, None):  # None: every namespace
                meta = obj["metadata"]
                finalizers = list(meta.get("finalizers") or [])
                if FINALIZER not in finalizers:
                    continue
                where = f"{kind}/{meta['name']} in {meta.get('namespace')}"
                patch: dict[str, Any] = {"finalizers": [f for f in finalizers if f != FINALIZER]}
                if meta.get("resourceVersion"):  # changed meanwhile: 409, the next round
                    patch["resourceVersion"] = meta["resourceVersion"]
                try:
                    await api.patch(kind, meta.get("namespace"), meta["name"], {"metadata": patch})
                except KubeApiError as exc:
                    if exc.status == 404:
                        continue
                    if exc.status != 409:
                        raise
                    held.append(where)
                    continue
                LOG.info("released %s (cluster %s): no finalizer now, the Kafka-side data stays",
                         where, _cluster_of(obj))
        if not held:
            return []
        if time.monotonic() >= deadline:
            return held
        await asyncio.sleep(interval)


async def uninstall_release(api: KubeApi, namespace: str, selector: Mapping[str, str],
                            operator_deployment: str, *, timeout: float,
                            interval: float = 2.0) -> list[str]:
    """The three steps of the module docstring; return one line per thing that could not be
    done (empty: done)."""
    deadline = time.monotonic() + timeout
    left = await delete_release_resources(api, namespace, selector, timeout=timeout,
                                          interval=interval)
    if left:
        return [f"{name}: not finalized after {timeout:.0f}s (is the operator running?)"
                for name in left]
    if not await stop_operator(api, namespace, operator_deployment, interval=interval,
                               timeout=max(STOP_SECONDS_MIN, deadline - time.monotonic())):
        return [f"Deployment/{operator_deployment}: its pods did not stop"]
    held = await release_finalizers(api, interval=interval,
                                    timeout=max(interval, deadline - time.monotonic()))
    return [f"{where}: its finalizer could not be removed (changed meanwhile)"
            for where in held]


async def _run(namespace: str, selector: Mapping[str, str], operator_deployment: str,
               timeout: float) -> list[str]:
    info = standalone_login()
    api = KubeApi(lambda: info)
    try:
        return await uninstall_release(api, namespace, selector, operator_deployment,
                                       timeout=timeout)
    finally:
        await api.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m odradek_operator.uninstall",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--selector", required=True, help="labels of the release's resources")
    parser.add_argument("--operator-deployment", required=True,
                        help="the operator's Deployment in --namespace (stopped in step 2)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds (default 300)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        problems = asyncio.run(_run(args.namespace, parse_selector(args.selector),
                                    args.operator_deployment, args.timeout))
    except (KubeApiError, ValueError) as exc:  # e.g. 403: the hook's RBAC and its calls disagree
        problems = [str(exc)]
    if problems:
        print("the odradek uninstall hook could not finish:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 1
    print("odradek resources of the release deleted; the operator's finalizer released "
          "everywhere else")
    return 0


if __name__ == "__main__":
    sys.exit(main())
