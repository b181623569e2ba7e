"""The debug build's pointer types (layoutgen/codegen/checked_types.py): each pointer the user's C++ declares over
an element type is an lg::checked_ptr, spelled any way; nothing else changes, and every line keeps its number.

A hypothesis property draws files of many fragments (local declarations, `for` heads, helpers' parameters, C-style
and static casts, `auto*`, and what must stay as written: comments and strings holding pointer code, several
declarators, `__global__` signatures, volatile pointees, pointers to pointers, `sizeof(float*)`, file-scope
variables, `static`/`__shared__`/`typedef` declarations), each with the text it must become, and asserts the
rewrite is exactly their concatenation. The rendering tests pin where it applies: the debug build of templates,
hand-written entries and existing kernels; never the release build.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.codegen.checked_types import checked_pointer_types
from layoutgen.codegen.render import render_spec
from layoutgen.project.specload import load_spec

REPO = Path(__file__).resolve().parent.parent

ELEMENTS = ["float", "double", "int", "unsigned int", "long long", "unsigned long long", "signed char", "unsigned char",
            "bool", "short", "float4", "float2", "int4", "uint2", "__half", "half", "__half2", "__nv_bfloat16",
            "nv_bfloat162", "int8_t", "uint64_t", "size_t"]
NAMES = ["p", "base", "from", "to", "groups", "q1", "row_ptr", "_x"]


@dataclass(frozen=True)
class Spelled:
    """A pointer type as written (``text``, ending where its name may follow) and what the rewrite makes of it
    (``checked``, the text standing where ``text`` stood), with the pointee's parts for casts."""

    text: str
    checked: str


@st.composite
def pointer_types(draw: st.DrawFn, *, top_const: bool = True, multiline: bool = True) -> Spelled:
    """``[const] T [const] * [const] [__restrict__]`` with any spacing (a line break inside, sometimes)."""
    element = draw(st.sampled_from(ELEMENTS))
    const = draw(st.booleans())
    const_after = const and draw(st.booleans())  # `float const*`
    gaps = [" ", "  ", "\t"] + (["\n"] if multiline else [])
    gap = st.sampled_from(gaps)
    near = st.sampled_from(["", " "])
    words = element.split()
    parts = (["const", draw(gap)] if const and not const_after else [])
    for n, w in enumerate(words):
        parts += [w] + ([draw(gap)] if n + 1 < len(words) else [])
    if const_after:
        parts += [draw(gap), "const"]
    parts += [draw(near), "*"]
    pointer_const = top_const and draw(st.booleans())
    restrict = draw(st.sampled_from(["", "__restrict__", "__restrict"]))
    after = []
    if pointer_const:
        after += [draw(st.sampled_from([" ", ""])), "const"]
    if restrict:
        after += [" ", restrict]
    text = "".join(parts + after)
    checked = f"lg::checked_ptr<{'const ' if const else ''}{element}>{' const' if pointer_const else ''}"
    return Spelled(text, checked + "\n" * text.count("\n"))


def _joined(p: Spelled, name: str, gap: str) -> tuple[str, str]:
    """``p`` then ``name`` with ``gap`` between: as written, and as rewritten (a space where none parted them)."""
    apart = " " if not gap and not p.text.endswith((" ", "\t")) else ""
    head, newlines = p.checked.rstrip("\n"), p.checked[len(p.checked.rstrip("\n")):]
    return p.text + gap + name, head + apart + newlines + gap + name


@st.composite
def statements(draw: st.DrawFn) -> tuple[str, str]:
    """One statement of a function body: a declaration or a cast that changes, or one that must not."""
    kind = draw(st.sampled_from(["init", "bare", "for", "cast", "static_cast", "auto", "const_cast", "array",
                                 "several", "several_init", "comment", "string", "volatile", "pointer_pointer",
                                 "sizeof", "static", "shared", "multiply", "typedef", "string_pointer"]))
    name = draw(st.sampled_from(NAMES))
    p = draw(pointer_types())
    gap = draw(st.sampled_from(["", " ", "  "])) if p.text.endswith("*") else " "
    typed, checked = _joined(p, name, gap)
    plain = draw(pointer_types(top_const=False, multiline=False))
    bare_plain = plain.text.rstrip()
    if kind == "init":
        return f"    {typed} = &x.at(0, 0);\n", f"    {checked} = &x.at(0, 0);\n"
    if kind == "bare":
        return f"    {typed};\n", f"    {checked};\n"
    if kind == "array":
        return f"    {typed}[4];\n", f"    {checked}[4];\n"
    if kind == "for":
        return (f"    for ({typed} = first; {name} != last; ++{name}) total += *{name};\n",
                f"    for ({checked} = first; {name} != last; ++{name}) total += *{name};\n")
    if kind == "cast":
        cast_to = plain.checked
        return f"    v = *({bare_plain})(src + 4);\n", f"    v = *({cast_to})(src + 4);\n"
    if kind == "static_cast":
        return f"    w = static_cast<{bare_plain}>(src);\n", f"    w = static_cast<{plain.checked}>(src);\n"
    if kind == "const_cast":
        return f"    w = const_cast<{bare_plain}>(src);\n", f"    w = lg::const_checked<{bare_plain}>(src);\n"
    if kind == "auto":
        const = draw(st.sampled_from(["const auto", "auto"]))
        star = draw(st.sampled_from(["* ", " *", " * "]))
        return f"    {const}{star}{name} = &x.at(1, 2);\n", f"    auto {name} = &x.at(1, 2);\n"
    unchanged = {
        "several": f"    float *{name}, *other;\n",
        "several_init": f"    const float* {name} = &x.at(0, 0), *other = nullptr;\n",
        "comment": f"    // {typed.replace(chr(10), ' ')} = ({bare_plain})q;\n    /* {bare_plain} {name} = q;\n   */\n",
        "string": f'    printf("{bare_plain} {name} = ({bare_plain})q;");\n',
        "volatile": f"    volatile float* {name} = flags;\n",
        "pointer_pointer": f"    float** {name} = table;\n",
        "sizeof": f"    n = sizeof({bare_plain}) * 3;\n",
        "static": f"    static const float* {name} = nullptr;\n",
        "shared": f"    __shared__ float* {name};\n",
        "multiply": f"    total = count * {name};\n",
        "typedef": f"    typedef const float* {name}_t;\n",
        "string_pointer": f'    const char* {name} = "a message";\n',
    }
    return unchanged[kind], unchanged[kind]


