"""Both launch paths for the launch tests: a fixture that runs a test through the Python and the compiled path.

``launch_path`` is parametrized over "python" (``LAYOUTGEN_PYTHON_LAUNCH=1``)
and "compiled" (the extension, which must be built here: ``pip install -e .``
or ``python setup.py build_ext --inplace``). Without a GPU the compiled path's
``cuLaunchKernel`` is replaced by a hook that hands the packed parameters to
the plan's Launch object, as ``PackedLaunch`` would give them to the driver,
so the recorders of the tests see every launch whichever path made it; and
its current device (the driver's current context) by the Python path's
``find_device``, which the tests fake. Those hooks are the test build's
(``tests/helpers/fastlaunch_build.py``), which importing this module puts in
place of the shipped extension.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pytest

from layoutgen.runtime import fastpath, launch
from layoutgen.runtime.launch import KernelLauncher
from layoutgen.runtime.paths import PYTHON_LAUNCH_ENV
from tests.helpers.fastlaunch_build import install

install()  # the extension with set_hook: every launcher built from here on is the test build's

#: Every launch the compiled path made in the current test: (blocks, block, shared, stream, parameter bytes).
COMPILED: list[tuple[int, int, int, Any, bytes]] = []
#: The CUstream the compiled path read of each stream object it launched on (None: the stream was None).
HANDLES: list[int | None] = []


def replay(launch: Any, blocks: int, block: int, shared: int, stream: Any, handle: int | None,
           parameters: bytes) -> None:
    """The hook: record the compiled launch, then give its values to the plan's Launch (a test's recorder)."""
    COMPILED.append((blocks, block, shared, stream, parameters))
    HANDLES.append(handle)
    launch(blocks, block, list(struct.unpack(f"={len(parameters) // 8}Q", parameters)), stream)


def current_device() -> int | None:
    """The device hook: the compiled path's current device is the one the Python path's ``find_device`` (which
    the tests replace) finds, as the driver's current context and CuPy's agree on a GPU."""
    return launch.find_device()


def module_launchers() -> list[KernelLauncher]:
    """The launchers of the generated modules the tests import (built when they were imported)."""
    return [launcher for _, launcher in _modules_launchers()]


def _modules_launchers() -> list[tuple[Any, KernelLauncher]]:
    import generated.qkv as qkv
    import generated.vsn as vsn

    return [(m, v) for m in (vsn, qkv) for v in vars(m).values() if isinstance(v, KernelLauncher)]


def rebuild(monkeypatch: pytest.MonkeyPatch, launcher: KernelLauncher, module: Any = None) -> None:
    """``launcher`` takes the launch path chosen now (``take_path``), as if built now; the module's name of its
    launcher function (bound to the path of the import, :meth:`KernelLauncher.public`) follows it."""
    monkeypatch.setattr(launcher, "_fast", None)  # restored afterwards
    monkeypatch.setattr(launcher, "entry", None)
    # nothing planned or loaded: an earlier test's plans launch through that test's fakes
    monkeypatch.setattr(launcher, "_plans", {})
    monkeypatch.setattr(launcher, "_functions", {})
    monkeypatch.setattr(launcher, "_disjoint", (None, []))
    launcher.__post_init__()
    signature = launcher.signature
    if module is not None and signature is not None:
        monkeypatch.setattr(module, signature.__name__, launcher.public(signature))


def take_path(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Launchers built from here on take ``path``: "python" (``LAYOUTGEN_PYTHON_LAUNCH=1``) or "compiled"."""
    monkeypatch.setenv(PYTHON_LAUNCH_ENV, "1" if path == "python" else "0")


@pytest.fixture(params=["python", "compiled"])
def launch_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test through one launch path; launchers built in the test and the modules' ones take it."""
    module, reason = fastpath.extension()
    take_path(monkeypatch, request.param)
    if request.param == "compiled":
        assert module is not None, f"the compiled launch path must be built here: {reason}"
        module.set_hook(replay, current_device)
    COMPILED.clear()
    HANDLES.clear()
    for generated, launcher in _modules_launchers():
        rebuild(monkeypatch, launcher, generated)  # the compiled path (or none) for this test's path
    try:
        yield request.param
    finally:
        if module is not None:
            module.set_hook(None)
        COMPILED.clear()
