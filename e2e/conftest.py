"""Fixtures of the end-to-end suite: one suite, any backend (see e2e/backends).

- ``backend``: the cluster (``ODRADEK_E2E_BACKEND=local|kind``); unusable → every test skips
  with the backend's one-line reason.
- ``kube``: API clients bound to the backend's kubeconfig.
- ``images``: the project's images (``BROKER_IMAGE``, ``ZOOKEEPER_IMAGE``, ``OPERATOR_IMAGE``;
  defaults ``odradek/<name>:dev``), loaded into the cluster once per session by the backend.
- ``namespace``: a fresh namespace per test, deleted afterwards (its volumes released for the
  next test); when the test failed, pods, events and every container log (current and previous)
  are written to ``$ODRADEK_E2E_ARTIFACTS/<test>/`` (default ``build/e2e-artifacts``) and the
  pod summary is attached to the report.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from e2e.backends import Backend, BackendUnavailable, select_backend
from e2e.kube import Kube

REPO_ROOT = Path(__file__).resolve().parents[1]
NAMESPACE_LABEL = "odradek.dev/e2e"


@dataclass(frozen=True)
class Images:
    broker: str
    zookeeper: str
    operator: str


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def backend() -> Backend:
    try:
        chosen = select_backend()
        chosen.connect()
    except BackendUnavailable as exc:
        pytest.skip(f"e2e backend unavailable: {exc}")
    return chosen


@pytest.fixture(scope="session")
def kube(backend: Backend) -> Kube:
    assert backend.kubeconfig is not None
    return Kube.from_kubeconfig(backend.kubeconfig)


@pytest.fixture(scope="session")
def images(backend: Backend) -> Images:
    tag = os.environ.get("IMAGE_TAG", "dev")
    chosen = Images(
        broker=os.environ.get("BROKER_IMAGE", f"odradek/broker:{tag}"),
        zookeeper=os.environ.get("ZOOKEEPER_IMAGE", f"odradek/zookeeper:{tag}"),
        operator=os.environ.get("OPERATOR_IMAGE", f"odradek/operator:{tag}"),
    )
    wanted = [chosen.broker, chosen.zookeeper]
    if os.environ.get("ODRADEK_E2E_LOAD_OPERATOR", "0") == "1":
        wanted.append(chosen.operator)
    backend.load_images(wanted)
    return chosen


@pytest.fixture()
def namespace(request: pytest.FixtureRequest, backend: Backend, kube: Kube) -> Iterator[str]:
    short = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"e2e-{short}-{secrets.token_hex(2)}"
    kube.create_namespace(name, {NAMESPACE_LABEL: "true"})
    try:
        yield name
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            default = REPO_ROOT / "build" / "e2e-artifacts"
            root = Path(os.environ.get("ODRADEK_E2E_ARTIFACTS", default))
            written = kube.collect_diagnostics(name, root / name)
            report.sections.append((f"e2e diagnostics ({root / name})",
                                    (root / name / "summary.txt").read_text()
                                    + f"\n{len(written)} file(s) written"))
        if os.environ.get("ODRADEK_E2E_KEEP_NAMESPACES") != "1":
            kube.delete_namespace(name, timeout=180)
            backend.release_volumes(kube)
