"""Kernel declarations and bindings: LG207 (bad binding) and LG208 (malformed kernel).

Every error carries its code, an exact message, and the site of the user's
declaration: this file, at the line marked ``# site: <marker>`` (see
``conftest.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from layoutgen import Field, Layout, LayoutError, LayoutgenError, Site, dims, f16, f32
from layoutgen.declare.kernels import Binding, Grid, In, InOut, Kernel, KernelError, Out
from layoutgen.declare.spec import Spec

B, K, F, C = dims("B K F C")

Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)], width=56)
Features = Layout("Features", [B, K], f32, width=40)

vsn = Kernel("vsn", "vsn.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])])

SiteOf = Callable[[str], Site]


def raises(call: Callable[[], object]) -> LayoutgenError:
    with pytest.raises(LayoutgenError) as info:
        call()
    return info.value


# -- well-formed declarations ---------------------------------------------------


def test_a_kernel_records_its_params_grid_template_and_site(site_of: SiteOf) -> None:
    k = Kernel("k", "sub/k.cu.j2", [  # site: kernel
        In("x", [B, K, F], contiguous=True, vector=16, dtype="f32"),  # site: param x
        Out("y", [B, K, 40]),
        InOut("acc", [F]),
    ], grid=Grid.elements("y", block=64), doc="a doc")
    assert k.site == site_of("kernel")
    assert [p.name for p in k.params] == ["x", "y", "acc"]
    assert [(p.access, p.reads, p.writes) for p in k.params] == [
        ("in", True, False), ("out", False, True), ("inout", True, True)
    ]
    x = k.param("x")
    assert (x.contiguous, x.vector, x.dtype) == (True, 16, f32)
    assert x.site == site_of("param x")
    assert [str(d) for d in k.param("y").shape] == ["B", "K", "40"]
    assert k.grid == Grid("y", "element", 64)
    assert k.template_path == Path(__file__).resolve().parent / "sub" / "k.cu.j2"
    assert k.doc == "a doc"


def test_the_grid_defaults_to_one_thread_per_row_of_the_first_param() -> None:
    assert vsn.grid == Grid("x", "row", 128)
    assert Grid.rows("y") == Grid("y", "row", 128)
    assert Grid.elements("y") == Grid("y", "element", 256)


def test_binding_ties_every_param_to_a_view_in_param_order(site_of: SiteOf) -> None:
    b = vsn.bind(y=Features, x=Window.snap)  # site: bind
    assert isinstance(b, Binding)
    assert b.site == site_of("bind")
    assert b.name == "vsn"
    assert [(n, v.name) for n, v in b.views] == [("x", "Window.snap"), ("y", "Features")]
    assert b.view("x").row_stride == 56
    assert [(p.name, v.name) for p, v in b.pairs] == [("x", "Window.snap"), ("y", "Features")]
    assert b.views_by_param()["y"].is_whole  # a whole layout binds as its view
    assert repr(b) == "<Binding vsn of vsn>" and repr(vsn) == "<Kernel vsn>"


def test_a_kernel_bound_twice_gets_a_name_per_binding() -> None:
    a = vsn.bind(name="vsn_window", x=Window.snap, y=Features)
    b = vsn.bind(name="vsn_features", x=Features, y=Features)
    assert (a.name, b.name) == ("vsn_window", "vsn_features")
    assert a.kernel is b.kernel is vsn


# -- LG207: a binding names an unknown parameter or leaves one unbound ----------


def test_lg207_unknown_parameter(site_of: SiteOf) -> None:
    err = raises(lambda: vsn.bind(x=Window.snap, y=Features, z=Features))  # site: unknown
    assert isinstance(err, KernelError)
    assert err.code == "LG207"
    assert err.site == site_of("unknown")
    assert err.diagnostic.message == "`vsn` has no parameter `z` (its parameters: `x`, `y`)"


def test_lg207_missing_parameters(site_of: SiteOf) -> None:
    err = raises(lambda: vsn.bind(x=Window.snap))  # site: missing
    assert err.code == "LG207"
    assert err.site == site_of("missing")
    assert err.diagnostic.message == "`vsn` is bound without `y`"
    assert err.hint == "bind every parameter: x=..., y=..."


def test_lg207_several_missing_parameters_are_named_in_order() -> None:
    k = Kernel("k3", "k.cu.j2", [In("a", [B]), In("b", [B]), Out("c", [B])])
    err = raises(lambda: k.bind(b=Features))
    assert err.code == "LG207"
    assert err.diagnostic.message == "`k3` is bound without `a`, `c`"


def test_lg207_a_value_that_is_not_a_view(site_of: SiteOf) -> None:
    err = raises(lambda: vsn.bind(x=Window.snap, y=40))  # type: ignore[arg-type]  # site: not a view
    assert err.code == "LG207"
    assert err.site == site_of("not a view")
    assert err.diagnostic.message == "`vsn.y` must be bound to a view or layout, got 40"


# -- LG208: a kernel declaration is malformed ------------------------------------

NOT_C_IDENT = "must be a C identifier (letters, digits, `_`; not starting with a digit)"


@pytest.mark.parametrize(
    ("marker", "make", "message"),
    [
        ("kernel-name", lambda: Kernel("1k", "k.cu.j2", [In("x", [B])]),  # site: kernel-name
         f"a kernel name {NOT_C_IDENT}, got '1k'"),
        ("template", lambda: Kernel("k", "", [In("x", [B])]),  # site: template
         "kernel `k` needs a template path, got ''"),
        ("no-params", lambda: Kernel("k", "k.cu.j2", []),  # site: no-params
         "kernel `k` needs a non-empty list of parameters"),
        ("params-str", lambda: Kernel("k", "k.cu.j2", "x"),  # type: ignore[arg-type]  # site: params-str
         "kernel `k` needs a non-empty list of parameters"),
        ("not-a-param", lambda: Kernel("k", "k.cu.j2", [In("x", [B]), 3]),  # type: ignore[list-item]  # site: not-a-param
         "the parameters of `k` must be In, Out, InOut or Scalar, got 3"),
        ("block-0", lambda: Kernel("k", "k.cu.j2", [In("x", [B])], grid=Grid(param="x", block=0)),  # site: block-0
         "the block size of `k` must be 1..1024, got 0"),
        ("block-2048", lambda: Kernel("k", "k.cu.j2", [In("x", [B])], grid=Grid.rows("x", 2048)),  # site: block-2048
         "the block size of `k` must be 1..1024, got 2048"),
        ("param-name", lambda: In("int", [B]),  # site: param-name
         "a parameter name is a reserved word in C++, CUDA or Python, got `int`"),
        ("no-dims", lambda: In("x", []),  # site: no-dims
         "parameter `x` must have at least one dim"),
        ("contiguous", lambda: In("x", [B], contiguous=1),  # type: ignore[arg-type]  # site: contiguous
         "`contiguous` of `x` must be True or False, got 1"),
        ("vector-3", lambda: Out("x", [B], vector=3),  # site: vector-3
         "`vector` of `x` must be 1, 2, 4, 8 or 16 bytes, got 3"),
        ("vector-bool", lambda: InOut("x", [B], vector=True),  # site: vector-bool
         "`vector` of `x` must be 1, 2, 4, 8 or 16 bytes, got True"),
        ("vector-float", lambda: In("x", [B], vector=16.0),  # type: ignore[arg-type]  # site: vector-float
         "`vector` of `x` must be 1, 2, 4, 8 or 16 bytes, got 16.0"),
        ("block-bool", lambda: Kernel("k", "k.cu.j2", [In("x", [B])], grid=Grid.rows("x", True)),  # site: block-bool
         "the block size of `k` must be 1..1024, got True"),
        ("block-float", lambda: Kernel("k", "k.cu.j2", [In("x", [B])], grid=Grid.tiles("x", 4, 256.0)),  # type: ignore[arg-type]  # site: block-float
         "the block size of `k` must be 1..1024, got 256.0"),
        ("binding-name", lambda: vsn.bind(name="2x", x=Window.snap, y=Features),  # site: binding-name
         f"a binding name {NOT_C_IDENT}, got '2x'"),
    ],
)
def test_lg208_malformed_declarations(site_of: SiteOf, marker: str, make: Callable[[], object], message: str) -> None:
    err = raises(make)
    assert isinstance(err, KernelError)
    assert err.code == "LG208"
    assert err.diagnostic.message == message
    assert err.site == site_of(marker)


def test_lg207_a_scalar_bound_as_a_view_names_what_it_was_bound_to(site_of: SiteOf) -> None:
    from layoutgen import Scalar

    k = Kernel("k", "k.cu.j2", [In("x", [B, K, F]), Scalar("lr", f32), Out("y", [B, K, F])])
    for given, shown in ((Window.snap, "Window.snap"), (Features, "Features"), (0.5, "0.5")):
        err = raises(lambda: k.bind(x=Window.snap, lr=given, y=Features))  # type: ignore[arg-type]  # site: scalar
        assert (err.code, err.diagnostic.message) == (
            "LG207", f"`k.lr` is a scalar: it takes a value at each launch, not a view, got {shown}")
        assert err.site == site_of("scalar")


def test_lg218_a_grid_over_no_parameter_name(site_of: SiteOf) -> None:
    """A grid's parameter is a name: a list, a number or a view is refused where the grid is made."""
    err = raises(lambda: Grid.rows(["x"]))  # type: ignore[arg-type]  # site: grid of a list
    assert (err.code, err.diagnostic.message, err.hint) == (
        "LG218", "the parameter of Grid.rows must be the name of a parameter of its kernel, got ['x']",
        'for example Grid.rows("x") for a parameter In("x", ...)')
    assert err.site == site_of("grid of a list")


