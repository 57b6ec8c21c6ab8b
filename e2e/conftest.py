"""Fixtures of the end-to-end suite: one suite, any backend (see e2e/backends).

- ``backend``: the cluster (``ODRADEK_E2E_BACKEND=local|kind``); unusable → every test skips
  with the backend's one-line reason.
- ``kube``: API clients bound to the backend's kubeconfig.
- ``images``: the project's images (``BROKER_IMAGE``, ``ZOOKEEPER_IMAGE``, ``OPERATOR_IMAGE``;
  defaults ``odradek/<name>:<IMAGE_TAG>``, the tag defaulting to the chart's appVersion as in
  the Makefile), loaded into the cluster once per session by the backend.
- ``namespace``: a fresh namespace per test, deleted afterwards (its volumes released for the
  next test); when the test failed, pods, events and every container log (current and previous)
  are written to ``$ODRADEK_E2E_ARTIFACTS/<test>/`` (default ``build/e2e-artifacts``) and the
  pod summary is attached to the report.
- ``platform``: the Helm chart installed into that namespace (:mod:`e2e.platform`; the test
  calls ``platform.install(values)``), uninstalled afterwards — after the diagnostics, so the
  operator's log is among them.
- ``kubectl``: runs kubectl against the backend (the ``kubectl apply -f examples/...`` steps).
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from e2e.backends import Backend, BackendUnavailable, select_backend
from e2e.helm import Helm, chart_app_version, find_tool
from e2e.kube import Kube
from e2e.platform import Platform

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
    tag = os.environ.get("IMAGE_TAG") or chart_app_version()
    chosen = Images(
        broker=os.environ.get("BROKER_IMAGE", f"odradek/broker:{tag}"),
        zookeeper=os.environ.get("ZOOKEEPER_IMAGE", f"odradek/zookeeper:{tag}"),
        operator=os.environ.get("OPERATOR_IMAGE", f"odradek/operator:{tag}"),
    )
    wanted = [chosen.broker, chosen.zookeeper]
    if os.environ.get("ODRADEK_E2E_LOAD_OPERATOR", "1") == "1":
        wanted.append(chosen.operator)
    backend.load_images(wanted)
    return chosen


def _collect_diagnostics(request: pytest.FixtureRequest, kube: Kube, namespace: str) -> None:
    """Once per test, and only when it failed: the namespace's pods, events and logs."""
    report = getattr(request.node, "rep_call", None)
    if report is None or not report.failed or getattr(request.node, "_e2e_collected", False):
        return
    request.node._e2e_collected = True
    default = REPO_ROOT / "build" / "e2e-artifacts"
    root = Path(os.environ.get("ODRADEK_E2E_ARTIFACTS", default))
    written = kube.collect_diagnostics(namespace, root / namespace)
    report.sections.append((f"e2e diagnostics ({root / namespace})",
                            (root / namespace / "summary.txt").read_text()
                            + f"\n{len(written)} file(s) written"))


@pytest.fixture()
def namespace(request: pytest.FixtureRequest, backend: Backend, kube: Kube) -> Iterator[str]:
    short = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"e2e-{short}-{secrets.token_hex(2)}"
    kube.create_namespace(name, {NAMESPACE_LABEL: "true"})
    try:
        yield name
    finally:
        _collect_diagnostics(request, kube, name)
        if os.environ.get("ODRADEK_E2E_KEEP_NAMESPACES") != "1":
            kube.delete_namespace(name, timeout=300)
            backend.release_volumes(kube)


@pytest.fixture(scope="session")
def helm(backend: Backend) -> Helm:
    binary = find_tool("helm")
    if binary is None:
        pytest.fail("helm is needed for the chart scenarios: not on PATH nor in the local "
                    "stack's cache (e2e/local/build.sh helm builds it)")
    assert backend.kubeconfig is not None
    return Helm(binary, backend.kubeconfig)


@pytest.fixture(scope="session")
def kubectl(backend: Backend) -> Callable[..., str]:
    binary = find_tool("kubectl")
    if binary is None:
        pytest.fail("kubectl is needed for the `kubectl apply` steps: not on PATH nor in the "
                    "local stack's cache")
    env = {**os.environ, "KUBECONFIG": str(backend.kubeconfig)}

    def run(*args: str) -> str:
        result = subprocess.run([binary, *args], capture_output=True, text=True, timeout=120,
                                env=env)
        assert result.returncode == 0, f"kubectl {' '.join(args)}:\n{result.stderr}"
        return result.stdout

    return run


@pytest.fixture()
def platform(request: pytest.FixtureRequest, kube: Kube, helm: Helm, images: Images,
             namespace: str) -> Iterator[Platform]:
    installed = Platform(kube, helm, namespace, images)
    try:
        yield installed
    finally:
        _collect_diagnostics(request, kube, namespace)
        if os.environ.get("ODRADEK_E2E_KEEP_NAMESPACES") != "1":
            installed.clean_up()
