"""The compiled launch path's own driver calls, through a stand-in libcuda (tests/fake_libcuda.py), without a GPU.

The other tests of the compiled path replace ``cuLaunchKernel`` and the
current device by a hook; here the extension calls the driver itself: the
entry points it resolves (those ``cuda.bindings`` resolves for the Python
path's ``PackedLaunch``, per-thread default stream included), the current
context and its device, CuPy's current stream through CuPy's C function,
the packed parameters, and a launch that blocks until a host function (a
Python callback) has run. Each test runs in a process of its own, whose
libcuda is the fake one; the Python path's launches are recorded by a
``PackedLaunch`` whose ``cuLaunchKernel`` is a recorder.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.fake_libcuda import run

#: A launcher of variable_selection_fwd over the fake arrays, whose Python path launches through a recorded
#: PackedLaunch (so the compiled path learns its plans) and reads the current CuPy stream from ``STREAM``; the
#: compiled path reads it from a C function standing in for CuPy's ``get_current_stream_ptr``
#: (``STREAM["c"]``, the pointer CuPy's C function returns, and ``STREAM["python"]``, the current stream
#: object's ``ptr``, differ only where CuPy's do: the null stream made current under
#: CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1).
LAUNCHER = r"""
import ctypes, threading, time
from types import SimpleNamespace
import pytest
from tests.fake_device import FUNCTION, fake_device
from tests.helpers.fastlaunch_build import install
install()  # the test build (with its benchmark hooks), as the tests run it
from tests.helpers.launch import FWD, Dev, ProtocolStream, dev_reader, fwd_args
from layoutgen.runtime import driver, fastpath, launch
from layoutgen.runtime.launch import KernelLauncher

patch = pytest.MonkeyPatch()
patch.setenv("LAYOUTGEN_PYTHON_LAUNCH", "0")
patch.setattr(launch, "find_device", lambda: 0)
patch.setattr(launch, "device_arch", lambda d: "sm_90")
patch.setitem(launch._FAST_READERS, Dev, dev_reader)
fake_device(patch)
EXT = fastpath.extension()[0]
assert getattr(EXT, "get_hook", lambda: None)() is None  # no test hook stands in for the driver (test build)

STREAM = {"c": 0x51, "python": 0x51}
ASKED = []  # the devices CuPy's C functions were asked the current stream of (-1: the current one)
CURRENT = StreamFn(lambda: ASKED.append(-1) or STREAM["c"])
OF_DEVICE = DeviceStreamFn(lambda device: ASKED.append(device) or STREAM["c"])
stand_in_cupy_streams(CURRENT, OF_DEVICE)
patch.setattr(driver, "_CURRENT_STREAM", lambda: SimpleNamespace(ptr=STREAM["python"]))

N_VALUES = len(FWD.spec.params) + len(FWD.spec.symbols)
python_launches = []
packed = object.__new__(driver.PackedLaunch)

def python_launch(function, gx, gy, gz, bx, by, bz, shared, stream, address, extra):
    python_launches.append({"function": function, "grid": [gx, gy, gz], "block": [bx, by, bz], "shared": shared,
                            "stream": stream, "params": list(packed._values)})
    return ("ok",)

packed.__dict__.update(_launch=python_launch, _success="ok", _function=FUNCTION, _name=FWD.spec.name,
                       _values=(ctypes.c_uint64 * N_VALUES)(), _address=0, _streams={}, _stream_type=int,
                       _lock=threading.Lock(), handle=FUNCTION)
k = FWD.fresh()
k.function = lambda d, arch: packed
FAKE.fake_set_launch(0, N_VALUES)
"""


def test_the_compiled_path_calls_the_driver_with_what_the_python_path_passes_it(tmp_path: Path) -> None:
    got = run(tmp_path, LAUNCHER + r"""
k(*fwd_args())                                   # planned by the Python path, taught to the compiled one
k(*fwd_args())                                   # the current stream, read through CuPy's C function
STREAM.update(c=2, python=0)                     # CuPy's C pointer is ambiguous: stream_handle decides
k(*fwd_args())
STREAM.update(c=0x51, python=0x51)
k(*fwd_args(), stream=ProtocolStream(0x5678))
FAKE.fake_set_context(None, 0, 0)                # no current context: the Python path
k(*fwd_args())
FAKE.fake_set_context(0x1234, 1, 0)              # device 1's context is current: not the plan's device
k(*fwd_args())
FAKE.fake_set_context(0x1234, 0, 3)              # CUDA_ERROR_NOT_INITIALIZED
k(*fwd_args())
FAKE.fake_set_context(0x1234, 0, 0)
FAKE.fake_set_launch(719, N_VALUES)              # the driver refuses it: the Python path launches again
k(*fwd_args())
report(c=launches(), python=python_launches, hits=k._fast.hits, handovers=k._fast.handovers,
       driver=EXT.driver(), stream=EXT.current_stream(), asked=ASKED)
