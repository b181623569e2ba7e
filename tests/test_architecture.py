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


# -- the C extension: no mutable state outside its module state, no private CPython API -------------------

#: The compiled launch path's sources (fastlaunch.h says which concept each file holds).
C_SOURCES = PACKAGE / "runtime" / "fastlaunch"
#: CPython's definition tables, which its API takes as non-const pointers (a module's and a type's).
C_TABLES = {"PyModuleDef", "PyModuleDef_Slot", "PyMethodDef", "PyGetSetDef", "PyMemberDef", "PyType_Slot",
            "PyType_Spec"}


def _blank_c(text: str) -> str:
    """``text`` with comments, string and character literals and preprocessor lines blanked (newlines kept)."""
    def spaces(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match[0])

    text = re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', spaces, text, flags=re.DOTALL)
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", spaces, text, flags=re.MULTILINE)


def _mutable(declaration: str) -> str | None:
    """The name a C declaration (no ``static``, no initializer, braces' contents dropped) declares as mutable
    state; None for a type, a function, one of CPython's tables or a const object."""
    decl = re.sub(r"\b(static|extern|inline)\b", " ", declaration).strip()
    if not decl or re.match(r"typedef\b", decl) or re.fullmatch(r"(struct|enum|union)\b\s*\w*\s*(\{\s*\})?", decl):
        return None
    if "(" in decl and not re.search(r"\(\s*\*", decl):  # a function, declared or defined
        return None
    if set(re.findall(r"\w+", decl)) & C_TABLES:
        return None
    pointer = re.search(r"\(\s*\*\s*(const\s+)?(\w+)", decl)  # a pointer to a function: its name in parentheses
    if pointer:
        return None if pointer[1] else pointer[2]
    bare = re.sub(r"\[[^\]]*\]", "", decl).strip()
    name = re.findall(r"\w+", bare)[-1]
    prefix = bare[: bare.rfind(name)].rstrip()
    if prefix.endswith("const") or ("*" not in prefix and re.search(r"\bconst\b", prefix)):
        return None
    return name


def mutable_state(path: Path) -> list[str]:
    """``file:line: `name``` for each variable of a C file that is mutable and static: at file scope (static or
    not), or ``static`` inside a function."""
    text = _blank_c(path.read_text(encoding="utf-8"))
    found: list[str] = []

    def check(statement: str, at: int) -> None:
        while re.search(r"\{[^{}]*[^{}\s][^{}]*\}", statement):  # braces' contents dropped, innermost first
            statement = re.sub(r"\{[^{}]*\}", "{}", statement)
        name = _mutable(statement.split("=")[0])
        if name is not None:
            at += len(statement) - len(statement.lstrip())
            found.append(f"{path.name}:{text.count(chr(10), 0, at) + 1}: `{name}`")

    depth, start, body = 0, 0, False
    for at, char in enumerate(text):
        if char == "{":
            if depth == 0:  # a function's body, or a type's or an initializer's braces (part of a statement)
                header = text[start:at]
                body = "(" in header and "=" not in header and not re.match(r"\s*(typedef|struct|enum|union)\b", header)
                if not body:
                    depth += 1
                    continue
                check(header, start)
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0 and body:
                start, body = at + 1, False
        elif char == ";" and depth == 0:
            check(text[start:at], start)
            start = at + 1
        elif depth > 0 and body and text.startswith("static", at) and not (text[at - 1].isalnum() or text[at - 1] == "_"):
            end = min(i for i in (text.find(";", at), text.find("=", at)) if i >= 0)
            check(text[at:end], at)
    return found


def private_api(path: Path) -> list[str]:
    """``file:line: name`` for each name of CPython's private API (``_Py...``) a C file uses."""
    text = _blank_c(path.read_text(encoding="utf-8"))
    return [f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}: {m[0]}" for m in re.finditer(r"\b_Py\w*", text)]


