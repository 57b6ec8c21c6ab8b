"""Jars from Maven Central for reference peers: one ``mvn dependency:copy-dependencies`` per
(pom, version), cached under ``.cache/`` and shared by tests and benchmarks.

The download goes to a staging directory and is renamed into place with a ``.complete``
marker, under a file lock, so parallel pytest workers or a benchmark running beside the tests
fetch it once and never see half a directory.
"""

from __future__ import annotations

import fcntl
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

COMPLETE_MARKER = ".complete"
FETCH_TIMEOUT_S = 600.0

__all__ = ["COMPLETE_MARKER", "copy_dependencies", "maven_unavailable"]


def maven_unavailable() -> str | None:
    """None if ``java`` and ``mvn`` are on PATH, else what is missing."""
    if shutil.which("java") is None:
        return "java is not installed (apt-get install openjdk-17-jre-headless)"
    if shutil.which("mvn") is None:
        return "Maven (mvn) is not installed; it fetches jars from Maven Central"
    return None


def copy_dependencies(pom: Path, libs: Path, *, properties: Mapping[str, str],
                      expect: str, timeout: float = FETCH_TIMEOUT_S) -> str | None:
    """Fill ``libs`` with the runtime dependencies of ``pom`` (``-Dkey=value`` for each of
    ``properties``) unless it is already complete. Returns None on success, else the reason
    (Maven's first error line). ``expect`` is a glob that must match a jar."""
    if (libs / COMPLETE_MARKER).exists():
        return None
    reason = maven_unavailable()
    if reason:
        return reason
    target = libs.parent
    target.mkdir(parents=True, exist_ok=True)
    with (target / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (libs / COMPLETE_MARKER).exists():
            return None
        staging = target / f"{libs.name}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        cmd = [
            "mvn", "-q", "-B", "-f", str(pom),
            *(f"-D{key}={value}" for key, value in properties.items()),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staging}",
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  check=False)
        except subprocess.TimeoutExpired:
            return f"mvn dependency:copy-dependencies took over {timeout:.0f}s"
        if proc.returncode != 0:
            lines = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr).splitlines()
            errors = [line for line in lines if line.startswith("[ERROR]")]
            detail = errors[0] if errors else " | ".join(lines[-3:])
            return f"mvn could not fetch {pom.parent.name}: {detail}"
        if not any(staging.glob(expect)):
            return f"mvn finished but {staging} holds no {expect}"
        (staging / COMPLETE_MARKER).write_text(" ".join(properties.values()) + "\n")
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
    return None
