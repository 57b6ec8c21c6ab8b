"""What a test needs from a cluster, whatever runs it."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from pathlib import Path

from e2e.kube import Kube

REPO_ROOT = Path(__file__).resolve().parents[2]


class BackendUnavailable(Exception):
    """The cluster cannot be used here; the message is the one-line skip reason."""


class Backend(abc.ABC):
    name: str
    #: StorageClass for the tests' PersistentVolumeClaims (None: the cluster's default).
    storage_class: str | None = None
    #: Set by :meth:`connect`.
    kubeconfig: Path | None = None

    @abc.abstractmethod
    def connect(self) -> Path:
        """Check the cluster is reachable from this process; set and return its kubeconfig.

        Raises :class:`BackendUnavailable` with a one-line reason otherwise.
        """

    @abc.abstractmethod
    def load_images(self, images: Sequence[str]) -> None:
        """Make locally built images runnable by the cluster's nodes without a registry."""

    def release_volumes(self, kube: Kube) -> None:  # noqa: B027 - optional hook
        """Make volumes of deleted claims usable again (static provisioning needs this)."""
