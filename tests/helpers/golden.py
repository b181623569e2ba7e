"""Repository specs rendered as ``layoutgen generate`` renders them, and golden files compared with the result.

Golden files live in ``tests/golden/``; regenerate them with ``LAYOUTGEN_UPDATE_GOLDEN=1`` in the environment
of the tests that compare them (``pytest tests/test_codegen.py`` and the others calling :func:`check_golden`)
and review the diff.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from layoutgen.codegen.render import Rendered, render_spec
from layoutgen.project.config import load_config
from layoutgen.project.specload import load_spec

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
UPDATE = os.environ.get("LAYOUTGEN_UPDATE_GOLDEN") == "1"


def render(spec_rel: str, debug: bool = False, project: bool = False) -> Rendered:
    """Render the spec module at ``spec_rel`` (relative to the repository) as `layoutgen generate` does. Golden
    files pin the code generation alone (no configuration); ``project`` renders with the repository's
    configuration instead, as its committed `generated/` is (its `include` folders: the VSN's tensor-core header)."""
    loaded = load_spec(REPO / spec_rel)
    assert loaded.spec is not None, [str(d) for d in loaded.diagnostics]
    config = load_config(REPO)
    include = config.include_from(f"{config.out}/{loaded.spec.name}") if project else ()
    rendered = render_spec(loaded.spec, REPO, spec_rel, debug=debug, include=include)
    assert rendered.diagnostics == (), [str(d) for d in rendered.diagnostics]
    return rendered


def check_golden(relative: str, text: str) -> None:
    """``text`` is the golden file ``tests/golden/<relative>`` (written instead under LAYOUTGEN_UPDATE_GOLDEN=1)."""
    path = GOLDEN / relative
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
        return
    assert path.is_file(), f"no golden file {path}; run with LAYOUTGEN_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), text.splitlines(keepends=True), f"golden/{relative}", "rendered"
        ))
        pytest.fail(f"{relative} differs from its golden file (LAYOUTGEN_UPDATE_GOLDEN=1 to accept):\n{diff}")
