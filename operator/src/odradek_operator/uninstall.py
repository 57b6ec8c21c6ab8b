"""``python -m odradek_operator.uninstall``: the Helm chart's pre-delete hook.

Why it exists: ``helm uninstall`` deletes a release's objects in one sweep, so the operator
Deployment goes while the release's Topics still carry the operator's finalizer. Nobody is
left to run the finalizer (delete the Kafka topic, or keep it, per ``deletionPolicy``), and
the Topics — and their namespace — hang in Terminating. This hook runs *before* Helm deletes
anything: it deletes the release's odradek resources itself and waits until the operator,
still running, has finalized them. Topics and ConsumerGroups go first (their finalizers talk
to the cluster), the BrokerClusters after them.

What happens to the volumes is the BrokerCluster's ``spec.storage.deleteClaim``: the
StatefulSets keep (default) or delete their PersistentVolumeClaims when they are deleted.

Exit status: 0 when everything is gone, 1 (with the objects still there, one per line) when
the timeout ran out — Helm then stops the uninstall, and ``helm uninstall --no-hooks`` is the
way past a cluster that cannot be finalized.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections.abc import Mapping, Sequence

import kopf

from .kube.api import KubeApi

__all__ = ["DELETION_ORDER", "delete_release_resources", "main", "parse_selector"]

LOG = logging.getLogger("odradek_operator.uninstall")

#: Kinds deleted together, in this order: each group is gone before the next is deleted.
DELETION_ORDER: tuple[tuple[str, ...], ...] = (("Topic", "ConsumerGroup"), ("BrokerCluster",))


def parse_selector(text: str) -> dict[str, str]:
    """``a=b,c=d`` (equality terms only, as the chart passes) to a mapping."""
    out: dict[str, str] = {}
    for term in filter(None, (t.strip() for t in text.split(","))):
        key, sep, value = term.partition("=")
        if not sep or not key:
            raise ValueError(f"label selector term {term!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


async def _present(api: KubeApi, namespace: str, kinds: Sequence[str],
                   selector: Mapping[str, str]) -> list[str]:
    found = []
    for kind in kinds:
        for obj in await api.list(kind, namespace, selector):
            # Deleting cannot be undone: the selection is checked on the objects too.
            labels = obj["metadata"].get("labels") or {}
            if all(labels.get(key) == value for key, value in selector.items()):
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


def _credentials() -> kopf.ConnectionInfo:
    settings = kopf.OperatorSettings()
    info = (kopf.login_with_service_account(settings=settings)
            or kopf.login_with_kubeconfig(settings=settings))
    if info is None:
        raise SystemExit("no Kubernetes credentials: neither a service account nor a kubeconfig")
    return info


async def _run(namespace: str, selector: Mapping[str, str], timeout: float) -> list[str]:
    info = _credentials()
    api = KubeApi(lambda: info)
    try:
        return await delete_release_resources(api, namespace, selector, timeout=timeout)
    finally:
        await api.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m odradek_operator.uninstall",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--selector", required=True, help="labels of the release's resources")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds (default 300)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    left = asyncio.run(_run(args.namespace, parse_selector(args.selector), args.timeout))
    if left:
        print(f"still present after {args.timeout:.0f}s (is the operator running?):",
              file=sys.stderr)
        for name in left:
            print(f"  {name}", file=sys.stderr)
        return 1
    print("odradek resources of the release deleted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
