"""One tag for the images and the chart: what ``make image``, ``make image-local`` and
``make k8s-load`` build and load is what ``helm install ... charts/odradek`` deploys when no
image tag is set (the chart's appVersion), so the README's install command runs on the
images the project just built instead of waiting in ImagePullBackOff.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
APP_VERSION = str(yaml.safe_load((REPO / "charts/odradek/Chart.yaml").read_text())["appVersion"])
IMAGES = [f"odradek/{name}:{APP_VERSION}" for name in ("broker", "zookeeper", "operator")]


def _env_without_image_overrides() -> dict[str, str]:
    names = ("IMAGE_TAG", "BROKER_IMAGE", "ZOOKEEPER_IMAGE", "OPERATOR_IMAGE", "LOAD_IMAGES")
    return {k: v for k, v in os.environ.items() if k not in names and not k.startswith("MAKE")}


def _dry_run(target: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    result = subprocess.run(["make", "-n", "-s", "--no-print-directory", target], cwd=REPO,
                            capture_output=True, text=True, timeout=60,
                            env=_env_without_image_overrides())
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_make_image_builds_the_tag_the_chart_deploys():
    out = _dry_run("image")
    for image in IMAGES:
        assert f"-t {image} " in out, f"make image does not build {image}:\n{out}"


def test_make_k8s_load_loads_all_three_images_with_the_chart_tag():
    out = _dry_run("k8s-load")
    assert out.split()[1:] == IMAGES, f"make k8s-load loads {out.split()[1:]}, not {IMAGES}"


def test_the_local_stack_scripts_tag_images_with_the_chart_app_version():
    """images.sh (``make image-local``) names its images after lib.sh's IMAGE_TAG."""
    result = subprocess.run(["bash", "-c", 'source e2e/local/lib.sh && echo "$IMAGE_TAG"'],
                            cwd=REPO, capture_output=True, text=True, timeout=30,
                            env=_env_without_image_overrides())
    assert result.stdout.strip() == APP_VERSION, result.stderr


def test_the_e2e_suite_defaults_to_the_chart_app_version():
    from e2e.helm import chart_app_version

    assert chart_app_version() == APP_VERSION


def test_the_readme_install_is_a_cluster_install_with_no_image_values():
    """The command e2e/test_chart_first_run.py runs verbatim: it relies on the image tag
    defaulting to the chart's appVersion, so it must not set one."""
    from e2e.helm import option, readme_helm_install

    argv = readme_helm_install()
    assert argv[:2] == ["helm", "install"] and argv[3] == "charts/odradek", argv
    assert "cluster.enabled=true" in argv and option(argv, "-n", "--namespace")
    assert not any("image" in arg for arg in argv), argv


def test_k8s_up_builds_only_what_the_local_stack_runs():
    out = _dry_run("k8s-up")
    builds = [line for line in out.splitlines() if "build.sh" in line]
    assert builds == ["e2e/local/build.sh etcd kube coredns helm"], out


def test_every_default_image_in_the_tree_carries_the_chart_app_version():
    """The operator's defaults, the CRDs' schema defaults and the examples name the images by
    the same tag (a BrokerCluster applied from examples/ must not wait for an image that no
    build makes)."""
    import re

    wrong = []
    for folder in ("crds", "charts/odradek/crds", "examples", "operator/src"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix not in (".yaml", ".py") or not path.is_file():
                continue
            for tag in re.findall(r"odradek/(?:broker|zookeeper|operator):([\w.-]+)",
                                  path.read_text()):
                if tag != APP_VERSION:
                    wrong.append(f"{path.relative_to(REPO)}: {tag}")
    assert not wrong, f"image tags other than the chart's appVersion {APP_VERSION}: {wrong}"
