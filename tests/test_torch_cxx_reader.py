"""The C++ torch reader (runtime/_torch_cxx_reader.cpp), against torch's own exchange API and Python calls.

The compiled launch path reads ``torch.Tensor`` and ``torch.nn.Parameter`` objects through it where it
builds; every launch-validation test of torch tensors runs with it and without it
(``tests/helpers/compiled.py``'s ``cpu_is_cuda``). Here: it reads any tensor as the exchange API does,
its calls answer as torch's do, and where it cannot be built the compiled path says why and reads as before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.compiled import EXT  # the test build of the extension, installed on import

from layoutgen.runtime import torch_cxx_reader
from layoutgen.runtime.fastpath import use_torch
from layoutgen.runtime.paths import CACHE_DIR_ENV, PYTHON_LAUNCH_ENV, TORCH_READER_ENV

torch = pytest.importorskip("torch")
if EXT is None:
    pytest.skip("the compiled launch path is not built here", allow_module_level=True)

# every dtype DLPack has a code for, and two it has none for (both reads refuse those)
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
          torch.int32, torch.int64, torch.bool, torch.complex64, torch.complex128, torch.uint16, torch.uint32,
          torch.uint64, torch.float8_e4m3fn, torch.qint8]
VIEWS = ["permute", "slice", "narrow", "expand", "unsqueeze", "neg", "conj", "flip-strides"]


@pytest.fixture(scope="module")
def table() -> tuple[int, bool]:
    use_torch()
    address, calls = torch_cxx_reader.installed()
    assert address is not None and calls, torch_cxx_reader.state()
    return address, calls


def reads(t: Any) -> tuple[Any, Any]:
    """``EXT.read(t)`` through the reader (installed by the ``table`` fixture), then through the exchange API
    (and ``is_neg()``)."""
    with_reader = EXT.read(t)
    with torch_cxx_reader.turned_off(EXT):
        through_torch = EXT.read(t)
    return with_reader, through_torch


@st.composite
def tensors(draw: st.DrawFn) -> Any:
    """A tensor of any dtype and up to 4 dims, then up to 3 views of it (strided, offset, broadcast, negated,
    conjugated)."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(0, 4), max_size=4))
    if dtype == torch.qint8:
        t = torch.quantize_per_tensor(torch.ones(shape), 0.1, 0, dtype)
    else:
        t = torch.ones(shape, dtype=dtype)
    if dtype.is_floating_point and draw(st.booleans()):  # a leaf that requires grad; its views do too
        t.requires_grad_()
    for view in draw(st.lists(st.sampled_from(VIEWS), max_size=3)):
        if view == "permute" and t.dim() > 1:
            t = t.permute(*draw(st.permutations(range(t.dim()))))
        elif view == "slice" and t.dim() and t.shape[0] > 1:
            t = t[1::draw(st.integers(1, 2))]
        elif view == "narrow" and t.dim() and t.shape[-1] > 1:
            t = t.narrow(-1, 1, t.shape[-1] - 1)
        elif view == "expand":
            t = t.unsqueeze(0).expand(3, *t.shape)
        elif view == "unsqueeze":
            t = t.unsqueeze(draw(st.integers(0, t.dim())))
        elif view == "neg" and not t.is_complex() and dtype not in (torch.bool, torch.qint8) and not t.requires_grad:
            t = torch._neg_view(t)
        elif view == "conj" and t.is_complex():
            t = t.conj()
        elif view == "flip-strides" and t.dim() > 1:
            t = t.transpose(0, -1)
    return t


@settings(max_examples=300, deadline=None)
@given(tensors())
def test_the_reader_reads_every_tensor_as_torchs_exchange_api_and_is_neg_do(table: tuple[int, bool], t: Any) -> None:
    with_reader, through_torch = reads(t)
    if through_torch is None:  # refused (a neg or conj view, a dtype without a DLPack code): refused alike
        assert with_reader is None
        return
    assert with_reader[:6] == through_torch[:6]
    assert with_reader[6] is t.requires_grad and through_torch[6] is None  # read here only with the reader
    if not t.is_neg() and not t.is_conj():  # read at all, and as the tensor says
        assert with_reader[1:4] == (t.data_ptr(), tuple(t.shape), t.stride())


def test_a_parameter_is_read_as_a_tensor_is(table: tuple[int, bool]) -> None:
    p = torch.nn.Parameter(torch.ones(3, 4).t())
    with_reader, through_torch = reads(p)
    assert with_reader[:6] == through_torch[:6] and with_reader[2:4] == ((4, 3), (1, 4)) and with_reader[6] is True


def test_its_bump_and_function_modes_answer_as_torchs_calls(table: tuple[int, bool]) -> None:
    assert torch_cxx_reader._calls_disagreement(torch, table[0]) == ""


def test_it_is_built_once_into_the_cache_and_found_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        table: tuple[int, bool]) -> None:
    library = torch_cxx_reader._build(torch)
    assert library.parent == torch_cxx_reader.cache_dir() / "torch-reader" and library.suffix == ".so"
    assert torch_cxx_reader._build(torch) == library and oct(library.parent.stat().st_mode & 0o777) == "0o700"


def test_without_a_compiler_tensors_are_read_through_the_exchange_api_and_the_reason_is_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "no-compiler"
    monkeypatch.setenv("CXX", str(missing))
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    address, calls, said = torch_cxx_reader._load(EXT, torch)
    assert (address, calls) == (None, False)
    assert said == (f"torch tensors read through DLPack's exchange API (the C++ reader: no C++ compiler "
                    f"(`{missing}` not found; set CXX))")


def test_a_failed_build_leaves_nothing_in_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failing = tmp_path / "failing-c++"
    failing.write_text("#!/bin/sh\necho 'error: no such header' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setenv("CXX", str(failing))
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    address, _, said = torch_cxx_reader._load(EXT, torch)
    assert address is None
    assert said == (f"torch tensors read through DLPack's exchange API (the C++ reader: `{failing}` failed: "
                    f"error: no such header)")
    assert [p.name for p in (tmp_path / "cache" / "torch-reader").iterdir() if not p.name.endswith(".lock")] == []


def test_turned_off_by_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TORCH_READER_ENV, "0")
    assert torch_cxx_reader._load(EXT, torch) == (
        None, False, "torch tensors read through DLPack's exchange API (LAYOUTGEN_TORCH_READER=0)")


def test_python_m_layoutgen_runtime_says_how_torch_tensors_are_read(table: tuple[int, bool]) -> None:
    import subprocess
    import sys

    shown = subprocess.run([sys.executable, "-m", "layoutgen.runtime"], capture_output=True, text=True, check=True,
                           env={**os.environ, PYTHON_LAUNCH_ENV: "0",
                                "PYTHONPATH": str(Path(__file__).resolve().parents[1])}).stdout
    lines = shown.splitlines()
    assert lines[0].startswith("launch path: compiled (") and lines[1].startswith("torch tensors read in C++ (")