""")
    assert got["driver"] == "libcuda loaded" and got["stream"] == "cupy_backends.cuda.stream.get_current_stream_ptr"
    c, python = got["c"], got["python"]
    assert [launch["stream"] for launch in c] == [0x51, 0, 0x5678, 0x51]
    assert got["asked"] == [0, 0, 0]  # of the device the launch read (no second cudaGetDevice), where None
    assert [launch["stream"] for launch in python] == [0x51] * 5  # planned; 3 handed over; refused
    assert got["hits"] == 3 and got["handovers"] == 5
    first = python[0]
    for launch in c:  # byte for byte what PackedLaunch gives cuLaunchKernel
        assert launch["params"] == first["params"] and launch["function"] == first["function"]
        assert (launch["grid"], launch["block"], launch["shared"]) == (first["grid"], first["block"], first["shared"])
        assert launch["per_thread"] == 0 and launch["host_function_ran"] == -1


def test_torch_tensors_given_no_stream_launch_on_torchs_current_work_stream(tmp_path: Path) -> None:
    """Through torch's DLPack exchange API (its current_work_stream, here a stand-in answering 0x7000 + the
    device), as DLPack asks of a library launching on a framework's tensors: on torch's current stream of
    the current device, on both paths, not on CuPy's (0x51)."""
    got = run(tmp_path, LAUNCHER + r"""
import torch
from layoutgen.runtime.fastpath import use_torch
patch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))  # CPU tensors taken for device 0's
from layoutgen.runtime import arrays, torch_streams
patch.setattr(arrays, "TORCH_DEVICE_TYPES", frozenset({"cuda", "cpu"}))
patch.setattr(torch_streams, "_RAW_STREAM", lambda device: 0x7000 + device)  # the Python path's read of it
get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
real = Exchange.from_address(get_pointer(torch.Tensor.__dlpack_c_exchange_api__, b"dlpack_exchange_api"))
WORKED = []  # what the stand-in was asked: (device type, device)
WORK = WorkStreamFn(lambda kind, device, out: WORKED.append((kind, device)) or out.__setitem__(0, 0x7000 + device) or 0)
table = Exchange(1, 3, None, (ctypes.c_void_p * 5)(*real.calls[:4], address(WORK)))  # torch's, but current_work_stream
patch.setattr(torch.Tensor, "__dlpack_c_exchange_api__", exchange_capsule(table))
use_torch()
tensors = [torch.randn(*a.__cuda_array_interface__["shape"]) for a in fwd_args()]
k(*tensors)                                      # planned by the Python path, taught to the compiled one
k(*tensors)
k(*tensors)
report(c=launches(), python=python_launches, hits=k._fast.hits, asked=ASKED, worked=WORKED)
""")
    assert [launch["stream"] for launch in got["python"]] == [0x7000]
    assert [launch["stream"] for launch in got["c"]] == [0x7000, 0x7000]
    assert got["worked"] == [[2, 0], [2, 0]]  # kDLCUDA, device 0: the compiled path asked torch's table
    assert got["hits"] == 2 and got["asked"] == []  # CuPy's current stream is never read


def test_the_driver_entry_points_are_those_cuda_bindings_resolves(tmp_path: Path) -> None:
    script = LAUNCHER + r"""
k(*fwd_args())
k(*fwd_args())
report(c=launches(), requests=requests())
"""
    legacy = run(tmp_path / "legacy", script)
    assert legacy["requests"] == ["cuLaunchKernel 4000 0", "cuCtxGetDevice 2000 0"]
    assert [launch["per_thread"] for launch in legacy["c"]] == [0]
    # cuda.bindings takes the per-thread default stream's entry points wherever this variable is set (to
    # anything): handle 0 is then the calling thread's default stream, not the legacy one.
    for value in ("1", "0"):
        ptds = run(tmp_path / f"ptds{value}", script, env={"CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM": value})
        assert ptds["requests"] == ["cuLaunchKernel 7000 2", "cuCtxGetDevice 2000 2"]
        assert [launch["per_thread"] for launch in ptds["c"]] == [1]


