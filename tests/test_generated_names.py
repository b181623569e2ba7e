"""Names in generated code: no user name shares a scope with a generated one.

The kernel's arguments are ``lg_arg_<param>`` and ``lg_dim_<symbol>``, views
store ``lg_dim_<symbol>`` and live in ``lg::views::<spec>`` as
``<Layout>_<field>_view``, the Python module's own names start with ``_lg_``;
user names may not be ``lg`` or start with ``lg_`` (after any ``_``). What is
left is refused at declaration: keywords, CUDA's macros, and for kernels the
names NVRTC declares at global scope. The property test at the end draws names
from everything the generator and the runtime emit and from C, C++, CUDA and
Python, and checks that each is refused with a code or compiles and imports
with every launcher bound to its own kernel.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from layoutgen import (
    Buffer, Field, Grid, In, InOut, Kernel, Launch, Layout, Out, Pad, Program, Spec, dims, f32, field_copies,
)
from layoutgen.codegen.library import library_namespace
from layoutgen.runtime.launch import KernelLauncher
from layoutgen.runtime.program import ProgramRunner
from layoutgen.runtime.typed import LayoutTag
from layoutgen.schema import LayoutError
from layoutgen.schema.diagnostics import CODES, LayoutgenError

from tests import nvrtc_names
from tests.helpers import host
from tests.helpers.rendering import load, nvrtc, render, write_template

REPO = Path(__file__).resolve().parent.parent

# -- helpers ------------------------------------------------------------------------------------------------


def launcher_of(module: ModuleType, function: str) -> Any:
    """The launcher or runner that the module's public ``function`` calls (found in its code, not by name)."""
    named = fn = getattr(module, function)
    if not isinstance(fn, FunctionType):  # the compiled path standing in its name (KernelLauncher.public)
        fn = getattr(named, "__wrapped__", None)
    assert isinstance(fn, FunctionType), f"`{function}` is {named!r}, not the generated function"
    called = [module.__dict__[n] for n in fn.__code__.co_names
              if isinstance(module.__dict__.get(n), (KernelLauncher, ProgramRunner))]
    assert len(called) == 1, (function, fn.__code__.co_names)
    assert named is fn or named is called[0]._fast, f"`{function}` stands in for another launcher's function"
    return called[0]


# -- regressions: each of these broke the generated code, or silently changed what it means --------------------


def test_dims_named_t_rows_or_at_compile(tmp_path: Path) -> None:
    t, rows, at = dims("T rows at")
    series = Layout("Series", [t, rows, at], f32, width=4)
    k = Kernel("k", write_template(tmp_path, "    x.at(row, 0) = 1.0f;\n"), [Out("x", [t, rows, at, 4])],
               template_root=tmp_path)
    nvrtc(render(Spec("names", kernels=[k.bind(x=series)]), tmp_path), "names")


@pytest.mark.skipif(host.COMPILER is None, reason="no host C++ compiler (g++) here")
def test_dims_named_like_view_members_leave_x_width_the_fields_width(tmp_path: Path) -> None:
    """`width`, `offset`, `row_stride`, `vector_bytes`, `base` and `scale` as dims: `x.width` is still 4."""
    members = dims("width offset row_stride vector_bytes base scale")
    rows = Layout("Rows", [*members], f32, [Field("pad", 2), Field("v", 4), Pad(2)])
    body = ("    x.at(row, 0) = static_cast<float>(x.width);\n"
            "    x.at(row, 1) = static_cast<float>(x.row_stride);\n"
            "    x.at(row, 2) = static_cast<float>(x.offset);\n"
            "    x.at(row, 3) = static_cast<float>(x.vector_bytes);\n")
    k = Kernel("facts", write_template(tmp_path, body), [Out("x", [*members, 4])], template_root=tmp_path)
    rendered = render(Spec("members", kernels=[k.bind(x=rows.v)]), tmp_path)
    for path, text in rendered.files.items():
        (tmp_path / Path(path).name).write_text(text, encoding="utf-8")
    sizes = [1000, 2, 1, 1, 1, 1]  # width=1000: the dim, not the field
    fn = host.host_kernel("facts", tmp_path, tmp_path, (
        "facts", "float* x, " + ", ".join(f"long long {n}" for n in "abcdef"), "x, a, b, c, d, e, f"))
    array = np.zeros((*sizes, 8), dtype=np.float32)
    host.host_launch(fn, [array], sizes, threads=int(np.prod(sizes)), block=32)
    assert (array[..., 2:6] == [4, 8, 2, 4]).all()  # the field's width, row stride, offset and checked vector
    nvrtc(render(Spec("members", kernels=[k.bind(x=rows.v)]), tmp_path, debug=True), "members")  # `scale`


