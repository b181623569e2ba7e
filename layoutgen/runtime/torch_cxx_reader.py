"""torch tensors read at C++ level: ``runtime/_torch_cxx_reader.cpp``, built against the installed torch.

Through torch's Python C API the compiled launch path reads a tensor with two
calls into torch (the DLPack exchange API's DLTensor export, then
``is_neg()``), asks a written one's ``requires_grad`` and bumps its version
counter through another (``torch._C._increment_version``): measured on the
lent H200's host, 0.25 µs a tensor read and 0.1 µs a bump, so a launch of
five torch tensors cost about 1.3 µs more than one of five CuPy arrays, a
third of the driver's own launch. Compiled against torch's headers they are
one call each (on this repository's CI machine a launch of five tensors
spends 0.37 µs on its host work against 1.13 µs, and one of five CuPy arrays
0.27 µs: ``benchmarks/bench_launch_cpu.py``).

The library has one entry point, ``layoutgen_torch_reader()``: a table of
three functions. ``read`` fills the DLTensor that torch's exchange API fills
(from the accessors ``at::toDLPackNonOwning``, the function behind that API,
calls, inline from torch's headers: on the H200's host a launch of five
tensors read through toDLPackNonOwning itself cost 0.3 µs more than one of
five CuPy arrays, inline 0 to 0.2 µs more) and gives the neg bit and
``requires_grad`` with it; ``bump`` does for one tensor what
``torch._C._increment_version`` does for each of its tensors;
``function_modes`` answers as ``torch._C._is_torch_function_mode_enabled``.
The C side (``fastlaunch/torch.c``) calls them only for ``torch.Tensor`` and
``torch.nn.Parameter`` objects and decides nothing else differently: a plan
is still taught only where the C read agrees with the Python reader, the neg
bit and ``requires_grad`` read here are taken only while the tensor's type
finds torch's own ``is_neg`` and ``requires_grad``, and any read torch
refuses is handed to the Python path. Before it is used, its reads are
compared with the exchange API's on sample tensors, and its bump and
function-mode answers with torch's calls (:func:`_calls_disagreement`).

Built with the C++ compiler (``$CXX``, else Python's, else ``c++``) on the
first launch of a torch tensor, once per torch build, Python and compiler
(about 15 s here, 19 s on the H200's host), into
``<cache_dir()>/torch-reader/``; ``python -m layoutgen.runtime`` builds it
ahead. Where it cannot be built or does not agree with torch on the samples,
tensors are read through the exchange API as before (where only its calls
disagree, those are torch's Python calls), and ``python -m
layoutgen.runtime`` says why. ``LAYOUTGEN_TORCH_READER=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .cachefiles import checked_entry_folder, checked_root, locked, open_file
from .paths import cache_dir, torch_reader_off

#: The C++ source, shipped with the package.
SOURCE = Path(__file__).with_name("_torch_cxx_reader.cpp")
#: The exported function: the table in the capsule ``_fastlaunch.use_torch_reader`` takes (it takes no
#: address: an int could point anywhere).
CAPSULE_ENTRY = "layoutgen_torch_reader_capsule"
#: How long a build may take (about 15 s on the H200's host and this repository's CI machine).
BUILD_SECONDS = 600

_state: list[tuple[Any, bool, str]] = []  # [(the table's capsule or None, its calls used, what happened)]
_libraries: list[ctypes.CDLL] = []  # loaded once, never unloaded: the C side keeps calling into it


def install(module: Any, torch: Any) -> str:
    """Give ``module`` (the extension) the reader, built or found in the cache (tried once per process), and
    say what was done in words. Raises nothing: where it cannot be had, tensors are read as before."""
    if not _state:
        _state.append(_load(module, torch))
    capsule, calls, said = _state[0]
    if capsule is not None:
        module.use_torch_reader(capsule, calls)
    return said


def state() -> str:
    """What :func:`install` did in this process, in words (empty where it has not run)."""
    return _state[0][2] if _state else ""


def installed() -> tuple[Any, bool]:
    """The table's capsule :func:`install` gives the extension (None: none) and whether its calls are used."""
    return (_state[0][0], _state[0][1]) if _state else (None, False)


