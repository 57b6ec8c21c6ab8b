"""Long-run suites (soak, chaos): the live progress line, shown even while pytest captures."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture
def progress(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Print a line to the terminal at once (a 30-minute test must show it is alive)."""
    capture = request.config.pluginmanager.getplugin("capturemanager")

    def emit(line: str) -> None:
        if capture is None:
            print(line, flush=True)
            return
        with capture.global_and_fixture_disabled():
            print(line, flush=True)

    return emit
