"""``python -m odradek_operator.storage_migration``: the Helm chart's post-upgrade hook that
moves every stored odradek object to its CRD's storage version, so the deprecated versions
can later be removed from the CRDs.

Why: the API server writes an object in the storage version of the moment and leaves it so;
a CRD's ``status.storedVersions`` lists every version that may still be in etcd, and the API
server refuses a CRD that drops a version still listed there. After the CRDs switched storage
from v1alpha1 to v1beta1, objects nobody wrote since are still v1alpha1 in etcd. This does,
for the odradek CRDs only, what kube-storage-version-migrator does (and the Kubernetes
documentation's "upgrade existing objects to a new stored version"), for each CRD:

1. read the CRD: its storage version (``spec.versions[].storage``) and ``status.storedVersions``;
   nothing to do when that list is the storage version alone;
2. write every object of the kind back unchanged, in every namespace: an empty merge patch,
   which the API server encodes in the storage version (an object changed meanwhile is already
   stored so; one deleted meanwhile needs nothing);
3. set ``status.storedVersions`` to the storage version alone.

Objects written after step 1 are in the storage version already (the CRD switched before the
hook ran: docs/operations.md#upgrading applies the CRDs first). A CRD that is not installed is
skipped. Exit status 0 when every CRD is migrated, else 1 with one line per failure; Helm then
reports the upgrade as failed and running the hook again (``helm upgrade`` once more) resumes.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .kube.api import KubeApi, KubeApiError, ResourcePath, standalone_login
from .manifests.common import API_GROUP

__all__ = ["CRD_NAMES", "Migration", "main", "migrate_all", "migration_of"]

LOG = logging.getLogger("odradek_operator.storage_migration")

CRD_NAMES = tuple(f"{plural}.{API_GROUP}" for plural in
                  ("brokerclusters", "topics", "consumergroups", "rebalances", "users"))
CRDS = ResourcePath("apiextensions.k8s.io/v1", "customresourcedefinitions", False)


@dataclass(frozen=True)
class Migration:
    """What one CRD needs: its objects rewritten at ``storage``, then ``stored`` reduced."""

    crd: str
    storage: str
    stored: tuple[str, ...]

    @property
    def objects(self) -> ResourcePath:
        """Every object of the kind, addressed at the storage version."""
        return ResourcePath(f"{API_GROUP}/{self.storage}", self.crd.split(".", 1)[0])


def migration_of(crd: Mapping[str, Any]) -> Migration | None:
    """The migration a CRD needs (pure): None when only its storage version is stored."""
    (storage,) = [str(v["name"]) for v in crd["spec"]["versions"] if v.get("storage")]
    stored = tuple(str(v) for v in (crd.get("status") or {}).get("storedVersions") or ())
    if stored in ((), (storage,)):
        return None
    return Migration(str(crd["metadata"]["name"]), storage, stored)


async def _migrate(api: KubeApi, migration: Migration) -> None:
    listed = await api.request("GET", migration.objects.url(None))
    items: list[dict[str, Any]] = list(listed.get("items") or [])
    for obj in items:
        meta = obj["metadata"]
        try:
            await api.request("PATCH", migration.objects.url(meta.get("namespace"), meta["name"]),
                              body={}, content_type="application/merge-patch+json")
        except KubeApiError as exc:
            if exc.status != 404:
                raise
    await api.request("PATCH", CRDS.url(None, migration.crd) + "/status",
                      body={"status": {"storedVersions": [migration.storage]}},
                      content_type="application/merge-patch+json")
    LOG.info("%s: %d object(s) rewritten at %s; stored versions were %s, now %s",
             migration.crd, len(items), migration.storage, list(migration.stored),
             [migration.storage])


async def migrate_all(api: KubeApi, names: Sequence[str] = CRD_NAMES) -> list[str]:
    """Migrate each CRD of ``names``; return one line per CRD that failed (empty: done)."""
    problems = []
    for name in names:
        try:
            crd = await api.request("GET", CRDS.url(None, name))
        except KubeApiError as exc:
            if exc.status == 404:
                LOG.info("%s: not installed, nothing to migrate", name)
                continue
            problems.append(f"{name}: {exc}")
            continue
        migration = migration_of(crd)
        if migration is None:
            LOG.info("%s: only its storage version is stored", name)
            continue
        try:
            await _migrate(api, migration)
        except KubeApiError as exc:
            problems.append(f"{name}: {exc}")
    return problems


async def _run() -> list[str]:
    info = standalone_login()
    api = KubeApi(lambda: info)
    try:
        return await migrate_all(api)
    finally:
        await api.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m odradek_operator.storage_migration",
                                     description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    problems = asyncio.run(_run())
    if problems:
        print("the odradek storage-version migration could not finish:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 1
    print("every odradek object is stored at its CRD's storage version")
    return 0


if __name__ == "__main__":
    sys.exit(main())
