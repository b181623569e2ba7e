"""The footprint checks on the GPU: the debug build stops the sanitizer's test kernels with the CPU run's words.

tests/specs/sanitizer/bad.py is rendered as the debug build (without its lint, which refuses some of these
kernels already: they must reach the device whatever the static checks learn to see) and launched on fresh
random data,
outputs poisoned with NaN. The kernels whose bad access goes through a view's or a tile's accessor
(`lane_loop`: a lane loop to the row stride; `narrow_fill`: a tile filled from a narrower field) stop at
their first bad access with LG611, whose message is the one `layoutgen check --execute` gives on the CPU
(LG651, tests/test_execute_host.py): the same function (`layoutgen.runtime.debug.field_fault`) words both,
from the same record, now with the block and thread. The correct kernels of tests/specs/sanitizer/good.py
run to the end in the same build and match numpy.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.gpu
BAD, GOOD = "tests/specs/sanitizer/bad.py", "tests/specs/sanitizer/good.py"
B, K = 3, 61  # the sizes `check --execute` chooses: 183 rows, a short last tile, warp and block

# `<N>`: which thread meets it first is the device's choice.
EXPECTED = {
    # A pointer taken in an expression stays checked (`(&x.at(0, 0))[row * FEATURE_STRIDE + c]`).
    "macro_stride": ("`macro_stride` read `x` (Window.snap) at row <N>, column <N>, outside the field's columns 0..96 "
                     "(rows 136 elements apart), in block <N>, thread <N>"),
    "lane_loop": ("`lane_loop` indexed `x` (Window.snap) at row <N>, column <N>, outside the field (183 rows, "
                  "96 columns), in block <N>, thread <N>; the thread stopped before the access"),
    "narrow_fill": ("`narrow_fill` indexed `n` (Narrow) at row <N>, column <N>, outside the field (183 rows, "
                    "40 columns), in block <N>, thread <N>; the thread stopped before the access"),
}


def _build(spec: str, out: str) -> ModuleType:
    """The debug build of ``spec`` rendered into ``build/<out>`` (ignored by git), its lint not run, imported."""
    from layoutgen.codegen.render import render_spec
    from layoutgen.project.specload import load_spec

    loaded = load_spec(REPO / spec)
    assert loaded.spec is not None
    rendered = render_spec(loaded.spec, REPO, spec, debug=True, out=f"build/{out}")
    assert not rendered.diagnostics, rendered.diagnostics
    for path, text in rendered.files.items():
        (REPO / "build" / out / path).parent.mkdir(parents=True, exist_ok=True)
        (REPO / "build" / out / path).write_text(text, encoding="utf-8")
    init = REPO / "build" / out / loaded.spec.name / "__init__.py"
    module_spec = importlib.util.spec_from_file_location(f"{out.replace('-', '_')}_{loaded.spec.name}", init)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


# The checked pointers of the debug build (tests/specs/sanitizer/pointers.py): the CPU run's LG650 words
# (tests/test_execute_host.py's POINTERS), reported as LG611 at the line where the pointer was taken.
POINTERS = "tests/specs/sanitizer/pointers.py"
POINTER_FAULTS = {
    "auto_pointer": ("tests/specs/sanitizer/auto_pointer.cu.j2:1",
                     "`auto_pointer` read `x` (Window.snap) at row <N>, column <N>, outside the field's columns 0..96 "
                     "(rows 136 elements apart), in block <N>, thread <N>"),
    "template_helper": ("tests/specs/sanitizer/template_helper.cu.j2:8",
                        "`template_helper` read `x` (Window.snap) at row <N>, column <N>, outside the field's columns "
                        "0..96 (rows 136 elements apart), in block <N>, thread <N>"),
    "auto_float4": ("tests/specs/sanitizer/auto_float4.cu.j2:1",
                    "`auto_float4` read `x` (Window.snap) at row <N>, column <N>, outside the field's columns 0..96 "
                    "(rows 136 elements apart), in block <N>, thread <N>"),
    "column_before": ("tests/specs/sanitizer/column_before.cu.j2:1",
                      "`column_before` read `x` (Odd.snap) at row <N>, column 0, outside the field's columns 1..96 "
                      "(rows 96 elements apart), in block <N>, thread <N>"),
}


@pytest.mark.parametrize("kernel", sorted(POINTER_FAULTS))
def test_the_debug_build_stops_each_checked_pointer_with_the_cpu_runs_message(kernel: str) -> None:
    import cupy

    from layoutgen.runtime.debug import KernelFault

    debug = _build(POINTERS, "gpu-sanitizer-pointers")
    rng = np.random.default_rng()
    width, out_width = (96, 95) if kernel == "column_before" else (136, 96)
    x = cupy.asarray(rng.normal(size=(B, K, width)).astype(np.float32))
    y = cupy.full((B, K, out_width), cupy.nan, cupy.float32)
    with pytest.raises(KernelFault) as fault:
        getattr(debug, kernel)(x, y)
    site, message = POINTER_FAULTS[kernel]
    assert fault.value.code == "LG611"
    assert str(fault.value.diagnostic.site) == site
    assert re.fullmatch(re.escape(message).replace("<N>", r"\d+"), fault.value.diagnostic.message), str(fault.value)


def _arrays(kernel: str) -> list[object]:
    import cupy

    rng = np.random.default_rng()
    window = cupy.asarray(rng.normal(size=(B, K, 136)).astype(np.float32))
    narrow = cupy.asarray(rng.normal(size=(B, K, 40)).astype(np.float32))
    out = cupy.full((B, K, 96), cupy.nan, cupy.float32)
    return [window, narrow, out] if kernel == "narrow_fill" else [window, out]


@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_the_debug_build_stops_each_accessor_spelling_with_the_cpu_runs_message(kernel: str) -> None:
    from layoutgen.runtime.debug import KernelFault

    debug = _build(BAD, "gpu-sanitizer-debug")
    with pytest.raises(KernelFault) as fault:
        getattr(debug, kernel)(*_arrays(kernel))
    assert fault.value.code == "LG611"
    pattern = re.escape(EXPECTED[kernel]).replace("<N>", r"\d+")
    assert re.search(pattern, str(fault.value)), str(fault.value)


def test_the_correct_kernels_run_to_the_end_in_the_debug_build() -> None:
    import cupy

    good = _build(GOOD, "gpu-sanitizer-good")
    rng = np.random.default_rng()
    window = rng.normal(size=(B, K, 136)).astype(np.float32)
    snap = window[..., :96].astype(np.float64)
    x = cupy.asarray(window)
    for name, want in (("pointer_rows", snap), ("entry_rows", snap), ("auto_pointer_rows", snap), ("tail_one", 2 * snap),
                       ("tail_r_minus_1", 2 * snap), ("ring", snap + 1),
                       ("warp_shuffle", snap - snap.sum(axis=-1, keepdims=True) / 96)):
        y = cupy.full((B, K, 96), cupy.nan, cupy.float32)
        getattr(good, name)(x, y)
        assert np.allclose(y.get(), want, rtol=1e-5, atol=1e-5), name
    total0 = rng.normal(size=96).astype(np.float32)
    total = cupy.asarray(total0)
    good.block_sum(x, total)
    assert np.allclose(total.get(), total0 + snap.sum(axis=(0, 1)), rtol=1e-4, atol=1e-4)