def test_lg107_and_lg208_name_the_same_scalar_dtypes() -> None:
    """An unknown dtype name (LG107) and a known one a scalar cannot have (LG208) list one table's dtypes."""
    from layoutgen import Scalar
    from layoutgen.schema.scalars import SCALAR_DTYPES

    listed = ", ".join(SCALAR_DTYPES)
    assert "f16" not in SCALAR_DTYPES and "f32" in SCALAR_DTYPES
    unknown = raises(lambda: Scalar("lr", "float32"))
    assert (unknown.code, unknown.diagnostic.message) == (
        "LG107", f"the dtype of scalar `lr` must be one of {listed}, got 'float32'")
    half = raises(lambda: Scalar("lr", "f16"))
    assert (half.code, half.diagnostic.message) == ("LG208", f"scalar `lr` must be one of {listed}, got f16")
    from layoutgen import Value

    unknown = raises(lambda: Value("lr", "half"))
    assert (unknown.code, unknown.diagnostic.message) == (
        "LG107", f"the dtype of value `lr` must be one of {listed}, got 'half'")


def test_lg208_a_parameter_declared_twice_points_at_the_second(site_of: SiteOf) -> None:
    err = raises(lambda: Kernel("k", "k.cu.j2", [
        In("x", [B]),
        Out("x", [B]),  # site: second x
    ]))
    assert err.code == "LG208"
    assert err.diagnostic.message == "kernel `k` declares parameter `x` twice"
    assert err.site == site_of("second x")


