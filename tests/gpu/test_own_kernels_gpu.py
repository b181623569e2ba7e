"""The hand-written VSN forward (examples/own_kernel) on a GPU, against the float64 reference."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from examples.vsn.reference import vsn_forward

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")


def test_the_hand_written_forward_matches_the_reference() -> None:
    if cp.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("no GPU")
    own = importlib.import_module("generated.own_kernel")
    rng = np.random.default_rng(19)
    b_, k_ = 37, 65  # a partial last block
    window = rng.standard_normal((b_, k_, 56)).astype(np.float32)
    w = (rng.standard_normal((40, 40)) * 0.2).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    gates = cp.full((b_, k_, 40), np.nan, np.float32)  # poisoned: an unwritten element shows
    y = cp.full((b_, k_, 40), np.nan, np.float32)
    own.vsn_forward_cu(cp.asarray(window), cp.asarray(w), cp.asarray(b), gates, y)
    want_gates, want_y = vsn_forward(window[..., :40], w, b)
    np.testing.assert_allclose(cp.asnumpy(gates), want_gates, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cp.asnumpy(y), want_y, rtol=1e-5, atol=1e-6)
