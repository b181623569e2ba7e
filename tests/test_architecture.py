"""The import graph of layoutgen/: no cycles, and only the imports docs/architecture.md allows.

The graph is built with ``ast`` from the source, so imports inside functions
and ``TYPE_CHECKING`` blocks count as much as those at the top of a module.
The rules come from the table in docs/architecture.md, the one place they
are written down; the planted-circle tests show the checker can fail.
"""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "layoutgen"
DOC = ROOT / "docs" / "architecture.md"

#: Third-party packages a room must not import (docs/architecture.md, "Third-party imports").
FORBIDDEN_THIRD_PARTY = {
    "schema": {"jinja2", "cupy"},
    "declare": {"jinja2", "cupy"},
    "checks": {"jinja2", "cupy"},
    "runtime": {"jinja2"},
}


def modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` (packages by their ``__init__``)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import in ``path``: layoutgen modules by name, others by top package."""
    here = name.split(".") if _is_package(path) else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                # `from . import paths` imports a module; `from .x import y` imports x (y is a name of x)
                sub = f"{target}.{alias.name}"
                yield (sub if sub in known else target), node.lineno


def import_graph(package: Path) -> tuple[dict[str, set[str]], dict[tuple[str, str], int], list[str]]:
    """The edges between layoutgen modules, the line of each edge, and every third-party import problem."""
    known = modules(package)
    edges: dict[str, set[str]] = {m: set() for m in known}
    lines: dict[tuple[str, str], int] = {}
    third_party: list[str] = []
    for name, path in known.items():
        room = room_of(name)
        for target, line in imports(name, path, known):
            if target in known:
                if target != name:
                    edges[name].add(target)
                    lines.setdefault((name, target), line)
            elif target.split(".")[0] in FORBIDDEN_THIRD_PARTY.get(room, set()):
                third_party.append(f"{path.relative_to(package.parent)}:{line}: `{room}` imports {target}")
    return edges, lines, third_party


def room_of(module: str) -> str:
    """``layoutgen.schema.view`` -> ``schema``; ``layoutgen`` -> ``__init__``; ``layoutgen.cli`` -> ``cli``."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return groups


def allowed_imports(doc: Path = DOC) -> dict[str, set[str]]:
    """The "Which room may import which" table of docs/architecture.md."""
    text = doc.read_text(encoding="utf-8")
    section = text.split("## Which room may import which", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for row in re.findall(r"^\| `([\w_]+)` \|(.*)\|\s*$", section, flags=re.M):
        table[row[0]] = set(re.findall(r"`([\w_]+)`", row[1]))
    return table


def violations(package: Path, doc: Path = DOC) -> list[str]:
    """Every import against the documented direction, every cycle and every forbidden third-party import."""
    edges, lines, problems = import_graph(package)
    allowed = allowed_imports(doc)
    problems += [f"room `{room}` is not in docs/architecture.md"
                 for room in sorted({room_of(m) for m in edges} - set(allowed))]
    for source, targets in sorted(edges.items()):
        room = room_of(source)
        for target in sorted(targets):
            other = room_of(target)
            if other == room or room not in allowed:
                continue
            if other not in allowed[room]:
                path = modules(package)[source].relative_to(package.parent)
                problems.append(f"{path}:{lines[source, target]}: `{room}` may not import `{other}` ({target})")
    problems += [f"import cycle: {' <-> '.join(group)}" for group in cycles(edges)]
    return problems


# -- the package as it is ------------------------------------------------------------------------------


def test_the_table_names_every_room() -> None:
    rooms = {room_of(m) for m in modules(PACKAGE)}
    assert rooms == set(allowed_imports())


def test_layoutgen_imports_follow_the_documented_direction_without_cycles() -> None:
    assert violations(PACKAGE) == []


def test_modules_stay_small() -> None:
    big = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert big == {}


# -- the checker fails when it should ------------------------------------------------------------------


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / "layoutgen"
    shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _plant(path: Path, line: str, *, late: bool = False) -> None:
    text = path.read_text(encoding="utf-8")
    if late:  # inside a function: a late import is still an edge
        text += f"\n\ndef _planted() -> None:\n    {line}\n"
    else:
        text = text.replace("from __future__ import annotations\n", f"from __future__ import annotations\n{line}\n", 1)
    path.write_text(text, encoding="utf-8")


def test_a_planted_circle_inside_a_room_is_found(copy: Path) -> None:
    _plant(copy / "schema" / "dims.py", "from .layout import Layout", late=True)  # layout imports dims
    found = violations(copy)
    assert any(p.startswith("import cycle:") and "layoutgen.schema.dims" in p and "layoutgen.schema.layout" in p
               for p in found), found


def test_a_planted_circle_through_type_checking_is_found(copy: Path) -> None:
    _plant(copy / "runtime" / "errors.py", "if TYPE_CHECKING:\n    from .launch import KernelLauncher")
    assert any(p.startswith("import cycle:") and "layoutgen.runtime.launch" in p for p in violations(copy))


def test_an_import_against_the_direction_is_found(copy: Path) -> None:
    _plant(copy / "runtime" / "plan.py", "from ..codegen import env", late=True)
    found = violations(copy)
    assert any("runtime/plan.py:" in p and "`runtime` may not import `codegen`" in p for p in found), found


def test_a_forbidden_third_party_import_is_found(copy: Path) -> None:
    _plant(copy / "schema" / "names.py", "import jinja2", late=True)
    assert any("`schema` imports jinja2" in p for p in violations(copy))