@st.composite
def files(draw: st.DrawFn) -> tuple[str, str]:
    """A file: helpers whose parameters change, `__global__` kernels whose signatures do not (their bodies do),
    file-scope variables that stay, each body a list of statements."""
    src, out = [], []
    for _ in range(draw(st.integers(1, 4))):
        body = draw(st.lists(statements(), min_size=1, max_size=5))
        body_src, body_out = "".join(s for s, _ in body), "".join(o for _, o in body)
        kind = draw(st.sampled_from(["helper", "global", "global_c", "variable", "prototype"]))
        a, b = draw(pointer_types()), draw(pointer_types(multiline=False))
        pa, ca = _joined(a, "from", " ")
        pb, cb = _joined(b, "to", draw(st.sampled_from(["", " "])) if b.text.endswith("*") else " ")
        if kind == "helper":
            src.append(f"__device__ __forceinline__ void h({pa}, int n,\n    {pb}) {{\n{body_src}}}\n")
            out.append(f"__device__ __forceinline__ void h({ca}, int n,\n    {cb}) {{\n{body_out}}}\n")
        elif kind in ("global", "global_c"):
            lead = 'extern "C" __global__ void __launch_bounds__(128)\n' if kind == "global_c" else "__global__ void "
            src.append(f"{lead}k({pa}, {pb}, int n) {{\n{body_src}}}\n")
            out.append(f"{lead}k({pa}, {pb}, int n) {{\n{body_out}}}\n")
        elif kind == "variable":
            text = f"__device__ {pa};\nstruct Args {{ {pb}; int n; }};\n"
            src.append(text)
            out.append(text)
        else:  # a helper's declaration, then its definition: both change alike
            src.append(f"__device__ void g({pa});\n__device__ void g({pa}) {{\n{body_src}}}\n")
            out.append(f"__device__ void g({ca});\n__device__ void g({ca}) {{\n{body_out}}}\n")
    return "".join(src), "".join(out)


@settings(max_examples=300, deadline=None)
@given(files())
def test_every_pointer_type_over_an_element_type_is_checked_and_nothing_else_changes(case: tuple[str, str]) -> None:
    source, expected = case
    rewritten = checked_pointer_types(source)
    assert rewritten == expected
    assert rewritten.count("\n") == source.count("\n")


@settings(max_examples=200, deadline=None)
@given(st.lists(statements(), min_size=1, max_size=8))
def test_a_kernel_templates_body_is_rewritten_as_a_functions_body(body: list[tuple[str, str]]) -> None:
    source, expected = "".join(s for s, _ in body), "".join(o for _, o in body)
    assert checked_pointer_types(source, in_function=True) == expected


def test_the_spellings_of_issue_30_become_checked_pointers() -> None:
    body = ("    const float* base = &x.at(0, 0);\n"
            "    const float4* g = reinterpret_cast<const float4*>(&x.at(0,0));\n"
            "    const float* s = static_cast<const float*>(p);\n"
            "    const float4 v = *(const float4*)p;\n"
            "    const auto* a = &x.at(0, 0);\n"
            "    auto* b = &y.at(0, 0);\n")
    assert checked_pointer_types(body, in_function=True) == (
        "    lg::checked_ptr<const float> base = &x.at(0, 0);\n"
        "    lg::checked_ptr<const float4> g = reinterpret_cast<const float4*>(&x.at(0,0));\n"
        "    lg::checked_ptr<const float> s = static_cast<lg::checked_ptr<const float>>(p);\n"
        "    const float4 v = *(lg::checked_ptr<const float4>)p;\n"
        "    auto a = &x.at(0, 0);\n"
        "    auto b = &y.at(0, 0);\n")
    helper = "__device__ void f(const float* from, float* __restrict__ to, int n) {}\n"
    assert checked_pointer_types(helper) == \
        "__device__ void f(lg::checked_ptr<const float> from, lg::checked_ptr<float> to, int n) {}\n"


