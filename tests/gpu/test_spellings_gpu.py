"""The spelling corpus on the GPU: the debug build stops each bad kernel at its bad access, and each correct
twin matches numpy.

The kernels of tests/test_spellings_execute.py (tests/specs/spellings/corpus.py written in three forms by
tests/helpers/spellings.py) are rendered as the debug build, without the lint (which refuses some of them
already: they must reach the device whatever the static checks learn to see), and launched at B, K = 3, 61 (the
sizes `check --execute` chooses) on fresh random data, outputs poisoned with NaN. Each bad kernel must be stopped
(KernelFault, LG611) or its NaN found (NonFiniteOutput, LG612) at the line where `check --execute` refuses it on
the CPU (GPU_FAULTS), or, for an access through a pointer, where the pointer was taken (Spelling.taken); each
correct twin must match a float64 numpy reference.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tests.helpers.spellings import REFERENCES, Written, kernels, write_project

pytestmark = pytest.mark.gpu
B, K = 3, 61
#: What the debug build raises for each class of finding of the CPU run (the corpus's `finding`): a bad index or
#: a checked pointer's access stops the kernel (KernelFault, LG611); a NaN that a read past a tile's held rows
#: (LG655 on the CPU) or of memory nothing wrote (LG654) put into an output is found by the output scan after the
#: launch (NonFiniteOutput, LG612), at the read's line for a tile's rows, at none for a static __shared__ array; a
#: pointer taken from a shared tile (`const float* a = &xs(0, 0)`) is a checked pointer with the tile's footprint,
#: so a read through it past the tile's width (into its pitch's padding) stops the kernel (KernelFault, LG611) at the
#: line where the pointer was taken (:func:`_gpu_line`).
GPU_FAULTS = {"pointer": ("KernelFault", "LG611"), "field": ("KernelFault", "LG611"), "narrow": ("KernelFault", "LG611"),
              "tile_pitch": ("KernelFault", "LG611"), "tile_rows": ("NonFiniteOutput", "LG612"),
              "unwritten": ("NonFiniteOutput", "LG612")}
#: Columns of the arrays the views are of: Window and Padded rows are 136 wide, Narrow's 40, Packed's 96.
WIDTHS = {"x": 136, "n": 40, "y": 96}


def _build(root: Path, kind: str) -> ModuleType:
    """The debug build of ``root/<kind>/spec.py`` rendered into ``root/build``, its lint not run, imported."""
    from layoutgen.codegen.render import render_spec
    from layoutgen.project.specload import load_spec

    loaded = load_spec(root / kind / "spec.py")
    assert loaded.spec is not None, loaded.diagnostics
    rendered = render_spec(loaded.spec, root, f"{kind}/spec.py", debug=True, out="build")
    assert not rendered.diagnostics, rendered.diagnostics
    for path, text in rendered.files.items():
        (root / "build" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / "build" / path).write_text(text, encoding="utf-8")
    init = root / "build" / loaded.spec.name / "__init__.py"
    module_spec = importlib.util.spec_from_file_location(f"gpu_spellings_{loaded.spec.name}", init)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, list[Written]], dict[str, ModuleType], Path]:
    root = tmp_path_factory.mktemp("spellings-gpu")
    written = write_project(root)
    return written, {kind: _build(root, kind) for kind in ("bad", "good")}, root


def _gpu_line(root: Path, w: Written) -> int:
    """Where the GPU's debug build names ``w``'s bad access: where a pointer taken from the shared tile was taken
    (`&xs(0, 0)`, a checked pointer's fault names the line of its taking), else ``w.gpu_line``."""
    if w.spelling.finding != "tile_pitch":
        return w.gpu_line
    lines = (root / w.path).read_text(encoding="utf-8").splitlines()
    return next(n for n, text in enumerate(lines, start=1) if "&xs(" in text)


def _arrays(w: Written) -> tuple[list[Any], np.ndarray[Any, Any]]:
    """Fresh random inputs and the NaN-poisoned output of ``w``'s kernel, in its parameters' order; and the
    features (the first 96 columns of x) as float64."""
    import cupy

    rng = np.random.default_rng()
    x = rng.normal(size=(B, K, WIDTHS["x"])).astype(np.float32)
    arrays = [cupy.asarray(x)]
    if w.spelling.narrow:
        arrays.append(cupy.asarray(rng.normal(size=(B, K, WIDTHS["n"])).astype(np.float32)))
    arrays.append(cupy.full((B, K, WIDTHS["y"]), cupy.nan, cupy.float32))
    return arrays, x[..., :96].astype(np.float64)


def _one(written: dict[str, list[Written]], kind: str, spelling: str, form: str) -> Written:
    (w,) = [w for w in written[kind] if w.kernel == f"{spelling}_{form}"]
    return w


@pytest.mark.parametrize(("spelling", "form"), [(s.name, f) for s, f in kernels()])
def test_the_debug_build_stops_each_bad_kernel_at_its_line(
        built: tuple[dict[str, list[Written]], dict[str, ModuleType], Path], spelling: str, form: str) -> None:
    from layoutgen.runtime.debug import KernelFault, NonFiniteOutput

    written, modules, root = built
    w = _one(written, "bad", spelling, form)
    arrays, _ = _arrays(w)
    with pytest.raises((KernelFault, NonFiniteOutput)) as fault:
        getattr(modules["bad"], w.kernel)(*arrays)
    kind, code = GPU_FAULTS[w.spelling.finding]
    assert (type(fault.value).__name__, fault.value.code) == (kind, code), str(fault.value)
    site = None if w.spelling.finding == "unwritten" else f"{w.path}:{_gpu_line(root, w)}"
    assert (str(fault.value.diagnostic.site) if fault.value.diagnostic.site else None) == site, (
        w.spelling.bad_line, str(fault.value))


@pytest.mark.parametrize(("spelling", "form"), [(s.name, f) for s, f in kernels()])
def test_each_correct_twin_matches_numpy_in_the_debug_build(
        built: tuple[dict[str, list[Written]], dict[str, ModuleType], Path], spelling: str, form: str) -> None:
    written, modules, _ = built
    w = _one(written, "good", spelling, form)
    arrays, snap = _arrays(w)
    getattr(modules["good"], w.kernel)(*arrays)
    want = REFERENCES[w.spelling.reference](snap)
    got = arrays[-1].get()
    assert np.isfinite(got).all(), f"{w.kernel} left elements unwritten"
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())), err_msg=w.kernel)
