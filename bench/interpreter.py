"""Which Python runs the brokers under test, and how fast it is.

Every odradek broker the bench starts runs on the bench's own interpreter
(``sys.executable -m odradek broker``), so that interpreter is part of every odradek number.
It matters: profiled on the 2-core test machine, Debian's ``/usr/bin/python3.11`` (built with
profile-guided optimization and LTO, as the broker image's is) spends 14-23% less CPU per
request than a plain ``./configure && make`` build such as pyenv's default. A number taken on
one is not comparable with one taken on the other, so each row records the interpreter.

Build flags do not tell a PGO build apart reliably (Debian configures without
``--enable-optimizations`` and adds PGO and LTO in its own build rules), so the record also
holds a calibration: the best of five timings of a fixed pure-Python loop (dict and string
work, the broker's kind). Compare ``calibration_ms`` between runs to see whether a change in
the numbers is the interpreter's.
"""

from __future__ import annotations

import platform
import sys
import sysconfig
import time
from functools import cache
from typing import Any

__all__ = ["describe", "summary_line"]

_FLAGS = ("--enable-optimizations", "--with-lto")


def _calibration_loop() -> int:
    table: dict[int, tuple[int, str]] = {}
    total = 0
    for i in range(200_000):
        table[i & 1023] = (i, str(i & 255))
        total += len(table[i & 1023][1])
    return total


def calibrate(repeats: int = 5) -> float:
    """Milliseconds for the fixed loop, best of ``repeats`` (lower is faster)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        _calibration_loop()
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 1)


@cache
def describe() -> dict[str, Any]:
    """The running interpreter, as recorded in every bench row (computed once per run)."""
    config_args = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    return {
        "implementation": platform.python_implementation(),
        "version": platform.python_version(),
        "executable": sys.executable,
        "compiler": platform.python_compiler(),
        "build_flags": [flag for flag in _FLAGS if flag in config_args],
        "calibration_ms": calibrate(),
    }


def summary_line(info: dict[str, Any]) -> str:
    """One line for summary.md and the console: what ran the brokers, and how fast."""
    flags = ", ".join(info["build_flags"]) or "no optimization flags in its configure line"
    return (f"{info['implementation']} {info['version']} at `{info['executable']}` "
            f"({info['compiler']}; {flags}); calibration loop {info['calibration_ms']} ms "
            "(lower is faster)")
