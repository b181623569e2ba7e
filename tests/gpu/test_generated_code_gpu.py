"""Generated code on the GPU: each launcher runs its own kernel whatever the names, and a vector access
runs only on arrays the launcher checked for it.

The offline tests (tests/test_generated_names.py, tests/test_generated_types.py) show the generated
text and that it compiles; these launch it. Outputs are poisoned with NaN first.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from layoutgen import In, Kernel, Layout, Out, Spec, dims, f32
from layoutgen.codegen.render import render_spec
from layoutgen.runtime.errors import LaunchError

pytestmark = pytest.mark.gpu


def _module(spec: Spec, tmp: Path) -> ModuleType:
    rendered = render_spec(spec, tmp, "spec.py", cache_dir=str(tmp / "cache"))
    assert rendered.diagnostics == (), [str(d) for d in rendered.diagnostics]
    for path, text in rendered.files.items():
        (tmp / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp / path).write_text(text, encoding="utf-8")
    init = tmp / spec.name / "__init__.py"
    module_spec = importlib.util.spec_from_file_location(f"gpu_{spec.name}", init)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    return module


# Names that replaced one another's launchers, or the module's own names, before they were `_lg_` names.
NAMES = ["a", "_a", "FOLDER", "HEADER", "CACHE_DIR", "unwrap", "Path", "Any", "KernelLauncher"]


def test_each_launcher_runs_its_own_kernel(tmp_path: Path) -> None:
    import cupy

    (n,) = dims("N")
    rows = Layout("Rows", [n], f32, width=4)
    kernels = []
    for i, name in enumerate(NAMES):
        (tmp_path / f"k{i}.cu.j2").write_text(f"    x.at(row, 0) = {i + 1}.0f;\n", encoding="utf-8")
        kernels.append(Kernel(name, f"k{i}.cu.j2", [Out("x", [n, 4])], template_root=tmp_path).bind(x=rows))
    module = _module(Spec("own", kernels=kernels), tmp_path)
    for i, name in enumerate(NAMES):
        out = cupy.full((64, 4), cupy.nan, dtype=cupy.float32)
        getattr(module, name)(out)
        assert (cupy.asnumpy(out[:, 0]) == i + 1).all(), f"`{name}()` did not run kernel `{name}`"


VEC_BODY = "    x.vec<16>(row, 0) = y.vec<16>(row, 0);\n    x.vec<16>(row, 1) = y.vec<16>(row, 1);\n"


def test_a_16_byte_access_runs_only_on_arrays_aligned_for_it(tmp_path: Path) -> None:
    import cupy

    (n,) = dims("N")
    rows = Layout("Rows", [n], f32, width=8)
    (tmp_path / "vec.cu.j2").write_text(VEC_BODY, encoding="utf-8")
    k = Kernel("copy16", "vec.cu.j2", [Out("x", [n, 8], vector=16), In("y", [n, 8], vector=16)],
               template_root=tmp_path)
    module = _module(Spec("vec16", kernels=[k.bind(x=rows, y=rows)]), tmp_path)
    src = cupy.asarray(np.random.default_rng().normal(size=(32, 8)).astype(np.float32))
    out = cupy.full((32, 8), cupy.nan, dtype=cupy.float32)
    module.copy16(out, src)
    assert cupy.array_equal(out, src)
    # One element off: 4-byte aligned only, which is all the launcher checked before vector accesses were tied to it.
    storage = cupy.full(32 * 8 + 1, cupy.nan, dtype=cupy.float32)
    shifted = storage[1:].reshape(32, 8)
    with pytest.raises(LaunchError) as info:
        module.copy16(shifted, src)
    assert info.value.code == "LG606"
    assert bool(cupy.isnan(storage).all()), "a refused launch wrote"