@contextlib.contextmanager
def turned_off(module: Any) -> Iterator[None]:
    """Inside, the compiled path (``module``, the extension) reads torch tensors through DLPack's exchange API
    and torch's Python calls, as where the reader cannot be built (benchmarks and tests time and check both
    ways); the reader :func:`install` gave is given back after."""
    capsule, calls = installed()
    module.use_torch_reader(None, False)
    try:
        yield
    finally:
        if capsule is not None:
            module.use_torch_reader(capsule, calls)


def _load(module: Any, torch: Any) -> tuple[Any, bool, str]:
    if torch_reader_off():
        return None, False, "torch tensors read through DLPack's exchange API (LAYOUTGEN_TORCH_READER=0)"
    try:
        library = _build(torch)
        lib = ctypes.PyDLL(str(library))  # the capsule's entry calls Python's C API: the GIL stays held
        capsule_entry = getattr(lib, CAPSULE_ENTRY)
        capsule_entry.restype = ctypes.py_object
        capsule = capsule_entry()
    except (OSError, AttributeError, BuildError) as exc:  # CacheError (LG512, LG513) is an OSError
        return None, False, f"torch tensors read through DLPack's exchange API (the C++ reader: {exc})"
    _libraries.append(lib)
    disagreement = _disagreement(module, torch, capsule)
    if disagreement:
        return None, False, (f"torch tensors read through DLPack's exchange API (the C++ reader disagrees with "
                             f"it: {disagreement})")
    calls = _calls_disagreement(torch, capsule)
    said = f"torch tensors read in C++ ({library})"
    return capsule, not calls, f"{said}; torch's Python calls kept for versions and modes ({calls})" if calls else said


def _disagreement(module: Any, torch: Any, capsule: Any) -> str:
    """Where the reader reads a sample tensor otherwise than the exchange API does: '' where nowhere (the
    tests compare them on many more; this guards a torch whose headers say one thing and library another)."""
    base = torch.arange(2 * 3 * 5, dtype=torch.float32).reshape(2, 3, 5)
    samples = {"contiguous": base, "transposed": base.transpose(0, 2), "offset slice": base[1, 1:, ::2],
               "int8": base.to(torch.int8), "empty": base[:, :0], "requires grad": base.clone().requires_grad_()}
    neg_view = getattr(torch, "_neg_view", None)  # private: a torch without it has no sample of the neg bit
    if neg_view is not None:
        samples["neg view"] = neg_view(base)
    try:
        for name, t in samples.items():
            module.use_torch_reader(capsule, False)
            with_reader = module.read(t)
            module.use_torch_reader(None, False)
            through_torch = module.read(t)
            # the exchange API's read, with requires_grad (which that API does not read) as the tensor says
            wanted = None if through_torch is None else (*through_torch[:6], t.requires_grad)
            if with_reader != wanted:
                return f"{name}: {with_reader} against {wanted}"
    finally:
        module.use_torch_reader(None, False)
    return ""


class _Table(ctypes.Structure):
    """The reader's table, as _torch_cxx_reader.cpp lays it out (TorchReader, ABI 1)."""

    _fields_ = [("magic", ctypes.c_uint32), ("abi", ctypes.c_uint32), ("read", ctypes.c_void_p),
                ("bump", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object)),
                ("function_modes", ctypes.PYFUNCTYPE(ctypes.c_int))]


def _table_address(capsule: Any) -> int:
    """The address of the table a capsule of the library's carries (read by ctypes here, never by the C side)."""
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return int(get_pointer(capsule, name(capsule)))


