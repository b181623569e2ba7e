"""What the compiled launch path costs around the driver call, measured on a machine without a GPU.

Run from the repository root (a C compiler and CuPy are needed; torch for its rows):

    PYTHONPATH=. python3 benchmarks/bench_launch_cpu.py

The launches go to tests/fake_libcuda.py's stand-in libcuda, whose
``cuLaunchKernel`` counts the call and returns: so each row is layoutgen's
host work for one validated launch of ``variable_selection_fwd`` (reading
and checking five arrays, packing the parameters, the stream, the GIL
released around the call) with nothing of the driver's. It is the part of
bench_launch.py's "compiled path" rows that layoutgen can change; the GPU
benchmark's C floor is the rest. Torch tensors are CPU tensors taken for
CUDA ones (``torch.Tensor.is_cuda`` patched, as tests/test_launch_compiled.py
does), read like CUDA ones: through the C++ reader built against the
installed torch (runtime/torch_cxx_reader.py), and in another row through
DLPack's C exchange API and torch's Python calls (where the reader cannot be
built). Rows are timed in interleaved rounds; the floor row is a program's
launch of the same kernel (``Steps``: a call, the stream and the driver
call, nothing read or checked), and the last rows time, from Python, the
torch calls the exchange-API path makes for torch tensors. The rows time
the extension as it ships; the reads of one array at C level (``read_cost``)
and the kinds read there (``kinds``) come from a second process running its
test build (tests/helpers/fastlaunch_build.py), which alone has those hooks.
Prints a table; no assertion.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_launch import N, ROUNDS  # noqa: E402  (the repository root is on the path from here on)
from tests.fake_libcuda import run  # noqa: E402
from tests.test_launch_compiled_driver import LAUNCHER  # noqa: E402

#: The arrays of each row, each row's launch planned by the Python path and taught to the compiled one.
ROWS = r"""
import numpy as np
from tests.helpers.compiled import ADDRESS, cupy_array

FAKE.fake_set_recording(0)
shapes = {"x": (5, 7, 56), "W": (40, 40), "b": (40,), "gates": (5, 7, 40), "y": (5, 7, 40)}
rows = {"5 CuPy arrays (their fields)": [cupy_array(s, ptr=ADDRESS[n]) for n, s in shapes.items()]}
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    patch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    from layoutgen.runtime import arrays

    patch.setattr(arrays, "TORCH_DEVICE_TYPES", frozenset({"cuda", "cpu"}))  # CPU tensors taken for CUDA ones
    rows["5 torch tensors (C++ reader)"] = [torch.zeros(s) for s in shapes.values()]
    rows["5 torch.as_tensor views of NumPy arrays"] = [torch.as_tensor(np.zeros(s, np.float32))
                                                      for s in shapes.values()]

for name, arrays in rows.items():
    k.entry(*arrays)  # planned by the Python path, taught to the compiled one
"""

TIMED = ROWS + r"""
from benchmarks.bench_launch import N, ROUNDS, WARM_ROUNDS, interleaved, one_round, without_reader

calls = {name: (k.entry, *arrays) for name, arrays in rows.items()}  # what the generated function calls
plan = next(iter(k._plans.values()))
checked = plan.checked
pointers = tuple(a.data.ptr for a in rows["5 CuPy arrays (their fields)"])
steps = fastpath.program_steps("fwd", 5, [(plan.launch, checked.blocks, checked.block, (0, 1, 2, 3, 4),
                                           checked.symbols)])
if steps is not None:  # a program's launch: the call, the stream, the driver; nothing read or checked
    calls["floor: Steps.launch of the same launch"] = (steps.launch, pointers, None)
if torch is not None:
    tensors = rows["5 torch tensors (C++ reader)"]
    bump = torch._C._increment_version
    calls["from Python: t.is_neg()"] = (tensors[0].is_neg,)
    calls["from Python: torch.is_grad_enabled()"] = (torch.is_grad_enabled,)
    calls["from Python: _increment_version((g, y))"] = (bump, (tensors[3], tensors[4]))
calls["from Python: an empty call (its overhead)"] = (lambda: None,)
def shaped_like_a_generated_function(x, W, b, gates, y, *, stream=None):
    pass
calls["from Python: an empty function of 5 arguments"] = (shaped_like_a_generated_function, 1, 2, 3, 4, 5)
hits, launched = k._fast.hits, FAKE.fake_counted()
timed = [(name, lambda call=call: one_round(call[0], lambda: None, *call[1:])) for name, call in calls.items()]
if torch is not None:  # the same tensors read through DLPack's exchange API and torch's Python calls
    timed.insert(2, ("5 torch tensors (DLPack exchange API)", without_reader(dict(timed)["5 torch tensors (C++ reader)"])))
times = interleaved(timed)
steps_calls = (WARM_ROUNDS + ROUNDS) * N if steps is not None else 0  # launched too, not through a launcher
report(times=dict(times), hits=k._fast.hits - hits, launched=FAKE.fake_counted() - launched - steps_calls,
       shipped=not hasattr(EXT, "read_cost"))
"""

#: The test build's reads of the first array of each row, as a launch makes them: (ns, how), and the kinds.
READS = ROWS + r"""
reads = {name: EXT.read_cost(arrays[0], 200000) for name, arrays in rows.items()}
report(reads=reads, kinds={t.__name__: v for t, v in EXT.kinds().items()})
"""


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        got = run(Path(tmp), LAUNCHER + TIMED, env={"LAYOUTGEN_TEST_EXTENSION": "shipped"}, timeout=600)
        got.update(run(Path(tmp), "from tests.helpers.fastlaunch_build import install\ninstall()\n" + LAUNCHER + READS,
                       timeout=600))
    build = "the shipped build" if got["shipped"] else "the test build"
    print(f"read at C level: {got['kinds']}; {got['hits']} calls launched in C, {got['launched']} reached the "
          f"stand-in driver (rows: {build})")
    print(f"{'row':<48} {'µs/call':>9}")
    for name, us in got["times"].items():
        print(f"{name:<48} {us:>9.3f}")
    for name, (ns, how) in got["reads"].items():
        print(f"C read of the first of {name}: {ns:.0f} ns ({how})")
    print(f"{sys.implementation.name} {sys.version.split()[0]}, stand-in libcuda, median of {ROUNDS} interleaved "
          f"rounds of {N} calls")


if __name__ == "__main__":
    main()
