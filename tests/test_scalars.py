"""Scalar kernel parameters (issue 15 item 2), without a GPU.

Declarations (`Scalar`, `Value`, scalars in a `Launch`) with their codes,
messages and sites; the generated kernel and module (golden files) and an
offline NVRTC compile of a kernel with a scalar of every dtype; the
launcher's and the program runner's checks (LG620..LG622, word for word) and
the 8-byte values they hand the driver, recorded instead of launched; graph
capture baking the values (LG623); and, as properties, that every value a
scalar's C type holds packs to NumPy's bytes of it and every other is refused.
"""

from __future__ import annotations

import ctypes
import importlib.util
import math
import shutil
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import (
    Buffer, In, InOut, Kernel, KernelError, Launch, Layout, LayoutError, LayoutgenError, Out, Program, ProgramError,
    Scalar, Site, Value, bool_, dims, f16, f32, f64, i8, i32, u8, u64,
)
from layoutgen.declare.kernels import Grid
from layoutgen.runtime import launch as runtime_launch
from layoutgen.runtime import program as runtime_program
from layoutgen.runtime.launch import KernelLauncher, LaunchError
from layoutgen.runtime.plan import ScalarSpec
from layoutgen.runtime.program import ProgramRunner
from layoutgen.runtime.validate import check_scalar
from layoutgen.schema.scalars import SCALAR_DTYPES, ScalarValueError, integer_range, pack_scalar
from tests.helpers.golden import check_golden, render
from tests.helpers.launch import BASE, Dev

REPO = Path(__file__).resolve().parent.parent
SPEC = "tests/specs/scalars/spec.py"
F = dims("F")[0]
Vec = Layout("Vec", [], f32, width=40)
SiteOf = Callable[[str], Site]
SCALAR_LIST = "f64, f32, i64, i32, i16, i8, u64, u32, u16, u8, bool"


def slot(dtype: str, value: Any) -> int:
    """The 8-byte launch value NumPy says ``value`` is as ``dtype``: its bytes, then zeros (computed here)."""
    data = np.array(value, dtype=str(SCALAR_DTYPES[dtype].numpy_name)).tobytes()
    return int.from_bytes(data + bytes(8 - len(data)), sys.byteorder)


def raises(call: Callable[[], object]) -> LayoutgenError:
    with pytest.raises(LayoutgenError) as info:
        call()
    return info.value


# -- declarations -------------------------------------------------------------------------------------


def test_a_kernel_keeps_its_arrays_its_scalars_and_their_order(site_of: SiteOf) -> None:
    lr = Scalar("lr", f32, finite=True)  # site: lr
    k = Kernel("step", "step.cu.j2", [InOut("w", [F]), lr, In("g", [F]), Scalar("n", "i32")], grid=Grid.elements("w"))
    assert [p.name for p in k.params] == ["w", "g"] and [s.name for s in k.scalars] == ["lr", "n"]
    assert [p.name for p in k.signature] == ["w", "lr", "g", "n"]
    assert (lr.dtype, lr.finite, lr.site, lr.described) == (f32, True, site_of("lr"), "scalar f32, finite")
    assert k.scalar("n").dtype.name == "i32" and not k.scalar("n").finite
    binding = k.bind(w=Vec, g=Vec)  # a scalar needs no view
    assert [name for name, _ in binding.views] == ["w", "g"]


@pytest.mark.parametrize(("make", "code", "message"), [
    (lambda: Scalar("lr", f16), "LG208", f"scalar `lr` must be one of {SCALAR_LIST}, got f16"),
    (lambda: Scalar("lr", "bf16"), "LG208", f"scalar `lr` must be one of {SCALAR_LIST}, got bf16"),
    (lambda: Scalar("lr", "float32"), "LG107", "the dtype of scalar `lr` must be one of f64, f32, i64, "
     "i32, i16, i8, u64, u32, u16, u8, bool, got 'float32'"),
    (lambda: Scalar("2lr", f32), "LG208", "a parameter name must be a C identifier (letters, digits, `_`; not "
     "starting with a digit), got '2lr'"),
    (lambda: Scalar("n", i32, finite=True), "LG208", "`finite` of scalar `n` applies to f32 and f64 only, got an i32 "
     "scalar"),
    (lambda: Scalar("lr", f32, finite="yes"), "LG208",  # type: ignore[arg-type]
     "`finite` of scalar `lr` must be True or False, got 'yes'"),
])
def test_a_malformed_scalar_is_refused_at_its_line(make: Callable[[], object], code: str, message: str) -> None:
    err = raises(make)
    assert (err.code, err.diagnostic.message) == (code, message)
    assert err.site is not None and err.site.path == __file__


