"""Scalars on the GPU: every dtype arrives exactly as given, through both launch paths, and a captured graph
runs with the values it was captured with and refuses others without running.

`echo` (tests/specs/scalars) writes each scalar into an output array: the
floats as f64, the signed integers as i64, the unsigned ones as u64, the bool
as a u8. Outputs are poisoned first, so an element nothing wrote shows.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from layoutgen.codegen.render import render_spec
from layoutgen.project.specload import load_spec
from layoutgen.runtime.errors import LaunchError
from layoutgen.schema.scalars import SCALAR_DTYPES

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]
SPEC = "tests/specs/scalars/spec.py"
POISON = 0x5A5A_5A5A_5A5A_5A5A


def _module(tmp: Path, name: str) -> ModuleType:
    loaded = load_spec(REPO / SPEC)
    assert loaded.spec is not None, [str(d) for d in loaded.diagnostics]
    rendered = render_spec(loaded.spec, REPO, SPEC, cache_dir=str(tmp / "cache"))
    assert rendered.diagnostics == (), [str(d) for d in rendered.diagnostics]
    for path, text in rendered.files.items():
        (tmp / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp / path).write_text(text, encoding="utf-8")
    module_spec = importlib.util.spec_from_file_location(name, tmp / "scalars" / "__init__.py")
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


def _outputs() -> dict[str, Any]:
    import cupy

    return {"floats": cupy.full(2, cupy.nan, cupy.float64), "ints": cupy.full(4, POISON, cupy.int64),
            "uints": cupy.full(4, POISON, cupy.uint64), "flags": cupy.full(1, 0x5A, cupy.uint8)}


def _edges() -> dict[str, Any]:
    return {"x_f32": float(np.finfo(np.float32).max), "x_f64": -float(np.finfo(np.float64).tiny), "x_i8": -128,
            "x_i16": 2**15 - 1, "x_i32": -(2**31), "x_i64": 2**63 - 1, "x_u8": 255, "x_u16": 2**16 - 1,
            "x_u32": 2**32 - 1, "x_u64": 2**64 - 1, "x_bool": True}


def _random(rng: np.random.Generator) -> dict[str, Any]:
    values: dict[str, Any] = {"x_f32": float(rng.normal()), "x_f64": float(rng.normal() * 1e300)}
    for name in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
        info = np.iinfo(str(SCALAR_DTYPES[name].numpy_name))
        values[f"x_{name}"] = int(rng.integers(int(info.min), int(info.max), endpoint=True, dtype=info.dtype))
    values["x_bool"] = bool(rng.integers(2))
    return values


def _expected(values: dict[str, Any]) -> dict[str, list[Any]]:
    return {
        "floats": [float(np.float32(values["x_f32"])), values["x_f64"]],
        "ints": [values[f"x_i{b}"] for b in (8, 16, 32, 64)],
        "uints": [values[f"x_u{b}"] for b in (8, 16, 32, 64)],
        "flags": [int(values["x_bool"])],
    }


def _host(outputs: dict[str, Any]) -> dict[str, list[Any]]:
    return {name: [x.item() for x in a.get()] for name, a in outputs.items()}


@pytest.mark.parametrize("path", ["cuda.bindings", "cupy"])
def test_every_scalar_arrives_exactly_as_given(path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import cupy

    if path == "cupy":
        monkeypatch.setenv("LAYOUTGEN_LAUNCH", "cupy")
    else:
        pytest.importorskip("cuda.bindings")
        monkeypatch.delenv("LAYOUTGEN_LAUNCH", raising=False)
    module = _module(tmp_path, f"gpu_scalars_{path.replace('.', '_')}")
    for values in (_edges(), _random(np.random.default_rng()), {**_edges(), "x_bool": False, "x_f32": -0.0}):
        outputs = _outputs()
        module.echo(**outputs, **values)
        cupy.cuda.get_current_stream().synchronize()
        assert _host(outputs) == _expected(values), values


def test_numpy_scalars_arrive_as_their_python_values(tmp_path: Path) -> None:
    import cupy

    module = _module(tmp_path, "gpu_scalars_numpy")
    values: dict[str, Any] = {"x_f32": np.float32(0.1), "x_f64": np.float64(-3.25), "x_i8": np.int8(-5), "x_i16": np.int64(300),
              "x_i32": np.uint16(65535), "x_i64": np.int32(-(2**31)), "x_u8": np.uint8(200), "x_u16": np.int8(7),
              "x_u32": np.uint64(2**32 - 1), "x_u64": np.uint64(2**64 - 1), "x_bool": np.bool_(True)}
    outputs = _outputs()
    module.echo(**outputs, **values)
    cupy.cuda.get_current_stream().synchronize()
    assert _host(outputs) == _expected({k: v.item() for k, v in values.items()})


def test_a_program_run_takes_its_values_and_its_constants(tmp_path: Path) -> None:
    import cupy

    module = _module(tmp_path, "gpu_scalars_program")
    outputs = _outputs()
    module.echo_step(**outputs, rate=0.375, seed=2**64 - 2)
    cupy.cuda.get_current_stream().synchronize()
    assert _host(outputs) == {"floats": [0.375, -0.5], "ints": [-128, 32767, -7, 2**40],
                              "uints": [255, 0, 2**32 - 1, 2**64 - 2], "flags": [1]}


def test_a_graph_runs_with_its_captured_values_and_refuses_others_without_running(tmp_path: Path) -> None:
    import cupy

    module = _module(tmp_path, "gpu_scalars_graph")
    seed = int(np.random.default_rng().integers(0, 2**63))
    outputs = _outputs()
    graph = module.capture_echo_step(**outputs, rate=0.75, seed=seed)
    assert graph.values == {"rate": 0.75, "seed": seed}
    cupy.cuda.get_current_stream().synchronize()
    assert np.isnan(outputs["floats"].get()).all()  # captured, not run
    graph.replay()
    cupy.cuda.get_current_stream().synchronize()
    want = {"floats": [0.75, -0.5], "ints": [-128, 32767, -7, 2**40], "uints": [255, 0, 2**32 - 1, seed],
            "flags": [1]}
    assert _host(outputs) == want
    for a in outputs.values():  # poisoned again: a refused replay must leave them so
        a.fill(0x5A)
    poisoned = _host(outputs)
    with pytest.raises(LaunchError) as info:
        graph.replay(rate=0.5)
    assert info.value.code == "LG623"
    cupy.cuda.get_current_stream().synchronize()
    assert _host(outputs) == poisoned
    graph.replay(rate=np.float32(0.75), seed=seed)  # the captured values, repeated: it runs
    cupy.cuda.get_current_stream().synchronize()
    assert _host(outputs) == want
