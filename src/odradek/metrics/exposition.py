"""Prometheus text format (0.0.4) for a registry, and the HTTP server that serves it.

prometheus-client's ``generate_latest`` validates and escapes every label name of every
sample: two thirds of a scrape of 1,000 partitions went there. Our label names are fixed in
the catalog (validated once by :class:`~odradek.metrics.catalog_types.MetricSpec`), so this
writer only escapes label *values* (group and client names are user input), memoising them.
The output is checked against prometheus-client's parser in the tests and scraped by a real
Prometheus server.

The server is a ``ThreadingHTTPServer`` in a daemon thread: a scrape never runs on the
broker's event loop (the one hop onto the loop for state is :mod:`odradek.metrics.state`'s).
It always answers in the text format, which every Prometheus accepts, gzip-compressed when
the scraper asks for it (a 1,000-partition scrape is about a megabyte of text).
"""

from __future__ import annotations

import gzip
import logging
import math
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client.core import Metric
from prometheus_client.samples import Sample

from .catalog_types import MetricSpec

__all__ = ["CONTENT_TYPE", "GaugeRows", "MetricsHTTPServer", "render"]

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_ESCAPES = str.maketrans({"\\": r"\\", '"': r"\"", "\n": r"\n"})
_HELP_ESCAPES = str.maketrans({"\\": r"\\", "\n": r"\n"})


def _value(value: float) -> str:
    if value == math.inf:
        return "+Inf"
    if value == -math.inf:
        return "-Inf"
    if value != value:
        return "NaN"
    return repr(float(value))


class GaugeRows:
    """A gauge family filled at scrape time, kept as rows of label values (thousands of
    partitions): no per-sample dict or Sample object unless something asks for ``samples``
    (prometheus-client's registry API, in tests)."""

    type = "gauge"

    def __init__(self, spec: MetricSpec) -> None:
        self.name = spec.name
        self.documentation = spec.help
        self.label_names = spec.labels
        self.rows: list[tuple[tuple[str, ...], float]] = []
        # a str.format template: "name{{topic=\"{}\",partition=\"{}\"}} {}"
        labels = ",".join(f'{label}="{{}}"' for label in spec.labels)
        self._line = self.name + ("{{" + labels + "}}" if labels else "") + " {}"

    def add(self, values: tuple[str, ...], value: float) -> None:
        self.rows.append((values, value))

    @property
    def samples(self) -> list[Sample]:
        return [Sample(self.name, dict(zip(self.label_names, values, strict=True)), value)
                for values, value in self.rows]

    def lines(self, escaped: dict[str, str]) -> Iterable[str]:
        line = self._line
        for values, value in self.rows:
            shown = []
            for raw in values:
                text = escaped.get(raw)
                if text is None:
                    text = escaped[raw] = raw.translate(_ESCAPES)
                shown.append(text)
            yield line.format(*shown, _value(value))


def render(metrics: Iterable[Metric | GaugeRows]) -> bytes:
    """The exposition text of ``metrics`` (families with no sample are still described)."""
    escaped: dict[str, str] = {}
    lines: list[str] = []
    append = lines.append
    for metric in metrics:
        if isinstance(metric, GaugeRows):
            append(f"# HELP {metric.name} {metric.documentation.translate(_HELP_ESCAPES)}")
            append(f"# TYPE {metric.name} gauge")
            lines.extend(metric.lines(escaped))
            continue
        name = metric.name + "_total" if metric.type == "counter" else metric.name
        append(f"# HELP {name} {metric.documentation.translate(_HELP_ESCAPES)}")
        append(f"# TYPE {name} {metric.type}")
        for sample in metric.samples:
            if sample.name.endswith("_created"):
                continue
            labels = sample.labels
            if labels:
                parts = []
                for key, raw in labels.items():
                    value = escaped.get(raw)
                    if value is None:
                        value = escaped[raw] = raw.translate(_ESCAPES)
                    parts.append(f'{key}="{value}"')
                append(f"{sample.name}{{{','.join(parts)}}} {_value(sample.value)}")
            else:
                append(f"{sample.name} {_value(sample.value)}")
    lines.append("")
    return "\n".join(lines).encode()


class MetricsHTTPServer:
    """``GET /metrics`` (and ``/``) answered from ``body()`` in a daemon thread."""

    def __init__(self, body: Callable[[], bytes], host: str, port: int) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] not in ("/metrics", "/"):
                    self.send_error(404, "metrics are at /metrics")
                    return
                try:
                    payload = body()
                except Exception:
                    log.exception("metrics: building the exposition failed")
                    self.send_error(500, "collecting metrics failed")
                    return
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                if "gzip" in self.headers.get("Accept-Encoding", ""):
                    payload = gzip.compress(payload, compresslevel=1)
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                return  # one line per scrape would drown the broker's log

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name=f"metrics-http:{self.port}", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def close(self) -> None:
        """Stop serving and free the port (blocks up to serve_forever's 0.5 s poll)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)
