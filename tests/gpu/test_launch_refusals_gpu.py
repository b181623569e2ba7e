"""Every wrong-array case is refused on a real device before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from layoutgen.runtime.launch import LaunchError

pytestmark = pytest.mark.gpu
B, K = 4, 6


@pytest.fixture
def args():  # type: ignore[no-untyped-def]
    import cupy

    rng = cupy.random.default_rng()
    return {
        "x": rng.standard_normal((B, K, 56), dtype=cupy.float32),
        "W": rng.standard_normal((40, 40), dtype=cupy.float32),
        "b": rng.standard_normal(40, dtype=cupy.float32),
        "gates": cupy.full((B, K, 40), cupy.nan, dtype=cupy.float32),
        "y": cupy.full((B, K, 40), cupy.nan, dtype=cupy.float32),
    }


def _refused(code: str, fragment: str, **args):  # type: ignore[no-untyped-def]
    import cupy

    import generated.vsn as vsn

    with pytest.raises(LaunchError) as info:
        vsn.variable_selection_fwd(args["x"], args["W"], args["b"], args["gates"], args["y"])
    cupy.cuda.runtime.deviceSynchronize()
    assert info.value.code == code, str(info.value)
    assert fragment in str(info.value)
    assert "variable_selection_fwd" in str(info.value)
    for a in (args["gates"], args["y"]):  # no kernel ran: the outputs still hold their poison
        if isinstance(a, cupy.ndarray) and a.size:
            assert bool(cupy.isnan(a).all())
    return info.value


def test_the_motivating_bug_a_packed_40_wide_input_is_refused(args) -> None:  # type: ignore[no-untyped-def]
    args["x"] = args["x"][..., :40].copy()  # the features alone, packed: not a Window
    _refused("LG601", "Window [B, K, 56]", **args)


def test_wrong_dtype(args) -> None:  # type: ignore[no-untyped-def]
    args["W"] = args["W"].astype("float64")
    _refused("LG602", "needs f32 elements, got shape [40, 40], strides (40, 1) (elements), f64", **args)


def test_inconsistent_symbolic_dims(args) -> None:  # type: ignore[no-untyped-def]
    import cupy

    args["y"] = cupy.full((B + 1, K, 40), cupy.nan, dtype=cupy.float32)
    _refused("LG603", "`B` = 5", **args)


def test_transposed_array(args) -> None:  # type: ignore[no-untyped-def]
    args["W"] = args["W"].T
    _refused("LG604", "packed strides", **args)


def test_column_slice_of_a_wider_buffer(args) -> None:  # type: ignore[no-untyped-def]
    import cupy

    wide = cupy.full((B, K, 56), cupy.nan, dtype=cupy.float32)
    args["gates"] = wide[..., :40]  # right shape, rows 56 apart
    _refused("LG604", "(336, 56, 1)", **args)


def test_host_array(args) -> None:  # type: ignore[no-untyped-def]
    args["b"] = np.zeros(40, np.float32)
    _refused("LG608", "host array", **args)


@pytest.mark.parametrize(("name", "offset"), [("b", 2), ("gates", 4)], ids=["off-element", "off-vector"])
def test_misaligned_pointer(args, name: str, offset: int) -> None:  # type: ignore[no-untyped-def]
    """A base 2 bytes off (not even an element) and 4 bytes off (an element, but not the 16 bytes the kernel's
    vector stores of `gates` need): the alignment named is the one the generated launcher declares."""
    import cupy

    import generated.vsn as vsn

    align = next(p.align for p in vsn._lg_kernel_variable_selection_fwd.spec.params if p.name == name)
    assert align > offset  # else the case would not be misaligned
    raw = cupy.cuda.alloc(args[name].nbytes + 16)
    args[name] = cupy.ndarray(args[name].shape, cupy.float32, cupy.cuda.MemoryPointer(raw.mem, offset))
    if name == "gates":  # an output: poisoned, so a kernel that ran shows (`b`, an element off, cannot be written)
        args[name].fill(cupy.nan)
    _refused("LG606", f"needs its base pointer aligned to {align} bytes", **args)


def test_read_only_jax_output(args) -> None:  # type: ignore[no-untyped-def]
    jnp = pytest.importorskip("jax.numpy")
    import jax

    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    out = jax.device_put(jnp.zeros((B, K, 40), jnp.float32))
    out.block_until_ready()
    args["y"] = out
    _refused("LG607", "read-only", **args)