def test_lg208_a_grid_over_an_unknown_parameter(site_of: SiteOf) -> None:
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [B])], grid=Grid.rows("y")))  # site: grid
    assert err.code == "LG208"
    assert err.diagnostic.message == (
        "the grid of `k` must follow one of its parameters, got Grid(param='y', per='row', block=128)"
    )
    assert err.hint == 'for example grid=Grid.rows("x")'
    assert err.site == site_of("grid")


def test_lg208_a_grid_of_an_unknown_kind(site_of: SiteOf) -> None:
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [B])], grid=Grid("x", "rows")))  # type: ignore[arg-type]  # site: kind
    assert err.code == "LG208"
    assert err.diagnostic.message == (
        "the grid of `k` must be one of Grid.rows, Grid.elements, Grid.vectors, Grid.tiles, Grid.warps, "
        "Grid.persistent, Grid.persistent_warps, Grid.general, got per='rows'"
    )
    assert err.hint == 'for example Grid.rows("x") or Grid.tiles("x")'
    assert err.site == site_of("kind")


def test_bad_dims_and_dtypes_of_a_parameter_are_layout_errors_at_the_users_line(site_of: SiteOf) -> None:
    err = raises(lambda: In("x", [B, -1]))  # site: negative dim
    assert isinstance(err, LayoutError)
    assert err.code == "LG103"
    assert err.site == site_of("negative dim")
    err = raises(lambda: In("x", [B], dtype="f33"))  # type: ignore[arg-type]  # site: dtype
    assert err.code == "LG107"
    assert "the dtype of parameter `x` must be one of f64, f32, f16" in err.diagnostic.message
    assert err.site == site_of("dtype")
    assert In("h", [B], dtype=f16).dtype == f16


