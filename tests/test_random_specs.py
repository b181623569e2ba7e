"""Random specs, from declaration to generated text: nothing a user can declare is an internal error.

Two fuzzers, run by every ``make test``:

- **random bindings**: random layouts (flat, nested, padded, sub-array fields with static or symbolic
  dims, so rows whose width is a product such as ``D*3``), random kernels (shapes of symbols and
  numbers, every grid, shared arrays sized by the kernel's symbols, scalars) and each parameter bound
  to a random view. A declaration may be refused, the checks may report anything; but what is
  refused is a ``LayoutgenError`` with a code and a site in this file, and a spec the checks pass
  renders (C++ whose every symbol is declared from launch arguments, Python that parses).
- **declarations**: every declaration of the public API called with odd arguments (bools for ints,
  floats equal to ints, strings, None, lists, objects): a value, or a ``LayoutgenError`` with a site
  in this file, never another exception.

``LAYOUTGEN_FUZZ_EXAMPLES`` sets the number of cases of each (300 by default).
"""

from __future__ import annotations

import ast
import atexit
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from layoutgen import (Autograd, Axis, Binding, Buffer, Field, Grid, Group, In, InOut, Kernel, Launch, Layout, LayoutgenError, Out,
                       Pad, Program, Scalar, Shared, Spec, Tile, Value, View, ceil_div, dims, field_copies)
from layoutgen.checks import check_spec
from layoutgen.codegen.render import render_spec
from layoutgen.declare.unify import unify
from layoutgen.schema.diagnostics import Severity

