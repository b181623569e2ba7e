"""Cubins built ahead of time run on the GPU: `layoutgen build` for the device's arch, then a launch with
LAYOUTGEN_NO_JIT=1 (so nothing can compile) gives the float64 reference; a build for an arch that does not
run on the device falls back to NVRTC with the note, and still computes the same.

The project is the small `scale` spec of tests/test_aot.py, generated and built into a temporary folder.
Outputs are poisoned with NaN first, so an element nothing wrote shows.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from layoutgen.cli import main
from layoutgen.runtime import prebuilt
from layoutgen.runtime.prebuilt import PrebuiltFallback

from tests.helpers.aot import SCALE, SHIFT, SPEC, launcher

pytestmark = pytest.mark.gpu


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, archs: str) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec.py"]\n')
    (root / "spec.py").write_text(SPEC)
    (root / "scale.cu.j2").write_text(SCALE)
    (root / "shift.cu.j2").write_text(SHIFT)
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(prebuilt, "_NOTED", set())
    monkeypatch.chdir(root)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        assert main(["generate", "-q"]) == 0, out.getvalue()
        assert main(["build", "-q", "--arch", archs]) == 0, out.getvalue()
    return root


def _scale_on_the_gpu(root: Path) -> tuple[Any, Any]:
    import cupy

    rng = np.random.default_rng(7)
    window = rng.standard_normal((8, 4, 56)).astype(np.float32)
    y = cupy.full((8, 4, 40), cupy.nan, cupy.float32)
    launcher(root, "scale")(cupy.asarray(window), y)
    return cupy.asnumpy(y), 2.0 * window[:, :, :40].astype(np.float64)


def test_the_built_cubin_runs_with_jit_forbidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from layoutgen.runtime.driver import device_arch

    root = _project(tmp_path, monkeypatch, device_arch(0))
    monkeypatch.setenv("LAYOUTGEN_NO_JIT", "1")
    got, want = _scale_on_the_gpu(root)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_build_for_another_gpu_falls_back_to_nvrtc_with_the_note(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from layoutgen.runtime.driver import device_arch

    other = "sm_75" if device_arch(0) != "sm_75" else "sm_80"  # a cubin that does not run on this device
    root = _project(tmp_path, monkeypatch, other)
    monkeypatch.delenv("LAYOUTGEN_NO_JIT", raising=False)
    with pytest.warns(PrebuiltFallback, match=r"^note\[LG627\]: .* has no cubin that runs on "):
        got, want = _scale_on_the_gpu(root)
    np.testing.assert_allclose(got, want, rtol=1e-6)
