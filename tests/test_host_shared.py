"""Static `__shared__` arrays in the CPU run's host programs (layoutgen/project/host_shared.py): each declaration
that is not `extern` becomes one static array (one per block, as blocks run one after another) registered for
the all-ones fill before each block; `extern __shared__`, macros, comments and literals are left alone; no line
moves (the findings' lines come through the `#line` directives)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from layoutgen.project.host_shared import static_shared


def test_a_static_shared_array_becomes_one_per_block_and_extern_is_left_alone() -> None:
    source = ("    __shared__ __align__(16) lg::Vec<float, 4> a[N * 2], b[3];  // __shared__ in a comment\n"
              "    extern __shared__ __align__(16) unsigned char lg_shared[];\n"
              "    static __shared__ int n;\n"
              '#define S __shared__ float q[4]\n'
              '    const char* s = "__shared__ float z;";\n')
    assert static_shared(source) == (
        "    LG_STATIC_SHARED __align__(16) lg::Vec<float, 4> a[N * 2], b[3]; LG_SHARED_RESET(a); LG_SHARED_RESET(b);"
        "  // __shared__ in a comment\n"
        "    extern __shared__ __align__(16) unsigned char lg_shared[];\n"
        "    static  int n; LG_SHARED_RESET(n);\n"
        '#define S __shared__ float q[4]\n'
        '    const char* s = "__shared__ float z;";\n')


NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda n: n not in ("do", "if", "for", "int"))


@given(st.lists(st.tuples(st.booleans(), st.lists(NAMES, min_size=1, max_size=3, unique=True),
                          st.sampled_from(["float", "int", "lg::Vec<float, 4>", "unsigned long long"]),
                          st.sampled_from(["", "[4]", "[N * 2]", "[(K + 1) / 2][8]"])), min_size=1, max_size=5))
def test_every_array_declared_is_registered_and_no_line_moves(
        decls: list[tuple[bool, list[str], str, str]]) -> None:
    lines = [f"    {'extern ' if ext else ''}__shared__ {kind} {', '.join(n + size for n in names)};"
             for ext, names, kind, size in decls]
    out = static_shared("\n".join(lines)).split("\n")
    assert len(out) == len(lines)
    for line, (ext, names, kind, size) in zip(out, decls):
        if ext:
            assert line == f"    extern __shared__ {kind} {', '.join(n + size for n in names)};"
        else:
            assert line == (f"    LG_STATIC_SHARED {kind} {', '.join(n + size for n in names)};"
                            + "".join(f" LG_SHARED_RESET({n});" for n in names))
