"""A kind cluster (``make e2e``): any machine whose Docker engine can run privileged
containers and pull ``kindest/node``.

``e2e/kind/cluster.sh`` creates and deletes the cluster; this backend attaches to it by name
(``ODRADEK_KIND_CLUSTER``, default ``odradek-e2e``), reads its kubeconfig from kind, and loads
images with ``kind load docker-image``. Volumes come from kind's default StorageClass
(``standard``, the local-path provisioner), so nothing needs recycling.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .base import Backend, BackendUnavailable


class KindBackend(Backend):
    name = "kind"
    storage_class = "standard"

    def __init__(self) -> None:
        self.cluster = os.environ.get("ODRADEK_KIND_CLUSTER", "odradek-e2e")
        self.kind = os.environ.get("KIND", shutil.which("kind") or "kind")

    def connect(self) -> Path:
        if shutil.which(self.kind) is None and not Path(self.kind).exists():
            raise BackendUnavailable("kind is not installed (make e2e builds it)")
        try:
            clusters = subprocess.run([self.kind, "get", "clusters"], capture_output=True,
                                      text=True, timeout=60, check=True).stdout.split()
        except (OSError, subprocess.SubprocessError) as exc:
            raise BackendUnavailable(f"kind cannot list clusters: {exc}") from None
        if self.cluster not in clusters:
            raise BackendUnavailable(f"no kind cluster named {self.cluster} (make e2e creates it)")
        kubeconfig = Path(tempfile.mkdtemp(prefix="odradek-kind-")) / "kubeconfig"
        kubeconfig.write_text(subprocess.run(
            [self.kind, "get", "kubeconfig", "--name", self.cluster], capture_output=True,
            text=True, timeout=60, check=True).stdout)
        self.kubeconfig = kubeconfig
        return kubeconfig

    def load_images(self, images: Sequence[str]) -> None:
        subprocess.run([self.kind, "load", "docker-image", "--name", self.cluster, *images],
                       check=True, timeout=900)
