"""odradek's modules form layers, and the layers are the ones docs/architecture.md states.

Three checks over every module under ``src/`` (``odradek`` and the monitoring tooling beside
it), parsed, never imported:

* **Layers.** The "Layers" table of ``docs/architecture.md`` is the one list: each row names
  its packages and modules, bottom layer first, and this test reads it. A module imports only
  from its own row or rows above it. Every module must sit in a row; a name in the table that
  is no module fails too, so the table cannot drift from the tree. For the rows up to
  :data:`TYPED_TOO` (vocabulary, protocol, storage) the rule holds even for imports under
  ``if TYPE_CHECKING:``: the bottom of the stack does not name a higher layer's types at all.
  Above it such imports are allowed (they never run; that is how a layer annotates with a type
  of one above it).
* **No cycle.** Every import counts — at module level or inside a function (a lazy import is
  still a dependency, only a later one) — except those under ``if TYPE_CHECKING:``, which never
  run. A cycle fails with its path, e.g. ``a -> b -> a``.
* **Lazy imports say why.** An import inside a function has a ``#`` comment giving the reason
  on its line or on the line above it (or above the run of imports it starts); where there is
  no reason to be lazy, the import belongs at the top of the module.

A module's own parent packages do not count as dependencies: Python imports them before the
module in any case (``from odradek.cluster import znodes`` inside ``odradek.cluster.view``
depends on ``znodes``, not on the package).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import odradek

SRC = Path(odradek.__file__).parent.parent
ARCHITECTURE = SRC.parent / "docs" / "architecture.md"
TYPED_TOO = "storage"
"""The highest layer whose ``TYPE_CHECKING`` imports obey the layer rule too."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in SRC.rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, *, type_checking: bool) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement; those under ``if TYPE_CHECKING:`` only if ``type_checking``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if not type_checking and isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for nested in ast.iter_child_nodes(node):
            visit(nested)

    visit(tree)
    return found


