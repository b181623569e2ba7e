"""The test suite's own layout: shared helpers live in tests/helpers/ (or conftest.py), and every test checks something.

A test module that imports another test module runs that module's import-time
work, drags its fixtures in by name and breaks when its tests are moved or
split; a test that asserts nothing passes whatever the code does (issue 32
item 7). Both are read from the source with ``ast``, so every spelling of an
import (``from tests.test_x``, ``from test_x``, ``from .test_x``, ``import
tests.test_x``, inside a function or not, ``pytest.importorskip("test_x")``,
and the imports of a script a test runs in a child process) is caught. A test
checks something when it asserts, expects a raise or warning, skips or fails,
or calls a function (its module's or a helper's) that does, at any depth.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import given

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
HELPERS = TESTS / "helpers"

#: Calls that check something whatever their module: pytest's (a raise expected, a warning, a failure or a skip
#: stated); besides these, any call of a function whose name starts with ``assert`` (numpy.testing's
#: ``assert_allclose``, unittest's ``assertEqual``, a helper's ``assert_...``) counts.
PYTEST_CHECKS = {"raises", "warns", "deprecated_call", "fail", "skip", "xfail"}
#: Functions that import the module their first argument names.
_IMPORTERS = {"importorskip", "import_module", "__import__", "run_module"}
#: An import statement on a line of its own in a string: the source of a script run in a child process.
_SCRIPT_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import\b|import[ \t]+([\w.]+))", re.MULTILINE)


def helper_files() -> list[Path]:
    """The files shared helpers may live in: the helpers package, the conftest files and the modules that were
    helpers before tests/helpers/ existed (tests/launch_paths.py and its siblings, which other work edits). A test
    calling a function of one of these that asserts counts as asserting."""
    return sorted([*HELPERS.rglob("*.py"), *TESTS.rglob("conftest.py"),
                   *(p for p in TESTS.glob("*.py") if not p.name.startswith("test_") and p.name != "conftest.py")])


def suite_modules() -> list[Path]:
    """Every test module, tests/gpu's included."""
    return sorted(p for p in TESTS.rglob("test_*.py") if "golden" not in p.relative_to(TESTS).parts)


def imported_test_modules(source: str, path: Path) -> list[tuple[int, str]]:
    """Every import in ``source`` (the module at ``path``) of a test module, as (line, module name)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing module's folder
                folder = path.parent
                for _ in range(node.level - 1):
                    folder = folder.parent
                base = ".".join([*folder.relative_to(REPO).parts, *([base] if base else [])])
            # `from tests import test_x` names the module in the imported names, not in `module`
            names = [(node.lineno, base)] + [(node.lineno, f"{base}.{a.name}" if base else a.name)
                                             for a in node.names]
        elif isinstance(node, ast.Call) and _called_name(node) in _IMPORTERS and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names = [(node.lineno, node.args[0].value)]  # pytest.importorskip("test_x"), importlib's, runpy's
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # a script the test runs in a child process (`python -c SCRIPT`) imports as the module would
            names = [(node.lineno, m[1] or m[2]) for m in _SCRIPT_IMPORT.finditer(node.value)]
        else:
            continue
        found += [(line, name) for line, name in names if is_test_module(name)]
    return sorted(set(found))


def is_test_module(name: str) -> bool:
    """Whether the dotted ``name`` is a module of the test suite whose file name says it holds tests."""
    parts = name.split(".")
    if not parts[-1].startswith("test_"):
        return False
    # `tests.test_x`, `tests.gpu.test_x`, and `test_x` / `gpu.test_x` as pytest's rootdir import puts them
    candidates = [REPO.joinpath(*parts), TESTS.joinpath(*parts)]
    return any(c.with_suffix(".py").is_file() or (c / "__init__.py").is_file() for c in candidates)


#: Test modules that still import other test modules, each with why (an entry whose file no longer imports a
#: test module fails below, so the list only shrinks). Empty: what the test modules share lives in tests/helpers/
#: (issue 32 item 7).
PENDING: dict[str, str] = {}


def test_no_test_module_imports_another_test_module() -> None:
    # (this module's own strings are the checker's examples of what it finds, below)
    found = {p.relative_to(REPO).as_posix(): imported_test_modules(p.read_text(), p) for p in suite_modules()
             if p != Path(__file__).resolve()}
    wrong = [f"{path}:{line}: imports {name}" for path, imports in found.items() if path not in PENDING
             for line, name in imports]
    assert not wrong, ("a test module imports another test module; move what it shares into tests/helpers/ "
                       "(or a fixture into tests/conftest.py):\n" + "\n".join(wrong))
    done = sorted(path for path in PENDING if not found.get(path))
    assert not done, f"these modules import no test module any more: take them off PENDING: {done}"


def test_helpers_import_no_test_module() -> None:
    """A helper importing a test module would bring the test module's imports back by another road."""
    wrong = [f"{p.relative_to(REPO)}:{line}: imports {name}"
             for p in helper_files() for line, name in imported_test_modules(p.read_text(), p)]
    assert not wrong, "a helper module imports a test module:\n" + "\n".join(wrong)


