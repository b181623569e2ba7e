"""The footprint checks on the GPU: the debug build stops every test kernel of the sanitizer with the CPU run's words.

tests/specs/sanitizer/bad.py and pointers.py are rendered as the debug build (without their lint, which refuses some
of these kernels already: they must reach the device whatever the static checks learn to see) and every kernel is
launched at the sizes `layoutgen check --execute` chooses (B, K = 3, 61: 183 rows, a short last tile, warp and
block), on fresh random inputs, outputs poisoned with NaN. Each must stop with the debug build's code for the CPU
run's (LG611 for LG650 and LG651, LG642 for LG652, LG612 for LG654 and LG655), at the CPU run's line (or the one
the GPU can name: the helpers' GPU_SITES says where and why; GPU_FINDINGS, where the GPU's checks find more than
the CPU run's), with its
message: tests/helpers/sanitizer_expectations.py holds what the CPU run says (tests/test_execute_host.py reads it
too), and one function of layoutgen/runtime/debug.py words each finding for both. The block may differ: the CPU
runs the blocks one after another, the GPU at once. The code and message, and the site, are asserted apart, so a
run says which of the two disagrees.

The correct kernels of tests/specs/sanitizer/good.py run to the end in the same build (its checked barriers, tiles
and pointers) and match float64 numpy.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tests.helpers.sanitizer_expectations import EXPECTED, POINTERS, on_the_gpu, pattern

REPO = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.gpu
BAD, POINTER_SPEC, GOOD = ("tests/specs/sanitizer/bad.py", "tests/specs/sanitizer/pointers.py",
                           "tests/specs/sanitizer/good.py")
SIZES = {"B": 3, "K": 61}  # the sizes `check --execute` chooses: 183 rows, a short last tile, warp and block
B, K = SIZES["B"], SIZES["K"]
_BUILT: dict[str, ModuleType] = {}


def _build(spec: str) -> ModuleType:
    """The debug build of ``spec`` rendered into ``build/gpu-sanitizer/`` (ignored by git), its lint not run,
    imported (once a session)."""
    if spec in _BUILT:
        return _BUILT[spec]
    from layoutgen.codegen.render import render_spec
    from layoutgen.project.specload import load_spec

    out = "build/gpu-sanitizer"
    loaded = load_spec(REPO / spec)
    assert loaded.spec is not None
    rendered = render_spec(loaded.spec, REPO, spec, debug=True, out=out)
    assert not rendered.diagnostics, rendered.diagnostics
    for path, text in rendered.files.items():
        (REPO / out / path).parent.mkdir(parents=True, exist_ok=True)
        (REPO / out / path).write_text(text, encoding="utf-8")
    init = REPO / out / loaded.spec.name / "__init__.py"
    module_spec = importlib.util.spec_from_file_location(f"gpu_sanitizer_{loaded.spec.name}", init)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    _BUILT[spec] = module
    return module


def _arrays(module: ModuleType, kernel: str, rng: np.random.Generator) -> list[Any]:
    """An array for each parameter of ``kernel``, of its layout at :data:`SIZES`: inputs fresh random normal values,
    outputs NaN (what the kernel does not write stays NaN), an InOut random too (it is added to)."""
    import cupy

    spec = getattr(module, f"_lg_kernel_{kernel}").spec
    arrays = []
    for p in spec.params:
        shape = p.layout.shape_of(SIZES)
        if p.access == "out":
            arrays.append(cupy.full(shape, cupy.nan, p.layout.numpy))
        else:
            arrays.append(cupy.asarray(rng.normal(size=shape).astype(p.layout.numpy)))
    return arrays


def _fault(spec: str, kernel: str) -> str:
    """``kernel``'s launch in the debug build of ``spec``, as `site: code: message` of the fault it raised."""
    from layoutgen.runtime.errors import LaunchError

    module = _build(spec)
    with pytest.raises(LaunchError) as raised:
        getattr(module, kernel)(*_arrays(module, kernel, np.random.default_rng()))
    d = raised.value.diagnostic
    return f"{d.site}: {d.code}: {d.message}"


CASES = [(BAD, k, EXPECTED[k]) for k in sorted(EXPECTED)] + [(POINTER_SPEC, k, POINTERS[k]) for k in sorted(POINTERS)]


def _kernels(module: ModuleType) -> list[str]:
    """The kernels a generated module launches (its other public names are its layouts)."""
    return sorted(name for name in module.__all__ if hasattr(module, f"_lg_kernel_{name}"))


def test_every_kernel_of_the_specs_has_an_expectation() -> None:
    for spec, expected in ((BAD, EXPECTED), (POINTER_SPEC, POINTERS)):
        assert _kernels(_build(spec)) == sorted(expected), spec


@pytest.mark.parametrize(("spec", "kernel", "expected"), CASES, ids=[k for _, k, _ in CASES])
def test_the_debug_build_stops_each_kernel_with_the_cpu_runs_code_and_message(spec: str, kernel: str,
                                                                              expected: str) -> None:
    found = _fault(spec, kernel)
    _, code, message = on_the_gpu(expected, kernel).split(": ", 2)
    assert re.fullmatch(pattern(f"{code}: {message}", kernel), found.split(": ", 1)[1]), found


@pytest.mark.parametrize(("spec", "kernel", "expected"), CASES, ids=[k for _, k, _ in CASES])
def test_the_debug_build_stops_each_kernel_at_the_cpu_runs_line(spec: str, kernel: str, expected: str) -> None:
    found = _fault(spec, kernel)
    site = on_the_gpu(expected, kernel).split(": ", 1)[0]
    assert re.fullmatch(pattern(site, kernel), found.split(": ", 1)[0]), found


# Each correct kernel of good.py in float64 numpy, from the field it reads (`snap`: x's columns 0..96) and, for the
# sums into an InOut `total`, what `total` held before.
GOOD_KERNELS = {
    "pointer_rows": lambda s, before: s, "auto_pointer_rows": lambda s, before: s, "entry_rows": lambda s, before: s,
    "tail_one": lambda s, before: 2 * s, "tail_r_minus_1": lambda s, before: 2 * s, "ring": lambda s, before: s + 1,
    "warp_shuffle": lambda s, before: s - s.sum(axis=-1, keepdims=True) / 96,
    "block_sum": lambda s, before: before + s.sum(axis=(0, 1)),
    "static_shared_sum": lambda s, before: before + s.sum(axis=(0, 1)),
    "static_shared_entry": lambda s, before: before + s.sum(axis=(0, 1)),
}


def test_every_correct_kernel_is_checked() -> None:
    assert _kernels(_build(GOOD)) == sorted(GOOD_KERNELS)


@pytest.mark.parametrize("kernel", sorted(GOOD_KERNELS))
def test_the_correct_kernels_run_to_the_end_in_the_debug_build(kernel: str) -> None:
    """Each kernel of good.py (its checked barriers, tiles, pointers and all-ones shared memory), on fresh random
    inputs with its outputs poisoned, against float64 numpy."""
    good = _build(GOOD)
    x, out = _arrays(good, kernel, np.random.default_rng())
    before = out.get().astype(np.float64)
    getattr(good, kernel)(x, out)
    want = GOOD_KERNELS[kernel](x.get()[..., :96].astype(np.float64), before)
    tolerance = 1e-4 if kernel.endswith(("_sum", "_entry")) else 1e-5
    assert np.allclose(out.get(), want, rtol=tolerance, atol=tolerance), kernel