def test_a_name_declared_twice_is_refused_at_the_second(site_of: SiteOf) -> None:
    x = In("x", [F])
    twin = Scalar("x", f32)  # site: twin
    err = raises(lambda: Kernel("k", "k.cu.j2", [x, twin]))
    assert isinstance(err, KernelError) and err.code == "LG208"
    assert (err.diagnostic.message, err.site) == ("kernel `k` declares parameter `x` twice", site_of("twin"))
    second = Scalar("a", u8)  # site: second a
    err = raises(lambda: Kernel("k", "k.cu.j2", [x, Scalar("a", u8), second]))
    assert (err.diagnostic.message, err.site) == ("kernel `k` declares parameter `a` twice", site_of("second a"))


@pytest.mark.parametrize(("name", "what"), [
    ("row", "a name used beside the parameters"),
    ("stream", "a name used beside the parameters"),
    ("F", "a shape symbol of the kernel"),
])
def test_a_scalar_named_like_the_index_a_keyword_or_a_symbol_is_refused(name: str, what: str) -> None:
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [F]), Scalar(name, f32)]))
    assert err.code == "LG208"
    assert err.diagnostic.message.startswith(f"parameter `{name}` of `k` clashes with {what}")


def test_a_kernel_needs_an_array_and_its_grid_follows_one() -> None:
    err = raises(lambda: Kernel("k", "k.cu.j2", [Scalar("lr", f32)]))
    assert (err.code, err.diagnostic.message) == (
        "LG208", "kernel `k` needs an In, Out or InOut parameter: its grid follows one")
    err = raises(lambda: Kernel("k", "k.cu.j2", [Out("y", [F]), Scalar("lr", f32)], grid=Grid.rows("lr")))
    assert (err.code, err.diagnostic.message) == (
        "LG208", "the grid of `k` must follow an In, Out or InOut parameter, got scalar `lr`")


def test_binding_a_view_to_a_scalar_is_refused() -> None:
    k = Kernel("k", "k.cu.j2", [Out("y", [F]), Scalar("lr", f32)])
    err = raises(lambda: k.bind(y=Vec, lr=Vec))
    assert (err.code, err.diagnostic.message, err.hint) == (
        "LG207", "`k.lr` is a scalar: it takes a value at each launch, not a view, got Vec",
        "leave `lr` out of bind; give it to the launcher (or to `Launch`, in a program)")


STEP = Kernel("step", "step.cu.j2", [InOut("w", [F]), Scalar("lr", f32, finite=True), Scalar("n", u8)],
              grid=Grid.elements("w"))
W = Buffer("w", Vec, input=True, output=True)


def test_a_launch_gives_each_scalar_a_value_or_a_constant() -> None:
    lr = Value("lr", f32)
    launch = Launch(STEP, w=W, lr=lr, n=np.uint8(7))
    assert [(s.param, s.given, s.slot) for s in launch.scalars] == [("lr", lr, None), ("n", 7, slot("u8", 7))]
    assert launch.call_text("step") == "step(w=w, lr=lr, n=7)"
    program = Program("p", [launch, Launch(STEP, w=W, lr=lr, n=3, overwrites=())])
    assert program.values == (lr,) and [b.name for b in program.buffers] == ["w"]