def test_kernels_a_and__a_each_launch_their_own(tmp_path: Path) -> None:
    (n,) = dims("N")
    rows = Layout("Rows", [n], f32, width=4)
    body = write_template(tmp_path, "    x.at(row, 0) = 1.0f;\n")
    kernels = [Kernel(name, body, [Out("x", [n, 4])], template_root=tmp_path).bind(x=rows) for name in ("a", "_a")]
    module = load(render(Spec("pair", kernels=kernels), tmp_path).files["pair/__init__.py"], tmp_path, "pair")
    assert launcher_of(module, "a").spec.name == "a"
    assert launcher_of(module, "_a").spec.name == "_a"


def test_names_of_the_modules_constants_and_imports_are_free_for_kernels_and_layouts(tmp_path: Path) -> None:
    """Kernels `FOLDER`, `HEADER`, `unwrap`, `Path`; a layout `_foo` beside a kernel `foo`; a program `_p`
    beside a kernel `p`; a parameter `unwrap`: each module-level name is the spec's or layoutgen's."""
    (n,) = dims("N")
    rows = Layout("Rows", [n], f32, width=4)
    foo = Layout("_foo", [n], f32, width=4)
    body = write_template(tmp_path, "    unwrap.at(row, 0) = 1.0f;\n")
    kernels = [Kernel(name, body, [Out("unwrap", [n, 4])], template_root=tmp_path).bind(unwrap=lay)
               for name, lay in (("FOLDER", rows), ("HEADER", rows), ("unwrap", rows), ("Path", rows), ("foo", foo),
                                 ("p", rows))]
    buffer = Buffer("out", rows, output=True)
    program = Program("_p", [Launch(kernels[-1], unwrap=buffer)])
    spec = Spec("consts", kernels=kernels, programs=[program])
    module = load(render(spec, tmp_path).files["consts/__init__.py"], tmp_path, "consts")
    for name in ("FOLDER", "HEADER", "unwrap", "Path", "foo", "p"):
        launcher = launcher_of(module, name)
        assert launcher.spec.name == name and launcher.folder == tmp_path / "consts" and launcher.header == "consts.cuh"
    assert issubclass(module._foo, LayoutTag) and module._foo.spec.name == "_foo"
    assert launcher_of(module, "_p").spec.name == "_p"
    assert launcher_of(module, "capture__p").spec.name == "_p"


def test_a_parameter_named_like_a_layout_symbol_is_its_own_argument(tmp_path: Path) -> None:
    (n,) = dims("N")
    rows = Layout("Rows", ["x"], f32, width=4)  # the layout's dim is `x`; the kernel calls it N
    k = Kernel("k", write_template(tmp_path, "    x.at(row, 0) = static_cast<float>(N);\n"), [Out("x", [n, 4])],
               template_root=tmp_path)
    rendered = render(Spec("param_dim", kernels=[k.bind(x=rows)]), tmp_path)
    nvrtc(rendered, "param_dim")
    assert "    float* __restrict__ lg_arg_x,\n    long long lg_dim_x)\n" in rendered.files["param_dim/k.cu"]


def test_views_whose_names_join_alike_get_structs_of_their_own(tmp_path: Path) -> None:
    """`a_b` and `a.b` both read `a_b`: the second struct is numbered, and no layout's struct can be that number."""
    (n,) = dims("N")
    layouts = [Layout("a_b", [n], f32, width=4), Layout("a", [n], f32, [Field("b", 4)]), Layout("a_b_2", [n], f32, width=4)]
    body = write_template(tmp_path, "    x.at(row, 0) = 1.0f;\n")
    kernels = [Kernel(f"k{i}", body, [Out("x", [n, 4])], template_root=tmp_path).bind(x=view)
               for i, view in enumerate([layouts[0].view, layouts[1].b, layouts[2].view])]
    rendered = render(Spec("joined", kernels=kernels), tmp_path)
    field = re.escape(f"lg::{library_namespace()}::Field<")  # the device library's, in its version's namespace
    structs = re.findall(rf"^struct (\w+) : {field}", rendered.files["joined/joined.cuh"], re.M)
    assert structs == ["a_b_view", "a_b_view_2", "a_b_2_view"]
    nvrtc(rendered, "joined")


