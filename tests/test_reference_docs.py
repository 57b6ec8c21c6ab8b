"""The generated reference tables in docs/ match the definitions they are generated from.

A failure here means a config definition or an advertised API version changed without the
docs: run ``make docs`` and commit the result.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.config import BROKER_CONFIGS
from odradek.protocol.api_versions import ADVERTISED
from odradek.reference_docs import GENERATED_FILES, main, regenerate, splice

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("file_name", sorted(GENERATED_FILES))
def test_regenerating_a_reference_file_is_a_no_op(file_name: str) -> None:
    path = DOCS / file_name
    assert regenerate(path) == path.read_text(), f"{path} is out of date: run `make docs`"


def test_check_mode_reports_a_stale_file_and_leaves_it_alone(tmp_path: Path) -> None:
    for file_name in GENERATED_FILES:
        (tmp_path / file_name).write_text((DOCS / file_name).read_text())
    stale = tmp_path / "configuration.md"
    edited = stale.read_text().replace("| `broker.id` | int |", "| `broker.id` | long |")
    stale.write_text(edited)
    assert main(["--check", str(tmp_path)]) == 1
    assert stale.read_text() == edited
    assert main([str(tmp_path)]) == 0
    assert stale.read_text() == (DOCS / "configuration.md").read_text()


def test_the_tables_hold_every_definition() -> None:
    configuration = (DOCS / "configuration.md").read_text()
    for name in BROKER_CONFIGS:
        assert f"| `{name}` |" in configuration
    compatibility = (DOCS / "compatibility.md").read_text()
    for key in ADVERTISED:
        assert f"\n| {int(key)} | " in compatibility


def test_splice_replaces_only_between_its_markers() -> None:
    text = (
        "intro\n<!-- BEGIN GENERATED t (make docs) -->\nold\n<!-- END GENERATED t -->\n"
        "<!-- BEGIN GENERATED u (make docs) -->\nkeep\n<!-- END GENERATED u -->\n"
    )
    assert splice(text, "t", "new\n") == text.replace("old", "new")
    with pytest.raises(ValueError, match="no BEGIN/END GENERATED v markers"):
        splice(text, "v", "x")
