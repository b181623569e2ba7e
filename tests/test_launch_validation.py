"""Launchers refuse a wrong array before anything runs: the validation logic, without a GPU.

``KernelLauncher.bind`` reads and checks every argument and launches nothing, so
fake device arrays (objects exposing ``__cuda_array_interface__``) exercise it on
the generated VSN launchers and on hand-built kernel specs. Every refusal asserts
its code and that the message names the kernel, the parameter, the expected
layout and the array's actual shape, strides and dtype.
"""

from __future__ import annotations

import timeit
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tests.fake_device import Recorded, fake_device
from tests.launch_paths import launch_path  # noqa: F401  (the fixture: every test through both launch paths)

import generated.vsn as vsn
from layoutgen.runtime import launch
from layoutgen.runtime.launch import KernelLauncher, KernelSpec, LaunchError, LayoutSpec, ParamSpec
from layoutgen.runtime.typed import Array, unwrap
from layoutgen.schema.diagnostics import CODES, LayoutgenError
from tests.helpers.launch import B, BASE, BWD, FWD, NAMES, K, Dev, ProtocolStream, fwd_args, launcher_of, packed

pytestmark = pytest.mark.usefixtures("launch_path")


def refused(code: str, launcher: KernelLauncher, arrays: tuple[Any, ...], param: str, device: int = 0) -> str:
    """``bind`` raises ``code``; the message names the kernel, the parameter and its layout. Returns it."""
    with pytest.raises(LaunchError) as info:
        launcher.bind(arrays, device=device)
    err = info.value
    text = str(err)
    assert err.code == code, text
    assert isinstance(err, LayoutgenError) and isinstance(err, ValueError)
    spec = launcher.spec
    p = next(p for p in spec.params if p.name == param)
    lay = p.layout
    assert f"`{spec.name}.{param}`" in text
    assert f"({p.view}, layout {lay.name} {lay.shape_text} {lay.dtype})" in text
    assert f"error[{code}]" in text
    return text


# the happy path ------------------------------------------------------------------------------------


def test_good_arrays_bind_to_pointers_in_parameter_order_and_symbols() -> None:
    pointers, bound = FWD.bind(fwd_args(), device=0)
    assert pointers == [BASE, BASE + 0x100000, BASE + 0x200000, BASE + 0x300000, BASE + 0x400000]
    assert bound == {"B": B, "K": K}
    assert FWD.grid(bound) == B * K  # one thread per row of x


def test_bind_again_and_with_other_shapes() -> None:
    launcher = FWD.fresh()
    for b, k in [(4, 8), (4, 8), (2, 3), (4, 8), (1, 1), (0, 5), (2, 3)]:
        pointers, bound = launcher.bind(fwd_args(b, k), device=0)
        assert bound == {"B": b, "K": k}
        assert len(pointers) == 5
        assert launcher.grid(bound) == b * k


def test_a_launch_on_another_device_binds_arrays_on_that_device() -> None:
    args = tuple(Dev(a.__cuda_array_interface__["shape"], device=1) for a in fwd_args())
    assert FWD.bind(args, device=1)[1] == {"B": B, "K": K}


def test_grid_counts_rows_or_threads_per_row_of_the_grid_parameter() -> None:
    window, ctx = Dev((B, K, 56)), Dev((B, 16))
    bcast = launcher_of(vsn, "context_broadcast")
    pointers, bound = bcast.bind((ctx, window), device=0)
    assert bound == {"B": B, "K": K}
    assert bcast.spec.params[bcast.spec.grid_param].name == "dst"
    assert bcast.grid(bound) == B * K * bcast.spec.per_row


# hand-built specs ----------------------------------------------------------------------------------

ROWS = LayoutSpec("Rows", ("N",), 8, "f16", 2)
TABLE = LayoutSpec("Table", (3, 5), 2, "f64", 8)
VECTOR = LayoutSpec("Vector", (), 40, "i32", 4)
SQUARE = LayoutSpec("Square", ("N", "N"), 4, "f32", 4)


def hand(params: tuple[ParamSpec, ...], symbols: tuple[str, ...], grid_param: int, per_row: int,
         name: str = "hand") -> KernelLauncher:
    spec = KernelSpec(name=name, source=f"{name}.cu", params=params, symbols=symbols, grid_param=grid_param,
                      per_row=per_row, block=64)
    return KernelLauncher(spec, FWD.folder, FWD.header)


