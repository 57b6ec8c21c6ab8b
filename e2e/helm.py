"""The chart as a user installs it: ``helm install --wait`` of ``charts/odradek`` into a test's
namespace, ``helm uninstall --wait`` afterwards, and the values a scenario starts from.

Helm (and kubectl, for the ``kubectl apply -f examples/...`` steps) come from PATH, else from
the local stack's cache (``e2e/local/build.sh helm``). Both run as subprocesses of the test, so
on the local backend they inherit its network namespace and reach the API server as it does.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
CHART = REPO_ROOT / "charts" / "odradek"
CACHE_BIN = Path(os.environ.get("ODRADEK_K8S_CACHE", "/var/cache/odradek-k8s")) / "bin"

__all__ = ["CHART", "Helm", "chart_app_version", "chart_version", "export_tree", "find_tool",
           "image_values", "option", "previous_release", "readme_helm_install"]


def chart_app_version() -> str:
    """The chart's appVersion: the tag of the images ``make image``/``make image-local`` build
    and the one the chart deploys when no tag is set (the default ``IMAGE_TAG``)."""
    return str(yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"])


def chart_version(chart_yaml: str) -> str:
    return str(yaml.safe_load(chart_yaml)["version"])


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True,
                          check=True, timeout=60).stdout


def previous_release() -> tuple[str, str]:
    """The commit and chart version this tree's chart upgrades from: the first of HEAD (a
    version bump not committed yet), the fork point from ``main`` (a branch preparing the next
    release) and then each commit before a change of Chart.yaml on the first-parent history
    (``main`` itself after the merge) whose chart version is not this tree's."""
    current = chart_version((CHART / "Chart.yaml").read_text())
    path = "charts/odradek/Chart.yaml"
    candidates = ["HEAD"]
    with contextlib.suppress(subprocess.CalledProcessError):  # no main branch here
        candidates.append(_git("merge-base", "HEAD", "main").strip())
    candidates += [f"{commit}^" for commit in
                   _git("rev-list", "--first-parent", "HEAD", "--", path).split()]
    for candidate in candidates:
        try:
            version = chart_version(_git("show", f"{candidate}:{path}"))
        except subprocess.CalledProcessError:  # the chart did not exist yet
            continue
        if version != current:
            return _git("rev-parse", candidate).strip(), version
    raise AssertionError(f"no chart version before {current} in the git history")


def export_tree(commit: str, into: Path) -> Path:
    """The repository at ``commit`` (``git archive``), unpacked under ``into``."""
    archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", "--format=tar", commit],
                             capture_output=True, check=True, timeout=120).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True, timeout=120)
    return into


def readme_helm_install() -> list[str]:
    """The one ``helm install`` command of README.md, as argv (comments stripped)."""
    lines = [line for line in (REPO_ROOT / "README.md").read_text().splitlines()
             if line.startswith("helm install ")]
    assert len(lines) == 1, f"README.md should show one `helm install` line, found {lines}"
    return shlex.split(lines[0], comments=True)


def option(argv: list[str], *names: str) -> str:
    """The value of ``names`` (e.g. ``-n``, ``--namespace``) in ``argv``."""
    for i, arg in enumerate(argv):
        if arg in names:
            return argv[i + 1]
        for name in names:
            if arg.startswith(f"{name}="):
                return arg.split("=", 1)[1]
    raise AssertionError(f"the README's helm install has no {names[0]}: {argv}")


def find_tool(name: str) -> str | None:
    """``name`` from PATH, else from the local stack's cache."""
    found = shutil.which(name)
    if found:
        return found
    cached = CACHE_BIN / name
    return str(cached) if cached.is_file() and os.access(cached, os.X_OK) else None


def image_values(image: str, *, pull_policy: bool = True) -> dict[str, str]:
    """``repo/name:tag`` as the chart's {repository, tag, pullPolicy}."""
    repository, _, tag = image.rpartition(":")
    if not repository or "/" in tag:
        repository, tag = image, "latest"
    values = {"repository": repository, "tag": tag}
    if pull_policy:
        values["pullPolicy"] = "IfNotPresent"
    return values


@dataclass
class Helm:
    binary: str
    kubeconfig: Path

    def run(self, *args: str, timeout: float = 600) -> str:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        result = subprocess.run([self.binary, *args], capture_output=True, text=True,
                                timeout=timeout, env=env)
        if result.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result.stdout

    def install(self, release: str, namespace: str, values: Mapping[str, Any], *,
                timeout_s: int = 300, chart: Path = CHART) -> str:
        """``helm install --wait`` with ``values`` (written to a file: no --set escaping)."""
        return self._deploy("install", release, namespace, values, timeout_s, chart)

    def upgrade(self, release: str, namespace: str, values: Mapping[str, Any], *,
                timeout_s: int = 300, chart: Path = CHART) -> str:
        """``helm upgrade --wait`` to ``chart`` with ``values`` (the whole set, not reused)."""
        return self._deploy("upgrade", release, namespace, values, timeout_s, chart)

    def _deploy(self, verb: str, release: str, namespace: str, values: Mapping[str, Any],
                timeout_s: int, chart: Path) -> str:
        with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="odradek-values-") as f:
            json.dump(values, f)
            f.flush()
            return self.run(verb, release, str(chart), "--namespace", namespace,
                            "--values", f.name, "--wait", "--timeout", f"{timeout_s}s",
                            timeout=timeout_s + 60)

    def uninstall(self, release: str, namespace: str, *, timeout_s: int = 420) -> str:
        return self.run("uninstall", release, "--namespace", namespace, "--wait",
                        "--timeout", f"{timeout_s}s", timeout=timeout_s + 60)

    def releases(self, namespace: str) -> Sequence[str]:
        out = self.run("list", "--namespace", namespace, "--short", timeout=60)
        return out.split()
