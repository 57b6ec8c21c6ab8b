"""Running ``odradek cluster`` (the dev cluster of ``make run``) as a test's subprocess:
ports for it, and reading its output as it appears."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from odradek.local_cluster import free_port, port_open


def consecutive_free_ports(count: int) -> int:
    """A free port whose ``count - 1`` successors are free too (broker i uses base + i)."""
    while True:
        port = free_port()
        if port + count <= 65536 and not any(
                port_open("127.0.0.1", port + i) for i in range(1, count)):
            return port


def read_until(process: subprocess.Popen[bytes], output: Path, pattern: str,
               timeout: float) -> re.Match[str]:
    """The first match of ``pattern`` in the output file (the CLI's stdout and stderr),
    waiting for it to appear; fails with the output when the process exits first."""
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = output.read_text(errors="replace")
        found = re.search(pattern, seen)
        if found:
            return found
        if process.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError(f"no {pattern!r} in the output:\n{seen[-3000:]}")