def test_hand_built_spec_binds_and_grids() -> None:
    k = hand((ParamSpec("x", "in", ROWS, "Rows", 16), ParamSpec("t", "in", TABLE, "Table", 8),
              ParamSpec("v", "inout", VECTOR, "Vector", 4), ParamSpec("y", "out", ROWS, "Rows.half", 16)),
             symbols=("N",), grid_param=3, per_row=8)
    args = (Dev((10, 8), "<f2"), Dev((3, 5, 2), "<f8"), Dev((40,), "<i4"), Dev((10, 8), "<f2", ptr=BASE + 0x100))
    pointers, bound = k.bind(args, device=0)
    assert pointers == [BASE, BASE, BASE, BASE + 0x100]
    assert bound == {"N": 10}
    assert k.grid(bound) == 10 * 8  # one thread per element
    rows = hand(k.spec.params, ("N",), grid_param=1, per_row=1, name="rows")
    assert rows.grid(rows.bind(args, device=0)[1]) == 3 * 5  # static dims only
    vec = hand(k.spec.params, ("N",), grid_param=2, per_row=10, name="vec")
    assert vec.grid(vec.bind(args, device=0)[1]) == 10  # rank-1: one row


def test_hand_built_alignment_is_the_parameters() -> None:
    k = hand((ParamSpec("x", "in", ROWS, "Rows", 16),), ("N",), 0, 1)
    assert k.bind((Dev((10, 8), "<f2", ptr=BASE + 16),), device=0)[0] == [BASE + 16]
    x = Dev((10, 8), "<f2", ptr=BASE + 8)
    text = refused("LG606", k, (x,), "x")
    assert f"aligned to 16 bytes, got 0x{BASE + 8:x}" in text
    assert x.described() in text


def test_a_symbol_repeated_within_one_layout_must_agree() -> None:
    k = hand((ParamSpec("s", "in", SQUARE, "Square", 4),), ("N",), 0, 1)
    assert k.bind((Dev((3, 3, 4)),), device=0)[1] == {"N": 3}
    x = Dev((3, 4, 4))
    text = refused("LG603", k, (x,), "s")
    assert "axis 1 is `N` = 4, but `N` = 3" in text
    assert x.described() in text


def test_hand_built_static_dims_and_dtype() -> None:
    k = hand((ParamSpec("t", "in", TABLE, "Table", 8),), (), 0, 1)
    bad = Dev((3, 6, 2), "<f8")
    text = refused("LG601", k, (bad,), "t")
    assert "axis 1 must be 5" in text and bad.described() in text
    single = Dev((3, 5, 2), "<f4")
    text = refused("LG602", k, (single,), "t")
    assert "needs f64 elements" in text and single.described() in text


# LG601: shape ------------------------------------------------------------------------------------


def test_the_motivating_bug_packed_features_passed_as_a_window() -> None:
    x = Dev((B, K, 40))  # the features alone, packed: not a Window
    text = refused("LG601", FWD, fwd_args(x=x), "x")
    assert "Window [B, K, 56]" in text
    assert f"got an array of {x.described()}" in text
    assert "shape [4, 8, 40], strides (320, 40, 1) (elements), f32" in text
    assert "hint: pass the whole Window array, shape [B, K, 56], not a slice of it" in text


@pytest.mark.parametrize(("param", "shape"), [
    ("x", (B * K, 56)),  # rank 2 instead of 3
    ("x", (B, K, 56, 1)),  # rank 4
    ("x", (B, K, 57)),  # last axis
    ("W", (40,)),
    ("b", (1, 40)),
    ("b", ()),  # 0-d
    ("gates", (B, K, 56)),
])
def test_wrong_rank_or_width(param: str, shape: tuple[int, ...]) -> None:
    a = Dev(shape)
    text = refused("LG601", FWD, fwd_args(**{param: a}), param)
    assert f"got an array of {a.described()}" in text


def test_wrong_static_dim() -> None:
    w = Dev((41, 40))
    text = refused("LG601", FWD, fwd_args(W=w), "W")
    assert "axis 0 must be 40" in text
    assert "shape [41, 40], strides (40, 1) (elements), f32" in text


