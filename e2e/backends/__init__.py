"""Where the end-to-end suite runs: one interface, one module per kind of cluster.

``ODRADEK_E2E_BACKEND`` picks it: ``local`` (the default; the Kubernetes stack of
``e2e/local/`` in its own network namespace, ``make e2e-local``) or ``kind`` (``make e2e``).
"""

from __future__ import annotations

import os

from .base import Backend, BackendUnavailable

__all__ = ["Backend", "BackendUnavailable", "select_backend"]


def select_backend(name: str | None = None) -> Backend:
    name = name or os.environ.get("ODRADEK_E2E_BACKEND", "local")
    if name == "local":
        from .local import LocalBackend

        return LocalBackend()
    if name == "kind":
        from .kind import KindBackend

        return KindBackend()
    raise BackendUnavailable(f"unknown e2e backend {name!r} (ODRADEK_E2E_BACKEND: local or kind)")
