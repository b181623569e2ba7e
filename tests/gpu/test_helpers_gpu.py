"""Helpers on the GPU: a kernel calls a device function of its preamble and one of a project header, which
the launcher finds relative to its generated module; an edited header is compiled again at the next
first launch, never a stale cubin. Outputs are poisoned with NaN first; inputs are random.

tests/test_helpers_includes.py shows the generated text and compiles it offline; these launch it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from layoutgen import Field, In, Kernel, Layout, Out, Spec, dims, f32
from layoutgen.codegen.render import render_spec

pytestmark = pytest.mark.gpu

B, F = dims("B F")
WINDOW = Layout("Window", [B], f32, [Field("snap", 40), Field("context", 16)])
FEATURES = Layout("Features", [B], f32, width=40)
TEMPLATE = """\
{% import "math.j2" as math %}
{% block preamble %}
#include "helpers.cuh"

__device__ inline float relu(float v) { return v > 0.0f ? v : 0.0f; }
{% endblock %}
    for (int f = 0; f < F; ++f)
        y.at(row, f) = relu(scaled(x.at(row, f))) + {{ math.one() }};
"""


def _module(root: Path, name: str, loaded_as: str) -> ModuleType:
    kernel = Kernel("helped", "helped.cu.j2", [In("x", [B, F]), Out("y", [B, F])], template_root=root)
    spec = Spec(name, kernels=[kernel.bind(x=WINDOW.snap, y=FEATURES)])
    rendered = render_spec(spec, root, "spec.py", cache_dir="../cache", templates=(root / "tpl",),
                           include=("../cuda/include",))
    assert rendered.diagnostics == (), [str(d) for d in rendered.diagnostics]
    for path, text in rendered.files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    module_spec = importlib.util.spec_from_file_location(loaded_as, root / name / "__init__.py")
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    return module


def _run(module: ModuleType, x: np.ndarray) -> np.ndarray:
    import cupy

    y = cupy.full((x.shape[0], 40), cupy.nan, dtype=cupy.float32)
    module.helped(cupy.asarray(x), y)
    out: np.ndarray = cupy.asnumpy(y)
    return out


def test_a_kernel_calls_its_preamble_and_a_project_header(tmp_path: Path) -> None:
    (tmp_path / "cuda" / "include").mkdir(parents=True)
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl" / "math.j2").write_text("{% macro one() %}1.0f{% endmacro %}\n")
    (tmp_path / "helped.cu.j2").write_text(TEMPLATE)
    header = tmp_path / "cuda" / "include" / "helpers.cuh"
    header.write_text("#pragma once\n__device__ inline float scaled(float v) { return 3.0f * v; }\n")
    x = np.random.default_rng(15).standard_normal((1000, 56)).astype(np.float32)
    snap = x[:, :40].astype(np.float64)

    first = _run(_module(tmp_path, "gpu_helpers", "gpu_helpers_first"), x)
    np.testing.assert_allclose(first, np.maximum(3.0 * snap, 0.0) + 1.0, rtol=1e-6, atol=1e-6)

    # The header changes, the generated files do not: the same module loaded afresh (a new process, in
    # effect) compiles again, through the same cache, and never loads the cubin of the old header.
    header.write_text("#pragma once\n__device__ inline float scaled(float v) { return -2.0f * v; }\n")
    second = _run(_module(tmp_path, "gpu_helpers", "gpu_helpers_second"), x)
    np.testing.assert_allclose(second, np.maximum(-2.0 * snap, 0.0) + 1.0, rtol=1e-6, atol=1e-6)
