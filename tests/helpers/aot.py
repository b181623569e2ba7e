"""The ahead-of-time example project (`layoutgen build`): its spec, its two kernel bodies, its launchers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from layoutgen.runtime.launch import KernelLauncher

SPEC = '''\
from layoutgen import Field, In, Kernel, Layout, Out, Spec, dims, f32

B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])
Features = Layout("Features", [B, K], f32, width=40)

scale = Kernel("scale", "scale.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])])
shift = Kernel("shift", "shift.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])])

spec = Spec("example", kernels=[scale.bind(x=Window.snap, y=Features), shift.bind(x=Window.snap, y=Features)])
'''
SCALE = "    for (int f = 0; f < F; ++f)\n        y.at(row, f) = 2.0f * x.at(row, f);\n"
SHIFT = "    for (int f = 0; f < F; ++f)\n        y.at(row, f) = x.at(row, f) + 1.0f;\n"


def launcher(root: Path, kernel: str) -> KernelLauncher:
    """The generated launcher of ``kernel`` in ``root``'s package `example`, imported from its file."""
    path = root / "generated" / "example" / "__init__.py"
    spec = importlib.util.spec_from_file_location("_lg_test_aot_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    (found,) = [v for v in vars(module).values() if isinstance(v, KernelLauncher) and v.spec.name == kernel]
    return found
