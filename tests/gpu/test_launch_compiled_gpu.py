"""The compiled launch path on a real device: the driver's current context, CuPy's current stream, CuPy's
fields and torch tensors (read by the C++ reader, and through DLPack), and every refusal handed to the Python
path, which refuses it as it does alone.

Each case runs one launcher of `variable_selection_fwd` per path (the compiled
one and one built with ``LAYOUTGEN_PYTHON_LAUNCH=1``) after the same good
launch planned it; outputs are poisoned with NaN first, so a refusal that let
a kernel run shows.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from layoutgen.runtime import fastpath, launch, torch_cxx_reader
from layoutgen.runtime.fastpath import use_torch
from layoutgen.runtime.launch import KernelLauncher, LaunchError
from layoutgen.runtime.paths import PYTHON_LAUNCH_ENV
from tests.launch_paths import take_path

pytestmark = pytest.mark.gpu
B, K = 5, 7
EXT = fastpath.extension()[0]


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, KernelLauncher]]:
    """A launcher of variable_selection_fwd on each path."""
    import generated.vsn as vsn

    assert EXT is not None, fastpath.extension()[1]
    fwd = vsn._lg_kernel_variable_selection_fwd
    made = {}
    for path in ("python", "compiled"):
        take_path(monkeypatch, path)
        made[path] = fwd.fresh()
    assert made["python"]._fast is None and made["compiled"]._fast is not None
    yield made


def good() -> dict[str, Any]:
    import cupy

    rng = cupy.random.default_rng(7)
    return {"x": rng.standard_normal((B, K, 56), dtype=cupy.float32),
            "W": rng.standard_normal((40, 40), dtype=cupy.float32) * 0.3,
            "b": rng.standard_normal(40, dtype=cupy.float32),
            "gates": cupy.full((B, K, 40), cupy.nan, cupy.float32), "y": cupy.full((B, K, 40), cupy.nan, cupy.float32)}


def outcome(call: Callable[[], None]) -> tuple[str, str] | None:
    """The refusal's code and message, its addresses masked (each path's bad array is allocated anew)."""
    import re

    try:
        call()
    except LaunchError as exc:
        return exc.code, re.sub(r"0x[0-9a-f]+", "0x…", str(exc))
    return None


def test_the_compiled_path_is_on_with_the_driver_and_cupys_stream_function() -> None:
    assert EXT is not None and EXT.driver() == "libcuda loaded"
    assert EXT.current_stream() == "cupy_backends.cuda.stream.get_current_stream_ptr"


def test_a_valid_launch_runs_in_c_and_writes_what_the_python_path_writes(paths: dict[str, KernelLauncher]) -> None:
    import cupy

    results = {}
    for path, k in paths.items():
        args = good()
        for _ in range(3):
            k(*args.values())
        cupy.cuda.runtime.deviceSynchronize()
        results[path] = (cupy.asnumpy(args["gates"]), cupy.asnumpy(args["y"]))
    fast = paths["compiled"]._fast
    assert fast.hits == 2 and fast.handovers == 1 and EXT.kinds()[cupy.ndarray] == "fields"
    for a, b in zip(results["python"], results["compiled"]):
        np.testing.assert_array_equal(a, b)
        assert not np.isnan(a).any()


def _bad(name: str) -> dict[str, Any]:
    import cupy

    args = good()
    if name == "LG601":
        args["x"] = args["x"][..., :40].copy()
    elif name == "LG602":
        args["W"] = args["W"].astype("float64")
    elif name == "LG603":
        args["y"] = cupy.full((B + 1, K, 40), cupy.nan, cupy.float32)
    elif name == "LG604":
        args["W"] = args["W"].T
    elif name == "LG606":  # an element off the 16 bytes the vector stores of `gates` need
        raw = cupy.cuda.alloc(B * K * 40 * 4 + 16)
        args["gates"] = cupy.ndarray((B, K, 40), cupy.float32, cupy.cuda.MemoryPointer(raw.mem, 4))
        args["gates"].fill(cupy.nan)
    elif name == "LG608":
        args["b"] = np.zeros(40, np.float32)
    elif name == "LG614":
        args["y"] = args["gates"]
    elif name == "LG616":
        args["stream"] = 0
    return args


@pytest.mark.parametrize("code", ["LG601", "LG602", "LG603", "LG604", "LG606", "LG608", "LG614", "LG616"])
def test_every_refusal_goes_through_the_real_driver_on_both_paths_alike(paths: dict[str, KernelLauncher],
                                                                         code: str) -> None:
    import cupy

    results = {}
    for path, k in paths.items():
        k(*good().values())  # planned (and taught)
        bad = _bad(code)
        stream = bad.pop("stream", None)
        if path == "compiled":
            assert k._fast.attempt(*bad.values(), stream=stream) is False
        results[path] = outcome(lambda: k(*bad.values(), stream=stream))
        cupy.cuda.runtime.deviceSynchronize()
        for name in ("gates", "y"):  # nothing ran
            if isinstance(bad[name], cupy.ndarray) and bad[name].size:
                assert bool(cupy.isnan(bad[name]).all())
    assert results["python"] is not None and results["python"][0] == code
    assert results["compiled"] == results["python"]


def test_a_launch_follows_cupys_current_stream_into_a_graph_capture(paths: dict[str, KernelLauncher]) -> None:
    import cupy

    for k in paths.values():
        args = good()
        k(*args.values())
        args = good()
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:  # the current stream: a launch on any other would break the capture
            stream.begin_capture()
            k(*args.values())
            graph = stream.end_capture()
        stream.synchronize()
        assert bool(cupy.isnan(args["y"]).all())  # captured, not run
        graph.launch(stream)
        stream.synchronize()
        assert not bool(cupy.isnan(args["y"]).any())
    assert paths["compiled"]._fast.hits == 1


def test_a_thread_with_no_current_context_is_handed_to_the_python_path(paths: dict[str, KernelLauncher]) -> None:
    """A new thread has no current context until CUDA makes one: the compiled path launches nothing there, and
    the call does on both paths whatever the Python path does."""
    results = {}
    for path, k in paths.items():
        k(*good().values())
        arrays = good()
        got: list[Any] = []

        def launch() -> None:
            try:
                got.append(outcome(lambda: k(*arrays.values())))
            except Exception as exc:  # noqa: BLE001 - whatever the Python path does there, both must do
                got.append((type(exc).__name__, str(exc)))

        handovers = k._fast.handovers if k._fast is not None else 0
        thread = threading.Thread(target=launch)
        thread.start()
        thread.join()
        results[path] = got
        if k._fast is not None:
            assert k._fast.handovers == handovers + 1
    assert results["compiled"] == results["python"]


@pytest.mark.parametrize("reader", ["cxx", "dlpack"])
def test_torch_tensors_are_read_at_c_level_and_refused_as_the_python_path_refuses(
        paths: dict[str, KernelLauncher], reader: str) -> None:
    """Through the C++ reader built against this torch (``cxx``), and through DLPack's exchange API (``dlpack``,
    as where the reader cannot be built)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU")
    use_torch()
    address, calls = torch_cxx_reader.installed()
    assert address is not None and calls, torch_cxx_reader.state()
    with torch_cxx_reader.turned_off(EXT) if reader == "dlpack" else contextlib.nullcontext():
        torch_launches_on_both_paths(torch, paths)


