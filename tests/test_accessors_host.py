"""Property: the generated accessors address exactly what numpy's view of the field addresses.

For random layouts (flat and sub-array fields, static and symbolic leading
dims, a named axis or none) and a random view of each, a kernel is generated
that writes every element of the view through its accessor, `x(i0, ..., j0,
..., c)`, with the element's index in the view's own row-major order. The
kernel is compiled for the host (layoutgen's lg/host/runtime.h) and run; numpy's
`view.of(array)` must then read 0, 1, 2, ... and every other element of the
array must keep its poison.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutgen import Grid, InOut, Kernel, Layout, Spec, View
from layoutgen.codegen.render import render_spec

from tests.helpers import host
from tests.helpers.strategies import all_views, shaped_layouts

pytestmark = host.needs_compiler


def _body(view: View, axes: list[str]) -> str:
    """A template body that numbers the view's elements through its accessor."""
    leading, inner = len(view.leading_dims), len(view.shape) - len(view.leading_dims)
    lines = ["    // Number every element of the row through the accessor, in the view's row-major order.",
             "    long long rest = row;"]
    for i in range(leading - 1, 0, -1):
        lines.append(f"    const long long i{i} = rest % {axes[i]}; rest /= {axes[i]};")
    if leading:
        lines.append("    const long long i0 = rest;")
    names = [f"j{n}" for n in range(inner - 1)] + ["c"]
    count = " * ".join(f"(long long){a}" for a in axes[leading:])
    position = names[0]
    for name, axis in zip(names[1:], axes[leading + 1 :]):
        position = f"({position}) * {axis} + {name}"
    indent = "    "
    for name, axis in zip(names, axes[leading:]):
        lines.append(f"{indent}for (int {name} = 0; {name} < {axis}; ++{name})")
        indent += "    "
    args = ", ".join([f"i{i}" for i in range(leading)] + names)
    lines.append(f"{indent}x({args}) = static_cast<float>(row * {count} + {position});")
    return "\n".join(lines) + "\n"


def _check(view: View, bound: dict[str, int], tmp: Path) -> None:
    layout = view.layout
    axes = [f"A{n}" for n in range(len(view.shape))]
    (tmp / "number.cu.j2").write_text(_body(view, axes), encoding="utf-8")
    kernel = Kernel("number", "number.cu.j2", [InOut("x", axes)], grid=Grid.rows("x"), template_root=tmp)
    rendered = render_spec(Spec("acc", kernels=[kernel.bind(x=view)]), host.REPO, "tests/test_accessors_host.py")
    assert rendered.diagnostics == (), [str(d) for d in rendered.diagnostics]
    for name, text in rendered.files.items():
        (tmp / Path(name).name).write_text(text, encoding="utf-8")
    symbols = list(layout.symbols)
    params = ", ".join(["float* x", *(f"long long {s}" for s in symbols)])
    fn = host.host_kernel("number", tmp, tmp, ("number", params, ", ".join(["x", *symbols])))
    unit = math.prod(bound[s] for s in layout.column_unit.symbols)
    shape = tuple(d.size if d.size is not None else bound[str(d.name)] for d in layout.dims) + (layout.width * unit,)
    array = np.full(shape, np.nan, dtype=np.float32)
    rows = math.prod(d.size if d.size is not None else bound[str(d.name)] for d in view.leading_dims)
    host.host_launch(fn, [array], [bound[s] for s in symbols], threads=rows, block=32)
    got: Any = view.of(array)
    assert np.array_equal(got, np.arange(got.size, dtype=np.float32).reshape(got.shape)), view.name
    assert int(np.isnan(array).sum()) == array.size - got.size, f"{view.name} wrote outside its field"


SETTINGS = settings(deadline=None, max_examples=25,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@SETTINGS
@given(drawn=shaped_layouts(), data=st.data())
def test_generated_accessors_address_what_numpy_addresses(tmp_path_factory: pytest.TempPathFactory,
                                                          drawn: tuple[Layout, dict[str, int]],
                                                          data: st.DataObject) -> None:
    layout, bound = drawn
    view = data.draw(st.sampled_from(all_views(layout)))
    _check(view, bound, tmp_path_factory.mktemp("accessors"))


@settings(deadline=None, max_examples=10,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(counts=st.lists(st.integers(1, 5), min_size=1, max_size=3), d=st.integers(1, 6), b=st.integers(1, 3),
       data=st.data())
def test_accessors_of_a_row_counted_in_a_symbol(tmp_path_factory: pytest.TempPathFactory, counts: list[int],
                                                d: int, b: int, data: st.DataObject) -> None:
    from layoutgen import Field

    layout = Layout("Sym", ["B", 2], "f32", [Field(f"f{i}", shape=[c, "D"]) for i, c in enumerate(counts)])
    view = data.draw(st.sampled_from(layout.fields()))
    _check(view, {"B": b, "D": d}, tmp_path_factory.mktemp("symbolic"))
