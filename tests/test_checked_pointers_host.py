"""A pointer taken from a view stays checked where the user stores it in a raw pointer type: run on the host.

The debug build writes the user's pointer types as lg::checked_ptr (layoutgen/codegen/checked_types.py), so that
`const float* base = &x.at(0, 0)`, a helper taking `const float*`, `reinterpret_cast<const float4*>` kept in a
`const float4*`, a C-style `(const float4*)` cast, `static_cast<const float*>` and `const_cast<float*>` still
carry the parameter's footprint. One kernel holds each spelling, chosen by a scalar, each reading `x` (96 columns of
rows 136 apart) as packed rows of 96 (tests/helpers/checked_spellings.py); it is compiled for the CPU against the shipped host runtime with the debug
build's fault functions replaced by ones that record the first fault, so what is asserted is the checked pointer's
own report (lg::out_of_footprint: the CPU run's LG650, the GPU's fault record), not AddressSanitizer's. Read at the
view's own row stride, the same spellings report nothing, and so do pointers no parameter's footprint covers (a
local array, nullptr).
"""

from __future__ import annotations

import ctypes
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers.checked_spellings import SPELLINGS, probe_spec
from tests.helpers.host import RECORDED_FAULTS, build_shared, needs_compiler
from tests.helpers.rendering import render

pytestmark = needs_compiler


def _kernel(tmp: Path, stride: int) -> Any:
    """The probe kernel built for the host at packed stride ``stride``: ``fn(x, y, which, B, K, threads, out)``."""
    files = render(probe_spec(tmp, stride), tmp, debug=True).files
    for path, text in files.items():
        (tmp / Path(path).name).write_text(text, encoding="utf-8")
    source = tmp / "probe_host.cpp"
    source.write_text(
        RECORDED_FAULTS + '#include "probe.cu"\n'
        'extern "C" long long host_launch(const float* x, float* y, int which, long long b, long long k, '
        "long long* out) {\n"
        "    lg::lg_test_hits = 0;\n"
        "    blockDim.x = 32;\n"
        "    for (long long t = 0; t < b * k; ++t) {\n"
        "        blockIdx.x = static_cast<unsigned>(t / 32);\n"
        "        threadIdx.x = static_cast<unsigned>(t % 32);\n"
        "        probe(x, y, which, b, k);\n"
        "    }\n"
        "    for (int n = 0; n < 7; ++n) out[n] = lg::lg_test_hit[n];\n"
        "    return lg::lg_test_hits;\n"
        "}\n", encoding="utf-8")
    return build_shared(source, tmp / "probe.so", "c++17", (tmp,), "-O1")


def _run(fn: Any, which: int, rows: tuple[int, int] = (2, 3)) -> tuple[int, list[int], np.ndarray[Any, Any],
                                                                     np.ndarray[Any, Any]]:
    """The number of faults of one launch over ``rows`` (B, K), the first one's words, and ``x``, ``y``."""
    x = np.random.default_rng(which).standard_normal((*rows, 136)).astype(np.float32)
    y = np.full((*rows, 96), np.nan, dtype=np.float32)
    out = (ctypes.c_longlong * 7)()
    hits = fn(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data), ctypes.c_int(which),
              ctypes.c_longlong(rows[0]), ctypes.c_longlong(rows[1]), out)
    return int(hits), list(out), x, y


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _kernel(tmp_path_factory.mktemp("checked_pointers_packed"), 96)


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_a_pointer_stored_in_a_raw_pointer_type_is_still_checked(packed: Any, spelling: str) -> None:
    hits, (param, row, col, field_row, width, access, _), _, _ = _run(packed, list(SPELLINGS).index(spelling))
    # Row 1 of the kernel reads element 96 (float4: elements 96..99) of the field's first row: array row 0,
    # column 96, the first column past the field's 96 (the checked pointer's report, a read of `x`).
    assert hits >= 1, spelling
    assert (param, row, col, field_row, width, access) == (0, 0, 96, 0, 96, 0), spelling


def test_the_same_spellings_at_the_views_row_stride_report_nothing(tmp_path: Path) -> None:
    fn = _kernel(tmp_path, 136)
    for n, spelling in enumerate(SPELLINGS):
        hits, _, x, y = _run(fn, n)
        assert hits == 0, spelling
        assert np.array_equal(y[..., 0], x[..., 0]) and not y[..., 1:].any(), spelling  # each row's first column


def test_the_pointer_types_of_the_probe_are_checked_pointers(tmp_path: Path) -> None:
    _kernel(tmp_path, 96)
    text = (tmp_path / "probe.cu").read_text(encoding="utf-8")
    assert "__device__ void read_first(lg::checked_ptr<const float> from, lg::checked_ptr<float> to, long long at)" \
        in text
    assert len(re.findall(r"lg::checked_ptr<", text)) == 16, text  # 7 spellings, the helper's 2, 7 in the uncovered lines