def torch_launches_on_both_paths(torch: Any, paths: dict[str, KernelLauncher]) -> None:

    def tensors() -> list[Any]:
        g = torch.Generator(device="cuda").manual_seed(3)
        return [torch.randn(B, K, 56, device="cuda", generator=g), torch.randn(40, 40, device="cuda", generator=g),
                torch.randn(40, device="cuda", generator=g), torch.full((B, K, 40), torch.nan, device="cuda"),
                torch.full((B, K, 40), torch.nan, device="cuda")]

    results = {}
    for path, k in paths.items():
        t = tensors()
        k(*t)
        k(*t)
        neg = outcome(lambda: k(torch._neg_view(t[0]), *t[1:]))
        grad = outcome(lambda: k(*t[:4], torch.zeros(B, K, 40, device="cuda", requires_grad=True)))
        torch.cuda.synchronize()
        results[path] = (neg, grad, [x._version for x in t], t[4].cpu())
    neg, grad = results["python"][:2]
    assert neg is not None and neg[0] == "LG608" and grad is not None and grad[0] == "LG618"
    assert results["compiled"][:3] == results["python"][:3] and results["python"][2] == [0, 0, 0, 2, 2]
    assert torch.equal(results["compiled"][3], results["python"][3])
    if hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        assert EXT.kinds()[torch.Tensor] == "dlpack"
    assert paths["compiled"]._fast.hits >= 1


def cuda_torch() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU")
    use_torch()
    return torch