EXAMPLES = int(os.environ.get("LAYOUTGEN_FUZZ_EXAMPLES", "300"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

SYMBOLS = ["B", "K", "F", "D", "H"]
NAMES = ["snap", "ctx", "q", "k", "v", "gate", "w", "bias", "lots", "regime"]
DTYPES = ["f32", "f16", "i32", "f64", "u8"]


def _refused_here(err: LayoutgenError) -> None:
    """A refusal is a user's error: a code and a site in this file (the user's line), never layoutgen's."""
    assert re.fullmatch(r"LG\d{3}", err.code), err
    assert err.site is not None and err.site.path == __file__, f"{err}: site {err.site}"


# -- random bindings --------------------------------------------------------------------------------


@st.composite
def entries(draw: st.DrawFn, names: Any, symbolic: str | None, depth: int = 0) -> list[Any]:
    """A record: flat fields, static sub-arrays, padding and groups; in a row counted in ``symbolic``, mostly
    sub-array fields ``[c, symbolic]`` (what else is drawn there is LG112, refused at its line)."""
    out: list[Any] = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["flat", "shaped", "pad"] + (["group"] if depth < 2 else [])
        if symbolic is not None:  # mostly fields counted in the symbol; one of another kind is LG112
            kinds = ["symbolic"] * 12 + ["group"] * (depth < 2) * 2 + kinds
        kind = draw(st.sampled_from(kinds))
        if kind == "symbolic":
            out.append(Field(next(names), shape=[draw(st.integers(1, 4)), symbolic]))
        elif kind == "flat":
            out.append(Field(next(names), draw(st.integers(1, 9))))
        elif kind == "shaped":
            out.append(Field(next(names), shape=draw(st.lists(st.integers(1, 4), min_size=1, max_size=2))))
        elif kind == "pad":
            out.append(Pad(draw(st.integers(1, 3))))
        else:
            out.append(Group(next(names), draw(entries(names, symbolic, depth + 1))))
    return out


@st.composite
def layouts(draw: st.DrawFn, n: int) -> Layout:
    names = iter([*draw(st.permutations(NAMES)), *(f"n{i}" for i in range(40))])
    symbolic = draw(st.sampled_from([None, None, "D", "H"]))
    leading: list[Any] = draw(st.lists(st.sampled_from(["B", "K", 1, 2, 3]), max_size=3))
    leading = [d for i, d in enumerate(leading) if d not in leading[:i] or isinstance(d, int)]
    if draw(st.integers(0, 5)) == 0:  # a named axis of ranges, before static dims only
        leading = [Axis([Field(f"r{i}", draw(st.integers(1, 3))) for i in range(draw(st.integers(1, 2)))]),
                   *draw(st.lists(st.integers(1, 3), max_size=1))]
    dtype = draw(st.sampled_from(DTYPES))
    return Layout(f"L{n}", leading, dtype, draw(entries(names, symbolic)))


def _views(layout: Layout) -> list[View]:
    out, todo = [layout.view], [layout.view]
    while todo:
        children = todo.pop().fields()
        out += children
        todo += children
    return out


def _fitting_dim(draw: st.DrawFn, d: Any, sloppy: bool) -> Any:
    """A kernel dim for a view's dim ``d``: one that fits (its number, a symbol, the layout's own symbol), or,
    ``sloppy``, maybe not; a product such as ``D*3`` (the width of a row of symbolic fields) gets a symbol."""
    if d.size is not None:
        return draw(st.sampled_from([d.size, d.size, "F", "C", *([d.size + 1] if sloppy else [])]))
    if d.is_derived:
        return draw(st.sampled_from(["F", "F", "C", *([3] if sloppy else [])]))
    return draw(st.sampled_from([str(d.name), str(d.name), "F", "C"]))


@st.composite
def kernels(draw: st.DrawFn, template_root: Path, views: list[View]) -> tuple[Kernel, dict[str, View]]:
    """A kernel and the views its arrays are bound to: shapes mostly drawn to fit them (else the checks would
    refuse nearly every binding and nothing would be generated), dtypes, vectors and contiguity at random."""
    params: list[Any] = []
    bound: dict[str, View] = {}
    sloppy = draw(st.integers(0, 3)) == 0  # a quarter of the kernels are written carelessly
    for i in range(draw(st.integers(1, 3))):
        view = draw(st.sampled_from(views))
        if not sloppy or draw(st.booleans()):
            shape = [_fitting_dim(draw, d, sloppy) for d in view.shape]
        else:
            shape = draw(st.lists(st.sampled_from([*SYMBOLS, 1, 2, 3, 4]), min_size=1, max_size=4))
        make = draw(st.sampled_from([In, Out, InOut]))
        params.append(make(f"p{i}", shape, contiguous=draw(st.sampled_from([False, False, True])),
                           vector=draw(st.sampled_from([None, None, None, 4, 16] if sloppy else [None])),
                           dtype=draw(st.sampled_from([None, str(view.dtype), *(DTYPES if sloppy else [])]))))
        bound[f"p{i}"] = view
    if draw(st.booleans()):
        params.insert(draw(st.integers(0, len(params))), Scalar("alpha", draw(st.sampled_from(["f32", "i32"]))))
    symbols = sorted({str(d.name) for p in params if not isinstance(p, Scalar) for d in p.shape if d.size is None})
    first = next(p.name for p in params if not isinstance(p, Scalar))
    grid = draw(st.sampled_from([
        None, Grid.rows(first), Grid.elements(first), Grid.vectors(first), Grid.tiles(first, 4, 64),
        Grid.warps(first, 2, 64), Grid.persistent(first, 8, 64), Grid.persistent_warps(first, 4, 64),
        *([Grid.general(blocks=ceil_div(symbols[:2], 4))] if symbols else [Grid.general(blocks=2)]),
    ]))
    shared = [Shared("sw", "f32", draw(st.lists(st.sampled_from([*symbols, 2, 8]), min_size=1, max_size=2)))
              ] if draw(st.booleans()) else []
    if grid is not None and grid.per in ("tile", "persistent") and draw(st.booleans()):
        shared.append(Tile("xs", first))
    kernel = Kernel("fz", "k.cu.j2", params, grid=grid, shared=shared, template_root=template_root)
    return kernel, bound


@pytest.fixture(scope="module")
def template_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "k.cu.j2").write_text("// the body does nothing: the fuzz is of what is generated around it\n")
    return root


def _symbols_declared(kernel: Kernel, kernel_cu: str) -> None:
    """Every kernel symbol the body sees is a C++ declaration of launch values, never a product as a name."""
    symbols = {str(d.name) for p in kernel.params for d in p.shape if d.size is None}
    for line in kernel_cu.splitlines():
        m = re.fullmatch(r"\s*\[\[maybe_unused\]\] const long long (\w+) = (.*);", line)
        if m and m[1] in symbols:
            assert re.fullmatch(r"(\(long long\))?lg_dim_\w+( \* (lg_dim_\w+|\d+LL))*", m[2]), line


@SETTINGS
@given(data=st.data())
def test_random_bindings_are_refused_with_a_site_or_generate(template_root: Path, data: st.DataObject) -> None:
    try:
        spec_layouts = [data.draw(layouts(n)) for n in range(data.draw(st.integers(1, 2)))]
        views = [v for lay in spec_layouts for v in _views(lay)]
        kernel, bound = data.draw(kernels(template_root, views))
        spec = Spec("fz", layouts=spec_layouts, kernels=[kernel.bind(**bound)])
    except LayoutgenError as err:
        _refused_here(err)
        event(f"declared: {err.code}")
        return
    diagnostics = check_spec(spec)
    for d in diagnostics:
        assert d.site is not None, str(d)
    if any(d.severity is Severity.ERROR for d in diagnostics):
        event(f"checked: {sorted({d.code for d in diagnostics})}")
        return
    event("rendered" + (", a symbol of a product" if any(d.is_derived for _, d in unify(spec.kernels[0]).values)
                        else ""))
    rendered = render_spec(spec, template_root, "spec.py")
    assert rendered.diagnostics == (), [str(d) for d in rendered.diagnostics]
    ast.parse(rendered.files["fz/__init__.py"])
    _symbols_declared(kernel, rendered.files["fz/fz.cu"])


def test_a_kernel_symbol_bound_to_a_row_counted_in_a_symbol_is_the_product_of_launch_values(
        template_root: Path) -> None:
    """`F` bound to rows of `q [2, D]` and `k [1, D]` is `D*3` at launch: C++ multiplies `lg_dim_D` by 3."""
    b, d, f = dims("B D F")
    qkv = Layout("QKV", [b], "f32", [Field("q", shape=[2, d]), Field("k", shape=[1, d])])
    kernel = Kernel("fz", "k.cu.j2", [In("x", [b, f]), Out("y", [b, f])], shared=[Shared("sw", "f32", [f])],
                    template_root=template_root)
    spec = Spec("fz", layouts=[qkv], kernels=[kernel.bind(x=qkv, y=qkv)])
    assert check_spec(spec) == []
    cu = render_spec(spec, template_root, "spec.py").files["fz/fz.cu"]
    assert "    [[maybe_unused]] const long long F = (long long)lg_dim_D * 3LL;\n" in cu
    assert "    [[maybe_unused]] const long long B = lg_dim_B;\n" in cu


# -- declarations with odd arguments ------------------------------------------------------------------

ODD_VALUES: list[Any] = [
    True, False, 0, -1, 1, 16, 16.0, 2.5, 1e9, 2**31, 2**63, float("nan"), float("inf"), np.int64(16), np.float32(4),
    np.bool_(True), None, "", "x", "a", "B", "f32", "16", "a b", "lg_x", [], [1], ["B"], [None], (2, "D"), {}, {"x": 1},
    set(), object(), b"x", Ellipsis, print,
]
B, D = dims("B D")
Q = Layout("Q", [B], "f32", [Field("a", 4), Field("b", 4)])
ODD_VALUES += [B, Q, Q.a, Field("c", 1), Grid.rows("x"), In("x", [B])]
ODD = st.sampled_from(ODD_VALUES)


#: The declarations' template: a kernel declared with odd arguments and accepted is generated too.
TEMPLATES = Path(tempfile.mkdtemp(prefix="layoutgen-fuzz-"))
(TEMPLATES / "k.cu.j2").write_text("// nothing\n")
atexit.register(shutil.rmtree, TEMPLATES, True)
ROWS = Layout("Rows", [B], "f32", width=4)


def _kernel(**changes: Any) -> Kernel:
    params = changes.pop("params", [In("x", [B, 4]), Out("y", [B, 4])])
    return Kernel("k", "k.cu.j2", params, **{"template_root": TEMPLATES, **changes})


def _with_y(param: Any) -> Kernel:
    """A parameter declared with an odd argument, in a kernel beside another."""
    return _kernel(params=[param, Out("y" if getattr(param, "name", "") != "y" else "z", [B, 4])])


def _generated(declared: object) -> None:
    """What an accepted declaration leads to: a kernel bound to rows of 4, checked, and where the checks pass,
    generated; a refusal on the way is the user's, with a site here."""
    if isinstance(declared, Kernel):
        declared = declared.bind(**{p.name: ROWS for p in declared.params})
    if isinstance(declared, Binding):
        declared = Spec("fz", kernels=[declared])
    if isinstance(declared, Spec) and declared.kernels:
        if any(d.severity is Severity.ERROR for d in check_spec(declared)):
            return
        rendered = render_spec(declared, TEMPLATES, "spec.py")  # a template not found is LG402, at the kernel
        assert all(d.site is not None and d.site.path == __file__ for d in rendered.diagnostics), rendered


#: Each declaration with one argument replaced by an odd value.
DECLARATIONS: dict[str, Callable[[Any], object]] = {
    "Field.width": lambda v: Layout("L", [B], "f32", [Field("a", v)]),
    "Field.shape": lambda v: Layout("L", [B], "f32", [Field("a", shape=v)]),
    "Field.shape[1]": lambda v: Layout("L", [B], "f32", [Field("a", shape=[2, v])]),
    "Field.name": lambda v: Layout("L", [B], "f32", [Field(v, 4)]),
    "Field.cols": lambda v: Layout("L", [B], "f32", [Field("a", cols=v)]),
    "Field.cols[0]": lambda v: Layout("L", [B], "f32", [Field("a", cols=(v, 4))]),
    "Field.doc": lambda v: Layout("L", [B], "f32", [Field("a", 4, doc=v)]),
    "Pad": lambda v: Layout("L", [B], "f32", [Field("a", 1), Pad(v)]),
    "Pad.cols": lambda v: Layout("L", [B], "f32", [Field("a", 1), Pad(cols=v)]),
    "Group.name": lambda v: Layout("L", [B], "f32", [Group(v, [Field("a", 1)])]),
    "Group.entries": lambda v: Layout("L", [B], "f32", [Group("g", v)]),
    "Group.width": lambda v: Layout("L", [B], "f32", [Group("g", [Field("a", 1)], width=v)]),
    "Layout.entry": lambda v: Layout("L", [B], "f32", [v]),
    "Axis.size": lambda v: Layout("L", [Axis([Field("r", 1)], size=v), 2], "f32", width=4),
    "view[]": lambda v: Q[v],
    "Layout.name": lambda v: Layout(v, [B], "f32", width=4),
    "Layout.dims": lambda v: Layout("L", v, "f32", width=4),
    "Layout.dims[0]": lambda v: Layout("L", [v], "f32", width=4),
    "Layout.dtype": lambda v: Layout("L", [B], v, width=4),
    "Layout.width": lambda v: Layout("L", [B], "f32", width=v),
    "Layout.fields": lambda v: Layout("L", [B], "f32", v),
    "Layout.read_only": lambda v: Layout("L", [B], "f32", width=4, read_only=v),
    "Layout.doc": lambda v: Layout("L", [B], "f32", width=4, doc=v),
    "Axis": lambda v: Layout("L", [Axis(v)], "f32", width=4),
    "dims": lambda v: dims(v),
    "In.name": lambda v: _with_y(In(v, [B, 4])),
    "In.shape": lambda v: _with_y(In("x", v)),
    "In.shape[0]": lambda v: _with_y(In("x", [v, 4])),
    "In.contiguous": lambda v: _with_y(In("x", [B, 4], contiguous=v)),
    "In.vector": lambda v: _with_y(In("x", [B, 4], vector=v)),
    "Out.dtype": lambda v: _with_y(Out("x", [B, 4], dtype=v)),
    "Scalar.name": lambda v: _with_y(Scalar(v, "f32")),
    "Scalar.dtype": lambda v: _with_y(Scalar("s", v)),
    "Scalar.finite": lambda v: _with_y(Scalar("s", "f32", finite=v)),
    "Grid.rows.param": lambda v: _kernel(grid=Grid.rows(v)),
    "Grid.rows.block": lambda v: _kernel(grid=Grid.rows("x", v)),
    "Grid.elements.block": lambda v: _kernel(grid=Grid.elements("x", v)),
    "Grid.vectors.block": lambda v: _kernel(grid=Grid.vectors("x", v)),
    "Grid.tiles.rows": lambda v: _kernel(grid=Grid.tiles("x", v)),
    "Grid.tiles.block": lambda v: _kernel(grid=Grid.tiles("x", 4, v)),
    "Grid.warps.rows": lambda v: _kernel(grid=Grid.warps("x", v)),
    "Grid.warps.block": lambda v: _kernel(grid=Grid.warps("x", 1, v)),
    "Grid.persistent.blocks_per_sm": lambda v: _kernel(grid=Grid.persistent("x", blocks_per_sm=v)),
    "Grid.persistent_warps.rows": lambda v: _kernel(grid=Grid.persistent_warps("x", v)),
    "Grid.general.blocks": lambda v: _kernel(grid=Grid.general(blocks=v)),
    "Grid.general.threads": lambda v: _kernel(grid=Grid.general(threads=v)),
    "Grid.general.block": lambda v: _kernel(grid=Grid.general(blocks=[B], block=v)),
    "ceil_div.count": lambda v: ceil_div(v, 4),
    "ceil_div.divisor": lambda v: ceil_div([B], v),
    "Shared.name": lambda v: _kernel(shared=[Shared(v, "f32", [4])]),
    "Shared.dtype": lambda v: _kernel(shared=[Shared("s", v, [4])]),
    "Shared.shape": lambda v: _kernel(shared=[Shared("s", "f32", v)]),
    "Tile.param": lambda v: _kernel(grid=Grid.tiles("x", 4), shared=[Tile("t", v)]),
    "Tile.rows": lambda v: _kernel(grid=Grid.tiles("x", 4), shared=[Tile("t", "x", v)]),
    "Tile.scope": lambda v: _kernel(grid=Grid.tiles("x", 4), shared=[Tile("t", "x", scope=v)]),
    "Tile.stages": lambda v: _kernel(grid=Grid.tiles("x", 4), shared=[Tile("t", "x", stages=v)]),
    "Kernel.name": lambda v: Kernel(v, "k.cu.j2", [In("x", [B])]),
    "Kernel.template": lambda v: Kernel("k", v, [In("x", [B])]),
    "Kernel.params": lambda v: Kernel("k", "k.cu.j2", v),
    "Kernel.params[0]": lambda v: Kernel("k", "k.cu.j2", [v]),
    "Kernel.grid": lambda v: _kernel(grid=v),
    "Kernel.shared": lambda v: _kernel(shared=v),
    "Kernel.doc": lambda v: _kernel(doc=v),
    "Kernel.template_root": lambda v: _kernel(template_root=v),
    "bind.name": lambda v: _kernel().bind(name=v, x=Q, y=Q),
    "bind.view": lambda v: _kernel().bind(x=v, y=Q),
    "Buffer.name": lambda v: Buffer(v, Q),
    "Buffer.layout": lambda v: Buffer("q", v),
    "Value.name": lambda v: Value(v, "f32"),
    "Value.dtype": lambda v: Value("lr", v),
    "Launch.binding": lambda v: Launch(v),
    "Launch.argument": lambda v: Launch(_kernel().bind(x=Q, y=Q), x=v, y=Buffer("q", Q)),
    "Launch.name": lambda v: Launch(_kernel().bind(x=Q, y=Q), x=Buffer("q", Q), y=Buffer("r", Q), name=v),
    "Program.name": lambda v: Program(v, []),
    "Program.launches": lambda v: Program("p", v),
    "Spec.name": lambda v: Spec(v),
    "Spec.kernels": lambda v: Spec("s", kernels=v),
    "Spec.layouts": lambda v: Spec("s", layouts=v),
    "Spec.programs": lambda v: Spec("s", programs=v),
    "Spec.torch": lambda v: Spec("s", torch=v),
    "Spec.facts": lambda v: Spec("s", facts=v),
    "Spec.autograd": lambda v: Spec("s", torch=True, autograd=v),
    "Buffer.input": lambda v: Buffer("q", Q, input=v),
    "Launch.overwrites": lambda v: Launch(_kernel().bind(x=Q, y=Q), x=Buffer("q", Q), y=Buffer("r", Q), overwrites=v),
    "Launch.scalar": lambda v: Launch(_kernel(params=[In("x", [B, 4]), Scalar("s", "f32"), Out("y", [B, 4])]).bind(
        x=Q, y=Q), x=Buffer("q", Q), y=Buffer("r", Q), s=v),
    "Program.doc": lambda v: Program("p", [], doc=v),
    "Autograd.forward": lambda v: Autograd(v, _kernel().bind(name="b", x=Q, y=Q), grads={}),
    "Autograd.saves": lambda v: Autograd(_kernel().bind(x=Q, y=Q), _kernel().bind(name="b", x=Q, y=Q), saves=v,
                                         grads={}),
    "Autograd.grads": lambda v: Autograd(_kernel().bind(x=Q, y=Q), _kernel().bind(name="b", x=Q, y=Q), grads=v),
    "field_copies.view": lambda v: field_copies(v),
    "field_copies.packed": lambda v: field_copies(Q.a, v),
    "field_copies.name": lambda v: field_copies(Q.a, name=v),
}


@SETTINGS
@given(which=st.sampled_from(sorted(DECLARATIONS)), value=ODD)
def test_any_declaration_with_odd_arguments_is_a_value_or_refused_at_its_line(which: str, value: Any) -> None:
    try:
        _generated(DECLARATIONS[which](value))
    except LayoutgenError as err:
        _refused_here(err)


def test_every_declaration_with_every_odd_argument_is_a_value_or_refused_at_its_line() -> None:
    """The same, every pair (a few thousand, about a second): a failure lists each pair that failed."""
    failures = []
    for which, declare in sorted(DECLARATIONS.items()):
        for value in ODD_VALUES:
            try:
                _generated(declare(value))
            except LayoutgenError as err:
                if err.site is None or err.site.path != __file__:
                    failures.append(f"{which}({value!r}): {err} (site {err.site})")
            except Exception as exc:  # noqa: BLE001 - the point: any other exception is layoutgen's bug
                failures.append(f"{which}({value!r}): {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)
