"""Generation-time binding checks, LG201-LG206 and LG209, with their exact wording.

Each diagnostic names the kernel and parameter, the expected and actual
values, the view with its layout and columns, and the line of the binding
(this file, at the line marked ``# site: <marker>``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from layoutgen import Field, Group, Layout, Pad, Site, dims, f16, f32
from layoutgen.checks import check_binding, check_spec, describe_view
from layoutgen.declare.kernels import In, InOut, Kernel, Out
from layoutgen.schema.diagnostics import Diagnostic
from layoutgen.declare.spec import Spec
from layoutgen.declare.unify import unify

REPO = Path(__file__).resolve().parent.parent

B, K, F, C = dims("B K F C")

Window = Layout("Window", [B, K], f32, [
    Field("snap", 40),
    Group("context", [Field("trade", 3), Pad(1), Field("regime", 12)]),
], width=56)
Features = Layout("Features", [B, K], f32, width=40)
Weights = Layout("Weights", [40], f32, width=40)
Half = Layout("Half", [B, K], f16, width=40)
Frozen = Layout("Frozen", [B, K], f32, width=40, read_only=True)
PerSeries = Layout("PerSeries", [B], f32, width=40)
Odd = Layout("Odd", [B], f32, [Field("flag", 1), Field("v", 40)])  # 164-byte rows, v at byte 4

# The motivating bug: a kernel written for packed 40-wide rows (`x[row * 40 + f]`).
vsn_contiguous = Kernel("variable_selection_fwd", "vsn.cu.j2", [
    In("x", [B, K, F], contiguous=True),
    In("W", [F, F]),
    Out("y", [B, K, F]),
])
# The same kernel reading its input through the view: fine on Window.snap.
vsn = Kernel("variable_selection_fwd", "vsn.cu.j2", [
    In("x", [B, K, F]),
    In("W", [F, F]),
    Out("y", [B, K, F]),
])
copy = Kernel("copy", "copy.cu.j2", [In("src", [B, K, F]), Out("dst", [B, K, F])])

SiteOf = Callable[[str], Site]


def codes(diags: list[Diagnostic]) -> list[str]:
    return [d.code for d in diags]


def only(diags: list[Diagnostic], code: str) -> Diagnostic:
    assert codes(diags) == [code], [str(d) for d in diags]
    return diags[0]


# -- clean bindings ---------------------------------------------------------------


def test_a_plain_parameter_bound_to_the_strided_field_is_clean() -> None:
    b = vsn.bind(x=Window.snap, W=Weights, y=Features)
    assert check_binding(b) == []
    unified = unify(b)
    assert unified.static == {"F": 40}
    assert unified.symbolic == {"B": "B", "K": "K"}
    assert b.view("x").row_stride == 56 and b.view("x").offset == 0


def test_contiguous_is_satisfied_by_a_packed_layout() -> None:
    assert check_binding(vsn_contiguous.bind(x=Features, W=Weights, y=Features)) == []


def test_describe_view_names_the_layout_shape_dtype_and_columns() -> None:
    assert describe_view(Window.snap) == "`Window.snap` (`Window` [B, K, 56] f32, columns 0..40)"
    assert describe_view(Features.view) == "`Features` (`Features` [B, K, 40] f32, all columns)"
    assert describe_view(Window["context.regime"]) == (
        "`Window.context.regime` (`Window` [B, K, 56] f32, columns 44..56)"
    )


# -- LG201: contiguous rows required, the view is strided ---------------------------


def test_lg201_the_motivating_bug(site_of: SiteOf) -> None:
    b = vsn_contiguous.bind(x=Window.snap, W=Weights, y=Features)  # site: seed bug
    d = only(check_binding(b), "LG201")
    assert d.message == (
        "`variable_selection_fwd.x` needs contiguous rows (stride 40) but is bound to `Window.snap`, "
        "row stride 56 (`Window` [B, K, 56], `snap` = columns 0..40)"
    )
    assert d.hint == (
        "drop contiguous=True and index through the view's accessors to read the strided rows, "
        "or copy the field out first"
    )
    assert d.site == site_of("seed bug")
    assert str(d).startswith(f"{site_of('seed bug')}: error[LG201]: ")


def test_lg201_names_a_nested_field_by_its_path() -> None:
    k = Kernel("k", "k.cu.j2", [In("x", [B, K, 12], contiguous=True)])
    d = only(check_binding(k.bind(x=Window["context.regime"])), "LG201")
    assert d.message == (
        "`k.x` needs contiguous rows (stride 12) but is bound to `Window.context.regime`, row stride 56 "
        "(`Window` [B, K, 56], `context.regime` = columns 44..56)"
    )


def test_lg201_the_seed_bug_example_reports_stride_56_and_40_at_the_bind_line() -> None:
    seed = REPO / "examples" / "vsn" / "seed_bug.py"
    lines = seed.read_text().splitlines()
    bind_line = next(n for n, text in enumerate(lines, 1) if "variable_selection_fwd.bind(" in text)
    run = subprocess.run(
        [sys.executable, "-m", "layoutgen", "check", "examples/vsn/seed_bug.py"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith(
        f"examples/vsn/seed_bug.py:{bind_line}: error[LG201]: `variable_selection_fwd.x` needs contiguous rows "
        "(stride 40) but is bound to `Window.snap`, row stride 56 (`Window` [B, K, 56], `snap` = columns 0..40)\n"
        "  hint: drop contiguous=True"
    ), run.stdout
    assert "Found 1 error in 1 spec." in run.stdout


# -- LG202: a symbol takes two values; a static dim does not match ------------------


def test_lg202_symbol_conflict_40_vs_56(site_of: SiteOf) -> None:
    b = copy.bind(src=Window.snap, dst=Window)  # site: conflict
    d = only(check_binding(b), "LG202")
    assert d.message == (
        "`copy.dst` axis 2 is `F` = 56 from `Window` (`Window` [B, K, 56] f32, all columns), "
        "but `F` = 40 from `copy.src` axis 2, bound to `Window.snap` (`Window` [B, K, 56] f32, columns 0..40)"
    )
    assert d.hint == "every use of `F` must have one value; bind views that agree, or give `dst` its own symbol"
    assert d.site == site_of("conflict")


def test_lg202_static_dim_mismatch(site_of: SiteOf) -> None:
    k = Kernel("k40", "k.cu.j2", [In("x", [B, K, 40])])
    b = k.bind(x=Window.context)  # site: static
    d = only(check_binding(b), "LG202")
    assert d.message == (
        "`k40.x` axis 2 must be 40 but is bound to `Window.context` (`Window` [B, K, 56] f32, columns 40..56), "
        "where it is 16"
    )
    assert d.hint == "bind a view whose axis 2 is 40, or declare the axis with a symbol"
    assert d.site == site_of("static")


def test_lg202_a_symbol_on_a_leading_axis_must_agree_with_a_static_dim() -> None:
    # `F` is 40 from Weights' leading dim; PerSeries' leading dim is the symbol B.
    d = only(check_binding(vsn.bind(x=Features, W=PerSeries, y=Features)), "LG202")
    assert d.message == (
        "`variable_selection_fwd.W` axis 0 is `F` = B from `PerSeries` (`PerSeries` [B, 40] f32, all columns), "
        "but `F` = 40 from `variable_selection_fwd.x` axis 2, bound to `Features` (`Features` [B, K, 40] f32, "
        "all columns)"
    )


# -- LG203: dtype -----------------------------------------------------------------


def test_lg203_dtype_mismatch(site_of: SiteOf) -> None:
    k = Kernel("k32", "k.cu.j2", [In("x", [B, K, F], dtype="f32"), Out("y", [B, K, F])])
    b = k.bind(x=Half, y=Features)  # site: dtype
    d = only(check_binding(b), "LG203")
    assert d.message == "`k32.x` is written for f32 but is bound to `Half` (`Half` [B, K, 40] f16, all columns)"
    assert d.hint == "bind an f32 view, or declare `x` with dtype=f16"
    assert d.site == site_of("dtype")
    assert check_binding(k.bind(x=Features, y=Half)) == []  # no dtype declared on y: any dtype


# -- LG204: vector width vs the view's byte alignment ---------------------------------


def test_lg204_vector_wider_than_the_alignment(site_of: SiteOf) -> None:
    k = Kernel("kvec", "k.cu.j2", [In("x", [B, F], vector=16)])
    b = k.bind(x=Odd.v)  # site: vector
    d = only(check_binding(b), "LG204")
    assert d.message == (
        "`kvec.x` makes 16-byte vector accesses but `Odd.v` (`Odd` [B, 41] f32, columns 1..41) starts at "
        "byte 4 of 164-byte rows and is 160 bytes wide: aligned for 4-byte accesses at most"
    )
    assert d.hint == (
        "declare vector=4 or less, or pad the layout so the field starts and ends on a 16-byte boundary"
    )
    assert d.site == site_of("vector")


def test_lg204_allows_what_the_alignment_allows() -> None:
    k16 = Kernel("k16", "k.cu.j2", [In("x", [B, K, F], vector=16)])
    assert Window.snap.vector_bytes == 16  # byte 0 of 224-byte rows, 160 bytes wide
    assert check_binding(k16.bind(x=Window.snap)) == []
    k4 = Kernel("k4", "k.cu.j2", [In("x", [B, F], vector=4)])
    assert check_binding(k4.bind(x=Odd.v)) == []
    k8 = Kernel("k8", "k.cu.j2", [In("x", [B, K, 3], vector=8)])
    assert codes(check_binding(k8.bind(x=Window["context.trade"]))) == ["LG204"]  # 12 bytes wide


# -- LG205: written but read-only -------------------------------------------------------


def test_lg205_out_bound_to_a_read_only_layout(site_of: SiteOf) -> None:
    b = copy.bind(src=Features, dst=Frozen)  # site: read-only layout
    d = only(check_binding(b), "LG205")
    assert d.message == (
        "`copy.dst` is written by the kernel (out) but is bound to read-only `Frozen` "
        "(`Frozen` [B, K, 40] f32, all columns)"
    )
    assert d.hint == "bind a writable view, or declare `dst` as In"
    assert d.site == site_of("read-only layout")


def test_lg205_inout_bound_to_a_read_only_view() -> None:
    k = Kernel("acc", "k.cu.j2", [InOut("x", [B, K, F])])
    d = only(check_binding(k.bind(x=Window.snap.as_read_only())), "LG205")
    assert d.message == (
        "`acc.x` is written by the kernel (inout) but is bound to read-only `Window.snap` "
        "(`Window` [B, K, 56] f32, columns 0..40)"
    )
    assert check_binding(copy.bind(src=Frozen, dst=Features)) == []  # reading it is fine
    assert check_binding(k.bind(x=Window.snap)) == []  # as_read_only returned a new view


# -- LG206: rank -------------------------------------------------------------------------


def test_lg206_rank_mismatch(site_of: SiteOf) -> None:
    b = copy.bind(src=PerSeries, dst=Features)  # site: rank
    d = only(check_binding(b), "LG206")
    assert d.message == (
        "`copy.src` has rank 3 [B, K, F] but is bound to `PerSeries` (`PerSeries` [B, 40] f32, all columns), "
        "of rank 2 [B, 40]"
    )
    assert d.hint == "bind a view with as many axes as the parameter declares"
    assert d.site == site_of("rank")


# -- LG209 and check_spec ------------------------------------------------------------------


def test_lg209_two_bindings_generate_the_same_kernel(site_of: SiteOf) -> None:
    first = copy.bind(src=Features, dst=Features)  # site: first
    second = copy.bind(src=Window.snap, dst=Features)  # site: second
    spec = Spec("dup", kernels=[first, second])
    d = only(check_spec(spec), "LG209")
    assert d.message == f"spec `dup` generates kernel `copy` twice (first bound at {site_of('first')})"
    assert d.hint == 'name each binding: copy.bind(name="...", ...)'
    assert d.site == site_of("second")
    named = Spec("ok", kernels=[first, copy.bind(name="copy_snap", src=Window.snap, dst=Features)])
    assert check_spec(named) == []


def test_check_spec_reports_every_problem_at_once_in_binding_order() -> None:
    spec = Spec("many", kernels=[
        vsn_contiguous.bind(x=Window.snap, W=Weights, y=Features),
        copy.bind(name="c1", src=Window.snap, dst=Window),
        copy.bind(name="c2", src=PerSeries, dst=Frozen),
    ])
    assert codes(check_spec(spec)) == ["LG201", "LG202", "LG206", "LG205"]


def test_every_binding_message_names_kernel_param_and_view() -> None:
    bad = [
        vsn_contiguous.bind(x=Window.snap, W=Weights, y=Features),
        copy.bind(src=Window.snap, dst=Window),
        copy.bind(src=Features, dst=Frozen),
        copy.bind(src=PerSeries, dst=Features),
    ]
    for b in bad:
        for d in check_binding(b):
            assert re.search(r"`(variable_selection_fwd|copy)\.\w+`", d.message), d.message
            assert d.site is not None and d.site.path == __file__
            assert d.hint
