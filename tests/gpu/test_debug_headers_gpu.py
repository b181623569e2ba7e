"""On the GPU, a `__device__` helper of a project header is checked in the debug build as the kernel's own code is.

The kernel `rowsum` (tests/helpers/debug_headers.py) passes `&x.at(row, 0)` to `row_sum(const float* p, int n)` of
the project header `row_help.cuh`. The debug build carries the header rewritten (`lg::checked_ptr<const float> p`,
layoutgen/codegen/debug_headers.py) and its module searches that copy first, so with `n` past the field's 96 columns
the kernel stops at its first read outside the footprint with LG611, at the line where the pointer was taken
from the view, as for a helper in the template (before, NVRTC read the
header from disk and the pointer arrived raw: the kernel ran to the end). With `n` = 96 it runs to the end and
matches float64 numpy on fresh random data, its output poisoned with NaN first. The host tests:
tests/test_debug_headers.py.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.helpers.debug_headers import CALL_LINE, header_folder, rowsum_spec

pytestmark = pytest.mark.gpu
B, K = 3, 61  # 183 rows: a short last block
MESSAGE = ("`rowsum` read `x` (Window.snap) at row <N>, column <N>, outside the field's columns 0..96 (rows 136 "
           "elements apart), in block <N>, thread <N>")


@pytest.fixture(scope="module")
def debug_build(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    from layoutgen.codegen.render import render_spec

    tmp = tmp_path_factory.mktemp("debug_headers_gpu")
    folder = header_folder(tmp)
    rendered = render_spec(rowsum_spec(tmp), tmp, "spec.py", debug=True, cache_dir=str(tmp / "cache"),
                           include=("../include",), headers=(folder,))
    assert not rendered.diagnostics, rendered.diagnostics
    out = tmp / "out"
    for path, text in rendered.files.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text(text, encoding="utf-8")
    # The module names `../include` relative to its folder, out/rowsum: the project's folder, after the copy.
    (out / "include").symlink_to(folder, target_is_directory=True)
    found = importlib.util.spec_from_file_location("debug_headers_rowsum", out / "rowsum" / "__init__.py")
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def _arrays() -> tuple[object, object, np.ndarray[object, np.dtype[np.float32]]]:
    import cupy

    x = np.random.default_rng().normal(size=(B, K, 136)).astype(np.float32)
    return cupy.asarray(x), cupy.full((B, K, 96), cupy.nan, cupy.float32), x


def test_a_helpers_read_past_the_field_stops_the_kernel(debug_build: ModuleType) -> None:
    from layoutgen.runtime.debug import KernelFault

    x, y, _ = _arrays()
    with pytest.raises(KernelFault) as fault:
        debug_build.rowsum(x, y, 100)  # type: ignore[attr-defined]
    assert fault.value.code == "LG611"
    assert str(fault.value.diagnostic.site) == f"k.cu.j2:{CALL_LINE}"  # where the pointer was taken from `x`
    assert re.fullmatch(re.escape(MESSAGE).replace("<N>", r"\d+"), fault.value.diagnostic.message), str(fault.value)


def test_the_helper_inside_the_field_matches_numpy(debug_build: ModuleType) -> None:
    import cupy

    x, y, host = _arrays()
    debug_build.rowsum(x, y, 96)  # type: ignore[attr-defined]
    cupy.cuda.Device().synchronize()
    got = cupy.asnumpy(y).astype(np.float64)
    want = host[..., :96].astype(np.float64).sum(axis=-1)
    assert np.allclose(got[..., 0], want, rtol=1e-5, atol=1e-4)
    assert not np.isnan(got).any() and not got[..., 1:].any()
