"""GPU tests: run on a machine with a CUDA GPU, skipped (with the reason shown) elsewhere."""

from __future__ import annotations

import pytest


def _gpu_reason() -> str | None:
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - cupy is a dependency
        return f"CuPy is not importable: {exc}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError without a driver
        return f"no CUDA GPU here ({type(exc).__name__}: {exc})"
    return None if count > 0 else "no CUDA GPU here (0 devices)"


REASON = _gpu_reason()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "gpu" in item.keywords and REASON is not None:
            item.add_marker(pytest.mark.skip(reason=REASON))