def test_a_launch_waiting_for_a_host_function_lets_it_take_the_gil(tmp_path: Path) -> None:
    """A stream's queue is full, or CUDA_LAUNCH_BLOCKING=1 is set, behind a host function that runs Python
    (CuPy's ``Stream.launch_host_func``): cuLaunchKernel returns once that function has run, which needs
    the GIL. A launch made holding it would wait forever (here: 2 s, then it records that it gave up)."""
    got = run(tmp_path, LAUNCHER + r"""
from layoutgen.runtime._fastlaunch import Steps
ran = []
host_function = ctypes.CFUNCTYPE(None)(lambda: ran.append(1))
k(*fwd_args())
FAKE.fake_set_host_function(host_function)
k(*fwd_args())                                      # the launcher's compiled launch
FAKE.fake_set_launch(0, 1)
steps = Steps("program", 1, ((packed, FUNCTION, 3, 64, 0, (0,), ()),))
done = steps.launch((0x7F0000000000,), ProtocolStream(7))  # a program's
time.sleep(0.5)                                     # a callback that gave up on the GIL gets it now
FAKE.fake_set_host_function(None)
report(c=launches(), ran=len(ran), steps=done)
""")
    assert [launch["host_function_ran"] for launch in got["c"]] == [1, 1] and got["ran"] == 2
    assert got["steps"] == 1 and got["c"][1]["params"] == [0x7F0000000000] and got["c"][1]["stream"] == 7


def test_the_cpu_launch_benchmark_times_calls_that_all_launch_in_c() -> None:
    """benchmarks/bench_launch_cpu.py: every call it times reaches the stand-in driver from the C path (a
    call handed to the Python path would time that path instead), and it prints a row per kind of array."""
    import re
    import subprocess
    import sys

    from tests.fake_libcuda import ROOT

    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_launch_cpu.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    counts = re.search(r"(\d+) calls launched in C, (\d+) reached the stand-in driver", done.stdout)
    assert counts is not None and int(counts[1]) == int(counts[2]) > 0, done.stdout
    assert re.search(r"^5 CuPy arrays \(their fields\) +\d+\.\d{3}$", done.stdout, re.MULTILINE), done.stdout
    assert re.search(r"^C read of the first of 5 CuPy arrays \(their fields\): \d+ ns \(fields\)$", done.stdout,
                     re.MULTILINE), done.stdout


def test_the_launch_step_benchmark_launches_what_it_says_each_piece_adds(tmp_path: Path) -> None:
    """benchmarks/launch/step_parts.c (bench_launch_steps.py's pieces), built as the benchmark builds it and
    run against the stand-in driver: each function launches the function it was given with its seven values,
    on the legacy stream but for those on CuPy's current stream, CuPy's stream of the device read and torch's
    current stream (of the device, through the exchange API); and the device read refuses no context."""
    got = run(tmp_path, r"""
import sys
from pathlib import Path
sys.path.insert(0, "benchmarks")
from bench_launch_steps import build_step_parts
CURRENT = StreamFn(lambda: 0x51)
OF_DEVICE = DeviceStreamFn(lambda device: 0x60 + device)
stand_in_cupy_streams(CURRENT, OF_DEVICE)
WORK_STREAM = WorkStreamFn(lambda kind, device, out: out.__setitem__(0, 0x70 + device + 8 * kind) or 0)
EXCHANGE = Exchange(1, 3, None, (ctypes.c_void_p * 5)(0, 0, 0, 0, address(WORK_STREAM)))
parts = build_step_parts(Path(""" + repr(str(tmp_path)) + r"""))
parts.setup(0xF00, (1, 2, 3, 4, 5, 64, 32), exchange_capsule(EXCHANGE))
FAKE.fake_set_context(0x1234, 3, 0)  # device 3's context is current
FAKE.fake_set_launch(0, 7)  # the stand-in records seven values a launch
for name in ("bare", "gil_released", "device_read", "current_stream", "device_stream", "torch_stream"):
    getattr(parts, name)()
parts.c_loop(2)
assert parts.nothing() is None
FAKE.fake_set_context(None, 0, 0)
try:
    parts.device_read()
    refused = False
except RuntimeError:
    refused = True
report(launches=launches(), refused=refused)
""")
    assert [launch["stream"] for launch in got["launches"]] == [0, 0, 0, 0x51, 0x63, 0x73 + 16, 0, 0]
    for launch in got["launches"]:
        assert launch["function"] == 0xF00 and launch["grid"] == [16, 1, 1] and launch["block"] == [128, 1, 1]
        assert launch["params"][:7] == [1, 2, 3, 4, 5, 64, 32]
    assert got["refused"]
