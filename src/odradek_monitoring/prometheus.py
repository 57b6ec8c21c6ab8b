"""A real Prometheus server on loopback, for the dev cluster, the tests and ``make dashboards``.

It runs Debian's ``prometheus`` binary (``make prometheus`` installs it when missing) with a
generated configuration: each scrape target carries the labels the dashboards and alerts
select on (``namespace``, ``cluster``, ``broker``: in Kubernetes the ServiceMonitor adds
them by relabelling, see ``docs/observability.md``), and the alert rules files to evaluate.
The HTTP API helpers (``query``, ``query_range``, ``alerts``) are what tests and the panel
renderer use.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odradek.local_cluster import ManagedProcess, free_port

__all__ = [
    "LocalPrometheus",
    "PrometheusAPI",
    "PrometheusError",
    "ScrapeTarget",
    "prometheus_config",
]

log = logging.getLogger(__name__)

TARGET_LABELS = ("namespace", "cluster", "broker")
"""Labels every odradek scrape target must carry: the dashboards' variables."""


class PrometheusError(RuntimeError):
    """Prometheus is missing, did not start, or answered a query with an error."""


@dataclass(frozen=True)
class ScrapeTarget:
    address: str  # host:port of a /metrics endpoint
    labels: Mapping[str, str] = field(default_factory=dict)


def prometheus_config(targets: Sequence[ScrapeTarget], *, rule_files: Sequence[Path] = (),
                      scrape_interval: str = "1s", evaluation_interval: str = "1s",
                      job: str = "odradek") -> dict[str, Any]:
    """``prometheus.yml`` as a dict (JSON is valid YAML, so it is written as JSON)."""
    return {
        "global": {"scrape_interval": scrape_interval, "scrape_timeout": scrape_interval,
                   "evaluation_interval": evaluation_interval},
        "rule_files": [str(path) for path in rule_files],
        "scrape_configs": [{
            "job_name": job,
            "static_configs": [{"targets": [target.address], "labels": dict(target.labels)}
                               for target in targets],
        }],
    }


class PrometheusAPI:
    """The HTTP API of any Prometheus server (``url`` like ``http://127.0.0.1:9090``)."""

    def __init__(self, url: str) -> None:
        self._url = url.rstrip("/")

    @property
    def url(self) -> str:
        return self._url

    def api(self, path: str, **params: str | float) -> Any:
        """GET ``/api/v1/<path>``; returns ``data`` or raises with Prometheus's own error."""
        query = urllib.parse.urlencode({k: str(v) for k, v in params.items()})
        url = f"{self.url}/api/v1/{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as error:
            body = json.loads(error.read() or b"{}")
        if body.get("status") != "success":
            raise PrometheusError(f"{path} {params}: {body.get('errorType')}: "
                                  f"{body.get('error')}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query's vector (or a scalar as one unlabelled sample)."""
        params: dict[str, str | float] = {"query": expr}
        if at is not None:
            params["time"] = at
        data = self.api("query", **params)
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return list(data["result"])

    def query_range(self, expr: str, start: float, end: float,
                    step: float) -> list[dict[str, Any]]:
        data = self.api("query_range", query=expr, start=start, end=end, step=step)
        return list(data["result"])

    def value(self, expr: str) -> float | None:
        """The single value of an instant query (None if it returns nothing)."""
        result = self.query(expr)
        if not result:
            return None
        if len(result) > 1:
            raise PrometheusError(f"{expr!r} returned {len(result)} series, expected one")
        return float(result[0]["value"][1])

    def alerts(self) -> list[dict[str, Any]]:
        return list(self.api("alerts")["alerts"])

    def active_targets(self) -> list[dict[str, Any]]:
        return list(self.api("targets")["activeTargets"])

    def wait_for(self, what: str, condition: Callable[[], bool], timeout: float = 30.0,
                 interval: float = 0.5) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise PrometheusError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(interval)


class LocalPrometheus(PrometheusAPI):
    """``with LocalPrometheus(dir, targets) as prom: prom.query("up")``."""

    def __init__(self, data_dir: Path, targets: Sequence[ScrapeTarget], *,
                 rule_files: Sequence[Path] = (), scrape_interval: str = "1s",
                 evaluation_interval: str = "1s", binary: str | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.targets = list(targets)
        self.rule_files = list(rule_files)
        self.scrape_interval = scrape_interval
        self.evaluation_interval = evaluation_interval
        found = binary or shutil.which("prometheus")
        if found is None:
            raise PrometheusError("no prometheus binary: run `make prometheus` "
                                  "(installs Debian's prometheus package)")
        self.binary = found
        super().__init__("")
        self.port = 0
        self.process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> LocalPrometheus:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self.data_dir / "prometheus.yml"
        config.write_text(json.dumps(prometheus_config(
            self.targets, rule_files=self.rule_files, scrape_interval=self.scrape_interval,
            evaluation_interval=self.evaluation_interval), indent=2))
        self.port = free_port()
        self.process = ManagedProcess(
            "prometheus",
            [self.binary, f"--config.file={config}",
             f"--storage.tsdb.path={self.data_dir / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            self.data_dir / "prometheus.log")
        self.process.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.process.running:
                raise PrometheusError(f"prometheus exited early:\n{self.process.log_tail(20)}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return self
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        self.stop()
        raise PrometheusError(f"prometheus was not ready within {timeout:.0f}s")

    def stop(self) -> None:
        """SIGTERM by PID (SIGKILL after 15 s)."""
        if self.process is not None:
            self.process.stop(15)

    def __enter__(self) -> LocalPrometheus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