def test_field_copies_of_a_layout_whose_dims_are_named_r_and_i_compile(tmp_path: Path) -> None:
    """The shipped copies declare no locals: the kernel's symbols are the layout's dims, named anything."""
    window = Layout("Window", ["r", "i"], f32, [Field("snap", 8), Field("context", 8)])
    nvrtc(render(Spec("copies", kernels=[*field_copies(window.context)]), tmp_path), "copies")


@pytest.mark.parametrize("name", ["main", "expf", "printf", "std", "_", "A7", "vprintf", "half"])
def test_a_kernel_named_like_a_global_of_cuda_is_refused_where_it_is_declared(site_of: Any, name: str) -> None:
    with pytest.raises(LayoutgenError) as info:
        Kernel(name, "k.cu.j2", [In("x", ["N"])])  # site: global kernel name
    assert info.value.code == "LG208"
    assert info.value.site == site_of("global kernel name")
    why = "crashes NVRTC, or makes it hang, when it names a kernel" if name in ("A7", "vprintf") else (
        "is a name that CUDA C++ declares at global scope or PTX refuses, so no kernel can have it")
    assert info.value.diagnostic.message == f"a kernel name {why}, got `{name}`"


def test_null_is_a_macro_and_lg_is_layoutgens_wherever_a_name_is_given(site_of: Any) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("Rows", ["N"], f32, [Field("NULL", 4)])  # site: NULL field
    assert info.value.code == "LG106"
    assert info.value.diagnostic.message == (
        "a field name of `Rows` is a macro in CUDA C++, which would replace it wherever it is written, got `NULL`")
    assert info.value.site == site_of("NULL field")
    with pytest.raises(LayoutError) as info:
        Layout("lg", ["N"], f32, width=4)
    assert info.value.diagnostic.message == (
        "a layout name is `lg` or starts with `_lg_`, which layoutgen reserves for generated names, got `lg`")
    for name in ("_lg_kernel_x", "LG_X", "lg_arg_x"):
        with pytest.raises(LayoutgenError):
            In(name, ["N"])


@pytest.mark.parametrize("name", ["main", "expf", "printf", "std", "_", "half", "dim3", "size_t", "cuda"])
def test_names_cuda_gives_a_meaning_compile_everywhere_but_as_a_kernel(tmp_path: Path, name: str) -> None:
    """As a spec, a layout, a field, a dim, a parameter or a symbol, these are names like any other."""
    rows = Layout(name, [name, 2], f32, [Field(name, 4)], width=4)
    k = Kernel("k", write_template(tmp_path, f"    {name}.at(row, 0) = 1.0f;\n"), [Out(name, ["N", 2, 4])],
               template_root=tmp_path)
    rendered = render(Spec(name, kernels=[k.bind(**{name: rows[name]})]), tmp_path)
    nvrtc(rendered, name)
    module = load(rendered.files[f"{name}/__init__.py"], tmp_path, f"cuda_{name}")
    assert launcher_of(module, "k").spec.name == "k" and getattr(module, name).spec.name == name


@pytest.mark.parametrize("field", ["whole", "input", "output", "buffer", "role"])
def test_a_field_named_like_a_buffer_attribute_is_refused_at_the_field(site_of: Any, field: str) -> None:
    """`window.whole` would be the whole buffer, not the field: the field's own line says so, before any
    program uses it (tests/test_schema_validation.py covers every attribute of Buffer and BufferView)."""
    with pytest.raises(LayoutgenError) as info:
        Layout("Rows", ["N"], f32, [Field(field, 4), Field("other", 4)])  # site: shadowed field
    assert info.value.code == "LG106"
    assert info.value.site == site_of("shadowed field")
    assert info.value.diagnostic.message == (
        f"field `{field}` of `Rows` would shadow the attribute `{field}` of program buffers: in a program, "
        f"`<buffer>.{field}` would be the buffer's `{field}`, not the field")