def test_lg208_a_spec_of_unbound_kernels_or_non_layouts(site_of: SiteOf) -> None:
    err = raises(lambda: Spec("s", kernels=[vsn]))  # type: ignore[list-item]  # site: unbound
    assert err.code == "LG208"
    assert err.diagnostic.message == "the kernels of spec `s` must be bindings (`kernel.bind(...)`), got <Kernel vsn>"
    assert err.hint == "bind the kernel's parameters to views: my_kernel.bind(x=Window.snap, ...)"
    assert err.site == site_of("unbound")
    err = raises(lambda: Spec("s", layouts=[Window.snap]))  # type: ignore[list-item]  # site: view as layout
    assert err.diagnostic.message == "the layouts of spec `s` must be layouts, got <View Window.snap>"
    assert err.site == site_of("view as layout")
    err = raises(lambda: Spec("9s"))
    assert err.diagnostic.message == f"a spec name {NOT_C_IDENT}, got '9s'"


def test_a_spec_collects_the_layouts_its_bindings_use_once_each_in_order() -> None:
    extra = Layout("Extra", [B], f32, width=4)
    s = Spec("s", kernels=[vsn.bind(x=Window.snap, y=Features), vsn.bind(name="v2", x=Features, y=Window.snap)],
             layouts=[extra])
    assert [lay.name for lay in s.layouts] == ["Extra", "Window", "Features"]
    assert [b.name for b in s.kernels] == ["vsn", "v2"]


def test_lg208_a_parameter_named_like_a_generated_local_or_a_symbol(site_of: SiteOf) -> None:
    """The thread's index (`row`, `element`, `vector`), the launcher's `stream`, Jinja's `kernel` and `params`
    and the kernel's own symbols share a scope with parameters or symbols; nothing else generated does."""
    beside_params = ("a name used beside the parameters (row, element, vector, name, overwrites, stream): the thread "
                     "index, and the keywords of bind, Launch and the launcher")
    err = raises(lambda: Kernel("k", "k.cu.j2", [
        In("x", [B, F]),
        Out("row", [B, F]),  # site: param row
    ]))
    assert err.code == "LG208"
    assert err.diagnostic.message == f"parameter `row` of `k` clashes with {beside_params}"
    assert err.site == site_of("param row")
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [B, F]), In("F", [F])]))  # site: param F
    assert err.diagnostic.message == "parameter `F` of `k` clashes with a shape symbol of the kernel"
    assert err.site == site_of("param F")
    (element, kernel) = dims("element kernel")
    beside_symbols = ("a name the generated code defines beside the kernel's symbols (row, element, vector, kernel, "
                      "params, self, none)")
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [B, element])]))  # site: symbol element
    assert err.diagnostic.message == f"shape symbol `element` of `k` is {beside_symbols}"
    assert err.site == site_of("symbol element")
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [B, kernel])]))
    assert err.diagnostic.message == f"shape symbol `kernel` of `k` is {beside_symbols}"
    for keyword in ("stream", "name", "overwrites"):
        err = raises(lambda: Kernel("k", "k.cu.j2", [In(keyword, [B])]))
        assert err.diagnostic.message == f"parameter `{keyword}` of `k` clashes with {beside_params}"
    # `self` and `kernel` are taken by position only: parameters may have those names.
    k = Kernel("k", "k.cu.j2", [In("self", [B, F]), Out("kernel", [B, F])])
    assert [n for n, _ in k.bind(self=Window.snap, kernel=Features).views] == ["self", "kernel"]
    # The launcher's own names are `_lg_` names now: a parameter may be called `unwrap`.
    assert Kernel("k", "k.cu.j2", [In("unwrap", [B])]).params[0].name == "unwrap"


