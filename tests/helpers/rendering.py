"""Spec objects rendered into a temporary folder, their generated module imported, their kernels compiled.

Unlike :mod:`tests.helpers.golden` (spec modules of the repository), these take a :class:`Spec` built in the
test, with its templates written next to it (:func:`write_template`).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from layoutgen.codegen.render import Rendered, render_spec
from layoutgen.declare.spec import Spec
from layoutgen.runtime.nvrtc import CompileRequest
from tests import nvrtc_names


def write_template(tmp: Path, body: str, name: str = "k.cu.j2") -> str:
    """A kernel template ``name`` in ``tmp`` holding ``body``; its name, for a :class:`Kernel` to take."""
    (tmp / name).write_text(body, encoding="utf-8")
    return name


def render(spec: Spec, tmp: Path, *, debug: bool = False) -> Rendered:
    """``spec`` rendered as if declared in ``tmp/spec.py``; it must render without a diagnostic."""
    rendered = render_spec(spec, tmp, "spec.py", debug=debug)
    assert rendered.diagnostics == (), [str(d) for d in rendered.diagnostics]
    return rendered


def load(text: str, tmp: Path, name: str) -> ModuleType:
    """Import a generated module's text as a fresh module named ``name``."""
    folder = tmp / name
    folder.mkdir(exist_ok=True)
    (folder / "__init__.py").write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def nvrtc(rendered: Rendered, spec: str) -> None:
    """Compile every kernel of ``rendered`` with NVRTC, as ``layoutgen check --compile`` does (in a child
    process: a name that crashes NVRTC fails the test instead of ending the run)."""
    headers = tuple((p.rsplit("/", 1)[-1], t) for p, t in rendered.files.items() if p.endswith(".cuh"))
    for path, text in sorted(rendered.files.items()):
        if path.endswith(".cu"):
            found = nvrtc_names.compile_in_child(CompileRequest(source=text, name=f"generated/{path}", headers=headers))
            if found is None:
                pytest.fail(f"NVRTC crashed or hung on {path}:\n{text}")
            if found:
                pytest.fail(f"{path} does not compile: {[str(d) for d in found]}\n{text}")
