"""The compiled launch path, built at install (pyproject.toml holds everything else).

``layoutgen.runtime._fastlaunch`` is built from the C files of
``layoutgen/runtime/fastlaunch/`` (one per concept; ``fastlaunch.h`` says which)
and needs only a C compiler and Python's headers (libcuda is loaded at run
time). ``optional=True``: where it cannot be built, the install goes on with a
warning and launchers take the Python path (``python -m layoutgen.runtime``
says which one is active). Its test hooks are not built here
(``-DLAYOUTGEN_TEST_HOOKS``: tests/helpers/fastlaunch_build.py builds that
variant for the tests). The C sources are not package data: a wheel carries
the built module only (an sdist carries the sources and headers).
"""

import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError, LinkError

FOLDER = Path("layoutgen/runtime/fastlaunch")
#: Link-time optimisation, where the compiler has it: a launch calls from one file of the extension into
#: another about fifteen times, which without it cost ~200 instructions a launch of five torch tensors more
#: than the one file it was (callgrind; with it, ~70 fewer).
LTO = ["-flto"]


class BuildExt(build_ext):
    """build_ext, with link-time optimisation where a Unix compiler builds with it, else without."""

    def build_extension(self, ext: Extension) -> None:
        if self.compiler.compiler_type == "unix":
            compile_args, link_args = list(ext.extra_compile_args), list(ext.extra_link_args)
            ext.extra_compile_args, ext.extra_link_args = compile_args + LTO, link_args + LTO
            try:
                super().build_extension(ext)
                return
            except (CompileError, LinkError):
                self.warn("the compiled launch path builds without link-time optimisation (-flto failed)")
                ext.extra_compile_args, ext.extra_link_args = compile_args, link_args
                self.force = True  # the objects built with -flto are not these
        super().build_extension(ext)


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "layoutgen.runtime._fastlaunch",
            sorted(p.as_posix() for p in FOLDER.glob("*.c")),
            depends=sorted(p.as_posix() for p in FOLDER.glob("*.h")),
            libraries=["dl"] if sys.platform.startswith("linux") else [],  # dlopen: libc itself from glibc 2.34
            optional=True,
        ),
    ],
)
