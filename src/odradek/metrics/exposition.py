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

__all__ = ["CONTENT_TYPE", "MetricsHTTPServer", "render"]

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


def render(metrics: Iterable[Metric]) -> bytes:
    """The exposition text of ``metrics`` (families with no sample are still described)."""
    escaped: dict[str, str] = {}
    lines: list[str] = []
    append = lines.append
    for metric in metrics:
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
