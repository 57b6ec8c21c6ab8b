"""``pip install odradek`` gives a package that imports: every module of ``odradek`` loads
without the build-time tooling's libraries.

Dashboard generation (grafana-foundation-sdk), panel rendering (matplotlib) and the alert
rules file (PyYAML) are the ``odradek[monitoring]`` extra, in the separate package
``odradek_monitoring``. A runtime module that reached for one of them would break a plain
install only there, never in the dev environment, where every extra is installed: so a fresh
interpreter hides them before walking the package.
"""

from __future__ import annotations

import subprocess

from tests.harness.missing_extras import MONITORING_LIBRARIES, python_without

WALK = """
import importlib, pkgutil, odradek

failed = []
for module in pkgutil.walk_packages(odradek.__path__, "odradek.", onerror=failed.append):
    if module.name == "odradek.__main__":
        continue  # runs the command line
    try:
        importlib.import_module(module.name)
    except Exception as exc:
        failed.append(f"{module.name}: {exc!r}")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_runtime_module_imports_without_the_monitoring_libraries() -> None:
    done = subprocess.run(python_without(MONITORING_LIBRARIES, WALK),
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, (
        "modules of odradek that need the monitoring extra (move them to odradek_monitoring "
        f"or import on use):\n{done.stdout}{done.stderr}")
