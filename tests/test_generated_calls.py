"""Calls of generated launchers that leave an argument out: the message names the one left out.

A scalar declared between arrays (``step(w, lr, g)``) left out of a call shifts the next array into its
place: the error names the scalar (LG601), not the array Python would find missing.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from layoutgen import In, InOut, Kernel, Layout, LayoutgenError, Scalar, Spec, dims
from layoutgen.codegen.render import render_spec
from tests.helpers.rendering import load

(F,) = dims("F")
VEC = Layout("Vec", [F], "f32", width=1)


def module(tmp_path: Path, params: list[object], name: str) -> ModuleType:
    (tmp_path / "k.cu.j2").write_text("// nothing\n")
    kernel = Kernel("step", "k.cu.j2", params, template_root=tmp_path)  # type: ignore[arg-type]
    arrays = {p.name: VEC for p in kernel.params}
    rendered = render_spec(Spec(name, kernels=[kernel.bind(**arrays)]), tmp_path, "spec.py")
    assert rendered.diagnostics == ()
    return load(rendered.files[f"{name}/__init__.py"], tmp_path, name)


ARRAY = np.zeros((4, 1), np.float32)  # never launched: the call is refused before any array is read


def refused(call: object, *args: object, **kwargs: object) -> LayoutgenError:
    with pytest.raises(LayoutgenError) as info:
        call(*args, **kwargs)  # type: ignore[operator]
    return info.value


def test_a_scalar_left_out_between_arrays_is_named(tmp_path: Path) -> None:
    mod = module(tmp_path, [InOut("w", [F, 1]), Scalar("lr", "f32"), In("g", [F, 1])], "between")
    err = refused(mod.step, ARRAY, ARRAY)
    assert (err.code, err.diagnostic.message, err.hint) == (
        "LG601", "`step` was called without scalar f32 `lr`: it takes (w, lr, g); the call gave `lr` an array and "
        "nothing to `g`", "give every argument, in order or by name: step(w, lr, g)")
    err = refused(mod.step, ARRAY, 0.5)  # the array after the scalar left out
    assert (err.code, err.diagnostic.message) == ("LG601", "`step` was called without `g`: it takes (w, lr, g)")
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'lr'"):
        mod.step(w=ARRAY, g=ARRAY)  # by name, Python names it


def test_two_scalars_and_the_signature_python_shows(tmp_path: Path) -> None:
    import inspect

    mod = module(tmp_path, [InOut("w", [F, 1]), Scalar("lr", "f32"), In("g", [F, 1]), Scalar("n", "i32"),
                            In("h", [F, 1])], "two")
    err = refused(mod.step, ARRAY, ARRAY, 3, ARRAY)
    assert err.diagnostic.message == ("`step` was called without scalar f32 `lr`: it takes (w, lr, g, n, h); the "
                                      "call gave `lr` an array and nothing to `h`")
    err = refused(mod.step, ARRAY, 0.5, ARRAY, ARRAY)
    assert err.diagnostic.message == ("`step` was called without scalar i32 `n`: it takes (w, lr, g, n, h); the call "
                                      "gave `n` an array and nothing to `h`")
    assert list(inspect.signature(mod.step).parameters) == ["w", "lr", "g", "n", "h", "stream"]


def test_a_kernel_of_arrays_then_scalars_keeps_python_s_own_message(tmp_path: Path) -> None:
    mod = module(tmp_path, [InOut("w", [F, 1]), In("g", [F, 1]), Scalar("lr", "f32")], "after")
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'lr'"):
        mod.step(ARRAY, ARRAY)
    source = (tmp_path / "after" / "__init__.py").read_text()
    assert "_lg_MISSING" not in source  # nothing shifts: no marker, the signature as declared
    ast.parse(source)
