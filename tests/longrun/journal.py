"""What a long-run worker process writes: a journal of lines and a small stats file.

Workers run as separate processes (inside a network namespace for the chaos run), so what
they saw reaches the test only through files. The journal holds one line per fact (an ack,
a consumed record, a commit), space-separated for speed; :mod:`tests.longrun.evidence`
parses it back. The stats file is a JSON object rewritten atomically every few seconds so
the test can print progress without parsing journals while they grow.

Line formats (first field is the kind):

- producer: ``A producer seq topic partition offset time`` (acknowledged),
  ``F producer seq topic error...`` (failed delivery)
- group member: ``H group member client strategy`` (header), ``S session topic partition``
  (assigned), ``V topic partition`` (revoked or lost), ``R session topic partition offset
  producer seq`` (a record its poll returned), ``U topic partition offset`` (a record for a
  partition it did not own), ``C topic partition offset`` (acknowledged commit), ``X topic
  partition offset error...`` (failed commit)
- read-back: ``L topic partition offset producer seq``, ``E topic partition end low``
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

__all__ = ["Journal", "read_stats"]

STATS_EVERY_S = 2.0


class Journal:
    """Buffered journal lines plus ``<journal>.stats.json`` holding ``counters``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stats_path = path.with_name(path.name + ".stats.json")
        self._file = path.open("w", buffering=1 << 16)
        self.counters: dict[str, Any] = {}
        self._stats_at = 0.0

    def write(self, line: str) -> None:
        self._file.write(line)
        self._file.write("\n")

    def count(self, key: str, amount: int = 1) -> None:
        self.counters[key] = self.counters.get(key, 0) + amount

    def flush(self) -> None:
        """Make every line so far visible (a member flushes before each commit, so a
        committed offset never names records its journal lacks)."""
        self._file.flush()

    def maybe_write_stats(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._stats_at < STATS_EVERY_S:
            return
        self._stats_at = now
        tmp = self.stats_path.with_name(self.stats_path.name + ".tmp")
        tmp.write_text(json.dumps(self.counters))
        os.replace(tmp, self.stats_path)

    def close(self) -> None:
        self.maybe_write_stats(force=True)
        self._file.close()


def read_stats(journal: Path) -> dict[str, Any]:
    try:
        value: dict[str, Any] = json.loads(
            journal.with_name(journal.name + ".stats.json").read_text())
        return value
    except (OSError, ValueError):
        return {}
