"""Programs on the GPU: the VSN training step run plainly and replayed from a CUDA graph,
and the debug build catching an out-of-field access and a NaN at the kernel that made them.

Inputs are fresh random data and every buffer a launch writes is poisoned
with NaN first, so an element nothing wrote shows up as an error.
"""

from __future__ import annotations

import numpy as np
import pytest

from examples.vsn import reference as ref
from tests.helpers.gpu_program import LR, B_, K_, build, step_buffers, step_inputs

pytestmark = pytest.mark.gpu
TOL = 1e-5


def test_vsn_step_matches_the_reference_and_graph_replay_matches_plain_launches() -> None:
    import generated.vsn as vsn

    inputs = step_inputs(np.random.default_rng())
    want = ref.vsn_step(inputs["raw"], inputs["stats"], inputs["ctx"], inputs["target"], inputs["W"],
                        inputs["b"], LR)
    plain = step_buffers(inputs)
    vsn.vsn_step(**plain, lr=LR)
    for name, expected in want.items():
        assert ref.relative_error(plain[name].get(), expected) < TOL, name

    replayed = step_buffers(inputs)
    graph = vsn.capture_vsn_step(**replayed, lr=LR)
    assert graph.launches == 7 and graph.values == {"lr": LR}
    assert np.isnan(replayed["y"].get()).all()  # captured, not run
    graph.replay()
    import cupy

    cupy.cuda.get_current_stream().synchronize()
    for name in want:
        got, same = replayed[name].get(), plain[name].get()
        if name in ("grad_W", "grad_b", "W", "b"):  # atomic accumulation: the order of additions varies
            assert ref.relative_error(got, same.astype(np.float64)) < 1e-6, name
        else:
            assert np.array_equal(got, same), name


def test_graph_replay_trains_with_growing_context_and_stays_finite() -> None:
    import cupy

    import generated.vsn as vsn

    rng = np.random.default_rng()
    inputs = step_inputs(rng)
    inputs["W"] = rng.normal(size=(40, 40)) * 0.05
    inputs["b"] = np.zeros(40)
    x = ref.snap_feature_assemble(inputs["raw"], inputs["stats"])
    inputs["target"] = ref.vsn_forward(x, rng.normal(size=(40, 40)) * 0.5, rng.normal(size=40))[1]
    buffers = step_buffers(inputs)
    graph = vsn.capture_vsn_step(**buffers, lr=30.0 / (B_ * K_))  # the learning rate is kept by the graph
    ctx = np.zeros((B_, 16), np.float32)
    losses = []
    for step in range(500):
        ctx[:, 0], ctx[:, 2] = step, step * 2000.0  # time in trade, position size: 1e6 by the end
        buffers["ctx"].set(ctx)  # same address: the graph reads the new values
        graph.replay()
        diff = buffers["y"] - buffers["target"]
        losses.append(float((diff * diff).mean()))
    assert float(buffers["window"][..., 42].max()) == pytest.approx(499 * 2000.0)
    assert np.isfinite(losses).all() and losses[-1] < 0.5 * losses[0], (losses[0], losses[-1])
    assert all(bool(cupy.isfinite(buffers[n]).all()) for n in ("W", "b", "gates", "y", "grad_x"))


def test_debug_build_stops_an_access_outside_the_field_and_names_it() -> None:
    import cupy

    from layoutgen.runtime.debug import KernelFault

    debug = build("tests/specs/debug/spec.py", "gpu-debug-shift", "--debug")
    release = build("tests/specs/debug/spec.py", "gpu-release-shift")
    rng = np.random.default_rng()
    row = cupy.asarray(rng.normal(size=(32, 16)).astype(np.float32))
    for module in (debug, release):  # in bounds: both builds copy the head
        dst = cupy.full((32, 8), cupy.nan, cupy.float32)
        module.shift(row, cupy.zeros(1, cupy.float32), dst)
        assert np.array_equal(dst.get(), row.get()[:, :8])
    # One column too far: the release build silently reads Row.tail ...
    dst = cupy.full((32, 8), cupy.nan, cupy.float32)
    release.shift(row, cupy.ones(1, cupy.float32), dst)
    assert np.array_equal(dst.get()[:, 7], row.get()[:, 8])
    # ... the debug build stops the thread and says where.
    with pytest.raises(KernelFault) as fault:
        debug.shift(row, cupy.ones(1, cupy.float32), cupy.full((32, 8), cupy.nan, cupy.float32))
    message = str(fault.value)
    assert fault.value.code == "LG611"
    assert "`shift` indexed `src` (Row.head)" in message and "column 8, outside the field" in message, message
    assert "(32 rows, 8 columns)" in message
    # The fault was cleared and the context is healthy: the next launch runs.
    dst = cupy.full((32, 8), cupy.nan, cupy.float32)
    debug.shift(row, cupy.zeros(1, cupy.float32), dst)
    assert np.array_equal(dst.get(), row.get()[:, :8])


