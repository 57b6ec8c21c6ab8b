"""The local stack of ``e2e/local/`` (real apiserver, kubelet, containerd, kube-proxy, CoreDNS
in the network namespace ``odradek-k8s``).

Cluster addresses exist only inside that namespace, so this process joins it (``setns``) before
any client is made: the kubeconfig's 127.0.0.1:6443 is then the apiserver, and every socket a
test opens — and every subprocess it starts — stays inside. Started from outside it (plain
``pytest e2e``) this works the same; ``make e2e-local`` already starts pytest inside it.

Local PersistentVolumes are static (``Retain``): after a test namespace is deleted its volumes
are Released, and :meth:`LocalBackend.release_volumes` wipes them and offers them again, as
sig-storage's static provisioner does.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from e2e.kube import Kube

from .base import REPO_ROOT, Backend, BackendUnavailable

SCRIPTS = REPO_ROOT / "e2e" / "local"
CLONE_NEWNET = 0x40000000
PV_LABEL = "odradek.dev/local-pv=true"


def stack_env() -> dict[str, str]:
    """The stack's coordinates, from the scripts that define them (``e2e/local/env.sh``)."""
    out = subprocess.run(["bash", str(SCRIPTS / "env.sh")], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _same_netns(path: str) -> bool:
    return os.stat("/proc/self/ns/net").st_ino == os.stat(path).st_ino


def _join_netns(path: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise BackendUnavailable(f"cannot join netns {path}: {os.strerror(err)}")
    finally:
        os.close(fd)


class LocalBackend(Backend):
    name = "local"

    def __init__(self) -> None:
        self.env: dict[str, str] = {}

    def connect(self) -> Path:
        try:
            self.env = stack_env()
        except (OSError, subprocess.SubprocessError) as exc:
            raise BackendUnavailable(f"cannot read the local stack's settings: {exc}") from None
        if self.env.get("UNRUNNABLE_REASON"):
            raise BackendUnavailable(self.env["UNRUNNABLE_REASON"])
        self.storage_class = self.env["STORAGE_CLASS"]
        netns = self.env["NETNS_PATH"]
        pidfile = Path(self.env["APISERVER_PIDFILE"])
        if not os.path.exists(netns) or not pidfile.exists() or \
                not Path(f"/proc/{pidfile.read_text().strip()}").exists():
            raise BackendUnavailable("the local Kubernetes stack is not running "
                                     "(make k8s-up, or make e2e-local to run everything)")
        if not _same_netns(netns):
            _join_netns(netns)
        os.environ["DOCKER_HOST"] = self.env["DOCKER_HOST"]
        self.kubeconfig = Path(self.env["KUBECONFIG"])
        return self.kubeconfig

    def load_images(self, images: Sequence[str]) -> None:
        subprocess.run(["bash", str(SCRIPTS / "load-image.sh"), *images], check=True,
                       timeout=900)

    def release_volumes(self, kube: Kube) -> None:
        for pv in kube.core.list_persistent_volume(label_selector=PV_LABEL).items:
            if pv.status.phase != "Released" or pv.spec.local is None:
                continue
            path = Path(pv.spec.local.path)
            for child in path.iterdir() if path.is_dir() else ():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
            kube.core.patch_persistent_volume(pv.metadata.name, {"spec": {"claimRef": None}})
