"""The compiled launch path: which path a launcher takes, the plans the C side is taught, torch's calls.

``runtime/fastlaunch/*.c`` (built at install as ``layoutgen.runtime._fastlaunch``,
optional) gives each launcher a C ``Launcher``, which the generated launcher
function calls with the user's arguments (``KernelLauncher.entry``), and
which stands in that function's name (:func:`stand_in`), so that a call by
position reaches C with no Python frame between. It holds
the plans the Python path of :class:`~.launch.KernelLauncher` validated, and
does a repeated launch in C: it unwraps typed ``Array``\\ s, takes the current
device from the driver's current context, checks the scalars, reads each
array (a CuPy array's own fields, a torch tensor through the C++ reader
built against the installed torch (:mod:`.torch_cxx_reader`), else DLPack's C
exchange API and ``is_neg()``, any other kind with a fast reader through
that reader), finds the plan whose signatures match, checks alignment, overlap and
the autograd state of written torch tensors, finds the stream (for None,
torch's current one over torch tensors through their DLPack exchange API,
else CuPy's current one through CuPy's C function), packs the parameters and calls
``cuLaunchKernel`` (libcuda loaded with dlopen), then bumps the version
counters of the torch tensors it wrote. Anything else it hands to the Python
path with the call's own arguments, which runs the call from the start: so
the compiled path refuses nothing itself, and every refusal keeps its code
and message.

A kind of array is read at C level only once the C side has confirmed, on an
array the Python path validated, that its C read gives what the Python
reader read (:func:`learn`): a CuPy array's fields are those of
``cupy/_core/core.pxd`` (and only for a type whose attributes are CuPy's own
descriptors: a subclass that redefines ``shape`` is read through it), and a
torch type is read through DLPack only where its reads cannot dispatch
(``torch.Tensor``, ``torch.nn.Parameter``). Each plan's C-level key is
confirmed the same way, on the arrays it was validated with, and none is
taken while a torch function mode answered the Python reads. Every other kind
is read as the Python readers read it (attributes and methods through the C
API), and so is an array the C read does not apply to (more dims than it
reads, another ``MemoryPointer`` type).

The C side learns a plan only after the Python path validated a call, and
only where the Python path would launch through ``cuLaunchKernel`` itself
(:class:`~.driver.PackedLaunch`): a debug build, a launch through CuPy
(``LAYOUTGEN_LAUNCH=cupy``), kinds of arrays without a fast reader
(``__cuda_array_interface__``, DLPack producers) and written arrays whose
framework's rule the C side does not apply (``arrays.Written.in_c``) stay on
the Python path. JAX arrays are read from C through their row's fast reader.

Which path is active: :func:`launch_path` ("compiled" or "python") and
``python -m layoutgen.runtime``. ``LAYOUTGEN_PYTHON_LAUNCH=1`` forces the
Python path for launchers built afterwards; where the extension cannot be
imported the Python path is used and a RuntimeWarning says so, once.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

from . import driver, torch_cxx_reader
from .driver import PackedLaunch
from .occupancy import SharedMemoryLaunch
from .paths import PYTHON_LAUNCH_ENV, python_launch_forced
from .plan import KernelSpec
from .arrays import FRAMEWORKS, TORCH, Framework
from .readers import FAST_READERS
from .typed import Array
from .torch_writes import version_bump

#: The extension's module name (setup.py builds it from ``runtime/fastlaunch/*.c``).
EXTENSION = "layoutgen.runtime._fastlaunch"

#: The frameworks whose arrays the C side reads itself, by how (arrays.Framework.c_read): "fields", "dlpack".
C_READS: dict[str, Framework] = {f.c_read: f for f in FRAMEWORKS if f.c_read is not None}
#: The C reads whose arrays' own current stream (arrays.Framework.current_stream) the C side finds itself, for a
#: launch given none (fastlaunch/streams.c's fl_torch_stream); a plan over another row with one stays Python's.
C_CURRENT_STREAMS = frozenset({"dlpack"})

_loaded: list[tuple[Any, str]] = []  # [(the extension or None, why not)], once imported or tried
_warned: list[bool] = []  # [True] once the missing extension has been reported
_torch: list[bool] = []  # [True] once the extension was given torch's calls


def extension() -> tuple[Any, str]:
    """The extension module, or None and why it could not be imported (tried once per process); once
    imported, it is given what every launcher reads arrays and streams with."""
    if not _loaded:
        try:
            module = importlib.import_module(EXTENSION)
        except ImportError as exc:  # not built (a failed optional build), or built for another Python
            _loaded.append((None, f"{EXTENSION} could not be imported ({exc})"))
        else:
            c_reads = {name: (f.fast_reader, f.stream_handle) for name, f in C_READS.items()}  # the C side's rows
            module.configure(FAST_READERS, c_reads, driver.stream_handle, driver._STREAM_READERS, Array,
                             Array.__dict__["data"])
            _loaded.append((module, ""))
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
    said = f"launch path: compiled ({module.__file__}; driver: {module.driver()})"
    return f"{said}\n{torch_cxx_reader.state()}" if torch_cxx_reader.state() else said


def compiled_path(spec: KernelSpec, fallback: Callable[..., None], scalar_check: Callable[[int, Any], int]) -> Any:
    """The C launcher of ``spec``, or None where the launcher takes the Python path.

    ``fallback`` is the Python path, called with a call's own arguments
    wherever the C side does not launch it; ``scalar_check(i, value)`` is
    scalar ``i``'s Python check, asked of every value the C side does not
    take as it is. Arrays that :data:`.readers.FAST_READERS` reads with
    ``cupy_reader`` or ``torch_reader`` are read at C level, others through
    their reader. None for a debug build (its checks around a launch are
    Python, and each launch synchronizes), where the Python path is forced,
    where the extension is missing (said once), and for kernels of more
    values than the C buffer holds.
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
    scalars = tuple((s.dtype, s.finite) for s in spec.scalars)
    return module.Launcher(spec.name, len(spec.params), scalars, fallback, scalar_check)


