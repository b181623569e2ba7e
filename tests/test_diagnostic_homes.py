"""One home per check (issue 32, item 4): each code's registry entry says where it is raised, and stays true.

A code is raised where a file of the package names it as a string of its own: ``"LG208"`` in Python (a
constant, never a mention in a docstring or comment), ``"LG601"`` quoted in a template or a C file. The
files each ``CODES`` entry names (``Code.raised``) must be exactly those, and its stages ones that the
files' rooms run at, so the registry is where a reader finds every place a check lives.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

from layoutgen.schema.diagnostics import CODES, Code, Raised, Stage

PACKAGE = Path(__file__).resolve().parent.parent / "layoutgen"
_CODE = re.compile(r"LG\d{3}")
_QUOTED = re.compile(r"""["'](LG\d{3})["']""")
#: The stages code in each room of the package runs at (docs/architecture.md, "Where to add": a check).
ROOM_STAGES = {
    "schema": {Stage.DECLARATION, Stage.LAUNCH},  # layouts are declared; scalars' values are checked at launch
    "declare": {Stage.DECLARATION},
    "checks": {Stage.BINDING, Stage.RENDER},  # bindings and dataflow; the lint of rendered templates
    "codegen": {Stage.RENDER},
    "project": {Stage.PROJECT},
    "runtime": {Stage.LAUNCH, Stage.PROJECT},  # NVRTC and the cache serve `check --compile` and `build` too
    "templates": {Stage.LAUNCH},  # the generated launchers
    "include": {Stage.LAUNCH},
}


def raising_files(package: Path) -> dict[str, set[str]]:
    """Code -> the files under ``package`` that raise it (the registry's own file aside)."""
    out: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(package).as_posix()
        if rel == "schema/diagnostics.py":
            continue
        if path.suffix == ".py":
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), rel)):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and _CODE.fullmatch(node.value):
                    out.setdefault(node.value, set()).add(rel)
        elif path.suffix in (".j2", ".c", ".h", ".cuh", ".cpp"):
            for match in _QUOTED.finditer(path.read_text(encoding="utf-8")):
                out.setdefault(match.group(1), set()).add(rel)
    return out


def disagreements(package: Path, codes: Mapping[str, Code]) -> list[str]:
    """Each way the registry's ``raised`` disagrees with where ``package`` raises its codes."""
    found = raising_files(package)
    out = [f"{code} is raised in {', '.join(sorted(files))} but is not in CODES"
           for code, files in sorted(found.items()) if code not in codes]
    for code, entry in codes.items():
        actual = found.get(code, set())
        if entry.raised is None:
            out.append(f"{code}: its CODES entry must say where it is raised, got raised=None (it is raised in "
                       f"{', '.join(sorted(actual)) or 'no file'})")
            continue
        named = set(entry.raised.files)
        if named != actual or len(entry.raised.files) != len(named):
            out.append(f"{code}: its CODES entry names {', '.join(entry.raised.files) or 'no file'}, but it is raised "
                       f"in {', '.join(sorted(actual)) or 'no file'}")
        if not entry.raised.stages:
            out.append(f"{code}: its CODES entry must name at least one stage, got none")
        rooms = {f: ROOM_STAGES.get(f.split("/")[0], set()) for f in entry.raised.files}
        for file, stages in rooms.items():
            if not stages & set(entry.raised.stages):
                out.append(f"{code}: {file} runs at {', '.join(sorted(s.value for s in stages)) or 'no stage'}, "
                           f"none of the stages its CODES entry names ({', '.join(s.value for s in entry.raised.stages)})")
        for stage in entry.raised.stages:
            if not any(stage in stages for stages in rooms.values()):
                out.append(f"{code}: stage {stage.value} is none of its files' ({', '.join(entry.raised.files)})")
    return out


def test_every_code_says_where_it_is_raised_and_it_is_true() -> None:
    found = disagreements(PACKAGE, CODES)
    assert found == [], "\n".join(found)


def test_a_code_raised_in_a_new_file_or_unregistered_fails_the_registry(tmp_path: Path) -> None:
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "bindings.py").write_text('raise_it("LG201")\n"""LG202 in a docstring raises nothing"""\n')
    (tmp_path / "checks" / "fresh.py").write_text('# LG201 in a comment\nraise_it("LG201")\nraise_it("LG299")\n')
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "module.py.j2").write_text('_lg_launch_error("LG201", ...)\n')
    codes = {"LG201": CODES["LG201"], "LG202": Code("LG202", "x", CODES["LG202"].severity, "y",
                                                    raised=Raised((Stage.RENDER,), ("checks/bindings.py",)))}
    assert disagreements(tmp_path, codes) == [
        "LG299 is raised in checks/fresh.py but is not in CODES",
        "LG201: its CODES entry names checks/bindings.py, but it is raised in checks/bindings.py, checks/fresh.py, "
        "templates/module.py.j2",
        "LG202: its CODES entry names checks/bindings.py, but it is raised in no file",
    ]
    codes["LG201"] = Code("LG201", "x", CODES["LG201"].severity, "y", raised=Raised(
        (Stage.PROJECT,), ("checks/bindings.py", "checks/fresh.py", "templates/module.py.j2")))
    assert disagreements(tmp_path, codes)[1:3] == [
        "LG201: checks/bindings.py runs at binding, render, none of the stages its CODES entry names (project)",
        "LG201: checks/fresh.py runs at binding, render, none of the stages its CODES entry names (project)",
    ]
    codes["LG201"] = Code("LG201", "x", CODES["LG201"].severity, "y")
    assert disagreements(tmp_path, codes)[1] == (
        "LG201: its CODES entry must say where it is raised, got raised=None (it is raised in checks/bindings.py, "
        "checks/fresh.py, templates/module.py.j2)")