def c_files(folder: Path = C_SOURCES) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix in (".c", ".h"))


def test_the_c_extension_keeps_no_mutable_state_outside_its_module_state() -> None:
    assert c_files() and [problem for path in c_files() for problem in mutable_state(path)] == []


def test_the_c_extension_uses_no_private_cpython_api() -> None:
    assert [problem for path in c_files() for problem in private_api(path)] == []


def test_the_c_extensions_hooks_are_only_in_its_test_build() -> None:
    """set_hook, get_hook, read_cost and kinds: defined in testing.c under -DLAYOUTGEN_TEST_HOOKS, and listed in
    the module's method table only through FL_TEST_METHODS, which is empty without it."""
    testing = (C_SOURCES / "testing.c").read_text(encoding="utf-8")
    guarded = testing[testing.index("#ifdef LAYOUTGEN_TEST_HOOKS"): testing.rindex("#else")]
    for name in ("fl_set_hook", "fl_get_hook", "fl_read_cost", "fl_kinds_read"):
        assert f"PyObject *{name}(" in guarded
    for path in c_files():
        text = _blank_c(path.read_text(encoding="utf-8"))
        assert not re.search(r"\b(set_hook|get_hook|read_cost|kinds_read)\b", text.replace("fl_", "")) or \
            path.name in ("testing.c", "fastlaunch.h"), path.name
    header = (C_SOURCES / "fastlaunch.h").read_text(encoding="utf-8")
    assert re.search(r"#else\n#define FL_TEST_METHODS\n#endif", header)


def test_the_c_extension_is_a_multi_phase_module_that_declares_its_gil_use() -> None:
    """Its state is module state (m_size), made by Py_mod_exec; Py_mod_gil is declared (where Python has it);
    its types are heap types of the module (PyType_FromModuleAndSpec), which find the state through it."""
    module = _blank_c((C_SOURCES / "module.c").read_text(encoding="utf-8"))
    raw = (C_SOURCES / "module.c").read_text(encoding="utf-8")
    assert "PyModuleDef_Init(&fl_module_def)" in module and "PyModule_Create" not in module
    assert re.search(r"\.m_size = sizeof\(FastState\)", module) and "{Py_mod_exec, module_exec}" in module
    assert re.search(r"#ifdef Py_mod_gil\n\s*\{Py_mod_gil, Py_MOD_GIL_USED\}", raw)
    assert module.count("PyType_FromModuleAndSpec(module, ") == 2
    assert not any("PyTypeObject " in line and "static" in line and "(" not in line
                   for path in c_files() for line in _blank_c(path.read_text(encoding="utf-8")).splitlines())


def test_mutable_c_state_and_private_api_are_found(tmp_path: Path) -> None:
    source = tmp_path / "planted.c"
    source.write_text('#include "fastlaunch.h"\n'
                      "static int launches = 0;  /* a counter */\n"
                      "PyObject *cache;\n"
                      "static const char *names[] = {\"a\"};\n"
                      "static const char *const fine[] = {\"a\"};\n"
                      "static LaunchKernelFn entry;\n"
                      "static int (*hook)(void) = NULL;\n"
                      "typedef struct { int n; } Counts;\n"
                      "static PyMethodDef methods[] = {{NULL, NULL, 0, NULL}};\n"
                      "static int count(void);\n"
                      "int count(void) {\n"
                      "    static long calls;\n"
                      "    const char *text = \"static int no;\";\n"
                      "    return (int)calls + _PyType_Lookup(NULL, NULL) != NULL;\n"
                      "}\n", encoding="utf-8")
    assert mutable_state(source) == ["planted.c:2: `launches`", "planted.c:3: `cache`", "planted.c:4: `names`",
                                     "planted.c:6: `entry`", "planted.c:7: `hook`", "planted.c:12: `calls`"]
    assert private_api(source) == ["planted.c:14: _PyType_Lookup"]