def stand_in(fast: Any, spec: KernelSpec, signature: Callable[..., None]) -> Callable[..., None]:
    """What names a kernel's generated launcher function ``signature``: ``fast`` (its C launcher) standing in
    its name, or ``signature`` itself where ``fast`` is None (the Python path).

    The C launcher takes a call that passes the arrays and scalars by
    position (and ``stream=`` by keyword) itself, with no Python frame
    between the caller and it (0.2 to 0.4 µs a launch on the H200). Every other call (an
    array by keyword, a wrong count) it gives to ``signature``, which binds
    it as it always did, or raises its own TypeError, and calls the
    launcher's ``entry``. It carries ``signature``'s name, docstring,
    annotations and ``__wrapped__``: ``inspect.signature`` and ``help()``
    show ``signature``'s. A kernel that declares a scalar before an array
    keeps ``signature`` in its name (``entry`` takes the arrays first). The
    name is bound when the module is imported, on the path its launcher
    took then.
    """
    if fast is None:
        return signature
    taken = [p.name for p in spec.params] + [s.name for s in spec.scalars]
    if [name for name in inspect.signature(signature).parameters if name != "stream"] != taken:
        return signature
    fast.bind_signature(signature)
    functools.update_wrapper(fast, signature)
    return cast(Callable[..., None], fast)


def _launched_in_c(launch: Any, module: Any) -> int | None:
    """The dynamic shared memory of ``launch`` where the C side can launch it (the Python path would launch
    it through ``cuLaunchKernel`` itself, or a test's hook stands in for that); None where it cannot."""
    base, shared = (launch._launch, launch.shared) if isinstance(launch, SharedMemoryLaunch) else (launch, 0)
    return shared if type(base) is PackedLaunch or _hooked(module) else None


def _hooked(module: Any) -> bool:
    """Whether a test's hook stands in for ``cuLaunchKernel``: only the extension's test build has one
    (``-DLAYOUTGEN_TEST_HOOKS``, tests/helpers/fastlaunch_build.py); the shipped module has no ``get_hook``."""
    get_hook = getattr(module, "get_hook", None)
    return get_hook is not None and get_hook() is not None


