"""The compiled launch path's test build: the extension with its test and benchmark hooks.

The shipped extension (``setup.py``: ``layoutgen/runtime/fastlaunch/*.c``) has no hooks in its method table.
The tests and benchmarks that replace ``cuLaunchKernel`` and the driver's current device by Python callables
(``set_hook``, ``get_hook``), list the kinds read at C level (``kinds``) or time a read (``read_cost``) use the
same sources built with ``-DLAYOUTGEN_TEST_HOOKS`` (``testing.c``): :func:`build` compiles them with Python's C
compiler into a folder of the system's temporary directory keyed on the sources' digest, the flags, the
compiler and Python (so a build is reused until a source changes, and never half-written: it is renamed into
place), and :func:`install` imports it as ``layoutgen.runtime._fastlaunch`` in place of the shipped module,
before or after ``runtime/fastpath.py`` first loaded that one.

``LAYOUTGEN_TEST_EXTENSION=shipped``: :func:`install` leaves the shipped module in place (a benchmark timing
what ships). ``LAYOUTGEN_TEST_CFLAGS``: more compiler flags (``-fsanitize=address,undefined -g``: the
sanitizer run of the compiled path).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from layoutgen.runtime import fastpath

ROOT = Path(__file__).resolve().parents[2]
#: The extension's sources, one folder (setup.py builds the shipped module from the same files).
SOURCES = ROOT / "layoutgen" / "runtime" / "fastlaunch"
#: What the test build adds to the compiler's command line.
FLAGS = ("-DLAYOUTGEN_TEST_HOOKS",)
CHOICE_ENV = "LAYOUTGEN_TEST_EXTENSION"
CFLAGS_ENV = "LAYOUTGEN_TEST_CFLAGS"


def sources() -> list[Path]:
    """The C sources and headers of the extension, sorted."""
    return sorted(p for p in SOURCES.iterdir() if p.suffix in (".c", ".h"))


def _compiler() -> str:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return compiler if shutil.which(compiler) else "gcc"


def build() -> Path:
    """The test build's shared library, compiled where no build of these sources and flags exists yet.

    Raises RuntimeError with the compiler's output where it does not compile.
    """
    compiler = _compiler()
    flags = [*FLAGS, *shlex.split(os.environ.get(CFLAGS_ENV, ""))]
    digest = hashlib.sha256()
    for part in [compiler, sys.version, *flags, Path(__file__).read_text(encoding="utf-8")]:  # this recipe too
        digest.update(part.encode() + b"\0")
    for path in sources():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    folder = Path(tempfile.gettempdir()) / f"layoutgen-fastlaunch-test-{os.getuid()}" / digest.hexdigest()[:24]
    library = folder / f"_fastlaunch{sysconfig.get_config_var('EXT_SUFFIX')}"
    if library.exists():
        return library
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".building-{os.getpid()}{library.suffix}"
    python_flags = shlex.split(sysconfig.get_config_var("CFLAGS") or "-O2")  # as setup.py compiles it
    command = [compiler, "-shared", "-fPIC", *python_flags, *flags, f"-I{sysconfig.get_paths()['include']}",
               *[str(p) for p in sources() if p.suffix == ".c"], "-o", str(partial), "-ldl"]
    for lto in (["-flto"], []):  # link-time optimised as setup.py builds it, where the compiler can
        done = subprocess.run(command + lto, capture_output=True, text=True, check=False)
        if not done.returncode:
            break
    if done.returncode:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"the compiled launch path's test build failed: {shlex.join(command)}\n{done.stderr}")
    os.replace(partial, library)  # whole or not at all: another process may be loading it
    return library


def install() -> Any:
    """The extension the launchers built from now on use: the test build, imported in place of the shipped
    module (once a process), and configured by ``fastpath.extension()``; or, where ``LAYOUTGEN_TEST_EXTENSION``
    is ``shipped``, the shipped one."""
    if os.environ.get(CHOICE_ENV) == "shipped":
        return fastpath.extension()[0]
    module = sys.modules.get(fastpath.EXTENSION)
    if module is None or not hasattr(module, "set_hook"):
        spec = importlib.util.spec_from_file_location(fastpath.EXTENSION, build())
        assert spec is not None and spec.loader is not None  # a shared library just built
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[fastpath.EXTENSION] = module
        import layoutgen.runtime

        layoutgen.runtime._fastlaunch = module  # type: ignore[attr-defined]  (`from layoutgen.runtime import _fastlaunch`)
    loaded = fastpath._loaded
    if loaded and loaded[0][0] is not module:  # the shipped module was loaded first: configured afresh, torch too
        loaded.clear()
        fastpath._torch.clear()
    return fastpath.extension()[0]