def test_kernels_whose_files_differ_in_case_and_layouts_of_one_name_are_refused(site_of: Any, tmp_path: Path) -> None:
    (n,) = dims("N")
    rows = Layout("Rows", [n], f32, width=4)
    k = Kernel("k", "k.cu.j2", [Out("x", [n, 4])])
    with pytest.raises(LayoutgenError) as info:
        Spec("cases", kernels=[k.bind(name="Copy", x=rows),
                               k.bind(name="copy", x=rows)])  # site: lower copy
    assert info.value.code == "LG212"
    assert info.value.site == site_of("lower copy")
    assert info.value.diagnostic.message.startswith(
        "kernels `Copy` and `copy` of spec `cases` would be generated into `Copy.cu` and `copy.cu`, one file where "
        "case does not count (macOS, Windows; `Copy` bound at ")
    wider = Layout("Rows", [n], f32, width=8)  # site: second Rows
    with pytest.raises(LayoutgenError) as info:
        Spec("twice", kernels=[k.bind(name="a", x=rows), k.bind(name="b", x=wider)])
    assert info.value.code == "LG212"
    assert info.value.site == site_of("second Rows")
    # The same rows declared twice generate the same view: that is fine.
    Spec("same", kernels=[k.bind(name="a", x=rows), k.bind(name="b", x=Layout("Rows", [n], f32, width=4))])


@pytest.mark.parametrize("name", ["self", "none", "kernel", "params"])
def test_a_symbol_named_like_what_jinja_defines_is_refused(name: str) -> None:
    """Static symbols are Jinja variables too: `{{ self }}` is the template, `{{ none }}` a constant."""
    with pytest.raises(LayoutgenError) as info:
        Kernel("k", "k.cu.j2", [Out("x", ["N", name])])
    assert info.value.code == "LG208"
    assert info.value.diagnostic.message == (
        f"shape symbol `{name}` of `k` is a name the generated code defines beside the kernel's symbols "
        "(row, element, vector, kernel, params, self, none)")


# -- the property: every name the generator, the runtime and the languages know ------------------------------


def _identifiers(text: str) -> set[str]:
    return set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", text))


def generated_names() -> list[str]:
    """Every identifier in the skeletons, the committed generated files and the runtime's modules."""
    import layoutgen.runtime as runtime
    from layoutgen.runtime import launch, plan, program, typed

    texts = [p.read_text(encoding="utf-8") for p in (REPO / "layoutgen" / "templates").glob("*.j2")]
    texts += [p.read_text(encoding="utf-8") for p in (REPO / "generated").rglob("*") if p.suffix in (".cu", ".cuh", ".py")]
    names = set().union(*map(_identifiers, texts))
    for holder in (runtime, launch, plan, program, typed, launch.KernelLauncher, plan.KernelSpec, plan.ParamSpec,
                   plan.LayoutSpec, program.ProgramRunner, typed.LayoutTag, typed.Array):
        names |= set(dir(holder))
    return sorted(n for n in names if len(n) < 40)


POOL = st.one_of(
    st.sampled_from(generated_names()),
    st.sampled_from(sorted(nvrtc_names.standard_names())),
    st.sampled_from(sorted(n for n in nvrtc_names.cuda_header_names() if len(n) < 40)),
)
_MODULES = itertools.count()
ROLES = ("spec", "layout", "field", "dim", "kernel", "param", "symbol", "static", "program", "buffer")


def _declares(make: Any) -> bool:
    """Whether a declaration is accepted; a refusal must be a diagnostic with a code, never another error."""
    try:
        make()
    except LayoutgenError as exc:
        assert exc.code in CODES and exc.site is not None, exc
        return False
    return True


def _accepted(role: str, name: str) -> bool:
    """Whether ``name`` is accepted alone in ``role`` (everything else plain)."""
    rows = Layout("Rows", ["N", 3], f32, [Field("a", 2), Field("b", 2)])
    checks = {
        "spec": lambda: Spec(name),
        "layout": lambda: Layout(name, ["N"], f32, width=4),
        "field": lambda: (Layout("Rows", ["N"], f32, [Field(name, 2)]), Buffer("rows", Layout(
            "Rows", ["N"], f32, [Field(name, 2)]))),
        "dim": lambda: Layout("Rows", [name], f32, width=4),
        "kernel": lambda: Kernel(name, "k.cu.j2", [In("x", ["N"])]),
        "param": lambda: In(name, ["N"]) and Kernel("k", "k.cu.j2", [In(name, ["N"])]),
        "symbol": lambda: Kernel("k", "k.cu.j2", [In("x", [name])]),
        "static": lambda: Kernel("k", "k.cu.j2", [In("x", [name])]).bind(x=rows.a),
        "program": lambda: Program(name, [Launch(Kernel("k", "k.cu.j2", [In("x", ["N", 3, 2])]),
                                                 x=Buffer("rows", rows, input=True).a)]),
        "buffer": lambda: Buffer(name, rows),
    }
    return _declares(checks[role])