@pytest.mark.parametrize(("given", "message"), [
    (dict(lr=0.1), "a launch of `step` must give its scalar `n` a value"),
    (dict(lr=0.1, n=256), "`step.n` (scalar u8) must be an integer from 0 to 255, got 256 (int)"),
    (dict(lr=0.1, n=2.0), "`step.n` (scalar u8) must be an integer (a Python int or a NumPy integer scalar), got 2.0 "
     "(float)"),
    (dict(lr=float("inf"), n=1), "`step.lr` (scalar f32, finite) must be finite, got inf (float)"),
    (dict(lr=Value("lr", f64), n=1), "`step.lr` (scalar f32, finite) must be given an f32 value, got value `lr` of f64"),
    (dict(lr=W, n=1), "`step.lr` (scalar f32, finite) must be given a constant or a Value, got <Buffer w: Vec>"),
])
def test_a_launch_refuses_a_scalar_it_cannot_give(given: dict[str, Any], message: str, site_of: SiteOf) -> None:
    with pytest.raises(ProgramError) as info:
        Launch(STEP, w=W, **given)  # site: launch
    assert info.value.code == "LG305" and info.value.site == site_of("launch")
    assert info.value.diagnostic.message.startswith(message), info.value.diagnostic.message


def test_a_programs_values_have_one_name_each_and_none_a_buffers() -> None:
    err = raises(lambda: Program("p", [Launch(STEP, w=W, lr=Value("lr", f32), n=1),
                                       Launch(STEP, w=W, lr=Value("lr", f32), n=1)]))
    assert err.code == "LG305" and err.diagnostic.message.startswith("program `p` has two values named `lr`")
    err = raises(lambda: Program("p", [Launch(STEP, w=W, lr=Value("w", f32), n=1)]))
    assert err.code == "LG305" and err.diagnostic.message.startswith("program `p` has a value and a buffer named `w`")
    err = raises(lambda: Value("stream", f32))
    assert err.diagnostic.message == "a value may not be named `stream`: the generated runner uses that name"
    err = raises(lambda: Value("lr", f16))
    assert err.diagnostic.message == f"value `lr` must be one of {SCALAR_LIST}, got f16"


# -- generated code ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["echo.cu", "__init__.py"])
def test_golden_scalars(name: str) -> None:
    check_golden(f"scalars/{name}", render(SPEC).files[f"scalars/{name}"])