_SPELLINGS = {
    "from tests.test_docs import nvrtc_missing": True,
    "from tests import test_docs": True,
    "import tests.test_docs": True,
    "import tests.test_docs as d": True,
    "from test_docs import nvrtc_missing": True,
    "from .test_docs import nvrtc_missing": True,
    "from . import test_docs": True,
    "from tests.gpu.test_aot_gpu import x": True,
    "def f():\n    from tests.test_docs import blocks": True,
    "host = pytest.importorskip('test_qkv_host')": True,
    "m = importlib.import_module('tests.test_docs')": True,
    "runpy.run_module('tests.test_docs')": True,
    "host = pytest.importorskip('cupy')": False,
    "SCRIPT = '''\\nimport sys\\nfrom tests.test_launch_paths import dev_reader\\n'''": True,
    "SCRIPT = 'import tests.test_docs'": True,
    "SCRIPT = '''\\nimport sys\\nfrom tests.launch_paths import launch_path\\n'''": False,
    "DOC = 'tests/test_docs.py runs each example'": False,
    "from tests.helpers.cli import layoutgen": False,
    "from tests.launch_paths import launch_path": False,
    "from tests import fake_device": False,
    "import test_not_a_module_here": False,
    "from layoutgen.checks import test_x": False,
}


def test_every_spelling_of_a_test_module_import_is_found() -> None:
    """The checker itself: each spelling of an import of a test module is found, and nothing else is."""
    here = TESTS / "test_example.py"
    got = {src: bool(imported_test_modules(src, here)) for src in _SPELLINGS}
    assert got == _SPELLINGS


# --- every test checks something -------------------------------------------------------------------------


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _checks_directly(fn: ast.AST) -> bool:
    """An assert, a pytest check (``pytest.raises`` ...) or an assertion function call in ``fn``'s own body."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Call):
            name = _called_name(node)
            if name is None:
                continue
            if name.startswith("assert"):
                return True  # numpy.testing.assert_*, unittest's assertEqual, a helper's assert_*
            if isinstance(node.func, ast.Attribute) and name in PYTEST_CHECKS and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "pytest":
                return True
    return False


def asserting_functions(trees: list[ast.Module]) -> set[str]:
    """The names of the functions defined in ``trees`` that check something, directly or through a call of
    another such function (a fixed point: ``check_golden`` calls ``compare`` which asserts)."""
    defs: dict[str, list[ast.AST]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs.setdefault(node.name, []).append(node)
    asserting = {name for name, fns in defs.items() if any(_checks_directly(f) for f in fns)}
    while True:
        more = {name for name, fns in defs.items() if name not in asserting
                and any(_called_name(c) in asserting for f in fns for c in ast.walk(f) if isinstance(c, ast.Call))}
        if not more:
            return asserting
        asserting |= more


def silent_tests(tree: ast.Module, shared: set[str]) -> list[tuple[int, str]]:
    """The ``test_*`` functions of ``tree`` that neither check something nor call a function (of this module
    or of the helpers, ``shared``) that does, as (line, name)."""
    asserting = asserting_functions([tree]) | shared
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
            calls = {_called_name(c) for c in ast.walk(node) if isinstance(c, ast.Call)}
            if not _checks_directly(node) and not calls & asserting:
                found.append((node.lineno, node.name))
    return found


def test_every_test_checks_something() -> None:
    shared = asserting_functions([ast.parse(p.read_text()) for p in helper_files()])
    wrong = [f"{p.relative_to(REPO)}:{line}: {name}"
             for p in suite_modules() for line, name in silent_tests(ast.parse(p.read_text()), shared)]
    assert not wrong, ("these tests assert nothing (no assert, no pytest.raises/skip, no call of a function that "
                       "asserts), so they pass whatever the code does:\n" + "\n".join(wrong))


_BODIES = st.sampled_from([
    ("x = 1", False),
    ("print(table())", False),
    ("assert x == 1", True),
    ("with pytest.raises(ValueError):\n        f()", True),
    ("pytest.skip('no GPU')", True),
    ("np.testing.assert_allclose(a, b)", True),
    ("check(1)", True),  # `check` asserts, below
    ("relay(1)", True),  # `relay` calls `check`
    ("helper_check(1)", True),  # from the helpers (``shared``)
    ("main()", False),
])


@given(st.lists(_BODIES, min_size=1, max_size=4))
def test_a_test_asserts_something_iff_some_statement_checks(bodies: list[tuple[str, bool]]) -> None:
    """The checker itself, on random test bodies: a test is found asserting nothing exactly when none of its
    statements checks something, directly or through the functions it calls."""
    source = ("def check(v):\n    assert v\n\ndef relay(v):\n    check(v)\n\ndef main():\n    print(1)\n\n"
              "def test_it():\n" + "".join(f"    {body}\n" for body, _ in bodies))
    found = silent_tests(ast.parse(source), {"helper_check"})
    assert bool(found) == (not any(checks for _, checks in bodies))
