"""The generated QKV kernels, compiled for the host, against the float64 references.

The GPU tests (tests/gpu/test_qkv_gpu.py) run them on an H200; here the very
same generated sources are compiled with the host C++ compiler, CUDA's
built-ins from the shipped lg/host/runtime.h (one function call per thread), so
that every index the accessors compute (q(b, s, h, d) with D bound at launch,
the k/v offsets 32*D and 40*D, the cache rows) is checked on a machine
without a GPU. Outputs are poisoned first; inputs are fresh random data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from examples.qkv import reference as ref
from layoutgen.codegen.library import library_namespace
from tests.helpers.host import REPO, host_kernel, host_launch, needs_compiler

GENERATED = REPO / "generated" / "qkv"
pytestmark = needs_compiler

# name -> (the generated kernel, its C++ parameter list, the arguments passed on).
SIGNATURES = {
    "rope": ("rope", "float* q, float* k, const int* pos, long long B, long long S, long long D", "q, k, pos, B, S, D"),
    "rope_padded": ("rope", "float* q, float* k, const int* pos, long long B, long long S", "q, k, pos, B, S"),
    "kv_split": ("kv_split", "const float* k, const float* v, float* kc, float* vc, long long B, long long S, long long D",
                 "k, v, kc, vc, B, S, D"),
}


def qkv_kernel(kernel: str, tmp: Path, folder: Path = GENERATED) -> Any:
    """A QKV kernel of ``folder`` (the committed generated/qkv by default) built for the host."""
    return host_kernel(kernel, tmp, folder, SIGNATURES[kernel])


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


def general_threads(elements: int, per_block: int, block: int = 256) -> int:
    """The threads of ``Grid.general(blocks=ceil_div([...], per_block), block=block)`` over ``elements``."""
    return -(-elements // per_block) * block


# d = 16 and 128: each half of a head is whole 16-byte groups (4 pairs a thread, one load and store a half);
# d = 6 and 10: it is not (3 and 5 pairs), and each thread rotates its 4 pairs one by one, across heads.
@pytest.mark.parametrize(("b", "s", "d"), [(2, 5, 16), (1, 3, 128), (2, 3, 6), (1, 5, 10)])
def test_rope_rotates_q_and_k_and_leaves_v(tmp_path: Path, rng: np.random.Generator, b: int, s: int, d: int) -> None:
    qkv = rng.normal(size=(b, s, (ref.H + 2 * ref.HKV) * d)).astype(np.float32)
    pos = rng.integers(0, 4096, size=(b, s, 1)).astype(np.int32)
    before = qkv.copy()
    # q and k are two views of the same buffer: the launcher passes the array twice.
    # Grid.general(blocks=ceil_div([B, S, Hq, D], 8 * 256)): a thread per 4 pairs of a query head
    host_launch(qkv_kernel("rope", tmp_path), [qkv, qkv, pos], [b, s, d],
                threads=general_threads(b * s * ref.H * d, 8 * 256), block=256)
    want = ref.rope(before, pos[..., 0], d)
    assert ref.relative_error(qkv, want) < 2e-4
    _, _, v = ref.split(qkv, d)
    assert np.array_equal(v, ref.split(before, d)[2]), "rope wrote into v"


# d = 16 and 128: 16-byte groups on both sides; d = 6 and 3: a thread's 4 elements one by one, across rows.
@pytest.mark.parametrize(("b", "s", "d"), [(2, 7, 16), (1, 2, 128), (2, 3, 6), (1, 7, 3)])
def test_kv_split_fills_the_caches(tmp_path: Path, rng: np.random.Generator, b: int, s: int, d: int) -> None:
    qkv = rng.normal(size=(b, s, (ref.H + 2 * ref.HKV) * d)).astype(np.float32)
    kc = np.full((b, ref.HKV, s, d), np.nan, dtype=np.float32)
    vc = np.full((b, ref.HKV, s, d), np.nan, dtype=np.float32)
    # Grid.general(blocks=ceil_div([B, Hkv, S, D], 4 * 256)): a thread per 4 elements of a cache
    host_launch(qkv_kernel("kv_split", tmp_path), [qkv, qkv, kc, vc], [b, s, d],
                threads=general_threads(b * ref.HKV * s * d, 4 * 256), block=256)
    want_k, want_v = ref.kv_split(qkv, d)
    assert not np.isnan(kc).any() and not np.isnan(vc).any(), "an element of a cache was not written"
    assert np.array_equal(kc, want_k) and np.array_equal(vc, want_v)


def test_kv_split_into_caches_off_16_bytes_moves_elements_one_by_one(tmp_path: Path, rng: np.random.Generator) -> None:
    """Caches 4 bytes past a 16-byte boundary: lg::aligned refuses the 16-byte path, and every element still lands."""
    b, s, d = 2, 5, 16
    qkv = rng.normal(size=(b, s, (ref.H + 2 * ref.HKV) * d)).astype(np.float32)
    n = b * ref.HKV * s * d
    flat = np.full((2, n + 4), np.nan, dtype=np.float32)  # rows of n + 4 floats: each 16-byte aligned (numpy's 64)
    kc, vc = flat[0, 1:n + 1].reshape(b, ref.HKV, s, d), flat[1, 1:n + 1].reshape(b, ref.HKV, s, d)
    host_launch(qkv_kernel("kv_split", tmp_path), [qkv, qkv, kc, vc], [b, s, d],
                threads=general_threads(b * ref.HKV * s * d, 4 * 256), block=256)
    want_k, want_v = ref.kv_split(qkv, d)
    assert np.array_equal(kc, want_k) and np.array_equal(vc, want_v)
    assert np.isnan(flat[:, 0]).all() and np.isnan(flat[:, n + 1:]).all(), "kv_split wrote outside the caches"


def test_reference_rotation_is_a_rotation_of_each_pair(rng: np.random.Generator) -> None:
    """The reference against a direct 2x2 rotation of one pair, and norms kept."""
    x = rng.normal(size=(1, 1, 1, 8))
    pos = np.array([[7]])
    got = ref.rotate(x, pos)
    i, theta = 2, 7 * 10000.0 ** (-2 * 2 / 8)
    c, s_ = np.cos(theta), np.sin(theta)
    assert np.allclose(got[0, 0, 0, [i, i + 4]], [c * x[0, 0, 0, i] - s_ * x[0, 0, 0, i + 4],
                                                  s_ * x[0, 0, 0, i] + c * x[0, 0, 0, i + 4]])
    assert np.allclose(np.linalg.norm(got), np.linalg.norm(x))


def test_reference_split_matches_the_layout_views(rng: np.random.Generator) -> None:
    from examples.qkv.spec import QKV

    qkv = rng.normal(size=(2, 3, 48 * 16)).astype(np.float32)
    for view, part in zip((QKV.q, QKV.k, QKV.v), ref.split(qkv, 16)):
        got = view.of(qkv)
        assert got.shape == part.shape and np.shares_memory(got, qkv) and np.array_equal(got, part)


def test_rope_on_padded_heads_through_a_named_axis(tmp_path: Path, rng: np.random.Generator) -> None:
    """The same template bound to `QKVPadded.q.head` (axis 2 names the heads, rows padded to 136).

    Without `contiguous=True` the binding is legal (qkv_bug.py shows the packed
    contract refused): the accessors take heads from the named axis, rows 48
    apart, and skip each head's 8 padding elements, which stay poisoned.
    """
    from examples.qkv.spec import Positions, rope
    from layoutgen import Axis, Field, Layout, Pad, dims, f32
    from layoutgen.codegen.render import render_spec
    from layoutgen.declare.spec import Spec

    B, S = dims("B S")
    QKVPadded = Layout("QKVPadded", [B, S, Axis([Field("q", 32), Field("k", 8), Field("v", 8)])], f32,
                       [Field("head", 128), Pad(8)])  # as in examples/qkv/qkv_bug.py

    spec = Spec("padded", kernels=[rope.bind(q=QKVPadded.q.head, k=QKVPadded.k.head, pos=Positions)])
    rendered = render_spec(spec, REPO, "tests/test_qkv_host.py")
    assert rendered.diagnostics == ()
    for name, text in rendered.files.items():
        (tmp_path / Path(name).name).write_text(text, encoding="utf-8")
    header = rendered.files["padded/padded.cuh"]
    lib = f"lg::{library_namespace()}"  # the device library's versioned namespace (lg/version.cuh)
    assert (f"{lib}::Field<QKVPadded_q_head_view_rows, T, 128, 136, 0, VectorBytes, Pack, long long, {lib}::Unscaled, "
            f"{lib}::AxisRows<0, 32, 48, 1>>") in header
    assert f"{lib}::AxisRows<32, 8, 48, 1>" in header
    b, s, d = 2, 3, 128
    padded = rng.normal(size=(b, s, 48, 136)).astype(np.float32)
    padded[..., 128:] = np.nan
    pos = rng.integers(0, 512, size=(b, s, 1)).astype(np.int32)
    before = padded.copy()
    fn = qkv_kernel("rope_padded", tmp_path, folder=tmp_path)
    host_launch(fn, [padded, padded, pos], [b, s], threads=general_threads(b * s * 32 * d, 8 * 256), block=256)
    packed = before[..., :128].reshape(b, s, 48 * d)
    want = ref.rope(packed, pos[..., 0], d).reshape(b, s, 48, d)
    assert ref.relative_error(padded[..., :128], want) < 2e-4
    assert np.isnan(padded[..., 128:]).all(), "rope wrote into the padding"
    assert np.array_equal(QKVPadded.v.head.of(padded), QKVPadded.v.head.of(before))
