"""Reading the JSON-lines files that client subprocesses write while a test watches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json_lines(path: Path) -> list[dict[str, Any]]:
    """Every complete line of ``path`` (none if it does not exist yet). Reading stops at the
    first line that does not parse: the writer may be in the middle of it."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    parsed = []
    for line in lines:
        if not line.strip():
            continue
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return parsed
