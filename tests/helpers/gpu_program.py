"""The VSN training step's data on a GPU, and a spec generated into build/ and imported (tests/gpu).

Inputs are fresh random data; every buffer a launch writes is poisoned with NaN first, so an element nothing
wrote shows up as an error.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
B_, K_ = 16, 64
LR = 0.05


def build(spec: str, out: str, *flags: str) -> ModuleType:
    """Generate ``spec`` into ``build/<out>`` (ignored by git) and import the generated module."""
    done = subprocess.run([sys.executable, "-m", "layoutgen", "generate", *flags, "--out", f"build/{out}", spec],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (init,) = (REPO / "build" / out).glob("*/__init__.py")
    module_spec = importlib.util.spec_from_file_location(f"{out.replace('-', '_')}_{init.parent.name}", init)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def step_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random float64 inputs of `vsn_step` ([B_, K_] rows)."""
    return {
        "raw": rng.normal(0.5, 2.0, (B_, K_, 40)),
        "stats": np.stack([rng.normal(0.5, 0.1, 40), rng.uniform(0.3, 0.7, 40)], axis=1),
        "ctx": rng.normal(size=(B_, 16)) * 100.0,
        "target": rng.normal(size=(B_, K_, 40)),
        "W": rng.normal(size=(40, 40)) * 0.3,
        "b": rng.normal(size=40),
    }


def step_buffers(inputs: dict[str, np.ndarray]) -> dict[str, Any]:
    """Device buffers of the step: the inputs copied, everything written poisoned with NaN."""
    import cupy

    dev = {name: cupy.asarray(a.astype(np.float32)) for name, a in inputs.items()}
    for name, shape in (("window", (B_, K_, 56)), ("gates", (B_, K_, 40)), ("y", (B_, K_, 40)),
                        ("grad_y", (B_, K_, 40)), ("grad_x", (B_, K_, 40)), ("grad_W", (40, 40)), ("grad_b", (40,))):
        dev[name] = cupy.full(shape, cupy.nan, cupy.float32)
    return dev
