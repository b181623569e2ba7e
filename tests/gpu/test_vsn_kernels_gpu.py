"""Every VSN launcher against its float64 NumPy reference, on an H200.

Inputs are fresh random data; outputs are poisoned with NaN first, so an
element the kernel did not write shows, and the columns a kernel must not
touch are checked to still hold their poison.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from examples.vsn import reference as ref

pytestmark = pytest.mark.gpu
TOL = 1e-5


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


@pytest.fixture
def vsn():  # type: ignore[no-untyped-def]
    import generated.vsn as module

    return module


def _device(a: np.ndarray):  # type: ignore[no-untyped-def]
    import cupy

    return cupy.asarray(np.ascontiguousarray(a, dtype=np.float32))


def _poisoned(*shape: int):  # type: ignore[no-untyped-def]
    import cupy

    return cupy.full(shape, cupy.nan, dtype=cupy.float32)


B, K = 7, 33  # odd sizes: the grid's last block is partly idle


def test_snap_feature_assemble_writes_only_snap(vsn, rng) -> None:  # type: ignore[no-untyped-def]
    raw = rng.normal(2.0, 3.0, (B, K, 40))
    stats = np.stack([rng.normal(size=40), rng.uniform(0.1, 2.0, 40)], axis=1)
    window = _poisoned(B, K, 56)
    vsn.snap_feature_assemble(_device(raw), _device(stats), _device(stats), window)
    got = window.get()
    assert ref.relative_error(got[..., ref.SNAP], ref.snap_feature_assemble(raw, stats)) < TOL
    assert np.isnan(got[..., ref.CONTEXT]).all(), "the kernel wrote outside Window.snap"


def test_context_broadcast_writes_only_context(vsn, rng) -> None:  # type: ignore[no-untyped-def]
    ctx = rng.normal(size=(B, 16)) * 10
    window = _poisoned(B, K, 56)
    vsn.context_broadcast(_device(ctx), window)
    got = window.get()
    assert ref.relative_error(got[..., ref.CONTEXT], ref.context_broadcast(ctx, K)) < TOL
    assert np.isnan(got[..., ref.SNAP]).all(), "the kernel wrote outside Window.context"


def _window(rng: np.random.Generator) -> np.ndarray:
    window = rng.normal(size=(B, K, 56))
    window[..., ref.CONTEXT] *= 50.0  # large context values: a wrong stride would show at once
    return window


def test_variable_selection_fwd(vsn, rng) -> None:  # type: ignore[no-untyped-def]
    window, w, b = _window(rng), rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    gates, y = _poisoned(B, K, 40), _poisoned(B, K, 40)
    vsn.variable_selection_fwd(_device(window), _device(w), _device(b), gates, y)
    want_gates, want_y = ref.vsn_forward(window[..., ref.SNAP], w, b)
    assert ref.relative_error(gates.get(), want_gates) < TOL
    assert ref.relative_error(y.get(), want_y) < TOL


def test_variable_selection_bwd_accumulates(vsn, rng) -> None:  # type: ignore[no-untyped-def]
    window, w, b = _window(rng), rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    gates, _ = ref.vsn_forward(window[..., ref.SNAP], w, b)
    grad_y = rng.normal(size=(B, K, 40))
    grad_w0, grad_b0 = rng.normal(size=(40, 40)), rng.normal(size=40)  # accumulators start non-zero
    grad_x, grad_w, grad_b = _poisoned(B, K, 40), _device(grad_w0), _device(grad_b0)
    vsn.variable_selection_bwd(_device(window), _device(w), _device(gates), _device(grad_y), grad_x, grad_w, grad_b)
    want_x, want_w, want_b = ref.vsn_backward(window[..., ref.SNAP], w, gates, grad_y)
    assert ref.relative_error(grad_x.get(), want_x) < TOL
    assert ref.relative_error(grad_w.get() - grad_w0, want_w) < 1e-4  # float32 atomics over B*K rows
    assert ref.relative_error(grad_b.get() - grad_b0, want_b) < 1e-4


# The kernels' warps own tiles of 32 rows (4 warps a block, as many blocks as stay resident): a last tile of 1
# row, of 31 (R - 1), and fewer tiles than warps, with [B, K] such that B * K is 129, 255 and 100; and many
# tiles per warp (every stage of the forward's ring, many rounds of the backward's sums).
TILE_SHAPES = [(1, 129), (3, 85), (4, 25), (64, 515), (4096, 512)]


@pytest.mark.parametrize(("b_", "k_"), TILE_SHAPES)
def test_the_forward_covers_every_tail(vsn, rng, b_: int, k_: int) -> None:  # type: ignore[no-untyped-def]
    window = rng.normal(size=(b_, k_, 56))
    window[..., ref.CONTEXT] *= 50.0
    w, b = rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    gates, y = _poisoned(b_, k_, 40), _poisoned(b_, k_, 40)
    vsn.variable_selection_fwd(_device(window), _device(w), _device(b), gates, y)
    want_gates, want_y = ref.vsn_forward(window[..., ref.SNAP], w, b)
    assert ref.relative_error(gates.get(), want_gates) < TOL
    assert ref.relative_error(y.get(), want_y) < TOL


@pytest.mark.parametrize(("b_", "k_"), TILE_SHAPES)
def test_the_backward_covers_every_tail(vsn, rng, b_: int, k_: int) -> None:  # type: ignore[no-untyped-def]
    window = rng.normal(size=(b_, k_, 56))
    w, b = rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    gates, _ = ref.vsn_forward(window[..., ref.SNAP], w, b)
    grad_y = rng.normal(size=(b_, k_, 40))
    grad_x, grad_w, grad_b = _poisoned(b_, k_, 40), _device(np.zeros((40, 40))), _device(np.zeros(40))
    vsn.variable_selection_bwd(_device(window), _device(w), _device(gates), _device(grad_y), grad_x, grad_w, grad_b)
    want_x, want_w, want_b = ref.vsn_backward(window[..., ref.SNAP], w, gates, grad_y)
    assert ref.relative_error(grad_x.get(), want_x) < TOL
    assert ref.relative_error(grad_w.get(), want_w) < 1e-4
    assert ref.relative_error(grad_b.get(), want_b) < 1e-4


def test_launch_on_a_given_stream(vsn, rng) -> None:  # type: ignore[no-untyped-def]
    import cupy

    window, w, b = _window(rng), rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    gates, y = _poisoned(B, K, 40), _poisoned(B, K, 40)
    stream = cupy.cuda.Stream(non_blocking=True)
    vsn.variable_selection_fwd(_device(window), _device(w), _device(b), gates, y, stream=stream)
    stream.synchronize()
    assert ref.relative_error(y.get(), ref.vsn_forward(window[..., ref.SNAP], w, b)[1]) < TOL


def test_torch_tensors_zero_copy(vsn, rng) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    window, w, b = _window(rng), rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    t = lambda a: torch.tensor(a, dtype=torch.float32, device="cuda")  # noqa: E731
    gates, y = torch.full((B, K, 40), float("nan"), device="cuda"), torch.full((B, K, 40), float("nan"), device="cuda")
    vsn.variable_selection_fwd(t(window), t(w), t(b), gates, y)
    torch.cuda.synchronize()
    want_gates, want_y = ref.vsn_forward(window[..., ref.SNAP], w, b)
    assert ref.relative_error(gates.cpu().numpy(), want_gates) < TOL  # visible in the caller's tensor
    assert ref.relative_error(y.cpu().numpy(), want_y) < TOL


def test_jax_inputs(vsn, rng) -> None:  # type: ignore[no-untyped-def]
    jnp = pytest.importorskip("jax.numpy")
    import jax

    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    window, w, b = _window(rng), rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    j = lambda a: jax.device_put(jnp.asarray(a, dtype=jnp.float32))  # noqa: E731
    gates, y = _poisoned(B, K, 40), _poisoned(B, K, 40)
    inputs = [j(window), j(w), j(b)]
    for a in inputs:
        a.block_until_ready()
    vsn.variable_selection_fwd(*inputs, gates, y)
    want_gates, want_y = ref.vsn_forward(window[..., ref.SNAP], w, b)
    assert ref.relative_error(gates.get(), want_gates) < TOL
    assert ref.relative_error(y.get(), want_y) < TOL


def _by_hand(name: str):  # type: ignore[no-untyped-def]
    """The kernel by hand (benchmarks/roofline), compiled as bench_roofline.py compiles it."""
    import cupy

    from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin
    from tests.helpers.gpu_program import REPO

    arch = f"sm_{cupy.cuda.Device().compute_capability}"
    source = (REPO / "benchmarks" / "roofline" / f"{name}.cu").read_text()
    result = compile_cubin(CompileRequest(source=source, name=f"{name}.cu", arch=arch,
                                          include_dirs=(str(REPO / "examples" / "vsn" / "include"),)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.cubin"
        path.write_bytes(result.cubin)
        return cupy.RawModule(path=str(path)).get_function(name)


def test_the_generated_kernels_equal_the_kernels_by_hand_bit_for_bit(vsn, rng) -> None:  # type: ignore[no-untyped-def]
    """The same algorithm with literal strides (benchmarks/roofline/vsn_*_hand.cu) on the same launch shape: the
    same gates, y and grad_x bits (grad_W and grad_b are sums of atomics, compared with float64 only)."""
    import cupy

    b_, k_ = 64, 515
    window, w, b = rng.normal(size=(b_, k_, 56)), rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    grad_y = _device(rng.normal(size=(b_, k_, 40)))
    args = [_device(window), _device(w), _device(b)]
    gates, y = _poisoned(b_, k_, 40), _poisoned(b_, k_, 40)
    vsn.variable_selection_fwd(*args, gates, y)
    grad_x, grad_w, grad_b = _poisoned(b_, k_, 40), _device(np.zeros((40, 40))), _device(np.zeros(40))
    vsn.variable_selection_bwd(args[0], args[1], gates, grad_y, grad_x, grad_w, grad_b)
    n = np.int64
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    tiles = (b_ * k_ + 31) // 32
    tile = 32 * 44 * 4
    for name, smem in (("vsn_fwd_hand", 4 * 4 * tile), ("vsn_bwd_hand", 4 * 3 * tile + (4 * 40 * 40 + 4 * 40) * 4)):
        kernel = _by_hand(name)
        kernel.max_dynamic_shared_size_bytes = smem
        per_sm = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, 128, smem)
        blocks = min(per_sm * sms, (tiles + 3) // 4)
        if name == "vsn_fwd_hand":
            hand_gates, hand_y = _poisoned(b_, k_, 40), _poisoned(b_, k_, 40)
            kernel((blocks,), (128,), (*args, hand_gates, hand_y, n(b_), n(k_)), shared_mem=smem)
            assert bool(cupy.array_equal(hand_gates, gates)) and bool(cupy.array_equal(hand_y, y))
        else:
            hand_x, hand_w, hand_b = _poisoned(b_, k_, 40), _device(np.zeros((40, 40))), _device(np.zeros(40))
            kernel((blocks,), (128,), (args[0], args[1], gates, grad_y, hand_x, hand_w, hand_b, n(b_), n(k_)),
                   shared_mem=smem)
            assert bool(cupy.array_equal(hand_x, grad_x))
            _, want_w, want_b = ref.vsn_backward(window[..., ref.SNAP], w, gates.get(), grad_y.get())
            assert ref.relative_error(hand_w.get(), want_w) < 1e-4 and ref.relative_error(hand_b.get(), want_b) < 1e-4