def test_torch_tensors_given_no_stream_launch_on_torchs_current_stream_into_its_graph_capture(
        paths: dict[str, KernelLauncher]) -> None:
    """torch.cuda.graph captures on a side stream of its own, current while it captures: a launch over torch
    tensors given no stream is captured there (on any other stream it would break the capture), and runs when
    the graph is replayed, on both paths alike."""
    torch = cuda_torch()
    outputs = {}
    for path, k in paths.items():
        g = torch.Generator(device="cuda").manual_seed(5)
        t = [torch.randn(B, K, 56, device="cuda", generator=g), torch.randn(40, 40, device="cuda", generator=g),
             torch.randn(40, device="cuda", generator=g), torch.full((B, K, 40), torch.nan, device="cuda"),
             torch.full((B, K, 40), torch.nan, device="cuda")]
        k(*(x.clone() for x in t))  # planned (and, on the compiled path, taught) outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            k(*t)
        torch.cuda.synchronize()
        assert bool(t[4].isnan().all())  # captured, not run
        graph.replay()
        torch.cuda.synchronize()
        assert not bool(t[4].isnan().any())
        outputs[path] = t[4].cpu()
    assert torch.equal(outputs["compiled"], outputs["python"])
    assert paths["compiled"]._fast.hits == 1  # the captured launch was the compiled path's


def test_torch_tensors_with_cupy_arrays_and_no_stream_need_one_current_stream(
        paths: dict[str, KernelLauncher]) -> None:
    """Torch tensors in, CuPy arrays out: launched while both libraries are on their default stream; LG616 on
    both paths while torch's current stream is a side stream of its own."""
    import cupy

    torch = cuda_torch()
    results = {}
    for path, k in paths.items():
        args = good()
        inputs = [torch.as_tensor(args[name], device="cuda") for name in ("x", "W", "b")]
        k(*inputs, args["gates"], args["y"])
        cupy.cuda.runtime.deviceSynchronize()
        launched = not bool(cupy.isnan(args["y"]).any())
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            refused = outcome(lambda: k(*inputs, args["gates"], args["y"]))
        results[path] = (launched, refused)
    assert results["python"][0] and results["python"][1] is not None and results["python"][1][0] == "LG616"
    assert results["compiled"] == results["python"]


def test_a_program_launches_its_steps_through_one_compiled_call() -> None:
    import cupy

    import generated.vsn as vsn
    from tests.helpers.gpu_program import LR, step_buffers, step_inputs

    runner = vsn._lg_program_vsn_step
    if launch.launch_path() != "compiled":
        pytest.skip(f"launchers take the Python path in this run ({PYTHON_LAUNCH_ENV})")
    assert all(k._fast is not None for k in runner._launchers)
    inputs = step_inputs(np.random.default_rng(5))
    first, second = step_buffers(inputs), step_buffers(inputs)
    vsn.vsn_step(**first, lr=LR)
    vsn.vsn_step(**second, lr=LR)  # the launches prepared for the first run, with the second's pointers
    cupy.cuda.runtime.deviceSynchronize()
    assert [r.steps is not None for r in runner._ready.values()] == [True]
    for name in ("window", "gates", "y", "grad_y", "grad_x"):
        assert np.array_equal(first[name].get(), second[name].get()), name


# the stream: where the compiled path launches is where the Python path launches ------------------------------

#: What a subprocess of these tests runs first (the driver's entry points, and CuPy's per-thread default stream,
#: are chosen once per process by environment variables): `report(**values)` prints what it found.
PRELUDE = r"""
import json, threading
import cupy
import numpy as np
from layoutgen.runtime import driver, fastpath
import generated.vsn as vsn
EXT = fastpath.extension()[0]
B, K = 5, 7

def good():
    rng = cupy.random.default_rng(7)
    return [rng.standard_normal((B, K, 56), dtype=cupy.float32),
            rng.standard_normal((40, 40), dtype=cupy.float32) * 0.3, rng.standard_normal(40, dtype=cupy.float32),
            cupy.full((B, K, 40), cupy.nan, cupy.float32), cupy.full((B, K, 40), cupy.nan, cupy.float32)]

def launcher():
    return vsn._lg_kernel_variable_selection_fwd.fresh()

def report(**values):
    print("REPORT " + json.dumps(values))
"""


