"""The seed bug in every spelling issue 30 lists, in three forms, refused before any GPU is involved.

tests/specs/spellings/corpus.py holds the spellings as data; tests/helpers/spellings.py writes each as a kernel
template, a hand-written SourceKernel entry and a `__device__` helper the body calls (a project of two specs
in a folder of the test's: the bad kernels and their correct twins). `check --execute` runs every kernel on the
CPU: each bad one is refused at its bad access's line (LG650, LG651 or LG655, the message asserted whole, with
`<N>` for what depends on which thread meets it first; a static `__shared__` array's unwritten rows, LG654, only
at the kernel's binding), and each correct twin runs with no finding.

`layoutgen check`'s lint is asserted only where it would refuse a correct twin: it may not, but for the false
alarms listed in LINT_FALSE_ALARMS.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from layoutgen.project.config import load_config
from layoutgen.project.execute import execute_results
from layoutgen.project.process import SpecResult, process_spec
from layoutgen.project.specload import load_spec
from layoutgen.schema.diagnostics import Diagnostic
from tests.helpers.spellings import FORMS, Written, kernels, write_project
from tests.specs.spellings.corpus import SPELLINGS

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                                reason="no host C++ compiler here")

# `<N>`: a number that depends on which thread meets the finding first (and, for a loop, on its column).
AT = "at row <N>, column <N>"
T = "in block <N>, thread <N>"
#: The finding that refuses each class of spelling (the Spelling's `finding`), `{k}` the kernel, `{x}` x's view.
FINDINGS = {
    "pointer": ("LG650", "`{k}` read `x` (Window.snap) " + AT + ", outside the field's columns 0..96 (rows 136 "
                "elements apart), " + T),
    "field": ("LG651", "`{k}` indexed `x` ({x}) " + AT + ", outside the field (183 rows, 96 columns), " + T
              + "; the thread stopped before the access"),
    "narrow": ("LG651", "`{k}` indexed `n` (Narrow) " + AT + ", outside the field (183 rows, 40 columns), " + T
               + "; the thread stopped before the access"),
    # 183 rows in tiles of 32: the last (block 5) holds 23, and its first row is row 160.
    "tile_rows": ("LG655", "`{k}` read shared `xs` (a tile of x) at row 23, column <N>, past the 23 rows it holds "
                  "(capacity 32), in block 5, thread <N>: the NaN it read reached `y` (Packed) at row 160, column <N>"),
    "tile_pitch": ("LG650", "`{k}` read shared `xs` (a tile of x) " + AT + ", outside its 96 columns (pitch 100), " + T),
    # Weaker: reported at the kernel's binding, not at the read (a static __shared__ array's unwritten rows).
    "unwritten": ("LG654", "`{k}` wrote NaN to `y` (Packed) at row <N>, column <N> although every input was finite: "
                  "it computed with memory nothing wrote"),
}

#: The lint's errors on correct twins, by spelling: a number typed by hand that is right (the lint asks for the
#: view's name: LG401's design). A stride that comes from the view's own `row_stride` (through a local, a macro, a
#: type's member, a helper's argument) is the view's wherever it goes (tests/test_lint_flow_property.py).
LINT_FALSE_ALARMS = {
    "shift_times": "LG401", "static_const": "LG401",  # typed by hand: (row << 3) * 17, static const int = 136
}
#: Bad kernels the lint itself refuses at their bad access's line, in every form, beside the CPU run (issue 30
#: item 5's classes it closed: an offset split over statements, `X::width` of `using X = decltype(x);`, a lane loop
#: whose accessor's row a hand-written entry computes in parentheses).
LINT_REFUSES = {"offset_split": "LG401", "type_width": "LG401", "lane_loop": "LG409", "lane_loop_local": "LG409"}
#: What the issue lists, by the names the corpus gives them (with the held-out tile product).
LISTED = ["const_int", "int_local", "constexpr_int", "auto_width", "define", "offset_line", "offset_split", "at_row0",
          "call_row0", "shift_times", "off_by_one", "vec16_row0", "flat_loop", "float4_cast", "helper_width",
          "static_const", "type_width", "other_view_stride", "other_view_local", "lane_loop", "lane_loop_local",
          "tile_capacity", "tile_capacity_member", "tile_capacity_static", "narrow_fill", "narrow_fill_static",
          "tile_product_ld", "tile_product_width"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[Written]]]:
    root = tmp_path_factory.mktemp("spellings")
    return root, write_project(root)


def _by_kernel(diags: list[Diagnostic], root: Path) -> dict[str, list[str]]:
    """Each finding as `site: code: message`, its path relative to ``root``, by the kernel its message names."""
    out: dict[str, list[str]] = {}
    for d in diags:
        name = re.match(r"`(\w+)`", d.message)
        assert name is not None, d
        site = str(d.site).removeprefix(f"{root}/")
        out.setdefault(name.group(1), []).append(f"{site}: {d.code}: {d.message}")
    return out


@pytest.fixture(scope="module")
def executed(project: tuple[Path, dict[str, list[Written]]]) -> dict[str, dict[str, list[str]]]:
    """The findings of `check --execute` over both specs (one run: the kernels build two at a time), by kind and
    kernel."""
    root, _ = project
    results = []
    for kind in ("bad", "good"):
        loaded = load_spec(root / kind / "spec.py")
        assert loaded.spec is not None, loaded.diagnostics
        results.append(SpecResult(f"{kind}/spec.py", loaded.spec, {"rendered": ""}, (), None))
    found = execute_results(results, load_config(root), progress=False)
    assert all(d.site is not None for d in found), found
    # The kernels of the two specs have the same names: their findings are told apart by their files.
    return {kind: _by_kernel([d for d in found if str(d.site).removeprefix(f"{root}/").startswith(f"{kind}/")], root)
            for kind in ("bad", "good")}


def test_the_corpus_holds_every_spelling_the_issue_lists() -> None:
    assert [s.name for s in SPELLINGS] == LISTED
    for s in SPELLINGS:
        assert 1 <= s.line <= len(s.scope.splitlines() + s.body.splitlines()), s.name
        assert (s.scope, s.body) != (s.good_scope, s.good), s.name
        assert set(s.skip) <= set(FORMS) and all(s.skip.values()), s.name


@pytest.mark.parametrize(("spelling", "form"), [(s.name, f) for s, f in kernels()])
def test_each_bad_kernel_is_refused_at_its_line(project: tuple[Path, dict[str, list[Written]]],
                                                executed: dict[str, dict[str, list[str]]], spelling: str,
                                                form: str) -> None:
    _, written = project
    (w,) = [w for w in written["bad"] if w.kernel == f"{spelling}_{form}"]
    code, message = FINDINGS[w.spelling.finding]
    site = f"{w.path}:{w.line}" if code != "LG654" else f"bad/spec.py:{w.binding}"
    expected = f"{site}: {code}: " + message.replace("{k}", w.kernel).replace("{x}", _x_view(w))
    pattern = re.escape(expected).replace("<N>", r"\d+")
    found = executed["bad"].get(w.kernel, ["not refused"])
    assert len(found) == 1 and re.fullmatch(pattern, found[0]), (w.spelling.bad_line, found)


@pytest.mark.parametrize(("spelling", "form"), [(s.name, f) for s, f in kernels()])
def test_each_correct_twin_runs_with_no_finding(executed: dict[str, dict[str, list[str]]], spelling: str,
                                                form: str) -> None:
    assert executed["good"].get(f"{spelling}_{form}", []) == []


def test_the_lint_refuses_no_correct_twin_but_its_known_false_alarms(
        project: tuple[Path, dict[str, list[Written]]]) -> None:
    root, written = project
    result = process_spec(load_config(root), root / "good" / "spec.py")
    where = {w.path: w for w in written["good"]}
    names = {path: w.spelling.name for path, w in where.items()}
    refused = sorted({(names.get(path := str(d.site.path).removeprefix(f"{root}/"), path), d.code)
                      for d in result.diagnostics if d.site is not None})
    assert [d for d in result.diagnostics if d.site is None] == []
    assert [(name, code) for name, code in refused if LINT_FALSE_ALARMS.get(name) != code] == []


@pytest.mark.parametrize(("spelling", "form"), [(s.name, f) for s, f in kernels() if s.name in LINT_REFUSES])
def test_the_lint_refuses_the_classes_it_closed_at_the_bad_line(project: tuple[Path, dict[str, list[Written]]],
                                                                spelling: str, form: str) -> None:
    root, written = project
    (w,) = [w for w in written["bad"] if w.kernel == f"{spelling}_{form}"]
    result = process_spec(load_config(root), root / "bad" / "spec.py")
    at_line = [d for d in result.diagnostics if d.site is not None
               and (str(d.site.path).removeprefix(f"{root}/"), d.site.line) == (w.path, w.line)]
    assert [(d.code, f"kernel `{w.kernel}`" in d.message) for d in at_line] == [(LINT_REFUSES[spelling], True)], \
        (w.spelling.bad_line, result.diagnostics)


def _x_view(w: Written) -> str:
    return "Padded.snap" if w.spelling.grid == "warps" else "Window.snap"
