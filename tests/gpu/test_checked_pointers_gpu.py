"""On the GPU, a pointer taken from a view and stored in a raw pointer type stays checked in the debug build.

The probe kernel of tests/helpers/checked_spellings.py holds each spelling (a `const float*` local, a helper taking
`const float*`, `reinterpret_cast<const float4*>` kept in a `const float4*`, `(const float4*)`, `static_cast`,
`const_cast`, a `for` head), which the debug build writes as lg::checked_ptr (layoutgen/codegen/checked_types.py).
Reading `x` (96 columns of rows 136 apart) as packed rows of 96, each stops the kernel at its first access outside
the footprint with LG611 in the CPU run's LG650 words, at the line where the pointer was taken (before, each ran to
the end on the GPU and only the CPU run saw it). Reading at the view's row stride, each runs to the end and matches
float64 numpy on fresh random data, its output poisoned with NaN first. The host test: tests/test_checked_pointers_host.py.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.helpers.checked_spellings import FIRST_LINE, SPELLINGS, probe_spec

pytestmark = pytest.mark.gpu
B, K = 3, 61  # 183 rows: a short last block
MESSAGE = ("`probe` read `x` (Window.snap) at row <N>, column <N>, outside the field's columns 0..96 (rows 136 "
           "elements apart), in block <N>, thread <N>")


def _debug_build(tmp: Path, stride: int) -> ModuleType:
    from layoutgen.codegen.render import render_spec

    rendered = render_spec(probe_spec(tmp, stride), tmp, "spec.py", debug=True)
    assert not rendered.diagnostics, rendered.diagnostics
    for path, text in rendered.files.items():
        (tmp / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp / path).write_text(text, encoding="utf-8")
    found = importlib.util.spec_from_file_location(f"checked_probe_{stride}", tmp / "probe" / "__init__.py")
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return _debug_build(tmp_path_factory.mktemp("checked_gpu_packed"), 96)


@pytest.fixture(scope="module")
def strided(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return _debug_build(tmp_path_factory.mktemp("checked_gpu_strided"), 136)


def _arrays() -> tuple[object, object, np.ndarray[object, np.dtype[np.float32]]]:
    import cupy

    x = np.random.default_rng().normal(size=(B, K, 136)).astype(np.float32)
    return cupy.asarray(x), cupy.full((B, K, 96), cupy.nan, cupy.float32), x


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_a_pointer_stored_in_a_raw_pointer_type_stops_the_kernel(packed: ModuleType, spelling: str) -> None:
    from layoutgen.runtime.debug import KernelFault

    x, y, _ = _arrays()
    with pytest.raises(KernelFault) as fault:
        packed.probe(x, y, list(SPELLINGS).index(spelling))  # type: ignore[attr-defined]
    assert fault.value.code == "LG611"
    assert str(fault.value.diagnostic.site) == f"k.cu.j2:{FIRST_LINE + list(SPELLINGS).index(spelling)}"
    assert re.fullmatch(re.escape(MESSAGE).replace("<N>", r"\d+"), fault.value.diagnostic.message), str(fault.value)


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_the_same_spelling_at_the_views_row_stride_matches_numpy(strided: ModuleType, spelling: str) -> None:
    import cupy

    x, y, host = _arrays()
    strided.probe(x, y, list(SPELLINGS).index(spelling))  # type: ignore[attr-defined]
    cupy.cuda.Device().synchronize()
    got = cupy.asnumpy(y).astype(np.float64)
    assert np.array_equal(got[..., 0], host[..., 0].astype(np.float64)), spelling  # each row's first column
    assert not np.isnan(got).any() and not got[..., 1:].any(), spelling
