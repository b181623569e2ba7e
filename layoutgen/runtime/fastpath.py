"""The compiled launch path: which path a launcher takes, and the plans the C side is taught.

``runtime/_fastlaunch.c`` (built at install as ``layoutgen.runtime._fastlaunch``,
optional) holds, per kernel, the plans the Python path of
:class:`~.launch.KernelLauncher` validated, and does a repeated launch's hot
path in C: it reads each array (CuPy's ``data.ptr``, ``shape``, ``strides``,
``dtype``, ``data.device_id``; torch's ``data_ptr()``, ``shape``,
``stride()``, ``dtype``, ``device``, ``is_neg()``: the same reads as
``launch._cupy_reader`` and ``launch._torch_reader``, through the C API; any
other kind with a fast reader through that reader), finds the plan whose
signatures match, checks alignment, overlap and the autograd state of written
torch tensors, packs the parameters and calls ``cuLaunchKernel`` (libcuda
loaded with dlopen). Anything else it hands to the Python path, which runs the
call from the start: so the compiled path refuses nothing itself, and every
refusal keeps its code and message.

The C side learns a plan only after the Python path validated a call
(:func:`learn`), and only where the Python path would launch through
``cuLaunchKernel`` itself (:class:`~.driver.PackedLaunch`): a debug build, a
launch through CuPy (``LAYOUTGEN_LAUNCH=cupy``) and kinds of arrays without a
fast reader (``__cuda_array_interface__``) stay on the Python path.

Which path is active: :func:`launch_path` ("compiled" or "python") and
``python -m layoutgen.runtime``. ``LAYOUTGEN_PYTHON_LAUNCH=1`` forces the
Python path for launchers built afterwards; where the extension cannot be
imported the Python path is used and a RuntimeWarning says so, once.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .driver import PackedLaunch, stream_handle
from .occupancy import SharedMemoryLaunch
from .paths import PYTHON_LAUNCH_ENV, python_launch_forced
from .plan import KernelSpec

#: The extension's module name (setup.py builds it from ``runtime/_fastlaunch.c``).
EXTENSION = "layoutgen.runtime._fastlaunch"

_loaded: list[tuple[Any, str]] = []  # [(the extension or None, why not)], once imported or tried
_warned: list[bool] = []  # [True] once the missing extension has been reported


def extension() -> tuple[Any, str]:
    """The extension module, or None and why it could not be imported (tried once per process)."""
    if not _loaded:
        try:
            _loaded.append((importlib.import_module(EXTENSION), ""))
        except ImportError as exc:  # not built (a failed optional build), or built for another Python
            _loaded.append((None, f"{EXTENSION} could not be imported ({exc})"))
    return _loaded[0]


def launch_path() -> str:
    """``"compiled"`` where launchers built now take the compiled path, else ``"python"``."""
    return "python" if python_launch_forced() or extension()[0] is None else "compiled"


def launch_path_text() -> str:
    """One line saying which launch path is active and why: what ``python -m layoutgen.runtime`` prints."""
    module, reason = extension()
    if python_launch_forced():
        return f"launch path: python ({PYTHON_LAUNCH_ENV} is set)"
    if module is None:
        return f"launch path: python ({reason})"
    return f"launch path: compiled ({module.__file__}; driver: {module.driver()})"


def compiled_path(spec: KernelSpec, readers: Mapping[type, Any], cupy_reader: Any, torch_reader: Any) -> Any:
    """The C launcher of ``spec``, or None where the launcher takes the Python path.

    ``readers`` is the launcher's table of fast readers by array type; arrays
    read by ``cupy_reader`` or ``torch_reader`` are read at C level, others
    through their reader. None for a debug build (its checks around a launch
    are Python), where the Python path is forced, where the extension is
    missing (said once), and for kernels of more values than the C buffer holds.
    """
    if spec.debug or python_launch_forced():
        return None
    module, reason = extension()
    if module is None:
        if not _warned:
            _warned.append(True)
            warnings.warn(f"layoutgen: {reason}; launchers take the Python launch path", RuntimeWarning, stacklevel=2)
        return None
    n_values = len(spec.params) + len(spec.scalars) + len(spec.symbols)
    if len(spec.params) > module.MAX_ARRAYS or n_values > module.MAX_VALUES:
        return None
    return module.Launcher(spec.name, spec.params, len(spec.scalars), readers, stream_handle, cupy_reader,
                           torch_reader)


def learn(fast: Any, plan: Any, arrays: Sequence[Any], readers: Mapping[type, Any]) -> None:
    """Teach ``fast`` the plan (``launch._Plan``) the Python path just validated ``arrays`` to.

    Nothing where the plan does not launch through ``cuLaunchKernel`` (unless
    a test's hook stands in for it) or an array has no fast reader.
    """
    launch = plan.launch
    base, shared = (launch._launch, launch.shared) if isinstance(launch, SharedMemoryLaunch) else (launch, 0)
    if type(base) is not PackedLaunch and extension()[0].get_hook() is None:
        return
    signatures = []
    for a in arrays:
        reader = readers.get(type(a))
        if reader is None:
            return
        signatures.append(reader(a)[0])
    checked = plan.checked
    try:
        fast.add(plan.device, tuple(signatures), checked.masks, checked.pairs, checked.blocks, checked.block, shared,
                 checked.symbols, checked.written, launch, launch.handle)
    except (OverflowError, ValueError, TypeError):  # a size past 64 bits: the Python path keeps this plan
        return