def test_a_kernel_may_share_its_specs_name_and_lg_is_no_name_at_all(site_of: SiteOf) -> None:
    """Views live in `lg::views::<spec>`, so a kernel named like its spec clashes with nothing; `lg` is
    layoutgen's namespace, in every scope user names land in."""
    assert Spec("vsn", kernels=[vsn.bind(x=Window.snap, y=Features)]).kernels[0].name == "vsn"
    reserved = "is `lg` or starts with `_lg_`, which layoutgen reserves for generated names"
    err = raises(lambda: vsn.bind(name="lg", x=Window.snap, y=Features))  # site: lg binding
    assert err.code == "LG208"
    assert err.diagnostic.message == f"a binding name {reserved}, got `lg`"
    assert err.site == site_of("lg binding")
    err = raises(lambda: Spec("lg"))
    assert err.diagnostic.message == f"a spec name {reserved}, got `lg`"


def test_lg208_a_kernel_named_like_a_layout_would_clash_in_the_generated_module(site_of: SiteOf) -> None:
    scale = Layout("scale", [B], f32, width=8)
    k = Kernel("scale", "k.cu.j2", [InOut("x", [B, F])])
    err = raises(lambda: Spec("s", kernels=[
        k.bind(x=scale),  # site: same as layout
    ]))
    assert err.code == "LG208"
    assert err.diagnostic.message == (
        "kernel `scale` has the name of a layout of spec `s`; the generated module would define both"
    )
    assert err.site == site_of("same as layout")
    assert Spec("s", kernels=[k.bind(name="scale_rows", x=scale)]).kernels[0].name == "scale_rows"


def test_lg211_a_kernel_or_spec_name_too_long_for_its_files(site_of: SiteOf) -> None:
    long = "k" * 201
    err = raises(lambda: Kernel(long, "k.cu.j2", [In("x", [B])]))  # site: long kernel
    assert isinstance(err, KernelError)
    assert err.code == "LG211"
    assert err.diagnostic.message == (
        "a kernel name must be at most 200 characters, to name its generated files, got 201 (`kkkkkkkkkkkkkkkkkkkkkkkk...`)")
    assert err.site == site_of("long kernel")
    assert raises(lambda: vsn.bind(name="b" * 300, x=Window.snap, y=Features)).code == "LG211"
    assert raises(lambda: Spec("s" * 250)).code == "LG211"
    err = raises(lambda: Kernel("con", "k.cu.j2", [In("x", [B])]))
    assert err.diagnostic.message == "a kernel name is a device name on Windows, where `con.cu` could not be a file, got `con`"
    assert Kernel("k" * 200, "k.cu.j2", [In("x", [B])]).name == "k" * 200


def test_template_root_may_be_a_str_relative_to_the_declaring_file(site_of: SiteOf, tmp_path: Path) -> None:
    here = Path(__file__).resolve().parent
    k = Kernel("k", "scale_snap.cu.j2", [In("x", [B])], template_root="specs/mini")
    assert k.template_path == here / "specs" / "mini" / "scale_snap.cu.j2" and k.template_path.is_file()
    assert Kernel("k", "t.cu.j2", [In("x", [B])], template_root=str(tmp_path)).template_path == tmp_path / "t.cu.j2"
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [B])], template_root=3))  # type: ignore[arg-type]  # site: root 3
    assert err.code == "LG208"
    assert err.diagnostic.message == "`template_root` of kernel `k` must be a folder (a str or a Path), got 3"
    assert err.site == site_of("root 3")