def test_wrong_argument_count() -> None:
    for args in (fwd_args()[:4], (*fwd_args(), Dev((40,))), ()):
        with pytest.raises(LaunchError) as info:
            FWD.bind(args, device=0)
        assert info.value.code == "LG601"
        assert f"`variable_selection_fwd` takes 5 arrays, got {len(args)}" in str(info.value)


# LG602: dtype ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("param", "shape", "typestr"), [
    ("W", (40, 40), "<f8"), ("x", (B, K, 56), "<f2"), ("y", (B, K, 40), "<i4"),
])
def test_wrong_dtype(param: str, shape: tuple[int, ...], typestr: str) -> None:
    a = Dev(shape, typestr)
    text = refused("LG602", FWD, fwd_args(**{param: a}), param)
    assert "needs f32 elements" in text
    assert a.described() in text and NAMES[typestr] in text


# bf16: what real bf16 producers report is accepted; other 2-byte types are not ------------------------

HALF = LayoutSpec("Half", ("N",), 8, "bf16", 2)


class FakeTorchDtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


def fake_cuda_tensor(dtype: str, shape: tuple[int, ...] = (4, 8)) -> Any:
    """What the launcher reads of a CUDA torch tensor (torch itself is not needed)."""
    kind = type("Tensor", (), {"__module__": "torch"})
    t = kind()
    t.is_cuda, t.dtype, t.shape, t.device = True, FakeTorchDtype(dtype), shape, SimpleNamespace(type="cuda", index=0)
    t.data_ptr = lambda: BASE
    t.stride = lambda: tuple(s // 2 for s in packed(shape, 2))
    t.is_neg = t.is_conj = lambda: False
    return t


@pytest.mark.parametrize("array", [
    Dev((4, 8), "<V2"),  # ml_dtypes' bfloat16 through __cuda_array_interface__ (JAX, CuPy)
    Dev((4, 8), "<u2"),  # bf16 bits as 16-bit words: what `Layout.empty` allocates for bf16
    fake_cuda_tensor("bfloat16"),
], ids=["V2", "u2", "torch.bfloat16"])
def test_bf16_arrays_are_accepted(array: Any) -> None:
    k = hand((ParamSpec("h", "inout", HALF, "Half", 2),), ("N",), 0, 1, name="bf16_ok")
    assert k.bind((array,), device=0) == ([BASE], {"N": 4})


@pytest.mark.parametrize("array", [Dev((4, 8), "<f2"), Dev((4, 8), "<i2"), fake_cuda_tensor("float16")],
                         ids=["f16", "i16", "torch.float16"])
def test_other_two_byte_types_are_refused_for_bf16(array: Any) -> None:
    k = hand((ParamSpec("h", "inout", HALF, "Half", 2),), ("N",), 0, 1, name="bf16_refused")
    text = refused("LG602", k, (array,), "h")
    assert "(Half, layout Half [N, 8] bf16) needs bf16 elements, got shape [4, 8], strides (8, 1) (elements), f" \
        in text or "needs bf16 elements, got shape [4, 8], strides (8, 1) (elements), i16" in text


def test_layout_specs_name_layoutgen_dtypes() -> None:
    assert HALF.numpy == "uint16" and SQUARE.numpy == "float32"
    with pytest.raises(ValueError, match="`dtype` must be one of f64, f32"):
        LayoutSpec("Old", (), 4, "float32", 4)  # numpy's name: generated code from before names "f32"


# LG609: the driver's refusal is a LaunchError too ----------------------------------------------------


def test_a_launch_the_driver_refuses_is_a_launch_error() -> None:
    import ctypes
    import threading

    from layoutgen.runtime.driver import CupyLaunch, PackedLaunch

    packed_launch = object.__new__(PackedLaunch)  # without cuda.bindings: its driver call faked
    packed_launch.__dict__.update(
        _launch=lambda *args: ("CUDA_ERROR_INVALID_VALUE",), _success="CUDA_SUCCESS", _function=0, _name="fwd",
        _values=(ctypes.c_uint64 * 1)(), _address=0, _streams={}, _stream_type=int, _lock=threading.Lock(),
    )
    with pytest.raises(LaunchError) as info:
        packed_launch(1, 32, [0], ProtocolStream(0))
    assert info.value.code == "LG609" and "cuLaunchKernel of `fwd` failed: 'CUDA_ERROR_INVALID_VALUE'" in str(info.value)

    import cupy

    class Refused(cupy.cuda.driver.CUDADriverError):  # built without the driver (its own __init__ asks it)
        def __init__(self) -> None:
            RuntimeError.__init__(self, "CUDA_ERROR_INVALID_VALUE: invalid argument")

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise Refused()

    with pytest.raises(LaunchError) as info:
        CupyLaunch(refuse, "fwd")(1, 32, [0], cupy.cuda.Stream.null)
    assert info.value.code == "LG609" and "CUDA_ERROR_INVALID_VALUE" in str(info.value)


# LG603: one B, one K -----------------------------------------------------------------------------


def test_b_bound_inconsistently_across_arguments() -> None:
    gates = Dev((5, K, 40))
    text = refused("LG603", FWD, fwd_args(gates=gates), "gates")
    assert "axis 0 is `B` = 5, but `B` = 4 from an earlier argument" in text
    assert "shape [5, 8, 40], strides (320, 40, 1) (elements), f32" in text
    assert "hint: every `B` of one launch must agree" in text


def test_k_bound_inconsistently_across_arguments() -> None:
    y = Dev((B, K + 1, 40))
    text = refused("LG603", FWD, fwd_args(y=y), "y")
    assert "axis 1 is `K` = 9, but `K` = 8" in text and y.described() in text


def test_the_first_argument_binds_the_symbols() -> None:
    x = Dev((5, K, 56))  # x disagrees with every other argument: the others are refused
    text = refused("LG603", FWD, fwd_args(x=x), "gates")
    assert "`B` = 4, but `B` = 5" in text


def test_symbols_across_layouts_of_different_rank() -> None:
    bcast = launcher_of(vsn, "context_broadcast")
    ctx = Dev((B + 1, 16))
    text = refused("LG603", bcast, (ctx, Dev((B, K, 56))), "dst")
    assert "`B` = 4, but `B` = 5" in text


# LG604: packed strides ---------------------------------------------------------------------------


def test_transposed_is_refused() -> None:
    w = Dev((40, 40), strides=(4, 160))
    text = refused("LG604", FWD, fwd_args(W=w), "W")
    assert "needs packed strides (40, 1) (elements), got shape [40, 40], strides (1, 40) (elements), f32" in text
    assert "hint: pass a contiguous array" in text


def test_sliced_columns_of_a_window_passed_as_features_are_refused() -> None:
    # window[..., :40]: shape [B, K, 40] but rows 56 floats apart
    view = Dev((B, K, 40), strides=packed((B, K, 56)))
    text = refused("LG604", FWD, fwd_args(gates=view), "gates")
    assert "needs packed strides (320, 40, 1)" in text
    assert "shape [4, 8, 40], strides (448, 56, 1) (elements), f32" in text


@pytest.mark.parametrize(("param", "shape", "strides"), [
    ("W", (40, 40), (0, 4)),  # broadcast rows
    ("x", (B, K, 56), (0, 56 * 4, 4)),  # an input broadcast over B (an output is LG610, below)
    ("b", (40,), (0,)),  # a broadcast scalar
    ("b", (40,), (8,)),  # every other element
    ("x", (B, K, 56), (K * 56 * 4, 56 * 4, -4)),  # reversed columns
    ("y", (B, K, 40), (2 * K * 40 * 4, 40 * 4, 4)),  # every other series
])
def test_other_non_packed_strides_are_refused(param: str, shape: tuple[int, ...], strides: tuple[int, ...]) -> None:
    a = Dev(shape, strides=strides)
    text = refused("LG604", FWD, fwd_args(**{param: a}), param)
    assert a.described() in text


@pytest.mark.parametrize(("param", "strides", "axis", "stride"), [
    ("gates", (0, 160, 4), 0, 0),  # broadcast over B
    ("y", (K * 40 * 4, 0, 4), 1, 0),  # broadcast over K
    ("y", (K * 20 * 4, 20 * 4, 4), 1, 20),  # rows overlapping by half
])
def test_an_output_with_a_zero_or_overlapping_stride_is_lg610(param: str, strides: tuple[int, ...], axis: int,
                                                              stride: int) -> None:
    a = Dev((B, K, 40), strides=strides)
    text = refused("LG610", FWD, fwd_args(**{param: a}), param)
    assert f"axis {axis} of the array has stride {stride}, so several of its elements are one memory location" in text
    assert a.described() in text


@pytest.mark.parametrize(("b", "k", "x_strides"), [
    (1, K, (12345 * 4, 56 * 4, 4)),  # B == 1: its stride is never used
    (B, 1, (56 * 4, 7 * 4, 4)),  # K == 1
    (1, 1, (0, 0, 4)),  # both, broadcast
])
def test_size_one_axes_may_have_any_stride(b: int, k: int, x_strides: tuple[int, ...]) -> None:
    x = Dev((b, k, 56), strides=x_strides)
    assert FWD.bind(fwd_args(b, k, x=x), device=0)[1] == {"B": b, "K": k}


def test_explicit_packed_strides_are_accepted() -> None:
    args = tuple(Dev(a.__cuda_array_interface__["shape"], strides=packed(a.__cuda_array_interface__["shape"]))
                 for a in fwd_args())
    assert FWD.bind(args, device=0)[1] == {"B": B, "K": K}


# LG605-LG607: device, alignment, writability -----------------------------------------------------


def test_wrong_device() -> None:
    gates = Dev((B, K, 40), device=1)
    text = refused("LG605", FWD, fwd_args(gates=gates), "gates")
    assert "is on device 1 but the launch is on device 0" in text and gates.described() in text
    text = refused("LG605", FWD, fwd_args(), "x", device=1)  # everything on 0, launched on 1
    assert "is on device 0 but the launch is on device 1" in text


@pytest.mark.parametrize("offset", [1, 2, 3, 4, 6, 8, 12])
def test_misaligned_base_pointer(offset: int) -> None:
    # the forward stores gates through a warp's shared tile in 16-byte groups: its launcher checks 16 bytes
    gates = Dev((B, K, 40), ptr=BASE + 0x300000 + offset)
    text = refused("LG606", FWD, fwd_args(gates=gates), "gates")
    assert f"aligned to 16 bytes, got 0x{BASE + 0x300000 + offset:x}" in text and gates.described() in text


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_a_pointer_off_its_elements_is_misaligned(offset: int) -> None:
    # the forward reads W an element at a time, into registers: its launcher checks the element's 4 bytes
    w = Dev((40, 40), ptr=BASE + 0x100000 + offset)
    text = refused("LG606", FWD, fwd_args(W=w), "W")
    assert f"aligned to 4 bytes, got 0x{BASE + 0x100000 + offset:x}" in text and w.described() in text


def test_read_only_output_is_refused() -> None:
    y = Dev((B, K, 40), readonly=True)  # as JAX exports its buffers
    text = refused("LG607", FWD, fwd_args(y=y), "y")
    assert "is written by the kernel but the array is read-only" in text and y.described() in text
    assert "hint: pass a writable array" in text


def test_read_only_inputs_are_accepted() -> None:
    x, w, b = Dev((B, K, 56), readonly=True), Dev((40, 40), readonly=True), Dev((40,), readonly=True)
    assert FWD.bind(fwd_args(x=x, W=w, b=b), device=0)[1] == {"B": B, "K": K}


def test_read_only_inout_is_refused() -> None:
    args = [Dev((B, K, 56)), Dev((40, 40)), Dev((B, K, 40)), Dev((B, K, 40)), Dev((B, K, 40)), Dev((40, 40)),
            Dev((40,))]
    assert BWD.bind(tuple(args), device=0)[1] == {"B": B, "K": K}
    args[5] = Dev((40, 40), readonly=True)  # grad_W accumulates: read and written
    refused("LG607", BWD, tuple(args), "grad_W")


# LG608: not device arrays ------------------------------------------------------------------------


def test_host_numpy_array_is_refused() -> None:
    text = refused("LG608", FWD, fwd_args(x=np.zeros((B, K, 56), np.float32)), "x")
    assert "a host array (numpy.ndarray, shape [4, 8, 56], f32) is not on a CUDA device" in text
    assert "hint: pass a device array" in text


@pytest.mark.parametrize("thing", [None, 1.5, [[0.0] * 40] * 40, "W", np.float32(1.0)])
def test_non_arrays_are_refused(thing: object) -> None:
    text = refused("LG608", FWD, fwd_args(W=thing), "W")
    assert f"{type(thing).__module__}.{type(thing).__name__}" in text


def test_cpu_torch_tensor_is_refused() -> None:
    class Cpu:  # torch.device("cpu"), as the launcher reads it
        type, index = "cpu", None

        def __str__(self) -> str:
            return "cpu"

    class Tensor:
        __module__ = "torch"
        is_cuda = False
        device = Cpu()
        shape, dtype = (40,), FakeTorchDtype("float32")

        def is_neg(self) -> bool:
            return False

        is_conj = is_neg

        def stride(self) -> tuple[int, ...]:
            return (1,)

        def data_ptr(self) -> int:
            return BASE

    text = refused("LG608", FWD, fwd_args(b=Tensor()), "b")
    assert "torch tensor on cpu is not on a CUDA device" in text


def test_every_launch_code_is_registered() -> None:
    for code in ("LG601", "LG602", "LG603", "LG604", "LG605", "LG606", "LG607", "LG608"):
        assert code in CODES


# the cache of shapes that passed -----------------------------------------------------------------


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The parameters check_param fully checked, in order."""
    calls: list[str] = []
    real = launch.check_param

    def counting(kernel: str, p: ParamSpec, *rest: Any) -> None:
        calls.append(p.name)
        real(kernel, p, *rest)

    monkeypatch.setattr(launch, "check_param", counting)
    return calls


def fresh() -> KernelLauncher:
    return FWD.fresh()


def test_a_shape_that_passed_is_not_checked_again(counted: list[str]) -> None:
    k = fresh()
    k.bind(fwd_args(), device=0)
    assert counted == ["x", "W", "b", "gates", "y"]
    counted.clear()
    pointers, bound = k.bind(fwd_args(), device=0)
    assert counted == []
    assert pointers == [BASE, BASE + 0x100000, BASE + 0x200000, BASE + 0x300000, BASE + 0x400000]
    assert bound == {"B": B, "K": K}
    counted.clear()
    k.bind(fwd_args(2, 3), device=0)  # new shapes for x, gates, y: W and b are known
    assert counted == ["x", "gates", "y"]


def test_refusals_still_happen_for_known_shapes() -> None:
    k = fresh()
    k.bind(fwd_args(), device=0)
    k.bind(fwd_args(5, K), device=0)  # every [5, K, *] shape is known too
    assert "`B` = 5, but `B` = 4" in refused("LG603", k, fwd_args(y=Dev((5, K, 40))), "y")
    refused("LG605", k, fwd_args(gates=Dev((B, K, 40), device=1)), "gates")
    refused("LG605", k, fwd_args(), "x", device=1)
    refused("LG606", k, fwd_args(b=Dev((40,), ptr=BASE + 2)), "b")
    refused("LG607", k, fwd_args(gates=Dev((B, K, 40), readonly=True)), "gates")
    assert k.bind(fwd_args(x=Dev((B, K, 56), readonly=True)), device=0)[1] == {"B": B, "K": K}
    # a known shape with other strides or dtype is checked afresh
    refused("LG604", k, fwd_args(W=Dev((40, 40), strides=(4, 160))), "W")
    refused("LG602", k, fwd_args(W=Dev((40, 40), "<f8")), "W")


def test_a_refused_shape_is_not_remembered() -> None:
    k = fresh()
    for _ in range(2):
        refused("LG601", k, fwd_args(x=Dev((B, K, 40))), "x")
    assert all(key[0] != 0 or key[1] != (B, K, 40) for key in k._passed)


def test_the_cache_stays_bounded() -> None:
    k = fresh()
    for b in range(1, 300):
        assert k.bind(fwd_args(b, 2), device=0)[1] == {"B": b, "K": 2}
        assert len(k._passed) <= 256
    refused("LG603", k, fwd_args(299, 2, gates=Dev((298, 2, 40))), "gates")


# the typed wrapper at run time ---------------------------------------------------------------------


def test_wrap_checks_and_types() -> None:
    x = Dev((B, K, 56))
    wrapped = vsn.Window.wrap(x)
    assert isinstance(wrapped, Array) and wrapped.data is x and unwrap(wrapped) is x
    assert unwrap(x) is x
    assert vsn.Window.wrap(Dev((B, K, 56), readonly=True)).data is not None  # a read-only input may be typed
    with pytest.raises(LaunchError) as info:
        vsn.Window.wrap(Dev((B, K, 40)))
    assert info.value.code == "LG601"
    assert "`Window.wrap.data` (Window, layout Window [B, K, 56] f32)" in str(info.value)
    assert "shape [4, 8, 40]" in str(info.value)
    with pytest.raises(LaunchError) as info:
        vsn.Features.wrap(Dev((B, K, 40), strides=packed((B, K, 56))))
    assert info.value.code == "LG604"
    with pytest.raises(LaunchError) as info:
        vsn.Bias.wrap(np.zeros(40, np.float32))
    assert info.value.code == "LG608" and "host array" in str(info.value)


@pytest.mark.parametrize(("layout", "shape"), [
    (vsn.Window, (B,)), (vsn.Window, (B, K, 56)), (vsn.Weights, (41,)), (vsn.Weights, ()), (vsn.Bias, (1,)),
])
def test_empty_refuses_wrong_leading_dims_before_allocating(layout: Any, shape: tuple[int, ...]) -> None:
    with pytest.raises(LaunchError) as info:
        layout.empty(*shape)
    assert info.value.code == "LG601"
    assert f"`{layout.__name__}.empty` takes the leading dims" in str(info.value)
    assert layout.spec.shape_text in str(info.value)


# the generated function, up to the launch ----------------------------------------------------------


@pytest.fixture
def no_gpu_launch(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The launcher's device, arch and kernel faked: what would be launched is recorded."""

    launched: list[tuple[Any, ...]] = []

    def kernel(blocks: int, block: int, values: tuple[int, ...], stream: Any) -> None:
        launched.append((blocks, block, values, stream))

    monkeypatch.setattr(launch, "find_device", lambda: 0)
    monkeypatch.setattr(launch, "device_arch", lambda device: "sm_90")
    # On the class: an instance attribute would outlive the test (monkeypatch restores the bound method
    # onto the instance), and on a GPU machine later tests would launch the real kernel on fake pointers.
    monkeypatch.setattr(KernelLauncher, "function", lambda self, device, arch: Recorded(kernel))
    fake_device(monkeypatch)
    return launched


def test_the_generated_function_refuses_before_launching(no_gpu_launch: list[tuple[Any, ...]]) -> None:
    x, w, b, gates, y = fwd_args(gates=Dev((B, K, 40), strides=packed((B, K, 56))))
    with pytest.raises(LaunchError) as info:
        vsn.variable_selection_fwd(x, w, b, vsn.Features.wrap(Dev((B, K, 40))), gates)  # y is the bad one
    assert info.value.code == "LG604" and "`variable_selection_fwd.y`" in str(info.value)
    assert no_gpu_launch == []


def test_the_generated_function_launches_what_bind_checked(no_gpu_launch: list[tuple[Any, ...]]) -> None:
    stream = ProtocolStream(0x5000)
    x, w, b, gates, y = fwd_args()
    vsn.variable_selection_fwd(vsn.Window.wrap(x), w, b, gates, vsn.Features.wrap(y), stream=stream)
    (grid, block, args, used), = no_gpu_launch
    assert block == 128 and grid == (B * K + 127) // 128 and used is stream
    assert list(args) == [BASE, BASE + 0x100000, BASE + 0x200000, BASE + 0x300000, BASE + 0x400000, B, K]
    vsn.variable_selection_fwd(*fwd_args(0, K), stream=stream)  # nothing to do: nothing launched
    assert len(no_gpu_launch) == 1


# cost ----------------------------------------------------------------------------------------------


def test_bind_cost_of_variable_selection_fwd() -> None:
    """Printed, not asserted (run with -s): the whole launch budget is ~7 us."""
    args = fwd_args()
    k = fresh()
    k.bind(args, device=0)
    number = 20000
    warm = min(timeit.repeat(lambda: k.bind(args, 0), number=number, repeat=5)) / number

    def cold() -> None:
        k._passed.clear()
        k.bind(args, 0)

    first = min(timeit.repeat(cold, number=number, repeat=5)) / number
    print(f"\nbind(variable_selection_fwd, 5 fake __cuda_array_interface__ arrays): {warm * 1e6:.2f} us "
          f"(shapes seen before), {first * 1e6:.2f} us (every check run)")
