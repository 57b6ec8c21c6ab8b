"""A requeue is not an error: kopf's "failed temporarily" lines drop to INFO once the
operator has configured itself (``configure`` calls ``quiet_requeues``); timeouts and
exhausted retries stay errors."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator

import pytest
from kopf._core.actions import execution
from odradek_operator import runtime


@pytest.fixture
def configured() -> Iterator[logging.Logger]:
    kopf_objects = logging.getLogger("kopf.objects")
    before = list(kopf_objects.filters)
    runtime.quiet_requeues()
    runtime.quiet_requeues()  # a second operator start adds nothing
    yield kopf_objects
    kopf_objects.filters[:] = before


def test_kopf_still_words_a_temporary_failure_the_way_the_filter_matches() -> None:
    source = inspect.getsource(execution)
    assert 'f"{handler} failed temporarily: {str(e) or repr(e)}"' in source


def test_a_requeue_is_logged_at_info_and_a_timeout_stays_an_error(
        configured: logging.Logger, caplog: pytest.LogCaptureFixture) -> None:
    assert sum(isinstance(f, runtime.RetryIsNotAnError) for f in configured.filters) == 1
    with caplog.at_level(logging.DEBUG, logger="kopf.objects"):
        configured.error("Handler 'reconcile' failed temporarily: rolling broker 2 of 3")
        configured.error("Handler 'reconcile' failed temporarily but will time out after "
                         "60 seconds: rolling broker 2 of 3")
    levels = [(r.levelname, r.getMessage()[:40]) for r in caplog.records]
    assert levels == [("INFO", "Handler 'reconcile' failed temporarily: "),
                      ("ERROR", "Handler 'reconcile' failed temporarily b")]
