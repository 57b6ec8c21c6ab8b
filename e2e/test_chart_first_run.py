"""A first run of the chart as its README tells it, and its removal with what the NOTES tell a
user to add by hand:

* the README's ``helm install`` line, parsed out of README.md and run exactly as printed (no
  image values: the images the project built carry the chart's appVersion), brings the
  brokers to Ready;
* Topics and ConsumerGroups made with ``kubectl apply -f examples/...`` survive ``helm
  uninstall`` without the operator's finalizer, so deleting them and their namespace
  afterwards completes within a bound instead of hanging in Terminating.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from e2e.conftest import Images, _collect_diagnostics
from e2e.helm import REPO_ROOT, Helm, chart_app_version, option, readme_helm_install
from e2e.kube import Kube, conditions, wait_for
from e2e.platform import Platform, platform_values

pytestmark = pytest.mark.e2e

FINALIZER = "odradek.dev/finalizer"
DELETE_BOUND_S = 120  # a Terminating object with a finalizer nobody runs would never go


@pytest.fixture()
def readme_release(request: pytest.FixtureRequest, backend, kube: Kube, helm: Helm,
                   images: Images) -> Iterator[tuple[list[str], str]]:
    """The README's release and namespace; removed afterwards whatever happened."""
    tag = chart_app_version()
    if not all(image.endswith(f":{tag}") for image in (images.broker, images.operator)):
        pytest.skip(f"the README's install deploys odradek/*:{tag} (the chart's appVersion); "
                    f"this run loaded {images.broker}, {images.operator}")
    argv = readme_helm_install()
    release, namespace = argv[2], option(argv, "-n", "--namespace")
    if release in helm.releases(namespace):  # left by an earlier run that was killed
        helm.uninstall(release, namespace)
    kube.delete_namespace(namespace, timeout=300)
    try:
        yield argv, namespace
    finally:
        _collect_diagnostics(request, kube, namespace)
        if release in helm.releases(namespace):
            helm.uninstall(release, namespace)
        kube.delete_namespace(namespace, timeout=300)
        backend.release_volumes(kube)


@pytest.mark.timeout(1500)
def test_the_readme_helm_install_runs_verbatim_and_the_brokers_become_ready(
        kube: Kube, helm: Helm, readme_release: tuple[list[str], str], backend) -> None:
    argv, namespace = readme_release
    started = time.monotonic()
    helm.run(*argv[1:])  # exactly as printed: no --wait, no image values

    def clusters() -> list[dict[str, Any]] | None:
        listed = kube.custom.list_namespaced_custom_object(
            "odradek.dev", "v1beta1", namespace, "brokerclusters")
        assert isinstance(listed, dict)
        return list(listed.get("items") or []) or None

    (cluster,) = wait_for("the README's BrokerCluster to exist", clusters, 120)
    name = cluster["metadata"]["name"]
    ready = kube.wait_condition(namespace, "brokerclusters", name, "Ready", timeout=900)
    replicas = cluster["spec"]["replicas"]
    assert ready["status"]["readyReplicas"] == replicas
    print(f"README install: {replicas} brokers of {name} Ready after "
          f"{time.monotonic() - started:.0f}s")

    if backend.name == "local":
        # The chart README's way for a process in the stack's netns: e2e/local/shell.sh gives
        # it the cluster's DNS, so the bootstrap name and the advertised broker names resolve.
        bootstrap = f"{name}-bootstrap.{namespace}.svc:9092"
        result = subprocess.run(
            ["bash", str(REPO_ROOT / "e2e/local/shell.sh"), sys.executable, "-m", "odradek",
             "topics", "--bootstrap-server", bootstrap, "list"],
            capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, \
            f"a client in the netns could not use {bootstrap}:\n{result.stderr[-2000:]}"


@pytest.mark.timeout(1800)
def test_kubectl_applied_topics_and_groups_do_not_block_deletion_after_uninstall(
        kube: Kube, kubectl: Callable[..., str], images: Images, namespace: str,
        platform: Platform, backend) -> None:
    platform.install(platform_values(images, backend.storage_class))
    # What NOTES.txt and examples/ tell a user to do.
    kubectl("apply", "-n", namespace, "-f", str(REPO_ROOT / "examples" / "topic.yaml"),
            "-f", str(REPO_ROOT / "examples" / "consumergroup.yaml"))
    kube.wait_resource(namespace, "topics", "page-views", "to be Ready",
                       lambda t: conditions(t).get("Ready", {}).get("status") == "True", 300)
    for plural, name in (("topics", "page-views"), ("consumergroups", "page-view-counter")):
        kube.wait_resource(namespace, plural, name, "to carry the operator's finalizer",
                           lambda o: FINALIZER in (o["metadata"].get("finalizers") or []), 120)

    started = time.monotonic()
    platform.uninstall()
    print(f"helm uninstall --wait: {time.monotonic() - started:.0f}s")
    for plural, name in (("topics", "page-views"), ("consumergroups", "page-view-counter")):
        obj = kube.resource(namespace, plural, name)
        assert obj is not None, f"helm uninstall deleted {plural}/{name}, which it does not own"
        assert FINALIZER not in (obj["metadata"].get("finalizers") or []), \
            f"{plural}/{name} still carries {FINALIZER} with no operator to run it"

    started = time.monotonic()
    kubectl("delete", "-n", namespace, "topic", "page-views", f"--timeout={DELETE_BOUND_S}s")
    kubectl("delete", "namespace", namespace, f"--timeout={DELETE_BOUND_S * 3}s")
    kube.delete_namespace(namespace, timeout=DELETE_BOUND_S)
    print(f"kubectl delete topic + namespace: {time.monotonic() - started:.0f}s")