def test_a_kernel_with_a_scalar_of_every_dtype_compiles_offline(tmp_path: Path) -> None:
    from tests.helpers.cli import layoutgen
    from tests.helpers.cli import nvrtc_missing

    if reason := nvrtc_missing():
        pytest.skip(reason)
    project = tmp_path / "project"
    shutil.copytree(REPO / "tests" / "specs" / "scalars", project / "specs" / "scalars",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (project / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["specs/scalars/spec.py"]\n')
    assert layoutgen("generate", cwd=project, cache=tmp_path / "cache").returncode == 0
    run = layoutgen("check", "--compile", "--arch", "sm_90", cwd=project, cache=tmp_path / "cache")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().endswith("All checks passed: 1 spec, no errors."), run.stdout
    assert len(list((tmp_path / "cache").rglob("*.cubin"))) == 1


# -- the launcher and the runner, recorded --------------------------------------------------------------


@pytest.fixture(scope="module")
def scalars(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The generated module of tests/specs/scalars, written to a folder of its own and imported."""
    out = tmp_path_factory.mktemp("generated")
    for rel, text in render(SPEC).files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text, encoding="utf-8")
    found = importlib.util.spec_from_file_location("lg_test_scalars", out / "scalars" / "__init__.py")
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, list[int]]]:
    """A device 0 that launches nothing: each launch recorded as (kernel, blocks, values)."""
    made: list[tuple[str, int, list[int]]] = []

    def function(self: KernelLauncher, device: int, arch: str) -> Any:
        return lambda blocks, block, values, stream: made.append((self.spec.name, blocks, list(values)))

    monkeypatch.setattr(KernelLauncher, "function", function)
    for module in (runtime_launch, runtime_program):
        monkeypatch.setattr(module, "find_device", lambda: 0)
        monkeypatch.setattr(module, "device_arch", lambda device: "sm_90")
    return made


PTRS = {"floats": BASE, "ints": BASE + 0x1000, "uints": BASE + 0x2000, "flags": BASE + 0x3000}


def arrays(**replace: Any) -> dict[str, Any]:
    out = {"floats": Dev((2,), "<f8", PTRS["floats"]), "ints": Dev((4,), "<i8", PTRS["ints"]),
           "uints": Dev((4,), "<u8", PTRS["uints"]), "flags": Dev((1,), "|u1", PTRS["flags"])}
    out.update(replace)
    return out


#: Every scalar of `echo`, at the edge of its type where it has one.
VALUES = {"x_f32": 0.1, "x_f64": -2.5, "x_i8": -128, "x_i16": -(2**15), "x_i32": 2**31 - 1, "x_i64": -(2**63),
          "x_u8": 255, "x_u16": 2**16 - 1, "x_u32": 2**32 - 1, "x_u64": 2**64 - 1, "x_bool": True}


def test_the_launcher_passes_the_pointers_then_each_scalar_as_its_c_type(scalars: Any, launched: list[Any]) -> None:
    scalars.echo(**arrays(), **VALUES)
    expected = list(PTRS.values()) + [slot(name.removeprefix("x_"), v) for name, v in VALUES.items()]
    assert launched == [("echo", 1, expected)]
    numpy_values: dict[str, Any] = {"x_f32": np.float32(0.1), "x_f64": np.int64(-2), "x_i8": np.int8(-128), "x_i64": np.uint8(5),
                    "x_u64": np.uint64(2**64 - 1), "x_bool": np.bool_(False)}
    scalars.echo(**arrays(), **{**VALUES, **numpy_values})
    given = {**VALUES, **{k: v.item() for k, v in numpy_values.items()}}
    assert launched[1][2][4:] == [slot(name.removeprefix("x_"), v) for name, v in given.items()]
    scalars.echo(**arrays(), **{**VALUES, "x_f64": float("nan")})  # not declared finite: NaN passes, as NaN
    assert math.isnan(np.frombuffer(launched[2][2][5].to_bytes(8, sys.byteorder), np.float64)[0])


WANT = "a real number (a Python int or float, or a NumPy integer or floating scalar)"
AN_INT = "an integer (a Python int or a NumPy integer scalar)"


@pytest.mark.parametrize(("name", "value", "code", "message", "hint"), [
    ("x_f32", True, "LG620", f"`echo.x_f32` (scalar f32, finite) must be {WANT}, got True (bool)",
     "pass a number (`float(flag)`) where one is meant: a bool is no number here, although Python counts it as an int"),
    ("x_i32", 2.0, "LG620", f"`echo.x_i32` (scalar i32) must be {AN_INT}, got 2.0 (float)",
     "convert it where that is meant (`int(x)` truncates, `round(x)` rounds): a float is never taken for an integer"),
    ("x_i64", np.float64(3), "LG620", f"`echo.x_i64` (scalar i64) must be {AN_INT}, got 3.0 (numpy.float64)",
     "convert it where that is meant (`int(x)` truncates, `round(x)` rounds): a float is never taken for an integer"),
    ("x_u8", np.bool_(True), "LG620", f"`echo.x_u8` (scalar u8) must be {AN_INT}, got True (numpy.bool)",
     "pass a number (`int(flag)`) where one is meant: a bool is no number here, although Python counts it as an int"),
    ("x_bool", 1, "LG620", "`echo.x_bool` (scalar bool) must be True or False (a Python or NumPy bool), got 1 (int)",
     "pass `bool(x)` (or `x != 0`) where a truth value is meant"),
    ("x_f64", "0.5", "LG620", f"`echo.x_f64` (scalar f64) must be {WANT}, got '0.5' (str)",
     "parse it first (`float(text)`): a string is never converted"),
    ("x_f32", Dev((1,)), "LG620", f"`echo.x_f32` (scalar f32, finite) must be {WANT}, got an array of shape [1] "
     "(tests.helpers.launch.Dev)", "pass a Python or NumPy scalar: `a.item()` copies an array's one value "
     "(from the device, for a device array)"),
    ("x_u8", 256, "LG621", "`echo.x_u8` (scalar u8) must be an integer from 0 to 255, got 256 (int)",
     "pass a value that `unsigned char` holds, or declare the scalar with a wider dtype: layoutgen never wraps an "
     "integer around (where wrapping is meant, say so: `x % 2**8`)"),
    ("x_i8", np.int16(-129), "LG621", "`echo.x_i8` (scalar i8) must be an integer from -128 to 127, got -129 "
     "(numpy.int16)", "pass a value that `signed char` holds, or declare the scalar with a wider dtype: layoutgen "
     "never wraps an integer around"),
    ("x_u64", 2**64, "LG621", "`echo.x_u64` (scalar u64) must be an integer from 0 to 18446744073709551615, got "
     "18446744073709551616 (int)", "pass a value that `unsigned long long` holds: layoutgen never wraps an integer "
     "around (where wrapping is meant, say so: `x % 2**64`)"),
    ("x_f32", 1e39, "LG621", "`echo.x_f32` (scalar f32, finite) must be within ±3.4028234663852886e+38, the largest "
     "finite f32, got 1e+39 (float), which f32 would hold as Inf", "declare the scalar f64, or scale the value"),
    ("x_f32", float("nan"), "LG622", "`echo.x_f32` (scalar f32, finite) must be finite, got nan (float)",
     "the parameter is declared finite=True: a NaN or Inf here would spread through everything the kernel writes; "
     "look at where the value came from (a NaN loss, a division by zero)"),
    ("x_f32", np.float32("-inf"), "LG622", "`echo.x_f32` (scalar f32, finite) must be finite, got -inf "
     "(numpy.float32)", "the parameter is declared finite=True: a NaN or Inf here would spread through everything the "
     "kernel writes; look at where the value came from (a NaN loss, a division by zero)"),
])
def test_the_launcher_refuses_a_value_its_scalar_cannot_take(
    scalars: Any, launched: list[Any], name: str, value: Any, code: str, message: str, hint: str,
) -> None:
    with pytest.raises(LaunchError) as info:
        scalars.echo(**arrays(), **{**VALUES, name: value})
    assert (info.value.code, info.value.diagnostic.message, info.value.hint) == (code, message, hint)
    assert launched == []


def test_without_a_device_a_scalar_is_still_checked_first(scalars: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_launch, "find_device", lambda: None)
    with pytest.raises(LaunchError) as info:
        scalars.echo(**arrays(), **{**VALUES, "x_u8": -1})
    assert info.value.code == "LG621"
    with pytest.raises(LaunchError) as info:  # a good call gets as far as the device
        scalars.echo(**arrays(), **VALUES)
    assert info.value.code == "LG615"


def test_the_launcher_object_takes_the_arrays_then_the_scalars(scalars: Any, launched: list[Any]) -> None:
    launcher = scalars._lg_kernel_echo
    with pytest.raises(LaunchError) as info:
        launcher(*arrays().values())
    assert (info.value.code, info.value.diagnostic.message) == (
        "LG601", "`echo` takes 4 arrays (floats, ints, uints, flags), then 11 scalars (x_f32, x_f64, x_i8, x_i16, "
        "x_i32, x_i64, x_u8, x_u16, x_u32, x_u64, x_bool), got 4 arguments")
    launcher(*arrays().values(), *VALUES.values())
    assert len(launched) == 1


def test_the_runner_takes_its_values_each_run_and_bakes_its_constants(scalars: Any, launched: list[Any]) -> None:
    scalars.echo_step(**arrays(), rate=0.25, seed=2**63)
    constants = {"x_f64": -0.5, "x_i8": -128, "x_i16": 32767, "x_i32": -7, "x_i64": 2**40, "x_u8": 255, "x_u16": 0,
                 "x_u32": 2**32 - 1}
    given = {"x_f32": 0.25, **constants, "x_u64": 2**63, "x_bool": True}
    assert launched == [("echo", 1, list(PTRS.values()) + [slot(n.removeprefix("x_"), v) for n, v in given.items()])]
    with pytest.raises(LaunchError) as info:
        scalars.echo_step(**arrays(), rate=float("nan"), seed=1)
    assert (info.value.code, info.value.diagnostic.message) == (
        "LG622", "`echo_step.rate` (scalar f32, finite) must be finite, got nan (float)")
    with pytest.raises(LaunchError) as info:
        scalars.echo_step(**arrays(), rate=0.25, seed=-1)
    assert info.value.diagnostic.message == ("`echo_step.seed` (scalar u64) must be an integer from 0 to "
                                             "18446744073709551615, got -1 (int)")
    assert len(launched) == 1


class _FakeStream:
    """Stands in for `cupy.cuda.Stream` around a capture: the launches made on it are the graph."""

    def __init__(self, non_blocking: bool = False) -> None:
        self.replays = 0

    def begin_capture(self) -> None:
        pass

    def end_capture(self) -> Any:
        return SimpleNamespace(launch=lambda stream: setattr(stream, "replays", stream.replays + 1))


def test_a_graph_keeps_the_values_of_its_capture_and_refuses_others(
    scalars: Any, launched: list[Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    import cupy

    monkeypatch.setattr(cupy.cuda, "Stream", _FakeStream)
    graph = scalars.capture_echo_step(**arrays(), rate=0.25, seed=9)
    assert graph.values == {"rate": 0.25, "seed": 9} and len(launched) == 1  # recorded once, at the capture
    assert launched[0][2][4] == slot("f32", 0.25) and launched[0][2][-2] == slot("u64", 9)
    stream = _FakeStream()
    graph.replay(stream=stream)
    graph.replay(stream=stream, rate=np.float32(0.25), seed=np.uint8(9))  # the same values, as other types
    assert stream.replays == 2
    with pytest.raises(LaunchError) as info:
        graph.replay(stream=stream, rate=0.5)
    assert (info.value.code, info.value.diagnostic.message, info.value.hint) == (
        "LG623", "`echo_step.rate` (scalar f32, finite) was captured into this graph as 0.25 (float); `replay` must "
        "be given that value or none, got 0.5 (float)",
        "a graph keeps the values of its capture: capture the program again with the new value, or keep a value that "
        "changes every replay in a buffer the graph reads")
    with pytest.raises(LaunchError) as info:
        graph.replay(stream=stream, lr=0.25)
    assert (info.value.code, info.value.diagnostic.message, info.value.hint) == (
        "LG623", "`replay` of program `echo_step`'s graph takes the values it was captured with (`rate`, `seed`), "
        "got `lr`", "name a value of the program's, or give none: the graph runs with its own")
    with pytest.raises(LaunchError) as info:
        graph.replay(stream=stream, seed=9.0)
    assert info.value.code == "LG620"
    assert stream.replays == 2 and len(launched) == 1


def test_a_runner_refuses_plan_data_that_disagrees_with_its_kernels(scalars: Any) -> None:
    runner: ProgramRunner = scalars._lg_program_echo_step
    step = runner.spec.steps[0]
    for bad in (step.scalars[:-1], ("rate", *step.scalars[1:-1], "nope")):
        spec = runtime_program.ProgramSpec(runner.spec.name, runner.spec.buffers,
                                           (runtime_program.StepSpec(step.kernel, step.buffers, bad),),
                                           runner.spec.values)
        with pytest.raises(ValueError, match="step `echo` of program `echo_step` gives"):
            ProgramRunner(spec, (scalars._lg_kernel_echo,))
    with pytest.raises(ValueError, match="8-byte launch values"):
        runtime_program.StepSpec("echo", (0,), (2**64,))
    with pytest.raises(ValueError, match="`dtype` must be one of"):
        ScalarSpec("x", "f16")


# -- properties: what is packed, and what is refused ------------------------------------------------------


INTEGERS = [d for d in SCALAR_DTYPES.values() if d.kind in ("int", "uint")]


def _memory(value: int) -> bytes:
    """The bytes of an 8-byte launch value where each launch path keeps it (cuda.bindings' ctypes buffer, and the
    NumPy uint64 CuPy's launch is given): the driver copies the parameter's size from there."""
    packed = bytes(ctypes.c_uint64(value))
    assert packed == np.uint64(value).tobytes()
    return packed


def test_the_cupy_launch_path_hands_each_value_over_in_its_first_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    from layoutgen.runtime import driver

    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(driver, "cupy_stream", lambda stream, name="": stream)  # no device here to own a stream
    launch = driver.CupyLaunch(lambda grid, block, args, **options: calls.append(args), "echo")
    launch(1, 32, [BASE, slot("f32", 0.1), slot("i8", -1), slot("u64", 2**64 - 1), slot("bool", True)], None)
    ((pointer, *args),) = calls
    assert int(pointer) == BASE
    assert [a.tobytes()[:n] for a, n in zip(args, (4, 1, 8, 1))] == [
        np.float32(0.1).tobytes(), np.int8(-1).tobytes(), np.uint64(2**64 - 1).tobytes(), b"\x01"]


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_value_an_integer_type_holds_packs_to_numpys_bytes(data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(INTEGERS))
    low, high = integer_range(dtype)
    value = data.draw(st.integers(low, high))
    numpy_name = str(dtype.numpy_name)
    assert (low, high) == (int(np.iinfo(numpy_name).min), int(np.iinfo(numpy_name).max))
    memory = _memory(pack_scalar(dtype, False, value))
    assert memory[:dtype.size] == np.array(value, numpy_name).tobytes()
    assert memory[dtype.size:] == bytes(8 - dtype.size)
    assert check_scalar("k", ScalarSpec("n", dtype.name), np.array(value, numpy_name)[()]) == \
        pack_scalar(dtype, False, value)  # its NumPy scalar packs the same


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_value_outside_an_integer_type_is_refused(data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(INTEGERS))
    low, high = integer_range(dtype)
    value = data.draw(st.one_of(st.integers(max_value=low - 1), st.integers(min_value=high + 1)))
    with pytest.raises(ScalarValueError) as info:
        pack_scalar(dtype, False, value)
    assert info.value.code == "LG621"
    with pytest.raises(LaunchError) as refused:
        check_scalar("k", ScalarSpec("n", dtype.name), value)
    assert refused.value.code == "LG621"


@settings(max_examples=60, deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False), finite=st.booleans())
def test_a_float_packs_to_numpys_bytes_or_is_refused_where_it_would_become_inf(value: float, finite: bool) -> None:
    assert _memory(pack_scalar(f64, finite, value))[:8] == np.float64(value).tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's overflow warning: the case refused below
        single = np.float32(value)
    if np.isinf(single):
        with pytest.raises(ScalarValueError) as info:
            pack_scalar(f32, finite, value)
        assert info.value.code == "LG621"
    else:
        assert _memory(pack_scalar(f32, finite, value)) == single.tobytes() + bytes(4)


@pytest.mark.parametrize("value", [True, False, np.bool_(True), np.bool_(False)])
def test_a_bool_packs_to_one_byte_of_zero_or_one(value: Any) -> None:
    assert _memory(pack_scalar(bool_, False, value)) == np.array(value, np.bool_).tobytes() + bytes(7)


@pytest.mark.parametrize("dtype", [f32, f64, i8, u64, bool_])
@pytest.mark.parametrize("value", [None, "1", b"1", 1j, [1], (1,), object(), Dev((1,))])
def test_anything_but_a_scalar_of_its_kind_is_refused(dtype: Any, value: Any) -> None:
    with pytest.raises(ScalarValueError) as info:
        pack_scalar(dtype, False, value)
    assert info.value.code == "LG620"


def test_the_layout_dtypes_now_include_bool() -> None:
    flags = Layout("Flags", ["B"], "bool", width=8)
    assert flags.dtype is bool_ and flags.view.vector_bytes == 8
    with pytest.raises(LayoutError):
        Layout("Flags", ["B"], "boolean", width=8)


def test_the_program_runner_is_documented_with_its_values(scalars: Any) -> None:
    doc = scalars.capture_echo_step.__doc__ or ""
    assert "`rate` (scalar f32, finite): a real number, given each run; the graph keeps it, and `replay` refuses " \
        "another (LG623)." in doc
