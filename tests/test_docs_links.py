"""Every relative link in README.md and docs/ points at a file of this repository (and, for
``file.md#section``, at a heading that exists): the documentation must not send readers to
files that moved, or outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def links(text: str) -> list[str]:
    """Link targets of Markdown text, code blocks and code spans left out."""
    return _LINK.findall(_INLINE_CODE.sub("", _FENCE.sub("", text)))


def anchors(text: str) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    found = set()
    for heading in _HEADING.findall(_FENCE.sub("", text)):
        plain = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
        found.add(re.sub(r"[^\w\- ]", "", plain).replace(" ", "-"))
    return found


def broken_links(document: Path, root: Path = ROOT) -> list[str]:
    problems = []
    text = document.read_text()
    for target in links(text):
        if _EXTERNAL.match(target):
            continue
        path_part, _, fragment = target.partition("#")
        resolved = (document.parent / path_part).resolve() if path_part else document
        if not resolved.is_relative_to(root):
            problems.append(f"{target}: outside the repository")
        elif not resolved.exists():
            problems.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(
                resolved.read_text()):
            problems.append(f"{target}: no heading #{fragment} in {resolved.name}")
    return problems


def test_the_checks_find_what_is_broken(tmp_path: Path) -> None:
    assert links("[a](x.md) ![i](img/p.png) `[c](code.md)`\n```\n[d](fence.md)\n```\n") == [
        "x.md", "img/p.png"]
    assert anchors("# Dynamic configs\n## `acks=all` and min.insync.replicas\n") == {
        "dynamic-configs", "acksall-and-mininsyncreplicas"}
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "a.md").write_text("# A\n## Two words\n")
    readme = repo / "README.md"
    readme.write_text("[ok](docs/a.md#two-words) [web](https://example.org/x) [top](#a)\n"
                      "[gone](docs/b.md) [bad](docs/a.md#three) [out](../shared/DESIGN.md)\n"
                      "# A\n")
    assert broken_links(readme, repo) == [
        "docs/b.md: no such file",
        "docs/a.md#three: no heading #three in a.md",
        "../shared/DESIGN.md: outside the repository",
    ]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_inside_the_repository(document: Path) -> None:
    assert broken_links(document) == []