def _target(name: str) -> str | None:
    """The module ``name`` lands in (a name inside a module -> the module)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def dependencies(module: str, *, type_checking: bool = False) -> set[str]:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    for node in _imports(tree, type_checking=type_checking):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for name in names:
            target = _target(name)
            if target is not None and not (module == target or module.startswith(target + ".")):
                out.add(target)
    return out


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def layers_table(markdown: str) -> list[tuple[str, list[str]]]:
    """The rows of the "Layers" table, bottom first: (layer, the backquoted names of its
    package column: ``protocol/``, ``types.py``, ``odradek_monitoring``)."""
    section = markdown.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]
    return [(cells[1].strip(), re.findall(r"`([^`]+)`", cells[2]))
            for cells in (row.split("|") for row in rows)]


def _module_of(entry: str) -> str | None:
    """``cli/`` -> ``odradek.cli``, ``types.py`` -> ``odradek.types``, a package beside
    ``odradek`` by its own name; None if no module has that name."""
    name = entry.removesuffix("/").removesuffix(".py").replace("/", ".")
    return next((candidate for candidate in (f"odradek.{name}", name) if candidate in MODULES),
                None)


def layer_ranks(rows: list[tuple[str, list[str]]]) -> dict[str, int]:
    """Module or package -> the row it is named in (0 = the bottom layer)."""
    ranks: dict[str, int] = {}
    unknown = [entry for _, entries in rows for entry in entries if _module_of(entry) is None]
    assert not unknown, f"docs/architecture.md's Layers table names no module: {unknown}"
    for rank, (_, entries) in enumerate(rows):
        for entry in entries:
            ranks[str(_module_of(entry))] = rank
    return ranks


def rank_of(module: str, ranks: dict[str, int]) -> int | None:
    """The row of the longest named prefix of ``module``."""
    while module:
        if module in ranks:
            return ranks[module]
        module = module.rpartition(".")[0]
    return None


def layer_violations(rows: list[tuple[str, list[str]]],
                     graph: dict[str, set[str]]) -> list[str]:
    """``module (layer) imports target (higher layer)`` for every import against the table."""
    ranks = layer_ranks(rows)
    names = [layer for layer, _ in rows]
    out = []
    for module in sorted(graph):
        rank = rank_of(module, ranks)
        for target in sorted(graph[module]):
            target_rank = rank_of(target, ranks)
            if rank is not None and target_rank is not None and target_rank > rank:
                out.append(f"{module} ({names[rank]}) imports {target} ({names[target_rank]})")
    return out


def full_graph(rows: list[tuple[str, list[str]]]) -> dict[str, set[str]]:
    """Runtime imports of every module, plus ``TYPE_CHECKING`` ones up to :data:`TYPED_TOO`."""
    ranks = layer_ranks(rows)
    strict = [layer for layer, _ in rows].index(TYPED_TOO)
    return {module: dependencies(module, type_checking=(rank_of(module, ranks) or 0) <= strict)
            for module in MODULES}


def _reason_lines(source: str) -> set[int]:
    """Lines holding a comment that can give a reason (not only ``noqa`` or ``type:``)."""
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        text = token.string.lstrip("#").strip()
        if token.type == tokenize.COMMENT and not re.match(r"(noqa|type:)\b", text):
            lines.add(token.start[0])
    return lines


def unexplained_lazy_imports(source: str) -> list[int]:
    """Lines of imports inside a function with no reason in a comment: on the import's line,
    or on the line above it or above the run of import statements it belongs to."""
    tree = ast.parse(source)
    reasons = _reason_lines(source)
    out = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for body in (getattr(node, field, None) for node in ast.walk(function)
                     for field in ("body", "orelse", "finalbody", "handlers")):
            previous_import_explained = False
            previous_end = 0
            for statement in body if isinstance(body, list) else []:
                if not isinstance(statement, ast.Import | ast.ImportFrom):
                    previous_import_explained = False
                    continue
                line = statement.lineno
                explained = (line in reasons or line - 1 in reasons
                             or (previous_import_explained and previous_end >= line - 2))
                if not explained:
                    out.append(line)
                previous_import_explained, previous_end = explained, statement.end_lineno or line
    return sorted(set(out))


def test_find_cycle_reports_the_path() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_layer_violations_name_both_sides() -> None:
    rows = [("vocabulary", ["types.py"]), ("protocol", ["protocol/"])]
    graph = {"odradek.types": {"odradek.protocol.errors"}, "odradek.protocol": {"odradek.types"}}
    assert layer_violations(rows, graph) == [
        "odradek.types (vocabulary) imports odradek.protocol.errors (protocol)"]


def test_lazy_imports_need_a_reason() -> None:
    source = (
        "def f():\n"
        "    import json\n"                                   # 2: no reason
        "    import os  # noqa: F401\n"                       # 3: noqa is no reason
        "    import re  # only here: costly to import\n"
        "    # the extra is optional\n"
        "    import yaml\n"
        "    from yaml import dump\n"                         # same run as the line above
        "    x = 1\n"
        "    import csv\n"                                    # 9: a new run, no reason
    )
    assert unexplained_lazy_imports(source) == [2, 3, 9]


def test_the_import_graph_of_odradek_has_no_cycle() -> None:
    graph = {module: dependencies(module) for module in MODULES}
    assert "odradek.replication" in graph["odradek.broker.server"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_every_module_has_a_layer_in_docs_architecture() -> None:
    ranks = layer_ranks(layers_table(ARCHITECTURE.read_text()))
    unplaced = sorted(module for module in MODULES
                      if module != "odradek" and rank_of(module, ranks) is None)
    assert not unplaced, f"modules in no row of docs/architecture.md's Layers table: {unplaced}"


def test_modules_import_only_their_own_layer_and_the_layers_below() -> None:
    rows = layers_table(ARCHITECTURE.read_text())
    assert [layer for layer, _ in rows][:3] == ["vocabulary", "protocol", TYPED_TOO]
    violations = layer_violations(rows, full_graph(rows))
    assert not violations, ("imports against docs/architecture.md's Layers table:\n  "
                            + "\n  ".join(violations))


def test_every_import_inside_a_function_says_why() -> None:
    unexplained = [f"{path.relative_to(SRC.parent)}:{line}"
                   for path in sorted(MODULES.values())
                   for line in unexplained_lazy_imports(path.read_text())]
    assert not unexplained, ("imports inside a function without a reason in a comment (add "
                             "one, or move the import to the top):\n  " + "\n  ".join(unexplained))