def learn(fast: Any, plan: Any, arrays: Sequence[Any], signatures: Sequence[Any], pointers: Sequence[int]) -> None:
    """Teach ``fast`` the plan (``launch._Plan``) the Python path just validated ``arrays`` to, keyed on the
    read it validated (each array's reader's ``signatures``, and ``pointers``): never on a read of its own.

    Nothing where the plan does not launch through ``cuLaunchKernel`` (unless
    a test's hook stands in for it). The C side keeps its own read of an
    array only where it gives exactly these values; else it matches that
    argument on its signature, read as the Python reader reads it.
    """
    launch = plan.launch
    shared = _launched_in_c(launch, extension()[0])
    if shared is None:
        return
    checked = plan.checked
    written = checked.written
    if written is not None and not written.in_c:  # a framework's rule the C side does not apply: Python's plan
        return
    if checked.torch_arrays and any(row.c_read not in C_CURRENT_STREAMS for row in driver.stream_rows(arrays)):
        return  # a current stream the C side does not find (it would launch on CuPy's): Python's plan
    if not _torch and "torch" in sys.modules:  # a torch tensor exists only once torch is imported
        use_torch()
    try:
        fast.add(plan.device, tuple(arrays), tuple(signatures), tuple(pointers), checked.masks, checked.pairs,
                 checked.blocks, checked.block, shared, checked.symbols, written.indices if written else (), launch,
                 launch.handle)
    except (OverflowError, ValueError, TypeError):  # a size past 64 bits: the Python path keeps this plan
        return


def program_steps(name: str, n_buffers: int,
                  launches: Sequence[tuple[Any, int, int, tuple[int, ...], tuple[int, ...]]]) -> Any:
    """The compiled path's Steps of a program run's launches (each: the sized launch, blocks, threads per
    block, the buffer each pointer parameter gets, the values after the pointers), or None where one of them
    does not launch through ``cuLaunchKernel`` (a test's hook standing in for it), the extension is missing
    or a value does not fit the C buffer."""
    module = extension()[0]
    if module is None:
        return None
    prepared = []
    for launch, blocks, block, buffers, constants in launches:
        shared = _launched_in_c(launch, module)
        if shared is None:
            return None
        prepared.append((launch, launch.handle, blocks, block, shared, buffers, constants))
    try:
        return module.Steps(name, n_buffers, tuple(prepared))
    except (OverflowError, ValueError, TypeError):  # a value past 64 bits: the Python path launches these
        return None


def use_torch() -> None:
    """Give the extension torch's calls: the grad mode, the torch function mode, the version bump, the tensor
    types read through DLPack, the DLPack dtype each torch dtype exports as (and those more than one does),
    torch's current stream and the inference mode (once)."""
    torch = sys.modules.get("torch")
    module = extension()[0]
    if torch is None or module is None or _torch:
        return
    modes = getattr(torch._C, "_is_torch_function_mode_enabled", None)
    # Parameter's reads dispatch to no __torch_function__ (it is torch's "disabled" one): read like a Tensor's.
    plain = getattr(torch._C, "_disabled_torch_function_impl", None)
    types = (torch.Tensor,) + ((torch.nn.Parameter,) if plain is not None
                               and torch.nn.Parameter.__torch_function__ is plain else ())
    exported = _exported_dtypes(torch, module)
    seen: dict[int, int] = {}
    for code in exported.values():
        seen[code] = seen.get(code, 0) + 1
    ambiguous = tuple(sorted(code for code, count in seen.items() if count > 1))
    module.use_torch(torch.is_grad_enabled, modes, version_bump(), types if modes is not None else (), ambiguous,
                     TORCH.current_stream, exported, torch.is_inference_mode_enabled)
    torch_cxx_reader.install(module, torch)
    _torch.append(True)  # only once given: an interrupted first time leaves it to the next plan


def _exported_dtypes(torch: Any, module: Any) -> dict[Any, int]:
    """Each torch dtype's DLPack dtype (code | bits << 8 | lanes << 16), as the C side reads a tensor of it: a
    plan is keyed on a C read only where its dtype is the one validated. Where more than one torch dtype
    exports as one DLPack dtype (torch's sub-byte integers are stored, and exported, as bytes), the C side
    reads ``t.dtype`` too."""
    exported: dict[Any, int] = {}
    for name in dir(torch):
        dtype = getattr(torch, name)
        if not isinstance(dtype, torch.dtype):
            continue
        with warnings.catch_warnings():  # "ComplexHalf support is experimental", quantized types deprecated
            warnings.simplefilter("ignore")
            try:
                read = module.read(torch.empty(0, dtype=dtype))
            except Exception:  # noqa: S112 - a dtype torch cannot allocate exports nothing
                continue
        if read is not None:
            code, bits, lanes = read[4]
            exported[dtype] = code | bits << 8 | lanes << 16
    return exported