def _calls_disagreement(torch: Any, capsule: Any) -> str:
    """Where the reader's bump and function-mode calls answer otherwise than torch's Python calls that the
    compiled path makes without it ('' where they agree): torch releases differ (an inference tensor's bump
    raised before it was skipped), so the rule is asked of this torch."""
    from .validate import version_bump

    table = _Table.from_address(_table_address(capsule))
    t = torch.zeros(1)
    before = t._version
    if table.bump(t) != 0 or t._version != before + 1:
        return f"its bump moved a version from {before} to {t._version}"
    with torch.inference_mode():
        inference = torch.empty(1)
    try:
        version_bump()((inference,))
    except Exception as exc:  # noqa: BLE001 - whatever torch raises, its rule is not the reader's
        return f"this torch refuses to bump an inference tensor ({type(exc).__name__}), which the reader skips"
    try:
        from torch.overrides import TorchFunctionMode

        modes = torch._C._is_torch_function_mode_enabled
        answers = [(bool(table.function_modes()), modes())]
        with TorchFunctionMode():
            answers.append((bool(table.function_modes()), modes()))
            with torch._C.DisableTorchFunction():
                answers.append((bool(table.function_modes()), modes()))
    except (ImportError, AttributeError) as exc:  # the names asked of torch are private: a torch may lack them
        return f"function modes could not be compared ({exc})"
    if any(a != b for a, b in answers):
        return f"function modes, outside one, inside one, disabled inside one: {answers}"
    return ""


class BuildError(Exception):
    """The reader could not be built here (no compiler, no torch headers, a failed compile)."""


def _build(torch: Any) -> Path:
    """The built library, from the cache or compiled now under the entry's lock."""
    compiler = _compiler()
    command = _command(torch, compiler)
    key = _key(torch, compiler, command)
    folder = cache_dir() / "torch-reader"
    checked_root(cache_dir(), create=True)  # private (0700), as the cubin cache is: what is loaded from here
    checked_entry_folder(folder, create=True)  # is code, so never a link, another user's folder or file
    library = folder / f"{key}.so"
    if _built(library):
        return library
    with locked(folder / f"{key}.lock", stale=f".{key}.*.so.tmp"):
        if _built(library):  # built by another process meanwhile
            return library
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".so.tmp")
        os.close(fd)
        try:
            try:
                built = subprocess.run([*command, "-o", tmp], capture_output=True, text=True, check=False,
                                       timeout=BUILD_SECONDS)
            except subprocess.TimeoutExpired:
                raise BuildError(f"`{compiler}` did not finish in {BUILD_SECONDS} s") from None
            if built.returncode:
                raise BuildError(f"`{compiler}` failed: {built.stderr.strip()[-600:]}")
            os.replace(tmp, library)
        finally:
            Path(tmp).unlink(missing_ok=True)
    return library


def _built(library: Path) -> bool:
    """Whether ``library`` is there, a regular file of this user (LG512 / LG513 where it is not one)."""
    try:
        os.close(open_file(library, os.O_RDONLY))
    except FileNotFoundError:
        return False
    return True


def _compiler() -> str:
    named = os.environ.get("CXX") or (sysconfig.get_config_var("CXX") or "").split(" ")[0] or "c++"
    found = shutil.which(named)
    if found is None:
        raise BuildError(f"no C++ compiler (`{named}` not found; set CXX)")
    return found


def _command(torch: Any, compiler: str) -> list[str]:
    from torch.utils.cpp_extension import include_paths, library_paths

    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    command = [compiler, "-shared", "-fPIC", "-O2", "-std=c++20", "-w", "-fvisibility=hidden",
               f"-D_GLIBCXX_USE_CXX11_ABI={abi}", f"-I{sysconfig.get_paths()['include']}"]
    command += [f"-I{folder}" for folder in include_paths()]
    command += [str(SOURCE)]
    for folder in library_paths():
        command += [f"-L{folder}", f"-Wl,-rpath,{folder}"]
    command += ["-ltorch_python", "-ltorch_cpu", "-lc10"]
    if sys.platform == "darwin":
        command += ["-undefined", "dynamic_lookup"]
    return command


def _key(torch: Any, compiler: str, command: list[str]) -> str:
    """What the library depends on: the source, this torch build, this Python, the compiler and its flags."""
    try:
        version = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False,
                                 timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"`{compiler}` could not be run ({exc})") from None
    facts = {"source": hashlib.sha256(SOURCE.read_bytes()).hexdigest(), "torch": torch.__version__,
             "torch_git": getattr(torch.version, "git_version", ""), "torch_file": torch.__file__,
             "python": sys.version, "compiler": version, "command": command}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:32]
