"""Layout and binding diagrams: well-formed SVG that names every field, labels that never collide.

Label boxes are estimated as the renderer estimates them (monospaced, 0.62 em
a character, which errs wide), so "no overlap" here means no overlap with the
widest plausible font; the PNGs in docs were also looked at by eye.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutgen import Axis, Field, Group, Layout, Pad, dims, f16, f32
from layoutgen.cli import main
from layoutgen.diagrams.drawing import binding_svg, layout_svg, spec_svg
from layoutgen.diagrams.parts import place_leaders
from layoutgen.project.specload import load_spec
from layoutgen.diagrams.svg import CHAR_EM, num

from tests.helpers.diagram import NS, leader_segments, overlaps, span_boxes, text_boxes, texts
from tests.helpers.strategies import shaped_layouts

REPO = Path(__file__).resolve().parent.parent
DIAGRAMS = REPO / "docs" / "diagrams"
VSN = load_spec(REPO / "examples" / "vsn" / "spec.py").spec
QKV_SPEC = load_spec(REPO / "examples" / "qkv" / "spec.py").spec
RANGES = load_spec(REPO / "tests" / "specs" / "ranges" / "spec.py").spec
assert VSN is not None and QKV_SPEC is not None and RANGES is not None

B, K = dims("B K")

#: Every column its own field, in groups of eight: the densest labelling there is.
NARROW = Layout("Narrow", [B, K], f32, [
    Group(f"g{g}", [Field(f"feature_{g * 8 + i:02d}", 1) for i in range(8)]) for g in range(7)
])
#: Padding, nested groups, a field far wider than the rest, narrow fields at both ends.
MIXED = Layout("Mixed", [B], f16, [
    Field("a", 3), Pad(2),
    Group("outer", [Group("inner", [Field("x", 1), Field("y", 1)]), Pad(1), Field("z", 1)]),
    Field("big", 200), Pad(1), Field("tail", 1),
])

#: A static sub-array field between plain columns, and named ranges of an axis in a group.
MIX = Layout("Mix", [B], f32, [Field("a", 2), Field("mix", shape=[4, 4]), Field("b", 1), Field("m2", shape=[2, 3])])
TERMS = Layout("Terms", [B, Axis([Group("obs", [Field("t1", 3), Field("t2", 5)]), Field("mask", 1), Pad(1)]), 4],
               f32, width=4)
QKV = next(lay for lay in QKV_SPEC.layouts if lay.name == "QKV")
OBS = next(lay for lay in RANGES.layouts if lay.name == "Obs")
SHAPED = [QKV, OBS, MIX, TERMS]


def layout(name: str) -> Layout:
    return next(lay for lay in VSN.layouts if lay.name == name)


# -- boxes of what is drawn -----------------------------------------------------------


def collisions(svg: str) -> list[str]:
    """Overlapping runs of text and lines through labels, read as SVG says and as cairosvg draws it."""
    found: list[str] = []
    for per_span in (False, True):
        reading = " (as cairosvg draws it)" if per_span else ""
        runs = span_boxes(svg, per_span=per_span)
        found += [f"{ta!r} overlaps {tb!r}{reading}" for i, (_, ta, a) in enumerate(runs)
                  for _, tb, b in runs[i + 1:] if overlaps(a, b)]
        found += [f"a line at x={s[0]} crosses {t!r}{reading}" for s in leader_segments(svg)
                  for t, box in text_boxes(svg, per_span=per_span)
                  if box[0] < s[0] < box[2] and s[1] < box[3] and box[1] < s[3]]
    return sorted(set(found), key=found.index)


# -- what the diagrams say -------------------------------------------------------------


@pytest.mark.parametrize("lay", [*VSN.layouts, NARROW, MIXED], ids=lambda lay: lay.name)
def test_layout_diagram_is_well_formed_and_names_every_field(lay: Layout) -> None:
    svg = layout_svg(lay)
    shown = " ".join(texts(svg))
    for view in lay.fields():
        assert re.search(rf"\b{re.escape(view.region.name)}\b", shown), view.name
        assert view.cols in shown, view.name
    assert f"row stride {lay.width} = {lay.row_bytes} B" in shown
    assert f"row align  {lay.view.row_align} B" in shown


@pytest.mark.parametrize("lay", [*VSN.layouts, NARROW, MIXED], ids=lambda lay: lay.name)
def test_layout_labels_do_not_collide(lay: Layout) -> None:
    assert collisions(layout_svg(lay)) == []


@pytest.mark.parametrize("binding", VSN.kernels, ids=lambda b: b.name)
def test_binding_diagram_names_every_parameter_and_view(binding: object) -> None:
    from layoutgen.declare.kernels import Binding

    assert isinstance(binding, Binding)
    svg = binding_svg(binding)
    shown = " ".join(texts(svg))
    assert f"kernel {binding.name}" in shown
    for param, view in binding.pairs:
        assert f"{param.name}  {param.access}" in shown
        assert f"\u2190 {view.name}" in shown
    assert collisions(svg) == []


def test_padding_is_hatched_and_groups_are_bracketed() -> None:
    svg = layout_svg(MIXED)
    assert svg.count('fill="url(#lg-hatch)"') == 3  # three Pad entries
    root = ET.fromstring(svg.encode("utf-8"))
    assert len(list(root.iter(f"{NS}pattern"))) == 1
    shown = texts(svg)
    assert "outer 5..9" in shown and "inner 5..7" in shown


def test_the_narrow_fields_of_window_hang_on_leader_lines() -> None:
    svg = layout_svg(layout("Window"))
    assert "time_in_trade 40..41" in texts(svg)  # too narrow to be labelled inside
    assert "snap" in texts(svg) and "0..40" in texts(svg)  # wide enough
    assert "rotate(" not in svg.replace('patternTransform="rotate(45)"', "")


def test_a_row_of_single_column_fields_turns_its_labels() -> None:
    svg = layout_svg(NARROW)
    assert svg.count("rotate(90") == 56


# -- sub-array fields and named axes ----------------------------------------------------


def _entries(lay: Layout) -> list[tuple[str, str]]:
    """(name as drawn, columns or rows as drawn) of every field, group and named range of ``lay``."""
    out = []
    for view in lay.fields():
        if view.axis_range is not None:
            out.append((view.axis_range.name, view.axis_range.cols))
        else:
            shape = f" {'[' + ', '.join(map(str, view.region.shape)) + ']'}" if view.region.shape else ""
            out.append((view.region.name + shape, view.cols))
    return out


@pytest.mark.parametrize("lay", SHAPED, ids=lambda lay: lay.name)
def test_shaped_and_ranged_layouts_name_every_field_range_and_shape(lay: Layout) -> None:
    svg = layout_svg(lay)
    shown = texts(svg)
    joined = " ".join(shown)
    for name, cols in _entries(lay):
        assert name in shown or any(t.startswith(f"{name} ") for t in shown), name
        assert cols in joined, (name, cols)
    unit = lay.column_unit
    assert f"row stride {lay.row_elements} = {'D*' if not unit.is_static else ''}{lay.row_bytes} B" in joined
    if lay.axis_ranges is not None:
        assert f"axis {lay.named_axis}   {lay.axis_ranges.width} entries of " in joined
        assert f"axis stride {lay.view.strides[lay.named_axis or 0]}" in joined
    assert collisions(svg) == []


def test_a_row_counted_in_d_is_numbered_in_d() -> None:
    shown = texts(layout_svg(QKV))
    assert ["q [32, D]", "0..D*32", "k [8, D]", "D*32..D*40", "v [8, D]", "D*40..D*48"] == [
        t for t in shown if t.startswith(("q ", "k ", "v ", "0..", "D*32..", "D*40.."))]
    assert "row stride D*48 = D*192 B" in shown
    assert "   one row: 48 columns of D = D*48 elements" in " ".join(shown)
    assert {"0", "D*8", "D*32", "D*48"} <= set(shown)  # the ruler counts in D too
    assert "32" not in shown and "48" not in shown


def test_sub_array_fields_tick_their_heads() -> None:
    ticks = layout_svg(QKV).count('stroke="#4d4d4d"')
    assert ticks == 2 * (31 + 7 + 7)  # top and bottom, between 32, 8 and 8 heads
    assert layout_svg(MIX).count('stroke="#4d4d4d"') == 2 * (3 + 1)  # mix [4, 4] and m2 [2, 3]
    assert layout_svg(OBS).count('stroke="#4d4d4d"') == 0


def test_a_named_axis_is_drawn_as_a_second_band() -> None:
    shown = texts(layout_svg(OBS))
    assert "axis 1   8 entries of [32, 32], its ranges named" in shown
    assert ["t1", "0..3", "t2", "3..8"] == [t for t in shown if t in ("t1", "t2", "0..3", "3..8")]
    assert "axis stride 1024 = 4096 B" in shown
    terms = texts(layout_svg(TERMS))
    assert "obs 0..8" in terms and "mask 8..9" in terms  # a group of ranges is bracketed


@pytest.mark.parametrize("binding", [*QKV_SPEC.kernels, *RANGES.kernels], ids=lambda b: b.name)
def test_bindings_to_sub_arrays_and_named_ranges(binding: object) -> None:
    from layoutgen.declare.kernels import Binding

    assert isinstance(binding, Binding)
    svg = binding_svg(binding)
    shown = texts(svg)
    joined = " ".join(shown)
    for param, view in binding.pairs:
        assert f"{param.name}  {param.access}" in joined and f"\u2190 {view.name}" in joined
        assert f"row stride {view.layout.row_elements}, offset {view.base_offset}," in joined
        if view.axis_range is not None:
            assert f"rows {view.axis_range.cols} of axis {view.layout.named_axis} ({view.axis_range.path})" in shown
    assert collisions(svg) == []


def test_the_rope_binding_highlights_q_and_k_in_units_of_d() -> None:
    rope = next(b for b in QKV_SPEC.kernels if b.name == "rope")
    svg = binding_svg(rope)
    shown = texts(svg)
    assert "reads and writes q" in shown
    assert "reads and writes k, columns D*32..D*40 of QKV [B, S, D*48] f32" in shown
    assert shown.count("D*32") == 2 and shown.count("D*40") == 1 and shown.count("D*48") == 2
    assert svg.count('stroke="#4d4d4d"') == 2 * (31 + 7)


def test_a_binding_to_a_named_range_highlights_its_rows() -> None:
    svg = binding_svg(RANGES.kernels[0])
    shown = texts(svg)
    assert "rows 3..8 of axis 1 (t2)" in shown and "t1" in shown and "t2" in shown
    assert "row stride 32, offset 3072, align 128 B, 8-byte vectors" in shown
    assert '<title>x: rows 3..8 of axis 1</title>' in svg


@settings(deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=shaped_layouts())
def test_random_shaped_and_ranged_layouts_do_not_collide(drawn: tuple[Layout, dict[str, int]]) -> None:
    lay = drawn[0]
    svg = layout_svg(lay)
    assert collisions(svg) == []
    ET.fromstring(svg.encode("utf-8"))


@settings(deadline=None, max_examples=50)
@given(counts=st.lists(st.integers(1, 40), min_size=1, max_size=5))
def test_random_rows_counted_in_d_do_not_collide(counts: list[int]) -> None:
    lay = Layout("Sym", [B], f32, [Field(f"f{i}", shape=[c, "D"]) for i, c in enumerate(counts)])
    svg = layout_svg(lay)
    assert collisions(svg) == []
    shown = " ".join(texts(svg))
    assert all(view.cols in shown for view in lay.fields())


def test_leaders_never_cross_labels() -> None:
    # Five labels a column apart, each wider than the run: a staircase either way.
    items = [(100.0 + 15 * i, 120.0) for i in range(5)]
    for leader in place_leaders(items):
        for other in place_leaders(items):
            if other.lane < leader.lane:  # `leader`'s line passes `other`'s lane
                lo, hi = (other.x - other.width, other.x) if other.leftward else (other.x, other.x + other.width)
                assert not lo <= leader.x <= hi or leader.x == other.x


def test_output_is_deterministic_and_numbers_are_stable() -> None:
    assert layout_svg(layout("Window")) == layout_svg(layout("Window"))
    assert spec_svg(VSN) == spec_svg(VSN)
    assert (num(1.0), num(2.5), num(1 / 3), num(-0.001)) == ("1", "2.5", "0.33", "0")
    assert CHAR_EM >= 0.602  # DejaVu Sans Mono's advance: estimates must not fall short


# -- the diagrams in the docs are current ------------------------------------------------

#: Each diagram in docs/diagrams: the spec it is drawn from and the layout or kernel drawn.
DOC_DIAGRAMS = {
    "vsn-Window.svg": ("examples/vsn/spec.py", "Window"),
    "vsn-variable_selection_fwd.svg": ("examples/vsn/spec.py", "variable_selection_fwd"),
    "vsn-context_broadcast.svg": ("examples/vsn/spec.py", "context_broadcast"),
    "qkv-QKV.svg": ("examples/qkv/spec.py", "QKV"),
    "qkv-rope.svg": ("examples/qkv/spec.py", "rope"),
    "ranges-Obs.svg": ("tests/specs/ranges/spec.py", "Obs"),
    "ranges-scale_rows.svg": ("tests/specs/ranges/spec.py", "scale_rows"),
}
SPECS = {"examples/vsn/spec.py": VSN, "examples/qkv/spec.py": QKV_SPEC, "tests/specs/ranges/spec.py": RANGES}


@pytest.mark.parametrize("file", sorted(DOC_DIAGRAMS))
def test_the_diagrams_in_the_docs_are_current(file: str) -> None:
    spec_path, name = DOC_DIAGRAMS[file]
    spec = SPECS[spec_path]
    target = next((lay for lay in spec.layouts if lay.name == name), None)
    binding = next((b for b in spec.kernels if b.name == name), None)
    expected = layout_svg(target) if target is not None else binding_svg(binding)  # type: ignore[arg-type]
    assert file == f"{spec.name}-{name}.svg"
    assert (DIAGRAMS / file).read_text(encoding="utf-8") == expected, (
        f"docs/diagrams/{file} is stale; run: layoutgen show {spec_path}:{name} --svg docs/diagrams/{file}"
    )


@pytest.mark.parametrize("file", sorted(f for f in DOC_DIAGRAMS if not f.startswith("vsn-")))
def test_the_new_diagrams_in_the_docs_are_well_formed_and_do_not_collide(file: str) -> None:
    svg = (DIAGRAMS / file).read_text(encoding="utf-8")
    ET.fromstring(svg.encode("utf-8"))
    assert collisions(svg) == []


def test_the_docs_embed_the_diagrams() -> None:
    pages = "".join(p.read_text(encoding="utf-8") for p in (REPO / "docs").glob("*.md"))
    for file in DOC_DIAGRAMS:
        assert f"](diagrams/{file})" in pages, file


# -- the command ------------------------------------------------------------------------


def run(*args: str, cwd: Path = REPO) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(before)
    return code, out.getvalue(), err.getvalue()


def test_show_svg_of_a_layout_a_kernel_and_the_whole_spec(tmp_path: Path) -> None:
    for name, check in (("Window", "time_in_trade"), ("variable_selection_fwd", "gates  out")):
        path = tmp_path / f"{name}.svg"
        code, out, err = run("show", f"examples/vsn/spec.py:{name}", "--svg", str(path))
        assert (code, err) == (0, "")
        assert out == f"wrote {path}\n"
        assert check in " ".join(texts(path.read_text(encoding="utf-8")))
    whole = tmp_path / "vsn.svg"
    assert run("show", "examples/vsn/spec.py", "--svg", str(whole))[0] == 0
    shown = " ".join(texts(whole.read_text(encoding="utf-8")))
    assert all(f"kernel {b.name}" in shown for b in VSN.kernels)
    assert all(f"{lay.name} [" in shown for lay in VSN.layouts)


def test_a_program_is_drawn_with_what_each_launch_reads_and_writes(tmp_path: Path) -> None:
    path = tmp_path / "step.svg"
    code, out, err = run("show", "examples/vsn/spec.py:vsn_step", "--svg", str(path))
    assert (code, err, out) == (0, "", f"wrote {path}\n")
    svg = path.read_text(encoding="utf-8")
    shown = texts(svg)
    [step] = VSN.programs
    assert shown[0] == "program vsn_step   7 launches"
    assert all(f"buffer {b.name}  {b.layout.name} [" in " ".join(shown) for b in step.buffers)
    assert [t for t in shown if re.fullmatch(r"\d+\. \w+", t)] == [
        "1. snap_feature_assemble", "2. context_broadcast", "3. variable_selection_fwd", "4. mse_grad",
        "5. zero_grads", "6. variable_selection_bwd", "7. sgd_update"]
    # the first launch: `raw` read whole, `stats.mean` read, `window.snap` written
    assert ["raw  in", "\u2190 raw", "reads all columns"] == shown[shown.index("raw  in"):][:3]
    assert "snap  out" in shown and "\u2190 window.snap" in shown and "writes snap" in shown
    assert '<title>snap writes snap: ' in svg
    assert collisions(svg) == []
    whole = spec_svg(VSN)
    assert "program vsn_step" in " ".join(texts(whole)) and collisions(whole) == []


def test_show_prints_one_kernel_binding() -> None:
    code, out, _ = run("show", "examples/vsn/spec.py:context_broadcast")
    assert code == 0
    assert out.startswith("kernel context_broadcast (context_broadcast.cu.j2), bound at examples/vsn/spec.py:")
    assert "  dst        out   [B, K, C]    <- `Window.context`" in out


def test_png_without_a_converter_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    real = importlib.import_module

    def no_cairosvg(name: str, package: str | None = None) -> object:
        if name == "cairosvg":
            raise ImportError(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", no_cairosvg)
    monkeypatch.setattr(shutil, "which", lambda _: None)
    code, _, err = run("show", "examples/vsn/spec.py:Window", "--png", str(tmp_path / "w.png"))
    assert code == 2
    assert err == ("layoutgen: error: --png needs a converter from SVG: install the `cairosvg` package or "
                   "`rsvg-convert` (librsvg), or write --svg and convert it yourself\n")
    assert not (tmp_path / "w.png").exists()


@pytest.mark.skipif(shutil.which("rsvg-convert") is None, reason="rsvg-convert is not installed")
def test_png_through_rsvg_convert(tmp_path: Path) -> None:
    path = tmp_path / "w.png"
    assert run("show", "examples/vsn/spec.py:Window", "--png", str(path))[0] == 0
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_an_unwritable_svg_path_is_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "no-such-folder" / "w.svg"
    code, out, err = run("show", "examples/vsn/spec.py:Window", "--svg", str(target))
    assert (code, out) == (1, "")
    assert err.startswith(f"layoutgen: error: could not write {target}: ")


def test_an_unknown_name_lists_layouts_and_kernels() -> None:
    code, out, err = run("show", "examples/vsn/spec.py:Nope", "--svg", "unused.svg")
    assert (code, out) == (2, "")
    assert err.startswith("layoutgen: error: spec `vsn` has no layout, kernel or program `Nope` (its layouts: Market, ")
    assert not (REPO / "unused.svg").exists()
