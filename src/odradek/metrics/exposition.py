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

__all__ = ["CONTENT_TYPE", "GaugeRows", "LabelText", "MetricsHTTPServer", "render"]

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

    def add(self, values: tuple[str, ...], value: float) -> None:
        self.rows.append((values, value))

    @property
    def samples(self) -> list[Sample]:
        return [Sample(self.name, dict(zip(self.label_names, values, strict=True)), value)
                for values, value in self.rows]

    def lines(self, escaped: dict[str, str], labels: LabelText) -> list[str]:
        """One line per row. The label block (``{topic="t",partition="0"}``) of a row is
        kept in ``labels`` from one scrape to the next: partitions change rarely, so a
        scrape formats only the values (the same label values recur in every partition
        family, and in every scrape)."""
        name, names = self.name, self.label_names
        if not names:
            return [f"{name} {_value(value)}" for _, value in self.rows]
        known = labels.family(name)
        found = known.get
        lines: list[str] = []
        append = lines.append
        for values, value in self.rows:
            block = found(values)
            if block is None:
                block = known[values] = _label_block(names, values, escaped)
            # ints (sizes, offsets, counts) are never inf or NaN: the common case, inlined
            append(f"{name}{block} {float(value)!r}" if value.__class__ is int
                   else f"{name}{block} {_value(value)}")
        labels.retain(name, known, len(self.rows))
        return lines


def _label_block(names: tuple[str, ...], values: tuple[str, ...],
                 escaped: dict[str, str]) -> str:
    parts = []
    for key, raw in zip(names, values, strict=True):
        text = escaped.get(raw)
        if text is None:
            text = escaped[raw] = raw.translate(_ESCAPES)
        parts.append(f'{key}="{text}"')
    return "{" + ",".join(parts) + "}"


class LabelText:
    """Formatted label blocks by family and label values, kept across scrapes.

    Bounded by what is exported: a family's entries are pruned to its current rows when
    they outgrow them (deleted topics, expired groups), so the memory follows the series.
    Scrapes may render concurrently (one thread per request): every entry is a pure
    function of its key, so a lost update only costs a re-format.
    """

    def __init__(self) -> None:
        self._families: dict[str, dict[tuple[str, ...], str]] = {}

    def family(self, name: str) -> dict[tuple[str, ...], str]:
        known = self._families.get(name)
        if known is None:
            known = self._families[name] = {}
        return known

    def retain(self, name: str, known: dict[tuple[str, ...], str], rows: int) -> None:
        if len(known) > 2 * rows + 64:
            self._families[name] = {}


def render(metrics: Iterable[Metric | GaugeRows], labels: LabelText | None = None) -> bytes:
    """The exposition text of ``metrics`` (families with no sample are still described).

    ``labels`` keeps formatted label blocks between calls (a broker passes its own)."""
    labels = labels if labels is not None else LabelText()
    escaped: dict[str, str] = {}
    lines: list[str] = []
    append = lines.append
    for metric in metrics:
        if isinstance(metric, GaugeRows):
            append(f"# HELP {metric.name} {metric.documentation.translate(_HELP_ESCAPES)}")
            append(f"# TYPE {metric.name} gauge")
            lines.extend(metric.lines(escaped, labels))
            continue
        name = metric.name + "_total" if metric.type == "counter" else metric.name
        append(f"# HELP {name} {metric.documentation.translate(_HELP_ESCAPES)}")
        append(f"# TYPE {name} {metric.type}")
        for sample in metric.samples:
            if sample.name.endswith("_created"):
                continue
            sample_labels = sample.labels
            if sample_labels:
                parts = []
                for key, raw in sample_labels.items():
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