def _subprocess(script: str, timeout: float = 300, **env: str) -> dict[str, Any]:
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    environment = {**os.environ, PYTHON_LAUNCH_ENV: "0", **env}
    done = subprocess.run([sys.executable, "-c", PRELUDE + script], cwd=Path(__file__).resolve().parents[2],
                          env=environment, capture_output=True, text=True, timeout=timeout)
    reports = [line[7:] for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    assert done.returncode == 0 and len(reports) == 1, f"{done.returncode}\n{done.stdout}\n{done.stderr}"
    return dict(json.loads(reports[0]))


#: Where the current CuPy stream can be, and compare(): {where: [the compiled path's stream, the Python path's]}.
STREAM_CONTEXTS = """
def contexts():
    import contextlib, warnings
    made = cupy.cuda.Stream(non_blocking=True)
    yield "default", contextlib.nullcontext()
    yield "with a stream", made
    yield "with the null stream", cupy.cuda.Stream.null
    yield "with the per-thread stream", cupy.cuda.Stream.ptds
    with warnings.catch_warnings():  # CuPy 14 deprecates ExternalStream
        warnings.simplefilter("ignore", DeprecationWarning)
        external = cupy.cuda.ExternalStream(made.ptr)
    yield "with an external stream", external
    if cupy.cuda.runtime.getDeviceCount() > 1:
        yield "on device 1", cupy.cuda.Device(1)

def compare():
    found = {}
    for name, context in contexts():
        with context:
            found[name] = [EXT.stream_of(None), driver.stream_handle(None)]
    made = cupy.cuda.Stream(non_blocking=True)
    made.use()
    found["after stream.use()"] = [EXT.stream_of(None), driver.stream_handle(None)]
    cupy.cuda.Stream.null.use()
    got = []
    thread = threading.Thread(target=lambda: got.append([EXT.stream_of(None), driver.stream_handle(None)]))
    thread.start()
    thread.join()
    found["a new thread"] = got[0]
    return found
"""


@pytest.mark.parametrize("per_thread", ["0", "1"], ids=["legacy", "CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1"])
def test_a_compiled_launch_is_made_on_the_stream_a_python_launch_is_made_on(per_thread: str) -> None:
    # (current first: compare() ends with the null stream made current)
    found = _subprocess(STREAM_CONTEXTS + "report(current=cupy.cuda.get_current_stream().ptr, found=compare())\n",
                        CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=per_thread)
    assert found["current"] == (2 if per_thread == "1" else 0)  # cudaStreamPerThread, or the null stream
    for name, (compiled, python) in found["found"].items():
        assert compiled == python, name  # read through CuPy's C function, or left to stream_handle: the same


def test_with_cuda_bindings_per_thread_default_stream_a_compiled_launch_is_captured_with_the_python_ones() -> None:
    """CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1: cuda.bindings' cuLaunchKernel takes handle 0 (the current
    CuPy stream, the null one) for the calling thread's default stream, which can be captured (the legacy one
    cannot: a launch on it during the capture is an error). The compiled path must launch on it too."""
    got = _subprocess(r"""
out = {}
for path in ("python", "compiled"):
    import os
    os.environ["LAYOUTGEN_PYTHON_LAUNCH"] = "1" if path == "python" else "0"
    k = launcher()
    k(*good())
    args = good()
    hits = k._fast.hits if k._fast is not None else 0
    capturing = cupy.cuda.Stream.ptds
    capturing.begin_capture()
    k(*args)  # stream None: the null stream, handle 0
    graph = capturing.end_capture()
    captured = bool(cupy.isnan(args[4]).all())
    graph.launch(capturing)
    capturing.synchronize()
    out[path] = [captured, bool(cupy.isnan(args[4]).any()), (k._fast.hits - hits) if k._fast is not None else 1]
report(out=out, driver=EXT.driver())
""", CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM="1")
    assert got["driver"].startswith("libcuda loaded (the per-thread default stream's")
    assert got["out"] == {"python": [True, False, 1], "compiled": [True, False, 1]}  # launched in C, captured


def test_a_compiled_launch_behind_a_python_host_function_does_not_hold_the_gil() -> None:
    """CUDA_LAUNCH_BLOCKING=1: cuLaunchKernel returns once the kernel has run, after the host function queued
    before it on the stream, a Python callback that needs the GIL. Holding it there would hang the process."""
    got = _subprocess(r"""
k = launcher()
k(*good())
args = good()
ran = []
stream = cupy.cuda.Stream(non_blocking=True)
with stream:
    stream.launch_host_func(lambda arg: ran.append(arg), 1)
    k(*args)
stream.synchronize()
report(ran=ran, hits=k._fast.hits, written=not bool(cupy.isnan(args[4]).any()))
""", timeout=120, CUDA_LAUNCH_BLOCKING="1")
    assert got == {"ran": [1], "hits": 1, "written": True}