def test_preprocessor_lines_lambdas_and_return_types() -> None:
    source = ("#define LOAD(p) (*(const float4*)(p))\n"
              "#line 3 \"a.cu.j2\"\n"
              "__device__ const float* row_of(const float* base, long long r) { return base + r * 136; }\n"
              "__host__ void launch(const float* x) {}\n"
              "static __device__ __forceinline__ float* pick(float* a) { static float* kept; return a; }\n"
              "__device__ void k() {\n"
              "    auto f = [&](const float* p, int n) { return p[n]; };\n"
              "    auto g = [&] { const float* q = p; return q[1]; };\n"
              "    if (n > 0) { const float* q = (const float*)nullptr; }\n"
              "    return (float*)p;\n"
              "}\n")
    assert checked_pointer_types(source) == (
        "#define LOAD(p) (*(const float4*)(p))\n"
        "#line 3 \"a.cu.j2\"\n"
        "__device__ lg::checked_ptr<const float> row_of(lg::checked_ptr<const float> base, long long r) "
        "{ return base + r * 136; }\n"
        "__host__ void launch(const float* x) {}\n"
        "static __device__ __forceinline__ lg::checked_ptr<float> pick(lg::checked_ptr<float> a) "
        "{ static float* kept; return a; }\n"
        "__device__ void k() {\n"
        "    auto f = [&](lg::checked_ptr<const float> p, int n) { return p[n]; };\n"
        "    auto g = [&] { lg::checked_ptr<const float> q = p; return q[1]; };\n"
        "    if (n > 0) { lg::checked_ptr<const float> q = (lg::checked_ptr<const float>)nullptr; }\n"
        "    return (lg::checked_ptr<float>)p;\n"
        "}\n")


def _render(spec: str, debug: bool) -> dict[str, str]:
    loaded = load_spec(REPO / spec)
    assert loaded.spec is not None, loaded
    rendered = render_spec(loaded.spec, REPO, spec, debug=debug, out="build/test-checked-types")
    assert not rendered.diagnostics, rendered.diagnostics
    return rendered.files


def test_the_debug_build_of_templates_and_entries_keeps_stored_pointers_checked() -> None:
    debug, release = _render("tests/specs/sanitizer/bad.py", True), _render("tests/specs/sanitizer/bad.py", False)
    assert "    lg::checked_ptr<const float> base = &x.at(0, 0);\n" in debug["sanitizer_bad/const_stride.cu"]
    assert ("__device__ void copy_packed_row(lg::checked_ptr<const float> from, lg::checked_ptr<float> to, long long "
            "row, int width) {\n") in debug["sanitizer_bad/helper_pointer.cu"]
    assert ("    lg::checked_ptr<const float4> groups = reinterpret_cast<const float4*>(&x.at(0, 0));\n"
            in debug["sanitizer_bad/float4_cast.cu"])
    assert "    lg::checked_ptr<const float> base = &x.at(0, 0);\n" in debug["sanitizer_bad/entry_pitch.cu"]
    assert "            lg::checked_ptr<const float> column = &xs(0, c);\n" in \
        debug["sanitizer_bad/persistent_capacity_raw.cu"]
    for path, text in release.items():  # the release build's text is the user's own
        assert "checked_ptr" not in text, path
    for path in release:  # and every file keeps its lines
        assert debug[path].count("\n") >= release[path].count("\n"), path


def test_an_existing_kernels_debug_copy_checks_its_locals_not_its_signature() -> None:
    debug = _render("examples/existing_kernels/seed_bug.py", True)
    text = next(t for p, t in debug.items() if p.endswith("vsn_forward.cu"))
    assert "    lg::checked_ptr<const float> xr = x + row * VSN_FEATURE_DIM;  // the bug" in text
    assert "vsn_forward(const float* __restrict__ lg_raw_x, " in text


def test_an_existing_kernels_debug_copy_compiles_with_nvrtc() -> None:
    """Its locals (`const float* xr = x + ...`) are checked pointers now, its `__global__`'s signature not (one
    kernel, NVRTC being slow: the sanitizer's specs compile in tests/test_debug_build.py)."""
    from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin

    files = _render("examples/existing_kernels/seed_bug.py", True)
    headers = tuple(sorted((p.rsplit("/", 1)[-1], t) for p, t in files.items() if p.endswith(".cuh")))
    path, text = next((p, t) for p, t in files.items() if p.endswith("vsn_forward.cu"))
    # 5 parameters' prologues; xr, gr, yr; and the other kernel of the file (its parameters raw): src, dst
    assert text.count("lg::checked_ptr<") == 10, text
    assert compile_cubin(CompileRequest(text, path, headers=headers, arch="sm_90")).cubin
