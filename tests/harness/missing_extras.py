"""A fresh interpreter in which some installed libraries import as if they were not: how a
test sees what a plain ``pip install odradek`` (no extras) would, inside the dev environment
where every extra is installed."""

from __future__ import annotations

import sys
from collections.abc import Iterable

MONITORING_LIBRARIES = ("grafana_foundation_sdk", "matplotlib", "yaml")
"""What the ``odradek[monitoring]`` extra brings (as import names)."""

_BLOCKER = """
import importlib.abc, sys

class _Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Missing())
"""


def python_without(libraries: Iterable[str], code: str, *args: str) -> list[str]:
    """The command line running ``code`` (with ``args`` in ``sys.argv[1:]``) in a Python
    where importing any of ``libraries`` (top-level names) raises ModuleNotFoundError."""
    return [sys.executable, "-c", _BLOCKER.format(blocked=frozenset(libraries)) + code, *args]