def test_debug_build_checks_the_column_of_a_row_object() -> None:
    """`src.row(r)[c]` is a checked row in the debug build: one column past the field stops the thread."""
    import cupy

    from layoutgen.runtime.debug import KernelFault

    debug = build("tests/specs/debug/spec.py", "gpu-debug-shift", "--debug")
    release = build("tests/specs/debug/spec.py", "gpu-release-shift")
    row = cupy.asarray(np.random.default_rng().normal(size=(32, 16)).astype(np.float32))
    for module in (debug, release):
        dst = cupy.full((32, 8), cupy.nan, cupy.float32)
        module.shift_row(row, cupy.zeros(1, cupy.float32), dst)
        assert np.array_equal(dst.get(), row.get()[:, :8])
    dst = cupy.full((32, 8), cupy.nan, cupy.float32)
    release.shift_row(row, cupy.ones(1, cupy.float32), dst)  # reads Row.tail's first column, silently
    assert np.array_equal(dst.get()[:, 7], row.get()[:, 8])
    with pytest.raises(KernelFault) as fault:
        debug.shift_row(row, cupy.ones(1, cupy.float32), cupy.full((32, 8), cupy.nan, cupy.float32))
    message = str(fault.value)
    assert fault.value.code == "LG611"
    assert "`shift_row` indexed `src` (Row.head)" in message and "column 8, outside the field" in message, message


def test_debug_build_names_the_kernel_that_first_wrote_nan() -> None:
    from layoutgen.runtime.debug import NonFiniteOutput

    debug = build("examples/vsn/spec.py", "gpu-debug-vsn", "--debug")
    inputs = step_inputs(np.random.default_rng())
    clean = step_buffers(inputs)
    debug.vsn_step(**clean, lr=LR)  # finite inputs: every launch passes its scan
    inputs["W"][3, 5] = np.nan  # one bad weight: the forward kernel is the first to write NaN
    planted = step_buffers(inputs)
    with pytest.raises(NonFiniteOutput) as bad:
        debug.vsn_step(**planted, lr=LR)
    message = str(bad.value)
    assert bad.value.code == "LG612"
    assert message.startswith("error[LG612]: `variable_selection_fwd` wrote NaN to `gates` (Features) at index [0, 0, "), message
    assert np.isnan(planted["grad_y"].get()).all()  # stopped there: later kernels did not run


def test_debug_scan_counts_columns_of_d_and_names_the_element() -> None:
    import cupy

    from layoutgen.runtime.debug import NonFiniteOutput

    debug = build("examples/qkv/spec.py", "gpu-debug-qkv", "--debug")
    b, s, d = 2, 3, 64
    rng = np.random.default_rng()
    host = rng.normal(size=(b, s, 48 * d)).astype(np.float32)
    host[1, 2, 38 * d + 5] = np.nan  # key head 6, element 5: past the first 1/D of the row
    buf = cupy.asarray(host)
    with pytest.raises(NonFiniteOutput) as bad:
        debug.rope(buf, buf, cupy.zeros((b, s, 1), cupy.int32))
    assert "`rope` wrote NaN to `k` (QKV.k) at index [1, 2, " + str(38 * d + 5) + "] of the QKV array" in str(bad.value)


def test_debug_scan_covers_only_the_named_range_the_kernel_wrote() -> None:
    import cupy

    from layoutgen.runtime.debug import NonFiniteOutput

    debug = build("tests/specs/ranges/spec.py", "gpu-debug-ranges", "--debug")
    obs = np.random.default_rng().normal(size=(2, 8, 32, 32)).astype(np.float32)
    obs[:, :3] = np.nan  # t1: not this kernel's rows
    obs[..., 30:] = np.nan  # padding
    arr = cupy.asarray(obs)
    debug.scale_rows(arr)  # writes t2.x only: nothing of what it wrote is NaN
    assert np.isnan(arr.get()[:, :3]).all()
    arr[1, 5, 7, 9] = cupy.inf
    with pytest.raises(NonFiniteOutput) as bad:
        debug.scale_rows(arr)
    assert "`scale_rows` wrote Inf to `x` (Obs.t2.x) at index [1, 5, 7, 9] of the Obs array" in str(bad.value)


def test_debug_build_checks_each_index_of_an_accessor() -> None:
    import cupy

    from layoutgen.runtime.debug import KernelFault

    debug = build("tests/specs/debug/spec.py", "gpu-debug-shift", "--debug")
    release = build("tests/specs/debug/spec.py", "gpu-release-shift")
    heads = cupy.asarray(np.random.default_rng().normal(size=(16, 32)).astype(np.float32))
    # The release build reads the next head's first element for the last one of heads 0..2.
    dst = cupy.full((16, 32), cupy.nan, cupy.float32)
    release.shift_heads(heads, cupy.zeros(1, cupy.float32), dst)
    assert np.array_equal(dst.get(), heads.get())
    with pytest.raises(KernelFault) as fault:
        debug.shift_heads(heads, cupy.ones(1, cupy.float32), cupy.full((16, 32), cupy.nan, cupy.float32))
    assert fault.value.code == "LG611"
    assert "`shift_heads` indexed `src` (Heads.h) with 8 as index 2 of its accessor, outside 0..8" in str(fault.value)