# Each example compiles one small kernel (~150 ms with the fork); LAYOUTGEN_NAME_EXAMPLES=5000 sweeps far more.
@settings(max_examples=int(os.environ.get("LAYOUTGEN_NAME_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(drawn=st.lists(POOL, min_size=len(ROLES), max_size=len(ROLES), unique=True), debug=st.booleans())
def test_every_known_name_is_refused_with_a_code_or_generates_code_that_compiles_and_imports(
        tmp_path_factory: pytest.TempPathFactory, drawn: list[str], debug: bool) -> None:
    tmp = tmp_path_factory.mktemp("names")
    plain = {"spec": "s", "layout": "Rows", "field": "f", "dim": "D", "kernel": "k", "param": "x", "symbol": "S",
             "static": "C", "program": "prog", "buffer": "buf"}
    # One spec with every accepted name in its role, and a plain name where one was refused.
    names = {role: (name if _accepted(role, name) else plain[role]) for role, name in zip(ROLES, drawn)}
    assume(len({*names.values(), "other"}) == len(names) + 1)  # a plain name can be drawn too
    lay = Layout(names["layout"], [names["dim"], 3], f32, [Field("other", 2), Field(names["field"], 2)])
    x, s, c = names["param"], names["symbol"], names["static"]
    body = f"    {x}.at(row, 0) = {x}.at(row, 1) + static_cast<float>({s} * {c} + {{{{ {c} }}}});\n"
    k = Kernel(names["kernel"], write_template(tmp, body), [InOut(x, [s, c, 2])], grid=Grid.rows(x),
               template_root=tmp, doc="kernel")
    binding = k.bind(**{x: lay[names["field"]]})
    buffer = Buffer(names["buffer"], lay, input=True, output=True)
    program = Program(names["program"], [Launch(binding, **{x: buffer[names["field"]]})])
    try:
        spec = Spec(names["spec"], kernels=[binding], programs=[program])
    except LayoutgenError as exc:  # only two names that are each fine alone, but not together, may land here
        assert exc.code in ("LG208", "LG212", "LG305"), exc
        assume(False)
    rendered = render(spec, tmp, debug=debug)
    nvrtc(rendered, names["spec"])
    module = load(rendered.files[f"{names['spec']}/__init__.py"], tmp, f"names_{next(_MODULES)}")
    assert launcher_of(module, names["kernel"]).spec.name == names["kernel"]
    assert launcher_of(module, names["program"]).spec.name == names["program"]
    assert launcher_of(module, f"capture_{names['program']}").spec.name == names["program"]
    layout_class = getattr(module, names["layout"])
    assert issubclass(layout_class, LayoutTag) and layout_class.spec.name == names["layout"]
    assert sorted(module.__all__) == sorted([names["layout"], names["kernel"], names["program"],
                                             f"capture_{names['program']}"])
    assert not [n for n in vars(module) if not n.startswith(("_lg_", "__")) and n not in module.__all__
                and n != "annotations"], "a module-level name is neither the spec's nor layoutgen's"


def test_the_lists_of_cuda_names_are_what_nvrtc_refuses() -> None:
    """A sample of `layoutgen.schema.cuda_names` against NVRTC itself (the full sweep is tests/nvrtc_names.py):
    each listed global is refused as a kernel's name, each macro even as a local, and a sample of the other
    names of CUDA's headers is fine as kernel names."""
    import random

    from layoutgen.schema.cuda_names import CUDA_GLOBALS, CUDA_MACROS, NVRTC_CRASHES

    rng = random.Random(13)
    fp = nvrtc_names._FP + nvrtc_names._USES
    listed = rng.sample(sorted(CUDA_GLOBALS - NVRTC_CRASHES), 40)
    assert nvrtc_names.refused(listed, nvrtc_names._as_kernel, fp) == set(listed)
    macros = rng.sample(sorted(CUDA_MACROS), 20)
    assert nvrtc_names.refused(macros, nvrtc_names._as_local, fp) == set(macros)
    others = sorted(n for n in nvrtc_names.cuda_header_names()
                    if nvrtc_names.ordinary(n) and n not in CUDA_GLOBALS | CUDA_MACROS and len(n) < 64)
    sample = rng.sample(others, 300)
    assert nvrtc_names.refused(sample, nvrtc_names._as_kernel, fp) == set(), "CUDA declares names the list lacks"
